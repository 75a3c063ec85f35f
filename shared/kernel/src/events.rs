//! Domain events: one typed enum of every kind, shared by the producers (which write them to
//! the outbox in the transaction of their change) and the processors (which match on it).
//!
//! On the wire an event is `{id, kind, userId, occurredAt, payload}` (and `trace`, the trace
//! header of the request behind it, in AWS): `kind` names the
//! variant (`session.uploaded`) and `payload` holds its struct. A body that does not read as
//! one of these kinds is poison: it can never be processed, so it goes to the dead letters.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::ids::{EventId, JobId, LeagueId, SessionId, SubscriptionId, TrackId, UserId};

/// A domain event with its identity and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Unique id; processors use it to act once.
    pub id: Uuid,
    /// The user the event concerns.
    pub user_id: Option<UserId>,
    /// When the causing change happened.
    #[serde(with = "time::serde::rfc3339")]
    pub occurred_at: OffsetDateTime,
    /// What happened, with its details.
    #[serde(flatten)]
    pub kind: EventKind,
    /// The X-Ray trace header of the invocation that caused the event (in AWS), so the relay
    /// and the consumers continue its trace; absent locally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// Every kind of event, tagged by its wire name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum EventKind {
    /// A session was uploaded (not a duplicate).
    #[serde(rename = "session.uploaded")]
    SessionUploaded(SessionUploaded),
    /// A lap was submitted to a leaderboard (improved or not).
    #[serde(rename = "leaderboard.submit")]
    LeaderboardSubmitted(LeaderboardSubmitted),
    /// A track-map job was returned to pending and needs processing again.
    #[serde(rename = "track.process")]
    TrackProcessRequested(TrackProcessRequested),
    /// A driver unlocked an achievement.
    #[serde(rename = "achievement.unlocked")]
    AchievementUnlocked(AchievementUnlocked),
    /// A driver changed their display name or avatar.
    #[serde(rename = "profile.updated")]
    ProfileUpdated(ProfileUpdated),
    /// A driver deleted their account: the deletion job removes the rest of their data.
    #[serde(rename = "account.deleted")]
    AccountDeleted(AccountDeleted),
    /// Another driver's new best moved the driver down a board.
    #[serde(rename = "board.passed")]
    BoardPassed(BoardPassed),
    /// The driver asked for a test delivery to one webhook subscription.
    #[serde(rename = "webhook.test")]
    WebhookTest(WebhookTest),
    /// A webhook subscription failing for days was turned off; the driver is told.
    #[serde(rename = "webhook.disabled")]
    WebhookDisabled(WebhookDisabled),
    /// One subscription's next attempt at an event it has not taken: sent by the webhooks
    /// consumer to its own queue, never through the outbox.
    #[serde(rename = "webhook.redelivery")]
    WebhookRedelivery(WebhookRedelivery),
    /// A competition event the driver entered has closed: their final position.
    #[serde(rename = "event.finished")]
    EventFinished(EventFinished),
    /// A competition event of a league the driver belongs to has opened.
    #[serde(rename = "event.started")]
    EventStarted(EventStarted),
}

impl EventKind {
    /// Every wire name, in a stable order (metric labels are bounded by this list).
    pub const NAMES: [&'static str; 12] = [
        "session.uploaded",
        "leaderboard.submit",
        "track.process",
        "achievement.unlocked",
        "profile.updated",
        "account.deleted",
        "board.passed",
        "webhook.test",
        "webhook.disabled",
        "webhook.redelivery",
        "event.finished",
        "event.started",
    ];

    /// The wire name of this kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SessionUploaded(_) => Self::NAMES[0],
            Self::LeaderboardSubmitted(_) => Self::NAMES[1],
            Self::TrackProcessRequested(_) => Self::NAMES[2],
            Self::AchievementUnlocked(_) => Self::NAMES[3],
            Self::ProfileUpdated(_) => Self::NAMES[4],
            Self::AccountDeleted(_) => Self::NAMES[5],
            Self::BoardPassed(_) => Self::NAMES[6],
            Self::WebhookTest(_) => Self::NAMES[7],
            Self::WebhookDisabled(_) => Self::NAMES[8],
            Self::WebhookRedelivery(_) => Self::NAMES[9],
            Self::EventFinished(_) => Self::NAMES[10],
            Self::EventStarted(_) => Self::NAMES[11],
        }
    }
}

