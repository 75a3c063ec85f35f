//! The webhooks consumer: posts each event to every subscription of its driver that wants
//! it, signed, once per subscription (a subscription that took an event skips it when it
//! comes again), keeps a short history of attempts, and disables a subscription that failed
//! for days.
//!
//! One receiver cannot hold another's deliveries:
//! - the subscriptions of an event are delivered at once, each within the client's
//!   [`TIMEOUT`], at most [`host_slots::PER_HOST`] at a time to one host, and a delivery
//!   that cannot start within [`BATCH_BUDGET`] of its event's turn waits for a later one;
//! - a delivery that fails does not fail the event: that one subscription gets a
//!   `webhook.redelivery` message of its own on the same queue, with its attempt count, sent
//!   after [`retry_delay`]; after [`MAX_ATTEMPTS`] attempts it goes to the dead letters;
//! - a host that stops answering is backed off once for every driver
//!   ([`host_backoff`]): deliveries to it wait for its window instead of each trying;
//! - the history says the same of every failure without an answer ([`NO_ANSWER`]); the
//!   detail goes to the service's log.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::address::WebhookUrl;
use super::client::{DeliveryFailure, TIMEOUT, WebhookClient, WebhookRequest};
use super::host_backoff::{self, Gate, HostOutcome, queue_now_ms};
use super::host_slots::HostSlots;
use super::message::{Message, body_of, message_of};
use super::partition;
use super::subscriptions::{self, MAX_PER_DRIVER, StoredSubscription, SubscriptionError};
use paddock_kernel::events::{Event, EventKind, ProcessError, WebhookRedelivery};
use paddock_kernel::ids::{SubscriptionId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Key, Query, StoreError, TTL, item};
use paddock_kernel::ports::queue::QueueError;
use paddock_kernel::queues::QueueName;
use paddock_kernel::tables::Table;

/// How long an attempt stays in the history.
pub const LOG_KEPT_SECS: i64 = 7 * 24 * 3600;
/// Attempts the history answers, newest first.
pub const HISTORY_SHOWN: usize = 20;
/// A subscription whose deliveries have all failed for this long is disabled.
pub const DISABLE_AFTER: time::Duration = time::Duration::days(3);
/// Attempts at one event for one subscription before it goes to the dead letters.
pub const MAX_ATTEMPTS: u32 = 10;
/// Seconds before the next attempt, after attempt 1, 2, ...: about a day in all.
const BACKOFF_SECS: [u64; 9] = [5, 60, 300, 1800, 3600, 7200, 14400, 28800, 28800];
/// How long after its event's turn began a delivery may still start. With every delivery of
/// a batch under way at once, a batch ends within this and one [`TIMEOUT`], well inside the
/// consumer function's timeout (120 s in `template.yaml`).
pub const BATCH_BUDGET: Duration = Duration::from_secs(30);
/// When a delivery that did not start within the budget is tried again.
const BUDGET_DEFERRAL: Duration = Duration::from_secs(5);
/// A delivery kept waiting on its host's back-off for longer than this (counted from the
/// event) goes to the dead letters.
pub const GIVE_UP_AFTER: time::Duration = time::Duration::days(2);
/// What the history says of every failure without an HTTP answer (refused, reset, TLS,
/// timeout): telling them apart would let a driver scan a host's ports through the service.
pub const NO_ANSWER: &str = "no answer from the receiver";

/// The wait before attempt `attempt + 1` after attempt `attempt` failed.
pub fn retry_delay(attempt: u32) -> Duration {
    let index = usize::try_from(attempt.saturating_sub(1)).unwrap_or(usize::MAX);
    Duration::from_secs(BACKOFF_SECS[index.min(BACKOFF_SECS.len() - 1)])
}

/// What the consumer delivers with: the HTTP client, and the slots of the hosts it posts to.
pub struct Deliveries {
    client: Arc<dyn WebhookClient>,
    slots: HostSlots,
}

impl Deliveries {
    /// Deliveries through `client`.
    pub fn new(client: Arc<dyn WebhookClient>) -> Self {
        Self {
            client,
            slots: HostSlots::default(),
        }
    }
}

/// One attempt, as the driver reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// The attempt's id.
    pub id: String,
    /// The message's `webhook-id` (the same on every attempt of one event).
    pub webhook_id: String,
    /// The event type.
    pub event_type: String,
    /// RFC 3339.
    pub attempted_at: String,
    /// The receiver's HTTP status, when it answered.
    #[schema(required = true)]
    pub status: Option<u16>,
    /// Whether the receiver took it (a 2xx answer).
    pub succeeded: bool,
    /// From the request to the answer, milliseconds; an attempt without an answer reads as
    /// the whole deadline.
    pub duration_ms: u64,
    /// Why it failed, when it did.
    #[schema(required = true)]
    pub error: Option<String>,
}

