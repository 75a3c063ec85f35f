//! The webhooks consumer: posts each event to every subscription of its driver that wants
//! it, signed, once per subscription (a redelivered event skips the subscriptions that had
//! it), keeps a short history of attempts, and disables a subscription that failed for days.
//!
//! A failed delivery fails the event, so the queue delivers it again after
//! [`retry_delay`]; after [`MAX_ATTEMPTS`] (about a day) it goes to the dead letters.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::address::WebhookUrl;
use super::client::{DeliveryFailure, WebhookClient, WebhookRequest};
use super::subscriptions::{self, StoredSubscription, SubscriptionError};
use super::{TEST_EVENT_TYPE, partition, signing};
use crate::events::{Event, EventKind, LeaderboardSubmitted, ProcessError};
use crate::ids::UserId;
use crate::ports::Ports;
use crate::ports::clock::rfc3339;
use crate::ports::items::{Key, Query, StoreError, TTL, item};
use crate::tables::Table;

/// How long an attempt stays in the history.
pub const LOG_KEPT_SECS: i64 = 7 * 24 * 3600;
/// Attempts the history answers, newest first.
pub const HISTORY_SHOWN: usize = 20;
/// A subscription whose deliveries have all failed for this long is disabled.
pub const DISABLE_AFTER: time::Duration = time::Duration::days(3);
/// Deliveries of one event before it goes to the dead letters.
pub const MAX_ATTEMPTS: u32 = 10;
/// Seconds before the next attempt, after attempt 1, 2, ...: about a day in all.
const BACKOFF_SECS: [u64; 9] = [5, 60, 300, 1800, 3600, 7200, 14400, 28800, 28800];

/// The wait before delivering again an event delivered `receive_count` times.
pub fn retry_delay(receive_count: u32) -> Duration {
    let index = usize::try_from(receive_count.saturating_sub(1)).unwrap_or(usize::MAX);
    Duration::from_secs(BACKOFF_SECS[index.min(BACKOFF_SECS.len() - 1)])
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
    /// From the request to the answer, milliseconds.
    pub duration_ms: u64,
    /// Why it failed, when it did.
    #[schema(required = true)]
    pub error: Option<String>,
}

/// What a subscription is sent for an event: its type and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The event type.
    pub event_type: &'static str,
    /// The `data` object.
    pub data: Value,
    /// The one subscription a test goes to.
    pub only: Option<String>,
}

/// The message `event` makes, if its kind is one a subscription can receive.
pub fn message_of(event: &Event) -> Option<Message> {
    let (event_type, mut data, only) = match &event.kind {
        EventKind::SessionUploaded(s) => ("session.uploaded", payload(s), None),
        EventKind::LeaderboardSubmitted(s @ LeaderboardSubmitted { improved: true, .. }) => {
            ("leaderboard.best", payload(s), None)
        }
        EventKind::AchievementUnlocked(a) => ("achievement.unlocked", payload(a), None),
        EventKind::BoardPassed(p) => ("board.passed", payload(p), None),
        EventKind::WebhookTest(t) => (
            TEST_EVENT_TYPE,
            json!({ "subscriptionId": t.subscription_id,
                    "message": "A test delivery from Paddock" }),
            Some(t.subscription_id.clone()),
        ),
        EventKind::LeaderboardSubmitted(_)
        | EventKind::WebhookDisabled(_)
        | EventKind::TrackProcessRequested(_)
        | EventKind::ProfileUpdated(_)
        | EventKind::AccountDeleted(_) => return None,
    };
    // Internal references a receiver has no use for.
    if let Some(object) = data.as_object_mut() {
        for internal in ["jobId", "improved", "causeEventId", "passing"] {
            object.remove(internal);
        }
    }
    Some(Message {
        event_type,
        data,
        only,
    })
}

/// A payload struct as a JSON value.
fn payload<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("an event payload serialises")
}

/// The body sent: `{"type", "timestamp", "data"}` (the Standard Webhooks shape).
pub fn body_of(event: &Event, message: &Message) -> String {
    json!({
        "type": message.event_type,
        "timestamp": rfc3339(event.occurred_at),
        "data": message.data,
    })
    .to_string()
}

fn done_key(user: &UserId, subscription: &str, event: &Event) -> Key {
    Key::new(partition(user), format!("DONE#{subscription}#{}", event.id))
}

fn log_prefix(subscription: &str) -> String {
    format!("LOG#{subscription}#")
}

