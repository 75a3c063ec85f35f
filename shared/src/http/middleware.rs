//! The layers every router gets: request id, one log line and metrics per request, the
//! envelope on framework-level failures, security headers, panic capture, request deadline
//! and body limit.

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;
use tracing::Instrument;

use super::envelope::Envelope;
use super::error::{ApiError, ErrorCause};
use super::security_headers;
use crate::metrics;

/// The id of the current request, also sent back as `x-request-id`.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

const REQUEST_ID: &str = "x-request-id";

/// Keeps a caller's request id when it is short and plain; otherwise makes one.
fn request_id(req: &Request) -> String {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 64
                && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        .map_or_else(new_request_id, str::to_owned)
}

/// A new request id: a random UUID, written straight into its text (no `Display` round).
fn new_request_id() -> String {
    let mut text = uuid::Uuid::encode_buffer();
    uuid::Uuid::new_v4()
        .hyphenated()
        .encode_lower(&mut text)
        .to_owned()
}

/// Wraps `router` with the service layers, 404/405 envelopes and the body limit.
pub fn with_service_layers(router: Router, max_body_bytes: usize, timeout: Duration) -> Router {
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(
            ServiceBuilder::new()
                .layer(middleware::from_fn(observe))
                .layer(CatchPanicLayer::custom(on_panic))
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::GATEWAY_TIMEOUT,
                    timeout,
                ))
                .layer(DefaultBodyLimit::max(max_body_bytes)),
        )
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

fn on_panic(payload: Box<dyn Any + Send + 'static>) -> Response {
    // The payload may hold internals: it goes to the log (as the request's cause), not out.
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    let mut response = (
        StatusCode::INTERNAL_SERVER_ERROR,
        Envelope::error("internal server error"),
    )
        .into_response();
    response.extensions_mut().insert(ErrorCause(Arc::new(
        anyhow::anyhow!(what).context("handler panicked"),
    )));
    response
}

/// Request id, access log line, metrics, security headers, and the envelope on non-JSON error
/// answers.
async fn observe(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request_id(&req);
    let authenticated = req.headers().contains_key(header::AUTHORIZATION);
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().clone();
    // The matched route shares its text with the router (no copy per request).
    let route = req.extensions().get::<MatchedPath>().cloned();
    let route_label = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    // The lines a handler logs carry the request in this span. At the error level, so the span
    // exists whatever level the log filter lets through (an `info` span is filtered out under
    // `RUST_LOG=warn`, and the request's warnings lose it).
    let span =
        tracing::error_span!("request", request_id = %id, method = %method, route = %route_label);

    let mut response = next.run(req).instrument(span).await;
    if response.status().is_client_error() || response.status().is_server_error() {
        response = ensure_envelope(response);
    }
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        // The rest of the body was never read: tell the client not to send another request
        // on this connection, which the server is about to close.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, v);
    }
    security_headers::apply(authenticated, response.headers_mut());

    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    metrics::global().observe_request(method.as_str(), route_label, status, elapsed);
    // The one line of this request; a server-side cause is in it, logged nowhere else. It
    // names the request itself rather than through the span: the formatter would otherwise
    // decode the span's fields again for this line.
    let cause = response.extensions_mut().remove::<ErrorCause>();
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    let method = method.as_str();
    match (&cause, status >= 500) {
        (Some(cause), _) => tracing::error!(
            request_id = %id, method, route = route_label, status, latency_ms,
            error = %cause.chain(), "request"
        ),
        (None, true) => tracing::error!(
            request_id = %id, method, route = route_label, status, latency_ms, "request"
        ),
        (None, false) => tracing::info!(
            request_id = %id, method, route = route_label, status, latency_ms, "request"
        ),
    }
    response
}

/// Replaces a framework's plain-text error body (timeouts, body limits) with the envelope.
fn ensure_envelope(response: Response) -> Response {
    // JSON errors are the envelope already; HTML errors are the public pages' own.
    let is_ours = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if is_ours {
        return response;
    }
    let status = response.status();
    let message = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "request body is too large".to_owned(),
        StatusCode::GATEWAY_TIMEOUT | StatusCode::REQUEST_TIMEOUT => {
            "the request took too long".to_owned()
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported content type".to_owned(),
        other => other
            .canonical_reason()
            .unwrap_or("request failed")
            .to_lowercase(),
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = serde_json::to_vec(&Envelope::error(message)).expect("envelope serialises");
    Response::from_parts(parts, Body::from(body))
}
