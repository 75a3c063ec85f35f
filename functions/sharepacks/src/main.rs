//! Lambda function serving the share-pack endpoint group.

use paddock::lambda::{Error, serve_group, start};
use paddock::routes::sharepacks;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Packs live in the blob store; large ones go straight to S3 through presigned URLs.
    let wiring = start().await?.blobs().await?.secrets();
    serve_group(sharepacks::routes(), wiring).await
}
