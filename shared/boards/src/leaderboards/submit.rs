//! The boards' side of a submission: the server's own check of the stored lap, then a
//! conditional replace of the driver's entry on every board of the session (the track's and
//! the car's, see [`boards_for`]), with the boards' counts, in one transaction.

use serde::Serialize;
use utoipa::ToSchema;

use super::board::{
    BoardId, BoardScope, Position, RANK_END, RANK_KEY, Row, StoredRow, boards_for, rank_sk,
    submitted_at,
};
use super::extra_boards::{EventStanding, ExtraBoard, event_passing, extra_standings};
use super::rank_counts::{self, Change};
use super::submission_reads::{BoardsRead, read_boards};
use super::{lap_history, vehicles};
use paddock_driving::sessions::records::StoredSession;
use paddock_driving::sessions::upload::Lap;
use paddock_kernel::events::{Event, EventKind, LeaderboardSubmitted, Passing};
use paddock_kernel::ids::{TrackId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Key, StoreError, TTL, TxOp, Update};
use paddock_kernel::rate_limits::RateLimited;
use paddock_kernel::retry::retry_on_conflict;
use paddock_kernel::tables::Table;

/// The least quality a ranked lap needs, inclusive.
pub const MIN_QUALITY: f64 = 0.8;
/// A day, the window of the new-board limit.
const DAY: i64 = 24 * 3600;
/// Rounds of read-and-replace before giving up under heavy contention on one entry.
const ROUNDS: u32 = 20;

/// The answer of a submission.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmitOutcome {
    /// True when the lap replaced the caller's entry (or created it).
    pub improved: bool,
    /// The submitted lap time.
    pub lap_time_ms: i64,
    /// The entry's time before this submission; null when there was none.
    pub previous_best_ms: Option<i64>,
    /// The caller's rank after the submission (1 is fastest).
    pub rank: Option<u64>,
    /// The canonical track.
    #[schema(value_type = String)]
    pub track_id: TrackId,
    /// The competition events the lap also counts for, each with the driver's standing in it;
    /// absent when it counts for none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventStanding>,
}

