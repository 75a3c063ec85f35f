//! Being passed: a new best moves the drivers between its new and its old time down one
//! place on the track's board (and on its car's board, and in each competition event it
//! improved the driver's entry in); each of them whose webhooks want `board.passed` gets the event. The webhooks consumer works this out from the submission's event, after the
//! submission answered, so a new best costs its request nothing more.
//!
//! Bounded: only the [`MAX_PASSED`] drivers right behind the new time are looked at (the
//! places that matter most; a lap at the top of a huge board reads a handful of rows), and a
//! driver hears of a board at most once per [`WINDOW_SECS`] (a conditional marker per
//! driver, board and window, `HOOK#<user>` / `PASSED#<board>#<window>` in `activity`). The
//! candidates' subscription and window markers are one batch read, and their events, markers
//! and the consumer's processed-event marker one transaction, so a redelivered submission
//! tells nobody twice.

use serde_json::json;

use super::partition;
use super::subscriptions::WANTS_PASSED_SK;
use paddock_boards::leaderboards::board::{BoardId, Position, StoredRow};
use paddock_boards::leaderboards::rank_counts::{self, Through};
use paddock_kernel::events::{
    BoardPassed, Event, EventKind, LeaderboardSubmitted, PassedBy, Passing, ProcessError,
};
use paddock_kernel::ids::{EventId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Key, Query, StoreError, TTL, TxOp, item};
use paddock_kernel::processed_events;
use paddock_kernel::queues::QueueName;
use paddock_kernel::tables::Table;

/// The most drivers one submission tells they were passed.
pub const MAX_PASSED: usize = 5;
/// A driver hears of one board at most once in this many seconds.
pub const WINDOW_SECS: i64 = 600;

/// The consumer whose processed-event marker records that a submission's passed drivers were
/// told (the webhooks consumer's deliveries keep their own per-subscription markers).
const CONSUMER: QueueName = QueueName::Webhooks;

/// A passed driver, in board order.
struct Candidate {
    row: StoredRow,
    /// Their rank before the lap.
    previous_rank: u64,
}

/// Tells the drivers a new best passed, if `event` is one that says where it landed (on the
/// track's board, and in each competition event it improved the driver's entry in): writes a
/// `board.passed` event for each who wants it and was not told of that board in the window.
pub async fn process(ports: &Ports, event: &Event) -> Result<(), ProcessError> {
    let EventKind::LeaderboardSubmitted(submitted) = &event.kind else {
        return Ok(());
    };
    let Some(user) = &event.user_id else {
        return Ok(());
    };
    let retry = |e: StoreError| {
        ProcessError::Retry(anyhow::Error::new(e).context("telling the passed drivers"))
    };
    // Each board the lap landed on as a new best: (board, where, its rank there, the event).
    let mut boards: Vec<(BoardId, &Passing, u64, Option<EventId>)> = Vec::new();
    if let (Some(passing), Some(rank)) = (&submitted.passing, submitted.rank) {
        let rank = u64::try_from(rank).unwrap_or(u64::MAX);
        boards.push((BoardId::track(&submitted.track_id), passing, rank, None));
    }
    if let Some(passing) = &submitted.car_passing {
        // The lap's rank on the car's board, read now (the submission answered the track's).
        let board = BoardId::car(&submitted.track_id, &submitted.vehicle_name);
        let (ahead, _) = rank_counts::rows_ahead(ports, &board, &passing.rank_key, Through::Before)
            .await
            .map_err(retry)?;
        boards.push((board, passing, ahead + 1, None));
    }
    for landed in &submitted.event_passing {
        let board = BoardId::event(&submitted.track_id, &landed.event_id);
        let event_id = Some(landed.event_id.clone());
        boards.push((board, &landed.passing, landed.rank, event_id));
    }
    let mut candidates = Vec::new();
    for (at, (board, passing, rank, _)) in boards.iter().enumerate() {
        let rows = passed_rows(ports, board, user, passing, *rank)
            .await
            .map_err(retry)?;
        candidates.extend(rows.into_iter().map(|c| (at, c)));
    }
    if candidates.is_empty() {
        return Ok(());
    }
    let window = event.occurred_at.unix_timestamp().div_euclid(WINDOW_SECS);
    let marker = |board: &BoardId, user: &UserId| {
        Key::new(
            partition(user),
            format!("PASSED#{}#{window}", board.partition()),
        )
    };
    let mut keys = vec![(
        Table::Activity,
        processed_events::marker_key(CONSUMER, event),
    )];
    for (at, c) in &candidates {
        let user = &c.row.row.user_id;
        keys.push((Table::Activity, Key::new(partition(user), WANTS_PASSED_SK)));
        keys.push((Table::Activity, marker(&boards[*at].0, user)));
    }
    let read = ports.items.get_many(keys).await.map_err(retry)?;
    let Some((processed, markers)) = read.split_first() else {
        return Ok(());
    };
    if processed.is_some() {
        return Ok(());
    }
    let mut told: Vec<&(usize, Candidate)> = candidates
        .iter()
        .zip(markers.chunks(2))
        .filter(|(_, pair)| matches!(pair, [Some(_), None]))
        .map(|(c, _)| c)
        .collect();
    // Another submission's event that told a driver first fails the transaction on their
    // marker: they are left out and the rest written. Each round removes one driver.
    loop {
        if told.is_empty() {
            return Ok(());
        }
        let mut ops = vec![processed_events::marker_op(CONSUMER, event)];
        for (at, c) in &told {
            let (board, passing, _, event_id) = &boards[*at];
            let (user, passer) = (&c.row.row.user_id, user);
            ops.push(TxOp::Put {
                table: Table::Activity,
                item: item(
                    &marker(board, user),
                    json!({ TTL: (window + 1) * WINDOW_SECS + 60 }),
                ),
                condition: Some(Condition::NotExists),
            });
            let by = PassedBy {
                user_id: passer.clone(),
                display_name: passing.display_name.clone(),
                lap_time_ms: submitted.lap_time_ms,
            };
            let passed = passed_event(event, submitted, board, c, &by, event_id.clone());
            ops.push(passed.outbox_op());
        }
        match ports.items.transact(ops).await {
            Ok(()) => return Ok(()),
            // Another delivery of this event told them.
            Err(StoreError::ConditionFailed { index: 0 }) => return Ok(()),
            Err(StoreError::ConditionFailed { index }) if index <= 2 * told.len() => {
                told.remove((index - 1) / 2);
            }
            Err(e) => return Err(retry(e)),
        }
    }
}

