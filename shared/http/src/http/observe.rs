//! The outermost service layer: each request gets an id of the service's own, runs in a
//! `request` span (so every line it logs names it), and its answer gets the id back, the
//! security headers, the envelope when a framework layer answered in plain text, its metrics
//! and one access line.
//!
//! Not `tower-http`'s request-id and trace layers: the first adopts a client's `x-request-id`
//! as the request's own, the second's answer hook never sees the request (`docs/perf.md`).
//!
//! A tower service rather than `axum::middleware::from_fn`: `from_fn` clones the inner service
//! (a boxed route) and boxes two futures for every request; this layer calls the route
//! directly and its future is a plain struct inside the route's own.

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, header};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;
use tower::Service;
use tracing::Instrument;
use tracing::instrument::Instrumented;

use super::envelope::Envelope;
use super::error_cause::ErrorCause;
use super::security_headers;
use paddock_core::metrics;

/// Parsed once: a header named by a string is parsed again at every use.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Request id, request span, access log line, metrics, security headers, and the envelope
/// on non-JSON error answers, around the service it wraps.
#[derive(Debug, Clone)]
pub(crate) struct Observe<S>(pub(crate) S);

impl<S, B> Service<Request> for Observe<S>
where
    S: Service<Request, Response = http::Response<B>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ObserveFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let started = Instant::now();
        let client_request_id = client_request_id(&req);
        let context = RequestContext {
            request_id: uuid::Uuid::new_v4().to_string(),
            method: req.method().clone(),
            // The matched route shares its text with the router (no copy per request).
            route: req.extensions_mut().remove::<MatchedPath>(),
        };
        let authenticated = req.headers().contains_key(header::AUTHORIZATION);
        // Display values (`%`), so the text format writes them unquoted, as the request's name.
        let span = tracing::info_span!(
            "request",
            request_id = %context.request_id,
            method = %context.method,
            route = %context.route(),
        );
        ObserveFuture {
            inner: self.0.call(req).instrument(span),
            context,
            started,
            authenticated,
            client_request_id,
        }
    }
}

pin_project! {
    /// The answer of [`Observe`]: the route's future run in the request's span.
    pub(crate) struct ObserveFuture<F> {
        #[pin]
        inner: Instrumented<F>,
        context: RequestContext,
        started: Instant,
        authenticated: bool,
        client_request_id: Option<String>,
    }
}

impl<F, B, E> Future for ObserveFuture<F>
where
    F: Future<Output = Result<http::Response<B>, E>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let response = ready!(this.inner.as_mut().poll(cx))?.map(Body::new);
        Poll::Ready(Ok(finish(
            response,
            this.context,
            this.client_request_id.as_deref(),
            *this.started,
            *this.authenticated,
        )))
    }
}

/// What the access line and the metrics of one request name.
#[derive(Debug)]
struct RequestContext {
    /// The service's own id for the request (also sent back as `x-request-id`).
    request_id: String,
    method: http::Method,
    /// The matched route template (`/v1/sessions/{id}`), shared with the router.
    route: Option<MatchedPath>,
}

impl RequestContext {
    /// The route as logged and counted: its template, or `unmatched`; never the path, which
    /// may hold ids.
    fn route(&self) -> &str {
        self.route.as_ref().map_or("unmatched", MatchedPath::as_str)
    }
}

/// The longest client request id that is logged.
const MAX_CLIENT_REQUEST_ID: usize = 64;

/// The request id the client sent, when it is 1 to 64 of `A-Z a-z 0-9 . _ -`; anything else is
/// dropped. It is only ever logged beside the service's own id (`client_request_id`), never
/// taken for it: a client cannot make its requests' lines share an id with another's, or pass
/// for a line of the service's.
fn client_request_id(req: &Request) -> Option<String> {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= MAX_CLIENT_REQUEST_ID
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
        .map(str::to_owned)
}

/// The answer's headers, its metrics and the request's one log line.
fn finish(
    mut response: Response,
    context: &RequestContext,
    client_request_id: Option<&str>,
    started: Instant,
    authenticated: bool,
) -> Response {
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
    if let Ok(v) = HeaderValue::from_str(&context.request_id) {
        response.headers_mut().insert(REQUEST_ID, v);
    }
    security_headers::apply(authenticated, response.headers_mut());

    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    let (request_id, method, route) = (
        context.request_id.as_str(),
        context.method.as_str(),
        context.route(),
    );
    metrics::global().observe_request(method, route, status, elapsed);
    // The one line of this request; a server-side cause is in it, logged nowhere else. It is
    // written outside the request's span, so the request is named by the line's own fields
    // and not twice.
    let cause = response.extensions_mut().remove::<ErrorCause>();
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    // `message` as a field with a `str` value, not a format string: the same member of the
    // line (first, "request"), recorded as a string instead of formatted through `Debug`.
    let message = "request";
    // Absent (not written at all) when the client sent none, or one that was dropped; so is
    // `error` without a cause.
    let error = cause
        .as_ref()
        .map(|cause| tracing::field::display(cause.chain()));
    if error.is_some() || status >= 500 {
        tracing::error!(
            message,
            request_id,
            method,
            route,
            status,
            latency_ms,
            client_request_id,
            error
        );
    } else {
        tracing::info!(
            message,
            request_id,
            method,
            route,
            status,
            latency_ms,
            client_request_id
        );
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
