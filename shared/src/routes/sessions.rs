//! `/v1/sessions`: idempotent uploads of session summaries and the caller's reads.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;

use crate::http::auth_user::{Authorized, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiQuery, Envelope, JsonBody, PageParams, Paged, ok};
use crate::identity::rate_limits::{self, Limit};
use crate::ids::SessionId;
use crate::sessions::upload::SessionUploadDto;
use crate::sessions::{self, Receipt, SessionDetail, SessionSummary, records, upload};
use crate::state::AppState;

/// The sessions routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions", get(list).post(create))
        .route("/v1/sessions/{id}", get(detail))
}

/// Uploads a session summary (idempotent on the caller and `ClientSessionId`).
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", security(("bearer" = [])),
    request_body(content = SessionUploadDto, description = "SessionUploadDto, in camelCase or PascalCase (camelCase \
        wins when a field is given in both). Rules beyond the schema: lapIndex unique within the session; recordedAt \
        after 2000-01-01 and at most a day ahead; text trimmed."),
    responses((status = 201, description = "Stored", body = inline(Envelope<Receipt>)),
              (status = 200, description = "This ClientSessionId was uploaded before: the same session, nothing written",
               body = inline(Envelope<Receipt>)),
              (status = 400, description = "Every problem, by field"), (status = 401, description = "No valid token"),
              (status = 429, description = "More than 30 uploads in a minute")))]
pub async fn create(
    State(state): State<AppState>,
    user: Authorized<scope::SessionsWrite>,
    // Read as sent: the upload parser accepts camelCase and PascalCase names itself.
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    rate_limits::hit(
        &state.ports,
        "upload",
        user.user_id().as_str(),
        60,
        &[Limit::new("n", state.settings.uploads_per_minute)],
    )
    .await?;
    let upload = upload::parse(body, state.ports.clock.now())?;
    let receipt = sessions::create(&state.ports, user.user_id(), upload).await?;
    if receipt.duplicate {
        crate::metrics::global()
            .sessions_uploaded
            .with_label_values(&["duplicate"])
            .inc();
        Ok(ok(receipt))
    } else {
        Ok(with_status(StatusCode::CREATED, receipt))
    }
}

/// The caller's sessions, newest RecordedAt first.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", security(("bearer" = [])), params(PageParams),
    responses((status = 200, description = "One page", body = inline(Envelope<Paged<SessionSummary>>)),
              (status = 400, description = "Bad limit or cursor"), (status = 401, description = "No valid token")))]
pub async fn list(
    State(state): State<AppState>,
    user: Authorized<scope::SessionsRead>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let (items, next_cursor) =
        records::list(&state.ports, user.user_id(), page.limit()?, page.cursor()).await?;
    Ok(ok(Paged { items, next_cursor }))
}

/// One of the caller's sessions with its laps (another user's session is 404).
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions", security(("bearer" = [])),
    params(("id" = String, Path, description = "Session id")),
    responses((status = 200, description = "The session", body = inline(Envelope<SessionDetail>)),
              (status = 404, description = "No such session of the caller")))]
pub async fn detail(
    State(state): State<AppState>,
    user: Authorized<scope::SessionsRead>,
    Path(id): Path<SessionId>,
) -> Result<Response, ApiError> {
    let session = match uuid::Uuid::parse_str(id.as_str()) {
        Ok(_) => records::get(&state.ports, user.user_id(), &id).await?,
        Err(_) => None,
    };
    let session = session.ok_or_else(|| ApiError::NotFound("session not found".into()))?;
    Ok(ok(session.detail()))
}

impl From<sessions::CreateError> for ApiError {
    fn from(e: sessions::CreateError) -> Self {
        match e {
            sessions::CreateError::InProgress => Self::Conflict(e.to_string()),
            sessions::CreateError::Store(s) => s.into(),
            sessions::CreateError::Blob(b) => b.into(),
        }
    }
}
