//! Lambda function processing queued events (SQS trigger) and the maintenance schedule.

#[tokio::main]
async fn main() -> Result<(), paddock::lambda::Error> {
    paddock::lambda::serve_event_worker().await
}
