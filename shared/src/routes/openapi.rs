//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;
use utoipa::openapi::RefOr;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response as ApiResponse, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    activity, ai, auth, board_pages, health, leaderboards, profile, sessions, sharepacks, tracks,
};
use crate::state::AppState;

/// `GET /openapi.json`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi_json))
}

/// The OpenAPI 3.1 document of the whole API (not enveloped).
pub(crate) async fn openapi_json() -> Response {
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
        leaderboards::leaderboard, leaderboards::my_standing, leaderboards::vehicles,
        leaderboards::submit_lap,
        board_pages::boards, board_pages::board, board_pages::driver,
        activity::list_feed, activity::post_feed, activity::mine, activity::catalog,
        ai::insights, ai::chat,
        sharepacks::upload, sharepacks::start_upload, sharepacks::upload_content, sharepacks::complete,
        sharepacks::list, sharepacks::metadata, sharepacks::download, sharepacks::delete,
        profile::read, profile::change, profile::read_me, profile::change_me, profile::export_me, profile::delete_me,
        auth::personal_tokens::create, auth::personal_tokens::list, auth::personal_tokens::revoke,
    ),
    components(schemas(
        health::HealthStatus, health::ReadyStatus,
        auth::email::RegisterRequest, auth::email::LoginRequest, auth::tokens::RefreshRequest, auth::tokens::LogoutRequest, auth::tokens::LogoutResponse,
        auth::tokens::ExchangeRequest, auth::TokenResponse, auth::tokens::ValidateResponse,
        auth::email::SetPasswordRequest, auth::email::SetPasswordResponse, crate::identity::users::User,
        crate::sessions::Receipt, crate::sessions::SessionSummary, crate::sessions::SessionDetail,
        crate::sessions::upload::Lap, crate::sessions::upload::SessionUploadDto,
        crate::sessions::upload::LapSummaryDto, crate::sessions::upload::TrackPointDto,
        crate::sessions::upload::SectorTimeMs, crate::tracks::Track, crate::tracks::maps::TrackMap,
        crate::tracks::maps::MapPoint, leaderboards::SubmitRequest,
        crate::leaderboards::submit::SubmitOutcome, crate::leaderboards::cache::LeaderboardPage,
        crate::leaderboards::cache::LeaderboardEntry,
        activity::FeedPostRequest, activity::AchievementList, activity::Catalog,
        crate::activity::feed::FeedEntry, crate::activity::feed::FeedKind,
        crate::activity::achievements::DriverAchievement, crate::activity::achievements::CatalogEntry,
        crate::activity::achievements::Progress, crate::activity::catalog::Category,
        ai::AiInsightRequest, ai::AiChatRequest, ai::AiChatMessage, crate::coaching::coach::CoachAnswer,
        sharepacks::UploadRequest, sharepacks::PackDetail, crate::sharepacks::packs::SharePack,
        crate::sharepacks::packs::UploadTicket,
        profile::Profile, profile::ProfileUpdate, profile::ExportDocument,
        crate::driver_data::deletion::DeletionTicket,
        auth::personal_tokens::CreateTokenRequest, crate::identity::personal_tokens::TokenInfo,
        crate::identity::personal_tokens::CreatedToken, crate::identity::personal_tokens::Scope,
    )),
    modifiers(&BearerAuth, &CommonResponses),
    tags((name = "health", description = "Liveness, readiness and metrics"),
         (name = "auth", description = "Sign-in, tokens and the desktop PKCE flow"),
         (name = "sessions", description = "Idempotent session uploads and the caller's sessions"),
         (name = "tracks", description = "Canonical tracks and their centreline maps"),
         (name = "leaderboards", description = "Ranked best laps per track"),
         (name = "pages", description = "Public leaderboard pages (HTML, no script) a driver can share as a link"),
         (name = "activity", description = "The caller's feed (90 days) and achievements"),
         (name = "ai", description = "AI coaching on a lap: one-shot insights and chat"),
         (name = "sharepacks", description = "ZIP share packs: upload, share by id, download, delete"),
         (name = "profile", description = "The driver's profile, the export of all their data, account deletion"),
         (name = "tokens", description = "Personal access tokens for a driver's own tools (see docs/tokens.md)"))
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

/// The answers every operation can give because of the layers and extractors it runs
/// through, added where an operation does not describe them itself: 500 (a bug), 503 (a
/// backing service is down), 504 (the request deadline); with a JSON body also 400 (malformed
/// or a field breaks a rule), 413 (too large) and 415 (not JSON); with parameters 400; with a
/// bearer token 401. Error answers are the envelope with `error` set.
struct CommonResponses;

