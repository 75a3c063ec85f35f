//! `/oauth/authorize`: the authorization request, the consent page and its form.
//!
//! `GET` checks the request ([`authorization::check`]) and shows the consent (or, for a driver
//! not signed in on these pages, the sign-in form first); a driver who already approved the
//! same scopes goes straight back to the app with a code. `POST` is the page's form: a
//! sign-in, an approval or a denial, each with the request carried in hidden fields and
//! checked again.
//!
//! Cookies, both `HttpOnly`, `SameSite=Lax` and scoped to `/oauth` (`Secure` on https): the
//! session of a driver who signed in on the page (ten minutes), and a random value whose
//! hash every form must carry, so another site cannot post the form for the driver. A form
//! from another origin (`Origin`, `Sec-Fetch-Site`) is refused as well, and no page can be
//! framed.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::consent_page::{self, AppShown, Maker};
use crate::form::{Params, is_form};
use paddock_authorization::authorization::{
    self, AuthorizationRequest, PARAMETERS, Refusal, RequestingClient,
};
use paddock_authorization::{client_documents, consent_sessions};
use paddock_core::identity::fields::{Email, login_password};
use paddock_core::identity::password_sign_in::{self, SignInError};
use paddock_core::identity::users;
use paddock_core::ids::UserId;
use paddock_core::ports::items::StoreError;
use paddock_core::rate_limits::{self, Limit, LimitError};
use paddock_http::client_addr::ClientAddr;
use paddock_http::cookies::value as cookie;
use paddock_http::http::public_url::PublicUrl;
use paddock_http::state::AppState;

/// The cookie of a driver signed in on the consent pages.
pub(crate) const SESSION_COOKIE: &str = "paddock_oauth_session";
/// The cookie whose hash the pages' forms carry.
const FORM_COOKIE: &str = "paddock_oauth_form";
/// How long the form cookie lives.
const FORM_COOKIE_SECS: i64 = 3600;

/// A page answer: HTML that no cache keeps, no frame shows and whose forms go only here (and
/// to the app, where the answer sends the driver).
fn page(status: StatusCode, html: String, app_origin: Option<&str>) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(headers, header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(headers, header::CACHE_CONTROL, "no-store");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    // Not `no-referrer`: under it a browser sends `Origin: null` with the page's own forms,
    // which the form check could not tell from another site's. The app is told nothing.
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        &consent_page::content_security_policy(app_origin),
    );
    response
}

/// A page for a request that cannot go back to its app.
pub(crate) fn problem(status: StatusCode, title: &str, message: &str) -> Response {
    page(status, consent_page::problem(title, message), None)
}

