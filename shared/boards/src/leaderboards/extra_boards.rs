//! The boards a lap goes on besides its session's own (a competition event's standings): what
//! a submission reads of them, and the driver's standing on each after it.

use serde::Serialize;
use utoipa::ToSchema;

use super::board::{BoardId, BoardScope, RANK_END, StoredRow};
use super::rank_counts::Tally;
use super::rank_counts::rank_of;
use paddock_kernel::events::{EventPassing, Passing};
use paddock_kernel::ids::{EventId, SessionId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Key, StoreError, TxOp};
use paddock_kernel::tables::Table;

/// The driver's standing in one event after a submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventStanding {
    /// The event.
    #[schema(value_type = String, format = Uuid)]
    pub event_id: EventId,
    /// True when the lap became the driver's entry in the event.
    pub improved: bool,
    /// The driver's time in the event after the submission.
    pub best_ms: i64,
    /// The driver's position in the event's standings (1 is fastest).
    pub rank: u64,
}

/// A board a lap goes on besides the session's own (an event's standings), written under
/// `checks` (the event still open) and the existence of the item `requires` names (the
/// driver's membership of a league: checked once per item however many boards require it),
/// so a submission racing the close or a removal is either on the board or refused from it,
/// never half.
#[derive(Debug, Clone)]
pub struct ExtraBoard {
    /// The board; its scope is [`BoardScope::Event`].
    pub board: BoardId,
    /// An item that must exist when the lap is written on this board (its finder knew it did).
    pub requires: Option<(Table, Key)>,
    /// Conditions the write is made under (`TxOp::Check`s).
    pub checks: Vec<TxOp>,
    /// The board takes laps written before this time (milliseconds since the epoch) only:
    /// the clock is read again just before the write.
    pub until_ms: i64,
}

/// What a submission read of one [`ExtraBoard`].
#[derive(Debug)]
pub struct ExtraRead {
    pub(crate) extra: ExtraBoard,
    pub(crate) entry: Option<StoredRow>,
    tally: Tally,
}

/// Reads the driver's entries on the `extra` boards in one batch, and beside it the counts
/// that rank a new best on each (one snapshot per board).
pub async fn read_extra(
    ports: &Ports,
    user_id: &UserId,
    extra: Vec<ExtraBoard>,
    lap_time_ms: i64,
) -> Result<Vec<ExtraRead>, StoreError> {
    if extra.is_empty() {
        return Ok(Vec::new());
    }
    let keys = extra
        .iter()
        .map(|board| (Table::Leaderboards, board.board.entry_key(user_id)))
        .collect();
    let (found, tallies) = futures::try_join!(
        ports.items.get_many(keys),
        futures::future::try_join_all(extra.iter().map(|e| Tally::read(
            ports,
            &e.board,
            lap_time_ms
        )))
    )?;
    let mut read = Vec::new();
    for ((extra, tally), entry) in extra.into_iter().zip(tallies).zip(found) {
        read.push(ExtraRead {
            entry: entry.map(StoredRow::from_item).transpose()?,
            extra,
            tally,
        });
    }
    Ok(read)
}

/// Whether the lap is written on each extra board, and the driver's standing there after it:
/// a faster lap (or a first one) is written and ranked from the counts read, as a new best is;
/// otherwise the entry stays and its rank is read. The very lap of this session already in
/// place (a submission sent again) is not written again.
pub(crate) async fn extra_standings(
    ports: &Ports,
    extra: &[ExtraRead],
    lap_time_ms: i64,
    session: &SessionId,
) -> Result<Vec<(bool, EventStanding)>, StoreError> {
    let standings = extra.iter().map(|read| async move {
        let BoardScope::Event(event_id) = &read.extra.board.scope else {
            return Err(StoreError::Invalid("an extra board is an event's".into()));
        };
        let (write, best_ms, rank) = match &read.entry {
            Some(e) if e.row.session_id == *session && e.row.lap_time_ms == lap_time_ms => (
                false,
                lap_time_ms,
                rank_of(ports, &read.extra.board, e).await?,
            ),
            Some(e) if e.row.lap_time_ms <= lap_time_ms => (
                false,
                e.row.lap_time_ms,
                rank_of(ports, &read.extra.board, e).await?,
            ),
            _ => (
                true,
                lap_time_ms,
                1 + read.tally.faster() + read.tally.equal(),
            ),
        };
        let standing = EventStanding {
            event_id: event_id.clone(),
            improved: write,
            best_ms,
            rank,
        };
        Ok((write, standing))
    });
    futures::future::try_join_all(standings).await
}

/// Where a lap of rank key `rank_key` landed in each extra board it was written on, for
/// telling the entrants it passed there.
pub(crate) fn event_passing(
    extra: &[ExtraRead],
    standings: &[(bool, EventStanding)],
    rank_key: &str,
    display_name: &str,
) -> Vec<EventPassing> {
    extra
        .iter()
        .zip(standings)
        .filter(|(_, (write, _))| *write)
        .map(|(read, (_, standing))| EventPassing {
            event_id: standing.event_id.clone(),
            rank: standing.rank,
            passing: Passing {
                rank_key: rank_key.to_owned(),
                until_key: read
                    .entry
                    .as_ref()
                    .map_or(RANK_END, |e| e.rank_key.as_str())
                    .to_owned(),
                display_name: display_name.to_owned(),
            },
        })
        .collect()
}
