//! `/v1/auth`: email and password, tokens, and the desktop sign-in flow with providers, one
//! module per flow; and `/v1/tokens`, the driver's personal access tokens.

pub mod email;
pub mod personal_tokens;
pub mod providers;
pub mod tokens;

use crate::routes::registry::{Routes, operations};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::{ApiError, Envelope};
use crate::routes::envelopes::envelope;
use crate::state::AppState;
use paddock_core::identity::refresh_tokens;
use paddock_core::identity::users::User;

/// The auth routes.
pub fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(email::register))
        .operations(operations!(email::login_email))
        .operations(operations!(email::set_password))
        .operations(operations!(tokens::refresh))
        .operations(operations!(tokens::logout))
        .operations(operations!(tokens::validate))
        .operations(operations!(tokens::exchange))
        .operations(operations!(providers::login_provider))
        .operations(operations!(providers::callback))
        .undocumented(LEGACY_PROVIDER_LOGIN, || get(providers::login_provider))
        .operations(operations!(personal_tokens::list, personal_tokens::create))
        .operations(operations!(personal_tokens::revoke))
}

/// The provider sign-in at its older path (`/v1/auth/login/{provider}` is the documented
/// one); not in the API description, so generated clients see one operation.
pub const LEGACY_PROVIDER_LOGIN: &str = "/v1/auth/{provider}";

/// Counts one sign-in by `method` (`email`, `provider`) and its outcome: `ok`, `failed`
/// (wrong credentials, or a refused or broken provider answer), `limited` (a rate limit) or
/// `error` (the service failed).
pub(crate) fn count_sign_in(method: &'static str, outcome: &Result<Response, ApiError>) {
    let result = match outcome {
        Ok(_) => "ok",
        Err(ApiError::TooManyRequests { .. }) => "limited",
        Err(
            ApiError::Unauthorized(_)
            | ApiError::Forbidden(_)
            | ApiError::BadRequest(_)
            | ApiError::Conflict(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::Unprocessable(_)
            | ApiError::BadGateway { .. }
            | ApiError::GatewayTimeout(_),
        ) => "failed",
        Err(_) => "error",
    };
    paddock_core::metrics::global()
        .sign_ins
        .with_label_values(&[method, result])
        .inc();
}

/// Tokens issued at sign-in or refresh.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenResponse {
    /// The access token (a JWT) for `Authorization: Bearer`.
    pub access_token: String,
    /// The refresh token (single use).
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Access-token lifetime in seconds.
    pub expires_in: i64,
    /// The signed-in driver.
    pub user: User,
}

/// Signs `user` in: a new refresh-token family and an access token of it.
async fn token_response(
    state: &AppState,
    user: User,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let issued = refresh_tokens::issue_new_family(&state.ports, &user.id).await?;
    tokens_for(state, user, issued.raw, &issued.family_id, status).await
}

async fn tokens_for(
    state: &AppState,
    user: User,
    refresh: String,
    family: &str,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let signer = state.access_tokens().await?;
    let (access_token, _) = signer.issue(&user, family, state.ports.clock.now());
    let body = TokenResponse {
        access_token,
        refresh_token: refresh,
        token_type: "Bearer",
        expires_in: signer.lifetime_secs(),
        user,
    };
    let mut response = (status, Envelope::ok(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

envelope!(
    /// Tokens issued by a sign-in, a refresh or an exchange.
    TokenEnvelope => TokenResponse
);
