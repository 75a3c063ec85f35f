//! `/v1/auth`: email and password, tokens, and the desktop sign-in flow with providers.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use oauth2::PkceCodeChallenge;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::http::auth_user::{AuthUser, ClientAddr, bearer};
use crate::http::extract::json_body;
use crate::http::{ApiError, ApiJson, ApiQuery, Envelope, ok};
use crate::identity::exchange_codes::{self, ExchangeError};
use crate::identity::fields::{DisplayName, Email, Password, Problems, login_password};
use crate::identity::password_changes::{self, PasswordChangeError};
use crate::identity::provider_accounts::{self, ProviderSignInError};
use crate::identity::rate_limits::{self, Limit, LimitError};
use crate::identity::refresh_tokens::{self, RefreshError};
use crate::identity::sign_in_flows::{self, SignInFlow};
use crate::identity::users::{self, RegisterError, User};
use crate::identity::{providers, random_token};
use crate::ports::clock::rfc3339;
use crate::state::AppState;

/// The auth routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/auth/register", post(register))
        .route("/v1/auth/login/email", post(login_email))
        .route("/v1/auth/refresh", post(refresh))
        .route("/v1/auth/logout", post(logout))
        .route("/v1/auth/validate", get(validate))
        .route("/v1/auth/password", post(set_password))
        .route("/v1/auth/exchange", post(exchange))
        .route("/v1/auth/login/{provider}", get(login_provider))
        .route("/v1/auth/callback/{provider}", get(callback))
        .route("/v1/auth/{provider}", get(login_provider))
}

const FLOW_COOKIE: &str = "paddock_signin";

/// `POST /v1/auth/register` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    pub email: Option<String>,
    pub password: Option<String>,
    pub display_name: Option<String>,
}

/// `POST /v1/auth/login/email` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginRequest {
    pub email: Option<String>,
    pub password: Option<String>,
}

/// Body carrying a refresh token (`/refresh`, `/logout`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshRequest {
    pub refresh_token: Option<String>,
}

/// `POST /v1/auth/exchange` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeRequest {
    pub code: Option<String>,
    pub code_verifier: Option<String>,
}

/// Tokens issued at sign-in or refresh.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenResponse {
    pub access_token: String,
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Access-token lifetime in seconds.
    pub expires_in: i64,
    pub user: User,
}

/// `GET /v1/auth/validate` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateResponse {
    pub valid: bool,
    pub user_id: String,
    /// RFC 3339 expiry of the presented token.
    pub expires_at: String,
}

fn required(problems: &mut Problems, field: &str, value: Option<String>) -> Option<String> {
    if value.is_none() {
        problems.add(field, "is required");
    }
    value
}

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

/// The per-address cap on registrations and logins.
fn address_limit(state: &AppState) -> Limit {
    Limit::new("all", state.settings.auth.attempts_per_address)
}

/// Creates an account and signs it in.
#[utoipa::path(post, path = "/v1/auth/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, description = "Account created; tokens issued", body = inline(Envelope<TokenResponse>)),
              (status = 400, description = "A field breaks a rule"), (status = 409, description = "Email already registered"),
              (status = 415, description = "Not a JSON body"),
              (status = 429, description = "Too many attempts from this address"),
              (status = 503, description = "Password hashing is saturated; retry after Retry-After")))]
pub async fn register(
    State(state): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let window = state.settings.auth.rate_window_secs;
    let limits = [address_limit(&state)];
    // An address over its cap is turned away before its body is parsed.
    rate_limits::check(&state.ports, "auth", &addr, window, &limits).await?;
    let body: RegisterRequest = json_body(&headers, &body)?;
    let mut p = Problems::default();
    let email =
        required(&mut p, "email", body.email).and_then(|e| p.check("email", Email::parse(&e)));
    let password = required(&mut p, "password", body.password)
        .and_then(|pw| p.check("password", Password::parse(&pw)));
    let name = required(&mut p, "displayName", body.display_name)
        .and_then(|n| p.check("displayName", DisplayName::parse(&n)));
    p.finish()?;
    let (email, password, name) = (
        email.expect("checked"),
        password.expect("checked"),
        name.expect("checked"),
    );
    rate_limits::hit(&state.ports, "auth", &addr, window, &limits).await?;

    let hash = state.passwords()?.hash(password).await?;
    let user = User::new(
        Some(email.as_str().to_owned()),
        name.as_str().to_owned(),
        None,
        state.ports.clock.now(),
    );
    match users::register(&state.ports, &user, &email.normalized(), hash).await {
        Ok(()) => token_response(&state, user, StatusCode::CREATED).await,
        Err(RegisterError::EmailTaken) => Err(ApiError::Conflict(
            "email: an account with this email already exists".into(),
        )),
        Err(RegisterError::Store(e)) => Err(e.into()),
    }
}

