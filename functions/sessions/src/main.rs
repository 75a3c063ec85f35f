//! Lambda function serving the sessions endpoint group.

use paddock_api::routes;
use paddock_runtime::lambda::{self, serve_group, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        let wiring = start().await?.blobs().await?.secrets();
        serve_group(routes::sessions::routes(), wiring).await
    })
}
