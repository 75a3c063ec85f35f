//! The events' part of the maintenance tick: windows that have opened are marked open (and a
//! series' next round made), windows that have closed are marked closed, which freezes their
//! standings: a submission's transaction holds only while its event is not closed. Each is
//! one transaction that also removes the tick's row, conditioned on not being done yet, so a
//! tick racing another (or retried) does it once. Then each member of the league of an opened
//! event is told it has opened (`event.started`), and each entrant of a closed event their
//! final position (`event.finished`), a page at a time, each page once.

use serde_json::json;

use super::changes::placement_ops;
use super::live;
use super::*;
use crate::leagues::{self, MEMBER_PREFIX, MemberRecord};
use paddock_boards::leaderboards::board::BoardId;
use paddock_boards::leaderboards::reads as board_reads;
use paddock_kernel::events::{Event as OutboxEvent, EventFinished, EventKind, EventStarted};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Item, Query, SK, TxOp, Update, decode, item};

/// Days, in milliseconds.
const DAY_MS: i64 = 24 * 3600 * 1000;
/// Rows one tick handles of each kind, at most (the next tick takes the rest).
const PER_TICK: usize = 100;
/// Entrants told in one transaction (each an outbox event), with the cursor's update.
const TOLD_PER_PAGE: usize = 40;
/// Pages one tick tells, at most, over every event (10,000 entrants).
const PAGES_PER_TICK: usize = 250;
/// The attribute of a notifying row: the rank key of the last entrant told.
const AFTER: &str = "after";

/// What one tick did to events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventTick {
    /// Events marked open.
    pub opened: usize,
    /// Rounds of series made.
    pub rounds_made: usize,
    /// Events marked closed.
    pub closed: usize,
    /// Entrants told their final position.
    pub told: usize,
    /// League members told an event opened.
    pub told_started: usize,
}

/// Opens and closes the events that are due at the clock's time.
pub async fn tick(ports: &Ports) -> Result<EventTick, StoreError> {
    let now_ms = ms_of(ports.clock.now());
    let mut report = EventTick::default();
    for (due, row) in due_rows(ports, Due::Opening, now_ms).await? {
        if let Some(made) = open(ports, &due, &row_key(&row)?).await? {
            report.opened += 1;
            report.rounds_made += usize::from(made);
        }
    }
    for (due, row) in due_rows(ports, Due::Closing, now_ms).await? {
        if close(ports, &due, &row_key(&row)?).await? {
            report.closed += 1;
        }
    }
    let mut pages = 0;
    for due in [Due::Starting, Due::Notifying] {
        for (event, row) in due_rows(ports, due, now_ms).await? {
            let key = row_key(&row)?;
            let mut after = row
                .get(AFTER)
                .and_then(|a| a.as_str())
                .unwrap_or_default()
                .to_owned();
            let told = match due {
                Due::Starting => &mut report.told_started,
                _ => &mut report.told,
            };
            while pages < PAGES_PER_TICK {
                pages += 1;
                let page = match due {
                    Due::Starting => tell_started_page(ports, &event, &key, &after).await?,
                    _ => tell_a_page(ports, &event, &key, &after).await?,
                };
                match page {
                    Told::Page(n, next) => {
                        *told += n;
                        after = next;
                    }
                    Told::Last(n) => {
                        *told += n;
                        break;
                    }
                    Told::ByAnother => break,
                }
            }
        }
    }
    Ok(report)
}

/// The events of `due`'s rows up to `now_ms` (read in one batch), with each row.
async fn due_rows(
    ports: &Ports,
    due: Due,
    now_ms: i64,
) -> Result<Vec<(EventRecord, Item)>, StoreError> {
    let query = Query::partition(TABLE, due.partition())
        .between("0".to_owned(), format!("{now_ms:013}#~"))
        .limit(PER_TICK);
    let rows: Vec<(EventId, Item)> = (ports.items.query(query).await?.items)
        .into_iter()
        .filter_map(|row| {
            let sk = row.get(SK)?.as_str()?;
            let id = sk.split_once('#')?.1.parse().ok()?;
            Some((id, row))
        })
        .collect();
    let keys = rows.iter().map(|(id, _)| (TABLE, meta_key(id))).collect();
    let events = ports.items.get_many(keys).await?;
    let mut found = Vec::new();
    for ((_, row), event) in rows.into_iter().zip(events) {
        if let Some(item) = event {
            found.push((decode(item, "event")?, row));
        } else {
            // The event is gone (its league closed): only the row is left to remove.
            ports.items.delete(TABLE, &row_key(&row)?, None).await?;
        }
    }
    Ok(found)
}

