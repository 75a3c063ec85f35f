//! Lambda function serving the AI coaching endpoint group.

use paddock::lambda::{Error, serve_state, start};
use paddock::routes::ai;
use paddock::state::AppState;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // The provider key comes from Secrets Manager (`anthropicApiKey` or `openaiApiKey`).
    let (settings, ports) = start().await?.secrets().finish();
    serve_state(ai::routes(), AppState::new(ports, settings).with_coach()).await
}
