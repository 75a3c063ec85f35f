//! The extractors that authenticate every protected endpoint, and the client address.
//!
//! Two kinds of credential reach the API as `Authorization: Bearer`: the access token (a JWT)
//! of a sign-in, and a driver's personal access token (`pdk_...`, recognised by its prefix
//! before any JWT work). [`AuthUser`] accepts only a sign-in: routes that manage the account
//! (tokens, password, profile changes, export, deletion) and every route not opened to tokens
//! use it,
//! and a personal access token there is refused with 403. [`Authorized<S>`] accepts a sign-in
//! or a token granted scope `S`: the route states its scope by its type.

use axum::extract::{ConnectInfo, FromRequestParts};
use http::request::Parts;
use http::{HeaderValue, header};
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use super::ApiError;
use crate::state::AppState;
use paddock_core::identity::claims::Claims;
use paddock_core::identity::personal_tokens::{self, AuthError, Scope, TokenGrant};
use paddock_core::identity::refresh_tokens;
use paddock_core::ids::UserId;
use paddock_core::rate_limits::{self, Limit, LimitError, Usage, address_group};

/// The rate-limit scope of requests made with a personal access token (subject: its id).
pub(crate) const TOKEN_REQUESTS_SCOPE: &str = "token-requests";

/// The caller of a route only a sign-in may use: a valid access token of a family that is not
/// revoked. A personal access token is refused (403) before any other check.
#[derive(Debug, Clone)]
pub struct AuthUser {
    /// The verified claims of the presented token.
    pub claims: Arc<Claims>,
}

impl AuthUser {
    /// The caller's user id (the token's `sub`).
    pub fn user_id(&self) -> &UserId {
        &self.claims.sub
    }
}

/// The bearer token of a request's headers, if any.
pub fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(bearer_of)
}

/// The bearer token of an `Authorization` value; 401 when there is none.
fn required_bearer(authorization: Option<&HeaderValue>) -> Result<&str, ApiError> {
    authorization
        .and_then(bearer_of)
        .ok_or_else(|| ApiError::Unauthorized("missing bearer token".into()))
}

/// The bearer token of an `Authorization` value, if it holds one. Read as bytes: a token is
/// ASCII, and what else a header value may hold fails the token's verification anyway (a
/// per-byte visibility check of `to_str` over a 300-byte token cost more than the rest).
fn bearer_of(authorization: &HeaderValue) -> Option<&str> {
    let value = authorization.as_bytes();
    let space = value.iter().position(|b| *b == b' ')?;
    let (scheme, token) = (&value[..space], value[space + 1..].trim_ascii());
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty())
        .then(|| std::str::from_utf8(token).ok())
        .flatten()
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Self::from_headers(&parts.headers, state).await
    }
}

impl AuthUser {
    /// Authenticates the bearer token of `headers` (for handlers where a token is needed only
    /// with some parameters).
    pub async fn from_headers(
        headers: &http::HeaderMap,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        Self::from_authorization(headers.get(header::AUTHORIZATION), state).await
    }

    /// Authenticates the bearer token of an `Authorization` header's value.
    pub async fn from_authorization(
        authorization: Option<&HeaderValue>,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        let token = required_bearer(authorization)?;
        if personal_tokens::is_personal_token(token) {
            return Err(ApiError::Forbidden(
                "personal access tokens cannot be used on this route: it needs a signed-in session"
                    .into(),
            ));
        }
        Self::from_access_token(token, state).await
    }

    /// Authenticates a sign-in's access token (a JWT).
    async fn from_access_token(token: &str, state: &AppState) -> Result<Self, ApiError> {
        let claims = verified_claims(token, state).await?;
        confirm_family(state, &claims).await?;
        Ok(Self { claims })
    }
}

/// The claims of an access token whose signature and expiry hold (no store call).
async fn verified_claims(token: &str, state: &AppState) -> Result<Arc<Claims>, ApiError> {
    state
        .verify_access_token(token)
        .await?
        .map_err(|reason| ApiError::Unauthorized(reason.into()))
}

/// Refuses a token whose sign-in (its family) was revoked or belongs to someone else.
async fn confirm_family(state: &AppState, claims: &Claims) -> Result<(), ApiError> {
    if !refresh_tokens::family_active(&state.ports, &claims.sid, &claims.sub).await? {
        return Err(ApiError::Unauthorized("session has been revoked".into()));
    }
    Ok(())
}

/// What a route opened to personal access tokens requires of one: the scope it names.
pub trait RequiredScope: Send + Sync + 'static {
    /// The scope a token needs on the route.
    const SCOPE: Scope;
}

/// Marker types naming each scope, for [`Authorized`].
pub mod scope {
    use super::{RequiredScope, Scope};

    macro_rules! scopes {
        ($($(#[$doc:meta])* $name:ident;)*) => {$(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl RequiredScope for $name {
                const SCOPE: Scope = Scope::$name;
            }
        )*};
    }

