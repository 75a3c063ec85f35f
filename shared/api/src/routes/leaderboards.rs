//! `/v1/leaderboards`: ranked best laps (public, cached) and submissions; the group also
//! serves the public pages (`paddock-pages`).

use crate::routes::registry::{Routes, operations};
use axum::extract::{FromRequestParts, State};
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelopes::envelope;
use crate::http::auth_user::{Admitted, Caller, Deferred, RateLimitSlot, scope};
use crate::http::{ApiError, ApiJson, ApiQuery, conditional, json_bytes, ok};
use crate::routes::leaderboard_answers::{LeaderboardEntry, LeaderboardPage, rendered};
use crate::routes::paging;
use crate::state::AppState;
use paddock_core::competition_events::OpenEvents;
use paddock_core::ids::TrackId;
use paddock_core::leaderboards::board::BoardId;
use paddock_core::leaderboards::cache::{PageError, PageKey, RenderedPage};
use paddock_core::leaderboards::reads;
use paddock_core::leaderboards::submit_lap::{self, SubmitLap};
use paddock_core::leaderboards::vehicles::VehicleBoard;
use paddock_core::tracks::{self, Track, TrackKey};

/// The leaderboards routes.
pub fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(leaderboard))
        .operations(operations!(my_standing))
        .operations(operations!(vehicles))
        .operations(operations!(submit_lap))
        .merge(pages::routes())
}

/// Which board, and which page of it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct LeaderboardQuery {
    /// The track id (or give gameId, trackName and trackLayout).
    pub track_id: Option<String>,
    /// The game, e.g. `acc`.
    pub game_id: Option<String>,
    /// The track as the game names it.
    pub track_name: Option<String>,
    /// Empty or absent for tracks without layouts.
    pub track_layout: Option<String>,
    /// The car's board: each driver's best in this car (names match case-insensitively).
    pub vehicle_name: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `nextCursor` of the previous page (a position in the rank order).
    pub cursor: Option<String>,
    /// `me`: the page centred on the caller's entry (bearer token required; no cursor).
    #[param(value_type = Option<String>, pattern = "^me$")]
    pub around: Option<String>,
}

fn nonempty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// How a board read named its track.
enum Named {
    /// By id: an unknown id is not found.
    Id,
    /// By game, name and layout: a track not raced yet has an empty board.
    Key(TrackKey),
}

fn track_of(q: &LeaderboardQuery) -> Result<(TrackId, Named), ApiError> {
    match (
        nonempty(&q.track_id),
        nonempty(&q.game_id),
        nonempty(&q.track_name),
    ) {
        (Some(id), _, _) => Ok((track_id_param(id)?, Named::Id)),
        (None, Some(game), Some(name)) => {
            let key = TrackKey::new(game, name, q.track_layout.as_deref().unwrap_or_default());
            Ok((key.id(), Named::Key(key)))
        }
        _ => Err(ApiError::invalid(
            "trackId",
            "is required (or gameId and trackName, with trackLayout when the track has layouts)",
        )),
    }
}

pub(super) fn track_id_param(id: &str) -> Result<TrackId, ApiError> {
    id.trim()
        .parse()
        .map_err(|_| ApiError::invalid("trackId", "must be a track id (UUID)"))
}

fn board_of(track_id: &TrackId, vehicle_name: &Option<String>) -> Result<BoardId, ApiError> {
    match nonempty(vehicle_name) {
        None => Ok(BoardId::track(track_id)),
        Some(v) if v.chars().count() > 128 => Err(ApiError::invalid(
            "vehicleName",
            "must be at most 128 characters",
        )),
        Some(v) => Ok(BoardId::car(track_id, v)),
    }
}

/// The track of a board read: stored, or (named by game and name) not raced yet.
async fn track_for(
    state: &AppState,
    track_id: &TrackId,
    named: &Named,
) -> Result<Track, PageError> {
    match tracks::get(&state.ports, track_id).await? {
        Some(track) => Ok(track),
        None => match named {
            Named::Key(key) => Ok(Track::empty(key)),
            Named::Id => Err(PageError::TrackNotFound),
        },
    }
}

