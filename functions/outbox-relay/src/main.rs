//! Lambda function relaying outbox events from the table's stream to the event queue.

#[tokio::main]
async fn main() -> Result<(), paddock::lambda::Error> {
    paddock::lambda::serve_outbox_relay().await
}