/// `session.uploaded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUploaded {
    /// The session.
    #[schema(value_type = String, format = Uuid)]
    pub session_id: SessionId,
    /// The canonical track.
    #[schema(value_type = String, format = Uuid)]
    pub track_id: TrackId,
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track as the game names it.
    pub track_name: String,
    /// The layout; empty for tracks without layouts.
    pub track_layout: String,
    /// The car the lap was set in.
    pub vehicle_name: String,
    /// RFC 3339, the client's `RecordedAt`.
    pub recorded_at: String,
    /// Practice, qualifying, race, ...
    pub session_phase: String,
    /// Best lap time, milliseconds.
    pub best_lap_ms: i64,
    /// Laps in the session.
    pub lap_count: usize,
    /// The track-map job of the session's track points, if it had any.
    #[schema(ignore)]
    pub job_id: Option<JobId>,
    /// Laps the client marked valid. (Fields added after the first release read as their
    /// default from events written before them.)
    #[serde(default)]
    pub valid_lap_count: usize,
    /// The sum of every lap's time, milliseconds.
    #[serde(default)]
    pub driving_ms: i64,
    /// Slowest minus fastest valid lap, when the session has at least five valid laps.
    #[serde(default)]
    pub valid_lap_spread_ms: Option<i64>,
}

/// `leaderboard.submit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderboardSubmitted {
    /// The canonical track.
    #[schema(value_type = String, format = Uuid)]
    pub track_id: TrackId,
    /// The session.
    #[schema(value_type = String, format = Uuid)]
    pub session_id: SessionId,
    /// Lap time in milliseconds.
    pub lap_time_ms: i64,
    /// The driver's entry before this submission.
    pub previous_best_ms: Option<i64>,
    /// Whether the lap replaced (or created) the driver's entry.
    #[schema(ignore)]
    pub improved: bool,
    /// The driver's rank the submission answered with (1 is fastest).
    #[serde(default)]
    pub rank: Option<usize>,
    /// The game, e.g. `acc`.
    #[serde(default)]
    pub game_id: String,
    /// The track as the game names it.
    #[serde(default)]
    pub track_name: String,
    /// The layout; empty for tracks without layouts.
    #[serde(default)]
    pub track_layout: String,
    /// The car the lap was set in.
    #[serde(default)]
    pub vehicle_name: String,
    /// A new best's place on the track's board, for telling the drivers it passed; absent
    /// on other submissions and on events written before the webhooks consumer told them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(ignore)]
    pub passing: Option<Passing>,
    /// A new best in its car: its place on the car's board, for telling the drivers it passed
    /// there; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(ignore)]
    pub car_passing: Option<Passing>,
    /// Where the lap landed in each competition event it improved the driver's entry in, for
    /// telling the entrants it passed there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(ignore)]
    pub event_passing: Vec<EventPassing>,
}

/// Where a lap landed in a competition event's standings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventPassing {
    /// The event.
    pub event_id: EventId,
    /// The driver's position in it after the lap.
    pub rank: u64,
    /// Where it landed, as on the track's board.
    pub passing: Passing,
}

/// Where a new best landed on the track's board: the drivers between [`Self::rank_key`] and
/// [`Self::until_key`] (those already there when it was submitted) were passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Passing {
    /// The new best's rank sort key.
    pub rank_key: String,
    /// The rank sort key of the driver's entry before it, or the board's end for a first
    /// entry: the passed drivers sit before it.
    pub until_key: String,
    /// The driver's name on the board when they passed.
    pub display_name: String,
}

/// `track.process`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackProcessRequested {
    /// The track-map job.
    pub job_id: JobId,
    /// The canonical track.
    pub track_id: TrackId,
}

/// `achievement.unlocked`; the event's `occurredAt` is the unlock time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AchievementUnlocked {
    /// The catalogue id, e.g. `first-session`.
    pub achievement_id: String,
    /// The achievement's title when it was unlocked.
    pub title: String,
    /// What it was awarded for.
    pub description: String,
    /// The event that unlocked it.
    #[schema(ignore)]
    pub cause_event_id: Uuid,
}

/// `profile.updated`: the driver's name or avatar changed; whoever shows them copies the
/// profile as it is when the event is handled (so late or repeated events change nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileUpdated {
    /// The profile's version after the change.
    pub version: i64,
}

/// `account.deleted`: the account is marked deleted and signed out everywhere; the deletion
/// job removes every other record and object of the driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountDeleted {
    /// The deletion job (answered to the driver, and in the job's log lines).
    pub job_id: String,
}

/// `event.finished`: the event's user is an entrant of a competition event that has closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventFinished {
    /// The competition event.
    #[schema(value_type = String, format = Uuid)]
    pub event_id: EventId,
    /// Its name.
    pub name: String,
    /// The league holding it; absent for a public event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub league_id: Option<LeagueId>,
    /// The track.
    #[schema(value_type = String, format = Uuid)]
    pub track_id: TrackId,
    /// The track as the game names it (with its layout).
    pub track_name: String,
    /// The driver's final position (1 is first).
    pub position: u64,
    /// Entrants in all.
    pub entrants: u64,
    /// The driver's lap in the event, milliseconds.
    pub lap_time_ms: i64,
}