/// Ranked best laps of a track, or of one car on it. Public; cached in the process for a
/// few seconds, with `Cache-Control` and `ETag` (send `If-None-Match` for a 304). With
/// `around=me` (token required), the page centred on the caller, not cached. A track named
/// by gameId and trackName that nobody has raced yet (or a misspelt name) has an empty board
/// and `track.sessionCount` 0; its `track.id` answers 404 until its first session.
#[utoipa::path(get, path = "/v1/leaderboards", operation_id = "getLeaderboard", tag = "leaderboards", params(LeaderboardQuery),
    security((), ("bearer" = ["boards:read"])),
    responses((status = 200, description = "One page of the board", body = LeaderboardEnvelope),
              (status = 304, description = "The page matches `If-None-Match`"),
              (status = 400, description = "No track given, or a bad limit, cursor or around"),
              (status = 401, description = "`around=me` without a valid token"),
              (status = 404, description = "Unknown trackId, or (`around=me`) no entry of the caller on the board")))]
pub async fn leaderboard(
    State(state): State<AppState>,
    headers: BoardReadHeaders,
    ApiQuery(q): ApiQuery<LeaderboardQuery>,
) -> Result<Response, ApiError> {
    let (track_id, named) = track_of(&q)?;
    let board = board_of(&track_id, &q.vehicle_name)?;
    let limit = paging::parse_limit(q.limit.as_deref())?;
    let after = match nonempty(&q.cursor) {
        Some(c) => Some(
            reads::decode_cursor(c)
                .ok_or_else(|| ApiError::invalid("cursor", "is not a cursor this list returned"))?,
        ),
        None => None,
    };
    match nonempty(&q.around) {
        None => {}
        Some("me") if after.is_some() => {
            return Err(ApiError::invalid(
                "around",
                "cannot be combined with cursor",
            ));
        }
        Some("me") => {
            let caller = Caller::<scope::BoardsRead, Deferred>::from_authorization(
                headers.authorization.as_ref(),
                headers.rate_limit.as_ref(),
                headers.admitted.as_ref(),
                &state,
            )
            .await?;
            let user_id = caller.user_id().clone();
            let reads = async {
                futures::try_join!(track_for(&state, &track_id, &named), async {
                    reads::around(&state.ports, &board, &user_id, limit)
                        .await
                        .map_err(PageError::from)
                })
            };
            let (_, (track, slice)) = caller.confirmed_with(&state, reads).await?;
            let slice = slice
                .ok_or_else(|| ApiError::NotFound("you have no entry on this board".into()))?;
            let page = rendered(&LeaderboardPage::of(track, slice));
            let mut response = page_response(&state, headers.if_none_match.as_ref(), page);
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, no-store"),
            );
            return Ok(response);
        }
        Some(_) => return Err(ApiError::invalid("around", "must be `me`")),
    }
    let key = PageKey {
        board,
        after,
        limit,
    };
    // Called on a miss only: a cached read copies nothing for it.
    let (state_ref, named) = (&state, &named);
    let load = move |key: PageKey| async move {
        let (track, slice) =
            futures::try_join!(track_for(state_ref, &key.board.track, named), async {
                reads::page(
                    &state_ref.ports,
                    &key.board,
                    key.after.as_deref(),
                    key.limit,
                )
                .await
                .map_err(PageError::from)
            })?;
        Ok(rendered(&LeaderboardPage::of(track, slice)))
    };
    let page = state.leaderboards.page(key, load).await?;
    Ok(page_response(&state, headers.if_none_match.as_ref(), page))
}

/// The request headers a board read looks at, taken without a copy of the whole header map.
pub struct BoardReadHeaders {
    /// `If-None-Match`: the ETags the client holds.
    if_none_match: Option<HeaderValue>,
    /// `Authorization`, for `around=me`.
    authorization: Option<HeaderValue>,
    /// Where a personal access token's rate-limit usage goes, for `around=me`.
    rate_limit: Option<RateLimitSlot>,
    /// A caller admitted already (a tool of the MCP server), for `around=me`.
    admitted: Option<Admitted>,
}

