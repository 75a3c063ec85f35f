//! Workers: plain async processors of queued events, and the runner that feeds them.
//!
//! Locally the runner is a tokio task polling the embedded queue; in AWS the SQS-triggered
//! Lambda calls [`handle_body`] per record and reports partial batch failures.

use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

use crate::metrics;
use crate::outbox::Event;
use crate::ports::Ports;
use crate::ports::items::{Condition, Key, TxOp, item};
use crate::ports::queue::ReceivedMessage;
use crate::tables::Table;

/// Why processing an event failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// A transient failure: the event is delivered again later.
    #[error("retryable: {0:#}")]
    Retry(anyhow::Error),
    /// The event can never succeed (unreadable, refers to nothing): straight to dead letters.
    #[error("poison: {0}")]
    Poison(String),
}

/// A processor of events: a plain async function of the event and the ports.
pub type Processor =
    Arc<dyn Fn(Event, Ports) -> BoxFuture<'static, Result<(), ProcessError>> + Send + Sync>;

/// The service's processor: dispatches each event kind to its handlers.
pub fn default_processor() -> Processor {
    Arc::new(|event: Event, ports: Ports| Box::pin(async move { dispatch(event, ports).await }))
}

async fn dispatch(event: Event, ports: Ports) -> Result<(), ProcessError> {
    let job = || {
        event
            .payload
            .get("jobId")
            .and_then(serde_json::Value::as_str)
    };
    match event.kind.as_str() {
        // An upload with track points, or a job returned to pending: build the track map.
        crate::sessions::create::UPLOADED_EVENT | crate::tracks::jobs::PROCESS_EVENT => {
            if let Some(job_id) = job() {
                crate::tracks::maps::process_job(&ports, job_id).await?;
            }
            Ok(())
        }
        _ => {
            // Event kinds without a handler yet are acknowledged, so they do not pile up.
            tracing::debug!(kind = %event.kind, id = %event.id, "event has no processor");
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
            serde_json::json!({ "ttl": expires }),
        ),
        condition: Some(Condition::NotExists),
    }
}

/// Parses a queued body and runs the processor on it.
pub async fn handle_body(
    body: &str,
    ports: &Ports,
    processor: &Processor,
) -> Result<String, ProcessError> {
    let event: Event = serde_json::from_str(body)
        .map_err(|e| ProcessError::Poison(format!("unreadable event: {e}")))?;
    let kind = event.kind.clone();
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
                .with_label_values(&[&kind, "ok"])
                .inc();
            queue.ack(&message.receipt).await
        }
        Err(ProcessError::Retry(e)) if message.receive_count < policy.max_receives => {
            metrics::global()
                .events
                .with_label_values(&[kind_of(&message.body).as_str(), "retry"])
                .inc();
            tracing::warn!(message_id = %message.id, attempt = message.receive_count, error = format!("{e:#}"), "event failed; will retry");
            let exp = message.receive_count.saturating_sub(1).min(7);
            let delay = (policy.base_delay * 2u32.pow(exp)).min(Duration::from_secs(60));
            queue.retry_later(&message.receipt, delay).await
        }
        Err(e) => {
            metrics::global()
                .events
                .with_label_values(&[kind_of(&message.body).as_str(), "dead_letter"])
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

fn kind_of(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned))
        .filter(|k| k.len() <= 64)
        .unwrap_or_else(|| "unknown".into())
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
