//! What the pages show, read through the same board reads as `GET /v1/leaderboards`.
//!
//! Each function answers one page's worth of data: a board page is the API's page of the
//! same board (same ranks, same cursor), a driver's page reads the driver's board index and
//! one entry per board, and the tracks page reads a page of tracks.

use crate::ids::{TrackId, UserId};
use crate::leaderboards::board::{Row, StoredRow, entry_key};
use crate::leaderboards::cache::{self, PageKey};
use crate::leaderboards::{Board, renames};
use crate::ports::Ports;
use crate::ports::items::StoreError;
use crate::tables::Table;
use crate::tracks::{self, Track};

/// One ranked row of a page.
#[derive(Debug, Clone)]
pub(crate) struct Ranked {
    /// 1 is fastest.
    pub rank: usize,
    /// The entry.
    pub row: Row,
}

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
    pub total: usize,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// The cars with entries on the track, with their entry counts (for the car selector).
    pub vehicles: Vec<(String, usize)>,
}

/// A track that has a board, with its number of drivers.
#[derive(Debug, Clone)]
pub(crate) struct TrackBoard {
    /// The track.
    pub track: Track,
    /// Drivers on its board.
    pub drivers: usize,
}

/// A driver's best on one board.
#[derive(Debug, Clone)]
pub(crate) struct DriverBest {
    /// The board's track.
    pub track: Track,
    /// The driver's entry.
    pub row: Row,
    /// Its rank.
    pub rank: usize,
    /// Entries on the board.
    pub total: usize,
}

/// The board page `key` of `track_id`; `None` for a track nobody raced.
pub(crate) async fn board_page(
    ports: &Ports,
    track_id: &TrackId,
    key: &PageKey,
) -> Result<Option<BoardPage>, StoreError> {
    let Some(track) = tracks::get(ports, track_id).await? else {
        return Ok(None);
    };
    let board = Board::load(ports, track_id).await?;
    let matches = |r: &&Row| {
        key.vehicle
            .as_deref()
            .is_none_or(|v| r.vehicle_name.to_lowercase() == v)
    };
    let on_board: Vec<&Row> = board.rows.iter().filter(matches).collect();
    let rows: Vec<Ranked> = on_board
        .iter()
        .enumerate()
        .skip(key.offset)
        .take(key.limit)
        .map(|(i, row)| Ranked {
            rank: i + 1,
            row: (*row).clone(),
        })
        .collect();
    let end = key.offset + rows.len();
    Ok(Some(BoardPage {
        track,
        first_ms: on_board.first().map(|r| r.lap_time_ms),
        total: on_board.len(),
        next_cursor: (end < on_board.len()).then(|| cache::encode_cursor(end)),
        rows,
        vehicles: vehicles(&board),
    }))
}

/// The cars on `board` with their entry counts, most entries first (names as first seen,
/// grouped case-insensitively, as the filter matches them).
fn vehicles(board: &Board) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for row in &board.rows {
        let folded = row.vehicle_name.to_lowercase();
        if let Some(&i) = at.get(&folded) {
            counts[i].1 += 1;
        } else {
            at.insert(folded, counts.len());
            counts.push((row.vehicle_name.clone(), 1));
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
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
        let drivers = Board::load(ports, &track.id).await?.rows.len();
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
    for track_id in renames::boards_of(ports, user_id).await? {
        let Some(entry) = ports
            .items
            .get(Table::Leaderboards, &entry_key(&track_id, user_id))
            .await?
        else {
            continue;
        };
        let row = StoredRow::from_item(entry)?.row;
        let Some(track) = tracks::get(ports, &track_id).await? else {
            continue;
        };
        let board = Board::load(ports, &track_id).await?;
        let Some(rank) = board.rank_of(user_id) else {
            continue;
        };
        bests.push(DriverBest {
            track,
            row,
            rank,
            total: board.rows.len(),
        });
    }
    bests.sort_by(|a, b| {
        (a.track.name.to_lowercase(), &a.track.layout)
            .cmp(&(b.track.name.to_lowercase(), &b.track.layout))
    });
    Ok(Some((user, bests)))
}
