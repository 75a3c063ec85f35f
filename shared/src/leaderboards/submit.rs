//! `POST /v1/leaderboards/submit`: the server's own quality check, then a conditional
//! replace of the caller's entry.

use serde::Serialize;
use std::time::Duration;
use utoipa::ToSchema;

use super::board::{
    Board, RANK_KEY, Row, StoredRow, board_index_key, entry_key, rank_sk, submitted_at,
};
use crate::events::{Event, EventKind, LeaderboardSubmitted};
use crate::ids::{TrackId, UserId};
use crate::ports::Ports;
use crate::ports::items::{Condition, Key, StoreError, TxOp};
use crate::sessions::records::StoredSession;
use crate::sessions::upload::Lap;
use crate::tables::Table;

/// The least quality a ranked lap needs, inclusive.
pub(crate) const MIN_QUALITY: f64 = 0.8;
/// Rounds of read-and-replace before giving up under heavy contention on one entry.
const ROUNDS: u32 = 8;

/// The answer of a submission.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubmitOutcome {
    /// True when the lap replaced the caller's entry (or created it).
    pub improved: bool,
    /// The submitted lap time.
    pub lap_time_ms: i64,
    /// The entry's time before this submission; null when there was none.
    pub previous_best_ms: Option<i64>,
    /// The caller's rank after the submission (1 is fastest).
    pub rank: Option<usize>,
    /// The canonical track.
    #[schema(value_type = String)]
    pub track_id: TrackId,
}

/// Who submits.
#[derive(Debug, Clone)]
pub(crate) struct Driver {
    /// The driver's id.
    pub user_id: UserId,
    /// Shown on leaderboards and the feed.
    pub display_name: String,
    /// Profile image URL (https), if any.
    pub avatar_url: Option<String>,
    /// The profile version the name and avatar come from.
    pub profile_version: i64,
}

/// Checks the stored laps of `session`: a lap with `lap_time_ms` exists, is valid and has a
/// combined quality of at least [`MIN_QUALITY`]. Answers the first such lap (whose other
/// facts, like its sector times, are checked next), or says why there is none.
pub(crate) fn check_lap(session: &StoredSession, lap_time_ms: i64) -> Result<&Lap, String> {
    let matching: Vec<_> = session
        .laps
        .iter()
        .filter(|l| l.lap_time_ms == lap_time_ms)
        .collect();
    if matching.is_empty() {
        return Err(format!(
            "lapTimeMs: session {} has no lap of {lap_time_ms} ms",
            session.summary.id
        ));
    }
    if !matching.iter().any(|l| l.is_valid) {
        return Err("lapTimeMs: the lap with this time is not valid".into());
    }
    matching
        .into_iter()
        .find(|l| l.is_valid && l.quality_combined >= MIN_QUALITY)
        .ok_or_else(|| format!("lapTimeMs: the lap's stored quality is below {MIN_QUALITY}"))
}

/// Why a submission was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// Other submissions kept replacing the same entry.
    #[error("too many concurrent submissions for this entry, please retry")]
    Contended,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Submits a checked lap of `session` for `driver`; answers the outcome and the board as
/// it is afterwards.
pub(crate) async fn submit(
    ports: &Ports,
    driver: &Driver,
    session: &StoredSession,
    lap_time_ms: i64,
) -> Result<(SubmitOutcome, Board), SubmitError> {
    let track_id = session.summary.track_id.clone();
    let key = entry_key(&track_id, &driver.user_id);
    let mut previous = None;
    let mut improved = false;
    let mut answer = None;
    for round in 0..ROUNDS {
        let current = match ports.items.get(Table::Leaderboards, &key).await? {
            Some(item) => Some(StoredRow::from_item(item)?),
            None => None,
        };
        let current_rank_key = current.as_ref().map(|c| c.rank_key.clone());
        previous = current.map(|c| c.row);
        let now = ports.clock.now();
        // The rank is decided before the write, so the event carries the rank the
        // submission answers with (achievements judge ranks by it).
        let board = Board::load(ports, &track_id).await?;
        let faster = previous
            .as_ref()
            .is_none_or(|p| lap_time_ms < p.lap_time_ms);
        let rank = if faster {
            Some(board.rank_with(&driver.user_id, lap_time_ms))
        } else {
            board.rank_of(&driver.user_id)
        };
        let summary = &session.summary;
        let event = Event::new(
            EventKind::LeaderboardSubmitted(LeaderboardSubmitted {
                track_id: track_id.clone(),
                session_id: summary.id.clone(),
                lap_time_ms,
                previous_best_ms: previous.as_ref().map(|p| p.lap_time_ms),
                improved: faster,
                rank,
                game_id: summary.game_id.clone(),
                track_name: summary.track_name.clone(),
                track_layout: summary.track_layout.clone(),
                vehicle_name: summary.vehicle_name.clone(),
            }),
            Some(driver.user_id.clone()),
            now,
        );
        if !faster {
            // Not faster: the entry stays; the submission is still recorded as an event.
            ports.items.transact(vec![event.outbox_op()]).await?;
            answer = Some((rank, board));
            break;
        }
        let row = Row {
            user_id: driver.user_id.clone(),
            display_name: driver.display_name.clone(),
            avatar_url: driver.avatar_url.clone(),
            lap_time_ms,
            vehicle_name: summary.vehicle_name.clone(),
            session_id: summary.id.clone(),
            submitted_at: submitted_at(now),
        };
        let stored = StoredRow {
            row,
            rank_key: rank_sk(lap_time_ms, now, &driver.user_id),
            profile_version: driver.profile_version,
        };
        let unchanged = match &current_rank_key {
            Some(k) => Condition::eq(RANK_KEY, k.as_str()),
            None => Condition::NotExists,
        };
        let mut ops = vec![
            TxOp::Put {
                table: Table::Leaderboards,
                item: stored.to_item(&key),
                condition: Some(unchanged),
            },
            TxOp::Put {
                table: Table::Leaderboards,
                item: stored.rank_item(&track_id),
                condition: Some(Condition::NotExists),
            },
            event.outbox_op(),
        ];
        match &current_rank_key {
            Some(old) => ops.push(TxOp::Delete {
                table: Table::Leaderboards,
                key: Key::new(key.pk.clone(), old.as_str()),
                condition: None,
            }),
            // The driver's first entry on this board: index it under the driver.
            None => ops.push(TxOp::Put {
                table: Table::Leaderboards,
                item: crate::ports::items::item(
                    &board_index_key(&driver.user_id, &track_id),
                    serde_json::json!({ "trackId": track_id }),
                ),
                condition: None,
            }),
        }
        match ports.items.transact(ops).await {
            Ok(()) => {
                improved = true;
                answer = Some((rank, board.with_row(stored.row)));
                break;
            }
            // Another submission changed the entry meanwhile: read it again and compare.
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                tokio::time::sleep(Duration::from_millis(5 * u64::from(round + 1))).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let Some((rank, board)) = answer else {
        return Err(SubmitError::Contended);
    };
    let outcome = SubmitOutcome {
        improved,
        lap_time_ms,
        previous_best_ms: previous.map(|p| p.lap_time_ms),
        rank,
        track_id,
    };
    let result = if improved { "improved" } else { "unchanged" };
    crate::metrics::global()
        .leaderboard_submissions
        .with_label_values(&[result])
        .inc();
    Ok((outcome, board))
}
