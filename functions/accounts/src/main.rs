//! Lambda function consuming the accounts queue (SQS trigger): renamed drivers on the
//! leaderboards, and account deletion jobs.

use paddock::lambda::{Error, serve_consumer, start};
use paddock::queues::QueueName;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Deletion jobs remove track points and share-pack objects from the blob store.
    let wiring = start()
        .await?
        .blobs()
        .await?
        .queues(&[QueueName::Accounts])
        .await?;
    serve_consumer(wiring, QueueName::Accounts).await
}
