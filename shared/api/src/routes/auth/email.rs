//! Email and password: registration, login and password changes. Rate limits are checked
//! before a body is parsed; bodies become forms whose fields are all parsed, or one 400.

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{token_response, tokens_for};
use crate::http::auth_user::{Caller, scope};
use crate::http::extract::json_body;
use crate::http::{ApiError, ApiJson, ok};
use crate::routes::envelopes::envelope;
use crate::state::AppState;
use paddock_core::credentials;
use paddock_core::identity::fields::{DisplayName, Email, Password, login_password};
use paddock_core::identity::password_changes::PasswordChangeError;
use paddock_core::identity::password_sign_in::{self, SignInError};
use paddock_core::identity::users::{self, RegisterError, User};
use paddock_core::identity::{refresh_tokens, registration};
use paddock_core::problems::{FieldProblems, Problems};
use paddock_core::rate_limits::{self, Limit};
use paddock_http::client_addr::ClientAddr;

/// `POST /v1/auth/register` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    /// The account's email; compared without case.
    #[schema(required = true, value_type = String, format = Email, max_length = 254)]
    pub email: Option<String>,
    /// 8 to 256 characters.
    #[schema(required = true, value_type = String, min_length = 8, max_length = 256)]
    pub password: Option<String>,
    /// Shown on leaderboards: 1 to 64 characters (trimmed), no control, invisible or
    /// text-direction characters.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 64,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub display_name: Option<String>,
}

/// `POST /v1/auth/login/email` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginRequest {
    /// The account's email.
    #[schema(required = true, value_type = String, format = Email, max_length = 254)]
    pub email: Option<String>,
    /// At most 256 characters.
    #[schema(required = true, value_type = String, max_length = 256)]
    pub password: Option<String>,
}

/// A registration whose every field parsed.
struct RegisterForm {
    email: Email,
    password: Password,
    display_name: DisplayName,
}

impl TryFrom<RegisterRequest> for RegisterForm {
    type Error = FieldProblems;

    fn try_from(body: RegisterRequest) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let email = p.required("email", body.email, |e| Email::parse(&e));
        let password = p.required("password", body.password, |pw| Password::parse(&pw));
        let display_name = p.required("displayName", body.display_name, |n| DisplayName::parse(&n));
        let form =
            email
                .zip(password)
                .zip(display_name)
                .map(|((email, password), display_name)| Self {
                    email,
                    password,
                    display_name,
                });
        p.into_result(form)
    }
}

/// A login whose fields parsed (the password only capped in length).
struct LoginForm {
    email: Email,
    password: String,
}

impl TryFrom<LoginRequest> for LoginForm {
    type Error = FieldProblems;

    fn try_from(body: LoginRequest) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let email = p.required("email", body.email, |e| Email::parse(&e));
        let password = p.required("password", body.password, |pw| login_password(&pw));
        let form = email
            .zip(password)
            .map(|(email, password)| Self { email, password });
        p.into_result(form)
    }
}

/// A password change whose fields parsed.
struct SetPasswordForm {
    current: Option<String>,
    new: Password,
}

impl TryFrom<SetPasswordRequest> for SetPasswordForm {
    type Error = FieldProblems;

    fn try_from(body: SetPasswordRequest) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let new = p.required("newPassword", body.new_password, |pw| Password::parse(&pw));
        let current = body
            .current_password
            .and_then(|pw| p.check("currentPassword", login_password(&pw)));
        p.into_result(new.map(|new| Self { current, new }))
    }
}

/// The per-address cap on registrations and logins.
fn address_limit(state: &AppState) -> Limit {
    password_sign_in::address_limit(&state.settings.auth)
}

