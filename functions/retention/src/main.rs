//! Lambda function running the retention sweep on its EventBridge schedule.

use paddock::lambda::{self, serve_retention, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // The sweep removes expired items from every table, and the objects of packs whose upload
        // was never completed.
        serve_retention(start().await?.blobs().await?).await
    })
}
