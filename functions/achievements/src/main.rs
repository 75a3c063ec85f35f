//! Lambda function consuming the achievements queue (SQS trigger).

use paddock::lambda::{Error, serve_consumer, start};
use paddock::queues::QueueName;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Statistics and unlocks live in the item store; poison events go to the queue's DLQ.
    let wiring = start().await?.queues(&[QueueName::Achievements]).await?;
    serve_consumer(wiring, QueueName::Achievements).await
}
