//! The desktop sign-in flow with identity providers: the start (PKCE, loopback redirect,
//! flow cookie) and the provider's callback (account by [`credentials::provider_sign_in`], one-time code).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, HeaderValue, header};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::public_url::PublicUrl;
use crate::http::{ApiError, ApiQuery};
use crate::state::AppState;
use paddock_clients::identity_providers as providers;
use paddock_core::credentials;
use paddock_core::identity::exchange_codes;
use paddock_core::identity::provider_accounts::ProviderSignInError;
use paddock_core::identity::sign_in_flows;
use paddock_core::problems::{FieldProblems, Problems};
use paddock_http::client_addr::ClientAddr;
use paddock_http::provider_flows::{self, FLOW_COOKIE, configured, provider_error};

/// Query of `GET /v1/auth/login/{provider}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoginStart {
    /// The desktop's loopback listener: `http://127.0.0.1|[::1]|localhost:<port>/callback`.
    #[param(required = true, value_type = String,
        pattern = "^http://(127\\.0\\.0\\.1|\\[::1\\]|localhost)(:[0-9]{1,5})?/callback(\\?[^#]*)?$")]
    pub redirect_uri: Option<String>,
    /// The S256 PKCE challenge: 43 to 128 characters of A-Z a-z 0-9 - . _ ~.
    #[param(required = true, value_type = String, pattern = "^[A-Za-z0-9._~-]{43,128}$")]
    pub code_challenge: Option<String>,
    /// `S256` (the default); `plain` is refused.
    #[param(value_type = Option<String>, pattern = "^S256$")]
    pub code_challenge_method: Option<String>,
}

/// Whether `v` is a PKCE verifier or challenge: 43 to 128 unreserved characters.
pub(super) fn is_pkce_value(v: &str) -> bool {
    (43..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

const PKCE_RULE: &str = "must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~";
const REDIRECT_RULE: &str =
    "must be http://127.0.0.1, [::1] or localhost with a port and path /callback";

/// The permitted desktop redirect: `http` on a loopback host, any port, path `/callback`,
/// no user info, no fragment.
pub fn check_redirect_uri(raw: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(raw).map_err(|_| REDIRECT_RULE.to_owned())?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    let ok = url.scheme() == "http"
        && loopback
        && url.path() == "/callback"
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none();
    if ok {
        Ok(url)
    } else {
        Err(REDIRECT_RULE.to_owned())
    }
}

/// A sign-in start whose parameters parsed.
struct LoginStartForm {
    redirect: reqwest::Url,
    code_challenge: String,
}

impl TryFrom<LoginStart> for LoginStartForm {
    type Error = FieldProblems;

    fn try_from(query: LoginStart) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let redirect = p.required("redirect_uri", query.redirect_uri, |raw| {
            check_redirect_uri(&raw)
        });
        let code_challenge = p.required("code_challenge", query.code_challenge, |c| {
            if is_pkce_value(&c) {
                Ok(c)
            } else {
                Err(PKCE_RULE.to_owned())
            }
        });
        match query.code_challenge_method.as_deref() {
            None | Some("S256") => {}
            Some(_) => p.add("code_challenge_method", "only S256 is supported"),
        }
        let form = redirect
            .zip(code_challenge)
            .map(|(redirect, code_challenge)| Self {
                redirect,
                code_challenge,
            });
        p.into_result(form)
    }
}

/// Starts the desktop sign-in with a provider.
#[utoipa::path(get, path = "/v1/auth/login/{provider}", operation_id = "startProviderLogin", tag = "auth",
    params(("provider" = String, Path, description = "A configured provider, e.g. google"), LoginStart),
    responses((status = 303, description = "To the provider, with a sign-in cookie"),
              (status = 400, description = "redirect_uri or code_challenge not permitted"),
              (status = 404, description = "Provider not configured"), (status = 429, description = "Too many sign-in starts")))]
pub async fn login_provider(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    ClientAddr(addr): ClientAddr,
    PublicUrl(public_url): PublicUrl,
    ApiQuery(query): ApiQuery<LoginStart>,
) -> Result<Response, ApiError> {
    let form = LoginStartForm::try_from(query)?;
    let provider = provider.to_ascii_lowercase();
    provider_flows::start(
        &state,
        provider_flows::Start {
            provider: &provider,
            addr: &addr,
            public_url: &public_url,
            redirect_uri: form.redirect.to_string(),
            code_challenge: form.code_challenge,
        },
    )
    .await
}

/// Query of the provider's redirect back to us.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    /// The provider's authorization code.
    pub code: Option<String>,
    /// The flow state the sign-in started with; must match the sign-in cookie.
    #[param(required = true, value_type = String)]
    pub state: Option<String>,
    /// The provider's error code, when the driver declined.
    pub error: Option<String>,
}

