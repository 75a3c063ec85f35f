//! The local server's runners of the domain's consumers: a task per queue polling its embedded
//! queue, and the outbox relay on a timer. In AWS, each queue triggers its own Lambda instead
//! (`lambda`), and the outbox table's stream runs the relay.

use futures::stream::StreamExt;
use std::time::Duration;
use tokio::sync::watch;

use paddock_core::ports::Ports;
use paddock_core::queues::QueueName;
use paddock_core::workers::{self, Processor, RetryPolicy};

/// Runs the local consumer of `consumer`'s queue until `shutdown` turns true; it also keeps
/// the queue's depth gauge current.
pub async fn run_consumer(
    consumer: QueueName,
    ports: Ports,
    processor: Processor,
    policy: RetryPolicy,
    mut shutdown: watch::Receiver<bool>,
) {
    let queue = ports.queues.get(consumer).clone();
    let mut depth_read = tokio::time::Instant::now();
    while !*shutdown.borrow() {
        if depth_read.elapsed() >= Duration::from_secs(5) {
            depth_read = tokio::time::Instant::now();
            if let Ok(Some(depth)) = queue.depth().await {
                paddock_core::metrics::global()
                    .queue_depth
                    .with_label_values(&[consumer.name()])
                    .set(i64::try_from(depth).unwrap_or(i64::MAX));
            }
        }
        let batch = tokio::select! {
            batch = queue.receive(10, Duration::from_secs(1)) => batch,
            _ = shutdown.changed() => break,
        };
        match batch {
            // A batch is handled concurrently (consumers are safe under concurrent delivery)
            // and its successes acknowledged in one call.
            Ok(messages) => {
                let done: Vec<String> = futures::stream::iter(messages)
                    .map(|message| {
                        workers::handle_delivery(consumer, message, &ports, &processor, policy)
                    })
                    .buffer_unordered(workers::concurrency(consumer))
                    .filter_map(std::future::ready)
                    .collect()
                    .await;
                if let Err(e) = queue.ack_all(&done).await {
                    // They reappear after the visibility timeout and find their work done.
                    tracing::error!(%consumer, error = %e, "could not acknowledge a batch");
                }
            }
            Err(e) => {
                tracing::error!(%consumer, error = %e, "event queue unavailable; backing off");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Runs the local outbox relay until `shutdown` turns true.
pub async fn run_relay(ports: Ports, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    while !*shutdown.borrow() {
        match paddock_core::outbox::relay_pending(&ports).await {
            // More may have arrived while this pass ran: look again at once.
            Ok(relayed) if relayed > 0 => continue,
            Ok(_) => {}
            Err(e) => tracing::error!(error = format!("{e:#}"), "outbox relay failed; will retry"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => break,
        }
    }
}