/// The (at most [`MAX_PASSED`]) drivers right behind the new best who were there when it was
/// submitted, with their ranks before it.
async fn passed_rows(
    ports: &Ports,
    board: &BoardId,
    user: &UserId,
    passing: &Passing,
    new_rank: u64,
) -> Result<Vec<Candidate>, StoreError> {
    let Some(submitted_micros) = Position::of(&passing.rank_key).map(|p| p.micros) else {
        return Ok(Vec::new());
    };
    let page = ports
        .items
        .query(
            Query::partition(Table::Leaderboards, board.partition())
                .between(passing.rank_key.as_str(), passing.until_key.as_str())
                .limit(MAX_PASSED + 1),
        )
        .await?;
    let mut candidates = Vec::new();
    for found in page.items {
        let row = StoredRow::from_item(found)?;
        // A row written after the lap (a later lap of its driver, or a new driver) was not
        // passed by it.
        if &row.row.user_id == user || row.position()?.micros > submitted_micros {
            continue;
        }
        let place = u64::try_from(candidates.len()).unwrap_or(u64::MAX);
        candidates.push(Candidate {
            row,
            previous_rank: new_rank.saturating_add(place),
        });
        if candidates.len() == MAX_PASSED {
            break;
        }
    }
    Ok(candidates)
}

/// The `board.passed` event telling `passed` that `by` passed them with the new best
/// `submitted`.
fn passed_event(
    event: &Event,
    submitted: &LeaderboardSubmitted,
    board: &BoardId,
    passed: &Candidate,
    by: &PassedBy,
    event_id: Option<EventId>,
) -> Event {
    Event::new(
        EventKind::BoardPassed(BoardPassed {
            track_id: board.track.clone(),
            vehicle: board.vehicle().map(str::to_owned),
            game_id: submitted.game_id.clone(),
            track_name: submitted.track_name.clone(),
            track_layout: submitted.track_layout.clone(),
            previous_rank: passed.previous_rank,
            new_rank: passed.previous_rank.saturating_add(1),
            lap_time_ms: passed.row.row.lap_time_ms,
            passed_by: by.clone(),
            event_id,
        }),
        Some(passed.row.row.user_id.clone()),
        event.occurred_at,
    )
}