impl<S: Send + Sync> FromRequestParts<S> for BoardReadHeaders {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self {
            if_none_match: parts.headers.get(header::IF_NONE_MATCH).cloned(),
            authorization: parts.headers.get(header::AUTHORIZATION).cloned(),
            rate_limit: parts.extensions.get::<RateLimitSlot>().cloned(),
            admitted: parts.extensions.get::<Admitted>().cloned(),
        })
    }
}

fn page_response(
    state: &AppState,
    if_none_match: Option<&HeaderValue>,
    page: RenderedPage,
) -> Response {
    let fresh = conditional::holds(if_none_match, &page.etag);
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        json_bytes(page.body)
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, state.board_cache_control.clone());
    if let Ok(etag) = HeaderValue::from_str(&page.etag) {
        h.insert(header::ETAG, etag);
    }
    response
}

/// Which board the caller's place is asked on.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct StandingQuery {
    /// The track id.
    #[param(required = true, value_type = String, format = Uuid)]
    pub track_id: Option<String>,
    /// The car's board instead of the track's (case-insensitive).
    pub vehicle_name: Option<String>,
}

/// The caller's place on a board.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MyStanding {
    /// The caller's entry.
    pub entry: LeaderboardEntry,
    /// The caller's rank (1 is fastest).
    pub rank: u64,
    /// Entries on the board.
    pub total_entries: u64,
    /// The share of the board at or behind the caller, in percent (100 for the fastest).
    pub percentile: f64,
    /// Milliseconds behind the driver just ahead; null for the fastest.
    pub gap_to_ahead_ms: Option<i64>,
    /// Milliseconds behind the fastest lap (0 for the fastest).
    pub gap_to_first_ms: i64,
}

/// The caller's entry, rank and gaps on a track's board (or a car's).
#[utoipa::path(get, path = "/v1/leaderboards/me", operation_id = "getMyStanding", tag = "leaderboards", params(StandingQuery),
    security(("bearer" = ["boards:read"])),
    responses((status = 200, description = "The caller's place", body = StandingEnvelope),
              (status = 400, description = "No or a malformed trackId, or a bad vehicleName"),
              (status = 401, description = "No valid token"),
              (status = 404, description = "The caller has no entry on this board")))]
pub async fn my_standing(
    State(state): State<AppState>,
    caller: Caller<scope::BoardsRead, Deferred>,
    ApiQuery(q): ApiQuery<StandingQuery>,
) -> Result<Response, ApiError> {
    let board = match nonempty(&q.track_id) {
        Some(id) => track_id_param(id).and_then(|track_id| board_of(&track_id, &q.vehicle_name)),
        None => Err(ApiError::invalid("trackId", "is required")),
    };
    let board = match board {
        Ok(board) => board,
        Err(refused) => return Err(caller.refusal(&state, refused).await),
    };
    let user_id = caller.user_id().clone();
    let (_, standing) = caller
        .confirmed_with(&state, reads::standing(&state.ports, &board, &user_id))
        .await?;
    let standing =
        standing.ok_or_else(|| ApiError::NotFound("you have no entry on this board".into()))?;
    let total = standing.total.max(standing.entry.rank);
    let rank = standing.entry.rank;
    let lap = standing.entry.row.lap_time_ms;
    #[allow(clippy::cast_precision_loss)]
    let percentile = ((total - rank + 1) as f64 * 1000.0 / total as f64).round() / 10.0;
    let mut response = ok(MyStanding {
        rank,
        total_entries: total,
        percentile,
        gap_to_ahead_ms: standing.ahead_ms.map(|ahead| lap - ahead),
        gap_to_first_ms: lap - standing.first_ms,
        entry: standing.entry.into(),
    });
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
}

/// Which track's cars.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct VehiclesQuery {
    /// The track id.
    #[param(required = true, value_type = String, format = Uuid)]
    pub track_id: Option<String>,
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// The cars with a board on a track.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VehicleList {
    /// Cars raced by at least three drivers, most drivers first.
    pub items: Vec<VehicleBoard>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The cars raced on a track by at least three drivers, most drivers first, a page at a time
/// (a car fewer drivers raced has its board all the same: `vehicleName` on the board reads).
/// Public.
#[utoipa::path(get, path = "/v1/leaderboards/vehicles", operation_id = "listLeaderboardVehicles", tag = "leaderboards", params(VehiclesQuery),
    responses((status = 200, description = "The cars", body = VehicleListEnvelope),
              (status = 400, description = "No or a malformed trackId, a bad limit or cursor")))]
