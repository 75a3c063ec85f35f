//! Lambda function consuming the webhooks queue (SQS trigger): posts events to the drivers'
//! webhook subscriptions.

use paddock_core::queues::QueueName;
use paddock_runtime::lambda::{self, serve_consumer, start};
use paddock_runtime::wiring::webhook_deliveries;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Subscriptions, history and markers live in the item store; failed deliveries are
        // delayed on the queue, poison events go to its DLQ.
        let wiring = start().await?.queues(&[QueueName::Webhooks]).await?;
        let deliveries = webhook_deliveries(wiring.settings());
        serve_consumer(wiring, QueueName::Webhooks, deliveries).await
    })
}
