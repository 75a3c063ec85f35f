//! Paddock's MCP server (the `mcp` endpoint group): `/mcp` over the Model Context Protocol's
//! Streamable HTTP transport, served statelessly and answering plain JSON (one request, one
//! answer: what a buffered Lambda answer can carry), and the protected resource metadata
//! (RFC 9728) that names Paddock's authorization server to AI clients.
//!
//! The tools are read-only and each answers through one REST read route ([`Reads`]): the
//! same answer, the same refusals and the same rate limits as the REST API, described by the
//! same schemas. The transport is `rmcp`'s; this crate checks what comes before it (the
//! origin, the protocol version, the JSON-RPC shape, the credential) and maps the tools.

mod arguments;
mod catalogue;
mod endpoint;
mod jsonrpc;
mod resource_metadata;
mod server;

use axum::Router;
use paddock_http::operations;
use paddock_http::registry::Routes;
use paddock_http::state::AppState;

/// The MCP endpoint's path.
pub const PATH: &str = "/mcp";

/// The protocol versions served, oldest first: those of the Streamable HTTP transport that
/// answer a request with JSON and forbid batches (2025-03-26 allowed batches; none of the
/// clients still speaking it needs this server).
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];

/// What the tools answer through: the REST read routes and their description (from the API's
/// own registration, so a tool and its route cannot drift apart).
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    /// The read routes, served.
    pub routes: fn() -> Router<AppState>,
    /// The read routes, described.
    pub description: fn() -> utoipa::openapi::OpenApi,
}

/// The group's routes: the protected resource metadata (described) and `/mcp` (served, not
/// described: it speaks JSON-RPC, which the MCP specification describes).
pub fn routes<R: Routes>(reads: Reads) -> R {
    R::empty()
        .operations(operations!(resource_metadata::metadata))
        .undocumented(PATH, move || endpoint::method_router(reads))
}

/// The protected resource metadata's path (RFC 9728 §3.1: the well-known prefix before the
/// resource's path).
pub const RESOURCE_METADATA_PATH: &str = resource_metadata::PATH;

/// The tools' names, in the order they are listed.
pub fn tool_names() -> impl Iterator<Item = &'static str> {
    catalogue::TOOLS.iter().map(|tool| tool.name)
}

/// Each tool's name and the scopes it accepts (any one of them), read from `reads`'
/// description as `tools/list` is.
pub fn tool_scopes(reads: Reads) -> Vec<(&'static str, Vec<&'static str>)> {
    catalogue::catalogue(reads)
        .tools
        .iter()
        .zip(catalogue::TOOLS.iter())
        .map(|(tool, spec)| (spec.name, tool.scopes.iter().map(|s| s.name()).collect()))
        .collect()
}

/// The scopes the protected resource metadata and the 401 challenge name.
pub fn scopes_named() -> Vec<&'static str> {
    catalogue::scope_names()
}
