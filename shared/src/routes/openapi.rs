//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{auth, health, leaderboards, sessions, tracks};
use crate::state::AppState;

/// `GET /openapi.json`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi_json))
}

/// The OpenAPI 3.1 document of the whole API (not enveloped).
pub async fn openapi_json() -> Response {
    (StatusCode::OK, axum::Json(document())).into_response()
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Paddock", description = "Cloud companion service of the desktop sim-racing telemetry analyser. \
        Every response is wrapped in the envelope `{success, data, error}`. Request bodies accept camelCase \
        and PascalCase field names."),
    paths(
        health::health, health::live, health::ready, health::prometheus_metrics,
        auth::email::register, auth::email::login_email, auth::email::set_password,
        auth::tokens::refresh, auth::tokens::logout, auth::tokens::validate, auth::tokens::exchange,
        auth::providers::login_provider, auth::providers::callback,
        sessions::create, sessions::list, sessions::detail,
        tracks::list, tracks::map,
        leaderboards::leaderboard, leaderboards::submit_lap,
    ),
    components(schemas(
        health::HealthStatus, health::ReadyStatus,
        auth::email::RegisterRequest, auth::email::LoginRequest, auth::tokens::RefreshRequest,
        auth::tokens::ExchangeRequest, auth::TokenResponse, auth::tokens::ValidateResponse,
        auth::email::SetPasswordRequest, auth::email::SetPasswordResponse, crate::identity::users::User,
        crate::sessions::Receipt, crate::sessions::SessionSummary, crate::sessions::SessionDetail,
        crate::sessions::upload::Lap, crate::tracks::Track, crate::tracks::maps::TrackMap,
        crate::tracks::maps::MapPoint, leaderboards::SubmitRequest,
        crate::leaderboards::submit::SubmitOutcome, crate::leaderboards::cache::LeaderboardPage,
        crate::leaderboards::cache::LeaderboardEntry,
    )),
    modifiers(&BearerAuth),
    tags((name = "health", description = "Liveness, readiness and metrics"),
         (name = "auth", description = "Sign-in, tokens and the desktop PKCE flow"),
         (name = "sessions", description = "Idempotent session uploads and the caller's sessions"),
         (name = "tracks", description = "Canonical tracks and their centreline maps"),
         (name = "leaderboards", description = "Ranked best laps per track"))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// The document served at `/openapi.json`.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
