//! Lambda function relaying outbox events from the table's stream to the queues that
//! subscribe to them.

use paddock_core::queues::QueueName;
use paddock_runtime::lambda::{self, serve_outbox_relay, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async { serve_outbox_relay(start().await?.queues(&QueueName::ALL).await?).await })
}
