//! Lambda function serving the AI coaching endpoint group.

use paddock_api::routes::ai;
use paddock_api::state::AppState;
use paddock_runtime::lambda::{self, serve_state, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // The provider key comes from Secrets Manager (`anthropicApiKey` or `openaiApiKey`).
        let (settings, ports) = start().await?.secrets().finish();
        serve_state(ai::routes(), AppState::new(ports, settings).with_coach()).await
    })
}
