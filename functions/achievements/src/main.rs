//! Lambda function consuming the achievements queue (SQS trigger).

use paddock::lambda::{self, serve_consumer, start};
use paddock::queues::QueueName;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Statistics and unlocks live in the item store; poison events go to the queue's DLQ.
        let wiring = start().await?.queues(&[QueueName::Achievements]).await?;
        serve_consumer(wiring, QueueName::Achievements).await
    })
}
