//! The layers every router gets: request id, one log line and metrics per request, the
//! envelope on framework-level failures, security headers ([`super::observe`]), panic capture,
//! request deadline, body limit, and the rate-limit headers of requests made with a personal
//! access token ([`super::rate_limit_headers`]).

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceBuilder;
use tower::layer::layer_fn;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

use super::envelope::Envelope;
use super::error::ApiError;
use super::error_cause::ErrorCause;
use super::observe::Observe;
use super::rate_limit_headers::rate_limit_headers;

/// Wraps `router` with the service layers, 404/405 envelopes and the body limit.
pub fn with_service_layers(router: Router, max_body_bytes: usize, timeout: Duration) -> Router {
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(
            ServiceBuilder::new()
                .layer(layer_fn(Observe))
                .layer(CatchPanicLayer::custom(on_panic))
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::GATEWAY_TIMEOUT,
                    timeout,
                ))
                .layer(DefaultBodyLimit::max(max_body_bytes))
                .layer(axum::middleware::from_fn(rate_limit_headers)),
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