/// Creates an account and signs it in.
#[utoipa::path(post, path = "/v1/auth/register", operation_id = "registerWithEmail", tag = "auth",
    request_body(content = RegisterRequest, example = json!({
        "email": "alex@example.com", "password": "correct horse battery staple", "displayName": "Alex Driver"})),
    responses((status = 201, description = "Account created; tokens issued", body = super::TokenEnvelope),
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
    // An address over its cap is turned away before its body is parsed. The log read for
    // that is the one the hit writes back.
    let (table, key) = rate_limits::main_log("auth", &addr);
    let log = state.ports.items.get(table, &key).await?;
    rate_limits::refusal_in(&state.ports, log.as_ref(), window, &limits)?;
    let form = RegisterForm::try_from(json_body::<RegisterRequest>(&headers, &body)?)?;
    rate_limits::hit_read(&state.ports, "auth", &addr, window, &limits, None, log).await?;

    let password = form.password.clone();
    let hash = state.passwords()?.hash(form.password).await?;
    let user = User::new(
        Some(form.email.as_str().to_owned()),
        form.display_name.as_str().to_owned(),
        None,
        state.ports.clock.now(),
    );
    // The account and its first sign-in in one transaction.
    match registration::register_signed_in(&state.ports, &user, &form.email.normalized(), hash)
        .await
    {
        Ok(issued) => {
            tokens_for(
                &state,
                user,
                issued.raw,
                &issued.family_id,
                StatusCode::CREATED,
            )
            .await
        }
        Err(RegisterError::EmailTaken) => {
            match registered_just_now(&state, &form.email, password).await? {
                Some(user) => token_response(&state, user, StatusCode::CREATED).await,
                None => Err(ApiError::Conflict(
                    "email: an account with this email already exists".into(),
                )),
            }
        }
        Err(RegisterError::Store(e)) => Err(e.into()),
    }
}

/// How long after an account's creation the same registration sent again signs it in.
const REGISTRATION_RETRY_SECS: i64 = 120;

/// The account `email` names when it was registered less than [`REGISTRATION_RETRY_SECS`]
/// ago with `password`: the client's retry of a registration that was applied but answered
/// 503 (a later write of the request failed) gets the registration's answer, not a 409. Any
/// other password counts as a failed sign-in of the account, as at the login, so this is no
/// way around the login's failure limits.
async fn registered_just_now(
    state: &AppState,
    email: &Email,
    password: Password,
) -> Result<Option<User>, ApiError> {
    let Some(claim) = users::find_by_email(&state.ports, &email.normalized()).await? else {
        return Ok(None);
    };
    let Some(user) = users::get(&state.ports, &claim.user_id).await? else {
        return Ok(None);
    };
    let created = time::OffsetDateTime::parse(
        &user.created_at,
        &time::format_description::well_known::Rfc3339,
    );
    let recent = created
        .is_ok_and(|at| (state.ports.clock.now() - at).whole_seconds() < REGISTRATION_RETRY_SECS);
    if !recent || claim.password_hash.is_none() {
        return Ok(None);
    }
    let matches = state
        .passwords()?
        .verify(password.expose().to_owned(), claim.password_hash)
        .await?;
    if !matches {
        count_failure(state, "login-failures", &account_subject(email)).await?;
        return Ok(None);
    }
    Ok(Some(user))
}

/// The counter name of an account in rate limits: part of the email's hash, so the limits
/// table holds no addresses.
fn account_subject(email: &Email) -> String {
    paddock_core::identity::account_subject(&email.normalized())
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
    Ok(password_sign_in::count_failure(&state.ports, &state.settings.auth, scope, subject).await?)
}

/// Signs in with email and password.
#[utoipa::path(post, path = "/v1/auth/login/email", operation_id = "loginWithEmail", tag = "auth",
    request_body(content = LoginRequest, example = json!({
        "email": "alex@example.com", "password": "correct horse battery staple"})),
    responses((status = 200, description = "Tokens issued", body = super::TokenEnvelope),
              (status = 400, description = "A field breaks a rule (the password is at most 256 characters)"),
              (status = 401, description = "Wrong email or password (one message for both)"),
              (status = 415, description = "Not a JSON body"),
              (status = 429, description = "More than 10 attempts in 5 minutes, or, while the account is over its failure limit, more than 3 attempts an hour from an address it never signed in from"),
              (status = 503, description = "Password hashing is saturated; retry after Retry-After")))]