/// The driver sent back to the app at `url`.
fn back_to_app(status: StatusCode, url: &str) -> Response {
    let mut response = status.into_response();
    if let Ok(location) = HeaderValue::from_str(url) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

pub(crate) fn unavailable(e: impl std::fmt::Display) -> Response {
    tracing::warn!(error = %e, "the consent page could not be answered");
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again",
        "Paddock could not answer just now. Reload the page in a moment.",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The checked request, or the answer that refuses it. A client's metadata document that
/// must be fetched counts against the address `addr` (`Auth__ProviderStartsPerAddress`, as a
/// provider sign-in's start does): these pages are public, and each fetch is a request this
/// server sends wherever the `client_id` points.
pub(crate) async fn checked(
    state: &AppState,
    issuer: &str,
    addr: &str,
    pairs: &[(String, String)],
    status: StatusCode,
) -> Result<AuthorizationRequest, Response> {
    let documents = state.client_documents();
    let client_id = pairs.iter().find(|(k, _)| k == "client_id").map(|(_, v)| v);
    if let Some(client_id) = client_id
        && client_documents::is_document_client(client_id)
        && !documents.is_kept(client_id, state.ports.clock.unix())
    {
        let auth = &state.settings.auth;
        let limit = Limit::new("fetches", auth.provider_starts_per_address);
        let window = auth.rate_window_secs;
        match rate_limits::hit(&state.ports, "client-document", addr, window, &[limit]).await {
            Ok(()) => {}
            Err(LimitError::Limited(limited)) => {
                let mut answer = problem(
                    StatusCode::TOO_MANY_REQUESTS,
                    "Too many apps asked for from this address",
                    "Wait a few minutes and try again.",
                );
                if let Ok(after) = HeaderValue::from_str(&limited.retry_after_secs.to_string()) {
                    answer.headers_mut().insert(header::RETRY_AFTER, after);
                }
                return Err(answer);
            }
            Err(LimitError::Store(e)) => return Err(unavailable(e)),
        }
    }
    authorization::check(&state.ports, &documents, issuer, pairs)
        .await
        .map_err(|refusal| match refusal {
            Refusal::Page(message) => problem(
                StatusCode::BAD_REQUEST,
                "This request cannot be answered",
                &message,
            ),
            Refusal::Redirect(url) => back_to_app(status, &url),
            Refusal::Store(e) => unavailable(e),
        })
}

/// A cookie of these pages (`Secure` when they are served over https).
pub(crate) fn set_cookie(
    response: &mut Response,
    issuer: &str,
    name: &str,
    value: &str,
    max_age: i64,
) {
    let secure = if issuer.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let text =
        format!("{name}={value}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}");
    if let Ok(value) = HeaderValue::from_str(&text) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// What a form must carry for the form cookie `value`.
fn form_token(value: &str) -> String {
    paddock_core::hashing::sha256_hex(&format!("consent-form:{value}"))[..32].to_owned()
}

/// The origin (`scheme://host[:port]`) of `url`.
fn origin_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

/// The driver signed in on these pages, if their session cookie is valid.
async fn signed_in(
    state: &AppState,
    issuer: &str,
    headers: &HeaderMap,
) -> Result<Option<UserId>, Response> {
    let Some(value) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let keys = state.access_tokens().await.map_err(unavailable)?;
    Ok(consent_sessions::signed_in(
        &keys,
        issuer,
        value,
        state.ports.clock.unix(),
    ))
}

/// Everything a page needs to show about the request.
struct Shown {
    app_name: String,
    maker: Maker,
    params: Vec<(String, String)>,
    form_cookie: String,
    new_form_cookie: bool,
    app_origin: Option<String>,
}

async fn shown(
    state: &AppState,
    request: &AuthorizationRequest,
    pairs: &[(String, String)],
    headers: &HeaderMap,
) -> Result<Shown, StoreError> {
    let maker = match &request.client {
        RequestingClient::Registered(app) => Maker::Driver(
            users::get(&state.ports, &app.owner_id)
                .await?
                .map_or_else(|| "a Paddock driver".into(), |o| o.display_name),
        ),
        RequestingClient::Document(document) => Maker::Site(document.host.clone()),
    };
    let (form_cookie, new_form_cookie) = match cookie(headers, FORM_COOKIE) {
        Some(value) if value.len() == 43 => (value.to_owned(), false),
        _ => (paddock_core::hashing::random_token(32), true),
    };
    Ok(Shown {
        app_name: request.client.name().to_owned(),
        maker,
        params: pairs.to_vec(),
        form_cookie,
        new_form_cookie,
        app_origin: origin_of(&request.redirect_uri),
    })
}

/// The sign-in form or the consent for `driver`, with the form cookie set when new.
async fn form_page(
    state: &AppState,
    issuer: &str,
    request: &AuthorizationRequest,
    shown: &Shown,
    driver: Option<&UserId>,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let app = AppShown {
        name: &shown.app_name,
        maker: &shown.maker,
    };
    let csrf = form_token(&shown.form_cookie);
    let html = if let Some(driver) = driver {
        let name = match users::get(&state.ports, driver).await {
            Ok(user) => user.map(|u| u.display_name).unwrap_or_default(),
            Err(e) => return unavailable(e),
        };
        consent_page::consent(&app, &request.scopes, &name, &shown.params, &csrf)
    } else {
        let providers: Vec<&str> = state.providers.keys().map(String::as_str).collect();
        consent_page::sign_in(&app, &shown.params, &csrf, error, &providers)
    };
    let mut response = page(status, html, shown.app_origin.as_deref());
    if shown.new_form_cookie {
        set_cookie(
            &mut response,
            issuer,
            FORM_COOKIE,
            &shown.form_cookie,
            FORM_COOKIE_SECS,
        );
    }
    response
}

/// The approval of `request` by `driver`: back to the app with a code.
async fn approved(
    state: &AppState,
    issuer: &str,
    request: &AuthorizationRequest,
    driver: &UserId,
    status: StatusCode,
) -> Response {
    match request.approve(&state.ports, issuer, driver).await {
        Ok(url) => back_to_app(status, &url),
        Err(e) => unavailable(e),
    }
}

/// Asks the signed-in driver to approve an app's request (signing in on the page first when
/// needed); a driver who approved the same scopes before goes back to the app at once.
#[utoipa::path(get, path = "/oauth/authorize", operation_id = "authorizeApp", tag = "oauth",
    params(("response_type" = String, Query, description = "`code`"),
           ("client_id" = String, Query, description = "The app's client id, or the https URL of the client's metadata document"),
           ("redirect_uri" = String, Query, description = "One of the app's redirect URIs, byte for byte (a loopback URI's port may differ)"),
           ("state" = String, Query, description = "Sent back unchanged (at most 512 characters)"),
           ("code_challenge" = String, Query, description = "PKCE: base64url of the SHA-256 of the verifier (43 characters)"),
           ("code_challenge_method" = String, Query, description = "`S256`"),
           ("scope" = String, Query, description = "Space-separated scopes"),
           ("resource" = Option<String>, Query, description = "The REST API's or the MCP endpoint's identifier (RFC 8707); default the REST API")),
    security(()),
    responses((status = 200, description = "The consent page, or the sign-in form before it", content_type = "text/html", body = String),
              (status = 302, description = "Back to the app: a code (already approved) or an error, with `state` and `iss`"),
              (status = 400, description = "An unknown app or redirect URI, or a client metadata document that cannot be read or breaks a rule: shown, never sent to the URI", content_type = "text/html", body = String)))]
pub(crate) async fn authorize(
    State(state): State<AppState>,
    PublicUrl(issuer): PublicUrl,
    ClientAddr(addr): ClientAddr,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let pairs = Params::parse(query.unwrap_or_default().as_bytes()).0;
    let request = match checked(&state, &issuer, &addr, &pairs, StatusCode::FOUND).await {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    let driver = match signed_in(&state, &issuer, &headers).await {
        Ok(driver) => driver,
        Err(answer) => return answer,
    };
    if let Some(driver) = &driver {
        match request.already_approved(&state.ports, driver).await {
            Ok(true) => {
                return approved(&state, &issuer, &request, driver, StatusCode::FOUND).await;
            }
            Ok(false) => {}
            Err(e) => return unavailable(e),
        }
    }
    let carried = Params(pairs).only(&PARAMETERS);
    match shown(&state, &request, &carried, &headers).await {
        Ok(shown) => {
            form_page(
                &state,
                &issuer,
                &request,
                &shown,
                driver.as_ref(),
                StatusCode::OK,
                None,
            )
            .await
        }
        Err(e) => unavailable(e),
    }
}

/// Whether a form came from these pages: its token matches the form cookie, and the browser
/// says it was posted from this origin.
fn from_these_pages(params: &Params, headers: &HeaderMap, issuer: &str) -> bool {
    let token_matches = match (cookie(headers, FORM_COOKIE), params.one("csrf")) {
        (Some(value), Ok(Some(sent))) => form_token(value) == sent,
        _ => false,
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let same_origin = header("origin").is_none_or(|o| Some(o.to_owned()) == origin_of(issuer));
    let same_site = header("sec-fetch-site").is_none_or(|s| s == "same-origin");
    token_matches && same_origin && same_site
}

/// The consent page's form: `action=sign_in` (with `email` and `password`), `approve` or
/// `deny`, the request carried in hidden fields.
#[utoipa::path(post, path = "/oauth/authorize", operation_id = "answerAuthorization", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "The page's form: the authorization request's parameters, `csrf`, `action` (`sign_in`, `approve`, `deny`), and `email` and `password` to sign in"),
    security(()),
    responses((status = 200, description = "The consent page after signing in", content_type = "text/html", body = String),
              (status = 303, description = "Back to the app: a code or `access_denied`, with `state` and `iss`"),
              (status = 400, description = "A bad request or form (HTML naming it)", content_type = "text/html", body = String),
              (status = 401, description = "Wrong email or password, or the page's sign-in expired (the form again)", content_type = "text/html", body = String),
              (status = 403, description = "The form was not posted from this page (HTML)", content_type = "text/html", body = String),
              (status = 429, description = "Too many sign-in attempts (HTML, with Retry-After)", content_type = "text/html", body = String)))]
pub(crate) async fn answer(
    State(state): State<AppState>,
    PublicUrl(issuer): PublicUrl,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !is_form(&headers) {
        return problem(
            StatusCode::BAD_REQUEST,
            "Not a form",
            "The consent page posts a form; nothing else is taken here.",
        );
    }
    let params = Params::parse(&body);
    let carried = params.only(&PARAMETERS);
    let request = match checked(&state, &issuer, &addr, &carried, StatusCode::SEE_OTHER).await {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    if !from_these_pages(&params, &headers, &issuer) {
        return problem(
            StatusCode::FORBIDDEN,
            "This form has expired",
            "The form was not sent from this page, or too long ago.",
        );
    }
    let shown = match shown(&state, &request, &carried, &headers).await {
        Ok(shown) => shown,
        Err(e) => return unavailable(e),
    };
    match params.one("action") {
        Ok(Some("sign_in")) => sign_in(&state, &issuer, &addr, &params, &request, &shown).await,
        Ok(Some("approve")) => match signed_in(&state, &issuer, &headers).await {
            Ok(Some(driver)) => {
                approved(&state, &issuer, &request, &driver, StatusCode::SEE_OTHER).await
            }
            Ok(None) => {
                let why = Some("Your sign-in on this page expired. Sign in again.");
                form_page(
                    &state,
                    &issuer,
                    &request,
                    &shown,
                    None,
                    StatusCode::UNAUTHORIZED,
                    why,
                )
                .await
            }
            Err(answer) => answer,
        },
        Ok(Some("deny")) => back_to_app(StatusCode::SEE_OTHER, &request.deny(&issuer)),
        _ => problem(
            StatusCode::BAD_REQUEST,
            "Not a form of this page",
            "action: must be sign_in, approve or deny",
        ),
    }
}

/// The page's sign-in: with the email and password right, the driver's session cookie is set
/// and the consent shown (or, already approved, the driver goes back to the app).
async fn sign_in(
    state: &AppState,
    issuer: &str,
    addr: &str,
    params: &Params,
    request: &AuthorizationRequest,
    shown: &Shown,
) -> Response {
    let again = |status, why: &str| {
        let why = why.to_owned();
        async move { form_page(state, issuer, request, shown, None, status, Some(&why)).await }
    };
    let email = params.one("email").ok().flatten().map(Email::parse);
    let password = params.one("password").ok().flatten().map(login_password);
    let (Some(Ok(email)), Some(Ok(password))) = (email, password) else {
        return again(
            StatusCode::BAD_REQUEST,
            "Enter your email address and your password.",
        )
        .await;
    };
    let hasher = match state.passwords() {
        Ok(hasher) => hasher,
        Err(e) => return unavailable(e),
    };
    let checked = password_sign_in::check(
        &state.ports,
        hasher,
        &state.settings.auth,
        addr,
        &email,
        password,
    )
    .await;
    let driver = match checked {
        Ok((user, remember)) => {
            if let Some(remember) = remember
                && let Err(e) = state.ports.items.transact(vec![remember]).await
            {
                tracing::warn!(error = %e, "remembering a sign-in's address failed");
            }
            user.id
        }
        Err(SignInError::WrongCredentials) => {
            return again(StatusCode::UNAUTHORIZED, "Wrong email or password.").await;
        }
        Err(SignInError::Limited(limited)) => {
            let mut response = again(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts. Wait a few minutes and try again.",
            )
            .await;
            if let Ok(after) = HeaderValue::from_str(&limited.retry_after_secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, after);
            }
            return response;
        }
        Err(e) => return unavailable(e),
    };
    let keys = match state.access_tokens().await {
        Ok(keys) => keys,
        Err(e) => return unavailable(e),
    };
    let session = consent_sessions::issue(&keys, issuer, &driver, state.ports.clock.unix());
    let mut response = match request.already_approved(&state.ports, &driver).await {
        Ok(true) => approved(state, issuer, request, &driver, StatusCode::SEE_OTHER).await,
        Ok(false) => {
            form_page(
                state,
                issuer,
                request,
                shown,
                Some(&driver),
                StatusCode::OK,
                None,
            )
            .await
        }
        Err(e) => return unavailable(e),
    };
    set_cookie(
        &mut response,
        issuer,
        SESSION_COOKIE,
        &session,
        consent_sessions::LIFETIME_SECS,
    );
    response
}
