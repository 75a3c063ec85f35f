//! `/mcp`: the checks before the transport, then `rmcp`'s Streamable HTTP transport, served
//! statelessly and answering JSON.
//!
//! In order: a foreign `Origin` is 403 (a web page must not drive a driver's assistant
//! session); a request without a bearer token is 401 with `WWW-Authenticate` naming the
//! protected resource metadata and the scopes (how an AI client discovers where to sign in);
//! an unsupported `MCP-Protocol-Version` is 400 naming the supported ones; the body must be
//! one JSON-RPC message within the size bound (JSON-RPC errors otherwise, never a 500); then
//! the domain's door admits the credential for the MCP resource, with the scope of the tool
//! called (403 `insufficient_scope` naming it) and the rate limits of the REST API, once per
//! request. The tools answer through the REST routes with the caller admitted here.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::MethodRouter;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use crate::catalogue::{self, catalogue};
use crate::jsonrpc::{self, Incoming};
use crate::server::{PaddockServer, RouteRefusal};
use crate::{PROTOCOL_VERSIONS, Reads};
use paddock_core::identity::app_tokens::Resource;
use paddock_core::identity::authentication::{AuthenticationError, Credential, Required};
use paddock_core::identity::personal_tokens::Scope;
use paddock_http::bearer::bearer;
use paddock_http::http::auth_user::{Admitted, RateLimitSlot};
use paddock_http::http::public_url::PublicUrl;
use paddock_http::state::AppState;

/// The largest body read: a tool call's arguments are a few parameters.
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;

/// The endpoint, for every method (the transport answers 405 to all but POST).
pub(crate) fn method_router(reads: Reads) -> MethodRouter<AppState> {
    axum::routing::any(move |state: State<AppState>, request: Request| {
        endpoint(reads, state, request)
    })
}

async fn endpoint(reads: Reads, State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let PublicUrl(issuer) = PublicUrl::of(&parts, &state);
    let refusals = Refusals::new(&issuer);
    if let Some(origin) = parts.headers.get(header::ORIGIN)
        && origin.as_bytes() != origin_of(&issuer).as_bytes()
    {
        return jsonrpc::error(
            StatusCode::FORBIDDEN,
            Value::Null,
            jsonrpc::INVALID_REQUEST,
            format!("Forbidden: requests from origin {origin:?} are not accepted"),
        );
    }
    let Some(token) = bearer(&parts.headers).map(str::to_owned) else {
        return refusals.unauthorized(None, "a bearer token is required");
    };
    if let Some(version) = parts.headers.get("mcp-protocol-version")
        && !PROTOCOL_VERSIONS
            .iter()
            .any(|v| v.as_bytes() == version.as_bytes())
    {
        return jsonrpc::with_data(
            StatusCode::BAD_REQUEST,
            Value::Null,
            jsonrpc::INVALID_REQUEST,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version {version:?}; supported: {}",
                PROTOCOL_VERSIONS.join(", ")
            ),
            Some(json!({"supported": PROTOCOL_VERSIONS})),
        );
    }
    if parts.method != http::Method::POST {
        return transport(
            reads,
            &state,
            &issuer,
            Request::from_parts(parts, Body::empty()),
        )
        .await;
    }
    let bytes = match http_body_util::Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return jsonrpc::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                Value::Null,
                jsonrpc::INVALID_REQUEST,
                format!("Invalid Request: the body is over {MAX_BODY_BYTES} bytes"),
            );
        }
    };
    let incoming = match jsonrpc::read(&bytes) {
        Ok(incoming) => incoming,
        Err(malformed) => return malformed.answer(),
    };
    let tools = catalogue(reads);
    let (required, id) = match &incoming {
        Incoming::Request {
            id,
            tool: Some(name),
        } => match tools.get(name) {
            Some(tool) => (Required::AnyScope(tool.scopes), id.clone()),
            None => (Required::AnyScope(&Scope::ALL), id.clone()),
        },
        Incoming::Request { id, tool: None } => (Required::AnyScope(&Scope::ALL), id.clone()),
        Incoming::Other => (Required::AnyScope(&Scope::ALL), Value::Null),
    };
    let door = paddock_core::identity::authentication::Door {
        resource: Resource::Mcp,
        ..state.door()
    };
    let admitted = door
        .authenticate(Credential::from_bearer(&token), required)
        .await;
    let slot = parts.extensions.get::<RateLimitSlot>();
    let usage = match &admitted {
        Ok(admitted) => admitted.usage(),
        Err(AuthenticationError::Limited { usage, .. }) => Some(*usage),
        Err(_) => None,
    };
    if let (Some(slot), Some(usage)) = (slot, usage) {
        slot.set(usage);
    }
    let admitted = match admitted {
        // A sign-in's family is confirmed here unless a tool's route confirms it.
        Ok(admitted) if matches!(&incoming, Incoming::Request { tool: Some(_), .. }) => admitted,
        Ok(admitted) => match admitted.clone().confirmed(&state.ports).await {
            Ok(_) => admitted,
            Err(refused) => return refusals.refused(id, refused, required),
        },
        Err(refused) => return refusals.refused(id, refused, required),
    };
    let mut request = Request::from_parts(parts, Body::from(bytes));
    let route_refusal = RouteRefusal::default();
    request.extensions_mut().insert(Admitted(admitted));
    request.extensions_mut().insert(route_refusal.clone());
    let answer = transport(reads, &state, &issuer, request).await;
    // A tool's route refusing the caller (a sign-in revoked since) refuses the request.
    match route_refusal.0.get() {
        Some(why) => refusals.unauthorized(Some(id), why),
        None => answer,
    }
}

