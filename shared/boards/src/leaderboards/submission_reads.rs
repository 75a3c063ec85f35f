//! What a submission reads before it writes, in one step: the driver's entries on the
//! session's boards and on the other boards the lap counts for (an event's standings), the
//! car's count, and the counts that rank a new best on each.

use super::board::{BoardScope, StoredRow, boards_for};
use super::extra_boards::{ExtraBoard, ExtraRead, read_extra};
use super::rank_counts::Tally;
use super::vehicles;
use paddock_driving::sessions::records::StoredSession;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Key, StoreError};
use paddock_kernel::tables::Table;

/// What a submission reads before it writes.
#[derive(Debug)]
pub struct BoardsRead {
    /// The driver's entry on each board of [`boards_for`] the session, in that order.
    pub(crate) entries: Vec<Option<StoredRow>>,
    /// The car's count, when a board is the car's.
    pub(crate) car: Option<vehicles::CarCount>,
    /// The counts of the track's board at the submitted lap time: a new best's rank.
    pub(crate) tally: Tally,
    /// What was read of the other boards the lap counts for.
    pub(crate) extra: Vec<ExtraRead>,
}

/// Reads what a submission of `lap_time_ms` of `session` by `user_id` starts from: the
/// driver's entries and the car's count (one batch; a new driver on the car's board changes
/// the count, conditional on it), and beside them the counts that rank a new best (one
/// snapshot). The counts are read whether or not the lap is a new best, which is known only
/// once the entries are: a slower lap pays for four count items it does not use, so that a
/// new best waits on one round trip here rather than two. The `extra` boards are read beside
/// them ([`read_extra`]), in the same step.
pub async fn read_boards(
    ports: &Ports,
    user_id: &UserId,
    session: &StoredSession,
    lap_time_ms: i64,
    extra: Vec<ExtraBoard>,
) -> Result<BoardsRead, StoreError> {
    let summary = &session.summary;
    let boards = boards_for(summary);
    let has_car = boards.iter().any(|b| matches!(b.scope, BoardScope::Car(_)));
    let mut keys: Vec<(Table, Key)> = boards
        .iter()
        .map(|board| (Table::Leaderboards, board.entry_key(user_id)))
        .collect();
    if has_car {
        keys.push((
            Table::Leaderboards,
            vehicles::key(&summary.track_id, &summary.vehicle_name),
        ));
    }
    let (mut found, tally, extra) = futures::try_join!(
        ports.items.get_many(keys),
        Tally::read(ports, &boards[0], lap_time_ms),
        read_extra(ports, user_id, extra, lap_time_ms)
    )?;
    let car = match has_car {
        true => Some(vehicles::count_of(
            found.pop().flatten(),
            &summary.vehicle_name,
        )),
        false => None,
    };
    let entries = found
        .into_iter()
        .map(|item| item.map(StoredRow::from_item).transpose())
        .collect::<Result<_, _>>()?;
    Ok(BoardsRead {
        entries,
        car,
        tally,
        extra,
    })
}
