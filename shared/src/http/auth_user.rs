//! The extractor that authenticates every protected endpoint, and the client address.

use axum::extract::{ConnectInfo, FromRequestParts};
use http::request::Parts;
use http::{HeaderValue, header};
use std::net::SocketAddr;
use std::sync::Arc;

use super::ApiError;
use crate::identity::claims::Claims;
use crate::identity::rate_limits::address_group;
use crate::identity::refresh_tokens;
use crate::ids::UserId;
use crate::state::AppState;

/// The caller of a protected endpoint: a valid access token of a family that is not revoked.
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
        let token = authorization
            .and_then(bearer_of)
            .ok_or_else(|| ApiError::Unauthorized("missing bearer token".into()))?;
        let claims = state
            .verify_access_token(token)
            .await?
            .map_err(|reason| ApiError::Unauthorized(reason.into()))?;
        if !refresh_tokens::family_active(&state.ports, &claims.sid, &claims.sub).await? {
            return Err(ApiError::Unauthorized("session has been revoked".into()));
        }
        Ok(Self { claims })
    }
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