/// The provider's redirect target: signs the user in and sends the browser to the desktop
/// listener with a one-time code (never a token).
#[utoipa::path(get, path = "/v1/auth/callback/{provider}", operation_id = "completeProviderLogin", tag = "auth",
    params(("provider" = String, Path, description = "The provider the flow started with"), CallbackQuery,
           ("paddock_signin" = Option<String>, Cookie, description = "The sign-in cookie set at the start; must equal `state`")),
    responses((status = 303, description = "To redirect_uri?code=... (or ?error=... when the driver declined)"),
              (status = 400, description = "Unknown state, missing cookie or provider mix-up"),
              (status = 404, description = "Provider not configured"),
              (status = 409, description = "Concurrent sign-ins of one account; retry")))]
pub async fn callback(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    public_url: PublicUrl,
    ApiQuery(query): ApiQuery<CallbackQuery>,
) -> Result<Response, ApiError> {
    let outcome = complete_sign_in(state, provider, headers, public_url, query).await;
    super::count_sign_in("provider", &outcome);
    outcome
}

/// The provider sign-in of [`callback`], its outcome counted by the caller.
async fn complete_sign_in(
    state: AppState,
    provider: String,
    headers: HeaderMap,
    PublicUrl(public_url): PublicUrl,
    query: CallbackQuery,
) -> Result<Response, ApiError> {
    let flow_state = query
        .state
        .ok_or_else(|| ApiError::invalid("state", "is required"))?;
    let cookie = paddock_http::cookies::value(&headers, FLOW_COOKIE)
        .map(str::to_owned)
        .ok_or_else(|| {
            ApiError::BadRequest("sign-in cookie missing: start again from the desktop app".into())
        })?;
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        cookie.as_bytes(),
        flow_state.as_bytes(),
    )) {
        return Err(ApiError::BadRequest(
            "state does not belong to this browser".into(),
        ));
    }
    let flow = sign_in_flows::take(&state.ports, &flow_state)
        .await?
        .ok_or_else(|| ApiError::BadRequest("state is unknown or expired".into()))?;
    let provider_name = provider.to_ascii_lowercase();
    if flow.provider != provider_name {
        return Err(ApiError::BadRequest(
            "state was issued for another provider".into(),
        ));
    }
    let mut target =
        reqwest::Url::parse(&flow.redirect_uri).map_err(|e| ApiError::Internal(e.into()))?;
    if let Some(error) = query.error {
        let error: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        target.query_pairs_mut().append_pair("error", &error);
        return Ok(Redirect::to(target.as_str()).into_response());
    }
    let code = query
        .code
        .ok_or_else(|| ApiError::invalid("code", "is required"))?;
    let handle = configured(&state, &provider_name)?;
    let secret = match handle.config().client_secret.clone() {
        Some(s) => Some(s),
        None => state
            .ports
            .secrets
            .get(&format!("{provider_name}ClientSecret"))
            .await?
            .map(Into::into),
    };
    let callback = providers::callback_url(&public_url, &provider_name);
    let identity = handle
        .identify(&callback, secret, &code, &flow.pkce_verifier, &flow.nonce)
        .await
        .map_err(provider_error)?;
    let user_id = credentials::provider_sign_in(&state.ports, &provider_name, &identity)
        .await
        .map_err(|e| match e {
            ProviderSignInError::Contended => ApiError::Conflict(e.to_string()),
            ProviderSignInError::Store(s) => s.into(),
        })?;
    let code = exchange_codes::issue(&state.ports, &user_id, &flow.code_challenge).await?;
    target.query_pairs_mut().append_pair("code", &code);
    let mut response = Redirect::to(target.as_str()).into_response();
    let clear =
        format!("{FLOW_COOKIE}=; Path=/v1/auth/callback; Max-Age=0; HttpOnly; SameSite=Lax");
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&clear).expect("ASCII"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::check_redirect_uri;

    #[test]
    fn only_loopback_callbacks_are_permitted() {
        for ok in [
            "http://127.0.0.1:53123/callback",
            "http://[::1]:8080/callback",
            "http://localhost:1/callback",
            "http://127.0.0.1:5000/callback?x=1",
        ] {
            assert!(check_redirect_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example/callback",
            "http://evil.example/callback",
            "https://127.0.0.1:5000/callback",
            "http://127.0.0.1:5000/other",
            "http://user:pw@127.0.0.1:5000/callback",
            "http://127.0.0.1:5000/callback#frag",
            "http://127.0.0.1.evil.example/callback",
            "http://localhost.evil.example:80/callback",
            "javascript:alert(1)",
            "",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
    }
}
