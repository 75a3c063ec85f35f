//! `/v1/tracks`: canonical tracks with uploaded sessions, and their centreline maps.

use crate::routes::registry::{Routes, operations};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderValue, header};
use serde::Deserialize;
use utoipa::IntoParams;

use super::envelopes::{envelope, page_envelope};
use crate::http::auth_user::{Caller, Requirement};
use crate::http::security_headers::SVG_CONTENT_SECURITY_POLICY;
use crate::http::{ApiError, ApiQuery, MalformedId, PathId, ok};
use crate::routes::paging::{PageParams, Paged};
use crate::state::AppState;
use paddock_core::identity::authentication::Required;
use paddock_core::identity::personal_tokens::Scope;
use paddock_core::ids::TrackId;
use paddock_core::tracks;
use paddock_core::tracks::maps;

/// Scope `sessions:read` or `boards:read`: the tracks, which every driver's sessions make and
/// every board names, are open to a board tool as to a sessions reader.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TracksRead;

impl Requirement for TracksRead {
    const REQUIRED: Required = Required::AnyScope(&[Scope::SessionsRead, Scope::BoardsRead]);
}

/// The tracks routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(list))
        .operations(operations!(map))
}

/// Tracks that have uploaded sessions, with session counts and whether a map exists.
#[utoipa::path(get, path = "/v1/tracks", operation_id = "listTracks", tag = "tracks", security(("bearer" = ["sessions:read"]), ("bearer" = ["boards:read"])), params(PageParams),
    responses((status = 200, description = "One page", body = TrackListEnvelope),
              (status = 401, description = "No valid token")))]
pub(crate) async fn list(
    State(state): State<AppState>,
    _user: Caller<TracksRead>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let (items, next_cursor) = tracks::list(&state.ports, page.limit()?, page.cursor()).await?;
    Ok(ok(Paged { items, next_cursor }))
}

/// `?format=` of the map.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct MapQuery {
    /// `json` (default) or `svg`.
    #[param(value_type = Option<String>, pattern = "^(json|svg)$")]
    pub format: Option<String>,
}

/// A track's centreline: JSON points, or an SVG picture with `?format=svg`.
#[utoipa::path(get, path = "/v1/tracks/{id}/map", operation_id = "getTrackMap", tag = "tracks", security(("bearer" = ["sessions:read"]), ("bearer" = ["boards:read"])),
    params(("id" = String, Path, description = "Track id"), MapQuery),
    responses((status = 200, description = "The map: JSON in the envelope, or an SVG picture with `?format=svg`",
               content((TrackMapEnvelope = "application/json"), (String = "image/svg+xml"))),
              (status = 400, description = "Unknown format"),
              (status = 404, description = "Unknown track, or no map built yet")))]
pub(crate) async fn map(
    State(state): State<AppState>,
    _user: Caller<TracksRead>,
    ApiQuery(query): ApiQuery<MapQuery>,
    PathId { id, .. }: PathId<TrackId, NoMap>,
) -> Result<Response, ApiError> {
    let svg = match query
        .format
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("json") => false,
        Some("svg") => true,
        Some(_) => return Err(ApiError::invalid("format", "must be json or svg")),
    };
    let map = maps::current(&state.ports, &id).await?.ok_or_else(no_map)?;
    if !svg {
        return Ok(ok(map));
    }
    let mut response = maps::svg(&map).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(SVG_CONTENT_SECURITY_POLICY),
    );
    Ok(response)
}

fn no_map() -> ApiError {
    ApiError::NotFound("no map for this track yet (unknown track, or no track points)".into())
}

/// A malformed track id names no track: answered as an unknown one.
pub(crate) struct NoMap;

impl<S> MalformedId<S> for NoMap {
    fn answer(_: &Parts, _: &S) -> Response {
        no_map().into_response()
    }
}

page_envelope!(
    /// One page of tracks.
    TrackListEnvelope => TrackList of paddock_core::tracks::Track
);

envelope!(
    /// A track's centreline map.
    TrackMapEnvelope => paddock_core::tracks::maps::TrackMap
);
