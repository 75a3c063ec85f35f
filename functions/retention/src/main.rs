//! Lambda function on the share-pack table's stream: removes the objects of packs DynamoDB's
//! TTL removed.

use paddock_runtime::lambda::{self, serve_retention, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // DynamoDB's TTL removes expired items; this removes the objects of packs that expired
        // unfinished (never completed, or deleted part way).
        serve_retention(start().await?.blobs().await?).await
    })
}