/// The counter name of an account in rate limits: part of the email's hash, so the limits
/// table holds no addresses.
fn account_subject(email: &Email) -> String {
    crate::identity::sha256_hex(&email.normalized())[..32].to_owned()
}

/// The per-account limit on failed logins, from any address.
fn failure_limit(state: &AppState) -> [Limit; 1] {
    [Limit::new(
        "failed",
        state.settings.auth.failed_logins_per_account,
    )]
}

/// Counts a failed attempt against the account; only a store failure is an error here.
async fn count_failure(state: &AppState, scope: &str, subject: &str) -> Result<(), ApiError> {
    let window = state.settings.auth.failed_login_window_secs;
    match rate_limits::hit(&state.ports, scope, subject, window, &failure_limit(state)).await {
        Ok(()) | Err(LimitError::Limited(_)) => Ok(()),
        Err(LimitError::Store(e)) => Err(e.into()),
    }
}

/// Signs in with email and password.
#[utoipa::path(post, path = "/v1/auth/login/email", tag = "auth", request_body = LoginRequest,
    responses((status = 200, description = "Tokens issued", body = inline(Envelope<TokenResponse>)),
              (status = 400, description = "A field breaks a rule (the password is at most 256 characters)"),
              (status = 401, description = "Wrong email or password (one message for both)"),
              (status = 415, description = "Not a JSON body"),
              (status = 429, description = "More than 10 attempts in 5 minutes, or the account's failure limit from an address it never signed in from"),
              (status = 503, description = "Password hashing is saturated; retry after Retry-After")))]
pub async fn login_email(
    State(state): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let auth = &state.settings.auth;
    rate_limits::check(
        &state.ports,
        "auth",
        &addr,
        auth.rate_window_secs,
        &[address_limit(&state)],
    )
    .await?;
    let body: LoginRequest = json_body(&headers, &body)?;
    let mut p = Problems::default();
    let email =
        required(&mut p, "email", body.email).and_then(|e| p.check("email", Email::parse(&e)));
    let password = required(&mut p, "password", body.password)
        .and_then(|pw| p.check("password", login_password(&pw)));
    p.finish()?;
    let (email, password) = (email.expect("checked"), password.expect("checked"));
    let account = account_subject(&email);
    // One update counts the attempt against the address and against (address, account).
    let limits = [
        address_limit(&state),
        Limit::new(
            format!("account:{account}"),
            auth.login_attempts_per_account,
        ),
    ];
    rate_limits::hit(&state.ports, "auth", &addr, auth.rate_window_secs, &limits).await?;
    // Guessing one account from many addresses: past the per-account failure limit only
    // addresses the account signed in from before may try, so the owner is not locked out.
    match rate_limits::check(
        &state.ports,
        "login-failures",
        &account,
        auth.failed_login_window_secs,
        &failure_limit(&state),
    )
    .await
    {
        Ok(()) => {}
        Err(LimitError::Limited(limited)) => {
            if !rate_limits::is_known_address(&state.ports, &account, &addr).await? {
                return Err(limited.into());
            }
        }
        Err(LimitError::Store(e)) => return Err(e.into()),
    }

    let claim = users::find_by_email(&state.ports, &email.normalized()).await?;
    let hash = claim.as_ref().and_then(|c| c.password_hash.clone());
    // An unknown email verifies against a dummy hash: same answer, same time.
    let matches = state.passwords()?.verify(password, hash).await?;
    let user = match (matches, claim) {
        (true, Some(claim)) => users::get(&state.ports, &claim.user_id).await?,
        _ => None,
    };
    let Some(user) = user else {
        count_failure(&state, "login-failures", &account).await?;
        return Err(ApiError::Unauthorized("invalid email or password".into()));
    };
    rate_limits::remember_address(&state.ports, &account, &addr).await?;
    token_response(&state, user, StatusCode::OK).await
}

