//! Lambda function consuming the track-maps queue (SQS trigger) and the maintenance schedule.

use paddock_core::queues::QueueName;
use paddock_core::workers;
use paddock_runtime::lambda::{self, serve_consumer, start};
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(async {
        // Poison events go to the queue's DLQ; track maps are read from and written to blobs.
        let wiring = start().await?.blobs().await?;
        let wiring = wiring.queues(&[QueueName::TrackMaps]).await?;
        serve_consumer(wiring, QueueName::TrackMaps, workers::track_maps()).await
    })
}
