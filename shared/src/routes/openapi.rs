//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use utoipa::OpenApi;

use super::health;

#[derive(OpenApi)]
#[openapi(
    info(title = "Paddock", description = "Cloud companion service of the desktop sim-racing telemetry analyser. \
        Every response is wrapped in the envelope `{success, data, error}`."),
    paths(health::health, health::live, health::ready, health::prometheus_metrics),
    components(schemas(health::HealthStatus, health::ReadyStatus)),
    tags((name = "health", description = "Liveness, readiness and metrics"))
)]
struct ApiDoc;

/// The document served at `/openapi.json`.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
