//! Lambda function serving the auth endpoint group.

use paddock::lambda::{self, serve_state, start};
use paddock::routes::auth;
use paddock::state::AppState;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        let (settings, ports) = start().await?.secrets().finish();
        let state = AppState::new(ports, settings).with_identity_providers();
        serve_state(auth::routes(), state).await
    })
}