    scopes! {
        /// `sessions:read`.
        SessionsRead;
        /// `sessions:write`.
        SessionsWrite;
        /// `boards:read`.
        BoardsRead;
        /// `boards:submit`.
        BoardsSubmit;
        /// `profile:read`.
        ProfileRead;
        /// `activity:read`.
        ActivityRead;
        /// `sharepacks`.
        Sharepacks;
        /// `webhooks`.
        Webhooks;
    }
}

/// Where a request made with a personal access token leaves the usage of its rate limit, for
/// the `RateLimit-*` headers of its answer (see `super::rate_limit_headers`).
#[derive(Debug, Clone, Default)]
pub struct RateLimitSlot(pub(crate) Arc<OnceLock<Usage>>);

/// The caller of a route that a personal access token with scope `S` may use as well as a
/// signed-in driver.
#[derive(Debug, Clone)]
pub struct Authorized<S: RequiredScope> {
    user_id: UserId,
    token: Option<Arc<TokenGrant>>,
    scope: PhantomData<S>,
}

impl<S: RequiredScope> Authorized<S> {
    /// The caller's user id.
    pub fn user_id(&self) -> &UserId {
        &self.user_id
    }

    /// The token the request was made with, if not a sign-in.
    pub fn token(&self) -> Option<&TokenGrant> {
        self.token.as_deref()
    }

    /// Authenticates an `Authorization` header's value; `slot` takes a token's rate-limit
    /// usage for the answer's headers.
    pub async fn from_authorization(
        authorization: Option<&HeaderValue>,
        slot: Option<&RateLimitSlot>,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        let token = required_bearer(authorization)?;
        if !personal_tokens::is_personal_token(token) {
            let user = AuthUser::from_access_token(token, state).await?;
            return Ok(Self {
                user_id: user.claims.sub.clone(),
                token: None,
                scope: PhantomData,
            });
        }
        let grant = personal_tokens::authenticate(&state.ports, token)
            .await
            .map_err(|e| match e {
                AuthError::Refused(r) => ApiError::Unauthorized(r.to_string()),
                AuthError::Store(s) => s.into(),
            })?;
        if !grant.allows(S::SCOPE) {
            return Err(ApiError::Forbidden(format!(
                "this personal access token lacks the scope `{}` that this route needs",
                S::SCOPE.name()
            )));
        }
        let now = state.ports.clock.unix();
        // The last use is written beside the request's count, in the same round trip: not
        // after the answer, which a Lambda function may never get to (it is frozen once it
        // has answered). A failed write only leaves `lastUsedAt` a minute behind.
        let mark_used = async {
            if personal_tokens::last_used_due(&grant, now)
                && let Err(e) = personal_tokens::mark_used(&state.ports, &grant, now).await
            {
                tracing::warn!(error = %e, "recording a token's last use failed");
            }
        };
        let (counted, ()) = futures::join!(count_token_request(state, &grant, slot), mark_used);
        counted?;
        Ok(Self {
            user_id: grant.user_id.clone(),
            token: Some(Arc::new(grant)),
            scope: PhantomData,
        })
    }
}

/// The caller of a route as [`Authorized<S>`] admits it, except that a sign-in's family is
/// not read yet: [`Caller::confirmed_with`] reads it beside the route's first reads, so a
/// request waits on one round trip for both instead of one after the other. Those reads see
/// the claimed user's data before the sign-in is confirmed, so they must write nothing; their
/// answer is handed over only once it is. A personal access token is checked whole here, as
/// by `Authorized` (its rate limit counts the request before any work).
#[derive(Debug, Clone)]
pub struct Caller<S: RequiredScope> {
    authorized: Authorized<S>,
    /// The claims whose family is still to be confirmed (a sign-in).
    unconfirmed: Option<Arc<Claims>>,
}

impl<S: RequiredScope> Caller<S> {
    /// The caller's user id, as the verified token names it.
    pub fn user_id(&self) -> &UserId {
        &self.authorized.user_id
    }

    /// Runs `reads` beside the confirmation of the caller's sign-in; answers the caller and
    /// what the reads answered once both are done and the sign-in holds. A revoked sign-in is
    /// refused (401) whatever the reads answered.
    pub async fn confirmed_with<T, E>(
        self,
        state: &AppState,
        reads: impl Future<Output = Result<T, E>>,
    ) -> Result<(Authorized<S>, T), ApiError>
    where
        ApiError: From<E>,
    {
        let (confirmed, read) = match &self.unconfirmed {
            Some(claims) => futures::join!(confirm_family(state, claims), reads),
            None => (Ok(()), reads.await),
        };
        confirmed?;
        Ok((self.authorized, read?))
    }

