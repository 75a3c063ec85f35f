//! Lambda function processing queued events (SQS trigger) and the maintenance schedule.

use paddock::lambda::{Error, serve_event_worker, start};
use paddock::workers;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Dead letters go to the queue's DLQ; track maps are read from and written to blobs.
    let wiring = start().await?.blobs().await?.queue().await?;
    serve_event_worker(wiring, workers::default_processor()).await
}
