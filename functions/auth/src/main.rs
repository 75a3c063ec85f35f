//! Lambda function serving the auth endpoint group.

use paddock::lambda::{Error, serve_state, start};
use paddock::routes::auth;
use paddock::state::AppState;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, ports) = start().await?.secrets().finish();
    let state = AppState::new(ports, settings).with_identity_providers();
    serve_state(auth::routes(), state).await
}
