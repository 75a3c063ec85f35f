//! Lambda function serving the leaderboards endpoint group.

use paddock_api::routes;
use paddock_runtime::lambda::{self, serve_group, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Blobs: a submission on a mapped track is checked against the map's length.
        let wiring = start().await?.blobs().await?.secrets();
        serve_group(routes::leaderboards::routes(), wiring).await
    })
}
