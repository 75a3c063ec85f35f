//! Lambda function serving health, readiness, metrics and the OpenAPI document.

use paddock::lambda::{Error, serve_group, start};
use paddock::routes::health_routes;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Readiness checks the item store only.
    serve_group(health_routes(), start().await?).await
}
