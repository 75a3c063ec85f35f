//! Lambda function consuming the achievements queue (SQS trigger).

use paddock_core::queues::QueueName;
use paddock_core::workers;
use paddock_runtime::lambda::{self, serve_consumer, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Statistics and unlocks live in the item store; poison events go to the queue's DLQ.
        let wiring = start().await?.queues(&[QueueName::Achievements]).await?;
        serve_consumer(wiring, QueueName::Achievements, workers::achievements()).await
    })
}
