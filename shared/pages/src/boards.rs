//! The public leaderboard pages (HTML): `/boards`, `/boards/{trackId}`, `/drivers/{userId}`,
//! and the board's and the driver's link previews.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::HeaderMap;
use http::request::Parts;
use utoipa::IntoParams;

use crate::page::{BadParameter, MAX_CURSOR, PAGE_SIZE, Page, PngBytes, link_preview, parameters};
use board_pages::{charts, preview, reads, render};
use paddock_core::ids::{TrackId, UserId};
use paddock_core::leaderboards::board::{BoardId, BoardScope};
use paddock_core::leaderboards::cache::{DriverPageKey, PreviewKey, RenderedPage};
use paddock_core::leaderboards::reads as board_reads;
use paddock_core::leaderboards::spread::Spread;
use paddock_core::ports::items::StoreError;
use paddock_http::http::{ApiError, MalformedId, PathId};
use paddock_http::registry::{Routes, operations};
use paddock_http::state::AppState;

/// Tracks read per `/boards` page.
const TRACKS_PER_PAGE: usize = 50;
/// Longest search or car name accepted.
const MAX_TEXT: usize = 100;
/// Longest car name accepted: as long as an upload's `vehicleName` may be.
const MAX_CAR: usize = 128;

/// The board and driver pages' routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(boards))
        .operations(operations!(board))
        .operations(operations!(board_preview))
        .operations(operations!(driver))
        .operations(operations!(driver_preview))
}

/// `/boards` query (read by [`parameters`], which answers a page naming a bad one rather
/// than the API's envelope).
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct BoardsQuery {
    /// Only tracks whose name, layout or game holds this (case-insensitive).
    #[param(max_length = 100)]
    pub q: Option<String>,
    /// The next-page link's cursor.
    #[param(max_length = 512)]
    pub cursor: Option<String>,
}

/// `/boards/{trackId}` query (read by [`parameters`]).
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct BoardQuery {
    /// Only laps set in this car (case-insensitive): the car's own board.
    #[param(max_length = 128)]
    pub car: Option<String>,
    /// The next-page link's cursor.
    #[param(max_length = 512)]
    pub cursor: Option<String>,
    /// A driver to mark on the spread of lap times (their bar and percentile), by user id.
    #[param(max_length = 36)]
    pub driver: Option<String>,
}

/// The board a page shows: the track's, or the car's when `?car=` names one.
fn board_of(track_id: TrackId, car: Option<&str>) -> BoardId {
    match car {
        Some(car) => BoardId::car(&track_id, car),
        None => BoardId::track(&track_id),
    }
}

/// The tracks with boards. Public; cached like the API's boards.
#[utoipa::path(get, path = "/boards", operation_id = "getBoardsPage", tag = "pages", params(BoardsQuery),
    responses((status = 200, description = "The tracks with boards (HTML)", content_type = "text/html", body = String),
              (status = 304, description = "The page matches `If-None-Match`"),
              (status = 400, description = "A parameter breaks a rule (HTML naming it)", content_type = "text/html", body = String)))]
pub(crate) async fn boards(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let BoardsQuery { q: search, cursor } =
        match parameters(raw.as_deref(), [("q", MAX_TEXT), ("cursor", MAX_CURSOR)]) {
            Ok([q, cursor]) => BoardsQuery { q, cursor },
            Err(BadParameter(rule)) => return Ok(page.bad_request(&rule)),
        };
    let listed = reads::boards(
        &state.ports,
        search.as_deref(),
        TRACKS_PER_PAGE,
        cursor.clone(),
    )
    .await;
    let (tracks, next) = match listed {
        Ok(listed) => listed,
        Err(StoreError::InvalidCursor) => {
            return Ok(page.bad_request("cursor: is not a cursor this page linked to"));
        }
        Err(e) => return Err(e.into()),
    };
    let html = render::boards(
        page.public_url(),
        &tracks,
        search.as_deref(),
        next.as_deref(),
    );
    Ok(page.ok(html))
}

