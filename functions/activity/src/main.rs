//! Lambda function serving the activity endpoint group.

use paddock::lambda::{Error, serve_group, start};
use paddock::routes;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Track maps are read from the blob store.
    let wiring = start().await?.blobs().await?.secrets();
    serve_group(routes::activity_routes(), wiring).await
}
