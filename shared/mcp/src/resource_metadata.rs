//! The protected resource metadata (RFC 9728) of the MCP endpoint: where an AI client finds
//! the authorization server to sign its driver in with, and the scopes the tools need.

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::catalogue;
use paddock_core::identity::app_tokens::Resource;
use paddock_http::http::public_url::PublicUrl;

/// The metadata's path: the well-known prefix before the resource's path (RFC 9728 §3.1).
pub(crate) const PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Protected resource metadata (RFC 9728 §2).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProtectedResourceMetadata {
    /// The MCP endpoint's identifier, the `resource` a token is asked for (RFC 8707).
    pub resource: String,
    /// Paddock's authorization server (its issuer; metadata at
    /// `/.well-known/oauth-authorization-server`).
    pub authorization_servers: [String; 1],
    /// The scopes the tools need, each tool one of them.
    pub scopes_supported: Vec<&'static str>,
    /// `header` only: a token is sent as `Authorization: Bearer`.
    pub bearer_methods_supported: [&'static str; 1],
    /// A name to show a driver.
    pub resource_name: &'static str,
}

/// The MCP endpoint's protected resource metadata (plain JSON, as RFC 9728 gives it).
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource/mcp", operation_id = "getMcpResourceMetadata", tag = "mcp",
    security(()),
    responses((status = 200, description = "The metadata (RFC 9728)", body = ProtectedResourceMetadata)))]
pub(crate) async fn metadata(PublicUrl(issuer): PublicUrl) -> Response {
    let metadata = ProtectedResourceMetadata {
        resource: Resource::Mcp.uri(&issuer),
        authorization_servers: [issuer],
        scopes_supported: catalogue::scope_names(),
        bearer_methods_supported: ["header"],
        resource_name: "Paddock",
    };
    let mut response = axum::Json(metadata).into_response();
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("public, max-age=3600"),
    );
    response
}
