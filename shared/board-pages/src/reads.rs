//! What the pages show, read through the same board reads as `GET /v1/leaderboards`.
//!
//! Each function answers one page's worth of data: a board page is the API's page of the
//! same board (same ranks, same cursor) with the track's most-driven listed cars, a driver's
//! page reads a page of the driver's track index and one entry per track, and the tracks page
//! reads a page of tracks.

use paddock_boards::leaderboards::board::{BoardId, BoardScope, Row, TRACK_INDEX_PREFIX};
use paddock_boards::leaderboards::lap_history::{self, LapPoint};
use paddock_boards::leaderboards::reads as board_reads;
use paddock_boards::leaderboards::spread::Spread;
use paddock_boards::leaderboards::{rank_counts, vehicles};
use paddock_driving::tracks::{self, Track, maps};
use paddock_kernel::ids::TrackId;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Query, SK, StoreError, decode_cursor, encode_cursor};
use paddock_kernel::tables::Table;

/// The cars a board page offers in its selector: the most-driven listed ones.
const CARS_SHOWN: usize = 30;

pub use paddock_boards::leaderboards::reads::Ranked;

/// A page of a board (the track board, or one car's).
#[derive(Debug, Clone)]
pub struct BoardPage {
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
    /// The track's most-driven listed cars, with their drivers (for the car selector).
    pub vehicles: Vec<(String, u64)>,
    /// For a car's board, the car's name as stored (`None`: nobody raced it).
    pub car_name: Option<String>,
    /// The spread of the board's lap times (from its count items).
    pub spread: Spread,
    /// The entry of the driver a shared link marks (`?driver=`), when on this board.
    pub marked: Option<Ranked>,
    /// The track's centreline map as SVG (as `/v1/tracks/{id}/map?format=svg` serves it),
    /// when one has been built.
    pub map_svg: Option<String>,
}

/// A track that has a board, with its number of drivers.
#[derive(Debug, Clone)]
pub struct TrackBoard {
    /// The track.
    pub track: Track,
    /// Drivers on its board.
    pub drivers: u64,
}

/// A driver's best on one board.
#[derive(Debug, Clone)]
pub struct DriverBest {
    /// The board's track.
    pub track: Track,
    /// The driver's entry.
    pub row: Row,
    /// Its rank.
    pub rank: u64,
    /// Entries on the board.
    pub total: u64,
    /// The fastest submitted lap of each of the driver's latest sessions on the track, oldest
    /// first.
    pub progress: Vec<LapPoint>,
}

/// The page of `board` after position `after` (`limit` rows); `None` for a track nobody
/// raced. Reads what `GET /v1/leaderboards` reads for the page, the board's fastest row, the
/// track's cars, the spread of the board's lap times (its count items) and, when a link
/// marks a driver, the driver's entry.
pub async fn board_page(
    ports: &Ports,
    board: &BoardId,
    after: Option<&str>,
    limit: usize,
    driver: Option<&UserId>,
) -> Result<Option<BoardPage>, StoreError> {
    // Nothing here depends on anything else read here: one round trip for all of it. The
    // fastest row is read only for a later page (the first page starts with it).
    let ((track, slice, fastest, (listed, car)), (spread, marked)) =
        futures::try_join!(board_rows(ports, board, after, limit), async {
            futures::try_join!(Spread::read(ports, board), async {
                match driver {
                    Some(user) => board_reads::entry(ports, board, user).await,
                    None => Ok(None),
                }
            })
        })?;
    let Some(track) = track else {
        return Ok(None);
    };
    let first_ms = match slice.rows.first() {
        Some(r) if r.rank == 1 => Some(r.row.lap_time_ms),
        _ => fastest.map(|r| r.lap_time_ms),
    };
    let vehicles = listed
        .items
        .into_iter()
        .map(|v| (v.vehicle_name, v.total_entries))
        .collect();
    let map_svg = if track.has_map {
        track_map_svg(ports, &track.id).await
    } else {
        None
    };
    Ok(Some(BoardPage {
        map_svg,
        track,
        first_ms,
        total: slice.total,
        next_cursor: slice.next_after.as_deref().map(board_reads::encode_cursor),
        rows: slice.rows,
        vehicles,
        car_name: car,
        spread,
        marked: marked.map(|(ranked, _)| ranked),
    }))
}

/// The track's map as SVG, or nothing: the map is a picture beside the board, and a page
/// whose map cannot be read is shown without it.
async fn track_map_svg(ports: &Ports, track: &TrackId) -> Option<String> {
    match maps::current(ports, track).await {
        Ok(map) => map.filter(|m| m.points.len() > 1).map(|m| maps::svg(&m)),
        Err(e) => {
            tracing::warn!(error = %e, track = %track, "the board page's track map could not be read");
            None
        }
    }
}

