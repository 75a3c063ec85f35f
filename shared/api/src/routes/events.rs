//! `/v1/events` and `/v1/leagues/{id}/events`: competition events and their standings (see
//! docs/api-guide.md, Events). A league's events are seen by its members only: anyone else is
//! answered 404; only the league's owner makes them.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::request::Parts;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelopes::envelope;
use crate::http::auth_user::{Caller, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiJson, ApiQuery, MalformedId, PathId, ok};
use crate::routes::leaderboard_answers::LeaderboardEntry;
use crate::routes::leagues::NoSuchLeague;
use crate::routes::paging;
use crate::routes::registry::{Routes, operations};
use crate::state::AppState;
use paddock_core::competition_events::{
    self as events, Event, EventError, Host, PlanFields, SeasonTable,
};
use paddock_core::ids::{EventId, LeagueId};
use paddock_core::leaderboards::reads::{decode_cursor, encode_cursor};

/// The event routes.
pub(crate) fn routes<R: Routes>(routes: R) -> R {
    routes
        .operations(operations!(create_league_event, list_league_events))
        .operations(operations!(list_public_events, create_public_event))
        .operations(operations!(read))
        .operations(operations!(standings))
        .operations(operations!(season))
}

/// A malformed event id names no event: answered as an unknown one.
pub(crate) struct NoSuchEvent;

impl<S> MalformedId<S> for NoSuchEvent {
    fn answer(_: &Parts, _: &S) -> Response {
        ApiError::from(EventError::NotFound).into_response()
    }
}

/// Makes an event of a league; only its owner may.
#[utoipa::path(post, path = "/v1/leagues/{id}/events", operation_id = "createLeagueEvent", tag = "events",
    security(("bearer" = ["leagues"])),
    params(("id" = String, Path, description = "The league's id")),
    request_body(content = PlanFields, description = "camelCase or PascalCase names", example = json!({
        "name": "Monza week", "trackId": "5f0c7d4e-0000-4000-8000-000000000001",
        "opensAt": "2026-12-07T18:00:00Z", "closesAt": "2026-12-14T18:00:00Z",
        "recurrence": {"everyDays": 7, "rounds": 4}})),
    responses((status = 201, description = "The event", body = EventEnvelope),
              (status = 400, description = "A field that breaks its rule (the error names the field): the window, \
               an unknown track or a car not raced on it, the minimum quality, the recurrence"),
              (status = 401, description = "No valid sign-in"),
              (status = 403, description = "The caller is a member, not the owner"),
              (status = 404, description = "No such league, or the caller is not in it"),
              (status = 409, description = "The league has 10 events not yet finished")))]
pub(crate) async fn create_league_event(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
    ApiJson(body): ApiJson<PlanFields>,
) -> Result<Response, ApiError> {
    let event = events::create(&state.ports, user.user_id(), Host::League(id), body).await?;
    Ok(with_status(StatusCode::CREATED, event))
}

/// Makes a public event; only the drivers `Events__Operators` names may.
#[utoipa::path(post, path = "/v1/events", operation_id = "createPublicEvent", tag = "events",
    security(("bearer" = ["leagues"])),
    request_body(content = PlanFields, description = "camelCase or PascalCase names", example = json!({
        "name": "Nordschleife weekend", "trackId": "5f0c7d4e-0000-4000-8000-000000000001",
        "opensAt": "2026-12-11T18:00:00Z", "closesAt": "2026-12-13T22:00:00Z"})),
    responses((status = 201, description = "The event", body = EventEnvelope),
              (status = 400, description = "A field that breaks its rule (the error names the field)"),
              (status = 401, description = "No valid sign-in"),
              (status = 403, description = "The caller is not one of the operator's drivers"),
              (status = 409, description = "10 public events are not yet finished")))]
pub(crate) async fn create_public_event(
    State(state): State<AppState>,
    user: Caller<scope::Leagues>,
    ApiJson(body): ApiJson<PlanFields>,
) -> Result<Response, ApiError> {
    if !state.settings.event_operators.contains(user.user_id()) {
        return Err(EventError::NotOperator.into());
    }
    let event = events::create(&state.ports, user.user_id(), Host::Public, body).await?;
    Ok(with_status(StatusCode::CREATED, event))
}

/// A list of events.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EventList {
    /// The events not yet finished, in the order they close, then the latest finished.
    pub items: Vec<Event>,
}

const FINISHED_SHOWN: usize = 10;
/// A league's events, for its members.
#[utoipa::path(get, path = "/v1/leagues/{id}/events", operation_id = "listLeagueEvents", tag = "events",
    security(("bearer" = ["events:read"])),
    params(("id" = String, Path, description = "The league's id")),
    responses((status = 200, description = "The events not yet finished (in the order they close), then the 10 \
               latest finished", body = EventListEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such league, or the caller is not in it")))]
pub(crate) async fn list_league_events(
    State(state): State<AppState>,
    user: Caller<scope::EventsRead>,
    PathId { id, .. }: PathId<LeagueId, NoSuchLeague>,
) -> Result<Response, ApiError> {
    let host = Host::League(id);
    let items = events::list(&state.ports, Some(user.user_id()), &host, FINISHED_SHOWN).await?;
    Ok(ok(EventList { items }))
}

/// The public events.
#[utoipa::path(get, path = "/v1/events", operation_id = "listEvents", tag = "events",
    security(("bearer" = ["events:read"])),
    responses((status = 200, description = "The public events not yet finished (in the order they close), then \
               the 10 latest finished", body = EventListEnvelope),
              (status = 401, description = "No valid sign-in")))]