pub async fn vehicles(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<VehiclesQuery>,
) -> Result<Response, ApiError> {
    let track_id = match nonempty(&q.track_id) {
        Some(id) => track_id_param(id)?,
        None => return Err(ApiError::invalid("trackId", "is required")),
    };
    let limit = paging::parse_limit(q.limit.as_deref())?;
    let page = paddock_core::leaderboards::vehicles::list(
        &state.ports,
        &track_id,
        limit,
        nonempty(&q.cursor),
    )
    .await?;
    let mut response = ok(VehicleList {
        items: page.items,
        next_cursor: page.next_cursor,
    });
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, state.board_cache_control.clone());
    Ok(response)
}

/// `POST /v1/leaderboards/submit` body (`LeaderboardSubmitDto`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmitRequest {
    /// The server-side id of one of the caller's sessions.
    #[schema(required = true, value_type = String, format = Uuid)]
    pub session_id: Option<String>,
    /// The lap time to rank, in milliseconds.
    #[schema(required = true, value_type = i64, minimum = 1, maximum = 86_400_000)]
    pub lap_time_ms: Option<serde_json::Value>,
    /// The client's quality score, 0 to 1; below 0.8 the lap is refused (422).
    #[schema(required = true, value_type = f64, minimum = 0.0, maximum = 1.0)]
    pub quality_score: Option<serde_json::Value>,
}

/// Submits a lap of one of the caller's sessions. A faster lap replaces the caller's entry
/// on that track; a slower or equal one leaves it (200, `improved: false`).
#[utoipa::path(post, path = "/v1/leaderboards/submit", operation_id = "submitLap", tag = "leaderboards", security(("bearer" = ["boards:submit"])),
    request_body(content = SubmitRequest, example = json!({
        "sessionId": "3f2b8c1e-7d4a-4e6b-9c0d-5a1e2f3b4c5d", "lapTimeMs": 107345, "qualityScore": 0.93})),
    responses((status = 200, description = "Submitted (see `improved`)", body = SubmitOutcomeEnvelope),
              (status = 400, description = "A field breaks a rule"), (status = 401, description = "No valid token"),
              (status = 404, description = "No such session of the caller"),
              (status = 422, description = "Quality below 0.8, the session has no valid lap of that time and quality, \
               or the lap is implausible: faster than 400 km/h over the track's map, under 8 s, or with sector times \
               that do not add up to it"),
              (status = 429, description = "The lap would open a board (a track or a car the caller has no entry on) \
               past the day's `Limits__NewBoardsPerDay`; nothing is written")))]
pub async fn submit_lap(
    State(state): State<AppState>,
    caller: Caller<scope::BoardsSubmit, Deferred>,
    ApiJson(body): ApiJson<SubmitRequest>,
) -> Result<Response, ApiError> {
    let lap = match SubmitLap::parse(
        body.session_id.as_deref(),
        body.lap_time_ms.as_ref(),
        body.quality_score.as_ref(),
    ) {
        Ok(lap) => lap,
        Err(problems) => return Err(caller.refusal(&state, problems.into()).await),
    };
    let (user, outcome) = submit_lap::submit_lap(
        &state.ports,
        caller.into_unconfirmed(),
        lap,
        state.settings.new_boards_per_day,
        &OpenEvents,
    )
    .await?;
    // This process shows the new boards at once; others within the cache lifetime.
    state.leaderboards.invalidate(&outcome.track_id);
    state.leaderboards.forget_driver(&user.user_id);
    Ok(ok(outcome))
}

envelope!(
    /// One page of a leaderboard.
    LeaderboardEnvelope => crate::routes::leaderboard_answers::LeaderboardPage
);

envelope!(
    /// The caller's standing on a board.
    StandingEnvelope => MyStanding
);

envelope!(
    /// The cars of a track's boards.
    VehicleListEnvelope => VehicleList
);

envelope!(
    /// The outcome of a lap submission.
    SubmitOutcomeEnvelope => paddock_core::leaderboards::submit::SubmitOutcome
);