/// `POST /v1/auth/password` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetPasswordRequest {
    /// The account's password; required when the account has one.
    pub current_password: Option<String>,
    /// The new password: 8 to 256 characters.
    pub new_password: Option<String>,
}

/// `POST /v1/auth/password` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetPasswordResponse {
    /// Always true.
    pub password_set: bool,
    /// Other sign-ins of the account that were signed out.
    pub revoked_sessions: usize,
}

/// Sets or changes the signed-in driver's password.
#[utoipa::path(post, path = "/v1/auth/password", tag = "auth", request_body = SetPasswordRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "Password set; every other sign-in of the account is revoked", body = inline(Envelope<SetPasswordResponse>)),
              (status = 400, description = "A field breaks a rule, or currentPassword is missing"),
              (status = 401, description = "Missing, invalid or revoked token"),
              (status = 403, description = "currentPassword does not match"),
              (status = 409, description = "The account has no email address, or the password changed meanwhile"),
              (status = 429, description = "Too many wrong current passwords"),
              (status = 503, description = "Password hashing is saturated; retry after Retry-After")))]
pub async fn set_password(
    State(state): State<AppState>,
    user: AuthUser,
    ApiJson(body): ApiJson<SetPasswordRequest>,
) -> Result<Response, ApiError> {
    let mut p = Problems::default();
    let new = required(&mut p, "newPassword", body.new_password)
        .and_then(|pw| p.check("newPassword", Password::parse(&pw)));
    let current = body
        .current_password
        .and_then(|pw| p.check("currentPassword", login_password(&pw)));
    p.finish()?;
    let new = new.expect("checked");
    let window = state.settings.auth.failed_login_window_secs;
    rate_limits::check(
        &state.ports,
        "password-failures",
        user.user_id(),
        window,
        &failure_limit(&state),
    )
    .await?;
    let changed = password_changes::set_password(
        &state.ports,
        state.passwords()?,
        user.user_id(),
        current,
        new,
        &user.claims.sid,
    )
    .await;
    match changed {
        Ok(done) => Ok(ok(SetPasswordResponse {
            password_set: true,
            revoked_sessions: done.revoked_sessions,
        })),
        Err(e) => Err(match e {
            PasswordChangeError::CurrentWrong => {
                count_failure(&state, "password-failures", user.user_id()).await?;
                ApiError::Forbidden(e.to_string())
            }
            PasswordChangeError::CurrentRequired => ApiError::BadRequest(e.to_string()),
            PasswordChangeError::NoEmail | PasswordChangeError::Concurrent => {
                ApiError::Conflict(e.to_string())
            }
            PasswordChangeError::NoAccount => ApiError::Unauthorized(e.to_string()),
            PasswordChangeError::Hashing(h) => h.into(),
            PasswordChangeError::Store(s) => s.into(),
        }),
    }
}

/// Rotates a refresh token.
#[utoipa::path(post, path = "/v1/auth/refresh", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, description = "New tokens; the old refresh token is used up", body = inline(Envelope<TokenResponse>)),
              (status = 401, description = "Invalid, expired, revoked or replayed (a replay revokes the whole family)")))]
pub async fn refresh(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<RefreshRequest>,
) -> Result<Response, ApiError> {
    let raw = body
        .refresh_token
        .ok_or_else(|| ApiError::invalid("refreshToken", "is required"))?;
    let issued = refresh_tokens::rotate(&state.ports, &raw)
        .await
        .map_err(|e| match e {
            RefreshError::Store(s) => ApiError::from(s),
            other => ApiError::Unauthorized(other.to_string()),
        })?;
    let user = users::get(&state.ports, &issued.user_id)
        .await?
        .ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))?;
    tokens_for(&state, user, issued.raw, &issued.family_id, StatusCode::OK).await
}

