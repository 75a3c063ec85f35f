//! The client's address as rate limits count it.

use axum::extract::{ConnectInfo, FromRequestParts};
use http::request::Parts;
use std::net::SocketAddr;

use paddock_core::rate_limits::address_group;

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
            .or_else(crate::http::serve::peer_address)
            .map(|peer| address_group(&peer.ip().to_string()));
        Ok(Self(peer.unwrap_or_else(|| "unknown".into())))
    }
}
