//! Events: a window on one track (optionally in one car) in which drivers' laps are ranked.
//! A league's owner holds events for its members; the operator holds public ones. An event may
//! recur (every N days, a number of rounds), which makes a series.
//!
//! Nobody enters an event: a lap submitted to the boards also counts for every open event it
//! qualifies for ([`entering`]), in the same transaction. An event's standings are a board of
//! the track (`BoardScope::Event`), so they rank exactly as the boards do.
//!
//! Key layout (table `competitions`):
//! - `EVENT#<id>` / `META`: the event; `closed` turns true once, when its window closes;
//! - `DRIVER#<user id>` / `LEAGUE#<league id>` (a member's league row) and `EVENTS#LIVE` /
//!   `LIVE`: a copy of each event not yet closed, `live_<id>`, on the rows of its league's
//!   members or on the public item: what a submission reads of the events ([`live`]);
//! - `LEAGUE#<id>` / `EVENT#<closes ms>#<id>` and `EVENTS` / `EVENT#<closes ms>#<id>`: a
//!   league's events and the public ones, in the order they close;
//! - `EVENTS#OPENING` / `<opens ms>#<id>` and `EVENTS#CLOSING` / `<closes ms>#<id>`: what the
//!   maintenance tick has still to open (and, for a series, make the next round of) and to
//!   close; each row goes in the transaction that does it, so each happens once;
//! - `EVENTS#STARTING` / `<opens ms>#<id>`: an opened league event whose members are being
//!   told (`event.started`), with the cursor of the members told last (`after`), a page per
//!   transaction as below;
//! - `EVENTS#NOTIFYING` / `<closes ms>#<id>`: a closed event whose entrants are being told
//!   their final positions (`event.finished`), with the rank key told last (`after`): each
//!   page of entrants is told in one transaction conditioned on it, so each entrant once;
//! - `SERIES#<series id>` / `ROUND#<round>`: the rounds of a series, for its season table.

mod changes;
mod entering;
pub(crate) mod live;
mod plan;
mod reads;
mod season;
mod tick;

pub use changes::*;
pub use entering::*;
pub use live::join;
pub use plan::*;
pub use reads::*;
pub use season::*;
pub use tick::*;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use paddock_kernel::ids::{EventId, LeagueId, TrackId, UserId};
use paddock_kernel::ports::items::{Key, StoreError};
use paddock_kernel::problems::FieldProblems;

use crate::leagues::LeagueError;

/// The table events live in.
pub(crate) const TABLE: paddock_kernel::tables::Table = paddock_kernel::tables::Table::Competitions;

/// Events of one league (or public ones) that have not closed yet, at most.
pub const MAX_LIVE: usize = 10;
/// Open events one lap counts for, at most (those closing first).
pub const MAX_EVENTS_PER_LAP: usize = 4;

/// An event as a driver sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The event's id.
    #[schema(value_type = String, format = Uuid)]
    pub id: EventId,
    /// The league holding it; absent for a public event.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub league_id: Option<LeagueId>,
    /// Its name.
    pub name: String,
    /// The track.
    #[schema(value_type = String, format = Uuid)]
    pub track_id: TrackId,
    /// The track as the game names it (with its layout, when it has one).
    pub track_name: String,
    /// The one car laps must be driven in; absent when any car counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub car: Option<String>,
    /// When the window opens (RFC 3339, UTC).
    pub opens_at: String,
    /// When it closes (RFC 3339, UTC): a lap counts when its session was driven before and its
    /// submission committed before.
    pub closes_at: String,
    /// The least quality score a lap needs.
    pub min_quality: f64,
    /// Whether the window is still ahead, open or over, at the time of the answer.
    pub state: EventState,
    /// The series this event is a round of; absent for a single event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<Series>,
}

/// Where an event's window stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventState {
    /// Not open yet.
    Upcoming,
    /// Laps count now.
    Open,
    /// Closed: its standings are final.
    Finished,
}

/// A round of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Series {
    /// The first round's id, which names the series.
    #[schema(value_type = String, format = Uuid)]
    pub series_id: EventId,
    /// This round, from 1.
    pub round: u32,
    /// Rounds in all.
    pub rounds: u32,
    /// Days from one round's opening to the next's.
    pub every_days: u32,
}

