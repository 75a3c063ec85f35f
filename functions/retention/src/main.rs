//! Lambda function running the retention sweep on its EventBridge schedule.

use paddock::lambda::{Error, serve_retention, start};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Only the item store: the sweep removes expired items from every table.
    serve_retention(start().await?).await
}
