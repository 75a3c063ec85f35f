//! The events a driver's laps may count for, kept where a submission reads them before it
//! knows the lap's track: a league's events not yet closed on each member's own league row
//! (`DRIVER#<user>` / `LEAGUE#<league id>`), the public ones on one item (`EVENTS#LIVE` /
//! `LIVE`), each as an attribute `live_<event id>`. A submission reads both beside the session
//! and the profile, so the driver's entries in the events are read beside those on the boards
//! and the lap is written in three steps.
//!
//! The copies are written in the transactions that change them: an event's creation and a
//! series' next round add one to every member's row, the close removes it, and a join copies
//! the league's live events onto the new member's row. Each of those transactions also changes
//! the league's `eventsVersion` (and a join is conditioned on it, and the others on the member
//! count read), so a member joining or leaving while an event is written is retried rather
//! than left without it or with a row brought back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::*;
use crate::leagues::{self, EVENTS_VERSION, Joined, LeagueError, MEMBER_COUNT, NewMemberCopies};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Item, Query, TxOp, Update, decode};

/// An event not yet closed, as a submission finds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LiveEvent {
    pub event_id: EventId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub league_id: Option<LeagueId>,
    pub track_id: TrackId,
    /// The car, folded as boards match cars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub car: Option<String>,
    pub opens_ms: i64,
    pub closes_ms: i64,
    pub min_quality: f64,
}

impl LiveEvent {
    pub(crate) fn of(record: &EventRecord) -> Self {
        Self {
            event_id: record.id.clone(),
            league_id: record.league_id.clone(),
            track_id: record.track_id.clone(),
            car: record
                .car
                .as_deref()
                .map(paddock_boards::leaderboards::board::fold_vehicle),
            opens_ms: record.opens_ms,
            closes_ms: record.closes_ms,
            min_quality: record.min_quality,
        }
    }

    fn value(&self) -> Result<Value, StoreError> {
        serde_json::to_value(self)
            .map_err(|e| StoreError::Invalid(format!("unserialisable event: {e}")))
    }
}

/// The attribute holding event `id`'s copy.
pub(crate) fn attr(id: &EventId) -> String {
    format!("{ATTR_PREFIX}{id}")
}

const ATTR_PREFIX: &str = "live_";

/// The item holding the public events' copies.
fn public_key() -> Key {
    Key::new("EVENTS#LIVE", "LIVE")
}

/// The copies an item holds.
pub(crate) fn held(item: &Item) -> Result<Vec<LiveEvent>, StoreError> {
    item.iter()
        .filter(|(name, _)| name.starts_with(ATTR_PREFIX))
        .map(|(_, value)| {
            serde_json::from_value(value.clone())
                .map_err(|e| StoreError::Invalid(format!("unreadable live event: {e}")))
        })
        .collect()
}

/// The events `user`'s laps may count for: those on their league rows and the public ones.
/// Two reads at once (a query of at most 20 rows, and one item).
pub(crate) async fn for_driver(ports: &Ports, user: &UserId) -> Result<Vec<LiveEvent>, StoreError> {
    let rows = Query::partition(TABLE, leagues::driver_partition(user))
        .begins_with(leagues::DRIVER_LEAGUE_PREFIX)
        .limit(leagues::MAX_JOINED as usize + 1);
    let public = public_key();
    let (rows, public) =
        futures::try_join!(ports.items.query(rows), ports.items.get(TABLE, &public))?;
    let mut live = Vec::new();
    for item in rows.items.iter().chain(public.iter()) {
        live.extend(held(item)?);
    }
    Ok(live)
}

/// The members of `league` (at most [`leagues::MAX_MEMBERS`], one query).
pub(crate) async fn members(ports: &Ports, league: &LeagueId) -> Result<Vec<UserId>, StoreError> {
    let members = leagues::member_records(ports, league).await?;
    Ok(members.into_iter().map(|m| m.user_id).collect())
}

/// The writes that add `record`'s copy where its drivers' submissions read it: the public
/// item, or each of `members`' league rows (each still there) with the league's version moved
/// on, conditioned on the member count read (and on `also`, the caller's own condition on the
/// league).
pub(crate) fn add_ops(
    record: &EventRecord,
    members: &[UserId],
    also: Option<Condition>,
) -> Result<Vec<TxOp>, StoreError> {
    let value = LiveEvent::of(record).value()?;
    let update = || Update::set(&attr(&record.id), value.clone());
    Ok(fan_out(record, members, update, also))
}

/// The writes that remove event `record`'s copies (at its close), as [`add_ops`] adds them.
pub(crate) fn remove_ops(record: &EventRecord, members: &[UserId]) -> Vec<TxOp> {
    let update = || Update::default().and_remove(&attr(&record.id));
    fan_out(record, members, update, None)
}

fn fan_out(
    record: &EventRecord,
    members: &[UserId],
    update: impl Fn() -> Update,
    also: Option<Condition>,
) -> Vec<TxOp> {
    let Some(league) = &record.league_id else {
        return vec![TxOp::Update {
            table: TABLE,
            key: public_key(),
            update: update(),
            condition: None,
        }];
    };
    let count = Condition::eq(MEMBER_COUNT, members.len() as u64);
    let mut ops = vec![TxOp::Update {
        table: TABLE,
        key: leagues::meta_key(league),
        update: Update::default().and_add(EVENTS_VERSION, 1),
        condition: Some(match also {
            Some(also) => Condition::And(vec![also, count]),
            None => count,
        }),
    }];
    ops.extend(members.iter().map(|member| TxOp::Update {
        table: TABLE,
        key: leagues::driver_league_key(member, league),
        update: update(),
        condition: Some(Condition::Exists),
    }));
    ops
}

/// Joins `user` to the league of invite code `code`, their league row starting with the
/// copies of the league's live events.
pub async fn join(ports: &Ports, user: &UserId, code: &str) -> Result<Joined, LeagueError> {
    leagues::join_with(ports, user, code, &LiveCopies).await
}

/// The copies of a league's events not yet closed, for a new member's row.
struct LiveCopies;

impl NewMemberCopies for LiveCopies {
    async fn copies(
        &self,
        ports: &Ports,
        league: &LeagueId,
        now_ms: i64,
    ) -> Result<Vec<(String, Value)>, StoreError> {
        for_new_member(ports, league, now_ms).await
    }
}

/// The attributes a new member's league row starts with: the copies of the league's events
/// not yet closed at `now_ms`, read from its listing.
async fn for_new_member(
    ports: &Ports,
    league: &LeagueId,
    now_ms: i64,
) -> Result<Vec<(String, Value)>, StoreError> {
    let query = Query::partition(TABLE, league_partition(league))
        .between(
            format!("{LISTED_PREFIX}{now_ms:013}"),
            format!("{LISTED_PREFIX}~"),
        )
        .limit(MAX_LIVE * 2);
    let listed = ports.items.query(query).await?;
    let mut attrs = Vec::new();
    for item in listed.items {
        let record: EventRecord = decode(item, "event")?;
        if !record.closed {
            attrs.push((attr(&record.id), LiveEvent::of(&record).value()?));
        }
    }
    Ok(attrs)
}
