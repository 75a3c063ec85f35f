//! What a subscription is sent for an event: the type and `data` of the kinds a subscription
//! can receive (the driver it concerns named in every `data`), and the body in the Standard
//! Webhooks shape.

use serde::Serialize;
use serde_json::{Value, json};

use super::TEST_EVENT_TYPE;
use paddock_kernel::events::{Event, EventKind, LeaderboardSubmitted};
use paddock_kernel::ids::SubscriptionId;
use paddock_kernel::ports::clock::rfc3339;

/// What a subscription is sent for an event: its type and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The event type.
    pub event_type: &'static str,
    /// The `data` object.
    pub data: Value,
    /// The one subscription a test goes to.
    pub only: Option<SubscriptionId>,
}

/// Fields of the events' payloads a receiver has no use for: internal references.
const INTERNAL: [&str; 6] = [
    "jobId",
    "improved",
    "causeEventId",
    "passing",
    "carPassing",
    "eventPassing",
];

/// The message `event` makes, if its kind is one a subscription can receive.
pub fn message_of(event: &Event) -> Option<Message> {
    let (event_type, mut data, only) = match &event.kind {
        EventKind::SessionUploaded(s) => ("session.uploaded", payload(s), None),
        EventKind::LeaderboardSubmitted(s @ LeaderboardSubmitted { improved: true, .. }) => {
            ("leaderboard.best", payload(s), None)
        }
        EventKind::AchievementUnlocked(a) => ("achievement.unlocked", payload(a), None),
        EventKind::BoardPassed(p) => ("board.passed", payload(p), None),
        EventKind::EventFinished(e) => ("event.finished", payload(e), None),
        EventKind::EventStarted(e) => ("event.started", payload(e), None),
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
        | EventKind::AccountDeleted(_)
        | EventKind::WebhookRedelivery(_) => return None,
    };
    if let Some(object) = data.as_object_mut() {
        object.retain(|field, _| !INTERNAL.contains(&field.as_str()));
        // Whose event it is: a receiver serving several drivers tells them apart by it.
        if let Some(user) = &event.user_id {
            object.insert("userId".into(), json!(user));
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