/// Signs out: revokes the refresh-token family (and with it its access tokens).
#[utoipa::path(post, path = "/v1/auth/logout", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, description = "Signed out"), (status = 401, description = "Neither a refresh token nor a valid bearer token")))]
pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let parsed: RefreshRequest = if body.iter().all(u8::is_ascii_whitespace) {
        RefreshRequest::default()
    } else {
        let value: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
        crate::http::extract::from_value(crate::http::extract::camel_case_keys(value))?
    };
    let family = match parsed.refresh_token {
        Some(raw) => refresh_tokens::family_of(&state.ports, &raw)
            .await?
            .map(|(_, family)| family),
        None => None,
    };
    let family = match family {
        Some(f) => f,
        None => {
            let token = bearer(&headers).ok_or_else(|| {
                ApiError::Unauthorized("refreshToken or a bearer token is required".into())
            })?;
            let claims = state
                .access_tokens()
                .await?
                .verify(token, state.ports.clock.now())
                .map_err(|r| ApiError::Unauthorized(r.into()))?;
            claims.sid.clone()
        }
    };
    refresh_tokens::revoke_family(&state.ports, &family).await?;
    Ok(ok(serde_json::json!({"loggedOut": true})))
}

/// Checks the presented bearer token.
#[utoipa::path(get, path = "/v1/auth/validate", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "Valid", body = inline(Envelope<ValidateResponse>)),
              (status = 401, description = "Missing, invalid, expired or revoked (e.g. after logout)")))]
pub async fn validate(user: AuthUser) -> Result<Response, ApiError> {
    let expires_at = OffsetDateTime::from_unix_timestamp(user.claims.exp)
        .map(rfc3339)
        .unwrap_or_default();
    Ok(ok(ValidateResponse {
        valid: true,
        user_id: user.user_id().to_owned(),
        expires_at,
    }))
}

/// Exchanges a one-time code from the browser flow for tokens.
#[utoipa::path(post, path = "/v1/auth/exchange", tag = "auth", request_body = ExchangeRequest,
    responses((status = 200, description = "Tokens issued", body = inline(Envelope<TokenResponse>)),
              (status = 400, description = "Unknown, expired or used code, or a verifier that does not match")))]
