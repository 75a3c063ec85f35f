//! Lambda function serving the profile endpoint group.

use paddock::lambda::{self, serve_group, start};
use paddock::routes;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        let wiring = start().await?.blobs().await?.secrets();
        serve_group(routes::unbuilt_routes(), wiring).await
    })
}