/// The webhooks consumer: delivers `event` to each subscription of its driver that wants it.
pub async fn process(
    ports: &Ports,
    client: &dyn WebhookClient,
    event: &Event,
) -> Result<(), ProcessError> {
    let Some(message) = message_of(event) else {
        return Ok(());
    };
    let Some(user) = &event.user_id else {
        return Err(ProcessError::Poison(format!(
            "{} without a user",
            event.kind.name()
        )));
    };
    let retry = |e: StoreError| {
        ProcessError::Retry(anyhow::Error::new(e).context("reading webhook subscriptions"))
    };
    let subscriptions = subscriptions::stored_all(ports, user)
        .await
        .map_err(retry)?;
    let targets: Vec<&StoredSubscription> = subscriptions
        .iter()
        .filter(|s| match &message.only {
            Some(id) => &s.shown.id == id,
            None => s.wants(message.event_type),
        })
        .collect();
    let body = body_of(event, &message);
    let mut failed = Vec::new();
    for subscription in targets {
        let id = &subscription.shown.id;
        let done = done_key(user, id, event);
        if ports
            .items
            .get(Table::Activity, &done)
            .await
            .map_err(retry)?
            .is_some()
        {
            continue;
        }
        match deliver(ports, client, user, subscription, event, &message, &body).await {
            Ok(true) => {}
            Ok(false) => failed.push(id.clone()),
            Err(e) => return Err(retry(e)),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(ProcessError::Retry(anyhow::anyhow!(
            "webhook delivery failed for subscriptions {failed:?}"
        )))
    }
}

/// One attempt to one subscription: answers whether it must be tried again.
async fn deliver(
    ports: &Ports,
    client: &dyn WebhookClient,
    user: &UserId,
    subscription: &StoredSubscription,
    event: &Event,
    message: &Message,
    body: &str,
) -> Result<bool, StoreError> {
    let id = &subscription.shown.id;
    let webhook_id = event.id.to_string();
    let now = ports.clock.now();
    let timestamp = now.unix_timestamp();
    let outcome = match WebhookUrl::parse(&subscription.shown.url, client.policy()) {
        Ok(url) => {
            let secrets = subscription.signing_secrets(timestamp);
            let request = WebhookRequest {
                url,
                headers: vec![
                    ("webhook-id", webhook_id.clone()),
                    ("webhook-timestamp", timestamp.to_string()),
                    (
                        "webhook-signature",
                        signing::signature_header(&secrets, &webhook_id, timestamp, body),
                    ),
                    ("user-agent", "Paddock-Webhooks/1".to_owned()),
                ],
                body: body.to_owned(),
            };
            let started = std::time::Instant::now();
            let answer = client.post(request).await;
            (answer, started.elapsed())
        }
        Err(refused) => (Err(DeliveryFailure::Refused(refused)), Duration::ZERO),
    };
    let (answer, took) = outcome;
    let (status, succeeded, error) = match &answer {
        Ok(a) if (200..300).contains(&a.status) => (Some(a.status), true, None),
        Ok(a) => (
            Some(a.status),
            false,
            Some(format!("answered {}", a.status)),
        ),
        Err(e) => (None, false, Some(e.to_string())),
    };
    let attempt = Attempt {
        id: Uuid::now_v7().to_string(),
        webhook_id,
        event_type: message.event_type.to_owned(),
        attempted_at: rfc3339(now),
        status,
        succeeded,
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        error,
    };
    let mut logged = serde_json::to_value(&attempt).expect("an attempt serialises");
    logged[TTL] = (timestamp + LOG_KEPT_SECS).into();
    let log_key = Key::new(partition(user), format!("{}{}", log_prefix(id), attempt.id));
    ports
        .items
        .put(Table::Activity, item(&log_key, logged), None)
        .await?;
    crate::metrics::global()
        .webhook_deliveries
        .with_label_values(&[if succeeded { "ok" } else { "failed" }])
        .inc();
    if succeeded {
        let done = json!({ TTL: timestamp + crate::processed_events::KEPT_SECS });
        ports
            .items
            .put(
                Table::Activity,
                item(&done_key(user, id, event), done),
                None,
            )
            .await?;
        subscriptions::record_outcome(ports, user, id, true, now).await?;
        return Ok(true);
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
        return Ok(true);
    }
    Ok(false)
}

/// The last attempts of one of the driver's subscriptions, newest first.
pub async fn history(
    ports: &Ports,
    user: &UserId,
    subscription: &str,
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
        .filter(|row| !crate::ports::items::is_expired(row, now))
        .filter_map(|row| serde_json::from_value(Value::Object(row)).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{AchievementUnlocked, TrackProcessRequested};
    use time::OffsetDateTime;

    #[test]
    fn backoff_spans_about_a_day() {
        let total: u64 = (1..MAX_ATTEMPTS).map(|n| retry_delay(n).as_secs()).sum();
        assert!((20 * 3600..30 * 3600).contains(&total), "{total}");
        assert_eq!(retry_delay(1), Duration::from_secs(5));
        assert_eq!(retry_delay(50), Duration::from_secs(28800));
    }

    #[test]
    fn only_subscribable_kinds_make_messages() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let unlocked = Event::new(
            EventKind::AchievementUnlocked(AchievementUnlocked {
                achievement_id: "first-session".into(),
                title: "T".into(),
                description: "D".into(),
                cause_event_id: Uuid::now_v7(),
            }),
            Some("u".into()),
            now,
        );
        let message = message_of(&unlocked).unwrap();
        assert_eq!(message.event_type, "achievement.unlocked");
        assert_eq!(
            message.data,
            json!({"achievementId": "first-session", "title": "T", "description": "D"})
        );
        let body: Value = serde_json::from_str(&body_of(&unlocked, &message)).unwrap();
        assert_eq!(body["timestamp"], "2023-11-14T22:13:20Z");
        let job = Event::new(
            EventKind::TrackProcessRequested(TrackProcessRequested {
                job_id: "j".into(),
                track_id: "t".into(),
            }),
            None,
            now,
        );
        assert_eq!(message_of(&job), None);
    }
}