impl CommonResponses {
    fn error_response(status: &str, description: &str) -> RefOr<ApiResponse> {
        let schema = ObjectBuilder::new()
            .property("success", ObjectBuilder::new().schema_type(Type::Boolean))
            .property("data", ObjectBuilder::new().schema_type(Type::Null))
            .property("error", ObjectBuilder::new().schema_type(Type::String))
            .required("success")
            .required("data")
            .required("error");
        let response = ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Schema::Object(schema.build())))
                .build(),
        );
        let response = match status {
            "429" | "503" => response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::Integer))
                    .description(Some("Seconds to wait before retrying"))
                    .build(),
            ),
            _ => response,
        };
        RefOr::T(response.build())
    }

    fn add(operation: &mut Operation) {
        let has_body = operation.request_body.is_some();
        let has_params = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
        let secured = operation.security.as_ref().is_some_and(|s| !s.is_empty());
        let mut common = vec![
            (
                "500",
                "Internal error (details are logged with the request id)",
            ),
            (
                "503",
                "A backing service is unavailable, or the server is saturated (then with Retry-After)",
            ),
            ("504", "The request took longer than the deadline"),
        ];
        if has_body {
            common.extend([
                (
                    "400",
                    "Malformed JSON, or a field breaks a rule (the message names each)",
                ),
                ("413", "The body is larger than the limit"),
                ("415", "The body is not application/json"),
            ]);
        }
        if has_params {
            common.push(("400", "A parameter breaks a rule (the message names it)"));
        }
        if secured {
            common.push(("401", "Missing, invalid, expired or revoked token"));
        }
        let responses = &mut operation.responses.responses;
        for (status, description) in common {
            responses
                .entry(status.to_owned())
                .or_insert_with(|| Self::error_response(status, description));
        }
        // Statuses described by hand without a body get the error envelope too.
        for (status, response) in responses.iter_mut() {
            if let RefOr::T(r) = response
                && (status.starts_with('4') || status.starts_with('5'))
                && r.content.is_empty()
            {
                let description = r.description.clone();
                *response = Self::error_response(status, &description);
            }
        }
    }
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                Self::add(operation);
            }
        }
    }
}

/// The document served at `/openapi.json`.
pub(crate) fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

#[cfg(test)]
mod tests {
    use super::document;

    #[test]
    fn the_documented_display_name_pattern_is_the_one_the_code_defines() {
        let doc = serde_json::to_value(document()).unwrap();
        let pattern = &doc["components"]["schemas"]["RegisterRequest"]["properties"]["displayName"]
            ["pattern"];
        assert_eq!(
            pattern.as_str(),
            Some(crate::identity::fields::display_name_pattern().as_str())
        );
    }

    #[test]
    fn the_documented_feed_post_patterns_are_the_ones_the_code_defines() {
        let doc = serde_json::to_value(document()).unwrap();
        let post = &doc["components"]["schemas"]["FeedPostRequest"]["properties"];
        let names = crate::identity::fields::display_name_pattern();
        assert_eq!(post["title"]["pattern"].as_str(), Some(names.as_str()));
        let free = crate::identity::fields::free_text_pattern();
        assert_eq!(post["subtitle"]["pattern"].as_str(), Some(free.as_str()));
    }

    #[test]
    fn the_documented_upload_name_patterns_are_the_ones_the_code_defines() {
        let doc = serde_json::to_value(document()).unwrap();
        let upload = &doc["components"]["schemas"]["SessionUploadDto"]["properties"];
        let names = crate::identity::fields::display_name_pattern();
        for field in ["gameId", "trackName", "vehicleName"] {
            assert_eq!(
                upload[field]["pattern"].as_str(),
                Some(names.as_str()),
                "{field}"
            );
        }
        let free = crate::identity::fields::free_text_pattern();
        assert_eq!(
            upload["trackLayout"]["pattern"].as_str(),
            Some(free.as_str())
        );
    }

    #[test]
    fn every_operation_documents_its_failures_with_the_envelope() {
        let doc = serde_json::to_value(document()).unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let responses = op["responses"].as_object().unwrap();
                for status in ["500", "503", "504"] {
                    assert!(responses.contains_key(status), "{method} {path}: {status}");
                }
                if op.get("requestBody").is_some() {
                    for status in ["400", "413", "415"] {
                        assert!(responses.contains_key(status), "{method} {path}: {status}");
                    }
                }
                for (status, response) in responses {
                    // The pages answer their own 400 and 404 as HTML pages.
                    let page = response["content"].get("text/html").is_some();
                    if (status.starts_with('4') || status.starts_with('5')) && !page {
                        let schema = &response["content"]["application/json"]["schema"];
                        assert_eq!(schema["required"][2], "error", "{method} {path} {status}");
                    }
                }
            }
        }
    }
}
