//! Starting a sign-in with an identity provider: the flow kept in the store, the flow cookie
//! the callback checks, and the redirect to the provider. The desktop app's start
//! (`/v1/auth/login/{provider}`) and the consent page's both start here; the callback
//! (`/v1/auth/callback/{provider}`) sends the browser on to the flow's redirect URI with a
//! one-time code bound to the starter's PKCE challenge.

use std::sync::Arc;

use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderValue, header};
use oauth2::PkceCodeChallenge;

use crate::http::ApiError;
use crate::state::AppState;
use paddock_clients::identity_providers as providers;
use paddock_core::hashing::random_token;
use paddock_core::identity::sign_in_flows::{self, SignInFlow};
use paddock_core::rate_limits::{self, Limit};

/// The cookie that ties a provider's callback to the browser that started the sign-in.
pub const FLOW_COOKIE: &str = "paddock_signin";

/// A sign-in to start: who started it and where its code goes.
#[derive(Debug)]
pub struct Start<'a> {
    /// The configured provider's name (lowercase).
    pub provider: &'a str,
    /// The client's address, counted against `Auth__ProviderStartsPerAddress`.
    pub addr: &'a str,
    /// The service's public URL (the provider's callback is under it).
    pub public_url: &'a str,
    /// Where the callback sends the browser with the one-time code.
    pub redirect_uri: String,
    /// The S256 challenge the one-time code is bound to.
    pub code_challenge: String,
}

/// Starts `start`: the flow stored, the flow cookie set, the browser sent to the provider.
pub async fn start(state: &AppState, start: Start<'_>) -> Result<Response, ApiError> {
    let handle = configured(state, start.provider)?;
    let auth = &state.settings.auth;
    let limit = Limit::new("starts", auth.provider_starts_per_address);
    rate_limits::hit(
        &state.ports,
        "provider-start",
        start.addr,
        auth.rate_window_secs,
        &[limit],
    )
    .await?;
    let (pkce_challenge, pkce_verifier) = PkceCodeChallenge::new_random_sha256();
    let flow_state = random_token(32);
    let flow = SignInFlow {
        provider: start.provider.to_owned(),
        redirect_uri: start.redirect_uri,
        code_challenge: start.code_challenge,
        pkce_verifier: pkce_verifier.secret().clone(),
        nonce: random_token(32),
    };
    sign_in_flows::save(&state.ports, &flow_state, &flow).await?;
    let callback = providers::callback_url(start.public_url, start.provider);
    let target = handle
        .authorize_url(&callback, &flow_state, &flow.nonce, pkce_challenge)
        .await
        .map_err(provider_error)?;
    let secure = if start.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{FLOW_COOKIE}={flow_state}; Path=/v1/auth/callback; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
        sign_in_flows::LIFETIME_SECS
    );
    let mut response = Redirect::to(&target).into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("cookie is ASCII"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The provider configured under `name`, or 404.
pub fn configured(state: &AppState, name: &str) -> Result<Arc<providers::Provider>, ApiError> {
    state
        .providers
        .get(name)
        .cloned()
        .ok_or_else(|| ApiError::NotFound(format!("sign-in provider {name} is not configured")))
}

/// A provider's failure as the API answers it.
pub fn provider_error(e: providers::ProviderError) -> ApiError {
    match &e {
        providers::ProviderError::Upstream(_) => ApiError::Backend {
            message: "the sign-in provider is unavailable, please retry".into(),
            cause: anyhow::Error::new(e),
        },
        providers::ProviderError::Rejected(reason) => {
            // A refused answer is not a server failure (400), so it is not in the error log.
            tracing::warn!(%reason, "identity provider answer rejected");
            ApiError::BadRequest("sign-in with the provider failed".into())
        }
    }
}
