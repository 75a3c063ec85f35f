//! Lambda function serving health, readiness, metrics and the OpenAPI document.

use paddock_api::routes::health_routes;
use paddock_runtime::lambda::{self, serve_group, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Readiness checks the item store only.
        serve_group(health_routes(), start().await?).await
    })
}