pub async fn login_email(
    State(state): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let outcome = sign_in(&state, &addr, &headers, &body).await;
    super::count_sign_in("email", &outcome);
    outcome
}

/// The sign-in of [`login_email`], its outcome counted by the caller.
async fn sign_in(
    state: &AppState,
    addr: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let auth = &state.settings.auth;
    let form = json_body::<LoginRequest>(headers, body)
        .and_then(|request| LoginForm::try_from(request).map_err(ApiError::from));
    let LoginForm { email, password } = match form {
        Ok(form) => form,
        Err(e) => {
            // An address over its cap is refused as such, whatever its body.
            rate_limits::check(
                &state.ports,
                "auth",
                addr,
                auth.rate_window_secs,
                &[address_limit(state)],
            )
            .await?;
            return Err(e);
        }
    };
    let (user, remember) = password_sign_in::check(
        &state.ports,
        state.passwords()?,
        auth,
        addr,
        &email,
        password,
    )
    .await
    .map_err(|e| match e {
        SignInError::WrongCredentials => ApiError::Unauthorized(e.to_string()),
        SignInError::Limited(l) => l.into(),
        SignInError::Hashing(h) => h.into(),
        SignInError::Store(s) => s.into(),
    })?;
    let issued = refresh_tokens::issue_new_family_with(
        &state.ports,
        &user.id,
        remember.into_iter().collect(),
    )
    .await?;
    tokens_for(state, user, issued.raw, &issued.family_id, StatusCode::OK).await
}

/// `POST /v1/auth/password` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetPasswordRequest {
    /// The account's password; required when the account has one.
    #[schema(max_length = 256)]
    pub current_password: Option<String>,
    /// The new password: 8 to 256 characters.
    #[schema(required = true, value_type = String, min_length = 8, max_length = 256)]
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
#[utoipa::path(post, path = "/v1/auth/password", operation_id = "setPassword", tag = "auth", request_body = SetPasswordRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "Password set; every other sign-in of the account is revoked", body = SetPasswordEnvelope),
              (status = 400, description = "A field breaks a rule"),
              (status = 401, description = "Missing, invalid or revoked token"),
              (status = 403, description = "currentPassword is missing or does not match (the account has a password)"),
              (status = 409, description = "The account has no email address, or the password changed meanwhile"),
              (status = 429, description = "Too many wrong current passwords"),
              (status = 503, description = "Password hashing is saturated; retry after Retry-After")))]
pub async fn set_password(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<SetPasswordRequest>,
) -> Result<Response, ApiError> {
    let SetPasswordForm { current, new } = SetPasswordForm::try_from(body)?;
    let window = state.settings.auth.failed_login_window_secs;
    rate_limits::check(
        &state.ports,
        "password-failures",
        user.user_id().as_str(),
        window,
        &failure_limit(&state),
    )
    .await?;
    let changed = credentials::change_password(
        &state.ports,
        state.passwords()?,
        user.user_id(),
        current,
        new,
        &user.claims().sid,
    )
    .await;
    match changed {
        Ok(done) => Ok(ok(SetPasswordResponse {
            password_set: true,
            revoked_sessions: done.revoked_sessions,
        })),
        Err(e) => Err(match e {
            PasswordChangeError::CurrentWrong => {
                count_failure(&state, "password-failures", user.user_id().as_str()).await?;
                ApiError::Forbidden(e.to_string())
            }
            // Not a malformed request: the account needs its password proven to change it.
            PasswordChangeError::CurrentRequired => ApiError::Forbidden(e.to_string()),
            PasswordChangeError::NoEmail | PasswordChangeError::Concurrent => {
                ApiError::Conflict(e.to_string())
            }
            PasswordChangeError::NoAccount => ApiError::Unauthorized(e.to_string()),
            PasswordChangeError::Hashing(h) => h.into(),
            PasswordChangeError::Store(s) => s.into(),
        }),
    }
}

envelope!(
    /// A password set.
    SetPasswordEnvelope => SetPasswordResponse
);