/// The stored event (`EVENT#<id>` / `META`; the listings hold copies).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventRecord {
    pub id: EventId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub league_id: Option<LeagueId>,
    pub name: String,
    pub track_id: TrackId,
    pub track_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub car: Option<String>,
    pub opens_ms: i64,
    pub closes_ms: i64,
    pub min_quality: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Series>,
    pub created_at: String,
    /// Set once, when the window has opened (and a series' next round was made).
    #[serde(default)]
    pub opened: bool,
    /// Set once, when the window has closed and the standings are final.
    #[serde(default)]
    pub closed: bool,
}

impl EventRecord {
    /// The event as shown at `now_ms`.
    pub(crate) fn shown(self, now_ms: i64) -> Event {
        let state = if now_ms < self.opens_ms {
            EventState::Upcoming
        } else if now_ms < self.closes_ms && !self.closed {
            EventState::Open
        } else {
            EventState::Finished
        };
        Event {
            id: self.id,
            league_id: self.league_id,
            name: self.name,
            track_id: self.track_id,
            track_name: self.track_name,
            car: self.car,
            opens_at: time_text(self.opens_ms),
            closes_at: time_text(self.closes_ms),
            min_quality: self.min_quality,
            state,
            series: self.series,
        }
    }
}

/// `ms` since the epoch as RFC 3339 in UTC, to the second when it is whole.
pub fn time_text(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    paddock_kernel::ports::clock::rfc3339(t)
}

pub(crate) use paddock_kernel::ports::clock::unix_ms as ms_of;

/// The attribute that turns true when an event closes.
pub(crate) const CLOSED: &str = "closed";
/// The attribute that turns true when an event opens.
pub(crate) const OPENED: &str = "opened";

/// What the tick has still to do to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Open it (and make a series' next round).
    Opening,
    /// Close it.
    Closing,
    /// Tell its entrants their final positions (from the rank key in `after` on).
    Notifying,
    /// Tell its league's members it has opened (from the member cursor in `after` on).
    Starting,
}

impl Due {
    pub(crate) fn partition(self) -> &'static str {
        match self {
            Self::Opening => "EVENTS#OPENING",
            Self::Closing => "EVENTS#CLOSING",
            Self::Notifying => "EVENTS#NOTIFYING",
            Self::Starting => "EVENTS#STARTING",
        }
    }

    /// The row of `event`, due at `at_ms`.
    pub(crate) fn key(self, at_ms: i64, event: &EventId) -> Key {
        Key::new(self.partition(), format!("{at_ms:013}#{event}"))
    }
}

pub(crate) fn meta_key(event: &EventId) -> Key {
    Key::new(format!("EVENT#{event}"), "META")
}

/// The sort key of an event in the listings, which order by closing time.
pub(crate) fn listed_sk(closes_ms: i64, event: &EventId) -> String {
    format!("{LISTED_PREFIX}{closes_ms:013}#{event}")
}

/// The sort-key prefix of the listings.
pub(crate) const LISTED_PREFIX: &str = "EVENT#";

/// The partition of the public events.
pub(crate) const PUBLIC_PARTITION: &str = "EVENTS";

/// The partition listing the events of `league`.
pub(crate) fn league_partition(league: &LeagueId) -> String {
    format!("LEAGUE#{league}")
}

/// Who holds an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A league, for its members (only its owner makes events).
    League(LeagueId),
    /// The operator, for everyone.
    Public,
}

/// Why an event operation failed.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// A field breaks a rule.
    #[error(transparent)]
    Invalid(#[from] FieldProblems),
    /// No such event, or the caller may not see it (a league's, to a non-member).
    #[error("event not found")]
    NotFound,
    /// The league the event would belong to is not the caller's to run (or not theirs to see).
    #[error(transparent)]
    League(#[from] LeagueError),
    /// The event is not a round of a series (it has no season table).
    #[error("this event is not a round of a series")]
    NotASeries,
    /// Only the operator's drivers make public events (`Events__Operators`).
    #[error("only the operator makes public events")]
    NotOperator,
    /// As many events are running or ahead as allowed.
    #[error("there are already {MAX_LIVE} events not yet finished; wait for one to close")]
    TooManyLive,
    /// The item store failed (or concurrent changes kept winning).
    #[error(transparent)]
    Store(#[from] StoreError),
}
