//! Lambda function relaying outbox events from the table's stream to the queues that
//! subscribe to them.

use paddock::lambda::{Error, serve_outbox_relay, start};
use paddock::queues::QueueName;

#[tokio::main]
async fn main() -> Result<(), Error> {
    serve_outbox_relay(start().await?.queues(&QueueName::ALL).await?).await
}
