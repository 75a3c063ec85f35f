//! Workers: plain async processors of queued events, and the runner that feeds them.
//!
//! Locally the runner is a tokio task polling the embedded queue; in AWS the SQS-triggered
//! Lambda calls [`handle_body`] per record and reports partial batch failures.

use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

pub use crate::events::ProcessError;
use crate::events::{Event, EventKind, SessionUploaded, TrackProcessRequested};
use crate::metrics;
use crate::ports::Ports;
use crate::ports::items::{Condition, Key, TTL, TxOp, item};
use crate::ports::queue::ReceivedMessage;
use crate::tables::Table;

/// A processor of events: a plain async function of the event and the ports.
pub type Processor =
    Arc<dyn Fn(Event, Ports) -> BoxFuture<'static, Result<(), ProcessError>> + Send + Sync>;

/// The service's processor: dispatches each event kind to its handlers.
pub fn default_processor() -> Processor {
    Arc::new(|event: Event, ports: Ports| Box::pin(async move { dispatch(event, ports).await }))
}

async fn dispatch(event: Event, ports: Ports) -> Result<(), ProcessError> {
    match &event.kind {
        // An upload with track points, or a job returned to pending: build the track map.
        EventKind::SessionUploaded(SessionUploaded {
            job_id: Some(job_id),
            ..
        })
        | EventKind::TrackProcessRequested(TrackProcessRequested { job_id, .. }) => {
            crate::tracks::maps::process_job(&ports, job_id).await
        }
        EventKind::SessionUploaded(_) | EventKind::LeaderboardSubmitted(_) => {
            // Kinds without a processor here are acknowledged, so they do not pile up.
            tracing::debug!(kind = event.kind.name(), id = %event.id, "event has no processor");
            Ok(())
        }
    }
}

/// The transaction operation that marks `event_id` as handled by `processor`; put it in the
/// same transaction as the processor's writes so a redelivered event changes nothing.
pub fn processed_marker(processor: &str, event: &Event) -> TxOp {
    let expires = event.occurred_at.unix_timestamp() + 30 * 24 * 3600;
    TxOp::Put {
        table: Table::Activity,
        item: item(
            &Key::new(format!("PROCESSED#{processor}"), event.id.to_string()),
            serde_json::json!({ TTL: expires }),
        ),
        condition: Some(Condition::NotExists),
    }
}

/// Parses a queued body and runs the processor on it.
pub async fn handle_body(
    body: &str,
    ports: &Ports,
    processor: &Processor,
) -> Result<&'static str, ProcessError> {
    let event: Event = serde_json::from_str(body)
        .map_err(|e| ProcessError::Poison(format!("unreadable event: {e}")))?;
    let kind = event.kind.name();
    processor(event, ports.clone()).await.map(|()| kind)
}

/// How the local runner retries.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Deliveries before an event is dead-lettered.
    pub max_receives: u32,
    /// Delay before the first redelivery; doubles each time, capped at a minute.
    pub base_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_receives: 5,
            base_delay: Duration::from_millis(500),
        }
    }
}

/// Handles one delivery: ack on success, redeliver later on a transient failure, dead-letter
/// a poison event or one that failed `max_receives` times.
pub async fn handle_delivery(
    message: ReceivedMessage,
    ports: &Ports,
    processor: &Processor,
    policy: RetryPolicy,
) {
    let outcome = handle_body(&message.body, ports, processor).await;
    let queue = &ports.queue;
    let result = match outcome {
        Ok(kind) => {
            metrics::global()
                .events
                .with_label_values(&[kind, "ok"])
                .inc();
            queue.ack(&message.receipt).await
        }
        Err(ProcessError::Retry(e)) if message.receive_count < policy.max_receives => {
            metrics::global()
                .events
                .with_label_values(&[kind_of(&message.body), "retry"])
                .inc();
            tracing::warn!(message_id = %message.id, attempt = message.receive_count, error = format!("{e:#}"), "event failed; will retry");
            let exp = message.receive_count.saturating_sub(1).min(7);
            let delay = (policy.base_delay * 2u32.pow(exp)).min(Duration::from_secs(60));
            queue.retry_later(&message.receipt, delay).await
        }
        Err(e) => {
            metrics::global()
                .events
                .with_label_values(&[kind_of(&message.body), "dead_letter"])
                .inc();
            tracing::error!(message_id = %message.id, error = %e, "event dead-lettered");
            queue.dead_letter(&message, &e.to_string()).await
        }
    };
    if let Err(e) = result {
        // The message stays in flight and reappears after its visibility timeout.
        tracing::error!(message_id = %message.id, error = %e, "could not settle a delivery");
    }
}

/// The metric label of a queued body: its kind's name, or `unreadable` (labels stay a small,
/// fixed set whatever a body says).
pub(crate) fn kind_of(body: &str) -> &'static str {
    serde_json::from_str::<Event>(body).map_or("unreadable", |e| e.kind.name())
}

/// Runs the local worker until `shutdown` turns true.
pub async fn run_worker(
    ports: Ports,
    processor: Processor,
    policy: RetryPolicy,
    mut shutdown: watch::Receiver<bool>,
) {
    while !*shutdown.borrow() {
        let batch = tokio::select! {
            batch = ports.queue.receive(10, Duration::from_secs(1)) => batch,
            _ = shutdown.changed() => break,
        };
        match batch {
            Ok(messages) => {
                for message in messages {
                    handle_delivery(message, &ports, &processor, policy).await;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "event queue unavailable; backing off");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Runs the local outbox relay until `shutdown` turns true.
pub async fn run_relay(ports: Ports, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    while !*shutdown.borrow() {
        if let Err(e) = crate::outbox::relay_pending(&ports).await {
            tracing::error!(error = format!("{e:#}"), "outbox relay failed; will retry");
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => break,
        }
    }
}
