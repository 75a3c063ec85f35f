//! Lambda function relaying outbox events from the table's stream to the event queue.

use paddock::lambda::{Error, serve_outbox_relay, start};

#[tokio::main]
async fn main() -> Result<(), Error> {
    serve_outbox_relay(start().await?.queue().await?).await
}
