//! The public events' pages (HTML): `/events`, `/events/{eventId}` and the event's link
//! preview. A league's event is not public: its page answers 404 as an unknown one does (its
//! members read it through the API).

use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::HeaderMap;
use http::request::Parts;
use utoipa::IntoParams;

use crate::page::{BadParameter, MAX_CURSOR, PAGE_SIZE, Page, PngBytes, link_preview, parameters};
use board_pages::{charts, event_reads, preview, render};
use paddock_core::ids::EventId;
use paddock_core::leaderboards::cache::PreviewKey;
use paddock_core::leaderboards::reads as board_reads;
use paddock_core::leaderboards::spread::Spread;
use paddock_http::http::{ApiError, MalformedId, PathId};
use paddock_http::registry::{Routes, operations};
use paddock_http::state::AppState;

/// The events pages' routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(events))
        .operations(operations!(event))
        .operations(operations!(event_preview))
}

/// The time of the answer, in milliseconds since the epoch (the pages write times left
/// from it).
fn now_ms(state: &AppState) -> i64 {
    paddock_core::ports::clock::unix_ms(state.ports.clock.now())
}

/// The public events: open now, coming up (in the order they close) and the ten latest
/// finished, each with its time left written by the server. Public; cached like the boards.
#[utoipa::path(get, path = "/events", operation_id = "getEventsPage", tag = "pages",
    responses((status = 200, description = "The public events (HTML)", content_type = "text/html", body = String),
              (status = 304, description = "The page matches `If-None-Match`")))]
pub(crate) async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let listed = event_reads::public_events(&state.ports).await?;
    let html = render::events::events(page.public_url(), &listed, now_ms(&state));
    Ok(page.ok(html))
}

/// `/events/{eventId}` query (read by [`parameters`]).
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventQuery {
    /// The next-page link's cursor.
    #[param(max_length = 512)]
    pub cursor: Option<String>,
}

/// A public event with one page of its standings (25 entrants), the spread of its lap times
/// and its time left; frozen once it has finished. Public; cached like the boards. A league's
/// event answers 404, as an unknown one does.
#[utoipa::path(get, path = "/events/{eventId}", operation_id = "getEventPage", tag = "pages",
    params(("eventId" = String, Path, description = "The event's id"), EventQuery),
    responses((status = 200, description = "The event and its standings (HTML)", content_type = "text/html", body = String),
              (status = 304, description = "The page matches `If-None-Match`"),
              (status = 400, description = "A parameter breaks a rule (HTML naming it)", content_type = "text/html", body = String),
              (status = 404, description = "No such public event (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn event(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathId { id, .. }: PathId<EventId, NoEvent>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let EventQuery { cursor } = match parameters(raw.as_deref(), [("cursor", MAX_CURSOR)]) {
        Ok([cursor]) => EventQuery { cursor },
        Err(BadParameter(rule)) => return Ok(page.bad_request(&rule)),
    };
    let after = match cursor.as_deref() {
        None => None,
        Some(c) => match board_reads::decode_cursor(c) {
            Some(after) => Some(after),
            None => return Ok(page.bad_request("cursor: is not a cursor this page linked to")),
        },
    };
    let read = event_reads::event_page(&state.ports, &id, after.as_deref(), PAGE_SIZE).await?;
    let Some(mut standings) = read else {
        return Ok(page.no_event());
    };
    for ranked in &mut standings.rows {
        ranked.row.avatar_url = page.avatar(ranked.row.avatar_url.take());
    }
    let html = render::events::event(
        page.public_url(),
        &standings,
        now_ms(&state),
        after.is_none(),
    );
    Ok(page.ok(html))
}

/// The event's link preview (`og:image`): a PNG of its three fastest laps and the spread of
/// its lap times. Public; cached like the pages and kept in the leaderboard cache for its
/// lifetime. It takes no query parameter: one given is ignored.
#[utoipa::path(get, path = "/events/{eventId}/preview.png", operation_id = "getEventPreview", tag = "pages",
    params(("eventId" = String, Path, description = "The event's id")),
    responses((status = 200, description = "The preview", content_type = "image/png", body = inline(PngBytes)),
              (status = 304, description = "The picture matches `If-None-Match`"),
              (status = 404, description = "No such public event, or no laps in it yet (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn event_preview(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathId { id, .. }: PathId<EventId, NoEvent>,
) -> Result<Response, ApiError> {
    let page = Page::new(&state, &headers);
    let key = PreviewKey::Event(id.clone());
    let read = event_reads::event_preview(&state.ports, &id);
    let draw =
        |(top, spread): (Vec<i64>, Spread)| preview::png(&top, &spread.bars(charts::MAX_BARS));
    Ok(
        match link_preview(&state, key, "event", read, draw).await? {
            Some(png) => page.png(png),
            None => page.no_event(),
        },
    )
}

/// A malformed event id in an event's address names no event: its HTML 404.
pub(crate) struct NoEvent;

impl MalformedId<AppState> for NoEvent {
    fn answer(parts: &Parts, state: &AppState) -> Response {
        Page::new(state, &parts.headers).no_event()
    }
}
