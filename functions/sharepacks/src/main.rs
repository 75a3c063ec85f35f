//! Lambda function serving the share-pack endpoint group.

use paddock_api::routes::sharepacks;
use paddock_runtime::lambda::{self, serve_group, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Packs live in the blob store; large ones go straight to S3 through presigned URLs.
        let wiring = start().await?.blobs().await?.secrets();
        serve_group(sharepacks::routes(), wiring).await
    })
}
