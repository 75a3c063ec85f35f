//! Lambda function serving the auth endpoint group.

use paddock_api::routes::auth;
use paddock_api::state::AppState;
use paddock_runtime::lambda::{self, serve_state, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        let (settings, ports) = start().await?.secrets().finish();
        let state = AppState::new(ports, settings).with_identity_providers();
        serve_state(auth::routes(), state).await
    })
}
