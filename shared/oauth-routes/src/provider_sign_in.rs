//! Signing in on the consent pages with an identity provider: the provider's flow started
//! with its one-time code bound to a verifier kept in a cookie of these pages, and the way
//! back from the provider's callback, where the code is redeemed in the same browser, the
//! driver signed in on these pages and the authorization request shown again.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};

use crate::authorize::{SESSION_COOKIE, checked, problem, set_cookie, unavailable};
use crate::form::Params;
use paddock_authorization::authorization::PARAMETERS;
use paddock_authorization::consent_sessions;
use paddock_core::identity::{exchange_codes, sign_in_flows};
use paddock_http::client_addr::ClientAddr;
use paddock_http::cookies::value as cookie;
use paddock_http::http::public_url::PublicUrl;
use paddock_http::provider_flows;
use paddock_http::state::AppState;

/// The cookie of a provider sign-in started on these pages: the verifier its one-time code
/// is bound to.
const PROVIDER_COOKIE: &str = "paddock_oauth_provider";

/// Signing in on these pages with an identity provider: the provider's flow is started with
/// its one-time code bound to a verifier kept in a cookie of these pages, and the callback
/// sends the browser to [`signed_in_with_provider`] with the request to show again.
#[utoipa::path(get, path = "/oauth/provider/{provider}", operation_id = "startConsentProviderSignIn", tag = "oauth",
    params(("provider" = String, Path, description = "A configured provider, e.g. google"),
           ("client_id" = String, Query, description = "The authorization request's parameters, as `/oauth/authorize` takes them")),
    security(()),
    responses((status = 303, description = "To the provider"),
              (status = 400, description = "A bad authorization request (HTML naming it)", content_type = "text/html", body = String),
              (status = 404, description = "Provider not configured"),
              (status = 429, description = "Too many sign-in starts")))]
pub(crate) async fn provider_sign_in(
    State(state): State<AppState>,
    PublicUrl(issuer): PublicUrl,
    ClientAddr(addr): ClientAddr,
    Path(provider): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs = Params::parse(query.unwrap_or_default().as_bytes()).0;
    if let Err(answer) = checked(&state, &issuer, &addr, &pairs, StatusCode::FOUND).await {
        return answer;
    }
    let request = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(Params(pairs).only(&PARAMETERS))
        .finish();
    let back = form_urlencoded::Serializer::new(format!("{issuer}/oauth/signed-in?"))
        .append_pair("request", &request)
        .finish();
    let verifier = paddock_core::hashing::random_token(32);
    let provider = provider.to_ascii_lowercase();
    let start = provider_flows::Start {
        provider: &provider,
        addr: &addr,
        public_url: &issuer,
        redirect_uri: back,
        code_challenge: paddock_core::hashing::s256(&verifier),
    };
    match provider_flows::start(&state, start).await {
        Ok(mut response) => {
            let max_age = sign_in_flows::LIFETIME_SECS;
            set_cookie(&mut response, &issuer, PROVIDER_COOKIE, &verifier, max_age);
            response
        }
        Err(refused) => refused.into_response(),
    }
}

/// Where a provider sign-in started on these pages comes back (from the provider's callback):
/// the one-time code redeemed with the verifier of this browser's cookie, the driver signed in
/// on these pages, and the authorization request shown again.
#[utoipa::path(get, path = "/oauth/signed-in", operation_id = "completeConsentProviderSignIn", tag = "oauth",
    params(("request" = String, Query, description = "The authorization request to show again"),
           ("code" = Option<String>, Query, description = "The one-time code of the sign-in"),
           ("error" = Option<String>, Query, description = "The provider's error, when the driver declined")),
    security(()),
    responses((status = 303, description = "To the authorization request: the consent, or the sign-in form again"),
              (status = 400, description = "No request, or a code this browser cannot redeem (HTML)", content_type = "text/html", body = String)))]
pub(crate) async fn signed_in_with_provider(
    State(state): State<AppState>,
    PublicUrl(issuer): PublicUrl,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let params = Params::parse(query.unwrap_or_default().as_bytes());
    let Ok(Some(request)) = params.one("request") else {
        return problem(StatusCode::BAD_REQUEST, "No request", "request: required");
    };
    let request = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(Params::parse(request.as_bytes()).only(&PARAMETERS))
        .finish();
    let mut back = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, format!("/oauth/authorize?{request}"))],
    )
        .into_response();
    set_cookie(&mut back, &issuer, PROVIDER_COOKIE, "", 0);
    let (Ok(Some(code)), Some(verifier)) = (params.one("code"), cookie(&headers, PROVIDER_COOKIE))
    else {
        // Declined at the provider, or started in another browser: the sign-in form again.
        return back;
    };
    let driver = match exchange_codes::redeem(&state.ports, code, verifier).await {
        Ok(driver) => driver,
        Err(exchange_codes::ExchangeError::Store(e)) => return unavailable(e),
        Err(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "This sign-in cannot be completed",
                "It was started in another browser, or it was completed already. Start again from the app.",
            );
        }
    };
    let keys = match state.access_tokens().await {
        Ok(keys) => keys,
        Err(e) => return unavailable(e),
    };
    let session = consent_sessions::issue(&keys, &issuer, &driver, state.ports.clock.unix());
    set_cookie(
        &mut back,
        &issuer,
        SESSION_COOKIE,
        &session,
        consent_sessions::LIFETIME_SECS,
    );
    back
}
