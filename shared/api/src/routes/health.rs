//! Liveness, readiness and metrics (no version prefix; in AWS the metrics take the metrics
//! token).

use crate::routes::registry::{Routes, operations};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, header};
use serde::Serialize;
use utoipa::ToSchema;

use super::envelopes::envelope;
use crate::http::{ApiError, json_bytes, ok};
use crate::metrics_access::{self, MetricsAccessError};
use crate::state::AppState;
use paddock_core::metrics;
use paddock_http::bearer::bearer;

/// Where the metrics are served.
pub(crate) const METRICS_PATH: &str = "/metrics";

/// The health routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(health))
        .operations(operations!(live))
        .operations(operations!(ready))
        .operations(operations!(prometheus_metrics))
}

/// Liveness answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct HealthStatus {
    /// Always `Healthy` when the process answers.
    pub status: &'static str,
}

/// Readiness answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReadyStatus {
    /// `Healthy` when every dependency answers.
    pub status: &'static str,
    /// `Healthy` when the item store answers.
    pub database: &'static str,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/health", operation_id = "getHealth", tag = "health",
    responses((status = 200, description = "The service is up", body = HealthEnvelope)))]
pub(crate) async fn health() -> Response {
    healthy()
}

/// The liveness answer, `ok(HealthStatus { status: "Healthy" })`, as the constant it is (load
/// balancers and monitors ask for it often; a test holds it to the envelope).
const HEALTHY: &str = r#"{"success":true,"data":{"status":"Healthy"},"error":null}"#;

fn healthy() -> Response {
    json_bytes(HEALTHY)
}

/// Liveness for orchestrators.
#[utoipa::path(get, path = "/health/live", operation_id = "getLiveness", tag = "health",
    responses((status = 200, description = "The process answers", body = HealthEnvelope)))]
pub(crate) async fn live() -> Response {
    healthy()
}

/// Readiness: the item store answers a real read.
#[utoipa::path(get, path = "/health/ready", operation_id = "getReadiness", tag = "health",
    responses(
        (status = 200, description = "Ready", body = ReadyEnvelope),
        (status = 503, description = "The item store cannot be reached (`Unhealthy`)")))]
pub(crate) async fn ready(State(state): State<AppState>) -> Result<Response, ApiError> {
    match state.ports.items.ping().await {
        Ok(()) => Ok(ok(ReadyStatus {
            status: "Healthy",
            database: "Healthy",
        })),
        Err(e) => {
            tracing::warn!(error = %e, "readiness probe failed");
            Err(ApiError::Unavailable(
                "Unhealthy: database Unhealthy".into(),
            ))
        }
    }
}

/// Prometheus text exposition (not enveloped): the local server's own registry, to anyone
/// who reaches it; or in AWS the service's metrics as CloudWatch holds them (every function's
/// counts summed; counters since 00:00 UTC; read at most once per `Metrics__CacheSeconds`
/// across the function's instances), only to a scrape with the metrics token.
#[utoipa::path(get, path = "/metrics", operation_id = "getMetrics", tag = "health",
    security((), ("metricsToken" = [])),
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain; version=0.0.4"),
              (status = 401, description = "In AWS: the request has no metrics token, or another one (`WWW-Authenticate: Bearer`)"),
              (status = 404, description = "In AWS: no metrics token is configured, so the metrics are off"),
              (status = 503, description = "In AWS: CloudWatch could not be read; `Retry-After` says when to ask again")))]
pub(crate) async fn prometheus_metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let text = match &state.metrics_readout {
        Some(readout) => {
            if let Err(refusal) = allowed(&state, &headers).await {
                return Ok(refusal);
            }
            readout.text().await.map_err(|e| {
                tracing::warn!(error = %e, "could not read the metrics from the metrics store");
                ApiError::Busy {
                    message: "the metrics store cannot be read now, please retry".into(),
                    retry_after_secs: e.retry_after_secs,
                }
            })?
        }
        None => metrics::global().render().into(),
    };
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

/// Whether the scrape of `headers` may read the service's metrics: it bears the metrics
/// token. Otherwise the refusal: 401 naming the scheme a scraper should send, or, without a
/// configured token (the metrics are off), the 404 of an unknown route.
async fn allowed(state: &AppState, headers: &HeaderMap) -> Result<(), Response> {
    let refusal = match metrics_access::check(state.ports.secrets.as_ref(), bearer(headers)).await {
        Ok(()) => return Ok(()),
        Err(MetricsAccessError::Off) => ApiError::NotFound("no such endpoint".into()),
        Err(MetricsAccessError::Refused) => {
            let mut refusal =
                ApiError::Unauthorized("missing or wrong metrics token".into()).into_response();
            refusal.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"metrics\""),
            );
            return Err(refusal);
        }
        Err(MetricsAccessError::Unavailable(reason)) => {
            tracing::warn!(error = %reason, "could not read the metrics token");
            ApiError::Busy {
                message: "the metrics store cannot be read now, please retry".into(),
                retry_after_secs: 5,
            }
        }
    };
    Err(refusal.into_response())
}

envelope!(
    /// The service's health.
    HealthEnvelope => HealthStatus
);

envelope!(
    /// Readiness of the backing services.
    ReadyEnvelope => ReadyStatus
);

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_constant_liveness_answer_is_the_envelope_of_healthy() {
        let answer = healthy();
        let enveloped = ok(HealthStatus { status: "Healthy" });
        assert_eq!(answer.status(), enveloped.status());
        assert_eq!(
            answer.headers().get(header::CONTENT_TYPE),
            enveloped.headers().get(header::CONTENT_TYPE)
        );
        let body = |r: Response| async move { r.into_body().collect().await.unwrap().to_bytes() };
        assert_eq!(body(answer).await, body(enveloped).await);
    }
}