pub async fn exchange(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ExchangeRequest>,
) -> Result<Response, ApiError> {
    let mut p = Problems::default();
    let code = required(&mut p, "code", body.code);
    let verifier = required(&mut p, "codeVerifier", body.code_verifier);
    if let Some(v) = &verifier
        && !is_pkce_value(v)
    {
        p.add(
            "codeVerifier",
            "must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~",
        );
    }
    p.finish()?;
    let user_id = exchange_codes::redeem(
        &state.ports,
        &code.expect("checked"),
        &verifier.expect("checked"),
    )
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

/// Query of `GET /v1/auth/login/{provider}`.
#[derive(Debug, Deserialize)]
pub struct LoginStart {
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
}

fn is_pkce_value(v: &str) -> bool {
    (43..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The permitted desktop redirect: `http` on a loopback host, any port, path `/callback`,
/// no user info, no fragment.
pub fn check_redirect_uri(raw: &str) -> Result<reqwest::Url, ApiError> {
    let refuse = || {
        ApiError::invalid(
            "redirect_uri",
            "must be http://127.0.0.1, [::1] or localhost with a port and path /callback",
        )
    };
    let url = reqwest::Url::parse(raw).map_err(|_| refuse())?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    let ok = url.scheme() == "http"
        && loopback
        && url.path() == "/callback"
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none();
    if ok { Ok(url) } else { Err(refuse()) }
}

/// Starts the desktop sign-in with a provider.
#[utoipa::path(get, path = "/v1/auth/login/{provider}", tag = "auth",
    params(("provider" = String, Path, description = "A configured provider, e.g. google"),
           ("redirect_uri" = String, Query, description = "The desktop's loopback listener, http://127.0.0.1:<port>/callback"),
           ("code_challenge" = String, Query, description = "S256 PKCE challenge, 43-128 characters"),
           ("code_challenge_method" = Option<String>, Query, description = "S256 (default); plain is refused")),
    responses((status = 302, description = "To the provider, with a sign-in cookie"),
              (status = 400, description = "redirect_uri or code_challenge not permitted"),
              (status = 404, description = "Provider not configured"), (status = 429, description = "Too many sign-in starts")))]
pub async fn login_provider(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    ClientAddr(addr): ClientAddr,
    ApiQuery(query): ApiQuery<LoginStart>,
) -> Result<Response, ApiError> {
    let mut p = Problems::default();
    let redirect = match query.redirect_uri.as_deref() {
        None => {
            p.add("redirect_uri", "is required");
            None
        }
        Some(raw) => match check_redirect_uri(raw) {
            Ok(u) => Some(u),
            Err(e) => {
                p.add(
                    "redirect_uri",
                    e.to_string().trim_start_matches("redirect_uri: "),
                );
                None
            }
        },
    };
    match query.code_challenge.as_deref() {
        None => p.add("code_challenge", "is required"),
        Some(c) if !is_pkce_value(c) => p.add(
            "code_challenge",
            "must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~",
        ),
        Some(_) => {}
    }
    match query.code_challenge_method.as_deref() {
        None | Some("S256") => {}
        Some(_) => p.add("code_challenge_method", "only S256 is supported"),
    }
    p.finish()?;
    let provider_name = provider.to_ascii_lowercase();
    let handle = state
        .providers
        .get(&provider_name)
        .cloned()
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "sign-in provider {provider_name} is not configured"
            ))
        })?;
    let auth = &state.settings.auth;
    let limit = Limit::new("starts", auth.provider_starts_per_address);
    rate_limits::hit(
        &state.ports,
        "provider-start",
        &addr,
        auth.rate_window_secs,
        &[limit],
    )
    .await?;

    let (pkce_challenge, pkce_verifier) = PkceCodeChallenge::new_random_sha256();
    let flow_state = random_token(32);
    let flow = SignInFlow {
        provider: provider_name.clone(),
        redirect_uri: redirect.expect("checked").to_string(),
        code_challenge: query.code_challenge.expect("checked"),
        pkce_verifier: pkce_verifier.secret().clone(),
        nonce: random_token(32),
    };
    sign_in_flows::save(&state.ports, &flow_state, &flow).await?;
    let callback = providers::callback_url(&state.public_url(), &provider_name);
    let target = handle
        .authorize_url(&callback, &flow_state, &flow.nonce, pkce_challenge)
        .await
        .map_err(provider_error)?;

    let secure = if state.public_url().starts_with("https://") {
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

fn provider_error(e: providers::ProviderError) -> ApiError {
    match e {
        providers::ProviderError::Upstream(cause) => {
            tracing::error!(%cause, "identity provider unreachable");
            ApiError::Unavailable("the sign-in provider is unavailable, please retry".into())
        }
        providers::ProviderError::Rejected(reason) => {
            tracing::warn!(%reason, "identity provider answer rejected");
            ApiError::BadRequest("sign-in with the provider failed".into())
        }
    }
}

/// Query of the provider's redirect back to us.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// The provider's redirect target: signs the user in and sends the browser to the desktop
/// listener with a one-time code (never a token).
#[utoipa::path(get, path = "/v1/auth/callback/{provider}", tag = "auth",
    params(("provider" = String, Path, description = "The provider the flow started with")),
    responses((status = 302, description = "To redirect_uri?code=..."), (status = 400, description = "Unknown state, missing cookie or provider mix-up")))]
pub async fn callback(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<CallbackQuery>,
) -> Result<Response, ApiError> {
    let flow_state = query
        .state
        .ok_or_else(|| ApiError::invalid("state", "is required"))?;
    let cookie = cookie_value(&headers, FLOW_COOKIE).ok_or_else(|| {
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
    let handle = state
        .providers
        .get(&provider_name)
        .cloned()
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "sign-in provider {provider_name} is not configured"
            ))
        })?;
    let secret = match handle.config().client_secret.clone() {
        Some(s) => Some(s),
        None => state
            .ports
            .secrets
            .get(&format!("{provider_name}ClientSecret"))
            .await?
            .map(Into::into),
    };
    let callback = providers::callback_url(&state.public_url(), &provider_name);
    let identity = handle
        .identify(&callback, secret, &code, &flow.pkce_verifier, &flow.nonce)
        .await
        .map_err(provider_error)?;
    let (user_id, _) = provider_accounts::find_or_create(&state.ports, &provider_name, &identity)
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
