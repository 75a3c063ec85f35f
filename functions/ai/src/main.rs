//! Lambda function serving the AI coaching endpoint group.

use paddock::lambda::{self, serve_state, start};
use paddock::routes::ai;
use paddock::state::AppState;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // The provider key comes from Secrets Manager (`anthropicApiKey` or `openaiApiKey`).
        let (settings, ports) = start().await?.secrets().finish();
        serve_state(ai::routes(), AppState::new(ports, settings).with_coach()).await
    })
}