/// `event.started`: the event's user is a member of the league holding a competition event
/// whose window has opened (each member told once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventStarted {
    /// The competition event.
    #[schema(value_type = String, format = Uuid)]
    pub event_id: EventId,
    /// Its name.
    pub name: String,
    /// The league holding it.
    #[schema(value_type = String, format = Uuid)]
    pub league_id: LeagueId,
    /// The track.
    #[schema(value_type = String, format = Uuid)]
    pub track_id: TrackId,
    /// The track as the game names it (with its layout).
    pub track_name: String,
    /// The one car laps must be driven in; absent when any car counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub car: Option<String>,
    /// When the window closes (RFC 3339, UTC).
    pub closes_at: String,
}

/// `board.passed`: the event's user is the driver who was passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoardPassed {
    /// The canonical track of the board.
    #[schema(value_type = String, format = Uuid)]
    pub track_id: TrackId,
    /// The board's car (folded), or `None` for the track's board (`vehicleName`, as the car is
    /// named everywhere else; events queued before the name changed read as `vehicle`).
    #[serde(default, rename = "vehicleName", alias = "vehicle")]
    pub vehicle: Option<String>,
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track as the game names it.
    pub track_name: String,
    /// The layout; empty for tracks without layouts.
    pub track_layout: String,
    /// The passed driver's rank before the lap (1 is fastest).
    pub previous_rank: u64,
    /// The passed driver's rank after it.
    pub new_rank: u64,
    /// The passed driver's time, milliseconds.
    pub lap_time_ms: i64,
    /// Who passed.
    pub passed_by: PassedBy,
    /// The competition event whose standings it was, when not the track's or a car's board.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub event_id: Option<EventId>,
}

/// The driver who passed, as the board shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PassedBy {
    /// Their id.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: UserId,
    /// Their name on the board.
    pub display_name: String,
    /// Their new time, milliseconds.
    pub lap_time_ms: i64,
}

/// `webhook.test`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookTest {
    /// The one subscription the test goes to.
    pub subscription_id: SubscriptionId,
}

/// `webhook.disabled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDisabled {
    /// The subscription turned off.
    pub subscription_id: SubscriptionId,
    /// Its URL.
    pub url: String,
    /// Since when every delivery had failed (RFC 3339).
    pub failing_since: String,
}

/// `webhook.redelivery`: the next attempt of one subscription at one event, so a receiver
/// that failed retries on a schedule of its own instead of holding the event (and every
/// other subscription's delivery of it) in the shared queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookRedelivery {
    /// The subscription this attempt goes to.
    pub subscription_id: SubscriptionId,
    /// The number of the attempt this message makes (the first one is 1).
    pub attempt: u32,
    /// Unix milliseconds, queue time: not to be attempted before (a message the queue brings
    /// sooner is hidden until then).
    pub not_before_ms: i64,
    /// The event to deliver, as the outbox relayed it (its id is the `webhook-id`).
    pub event: Box<Event>,
}

impl Event {
    /// A new event with a fresh time-ordered id, in the current invocation's trace.
    pub fn new(kind: EventKind, user_id: Option<UserId>, now: OffsetDateTime) -> Self {
        Self {
            id: Uuid::now_v7(),
            user_id,
            occurred_at: now,
            kind,
            trace: paddock_platform::trace_context::current(),
        }
    }
}

/// Why processing an event failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// A transient failure: the event is delivered again later.
    #[error("retryable: {0:#}")]
    Retry(anyhow::Error),
    /// The event can never succeed (unreadable, refers to nothing): straight to dead letters.
    #[error("poison: {0}")]
    Poison(String),
    /// The event was tried as often as it may be: to the dead letters, where an operator can
    /// redrive it.
    #[error("gave up: {0}")]
    Exhausted(String),
    /// The message came before its time: hidden for this long, not counted as a failure.
    #[error("not due for {0:?}")]
    NotYet(std::time::Duration),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_keep_their_wire_shape() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let (j, t, u) = (
            "0190a0b2-3c4d-7e5f-9a0b-1c2d3e4f5a01",
            "0190a0b2-3c4d-8e5f-9a0b-1c2d3e4f5a02",
            "0190a0b2-3c4d-4e5f-9a0b-1c2d3e4f5a03",
        );
        let event = Event::new(
            EventKind::TrackProcessRequested(TrackProcessRequested {
                job_id: j.parse().unwrap(),
                track_id: t.parse().unwrap(),
            }),
            Some(u.parse().unwrap()),
            now,
        );
        let wire = serde_json::to_value(&event).unwrap();
        assert_eq!(wire["kind"], "track.process");
        assert_eq!(wire["payload"], json!({"jobId": j, "trackId": t}));
        assert_eq!(wire["userId"], u);
        assert_eq!(wire["occurredAt"], "2023-11-14T22:13:20Z");
        assert_eq!(serde_json::from_value::<Event>(wire).unwrap(), event);
        assert_eq!(event.kind.name(), "track.process");
    }

    #[test]
    fn an_unknown_kind_does_not_read() {
        let body = json!({"id": Uuid::now_v7(), "kind": "nope", "userId": null,
                          "occurredAt": "2023-11-14T22:13:20Z", "payload": {}});
        assert!(serde_json::from_value::<Event>(body).is_err());
    }
}
