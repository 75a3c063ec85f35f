//! `/v1/sessions`: idempotent uploads of session summaries and the caller's reads.

use crate::routes::registry::{Routes, operations};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::request::Parts;

use super::envelopes::{envelope, page_envelope};
use crate::http::auth_user::{Caller, Deferred, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiJson, ApiQuery, MalformedId, PathId, ok};
use crate::routes::paging::{PageParams, Paged};
use crate::state::AppState;
use paddock_core::ids::SessionId;
use paddock_core::rate_limits::{self, Limit};
use paddock_core::sessions::create::FirstReads;
use paddock_core::sessions::upload::SessionUploadDto;
use paddock_core::sessions::{self, records, upload};

/// The sessions routes.
pub fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(list, create))
        .operations(operations!(detail))
}

/// Uploads a session summary (idempotent on the caller and `ClientSessionId`).
#[utoipa::path(post, path = "/v1/sessions", operation_id = "uploadSession", tag = "sessions", security(("bearer" = ["sessions:write"])),
    request_body(content = SessionUploadDto, description = "SessionUploadDto, in camelCase or PascalCase (camelCase \
        wins when a field is given in both). Rules beyond the schema: lapIndex unique within the session; recordedAt \
        after 2000-01-01 and at most a day ahead; text trimmed.",
        example = json!({
            "clientSessionId": "9b7e3c2a-1f4d-4a8b-b6c5-0d2e4f6a8c1e", "gameId": "acc", "trackName": "Monza",
            "trackLayout": "", "vehicleName": "Ferrari 296 GT3", "recordedAt": "2026-05-01T18:30:00Z",
            "bestLapMs": 107345, "weatherSummary": "Dry, 24 C", "sessionPhase": "Practice",
            "laps": [
                {"lapIndex": 0, "lapTimeMs": 109012, "isValid": true, "countsForSessionTiming": true,
                 "qualityCombined": 0.9, "qualityCoherence": 0.92, "qualityStability": 0.88, "qualityCompleteness": 0.9,
                 "numPenalties": 0, "numPitstops": 0, "inPitsAtLapEnd": false},
                {"lapIndex": 1, "lapTimeMs": 107345, "isValid": true, "countsForSessionTiming": true,
                 "qualityCombined": 0.93, "qualityCoherence": 0.95, "qualityStability": 0.91, "qualityCompleteness": 0.94,
                 "numPenalties": 0, "numPitstops": 0, "inPitsAtLapEnd": false, "sectorTimesMs": [35012, 38101, 34232]}]})),
    responses((status = 201, description = "Stored", body = ReceiptEnvelope),
              (status = 200, description = "This ClientSessionId was uploaded before: the same session, nothing written",
               body = ReceiptEnvelope),
              (status = 400, description = "Every problem, by field"), (status = 401, description = "No valid token"),
              (status = 429, description = "More than 30 uploads in a minute")))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller<scope::SessionsWrite, Deferred>,
    // Every field read as sent, so the check lists every problem of every field at once.
    ApiJson(body): ApiJson<upload::Sent<SessionUploadDto>>,
) -> Result<Response, ApiError> {
    // Counted once per client session id, so a client's retry of an upload whose answer it
    // never got does not take a second place in the minute.
    let limits = [Limit::new("n", state.settings.uploads_per_minute)];
    let user_id = caller.user_id().clone();
    let subject = user_id.as_str();
    let client_session_id = upload::client_session_id(&body).map(str::to_owned);
    let parsed = upload::check(body, state.ports.clock.now());
    // The rate limit's log, the upload's idempotency record and its track, read at once and
    // beside the sign-in's check; nothing is written before it holds.
    let mut keys = vec![rate_limits::main_log("upload", subject)];
    if let Ok(upload) = &parsed {
        keys.extend(FirstReads::keys(&user_id, upload));
    }
    let (user, mut found) = caller
        .confirmed_with(&state, state.ports.items.get_many(keys))
        .await?;
    let log = found.remove(0);
    rate_limits::hit_read(
        &state.ports,
        "upload",
        subject,
        60,
        &limits,
        client_session_id.as_deref(),
        log,
    )
    .await?;
    // An upload over the limit is refused as such, whatever its body.
    let upload = parsed?;
    let first = match <[_; 2]>::try_from(found) {
        Ok(found) => FirstReads::of(found),
        Err(_) => FirstReads::default(),
    };
    let receipt =
        sessions::create::create_read(&state.ports, user.user_id(), upload, first).await?;
    if receipt.duplicate {
        paddock_core::metrics::global()
            .sessions_uploaded
            .with_label_values(&["duplicate"])
            .inc();
        Ok(ok(receipt))
    } else {
        Ok(with_status(StatusCode::CREATED, receipt))
    }
}

/// The caller's sessions, newest RecordedAt first.
#[utoipa::path(get, path = "/v1/sessions", operation_id = "listSessions", tag = "sessions", security(("bearer" = ["sessions:read"])), params(PageParams),
    responses((status = 200, description = "One page", body = SessionListEnvelope),
              (status = 400, description = "Bad limit or cursor"), (status = 401, description = "No valid token")))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller<scope::SessionsRead, Deferred>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let limit = match page.limit() {
        Ok(limit) => limit,
        Err(refused) => return Err(caller.refusal(&state, refused).await),
    };
    let user_id = caller.user_id().clone();
    let (_, (items, next_cursor)) = caller
        .confirmed_with(
            &state,
            records::list(&state.ports, &user_id, limit, page.cursor()),
        )
        .await?;
    Ok(ok(Paged { items, next_cursor }))
}

/// One of the caller's sessions with its laps (another user's session is 404).
#[utoipa::path(get, path = "/v1/sessions/{id}", operation_id = "getSession", tag = "sessions", security(("bearer" = ["sessions:read"])),
    params(("id" = String, Path, description = "Session id")),
    responses((status = 200, description = "The session", body = SessionEnvelope),
              (status = 404, description = "No such session of the caller")))]
pub async fn detail(
    State(state): State<AppState>,
    user: Caller<scope::SessionsRead>,
    PathId { id, .. }: PathId<SessionId, NoSuchSession>,
) -> Result<Response, ApiError> {
    let session = records::get(&state.ports, user.user_id(), &id)
        .await?
        .ok_or_else(session_not_found)?;
    Ok(ok(session.detail()))
}

fn session_not_found() -> ApiError {
    ApiError::NotFound("session not found".into())
}

/// A malformed session id names no session: answered as an unknown one.
pub struct NoSuchSession;

impl<S> MalformedId<S> for NoSuchSession {
    fn answer(_: &Parts, _: &S) -> Response {
        session_not_found().into_response()
    }
}

envelope!(
    /// A session upload's receipt.
    ReceiptEnvelope => paddock_core::sessions::Receipt
);

page_envelope!(
    /// One page of the caller's sessions.
    SessionListEnvelope => SessionList of paddock_core::sessions::SessionSummary
);

envelope!(
    /// One session with its laps.
    SessionEnvelope => paddock_core::sessions::SessionDetail
);
