//! `/oauth/token` (RFC 6749 §3.2: a code, or a refresh token, for tokens) and `/oauth/revoke`
//! (RFC 7009). Both read a form and answer as their RFCs say, not in the API's envelope:
//! tokens or `{"error", "error_description"}`, never cached.

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Serialize;
use std::sync::Arc;
use utoipa::ToSchema;

use crate::form::{Params, basic_credentials, is_form};
use paddock_authorization::errors::{ErrorCode, OAuthError};
use paddock_authorization::tokens::{self, Client, Exchange, TokenAnswer};
use paddock_core::identity::access_tokens::AccessTokens;
use paddock_http::http::public_url::PublicUrl;
use paddock_http::state::AppState;

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OAuthErrorBody {
    /// The RFC's code: `invalid_request`, `invalid_client`, `invalid_grant`,
    /// `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`, `invalid_target`,
    /// `temporarily_unavailable`.
    pub error: String,
    /// What was wrong, naming the parameter and the rule.
    pub error_description: String,
}

/// The token endpoint's form (every field optional here: which are needed depends on
/// `grant_type`, and a missing one is answered `invalid_request` naming it).
// Described, never deserialised: the form is read by `Params`, which tells a parameter given
// twice (RFC 6749 §3.1) where a derived reader would keep one of them.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct TokenForm {
    /// `authorization_code` or `refresh_token`.
    grant_type: String,
    /// The code (`authorization_code`).
    code: Option<String>,
    /// The authorization request's redirect URI (`authorization_code`).
    redirect_uri: Option<String>,
    /// The PKCE verifier (`authorization_code`).
    code_verifier: Option<String>,
    /// The refresh token (`refresh_token`).
    refresh_token: Option<String>,
    /// Fewer scopes than granted, space-separated (`refresh_token`).
    scope: Option<String>,
    /// The resource the access token is for (RFC 8707).
    resource: Option<String>,
    /// The client id (when not sent by HTTP Basic).
    client_id: Option<String>,
    /// A confidential client's secret (when not sent by HTTP Basic).
    client_secret: Option<String>,
}

/// The revocation endpoint's form (described only, as [`TokenForm`]).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct RevokeForm {
    /// The access or refresh token to revoke.
    token: String,
    /// `access_token` or `refresh_token` (a hint only).
    token_type_hint: Option<String>,
    /// The client id (when not sent by HTTP Basic).
    client_id: Option<String>,
    /// A confidential client's secret (when not sent by HTTP Basic).
    client_secret: Option<String>,
}

/// An OAuth answer: never stored by a cache (RFC 6749 §5.1).
fn no_store(status: StatusCode, body: impl Serialize) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// The answer of a refused request; `basic`: the client tried HTTP Basic (an `invalid_client`
/// is then a 401 with its challenge, RFC 6749 §5.2).
fn refused(e: OAuthError, basic: bool) -> Response {
    let (code, description) = match e {
        OAuthError::Refused { code, description } => (code, description),
        OAuthError::Store(cause) => {
            tracing::warn!(error = %cause, "an OAuth request failed on the store");
            (
                ErrorCode::TemporarilyUnavailable,
                "the service could not answer; retry".to_owned(),
            )
        }
    };
    let status = match code {
        ErrorCode::InvalidClient => StatusCode::UNAUTHORIZED,
        ErrorCode::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    let body = OAuthErrorBody {
        error: code.as_str().to_owned(),
        error_description: description,
    };
    let mut response = no_store(status, body);
    if code == ErrorCode::InvalidClient && basic {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"paddock\""),
        );
    }
    if code == ErrorCode::TemporarilyUnavailable {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// A form read, and the client it names (by HTTP Basic or by the form, never both).
struct ClientForm {
    params: Params,
    id: String,
    secret: Option<String>,
    basic: bool,
}

fn client_form(headers: &HeaderMap, body: &[u8]) -> Result<ClientForm, (OAuthError, bool)> {
    let invalid = |rule: String| OAuthError::new(ErrorCode::InvalidRequest, rule);
    let basic = basic_credentials(headers);
    let tried_basic = !matches!(basic, Ok(None));
    if !is_form(headers) {
        let why = "the body must be application/x-www-form-urlencoded".to_owned();
        return Err((invalid(why), tried_basic));
    }
    let params = Params::parse(body);
    let field = |name: &str| params.one(name).map_err(|why| (invalid(why), tried_basic));
    let (form_id, form_secret) = (field("client_id")?, field("client_secret")?);
    let (id, secret) = match basic {
        Err(()) => {
            let why = "the Authorization header is not HTTP Basic client credentials";
            return Err((OAuthError::new(ErrorCode::InvalidClient, why), true));
        }
        Ok(Some(_)) if form_secret.is_some() => {
            let why =
                "client_secret: send the client's credentials one way (HTTP Basic or the form)";
            return Err((invalid(why.into()), true));
        }
        Ok(Some((id, secret))) => {
            if form_id.is_some_and(|f| f != id) {
                let why = "client_id: differs from the HTTP Basic client id";
                return Err((invalid(why.into()), true));
            }
            (id, Some(secret))
        }
        Ok(None) => {
            let Some(id) = form_id else {
                let why = "client_id: is required (or HTTP Basic client credentials)";
                return Err((OAuthError::new(ErrorCode::InvalidClient, why), false));
            };
            (id.to_owned(), form_secret.map(str::to_owned))
        }
    };
    Ok(ClientForm {
        params,
        id,
        secret,
        basic: tried_basic,
    })
}

/// Exchanges a code or a refresh token for tokens.
#[utoipa::path(post, path = "/oauth/token", operation_id = "exchangeOAuthToken", tag = "oauth",
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded"),
    security(()),
    responses((status = 200, description = "Tokens (never cached)", body = TokenAnswer),
              (status = 400, description = "A parameter is missing or breaks its rule, or the code or refresh token is invalid, used, expired or another client's (RFC 6749 §5.2)", body = OAuthErrorBody),
              (status = 401, description = "Unknown client, or its authentication failed", body = OAuthErrorBody),
              (status = 503, description = "The service could not answer; retry", body = OAuthErrorBody)))]
