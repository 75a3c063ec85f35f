//! Consumers: plain async processors of queued events, one per queue, and how a delivery is
//! handled and retried.
//!
//! Locally each consumer is a tokio task polling its embedded queue (`paddock-runtime`'s
//! `local_runner`); in AWS each queue triggers its own Lambda, which calls [`handle_body`] per
//! record and reports partial batch failures.

use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

pub use crate::events::ProcessError;
use crate::events::{Event, EventKind, SessionUploaded, TrackProcessRequested};
use crate::metrics;
use crate::ports::Ports;
use crate::ports::queue::ReceivedMessage;
use crate::queues::QueueName;
use crate::trace_context::EventHeader;
use tracing::Instrument;

/// A processor of events: a plain async function of the event and the ports.
pub type Processor =
    Arc<dyn Fn(Event, Ports) -> BoxFuture<'static, Result<(), ProcessError>> + Send + Sync>;

/// The consumer of `queue`: the processor its events go to (the local server runs them all).
///
/// A Lambda function names its own consumer's processor instead ([`achievements`], ...), so
/// its binary links that consumer's code and not every other's.
pub fn processor(queue: QueueName) -> Processor {
    match queue {
        QueueName::TrackMaps => track_maps(),
        QueueName::Achievements => achievements(),
        QueueName::Feed => feed(),
        QueueName::Accounts => accounts(),
        // Deliveries need an HTTP client: the processes that run this consumer build it with
        // [`webhook_processor`]; without one, deliveries fail and are tried again.
        QueueName::Webhooks => webhook_processor(Arc::new(crate::webhooks::client::Unwired)),
    }
}

/// The track-maps consumer: a track's map drawn from its sessions.
pub fn track_maps() -> Processor {
    Arc::new(|event: Event, ports: Ports| {
        Box::pin(async move { build_track_map(event, ports).await })
    })
}

/// The achievements consumer: statistics and unlocks.
pub fn achievements() -> Processor {
    Arc::new(|event: Event, ports: Ports| {
        Box::pin(async move { crate::activity::achievements::process(&ports, &event).await })
    })
}

/// The feed consumer: entries in the followers' feeds.
pub fn feed() -> Processor {
    Arc::new(|event: Event, ports: Ports| {
        Box::pin(async move { crate::activity::feed::process(&ports, &event).await })
    })
}

/// The accounts consumer: renamed drivers on the boards, and account deletion jobs.
pub fn accounts() -> Processor {
    Arc::new(|event: Event, ports: Ports| {
        Box::pin(async move { account_event(event, ports).await })
    })
}

/// The webhooks consumer, delivering through `client`. A new best first tells the drivers it
/// passed (their `board.passed` events go through the outbox like any other).
pub fn webhook_processor(client: Arc<dyn crate::webhooks::client::WebhookClient>) -> Processor {
    let deliveries = Arc::new(crate::webhooks::delivery::Deliveries::new(client));
    Arc::new(move |event: Event, ports: Ports| {
        let deliveries = deliveries.clone();
        Box::pin(async move {
            crate::webhooks::passing::process(&ports, &event).await?;
            crate::webhooks::delivery::process(&ports, &deliveries, &event).await
        })
    })
}

/// The accounts consumer: a renamed driver's boards, or a deleted account's deletion job.
async fn account_event(event: Event, ports: Ports) -> Result<(), ProcessError> {
    match &event.kind {
        EventKind::ProfileUpdated(_) => {
            let user_id = event
                .user_id
                .as_ref()
                .ok_or_else(|| ProcessError::Poison("profile.updated without a user".into()))?;
            crate::leaderboards::renames::apply_profile(&ports, user_id)
                .await
                .map(|_| ())
                .map_err(|e| {
                    ProcessError::Retry(
                        anyhow::Error::new(e).context("renaming a driver on the boards"),
                    )
                })
        }
        EventKind::AccountDeleted(_) => crate::driver_data::deletion::process(&ports, &event).await,
        // Kinds this queue does not subscribe to (sent by an earlier version): acknowledged.
        _ => Ok(()),
    }
}