/// The key of a row read from the store.
fn row_key(row: &Item) -> Result<Key, StoreError> {
    Key::of(row).ok_or_else(|| StoreError::Invalid("a row without a key".into()))
}

/// Marks `event` open and, for a series with rounds to come, makes the next round; answers
/// whether it made one, or `None` when another tick opened it first (the row is removed).
async fn open(ports: &Ports, event: &EventRecord, row: &Key) -> Result<Option<bool>, StoreError> {
    let mut ops = vec![
        TxOp::Update {
            table: TABLE,
            key: meta_key(&event.id),
            update: Update::set(OPENED, true),
            condition: Some(Condition::eq(OPENED, false)),
        },
        TxOp::Delete {
            table: TABLE,
            key: row.clone(),
            condition: None,
        },
    ];
    // A league's members are told it opened, a page at a time, from this row.
    if event.league_id.is_some() {
        ops.push(TxOp::Put {
            table: TABLE,
            item: item(
                &Due::Starting.key(event.opens_ms, &event.id),
                json!({ "eventId": event.id, AFTER: "" }),
            ),
            condition: Some(Condition::NotExists),
        });
    }
    let next = next_round(ports, event);
    let mut live_at = usize::MAX;
    if let Some(next) = &next {
        let members = match &next.league_id {
            Some(league) => live::members(ports, league).await?,
            None => Vec::new(),
        };
        ops.extend(placement_ops(next)?);
        live_at = ops.len();
        ops.extend(live::add_ops(next, &members, None)?);
    }
    match ports.items.transact(ops).await {
        Ok(()) => Ok(Some(next.is_some())),
        Err(e) if e.is_condition_failed_at(0) => {
            ports.items.delete(TABLE, row, None).await?;
            Ok(None)
        }
        // A member joined or left since the members were read: the next tick opens it.
        Err(StoreError::ConditionFailed { index }) if index >= live_at => Ok(None),
        Err(e) => Err(e),
    }
}

/// The round after `event` of its series, when it has one to come.
fn next_round(ports: &Ports, event: &EventRecord) -> Option<EventRecord> {
    let series = event.series.as_ref().filter(|s| s.round < s.rounds)?;
    let shift = i64::from(series.every_days) * DAY_MS;
    Some(EventRecord {
        id: EventId::new(),
        opens_ms: event.opens_ms + shift,
        closes_ms: event.closes_ms + shift,
        series: Some(Series {
            round: series.round + 1,
            ..series.clone()
        }),
        created_at: paddock_kernel::ports::clock::rfc3339(ports.clock.now()),
        opened: false,
        closed: false,
        ..event.clone()
    })
}

/// Marks `event` closed (its standings final) and removes the copies submissions found it by;
/// false when another tick closed it first (or a member joined or left since its members
/// were read: the next tick closes it).
async fn close(ports: &Ports, event: &EventRecord, row: &Key) -> Result<bool, StoreError> {
    let members = match &event.league_id {
        Some(league) => live::members(ports, league).await?,
        None => Vec::new(),
    };
    let mut ops = vec![
        TxOp::Update {
            table: TABLE,
            key: meta_key(&event.id),
            update: Update::set(CLOSED, true),
            condition: Some(Condition::eq(CLOSED, false)),
        },
        TxOp::Delete {
            table: TABLE,
            key: row.clone(),
            condition: None,
        },
        TxOp::Put {
            table: TABLE,
            item: item(
                &Due::Notifying.key(event.closes_ms, &event.id),
                json!({ "eventId": event.id, AFTER: "" }),
            ),
            condition: Some(Condition::NotExists),
        },
    ];
    let live_at = ops.len();
    ops.extend(live::remove_ops(event, &members));
    match ports.items.transact(ops).await {
        Ok(()) => Ok(true),
        Err(e) if e.is_condition_failed_at(0) => {
            ports.items.delete(TABLE, row, None).await?;
            Ok(false)
        }
        Err(StoreError::ConditionFailed { index }) if index >= live_at => Ok(false),
        Err(e) => Err(e),
    }
}

