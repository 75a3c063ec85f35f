//! `/v1/leaderboards/me/progress`: the caller's laps submitted on a track over their latest
//! sessions (the fastest of each session), as the driver page's progress chart draws them.

use axum::extract::State;
use axum::response::Response;
use http::{HeaderValue, header};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelopes::envelope;
use super::leaderboards::track_id_param;
use crate::http::auth_user::{Caller, Deferred, scope};
use crate::http::{ApiError, ApiQuery, ok};
use crate::state::AppState;
use paddock_core::leaderboards::lap_history::{self, LapPoint};

/// Which track.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(crate) struct ProgressQuery {
    /// The track id.
    #[param(required = true, value_type = String, format = Uuid)]
    pub track_id: Option<String>,
}

/// One session's fastest lap submitted to the track's boards.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TrackProgressPoint {
    /// The session.
    pub session_id: String,
    /// When the session was driven (RFC 3339, UTC).
    pub session_at: String,
    /// The lap time, milliseconds.
    pub lap_time_ms: i64,
    /// The car.
    pub vehicle_name: String,
}

/// The caller's progress on a track.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TrackProgress {
    /// The track.
    pub track_id: String,
    /// The fastest of `points`; null when there are none.
    pub best_lap_ms: Option<i64>,
    /// The latest sessions with a submitted lap (at most 24), oldest first.
    pub points: Vec<TrackProgressPoint>,
}

impl From<LapPoint> for TrackProgressPoint {
    fn from(point: LapPoint) -> Self {
        Self {
            session_id: point.session_id.to_string(),
            session_at: point.session_at,
            lap_time_ms: point.lap_time_ms,
            vehicle_name: point.vehicle_name,
        }
    }
}

/// The caller's fastest submitted lap of each of their latest sessions on a track (at most
/// 24), oldest first, in any car: their progress, as their public page's chart draws it.
#[utoipa::path(get, path = "/v1/leaderboards/me/progress", operation_id = "getMyProgress", tag = "leaderboards", params(ProgressQuery),
    security(("bearer" = ["boards:read"])),
    responses((status = 200, description = "The caller's progress (no points if they submitted no lap there)", body = TrackProgressEnvelope),
              (status = 400, description = "No or a malformed trackId"),
              (status = 401, description = "No valid token")))]
pub(crate) async fn my_progress(
    State(state): State<AppState>,
    caller: Caller<scope::BoardsRead, Deferred>,
    ApiQuery(q): ApiQuery<ProgressQuery>,
) -> Result<Response, ApiError> {
    let track_id = match q.track_id.as_deref().map(str::trim) {
        Some(id) if !id.is_empty() => track_id_param(id),
        _ => Err(ApiError::invalid("trackId", "is required")),
    };
    let track_id = match track_id {
        Ok(track_id) => track_id,
        Err(refused) => return Err(caller.refusal(&state, refused).await),
    };
    let user_id = caller.user_id().clone();
    let (_, points) = caller
        .confirmed_with(
            &state,
            lap_history::latest(&state.ports, &user_id, &track_id),
        )
        .await?;
    let mut response = ok(TrackProgress {
        track_id: track_id.to_string(),
        best_lap_ms: points.iter().map(|p| p.lap_time_ms).min(),
        points: points.into_iter().map(TrackProgressPoint::from).collect(),
    });
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
}

envelope!(
    /// The caller's progress on a track.
    TrackProgressEnvelope => TrackProgress
);