/// `rmcp`'s transport over the tools, for one request. The transport reads the `Host` header
/// (a request that reached this route without one, as over HTTP/2, is given the public URL's),
/// and its own refusals in plain text are answered as JSON-RPC errors.
async fn transport(reads: Reads, state: &AppState, issuer: &str, mut request: Request) -> Response {
    if !request.headers().contains_key(header::HOST) {
        let authority = issuer.split_once("://").map_or(issuer, |(_, a)| a);
        if let Ok(host) = HeaderValue::from_str(authority) {
            request.headers_mut().insert(header::HOST, host);
        }
    }
    let server = PaddockServer::new(state.clone(), reads);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        // The origin is checked above against the public URL; the host is API Gateway's.
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let answer = match tower::ServiceExt::oneshot(service, request).await {
        Ok(answer) => answer.map(Body::new),
        Err(never) => match never {},
    };
    let json = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let status = answer.status();
    if json || !(status.is_client_error() || status.is_server_error()) {
        return answer;
    }
    let allow = answer.headers().get(header::ALLOW).cloned();
    let text = axum::body::to_bytes(answer.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut refused = jsonrpc::error(status, Value::Null, jsonrpc::INVALID_REQUEST, text);
    if let Some(allow) = allow {
        refused.headers_mut().insert(header::ALLOW, allow);
    }
    refused
}

/// The refusals of the endpoint's door, each with `WWW-Authenticate` (RFC 6750 §3, RFC 9728
/// §5.1).
pub(crate) struct Refusals {
    metadata: String,
}

impl Refusals {
    pub(crate) fn new(issuer: &str) -> Self {
        Self {
            metadata: format!("{issuer}{}", crate::RESOURCE_METADATA_PATH),
        }
    }

    /// 401: no token, or one that does not hold (`invalid_token`).
    pub(crate) fn unauthorized(&self, id: Option<Value>, why: &str) -> Response {
        let scopes = catalogue::scope_names().join(" ");
        let challenge = match id {
            None => format!(
                r#"Bearer resource_metadata="{}", scope="{scopes}""#,
                self.metadata
            ),
            Some(_) => format!(
                r#"Bearer error="invalid_token", error_description="{}", resource_metadata="{}", scope="{scopes}""#,
                quoted(why),
                self.metadata
            ),
        };
        challenged(
            jsonrpc::error(
                StatusCode::UNAUTHORIZED,
                id.unwrap_or(Value::Null),
                jsonrpc::INVALID_REQUEST,
                format!("Unauthorized: {why}"),
            ),
            &challenge,
        )
    }

    /// The answer to the door's refusal of a presented credential for `required`.
    pub(crate) fn refused(
        &self,
        id: Value,
        refused: AuthenticationError,
        required: Required,
    ) -> Response {
        match refused {
            AuthenticationError::Refused(why) => self.unauthorized(Some(id), &why),
            AuthenticationError::NotAllowed(why) => {
                let scopes = scope_names(required);
                let challenge = format!(
                    r#"Bearer error="insufficient_scope", scope="{scopes}", error_description="{}", resource_metadata="{}""#,
                    quoted(&why),
                    self.metadata
                );
                let answer = jsonrpc::with_data(
                    StatusCode::FORBIDDEN,
                    id,
                    jsonrpc::INVALID_REQUEST,
                    format!("Forbidden: {why}"),
                    Some(json!({"scope": scopes})),
                );
                challenged(answer, &challenge)
            }
            AuthenticationError::Limited {
                message,
                retry_after_secs,
                ..
            } => {
                let mut answer = jsonrpc::error(
                    StatusCode::TOO_MANY_REQUESTS,
                    id,
                    jsonrpc::INVALID_REQUEST,
                    format!("Too Many Requests: {message}"),
                );
                answer
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
                answer
            }
            other => {
                tracing::error!(error = %other, "the MCP endpoint's door failed");
                jsonrpc::error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    id,
                    jsonrpc::INTERNAL_ERROR,
                    "Internal error: the credential could not be checked; retry".into(),
                )
            }
        }
    }
}

/// The scopes `required` accepts, space-separated (as a challenge's `scope` lists them).
fn scope_names(required: Required) -> String {
    let scopes: &[Scope] = match required {
        Required::Scope(ref scope) => std::slice::from_ref(scope),
        Required::AnyScope(scopes) => scopes,
        Required::SignIn => &[],
    };
    let names: Vec<&str> = scopes.iter().map(|scope| scope.name()).collect();
    names.join(" ")
}

fn challenged(mut answer: Response, challenge: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(challenge) {
        answer.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    answer
}

/// `text` fit for a quoted string: its quotes and backslashes dropped.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
        .collect()
}

/// The origin (scheme, host, port) of `url`.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => &url[..after_scheme + slash],
        None => url,
    }
}