fn done_key(user: &UserId, subscription: &SubscriptionId, event: &Event) -> Key {
    Key::new(partition(user), format!("DONE#{subscription}#{}", event.id))
}

fn log_prefix(subscription: &SubscriptionId) -> String {
    format!("LOG#{subscription}#")
}

/// What became of one subscription's delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Taken (or not to be tried again: the subscription was disabled).
    Settled,
    /// Attempted, and failed.
    Failed,
    /// Not attempted: its host is backed off, or the batch's budget ran out. Not before
    /// these Unix milliseconds (queue time).
    Deferred(i64),
}

/// The webhooks consumer: delivers `event` to each subscription of its driver that wants
/// it, or (a `webhook.redelivery`) makes one subscription's next attempt.
pub async fn process(
    ports: &Ports,
    deliveries: &Deliveries,
    event: &Event,
) -> Result<(), ProcessError> {
    if let EventKind::WebhookRedelivery(next) = &event.kind {
        return redeliver(ports, deliveries, next).await;
    }
    let Some(message) = message_of(event) else {
        return Ok(());
    };
    let user = user_of(event)?;
    let subscriptions = subscriptions::stored_all(ports, user)
        .await
        .map_err(reading)?;
    let targets: Vec<&StoredSubscription> = subscriptions
        .iter()
        .filter(|s| match &message.only {
            Some(id) => &s.shown.id == id,
            None => s.wants(message.event_type),
        })
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    let done = ports
        .items
        .get_many(
            targets
                .iter()
                .map(|s| (Table::Activity, done_key(user, &s.shown.id, event)))
                .collect(),
        )
        .await
        .map_err(reading)?;
    let body = body_of(event, &message);
    let budget_end = tokio::time::Instant::now() + BATCH_BUDGET;
    let pending: Vec<&StoredSubscription> = targets
        .into_iter()
        .zip(done)
        .filter_map(|(subscription, done)| done.is_none().then_some(subscription))
        .collect();
    let (message, body) = (&message, &body);
    let mut attempts = Vec::with_capacity(pending.len());
    for subscription in pending {
        attempts.push(async move {
            let outcome = attempt(
                ports,
                deliveries,
                user,
                subscription,
                event,
                message,
                body,
                budget_end,
            )
            .await;
            (&subscription.shown.id, outcome)
        });
    }
    let outcomes: Vec<(&SubscriptionId, Result<Outcome, StoreError>)> = stream::iter(attempts)
        .buffer_unordered(MAX_PER_DRIVER)
        .collect()
        .await;
    // A store failure fails the event as a whole: it comes again, and the subscriptions
    // that took it skip it.
    let mut next = Vec::new();
    for (subscription, outcome) in outcomes {
        match outcome.map_err(reading)? {
            Outcome::Settled => {}
            Outcome::Failed => next.push((subscription, 2, after(retry_delay(1)))),
            Outcome::Deferred(at) => next.push((subscription, 1, at)),
        }
    }
    for (subscription, attempt, at) in next {
        schedule(ports, event, subscription, attempt, at)
            .await
            .map_err(scheduling)?;
    }
    Ok(())
}

/// One subscription's next attempt at an event.
async fn redeliver(
    ports: &Ports,
    deliveries: &Deliveries,
    next: &WebhookRedelivery,
) -> Result<(), ProcessError> {
    let early = next.not_before_ms - queue_now_ms();
    if early > 0 {
        return Err(ProcessError::NotYet(whole_seconds(early)));
    }
    let event = &*next.event;
    let Some(message) = message_of(event) else {
        return Ok(());
    };
    let user = user_of(event)?;
    let subscriptions = subscriptions::stored_all(ports, user)
        .await
        .map_err(reading)?;
    // Deleted, paused, or no longer asking for the type: nothing more to send it.
    let Some(subscription) = subscriptions.iter().find(|s| {
        s.shown.id == next.subscription_id
            && (message.only.is_some() || s.wants(message.event_type))
    }) else {
        return Ok(());
    };
    let done = done_key(user, &subscription.shown.id, event);
    if ports
        .items
        .get(Table::Activity, &done)
        .await
        .map_err(reading)?
        .is_some()
    {
        return Ok(());
    }
    let body = body_of(event, &message);
    let budget_end = tokio::time::Instant::now() + BATCH_BUDGET;
    let outcome = attempt(
        ports,
        deliveries,
        user,
        subscription,
        event,
        &message,
        &body,
        budget_end,
    )
    .await
    .map_err(reading)?;
    let id = &subscription.shown.id;
    match outcome {
        Outcome::Settled => Ok(()),
        Outcome::Failed if next.attempt >= MAX_ATTEMPTS => Err(ProcessError::Exhausted(format!(
            "webhook subscription {id} did not take event {} in {MAX_ATTEMPTS} attempts",
            event.id
        ))),
        Outcome::Failed => schedule(
            ports,
            event,
            id,
            next.attempt + 1,
            after(retry_delay(next.attempt)),
        )
        .await
        .map_err(scheduling),
        Outcome::Deferred(_) if ports.clock.now() - event.occurred_at > GIVE_UP_AFTER => {
            Err(ProcessError::Exhausted(format!(
                "webhook subscription {id} waited on its receiver's host for event {} for over {} days",
                event.id,
                GIVE_UP_AFTER.whole_days()
            )))
        }
        Outcome::Deferred(at) => schedule(ports, event, id, next.attempt, at)
            .await
            .map_err(scheduling),
    }
}