/// One page of a track's board (25 rows), optionally one car's. Public; cached like the API.
#[utoipa::path(get, path = "/boards/{trackId}", operation_id = "getBoardPage", tag = "pages",
    params(("trackId" = String, Path, description = "The track id"), BoardQuery),
    responses((status = 200, description = "The board page (HTML)", content_type = "text/html", body = String),
              (status = 304, description = "The page matches `If-None-Match`"),
              (status = 400, description = "A parameter breaks a rule (HTML naming it)", content_type = "text/html", body = String),
              (status = 404, description = "No such track, or no laps in the `car` asked for (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn board(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathId { id: track_id, .. }: PathId<TrackId, NoBoard>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let BoardQuery {
        car,
        cursor,
        driver,
    } = match parameters(
        raw.as_deref(),
        [("car", MAX_CAR), ("cursor", MAX_CURSOR), ("driver", 36)],
    ) {
        Ok([car, cursor, driver]) => BoardQuery {
            car,
            cursor,
            driver,
        },
        Err(BadParameter(rule)) => return Ok(page.bad_request(&rule)),
    };
    let driver = match driver.as_deref().map(str::parse::<UserId>) {
        None => None,
        Some(Ok(driver)) => Some(driver),
        Some(Err(_)) => return Ok(page.bad_request("driver: must be a driver's user id")),
    };
    let after = match cursor.as_deref() {
        None => None,
        Some(c) => match board_reads::decode_cursor(c) {
            Some(after) => Some(after),
            None => return Ok(page.bad_request("cursor: is not a cursor this page linked to")),
        },
    };
    let board_id = board_of(track_id, car.as_deref());
    let Some(mut board) = reads::board_page(
        &state.ports,
        &board_id,
        after.as_deref(),
        PAGE_SIZE,
        driver.as_ref(),
    )
    .await?
    else {
        return Ok(page.not_found("No such board", "Nobody has raced this track yet."));
    };
    // A car's page is titled with the car's name as stored, never with the query's text: a
    // car without entries has no page, so a link cannot make one say what it likes.
    let car = match (&board_id.scope, &board.car_name) {
        (BoardScope::Track | BoardScope::Event(_), _) => None,
        (BoardScope::Car(_), Some(name)) => Some(name.clone()),
        (BoardScope::Car(_), None) => {
            return Ok(page.not_found(
                "No such board",
                "Nobody has raced this car on this track yet.",
            ));
        }
    };
    for ranked in &mut board.rows {
        ranked.row.avatar_url = page.avatar(ranked.row.avatar_url.take());
    }
    let html = render::board(page.public_url(), &board, car.as_deref(), after.is_none());
    Ok(page.ok(html))
}

/// `/boards/{trackId}/preview.png` query (read by [`parameters`]).
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PreviewQuery {
    /// The car's board instead of the track's (case-insensitive).
    #[param(max_length = 128)]
    pub car: Option<String>,
}

/// The board's link preview (`og:image`): a PNG of its three fastest laps and the spread of
/// its lap times. Public; cached like the board pages (`Cache-Control`, `ETag`) and kept in
/// the leaderboard cache, drawn again after the cache lifetime or a new best on the track.
/// Only `car` is read: any other query parameter (a link's tracking tags) is ignored and
/// makes no other picture.
#[utoipa::path(get, path = "/boards/{trackId}/preview.png", operation_id = "getBoardPreview", tag = "pages",
    params(("trackId" = String, Path, description = "The track id"), PreviewQuery),
    responses((status = 200, description = "The preview", content_type = "image/png", body = inline(PngBytes)),
              (status = 304, description = "The picture matches `If-None-Match`"),
              (status = 400, description = "A parameter breaks a rule (HTML naming it)", content_type = "text/html", body = String),
              (status = 404, description = "No such board (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn board_preview(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathId { id: track_id, .. }: PathId<TrackId, NoBoard>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let PreviewQuery { car } = match parameters(raw.as_deref(), [("car", MAX_CAR)]) {
        Ok([car]) => PreviewQuery { car },
        Err(BadParameter(rule)) => return Ok(page.bad_request(&rule)),
    };
    let board_id = board_of(track_id, car.as_deref());
    let key = PreviewKey::Board(board_id.clone());
    let read = reads::preview(&state.ports, &board_id);
    let draw =
        |(top, spread): (Vec<i64>, Spread)| preview::png(&top, &spread.bars(charts::MAX_BARS));
    Ok(
        match link_preview(&state, key, "board", read, draw).await? {
            Some(png) => page.png(png),
            None => page.not_found("No such board", "Nobody has raced this board yet."),
        },
    )
}

/// `/drivers/{userId}` query (read by [`parameters`]).
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DriverQuery {
    /// The next-page link's cursor.
    #[param(max_length = 512)]
    pub cursor: Option<String>,
}