/// What a board page reads besides its pictures: the track, the page of rows, the fastest
/// row for a later page, the listed cars and the car's name.
#[allow(clippy::type_complexity)]
async fn board_rows(
    ports: &Ports,
    board: &BoardId,
    after: Option<&str>,
    limit: usize,
) -> Result<
    (
        Option<Track>,
        board_reads::Slice,
        Option<Row>,
        (vehicles::VehiclePage, Option<String>),
    ),
    StoreError,
> {
    futures::try_join!(
        tracks::get(ports, &board.track),
        board_reads::page(ports, board, after, limit),
        async {
            match after {
                Some(_) => board_reads::fastest(ports, board).await,
                None => Ok(None),
            }
        },
        async {
            futures::try_join!(
                vehicles::list(ports, &board.track, CARS_SHOWN, None),
                async {
                    match &board.scope {
                        BoardScope::Car(car) => vehicles::read_count(ports, &board.track, car)
                            .await
                            .map(|c| (c.drivers > 0).then_some(c.vehicle_name)),
                        BoardScope::Track | BoardScope::Event(_) => Ok(None),
                    }
                }
            )
        }
    )
}

/// What a board's link preview shows: its three fastest laps and its spread; `None` for a
/// board without entries. Reads the first three rows and the count items, at once.
pub async fn preview(
    ports: &Ports,
    board: &BoardId,
) -> Result<Option<(Vec<i64>, Spread)>, StoreError> {
    let (slice, spread) = futures::try_join!(
        board_reads::page(ports, board, None, 3),
        Spread::read(ports, board)
    )?;
    if slice.rows.is_empty() {
        return Ok(None);
    }
    let top = slice.rows.iter().map(|r| r.row.lap_time_ms).collect();
    Ok(Some((top, spread)))
}

/// Tracks with a board, a page of the tracks list at a time, with the ones whose name, layout
/// or game holds `search` (case-insensitive) only.
pub async fn boards(
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

/// A page of a driver's bests.
#[derive(Debug, Clone)]
pub struct DriverPage {
    /// The driver.
    pub user: paddock_identity::identity::users::User,
    /// The driver's best on each track of this page.
    pub bests: Vec<DriverBest>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// A page of `user_id`'s bests on track boards (`limit` tracks at most, after `cursor`), in
/// the order of the driver's track index; `None` when the driver does not exist or deleted the
/// account. Reads the profile, a page of the track index, then each track's entry, rank,
/// track and latest submitted laps at once: the same items however many boards the driver
/// is on, and however many laps they submitted.
pub async fn driver_bests(
    ports: &Ports,
    user_id: &UserId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Option<DriverPage>, StoreError> {
    let after = match cursor {
        Some(c) => {
            let sk = decode_cursor(c)?;
            if !sk.starts_with(TRACK_INDEX_PREFIX) {
                return Err(StoreError::InvalidCursor);
            }
            Some(encode_cursor(&sk))
        }
        None => None,
    };
    let index = Query::partition(Table::Leaderboards, format!("USER#{user_id}"))
        .begins_with(TRACK_INDEX_PREFIX)
        .limit(limit)
        .after(after);
    let (user, page) = futures::try_join!(
        paddock_identity::identity::users::get(ports, user_id),
        ports.items.query(index)
    )?;
    let Some(user) = user else {
        return Ok(None);
    };
    let tracks = page.items.iter().filter_map(|item| {
        let sk = item.get(SK)?.as_str()?;
        sk.strip_prefix(TRACK_INDEX_PREFIX)?.parse::<TrackId>().ok()
    });
    let bests = futures::future::try_join_all(tracks.map(|track_id| async move {
        let board = BoardId::track(&track_id);
        let (entry, track, progress) = futures::try_join!(
            board_reads::entry(ports, &board, user_id),
            tracks::get(ports, &track_id),
            lap_history::latest(ports, user_id, &track_id)
        )?;
        Ok::<_, StoreError>(entry.zip(track).map(|((entry, total), track)| DriverBest {
            track,
            rank: entry.rank,
            total: total.max(entry.rank),
            row: entry.row,
            progress,
        }))
    }))
    .await?;
    Ok(Some(DriverPage {
        user,
        bests: bests.into_iter().flatten().collect(),
        next_cursor: page.next_cursor.filter(|_| page.items.len() == limit),
    }))
}