pub(crate) async fn list_public_events(
    State(state): State<AppState>,
    user: Caller<scope::EventsRead>,
) -> Result<Response, ApiError> {
    let host = Host::Public;
    let items = events::list(&state.ports, Some(user.user_id()), &host, FINISHED_SHOWN).await?;
    Ok(ok(EventList { items }))
}

/// One event.
#[utoipa::path(get, path = "/v1/events/{id}", operation_id = "getEvent", tag = "events",
    security(("bearer" = ["events:read"])),
    params(("id" = String, Path, description = "The event's id")),
    responses((status = 200, description = "The event", body = EventEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such event, or a league's event and the caller is not in the league")))]
pub(crate) async fn read(
    State(state): State<AppState>,
    user: Caller<scope::EventsRead>,
    PathId { id, .. }: PathId<EventId, NoSuchEvent>,
) -> Result<Response, ApiError> {
    Ok(ok(
        events::get(&state.ports, Some(user.user_id()), &id).await?
    ))
}

/// `GET /v1/events/{id}/standings` query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StandingsQuery {
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `nextCursor` of the previous page (a position in the standings).
    pub cursor: Option<String>,
    /// `me`: the page centred on the caller's entry (no cursor).
    #[param(value_type = Option<String>, pattern = "^me$")]
    pub around: Option<String>,
}

/// A page of an event's standings.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventStandings {
    /// The event.
    pub event: Event,
    /// Each entrant's best lap in the event, fastest first.
    pub entries: Vec<LeaderboardEntry>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Entrants in all.
    pub total_entries: u64,
}

/// An event's standings: each entrant's best lap driven in its window and submitted before
/// it closed, with exact ranks; final once the event has finished.
#[utoipa::path(get, path = "/v1/events/{id}/standings", operation_id = "getEventStandings", tag = "events",
    security(("bearer" = ["events:read"])),
    params(("id" = String, Path, description = "The event's id"), StandingsQuery),
    responses((status = 200, description = "One page of the standings", body = EventStandingsEnvelope),
              (status = 400, description = "A bad limit, cursor or around"),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such event (or a league's, and the caller is not in the league), \
               or (`around=me`) no entry of the caller")))]
pub(crate) async fn standings(
    State(state): State<AppState>,
    user: Caller<scope::EventsRead>,
    PathId { id, .. }: PathId<EventId, NoSuchEvent>,
    ApiQuery(q): ApiQuery<StandingsQuery>,
) -> Result<Response, ApiError> {
    let limit = paging::parse_limit(q.limit.as_deref())?;
    let cursor = q.cursor.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let after = match cursor {
        Some(c) => Some(
            decode_cursor(c)
                .ok_or_else(|| ApiError::invalid("cursor", "is not a cursor this list returned"))?,
        ),
        None => None,
    };
    let (event, slice) = match q.around.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
        None => {
            events::standings(
                &state.ports,
                Some(user.user_id()),
                &id,
                after.as_deref(),
                limit,
            )
            .await?
        }
        Some("me") if after.is_some() => {
            return Err(ApiError::invalid(
                "around",
                "cannot be combined with cursor",
            ));
        }
        Some("me") => {
            let (event, mine) = events::around_me(&state.ports, user.user_id(), &id, limit).await?;
            let (slice, _) =
                mine.ok_or_else(|| ApiError::NotFound("you have no entry in this event".into()))?;
            (event, slice)
        }
        Some(_) => return Err(ApiError::invalid("around", "must be `me`")),
    };
    Ok(ok(EventStandings {
        event,
        next_cursor: slice.next_after.as_deref().map(encode_cursor),
        entries: slice.rows.into_iter().map(Into::into).collect(),
        total_entries: slice.total,
    }))
}

/// The season table of the series an event is a round of: points per finished round by
/// position (25, 18, 15, 12, 10, 8, 6, 4, 2, 1 for the top ten), totals, ties broken by
/// better finishes.
#[utoipa::path(get, path = "/v1/events/{id}/season", operation_id = "getEventSeason", tag = "events",
    security(("bearer" = ["events:read"])),
    params(("id" = String, Path, description = "The id of any round of the series")),
    responses((status = 200, description = "The season table", body = SeasonTableEnvelope),
              (status = 401, description = "No valid sign-in"),
              (status = 404, description = "No such event (or a league's, and the caller is not in the league), \
               or the event is not a round of a series")))]
pub(crate) async fn season(
    State(state): State<AppState>,
    user: Caller<scope::EventsRead>,
    PathId { id, .. }: PathId<EventId, NoSuchEvent>,
) -> Result<Response, ApiError> {
    Ok(ok(
        events::season(&state.ports, Some(user.user_id()), &id).await?
    ))
}

envelope!(/** An event. */ EventEnvelope => Event);
envelope!(/** A list of events. */ EventListEnvelope => EventList);
envelope!(/** A page of an event's standings. */ EventStandingsEnvelope => EventStandings);
envelope!(/** A series' season table. */ SeasonTableEnvelope => SeasonTable);
