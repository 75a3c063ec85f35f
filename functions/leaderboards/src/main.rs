//! Lambda function serving the leaderboards endpoint group.

use paddock::lambda::{self, serve_group, start};
use paddock::routes;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        let wiring = start().await?.secrets();
        serve_group(routes::leaderboards::routes(), wiring).await
    })
}