    /// The answer to a request refused for itself (a field breaking a rule, say): a revoked
    /// sign-in is told that first, as when the sign-in is checked before anything else.
    pub async fn refusal(self, state: &AppState, refused: ApiError) -> ApiError {
        let nothing = async { Ok::<_, ApiError>(()) };
        match self.confirmed_with(state, nothing).await {
            Ok(_) => refused,
            Err(e) => e,
        }
    }

    /// Authenticates an `Authorization` header's value as [`Authorized::from_authorization`]
    /// does, leaving a sign-in's family to [`Caller::confirmed_with`].
    pub async fn from_authorization(
        authorization: Option<&HeaderValue>,
        slot: Option<&RateLimitSlot>,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        let token = required_bearer(authorization)?;
        if personal_tokens::is_personal_token(token) {
            let authorized = Authorized::from_authorization(authorization, slot, state).await?;
            return Ok(Self {
                authorized,
                unconfirmed: None,
            });
        }
        let claims = verified_claims(token, state).await?;
        Ok(Self {
            authorized: Authorized {
                user_id: claims.sub.clone(),
                token: None,
                scope: PhantomData,
            },
            unconfirmed: Some(claims),
        })
    }
}

impl<S: RequiredScope> FromRequestParts<AppState> for Caller<S> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let slot = parts.extensions.get::<RateLimitSlot>();
        Self::from_authorization(parts.headers.get(header::AUTHORIZATION), slot, state).await
    }
}

/// Counts one request of `grant` against `Limits__TokenRequestsPerMinute`, leaving the usage
/// in `slot`; over the limit, a 429 (with the usage at zero left in `slot`).
async fn count_token_request(
    state: &AppState,
    grant: &TokenGrant,
    slot: Option<&RateLimitSlot>,
) -> Result<(), ApiError> {
    let limit = Limit::new("n", state.settings.token_requests_per_minute);
    let counted = rate_limits::hit_with_usage(
        &state.ports,
        TOKEN_REQUESTS_SCOPE,
        &grant.token_id,
        60,
        &limit,
    )
    .await;
    let usage = match counted {
        Ok(usage) => usage,
        Err(LimitError::Limited(limited)) => {
            if let Some(slot) = slot {
                let _ = slot.0.set(Usage {
                    limit: limited.max,
                    remaining: 0,
                    reset_secs: limited.retry_after_secs,
                });
            }
            return Err(ApiError::TooManyRequests {
                message: format!(
                    "too many requests with this personal access token: at most {} a minute \
                     (Limits__TokenRequestsPerMinute), retry in {} seconds",
                    limited.max, limited.retry_after_secs
                ),
                retry_after_secs: limited.retry_after_secs,
            });
        }
        Err(LimitError::Store(e)) => return Err(e.into()),
    };
    if let Some(slot) = slot {
        let _ = slot.0.set(usage);
    }
    Ok(())
}

impl<S: RequiredScope> FromRequestParts<AppState> for Authorized<S> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let slot = parts.extensions.get::<RateLimitSlot>();
        Self::from_authorization(parts.headers.get(header::AUTHORIZATION), slot, state).await
    }
}

/// Whether a request's headers carry a personal access token (by its prefix only).
pub fn carries_personal_token(headers: &http::HeaderMap) -> bool {
    bearer(headers).is_some_and(personal_tokens::is_personal_token)
}

/// The client's address as rate limits count it: API Gateway's source IP in Lambda, the
/// peer address locally (the connection's, or `ConnectInfo` where a server sets it), grouped by network (`rate_limits::address_group`: an IPv6 /64 is
/// one client). Forwarding headers are not trusted (anyone can set them).
#[derive(Debug, Clone)]
pub struct ClientAddr(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        use lambda_http::request::RequestContext;
        if let Some(RequestContext::ApiGatewayV2(ctx)) = parts.extensions.get::<RequestContext>()
            && let Some(ip) = ctx.http.source_ip.as_deref()
        {
            return Ok(Self(address_group(ip)));
        }
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0)
            .or_else(super::serve::peer_address)
            .map(|peer| address_group(&peer.ip().to_string()));
        Ok(Self(peer.unwrap_or_else(|| "unknown".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_token_is_read_whatever_the_scheme_case_and_padding() {
        let token = |v: &'static str| bearer_of(&HeaderValue::from_static(v)).map(str::to_owned);
        assert_eq!(token("Bearer a.b.c"), Some("a.b.c".to_owned()));
        assert_eq!(token("bearer   a.b.c  "), Some("a.b.c".to_owned()));
        assert_eq!(token("BEARER a.b.c"), Some("a.b.c".to_owned()));
        assert_eq!(token("Basic a.b.c"), None);
        assert_eq!(token("Bearer"), None);
        assert_eq!(token("Bearer    "), None);
        assert_eq!(token("Bearera.b.c"), None);
        let not_utf8 = HeaderValue::from_bytes(b"Bearer \xff\xfe").unwrap();
        assert_eq!(bearer_of(&not_utf8), None);
    }
}
