//! Lambda function consuming the track-maps queue (SQS trigger) and the maintenance schedule.

use paddock::lambda::{Error, serve_consumer, start};
use paddock::queues::QueueName;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Poison events go to the queue's DLQ; track maps are read from and written to blobs.
    let wiring = start().await?.blobs().await?;
    let wiring = wiring.queues(&[QueueName::TrackMaps]).await?;
    serve_consumer(wiring, QueueName::TrackMaps).await
}
