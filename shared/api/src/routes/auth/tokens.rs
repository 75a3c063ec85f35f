//! Tokens: refresh rotation, logout, validation and the exchange of a one-time code.

use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{token_response, tokens_for};
use crate::http::auth_user::{Caller, scope};
use crate::http::{ApiError, ApiJson, ok};
use crate::routes::envelopes::envelope;
use crate::state::AppState;
use paddock_core::identity::exchange_codes::{self, ExchangeError};
use paddock_core::identity::refresh_tokens::{self, RefreshError};
use paddock_core::identity::users;
use paddock_core::ids::UserId;
use paddock_core::ports::clock::rfc3339;
use paddock_core::problems::{FieldProblems, Problems};
use paddock_http::bearer::bearer;

/// `POST /v1/auth/refresh` body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshRequest {
    /// The refresh token of the last sign-in or rotation.
    #[schema(required = true, value_type = String)]
    pub refresh_token: Option<String>,
}

/// `POST /v1/auth/logout` body (optional: the bearer token alone also signs out).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogoutRequest {
    /// A refresh token of the sign-in to end.
    pub refresh_token: Option<String>,
}

/// `POST /v1/auth/exchange` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeRequest {
    /// The one-time code the browser brought to the desktop's listener.
    #[schema(required = true, value_type = String)]
    pub code: Option<String>,
    /// The PKCE verifier whose S256 challenge started the sign-in.
    #[schema(required = true, value_type = String, pattern = "^[A-Za-z0-9._~-]{43,128}$")]
    pub code_verifier: Option<String>,
}

/// `POST /v1/auth/logout` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogoutResponse {
    /// Always true.
    pub logged_out: bool,
}

/// An exchange whose fields parsed.
struct ExchangeForm {
    code: String,
    verifier: String,
}

impl TryFrom<ExchangeRequest> for ExchangeForm {
    type Error = FieldProblems;

    fn try_from(body: ExchangeRequest) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let code = p.required("code", body.code, Ok);
        let verifier = p.required("codeVerifier", body.code_verifier, |v| {
            if super::providers::is_pkce_value(&v) {
                Ok(v)
            } else {
                Err("must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~".into())
            }
        });
        let form = code
            .zip(verifier)
            .map(|(code, verifier)| Self { code, verifier });
        p.into_result(form)
    }
}

/// `GET /v1/auth/validate` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateResponse {
    /// Always true (an invalid token answers 401).
    pub valid: bool,
    /// The driver's id.
    pub user_id: String,
    /// RFC 3339 expiry of the presented token.
    pub expires_at: String,
}

/// Rotates a refresh token.
#[utoipa::path(post, path = "/v1/auth/refresh", operation_id = "refreshTokens", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, description = "New tokens; the old refresh token is used up", body = super::TokenEnvelope),
              (status = 401, description = "Invalid, expired, revoked or replayed (a replay revokes the whole family)")))]
pub async fn refresh(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<RefreshRequest>,
) -> Result<Response, ApiError> {
    let raw = body
        .refresh_token
        .ok_or_else(|| ApiError::invalid("refreshToken", "is required"))?;
    // The account is read beside the rotation's write.
    let ports = &state.ports;
    let read_user = |user_id: UserId| async move { users::get(ports, &user_id).await };
    let (issued, user) = refresh_tokens::rotate_with(ports, &raw, read_user)
        .await
        .map_err(|e| match e {
            RefreshError::Store(s) => ApiError::from(s),
            other => ApiError::Unauthorized(other.to_string()),
        })?;
    let user = user.ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))?;
    tokens_for(&state, user, issued.raw, &issued.family_id, StatusCode::OK).await
}

/// Signs out: revokes the refresh-token family (and with it its access tokens).
#[utoipa::path(post, path = "/v1/auth/logout", operation_id = "logout", tag = "auth", request_body = Option<LogoutRequest>,
    security((), ("bearer" = [])),
    responses((status = 200, description = "Signed out", body = LogoutEnvelope),
              (status = 401, description = "Neither a refresh token nor a valid bearer token")))]
pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    // The body is optional: none, `null` or an object with a refresh token.
    let parsed: LogoutRequest = if body.iter().all(u8::is_ascii_whitespace) {
        LogoutRequest::default()
    } else {
        crate::http::extract::from_json_slice::<Option<LogoutRequest>>(&body)?.unwrap_or_default()
    };
    let family = match parsed.refresh_token {
        Some(raw) => refresh_tokens::family_of(&state.ports, &raw)
            .await?
            .map(|(_, family)| family),
        None => None,
    };
    let family = if let Some(f) = family {
        f
    } else {
        let token = bearer(&headers).ok_or_else(|| {
            ApiError::Unauthorized("refreshToken or a bearer token is required".into())
        })?;
        let claims = state
            .verify_access_token(token)
            .await?
            .map_err(|r| ApiError::Unauthorized(r.into()))?;
        claims.sid.clone()
    };
    refresh_tokens::revoke_family(&state.ports, &family).await?;
    Ok(ok(LogoutResponse { logged_out: true }))
}

/// Checks the presented bearer token.
#[utoipa::path(get, path = "/v1/auth/validate", operation_id = "validateToken", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "Valid", body = ValidateEnvelope),
              (status = 401, description = "Missing, invalid, expired or revoked (e.g. after logout)")))]
pub async fn validate(user: Caller<scope::SignIn>) -> Result<Response, ApiError> {
    let expires_at = OffsetDateTime::from_unix_timestamp(user.claims().exp)
        .map(rfc3339)
        .unwrap_or_default();
    Ok(ok(ValidateResponse {
        valid: true,
        user_id: user.user_id().to_string(),
        expires_at,
    }))
}

/// Exchanges a one-time code from the browser flow for tokens.
#[utoipa::path(post, path = "/v1/auth/exchange", operation_id = "exchangeCode", tag = "auth", request_body = ExchangeRequest,
    responses((status = 200, description = "Tokens issued", body = super::TokenEnvelope),
              (status = 400, description = "Unknown, expired or used code, or a verifier that does not match")))]
pub async fn exchange(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ExchangeRequest>,
) -> Result<Response, ApiError> {
    let form = ExchangeForm::try_from(body)?;
    let user_id = exchange_codes::redeem(&state.ports, &form.code, &form.verifier)
        .await
        .map_err(|e| match e {
            ExchangeError::Store(s) => ApiError::from(s),
            other => ApiError::BadRequest(other.to_string()),
        })?;
    let user = users::get(&state.ports, &user_id)
        .await?
        .ok_or_else(|| ApiError::BadRequest("code is invalid".into()))?;
    token_response(&state, user, StatusCode::OK).await
}

envelope!(
    /// A sign-out.
    LogoutEnvelope => LogoutResponse
);

envelope!(
    /// A valid token's owner.
    ValidateEnvelope => ValidateResponse
);