/// How telling a page of entrants ended.
enum Told {
    /// This many were told; more are left, after this cursor.
    Page(usize, String),
    /// This many were told, the last of them.
    Last(usize),
    /// Another tick told this page first (it goes on from there).
    ByAnother,
}

/// Tells the entrants of `event` after the cursor `after` their final positions, one page, in
/// one transaction that moves the cursor of the row `key` on (or removes the row after the
/// last page), conditioned on the cursor being `after`.
async fn tell_a_page(
    ports: &Ports,
    event: &EventRecord,
    key: &Key,
    after: &str,
) -> Result<Told, StoreError> {
    let board = BoardId::event(&event.track_id, &event.id);
    let from = (!after.is_empty()).then_some(after);
    let page = board_reads::page(ports, &board, from, TOLD_PER_PAGE).await?;
    let now = ports.clock.now();
    let ops: Vec<TxOp> = page
        .rows
        .iter()
        .map(|ranked| {
            let finished = EventFinished {
                event_id: event.id.clone(),
                name: event.name.clone(),
                league_id: event.league_id.clone(),
                track_id: event.track_id.clone(),
                track_name: event.track_name.clone(),
                position: ranked.rank,
                entrants: page.total,
                lap_time_ms: ranked.row.lap_time_ms,
            };
            let kind = EventKind::EventFinished(finished);
            OutboxEvent::new(kind, Some(ranked.row.user_id.clone()), now).outbox_op()
        })
        .collect();
    let next = page.next_after.as_ref().and(page.rows.last());
    let next = next.map(|ranked| ranked.rank_key.clone());
    commit_page(ports, ops, key, after, next).await
}

/// Tells the members of `event`'s league after the cursor `after` that it has opened, one
/// page, as [`tell_a_page`] tells entrants. A member who joins later is not told (they find
/// the event open); one who left before is not.
async fn tell_started_page(
    ports: &Ports,
    event: &EventRecord,
    key: &Key,
    after: &str,
) -> Result<Told, StoreError> {
    let Some(league) = &event.league_id else {
        ports.items.delete(TABLE, key, None).await?;
        return Ok(Told::Last(0));
    };
    let members = Query::partition(leagues::TABLE, leagues::meta_key(league).pk)
        .begins_with(MEMBER_PREFIX)
        .limit(TOLD_PER_PAGE)
        .after((!after.is_empty()).then(|| after.to_owned()));
    let page = ports.items.query(members).await?;
    let now = ports.clock.now();
    let started = EventStarted {
        event_id: event.id.clone(),
        name: event.name.clone(),
        league_id: league.clone(),
        track_id: event.track_id.clone(),
        track_name: event.track_name.clone(),
        car: event.car.clone(),
        closes_at: time_text(event.closes_ms),
    };
    let mut ops = Vec::new();
    for member in page.items {
        let member: MemberRecord = decode(member, "league member")?;
        let kind = EventKind::EventStarted(started.clone());
        ops.push(OutboxEvent::new(kind, Some(member.user_id), now).outbox_op());
    }
    commit_page(ports, ops, key, after, page.next_cursor).await
}

/// Writes a page of told events `ops` in one transaction that moves the cursor of the row
/// `key` from `after` to `next` (or removes the row when `next` is `None`: the last page),
/// conditioned on the cursor still being `after`.
async fn commit_page(
    ports: &Ports,
    mut ops: Vec<TxOp>,
    key: &Key,
    after: &str,
    next: Option<String>,
) -> Result<Told, StoreError> {
    let told = ops.len();
    let unchanged = Condition::eq(AFTER, after);
    ops.push(match &next {
        Some(cursor) => TxOp::Update {
            table: TABLE,
            key: key.clone(),
            update: Update::set(AFTER, cursor.as_str()),
            condition: Some(unchanged),
        },
        None => TxOp::Delete {
            table: TABLE,
            key: key.clone(),
            condition: Some(unchanged),
        },
    });
    let at = ops.len() - 1;
    match ports.items.transact(ops).await {
        Ok(()) => Ok(match next {
            Some(cursor) => Told::Page(told, cursor),
            None => Told::Last(told),
        }),
        Err(e) if e.is_condition_failed_at(at) => Ok(Told::ByAnother),
        Err(e) => Err(e),
    }
}