fn user_of(event: &Event) -> Result<&UserId, ProcessError> {
    event
        .user_id
        .as_ref()
        .ok_or_else(|| ProcessError::Poison(format!("{} without a user", event.kind.name())))
}

fn reading(e: StoreError) -> ProcessError {
    ProcessError::Retry(anyhow::Error::new(e).context("delivering webhooks"))
}

fn scheduling(e: QueueError) -> ProcessError {
    ProcessError::Retry(anyhow::Error::new(e).context("scheduling a webhook redelivery"))
}

/// Unix milliseconds of queue time, `delay` from now.
fn after(delay: Duration) -> i64 {
    queue_now_ms().saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
}

/// `millis` rounded up to whole seconds: SQS counts delays and visibility in seconds, and a
/// message shown again a moment before it is due would only be hidden again.
fn whole_seconds(millis: i64) -> Duration {
    Duration::from_secs(u64::try_from(millis.max(0)).unwrap_or(0).div_ceil(1000))
}

/// Sends `subscription`'s attempt number `attempt` at `event`, due at `at` (Unix ms).
async fn schedule(
    ports: &Ports,
    event: &Event,
    subscription: &SubscriptionId,
    attempt: u32,
    at: i64,
) -> Result<(), QueueError> {
    let redelivery = Event {
        id: Uuid::now_v7(),
        user_id: event.user_id.clone(),
        occurred_at: event.occurred_at,
        kind: EventKind::WebhookRedelivery(WebhookRedelivery {
            subscription_id: subscription.clone(),
            attempt,
            not_before_ms: at,
            event: Box::new(event.clone()),
        }),
        trace: event.trace.clone(),
    };
    let delay = whole_seconds(at - queue_now_ms());
    let body = serde_json::to_string(&redelivery).expect("an event serialises");
    ports
        .queues
        .get(QueueName::Webhooks)
        .send_delayed(body, delay)
        .await
}

/// One attempt at one subscription, unless its host is backed off or the budget ran out.
#[allow(clippy::too_many_arguments)]
async fn attempt(
    ports: &Ports,
    deliveries: &Deliveries,
    user: &UserId,
    subscription: &StoredSubscription,
    event: &Event,
    message: &Message,
    body: &str,
    budget_end: tokio::time::Instant,
) -> Result<Outcome, StoreError> {
    let client = &*deliveries.client;
    let url = match WebhookUrl::parse(&subscription.shown.url, client.policy()) {
        Ok(url) => url,
        Err(refused) => {
            let answer = Err(DeliveryFailure::Refused(refused));
            return record(
                ports,
                user,
                subscription,
                event,
                message,
                &answer,
                Duration::ZERO,
            )
            .await;
        }
    };
    let host = format!("{}:{}", url.host(), url.port());
    let Ok(slot) = tokio::time::timeout_at(budget_end, deliveries.slots.take(&host)).await else {
        return Ok(Outcome::Deferred(after(BUDGET_DEFERRAL)));
    };
    let gate = host_backoff::pass(ports, &host).await?;
    if let Gate::Wait(until) = gate {
        return Ok(Outcome::Deferred(until));
    }
    let webhook_id = event.id.to_string();
    let timestamp = ports.clock.now().unix_timestamp();
    let secrets = subscription.signing_secrets(timestamp);
    let mut request = WebhookRequest::signed(url, &webhook_id, timestamp, &secrets, body);
    let named = ("webhook-subscription-id", subscription.shown.id.to_string());
    request.headers.push(named);
    let started = std::time::Instant::now();
    // The client keeps its own deadline; this one holds whatever it does.
    let answer = tokio::time::timeout(TIMEOUT + Duration::from_secs(1), client.post(request))
        .await
        .unwrap_or(Err(DeliveryFailure::Timeout));
    let took = started.elapsed();
    let host_outcome = match &answer {
        Ok(a) if a.status == 429 || a.status >= 500 => HostOutcome::Down,
        Ok(_) => HostOutcome::Answered,
        Err(DeliveryFailure::Refused(_)) => HostOutcome::Untried,
        Err(_) => HostOutcome::Down,
    };
    // The slot is held until the host's state is written, so the deliveries waiting for it
    // read that state.
    host_backoff::settle(ports, &host, &gate, host_outcome).await?;
    drop(slot);
    if let Err(failure) = &answer {
        tracing::info!(
            subscription = %subscription.shown.id,
            host = %host,
            took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            error = %failure,
            "webhook delivery got no answer"
        );
    }
    record(ports, user, subscription, event, message, &answer, took).await
}

