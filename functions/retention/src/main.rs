//! Lambda function running the retention sweep on its EventBridge schedule.

use paddock::lambda::{Error, serve_retention, start};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // The sweep removes expired items from every table, and the objects of packs whose upload
    // was never completed.
    serve_retention(start().await?.blobs().await?).await
}
