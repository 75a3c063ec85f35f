//! Lambda function consuming the accounts queue (SQS trigger): renamed drivers on the
//! leaderboards, and account deletion jobs.

use paddock_core::queues::QueueName;
use paddock_core::workers;
use paddock_runtime::lambda::{self, serve_consumer, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Deletion jobs remove track points, share-pack objects and exports from the blob store.
        let wiring = start()
            .await?
            .blobs()
            .await?
            .queues(&[QueueName::Accounts])
            .await?;
        serve_consumer(wiring, QueueName::Accounts, workers::accounts()).await
    })
}