/// Writes an attempt's history entry and its outcome.
async fn record(
    ports: &Ports,
    user: &UserId,
    subscription: &StoredSubscription,
    event: &Event,
    message: &Message,
    answer: &Result<super::client::WebhookAnswer, DeliveryFailure>,
    took: Duration,
) -> Result<Outcome, StoreError> {
    let id = &subscription.shown.id;
    let now = ports.clock.now();
    let timestamp = now.unix_timestamp();
    let took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    let (status, succeeded, error, duration_ms) = match answer {
        Ok(a) if (200..300).contains(&a.status) => (Some(a.status), true, None, took_ms),
        Ok(a) => (
            Some(a.status),
            false,
            Some(format!("answered {}", a.status)),
            took_ms,
        ),
        // Nothing was sent: the rule is the driver's to fix.
        Err(DeliveryFailure::Refused(refused)) => (None, false, Some(refused.to_string()), 0),
        // Every failure without an answer reads the same, and as long as the deadline.
        Err(DeliveryFailure::Timeout | DeliveryFailure::Connection(_)) => (
            None,
            false,
            Some(NO_ANSWER.to_owned()),
            u64::try_from(TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        ),
    };
    let attempt = Attempt {
        id: Uuid::now_v7().to_string(),
        webhook_id: event.id.to_string(),
        event_type: message.event_type.to_owned(),
        attempted_at: rfc3339(now),
        status,
        succeeded,
        duration_ms,
        error,
    };
    let mut logged = serde_json::to_value(&attempt).expect("an attempt serialises");
    logged[TTL] = (timestamp + LOG_KEPT_SECS).into();
    let log_key = Key::new(partition(user), format!("{}{}", log_prefix(id), attempt.id));
    ports
        .items
        .put(Table::Activity, item(&log_key, logged), None)
        .await?;
    paddock_platform::metrics::global()
        .webhook_deliveries
        .with_label_values(&[if succeeded { "ok" } else { "failed" }])
        .inc();
    if succeeded {
        let done = json!({ TTL: timestamp + paddock_kernel::processed_events::KEPT_SECS });
        ports
            .items
            .put(
                Table::Activity,
                item(&done_key(user, id, event), done),
                None,
            )
            .await?;
        subscriptions::record_outcome(ports, user, id, true, now).await?;
        return Ok(Outcome::Settled);
    }
    // A refused address is the URL's fault, not the receiver's: it fails like any answer.
    let since = subscriptions::record_outcome(ports, user, id, false, now).await?;
    if message.only.is_none()
        && let Some(since) = since
        && now - since >= DISABLE_AFTER
    {
        let reason = format!(
            "every delivery failed from {} for {} days",
            rfc3339(since),
            DISABLE_AFTER.whole_days()
        );
        subscriptions::disable(ports, user, id, since, reason).await?;
        // Disabled: the event is not tried again for it.
        return Ok(Outcome::Settled);
    }
    Ok(Outcome::Failed)
}

/// The last attempts of one of the driver's subscriptions, newest first.
pub async fn history(
    ports: &Ports,
    user: &UserId,
    subscription: &SubscriptionId,
) -> Result<Vec<Attempt>, SubscriptionError> {
    subscriptions::get(ports, user, subscription).await?;
    let page = ports
        .items
        .query(
            Query::partition(Table::Activity, partition(user))
                .begins_with(log_prefix(subscription))
                .descending()
                .limit(HISTORY_SHOWN),
        )
        .await?;
    let now = ports.clock.unix();
    Ok(page
        .items
        .into_iter()
        .filter(|row| !paddock_kernel::ports::items::is_expired(row, now))
        .filter_map(|row| serde_json::from_value(Value::Object(row)).ok())
        .collect())
}

#[cfg(test)]
mod tests;
