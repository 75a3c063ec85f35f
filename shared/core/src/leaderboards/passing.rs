//! Being passed: a submission's new best moves the drivers between its new and its old time
//! down one place on the track's board; each of them whose webhooks want `board.passed` gets
//! the event, written in the submission's own transaction.
//!
//! Bounded: only the [`MAX_PASSED`] drivers right behind the new time are looked at (the
//! places that matter most; a lap at the top of a huge board reads a handful of rows), and a
//! driver hears of a board at most once per [`WINDOW_SECS`] (a conditional marker per
//! driver, board and window, `HOOK#<user>` / `PASSED#<board>#<window>` in `activity`). A
//! driver without such a subscription costs one small read and writes nothing.

use serde_json::json;

use super::board::{BoardId, RANK_END, StoredRow};
use crate::events::{BoardPassed, Event, EventKind, PassedBy};
use crate::ids::UserId;
use crate::ports::Ports;
use crate::ports::items::{Condition, Key, Query, StoreError, TTL, TxOp, item};
use crate::sessions::records::SessionSummary;
use crate::tables::Table;
use crate::webhooks::partition;
use crate::webhooks::subscriptions::WANTS_PASSED_SK;

/// The most drivers one submission tells they were passed.
pub const MAX_PASSED: usize = 5;
/// A driver hears of one board at most once in this many seconds.
pub const WINDOW_SECS: i64 = 600;

/// The passed drivers' `board.passed` events and coalescing markers, for the transaction of
/// a new best `new` (at `new_rank`) replacing `previous` on `board`. The markers are
/// conditional: a concurrent submission that told the same driver first makes this one's
/// transaction fail, and its next round reads the marker and leaves the driver out.
pub(crate) async fn passed_ops(
    ports: &Ports,
    board: &BoardId,
    new: &StoredRow,
    previous: Option<&StoredRow>,
    new_rank: u64,
    session: &SessionSummary,
) -> Result<Vec<TxOp>, StoreError> {
    let end = previous.map_or(RANK_END, |p| p.rank_key.as_str());
    let page = ports
        .items
        .query(
            Query::partition(Table::Leaderboards, board.partition())
                .between(new.rank_key.as_str(), end)
                .limit(MAX_PASSED + 1),
        )
        .await?;
    let passed: Vec<StoredRow> = page
        .items
        .into_iter()
        .map(StoredRow::from_item)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|r| r.row.user_id != new.row.user_id)
        .take(MAX_PASSED)
        .collect();
    if passed.is_empty() {
        return Ok(Vec::new());
    }
    let now = ports.clock.now();
    let window = now.unix_timestamp().div_euclid(WINDOW_SECS);
    let marker = |user: &UserId| {
        Key::new(
            partition(user),
            format!("PASSED#{}#{window}", board.partition()),
        )
    };
    let told = futures::future::try_join_all(passed.iter().map(|row| async {
        let user = &row.row.user_id;
        let wants = ports
            .items
            .get(Table::Activity, &Key::new(partition(user), WANTS_PASSED_SK))
            .await?
            .is_some();
        if !wants {
            return Ok::<_, StoreError>(false);
        }
        Ok(ports
            .items
            .get(Table::Activity, &marker(user))
            .await?
            .is_none())
    }))
    .await?;
    let mut ops = Vec::new();
    for ((place, row), tell) in (0u64..).zip(&passed).zip(told) {
        if !tell {
            continue;
        }
        let user = &row.row.user_id;
        let event = Event::new(
            EventKind::BoardPassed(BoardPassed {
                track_id: board.track.clone(),
                vehicle: board.vehicle().map(str::to_owned),
                game_id: session.game_id.clone(),
                track_name: session.track_name.clone(),
                track_layout: session.track_layout.clone(),
                previous_rank: new_rank + place,
                new_rank: new_rank + place + 1,
                lap_time_ms: row.row.lap_time_ms,
                passed_by: PassedBy {
                    user_id: new.row.user_id.clone(),
                    display_name: new.row.display_name.clone(),
                    lap_time_ms: new.row.lap_time_ms,
                },
            }),
            Some(user.clone()),
            now,
        );
        ops.push(TxOp::Put {
            table: Table::Activity,
            item: item(
                &marker(user),
                json!({ TTL: (window + 1) * WINDOW_SECS + 60 }),
            ),
            condition: Some(Condition::NotExists),
        });
        ops.push(event.outbox_op());
    }
    Ok(ops)
}