/// Who submits.
#[derive(Debug, Clone)]
pub struct Driver {
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
pub fn check_lap(session: &StoredSession, lap_time_ms: i64) -> Result<&Lap, String> {
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

    /// The driver opened today's new boards already.
    #[error(transparent)]
    NewBoards(RateLimited),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The driver's count of boards opened today (table `limits`, `RL#new-board#<user>` / the
/// day's start, expiring with the day) raised by one, conditional on staying within `max`.
fn new_board_op(user_id: &UserId, now: i64, max: u32) -> TxOp {
    let start = now - now.rem_euclid(DAY);
    TxOp::Update {
        table: Table::Limits,
        key: Key::new(format!("RL#new-board#{user_id}"), start.to_string()),
        update: Update::set(TTL, start + DAY + 60).and_add("n", 1),
        condition: Some(Condition::Or(vec![
            Condition::AttrNotExists("n".into()),
            Condition::Lt("n".into(), serde_json::json!(max)),
        ])),
    }
}

/// The refusal of a lap that would open a board past today's `max`.
fn new_boards_spent(now: i64, max: u32) -> RateLimited {
    let end = now - now.rem_euclid(DAY) + DAY;
    RateLimited {
        max,
        window_secs: DAY,
        retry_after_secs: u64::try_from(end - now).unwrap_or(1).max(1),
    }
}

/// The writes that put `new` in place of `current` on `board`: the entry (conditional on
/// `current` being what is stored), its rank row, the old rank row's removal or the driver's
/// index rows, and the board's counts. A car board's entry that [`adds_a_driver`] also needs
/// the car's count ([`vehicles::count_ops`]).
pub(crate) fn replace_ops(
    board: &BoardId,
    current: Option<&StoredRow>,
    new: &StoredRow,
) -> Result<Vec<TxOp>, StoreError> {
    let user_id = &new.row.user_id;
    let unchanged = match current {
        Some(c) => Condition::eq(RANK_KEY, c.rank_key.as_str()),
        None => Condition::NotExists,
    };
    let mut ops = vec![
        TxOp::Put {
            table: Table::Leaderboards,
            item: new.to_item(&board.entry_key(user_id)),
            condition: Some(unchanged),
        },
        TxOp::Put {
            table: Table::Leaderboards,
            item: new.rank_item(board),
            condition: Some(Condition::NotExists),
        },
    ];
    if let Some(old) = current {
        ops.push(TxOp::Delete {
            table: Table::Leaderboards,
            key: board.rank_row_key(&old.rank_key),
            condition: None,
        });
    } else {
        // The driver's first entry on this board: index it under the driver.
        let listed = serde_json::json!({ "trackId": board.track, "vehicle": board.vehicle() });
        ops.push(TxOp::Put {
            table: Table::Leaderboards,
            item: paddock_kernel::ports::items::item(&board.index_key(user_id), listed.clone()),
            condition: None,
        });
        if let Some(key) = board.track_index_key(user_id) {
            ops.push(TxOp::Put {
                table: Table::Leaderboards,
                item: paddock_kernel::ports::items::item(&key, listed),
                condition: None,
            });
        }
    }
    let removed = match current.filter(|c| c.counted) {
        Some(c) => Some(c.position()?),
        None => None,
    };
    ops.extend(
        Change {
            removed,
            added: Some(new.position()?),
        }
        .ops(board),
    );
    Ok(ops)
}

/// Whether replacing `current` on a board adds a driver to its counts (none, or an entry not
/// counted yet).
pub(crate) fn adds_a_driver(current: Option<&StoredRow>) -> bool {
    current.is_none_or(|c| !c.counted)
}

/// Submits a checked lap of `session` for `driver`, on every board of [`boards_for`] the
/// session: a lap faster than the driver's entry on a board replaces it. The answer carries
/// the driver's rank on the first board (the track's) afterwards.
pub async fn submit(
    ports: &Ports,
    driver: &Driver,
    session: &StoredSession,
    lap_time_ms: i64,
    new_boards_per_day: u32,
) -> Result<SubmitOutcome, SubmitError> {
    let lap = Submission {
        driver,
        session,
        lap_time_ms,
        new_boards_per_day,
    };
    submit_read(ports, &lap, None, Vec::new()).await
}

/// A snapshot read refused while transactions kept writing its items (a race on one board)
/// is a round lost to another submission, tried again as one.
fn contended(e: StoreError) -> SubmitError {
    match e {
        StoreError::Conflict => SubmitError::Contended,
        e => SubmitError::Store(e),
    }
}

/// One lap submitted: by whom, of which session, and the driver's daily limit of new boards.
#[derive(Debug, Clone, Copy)]
pub struct Submission<'a> {
    /// Who submits.
    pub driver: &'a Driver,
    /// The session the lap was driven in, checked to hold it.
    pub session: &'a StoredSession,
    /// The lap's time.
    pub lap_time_ms: i64,
    /// Boards the driver may open per day.
    pub new_boards_per_day: u32,
}

/// Why one round of a submission did not write.
enum Round {
    /// The submission failed.
    Failed(SubmitError),
    /// The conditions of this extra board no longer hold (the event closed, the
    /// driver left the league): the submission is made again without it.
    ExtraGone(BoardId),
}

impl From<SubmitError> for Round {
    fn from(e: SubmitError) -> Self {
        Self::Failed(e)
    }
}

impl From<StoreError> for Round {
    fn from(e: StoreError) -> Self {
        Self::Failed(SubmitError::Store(e))
    }
}

/// [`submit`] from what [`read_boards`] read for it (read beside the submission's other
/// checks, say, with the `extra` boards the lap counts for; `None` when that read lost a
/// race), also on those boards; a round lost to another submission reads again.
pub async fn submit_read(
    ports: &Ports,
    lap: &Submission<'_>,
    read: Option<BoardsRead>,
    extra: Vec<ExtraBoard>,
) -> Result<SubmitOutcome, SubmitError> {
    let boards = &boards_for(&lap.session.summary);
    let mut first = read;
    let extra = std::sync::Mutex::new(extra);
    let extra = &extra;
    // Another submission may change an entry or the counts between the reads and the write:
    // the attempt then reads again. An extra board whose conditions failed is dropped first.
    let outcome = retry_on_conflict(
        ROUNDS,
        |e| {
            matches!(
                e,
                Round::Failed(SubmitError::Contended) | Round::ExtraGone(_)
            )
        },
        move || {
            let taken = first.take();
            async move {
                let extras = extra.lock().expect("not poisoned").clone();
                let user = &lap.driver.user_id;
                let read = match taken {
                    Some(read) => read,
                    None => read_boards(ports, user, lap.session, lap.lap_time_ms, extras)
                        .await
                        .map_err(contended)?,
                };
                let round = attempt(ports, lap, boards, read).await;
                if let Err(Round::ExtraGone(gone)) = &round {
                    extra
                        .lock()
                        .expect("not poisoned")
                        .retain(|e| e.board != *gone);
                }
                round
            }
        },
    )
    .await;
    outcome.map_err(|round| match round {
        Round::Failed(e) => e,
        Round::ExtraGone(_) => SubmitError::Contended,
    })
}

/// One conditional write of the lap on `boards` from `read`; `Contended` when another
/// submission changed what was read.
async fn attempt(
    ports: &Ports,
    lap: &Submission<'_>,
    boards: &[BoardId],
    read: BoardsRead,
) -> Result<SubmitOutcome, Round> {
    let Submission {
        driver,
        session,
        lap_time_ms,
        new_boards_per_day,
    } = *lap;
    let summary = &session.summary;
    let track_id = summary.track_id.clone();
    let BoardsRead {
        entries,
        car,
        tally,
        extra,
    } = read;
    let now = ports.clock.now();
    // A board closed by now (an event's window) takes nothing more, however it was read.
    let now_ms = paddock_kernel::ports::clock::unix_ms(now);
    let extra: Vec<_> = extra
        .into_iter()
        .filter(|read| now_ms < read.extra.until_ms)
        .collect();
    let faster: Vec<bool> = entries
        .iter()
        .map(|entry| {
            entry
                .as_ref()
                .is_none_or(|e| lap_time_ms < e.row.lap_time_ms)
        })
        .collect();
    let (ranked_board, on_track, faster_on_track) = (&boards[0], &entries[0], faster[0]);
    // The rank is decided before the write, so the event carries the rank the submission
    // answers with (achievements judge ranks by it). A new best is the latest submission:
    // it ranks behind every equal time, so the counts alone give its rank.
    let rank = async {
        Ok(match on_track {
            Some(current) if !faster_on_track => rank_counts::rank_of(ports, ranked_board, current)
                .await
                .map_err(contended)?,
            _ => 1 + tally.faster() + tally.equal(),
        })
    };
    // The extra boards are ranked from what was read of them, beside the rank (an entry
    // faster than this lap needs its own read).
    let (rank, standings) = futures::try_join!(rank, async {
        extra_standings(ports, &extra, lap_time_ms, &summary.id)
            .await
            .map_err(|e| Round::Failed(contended(e)))
    })?;
    let previous_best_ms = on_track.as_ref().map(|p| p.row.lap_time_ms);
    // This very lap of this session is the stored entry: the submission was sent again (its
    // answer lost, or a 503 or 504 after its write). It is answered as the board stands and
    // writes no second event, so the driver's feed and achievements hear of it once.
    if on_track
        .as_ref()
        .is_some_and(|c| c.row.session_id == summary.id && c.row.lap_time_ms == lap_time_ms)
    {
        return Ok(SubmitOutcome {
            improved: false,
            lap_time_ms,
            previous_best_ms,
            rank: Some(rank),
            track_id,
            events: standings.into_iter().map(|(_, s)| s).collect(),
        });
    }
    let rank_key = rank_sk(lap_time_ms, now, &driver.user_id);
    // The drivers a new best passes are told by the webhooks consumer, from this.
    let passing = faster_on_track.then(|| Passing {
        rank_key: rank_key.clone(),
        until_key: on_track
            .as_ref()
            .map_or(RANK_END, |p| p.rank_key.as_str())
            .to_owned(),
        display_name: driver.display_name.clone(),
    });
    // And those it passes on the car's board, when it is the driver's best in the car.
    let car_passing = boards
        .iter()
        .zip(&entries)
        .zip(&faster)
        .find(|((board, _), _)| matches!(board.scope, BoardScope::Car(_)))
        .filter(|(_, faster)| **faster)
        .map(|((_, entry), _)| Passing {
            rank_key: rank_key.clone(),
            until_key: entry
                .as_ref()
                .map_or(RANK_END, |p| p.rank_key.as_str())
                .to_owned(),
            display_name: driver.display_name.clone(),
        });
    // And the entrants it passes in each event it improved the driver's entry in.
    let event_passing = event_passing(&extra, &standings, &rank_key, &driver.display_name);
    let event = Event::new(
        EventKind::LeaderboardSubmitted(LeaderboardSubmitted {
            track_id: track_id.clone(),
            session_id: summary.id.clone(),
            lap_time_ms,
            previous_best_ms,
            improved: faster_on_track,
            rank: usize::try_from(rank).ok(),
            game_id: summary.game_id.clone(),
            track_name: summary.track_name.clone(),
            track_layout: summary.track_layout.clone(),
            vehicle_name: summary.vehicle_name.clone(),
            passing,
            car_passing,
            event_passing,
        }),
        Some(driver.user_id.clone()),
        now,
    );
    let stored = StoredRow {
        row: Row {
            user_id: driver.user_id.clone(),
            display_name: driver.display_name.clone(),
            avatar_url: driver.avatar_url.clone(),
            lap_time_ms,
            vehicle_name: summary.vehicle_name.clone(),
            session_id: summary.id.clone(),
            submitted_at: submitted_at(now),
        },
        rank_key,
        profile_version: driver.profile_version,
        counted: true,
    };
    debug_assert!(Position::of(&stored.rank_key).is_some());
    let mut ops = vec![
        event.outbox_op(),
        lap_history::record_op(
            &driver.user_id,
            &track_id,
            &summary.id,
            &summary.recorded_at,
            &summary.vehicle_name,
            lap_time_ms,
            now,
        ),
    ];
    if let Some(current) = on_track.as_ref().filter(|_| !faster_on_track) {
        // The rank was read for this entry: it must still be the entry when the event is
        // written (a faster lap of the same driver may have replaced it meanwhile).
        ops.push(TxOp::Check {
            table: Table::Leaderboards,
            key: ranked_board.entry_key(&driver.user_id),
            condition: Condition::eq(RANK_KEY, current.rank_key.as_str()),
        });
    }
    for ((board, entry), faster) in boards.iter().zip(&entries).zip(&faster) {
        if !faster {
            continue;
        }
        ops.extend(replace_ops(board, entry.as_ref(), &stored)?);
        if let (BoardScope::Car(_), Some(car)) = (&board.scope, &car)
            && adds_a_driver(entry.as_ref())
        {
            ops.extend(vehicles::count_ops(&track_id, car, 1));
        }
    }
    // An event's board: its conditions first (the event open, the driver in its league),
    // then the entry, as on the session's own boards.
    let mut extra_conditions = Vec::new();
    // A transaction holds one operation per item: two events of one league check the
    // membership once.
    let mut required = Vec::new();
    for (read, (write, _)) in extra.iter().zip(&standings) {
        if !write {
            continue;
        }
        let first = ops.len();
        if let Some((table, key)) = &read.extra.requires
            && !required.contains(&(table, key))
        {
            required.push((table, key));
            ops.push(TxOp::Check {
                table: *table,
                key: key.clone(),
                condition: Condition::Exists,
            });
        }
        ops.extend(read.extra.checks.iter().cloned());
        extra_conditions.push((first..ops.len(), read.extra.board.clone()));
        ops.extend(replace_ops(
            &read.extra.board,
            read.entry.as_ref(),
            &stored,
        )?);
    }
    // A lap that opens a board counts against the driver's day in the same transaction,
    // so only the submission that opens it counts (not a concurrent or retried one).
    let opening = entries.iter().any(Option::is_none).then(|| {
        ops.push(new_board_op(
            &driver.user_id,
            now.unix_timestamp(),
            new_boards_per_day,
        ));
        ops.len() - 1
    });
    match ports.items.transact(ops).await {
        Ok(()) => {
            let outcome = SubmitOutcome {
                improved: faster_on_track,
                lap_time_ms,
                previous_best_ms,
                rank: Some(rank),
                track_id,
                events: standings.into_iter().map(|(_, s)| s).collect(),
            };
            let result = if faster_on_track {
                "improved"
            } else {
                "unchanged"
            };
            paddock_platform::metrics::global()
                .leaderboard_submissions
                .with_label_values(&[result])
                .inc();
            Ok(outcome)
        }
        Err(StoreError::ConditionFailed { index }) if Some(index) == opening => {
            let spent = new_boards_spent(now.unix_timestamp(), new_boards_per_day);
            Err(SubmitError::NewBoards(spent).into())
        }
        Err(StoreError::ConditionFailed { index })
            if let Some((_, board)) = extra_conditions.iter().find(|(r, _)| r.contains(&index)) =>
        {
            Err(Round::ExtraGone(board.clone()))
        }
        Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
            Err(SubmitError::Contended.into())
        }
        Err(e) => Err(SubmitError::Store(e).into()),
    }
}
