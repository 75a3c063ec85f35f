//! What the public events' pages show: the public events, and one public event with a page of
//! its standings read as `GET /v1/events/{id}/standings` reads them. A league's event is not
//! public: it reads as no event at all.

use paddock_boards::leaderboards::board::BoardId;
use paddock_boards::leaderboards::reads::{self as board_reads, Ranked};
use paddock_boards::leaderboards::spread::Spread;
use paddock_competitions::events::{self, Event, EventError, Host};
use paddock_kernel::ids::EventId;
use paddock_kernel::ports::Ports;

/// Finished public events the events page lists after those not yet finished.
pub const FINISHED_LISTED: usize = 10;

/// A public event and a page of its standings.
#[derive(Debug, Clone)]
pub struct EventPage {
    /// The event, as it stands at the time of the read.
    pub event: Event,
    /// The rows of this page, fastest first.
    pub rows: Vec<Ranked>,
    /// The fastest lap of the standings (for gaps), if anyone has one.
    pub first_ms: Option<i64>,
    /// Entrants.
    pub total: u64,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// The spread of the entrants' lap times (from the standings' count items).
    pub spread: Spread,
}

/// The public events: those not yet finished in the order they close, then the latest
/// finished.
pub async fn public_events(ports: &Ports) -> Result<Vec<Event>, EventError> {
    events::list(ports, None, &Host::Public, FINISHED_LISTED).await
}

/// Public event `id` with the page of its standings after position `after` (`limit` rows);
/// `None` when there is no such public event. The event is read first (its track names the
/// standings), then the page, its fastest row (for a later page) and the spread at once.
pub async fn event_page(
    ports: &Ports,
    id: &EventId,
    after: Option<&str>,
    limit: usize,
) -> Result<Option<EventPage>, EventError> {
    let event = match events::get(ports, None, id).await {
        Ok(event) => event,
        Err(EventError::NotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    let board = BoardId::event(&event.track_id, id);
    let (slice, fastest, spread) = futures::try_join!(
        board_reads::page(ports, &board, after, limit),
        async {
            match after {
                Some(_) => board_reads::fastest(ports, &board).await,
                None => Ok(None),
            }
        },
        Spread::read(ports, &board)
    )?;
    let first_ms = match slice.rows.first() {
        Some(r) if r.rank == 1 => Some(r.row.lap_time_ms),
        _ => fastest.map(|r| r.lap_time_ms),
    };
    Ok(Some(EventPage {
        event,
        first_ms,
        total: slice.total,
        next_cursor: slice.next_after.as_deref().map(board_reads::encode_cursor),
        rows: slice.rows,
        spread,
    }))
}

/// The standings of public event `id` as its link preview draws them (its three fastest laps
/// and its spread); `None` when there is no such public event or nobody has a lap in it yet.
pub async fn event_preview(
    ports: &Ports,
    id: &EventId,
) -> Result<Option<(Vec<i64>, Spread)>, EventError> {
    let event = match events::get(ports, None, id).await {
        Ok(event) => event,
        Err(EventError::NotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    let board = BoardId::event(&event.track_id, id);
    Ok(crate::reads::preview(ports, &board).await?)
}
