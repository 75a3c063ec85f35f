//! The authorization server's metadata (RFC 8414), at the well-known path under the issuer:
//! what a client needs to find the endpoints and what they support.

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use paddock_core::identity::personal_tokens::Scope;
use paddock_http::http::public_url::PublicUrl;

/// The metadata's path.
pub(crate) const PATH: &str = "/.well-known/oauth-authorization-server";

/// Authorization server metadata (RFC 8414 §2).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuthorizationServerMetadata {
    /// The issuer: the server's public URL, also sent as `iss` with every authorization
    /// answer (RFC 9207).
    pub issuer: String,
    /// Where a driver approves (`/oauth/authorize`).
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged (`/oauth/token`).
    pub token_endpoint: String,
    /// Where tokens are revoked (`/oauth/revoke`, RFC 7009).
    pub revocation_endpoint: String,
    /// Every scope an app may ask for.
    pub scopes_supported: Vec<&'static str>,
    /// `code` only.
    pub response_types_supported: [&'static str; 1],
    /// `query` only.
    pub response_modes_supported: [&'static str; 1],
    /// `authorization_code` and `refresh_token`.
    pub grant_types_supported: [&'static str; 2],
    /// How clients authenticate at the token endpoint: `none` (public, PKCE alone),
    /// `client_secret_basic`, `client_secret_post`.
    pub token_endpoint_auth_methods_supported: [&'static str; 3],
    /// The same, at the revocation endpoint.
    pub revocation_endpoint_auth_methods_supported: [&'static str; 3],
    /// `S256` only.
    pub code_challenge_methods_supported: [&'static str; 1],
    /// Always true: every authorization answer carries `iss` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// The REST API's and the MCP endpoint's identifiers, the values `resource` may take
    /// (RFC 8707).
    pub resources_supported: Vec<String>,
    /// Always true: a `client_id` may be the https URL of the client's metadata document
    /// (draft-ietf-oauth-client-id-metadata-document), with no registration.
    pub client_id_metadata_document_supported: bool,
}

const CLIENT_AUTH: [&str; 3] = ["none", "client_secret_basic", "client_secret_post"];

/// The authorization server's metadata (plain JSON, as RFC 8414 gives it).
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", operation_id = "getAuthorizationServerMetadata", tag = "oauth",
    security(()),
    responses((status = 200, description = "The metadata (RFC 8414)", body = AuthorizationServerMetadata)))]
pub(crate) async fn metadata(PublicUrl(issuer): PublicUrl) -> Response {
    use paddock_core::identity::app_tokens::Resource;
    let metadata = AuthorizationServerMetadata {
        authorization_endpoint: format!("{issuer}/oauth/authorize"),
        token_endpoint: format!("{issuer}/oauth/token"),
        revocation_endpoint: format!("{issuer}/oauth/revoke"),
        scopes_supported: Scope::ALL.iter().map(|s| s.name()).collect(),
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        token_endpoint_auth_methods_supported: CLIENT_AUTH,
        revocation_endpoint_auth_methods_supported: CLIENT_AUTH,
        code_challenge_methods_supported: ["S256"],
        authorization_response_iss_parameter_supported: true,
        resources_supported: Resource::ALL.iter().map(|r| r.uri(&issuer)).collect(),
        client_id_metadata_document_supported: true,
        issuer,
    };
    let mut response = axum::Json(metadata).into_response();
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("public, max-age=3600"),
    );
    response
}