async fn build_track_map(event: Event, ports: Ports) -> Result<(), ProcessError> {
    match &event.kind {
        // An upload with track points, or a job returned to pending: build the track map.
        EventKind::SessionUploaded(SessionUploaded {
            job_id: Some(job_id),
            ..
        })
        | EventKind::TrackProcessRequested(TrackProcessRequested { job_id, .. }) => {
            crate::tracks::maps::process_job(&ports, job_id).await
        }
        // Kinds this queue does not subscribe to (sent by an earlier version): acknowledged.
        _ => Ok(()),
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

/// Handles one delivery: answers its receipt on success (the caller acknowledges a batch's
/// successes together), redelivers later on a transient failure, dead-letters a poison event
/// or one that failed `max_receives` times.
pub async fn handle_delivery(
    consumer: QueueName,
    message: ReceivedMessage,
    ports: &Ports,
    processor: &Processor,
    policy: RetryPolicy,
) -> Option<String> {
    // Every line of this delivery names its event (and the trace behind it, in AWS).
    let span = EventHeader::of(&message.body).span(consumer.name(), &message.id);
    deliver(consumer, message, ports, processor, policy)
        .instrument(span)
        .await
}

/// [`handle_delivery`] inside the event's span.
async fn deliver(
    consumer: QueueName,
    message: ReceivedMessage,
    ports: &Ports,
    processor: &Processor,
    policy: RetryPolicy,
) -> Option<String> {
    let outcome = handle_body(&message.body, ports, processor).await;
    let queue = ports.queues.get(consumer);
    let count = |kind: &str, outcome: &str| {
        metrics::global()
            .events
            .with_label_values(&[consumer.name(), kind, outcome])
            .inc();
    };
    let result = match outcome {
        Ok(kind) => {
            count(kind, "ok");
            return Some(message.receipt);
        }
        // Come before its time (a webhook redelivery waiting longer than a send can delay).
        Err(ProcessError::NotYet(delay)) => queue.retry_later(&message.receipt, delay).await,
        Err(ProcessError::Retry(e)) if message.receive_count < max_receives(consumer, policy) => {
            count(kind_of(&message.body), "retry");
            tracing::warn!(%consumer, message_id = %message.id, attempt = message.receive_count, error = format!("{e:#}"), "event failed; will retry");
            let delay = retry_delay(consumer, policy, message.receive_count);
            queue.retry_later(&message.receipt, delay).await
        }
        Err(e) => {
            count(kind_of(&message.body), "dead_letter");
            tracing::error!(%consumer, message_id = %message.id, error = %e, "event dead-lettered");
            queue.dead_letter(&message, &e.to_string()).await
        }
    };
    if let Err(e) = result {
        // The message stays in flight and reappears after its visibility timeout.
        tracing::error!(%consumer, message_id = %message.id, error = %e, "could not settle a delivery");
    }
    None
}

/// Deliveries of one event before it is dead-lettered: the policy's, but webhooks keep
/// trying for about a day (a failed delivery has its own message per subscription, so an
/// event itself comes again only when the store or the queue failed).
pub fn max_receives(consumer: QueueName, policy: RetryPolicy) -> u32 {
    if consumer == QueueName::Webhooks {
        crate::webhooks::delivery::MAX_ATTEMPTS
    } else {
        policy.max_receives
    }
}

/// The wait before delivering again an event delivered `receive_count` times: the policy's
/// doubling delay capped at a minute, or the webhooks' back-off.
pub fn retry_delay(consumer: QueueName, policy: RetryPolicy, receive_count: u32) -> Duration {
    if consumer == QueueName::Webhooks {
        return crate::webhooks::delivery::retry_delay(receive_count);
    }
    let exp = receive_count.saturating_sub(1).min(7);
    (policy.base_delay * 2u32.pow(exp)).min(Duration::from_secs(60))
}

/// The metric label of a queued body: its kind's name, or `unreadable` (labels stay a small,
/// fixed set whatever a body says).
pub fn kind_of(body: &str) -> &'static str {
    serde_json::from_str::<Event>(body).map_or("unreadable", |e| e.kind.name())
}

/// How many events of one batch a consumer handles at once.
pub fn concurrency(consumer: QueueName) -> usize {
    match consumer {
        // Jobs of one track merge into one map: at once, they would only conflict. And a map
        // build is CPU work that must not starve the request handlers.
        QueueName::TrackMaps => 1,
        QueueName::Achievements | QueueName::Feed => 10,
        // Each delivery mostly waits on a receiver.
        QueueName::Webhooks => 10,
        // A deletion job is long and writes in batches of its own.
        QueueName::Accounts => 2,
    }
}
