//! Lambda function consuming the feed queue (SQS trigger).

use paddock_core::queues::QueueName;
use paddock_core::workers;
use paddock_runtime::lambda::{self, serve_consumer, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Feed entries live in the item store; poison events go to the queue's DLQ.
        let wiring = start().await?.queues(&[QueueName::Feed]).await?;
        serve_consumer(wiring, QueueName::Feed, workers::feed()).await
    })
}