/// A page of a driver's best laps, one per track (25 tracks). Public; cached like the boards;
/// a deleted driver is gone (404).
#[utoipa::path(get, path = "/drivers/{userId}", operation_id = "getDriverPage", tag = "pages",
    params(("userId" = String, Path, description = "The driver's user id"), DriverQuery),
    responses((status = 200, description = "The driver's bests (HTML)", content_type = "text/html", body = String),
              (status = 304, description = "The page matches `If-None-Match`"),
              (status = 400, description = "A parameter breaks a rule (HTML naming it)", content_type = "text/html", body = String),
              (status = 404, description = "No such driver (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn driver(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathId { id: user_id, .. }: PathId<UserId, NoDriver>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let DriverQuery { cursor } = match parameters(raw.as_deref(), [("cursor", MAX_CURSOR)]) {
        Ok([cursor]) => DriverQuery { cursor },
        Err(BadParameter(rule)) => return Ok(page.bad_request(&rule)),
    };
    let key = DriverPageKey {
        user_id,
        after: cursor,
    };
    let (page_ref, ports) = (&page, &state.ports);
    let load = |key: DriverPageKey| async move {
        let read =
            reads::driver_bests(ports, &key.user_id, key.after.as_deref(), PAGE_SIZE).await?;
        Ok::<_, StoreError>(read.map(|mut bests| {
            bests.user.avatar_url = page_ref.avatar(bests.user.avatar_url.take());
            let html = render::driver(page_ref.public_url(), &bests, key.after.is_none());
            RenderedPage::with_etag(html.into_bytes())
        }))
    };
    let cached = state
        .leaderboards
        .driver_page(key, |key| async move {
            // A missing driver is cached as an empty body (answered 404 below).
            Ok::<_, StoreError>(
                load(key)
                    .await?
                    .unwrap_or_else(|| RenderedPage::with_etag(Vec::new())),
            )
        })
        .await;
    match cached {
        Ok(rendered) if rendered.body.is_empty() => Ok(page.no_driver()),
        Ok(rendered) => Ok(page.rendered(rendered)),
        Err(StoreError::InvalidCursor) => {
            Ok(page.bad_request("cursor: is not a cursor this page linked to"))
        }
        Err(e) => Err(e.into()),
    }
}

/// The driver's link preview (`og:image`): a PNG of their rank and lap on their first three
/// boards and their progress on the first. Public; cached like the driver page
/// (`Cache-Control`, `ETag`) and kept in the leaderboard cache, drawn again after the cache
/// lifetime, the driver's new best or a change of their name. It takes no query parameter:
/// one given is ignored and makes no other picture.
#[utoipa::path(get, path = "/drivers/{userId}/preview.png", operation_id = "getDriverPreview", tag = "pages",
    params(("userId" = String, Path, description = "The driver's user id")),
    responses((status = 200, description = "The preview", content_type = "image/png", body = inline(PngBytes)),
              (status = 304, description = "The picture matches `If-None-Match`"),
              (status = 404, description = "No such driver (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn driver_preview(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathId { id: user_id, .. }: PathId<UserId, NoDriver>,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let key = PreviewKey::Driver(user_id.clone());
    let read = reads::driver_bests(&state.ports, &user_id, None, 3);
    let draw = |read: reads::DriverPage| {
        let boards: Vec<(u64, i64)> = read
            .bests
            .iter()
            .map(|b| (b.rank, b.row.lap_time_ms))
            .collect();
        let progress: Vec<i64> = read
            .bests
            .iter()
            .find(|b| b.progress.len() >= 2)
            .map(|b| b.progress.iter().map(|p| p.lap_time_ms).collect())
            .unwrap_or_default();
        preview::driver_png(&boards, &progress)
    };
    Ok(
        match link_preview(&state, key, "driver", read, draw).await? {
            Some(png) => page.png(png),
            None => page.no_driver(),
        },
    )
}

/// A malformed track id in a board's address names no board: its HTML 404.
pub(crate) struct NoBoard;

impl MalformedId<AppState> for NoBoard {
    fn answer(parts: &Parts, state: &AppState) -> Response {
        Page::new(state, &parts.headers).no_board()
    }
}

/// A malformed user id in a driver's address names no driver: its HTML 404.
pub(crate) struct NoDriver;

impl MalformedId<AppState> for NoDriver {
    fn answer(parts: &Parts, state: &AppState) -> Response {
        Page::new(state, &parts.headers).no_driver()
    }
}