pub(crate) async fn token(
    State(state): State<AppState>,
    PublicUrl(issuer): PublicUrl,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match client_form(&headers, &body) {
        Ok(form) => form,
        Err((e, basic)) => return refused(e, basic),
    };
    let basic = form.basic;
    match exchange(&state, &issuer, &form).await {
        Ok(answer) => no_store(StatusCode::OK, answer),
        Err(e) => refused(e, basic),
    }
}

async fn exchange(
    state: &AppState,
    issuer: &str,
    form: &ClientForm,
) -> Result<TokenAnswer, OAuthError> {
    let p = |name: &str| {
        form.params
            .one(name)
            .map_err(|why| OAuthError::new(ErrorCode::InvalidRequest, why))
    };
    let required = |name: &str| p(name)?.ok_or_else(|| OAuthError::invalid(name, "is required"));
    let exchange = match required("grant_type")? {
        "authorization_code" => Exchange::Code {
            code: required("code")?,
            redirect_uri: required("redirect_uri")?,
            verifier: required("code_verifier")?,
            resource: p("resource")?,
        },
        "refresh_token" => Exchange::Refresh {
            token: required("refresh_token")?,
            scope: p("scope")?,
            resource: p("resource")?,
        },
        other => {
            return Err(OAuthError::new(
                ErrorCode::UnsupportedGrantType,
                format!(
                    "grant_type: `{other}` is not supported (authorization_code, refresh_token)"
                ),
            ));
        }
    };
    let keys = signing_keys(state).await?;
    let client = Client {
        id: &form.id,
        secret: form.secret.as_deref(),
    };
    tokens::exchange(&state.ports, &keys, issuer, client, exchange).await
}

/// Revokes an access or refresh token: every token of its grant stops at once. An unknown
/// token, or another client's, is answered the same and changes nothing (RFC 7009 §2.2).
#[utoipa::path(post, path = "/oauth/revoke", operation_id = "revokeOAuthToken", tag = "oauth",
    request_body(content = RevokeForm, content_type = "application/x-www-form-urlencoded"),
    security(()),
    responses((status = 200, description = "Revoked (or nothing to revoke)"),
              (status = 400, description = "`token` is missing, or the body is not a form", body = OAuthErrorBody),
              (status = 401, description = "Unknown client, or its authentication failed", body = OAuthErrorBody),
              (status = 503, description = "The service could not answer; retry", body = OAuthErrorBody)))]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match client_form(&headers, &body) {
        Ok(form) => form,
        Err((e, basic)) => return refused(e, basic),
    };
    match revoke_for(&state, &form).await {
        Ok(()) => (StatusCode::OK, [(header::CACHE_CONTROL, "no-store")]).into_response(),
        Err(e) => refused(e, form.basic),
    }
}

async fn revoke_for(state: &AppState, form: &ClientForm) -> Result<(), OAuthError> {
    let token = form
        .params
        .one("token")
        .map_err(|why| OAuthError::new(ErrorCode::InvalidRequest, why))?
        .ok_or_else(|| OAuthError::invalid("token", "is required"))?;
    let client = Client {
        id: &form.id,
        secret: form.secret.as_deref(),
    };
    tokens::revoke(&state.ports, &*signing_keys(state).await?, client, token).await
}

/// The signing keys, or a refusal the client may retry (logged: a deployment without keys).
async fn signing_keys(state: &AppState) -> Result<Arc<AccessTokens>, OAuthError> {
    state.access_tokens().await.map_err(|e| {
        tracing::error!(error = %e, "no signing keys for an OAuth endpoint");
        let why = "the service could not answer; retry";
        OAuthError::new(ErrorCode::TemporarilyUnavailable, why)
    })
}
