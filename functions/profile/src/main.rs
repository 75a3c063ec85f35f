//! Lambda function serving the profile endpoint group (profile, export, account deletion).

use paddock_api::routes;
use paddock_runtime::lambda::{self, serve_group, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Exports read track points from the blob store and store the document there.
        let wiring = start().await?.blobs().await?.secrets();
        serve_group(routes::profile_routes(), wiring).await
    })
}
