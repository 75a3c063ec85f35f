//! Lambda function serving the activity endpoint group.

use paddock_api::routes;
use paddock_runtime::lambda::{self, serve_group, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Track maps are read from the blob store.
        let wiring = start().await?.blobs().await?.secrets();
        serve_group(routes::activity_routes(), wiring).await
    })
}
