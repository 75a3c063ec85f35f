//! `/v1/tokens`: a signed-in driver makes, lists and revokes personal access tokens. These
//! routes take only a sign-in ([`Caller<scope::SignIn>`]): a token can never make or revoke tokens.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::auth_user::{Caller, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiJson, ok};
use crate::routes::envelopes::envelope;
use crate::state::AppState;
use paddock_core::identity::personal_tokens::{self, NewToken, TokenError};

/// `POST /v1/tokens` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateTokenRequest {
    /// The token's label: 1 to 64 characters, not only spaces, no control characters.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 64,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub name: Option<String>,
    /// One or more of `sessions:read`, `sessions:write`, `boards:read`, `boards:submit`,
    /// `profile:read`, `activity:read`, `sharepacks`, `webhooks`.
    #[schema(required = true, value_type = Vec<personal_tokens::Scope>, min_items = 1)]
    pub scopes: Option<Vec<String>>,
    /// Days until the token expires: 1 to 365 (default 90).
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 365)]
    pub expires_in_days: Option<Value>,
}

/// The answer of a refused token request.
fn refusal(e: TokenError) -> ApiError {
    match e {
        TokenError::BadName
        | TokenError::NoScopes
        | TokenError::UnknownScope(_)
        | TokenError::BadExpiry => ApiError::BadRequest(e.to_string()),
        TokenError::TooMany => ApiError::Conflict(e.to_string()),
        TokenError::NotFound => ApiError::NotFound(e.to_string()),
        TokenError::AccountGone => ApiError::Unauthorized(e.to_string()),
        TokenError::Store(s) => s.into(),
    }
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Makes a personal access token; its value is in this answer only.
#[utoipa::path(post, path = "/v1/tokens", operation_id = "createAccessToken", tag = "tokens", request_body = CreateTokenRequest,
    security(("bearer" = [])),
    responses((status = 201, description = "The token, shown this once",
               body = CreatedTokenEnvelope),
              (status = 400, description = "A bad name, an unknown scope or an expiry outside 1 to 365 days"),
              (status = 401, description = "Missing, invalid or revoked sign-in"),
              (status = 403, description = "Made with a personal access token: tokens cannot make tokens"),
              (status = 409, description = "The driver already holds 20 live tokens")))]
pub async fn create(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<CreateTokenRequest>,
) -> Result<Response, ApiError> {
    let name = body
        .name
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    let scopes = body
        .scopes
        .ok_or_else(|| ApiError::invalid("scopes", "is required"))?;
    let days = match body.expires_in_days {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| {
            ApiError::invalid(
                "expiresInDays",
                "must be a whole number of days between 1 and 365",
            )
        })?),
    };
    let new = NewToken::parse(&name, &scopes, days).map_err(refusal)?;
    let created = personal_tokens::create(&state.ports, user.user_id(), new)
        .await
        .map_err(refusal)?;
    Ok(no_store(with_status(StatusCode::CREATED, created)))
}

/// The caller's live personal access tokens (never their values).
#[utoipa::path(get, path = "/v1/tokens", operation_id = "listAccessTokens", tag = "tokens", security(("bearer" = [])),
    responses((status = 200, description = "The live tokens, newest first",
               body = TokenListEnvelope),
              (status = 401, description = "Missing, invalid or revoked sign-in"),
              (status = 403, description = "Made with a personal access token")))]
pub async fn list(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
) -> Result<Response, ApiError> {
    let tokens = personal_tokens::list(&state.ports, user.user_id())
        .await
        .map_err(refusal)?;
    Ok(no_store(ok(TokenList { items: tokens })))
}

/// Revokes one of the caller's tokens at once; revoking it again is harmless.
#[utoipa::path(delete, path = "/v1/tokens/{id}", operation_id = "revokeAccessToken", tag = "tokens", security(("bearer" = [])),
    params(("id" = String, Path, description = "The token's id")),
    responses((status = 204, description = "Revoked (or already revoked)"),
              (status = 401, description = "Missing, invalid or revoked sign-in"),
              (status = 403, description = "Made with a personal access token"),
              (status = 404, description = "The caller has no token of that id")))]
pub async fn revoke(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    personal_tokens::revoke(&state.ports, user.user_id(), &id)
        .await
        .map_err(refusal)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The caller's live tokens (at most 20: one page).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TokenList {
    /// Newest first.
    pub items: Vec<personal_tokens::TokenInfo>,
}

envelope!(
    /// A token just made, its value shown this once.
    CreatedTokenEnvelope => personal_tokens::CreatedToken
);

envelope!(
    /// The caller's live tokens.
    TokenListEnvelope => TokenList
);
