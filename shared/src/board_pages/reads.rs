//! What the pages show, read through the same board reads as `GET /v1/leaderboards`.
//!
//! Each function answers one page's worth of data: a board page is the API's page of the
//! same board (same ranks, same cursor), a driver's page reads the driver's board index and
//! one entry per board, and the tracks page reads a page of tracks.

use crate::ids::UserId;
use crate::leaderboards::board::{BoardId, Row};
use crate::leaderboards::reads as board_reads;
use crate::leaderboards::{rank_counts, renames, vehicles};
use crate::ports::Ports;
use crate::ports::items::StoreError;
use crate::tracks::{self, Track};

pub(crate) use crate::leaderboards::reads::Ranked;

/// A page of a board (the track board, or one car's).
#[derive(Debug, Clone)]
pub(crate) struct BoardPage {
    /// The board's track.
    pub track: Track,
    /// The rows of this page, in rank order.
    pub rows: Vec<Ranked>,
    /// The fastest lap of the board (for gaps), if it has entries.
    pub first_ms: Option<i64>,
    /// Entries on the board.
    pub total: u64,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// The cars with entries on the track, with their entry counts (for the car selector).
    pub vehicles: Vec<(String, u64)>,
}

/// A track that has a board, with its number of drivers.
#[derive(Debug, Clone)]
pub(crate) struct TrackBoard {
    /// The track.
    pub track: Track,
    /// Drivers on its board.
    pub drivers: u64,
}

/// A driver's best on one board.
#[derive(Debug, Clone)]
pub(crate) struct DriverBest {
    /// The board's track.
    pub track: Track,
    /// The driver's entry.
    pub row: Row,
    /// Its rank.
    pub rank: u64,
    /// Entries on the board.
    pub total: u64,
}

/// The page of `board` after position `after` (`limit` rows); `None` for a track nobody
/// raced. Reads what `GET /v1/leaderboards` reads for the page, the board's fastest row and
/// the track's cars.
pub(crate) async fn board_page(
    ports: &Ports,
    board: &BoardId,
    after: Option<&str>,
    limit: usize,
) -> Result<Option<BoardPage>, StoreError> {
    let Some(track) = tracks::get(ports, &board.track).await? else {
        return Ok(None);
    };
    let slice = board_reads::page(ports, board, after, limit).await?;
    let first_ms = match slice.rows.first() {
        Some(r) if r.rank == 1 => Some(r.row.lap_time_ms),
        _ => board_reads::fastest(ports, board)
            .await?
            .map(|r| r.lap_time_ms),
    };
    let vehicles = vehicles::list(ports, &board.track)
        .await?
        .into_iter()
        .map(|v| (v.vehicle_name, v.total_entries))
        .collect();
    Ok(Some(BoardPage {
        track,
        first_ms,
        total: slice.total,
        next_cursor: slice.next_after.as_deref().map(board_reads::encode_cursor),
        rows: slice.rows,
        vehicles,
    }))
}

/// Tracks with a board, a page of the tracks list at a time, with the ones whose name, layout
/// or game holds `search` (case-insensitive) only.
pub(crate) async fn boards(
    ports: &Ports,
    search: Option<&str>,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<TrackBoard>, Option<String>), StoreError> {
    let (listed, next) = tracks::list(ports, limit, cursor).await?;
    let needle = search.map(str::to_lowercase);
    let mut out = Vec::new();
    for track in listed {
        let found = needle.as_deref().is_none_or(|n| {
            [&track.name, &track.layout, &track.game_id]
                .iter()
                .any(|s| s.to_lowercase().contains(n))
        });
        if !found {
            continue;
        }
        let drivers = rank_counts::total(ports, &BoardId::track(&track.id)).await?;
        if drivers > 0 {
            out.push(TrackBoard { track, drivers });
        }
    }
    Ok((out, next))
}

/// `user_id`'s best on every board, fastest board first by track name; `None` when the
/// driver does not exist or deleted the account.
pub(crate) async fn driver_bests(
    ports: &Ports,
    user_id: &UserId,
) -> Result<Option<(crate::identity::users::User, Vec<DriverBest>)>, StoreError> {
    let Some(user) = crate::identity::users::get(ports, user_id).await? else {
        return Ok(None);
    };
    let mut bests = Vec::new();
    // The track boards only: a car's board repeats a best of the same track.
    let boards = renames::boards_of(ports, user_id).await?;
    for board in boards.iter().filter(|b| b.vehicle.is_none()) {
        let Some((entry, total)) = board_reads::entry(ports, board, user_id).await? else {
            continue;
        };
        let Some(track) = tracks::get(ports, &board.track).await? else {
            continue;
        };
        bests.push(DriverBest {
            track,
            rank: entry.rank,
            total: total.max(entry.rank),
            row: entry.row,
        });
    }
    bests.sort_by(|a, b| {
        (a.track.name.to_lowercase(), &a.track.layout)
            .cmp(&(b.track.name.to_lowercase(), &b.track.layout))
    });
    Ok(Some((user, bests)))
}
