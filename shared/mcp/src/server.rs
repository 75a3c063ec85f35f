//! The MCP server's handler: its description, its tools listed, and a tool called through its
//! REST route with the caller the endpoint admitted.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use http::StatusCode;
use http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::catalogue::catalogue;
use crate::{PROTOCOL_VERSIONS, Reads, arguments};
use paddock_http::http::auth_user::Admitted;
use paddock_http::state::AppState;

/// The largest REST answer a tool passes on (a page of a hundred rows is far less).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// What an assistant is told of the server when it connects.
const INSTRUCTIONS: &str = "Paddock holds a sim-racing driver's synced sessions (with laps), \
    the boards of best laps per track and car, the driver's feed and achievements, and public \
    events. Every tool reads; none changes anything. Lap and gap times are milliseconds.";

/// Where a tool's route leaves why it refused the caller (401), for the endpoint to answer
/// with instead of the transport's answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteRefusal(pub Arc<OnceLock<String>>);

/// The handler of one request.
#[derive(Clone)]
pub(crate) struct PaddockServer {
    state: AppState,
    reads: Reads,
}

impl PaddockServer {
    pub(crate) fn new(state: AppState, reads: Reads) -> Self {
        Self { state, reads }
    }

    /// Calls the tool's route as the admitted caller; the route's answer, or why it refused.
    async fn through_route(
        &self,
        uri: &str,
        parts: &Parts,
    ) -> Result<(StatusCode, Value), McpError> {
        let mut request = http::Request::get(uri)
            .body(Body::empty())
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        if let Some(admitted) = parts.extensions.get::<Admitted>() {
            request.extensions_mut().insert(admitted.clone());
        }
        let routes = (self.reads.routes)().with_state(self.state.clone());
        let answer = match tower::ServiceExt::oneshot(routes, request).await {
            Ok(answer) => answer,
            Err(never) => match never {},
        };
        let status = answer.status();
        let bytes = axum::body::to_bytes(answer.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|e| McpError::internal_error(format!("the answer: {e}"), None))?;
        let body = serde_json::from_slice(&bytes)
            .map_err(|e| McpError::internal_error(format!("the answer is not JSON: {e}"), None))?;
        Ok((status, body))
    }
}

impl ServerHandler for PaddockServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("paddock", env!("CARGO_PKG_VERSION")).with_title("Paddock"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        supported().into()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = catalogue(self.reads).tools.iter();
        Ok(ListToolsResult::with_all_items(
            tools.map(|tool| tool.listed.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        catalogue(self.reads)
            .get(name)
            .map(|tool| tool.listed.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = catalogue(self.reads).get(&request.name).ok_or_else(|| {
            McpError::invalid_params(format!("Unknown tool: {}", request.name), None)
        })?;
        let uri = arguments::path_and_query(tool, request.arguments.as_ref())
            .map_err(|why| McpError::invalid_params(format!("Invalid arguments: {why}"), None))?;
        let parts = context
            .extensions
            .get::<Parts>()
            .ok_or_else(|| McpError::internal_error("the request's parts are missing", None))?;
        let (status, body) = self.through_route(&uri, parts).await?;
        let why = || {
            body["error"]
                .as_str()
                .unwrap_or("the route refused the request")
                .to_owned()
        };
        let result = match status {
            s if s.is_success() => CallToolResult::structured(body),
            StatusCode::BAD_REQUEST => {
                return Err(McpError::invalid_params(
                    format!("Invalid arguments: {}", why()),
                    None,
                ));
            }
            StatusCode::UNAUTHORIZED => {
                if let Some(slot) = parts.extensions.get::<RouteRefusal>() {
                    let _ = slot.0.set(why());
                }
                return Err(McpError::invalid_request(why(), None));
            }
            _ => CallToolResult::error(vec![ContentBlock::text(why())]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

/// [`PROTOCOL_VERSIONS`] as the transport knows them.
fn supported() -> Vec<ProtocolVersion> {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .filter(|known| PROTOCOL_VERSIONS.contains(&known.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_version_served_is_one_the_transport_knows() {
        assert_eq!(super::supported().len(), super::PROTOCOL_VERSIONS.len());
    }
}
