//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use std::sync::LazyLock;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response as ApiResponse, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{Modify, OpenApi, ToSchema};

use super::Group;
use super::envelopes::ErrorEnvelope;

/// Where the document is served; not an operation of its own.
pub(crate) const OPENAPI_PATH: &str = "/openapi.json";

/// The OpenAPI 3.1 document of the whole API (not enveloped), as the local server serves it:
/// built from every group's routers at the first request, stating that `GET /metrics` takes
/// no token, or the metrics token where a deployment of the functions answers it.
pub(crate) async fn openapi_json() -> Response {
    static LOCAL: LazyLock<Bytes> = LazyLock::new(|| serialised(MetricsShape::Local));
    json_document(LOCAL.clone())
}

/// The document a deployment in AWS serves, where `GET /metrics` reads the metrics store and
/// takes the metrics token: `docs/openapi.json`, generated from the routers and held to them
/// by a test, served without its indentation. The health function serves it from the file,
/// so it links none of the code that describes the groups, and builds nothing at its start.
pub(crate) async fn deployed_openapi_json() -> Response {
    static DEPLOYED: LazyLock<Bytes> = LazyLock::new(|| {
        let doc: serde_json::Value =
            serde_json::from_slice(COMMITTED).expect("docs/openapi.json is JSON");
        Bytes::from(serde_json::to_vec(&doc).expect("the document serialises"))
    });
    json_document(DEPLOYED.clone())
}

/// `docs/openapi.json`, indented so that a change to the API reads as a change of its lines.
static COMMITTED: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/openapi.json"
));

fn json_document(body: Bytes) -> Response {
    let content_type = HeaderValue::from_static("application/json");
    (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn serialised(shape: MetricsShape) -> Bytes {
    Bytes::from(serde_json::to_vec(&described(shape)).expect("the document serialises"))
}

/// The whole document of a process whose `GET /metrics` is of `shape`, webhooks included.
fn described(shape: MetricsShape) -> serde_json::Value {
    let mut doc = serde_json::to_value(document_for(shape)).expect("the document serialises");
    super::webhook_descriptions::add_to(&mut doc);
    doc
}

/// Which `GET /metrics` a process serves, for the security the document states for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricsShape {
    /// The local server's own registry: no token, or the metrics token where a deployment
    /// of the functions answers it.
    Local,
    /// The health function's read of the metrics store: the metrics token only.
    Store,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Paddock", description = "Cloud companion service of the desktop sim-racing telemetry analyser. \
        Every response is wrapped in the envelope `{success, data, error}`. Request bodies accept camelCase \
        and PascalCase field names."),
    // The other schemas are those the operations name, collected from them: none unused.
    components(schemas(ErrorEnvelope)),
    servers((url = "/", description = "This deployment (the document is served by the API it describes)")),
    modifiers(&BearerAuth),
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
         (name = "tokens", description = "Personal access tokens for a driver's own tools (see docs/tokens.md)"),
         (name = "webhooks", description = "Signed event deliveries to a driver's own URLs (see docs/webhooks.md)"),
         (name = "leagues", description = "Leagues of drivers, joined by invite code"),
         (name = "events", description = "Competition events of a league or public: a window on one track, entered by submitting laps, with exact standings"),
         (name = "apps", description = "OAuth apps a driver runs for other drivers, and the apps a driver authorised (see docs/oauth.md)"),
         (name = "oauth", description = "The OAuth 2.1 authorization server: metadata, consent, token exchange and revocation; answers as RFC 6749, 7009 and 8414 say, not in the envelope"))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "metricsToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The metrics token of a deployment in AWS (the app secret's \
                         `metricsToken`), which `GET /metrics` requires there; the local \
                         server's own `GET /metrics` takes no token.",
                    ))
                    .build(),
            ),
        );
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
/// bearer token 401. Every error answer refers to the one `ErrorEnvelope` schema.
struct CommonResponses;

impl CommonResponses {
    fn error_response(status: &str, description: &str) -> RefOr<ApiResponse> {
        let response = ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(RefOr::Ref(Ref::from_schema_name(
                    ErrorEnvelope::name(),
                ))))
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
        // A form (the OAuth endpoints) is read as such: its refusals are the operation's own.
        let json_body = (operation.request_body.as_ref())
            .is_some_and(|b| b.content.keys().any(|c| c.contains("json")));
        let has_params = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
        // A driver's token (the `bearer` scheme): other schemes describe their own refusals.
        let secured = operation
            .security
            .iter()
            .flatten()
            .any(|r| serde_json::to_value(r).is_ok_and(|v| v.get("bearer").is_some()));
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
        if json_body {
            common.extend([
                (
                    "400",
                    "Malformed JSON, or a field breaks a rule (the message names each)",
                ),
                ("415", "The body is not application/json"),
            ]);
        }
        if has_body {
            common.push(("413", "The body is larger than the limit"));
        }
        if has_params {
            common.push(("400", "A parameter breaks a rule (the message names it)"));
        }
        // An operation a personal access token may use names the token's scope.
        let scoped = operation
            .security
            .iter()
            .flatten()
            .any(|r| serde_json::to_string(r).is_ok_and(|s| s.contains("[\"")));
        if secured {
            common.push(("401", "Missing, invalid, expired or revoked token"));
        } else {
            // The routes' layer refuses a bearer token of no form of ours, on public routes too.
            common.push((
                "401",
                "A bearer token was sent that is of no form this service issues",
            ));
        }
        if scoped {
            common.extend([
                (
                    "403",
                    "A personal access token without the scope this operation needs (the message names it)",
                ),
                (
                    "429",
                    "Too many requests with this personal access token a minute (with Retry-After)",
                ),
            ]);
        } else if secured {
            common.push((
                "403",
                "A personal access token: this operation takes a signed-in driver's access token",
            ));
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
        for_each_operation(openapi, Self::add);
    }
}

/// States `security: []` on the operations that take no token, so that each operation says
/// how it is called rather than leaving a reader (or a client generator) to guess.
struct PublicOperations;

impl Modify for PublicOperations {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for_each_operation(openapi, |operation| {
            operation.security.get_or_insert_with(Vec::new);
        });
    }
}

/// Calls `f` on every operation of the document.
fn for_each_operation(openapi: &mut utoipa::openapi::OpenApi, mut f: impl FnMut(&mut Operation)) {
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
            f(operation);
        }
    }
}

/// The document the local server serves at `/openapi.json`: the service's description,
/// every group's operations as its router registers them, and the answers every operation
/// shares.
#[cfg(test)]
pub(crate) fn document() -> utoipa::openapi::OpenApi {
    document_for(MetricsShape::Local)
}

/// The document of a process whose `GET /metrics` is of `shape` (as [`openapi_json`] serves
/// it).
pub(crate) fn document_for(shape: MetricsShape) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    for group in Group::ALL {
        doc.merge(group.description());
    }
    CommonResponses.modify(&mut doc);
    PublicOperations.modify(&mut doc);
    if shape == MetricsShape::Store
        && let Some(metrics) = doc
            .paths
            .paths
            .get_mut(super::health::METRICS_PATH)
            .and_then(|item| item.get.as_mut())
    {
        metrics.security = Some(vec![SecurityRequirement::new(
            "metricsToken",
            Vec::<String>::new(),
        )]);
    }
    doc
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::Value;

    use super::document;

    /// Two types of one name are one component of the merged document: the last merged
    /// would stand for both, and one group's answers would be described wrongly. Every name
    /// that two groups describe must describe the same schema.
    #[test]
    fn no_two_types_share_a_schema_name() {
        use crate::routes::Group;
        let mut seen: std::collections::BTreeMap<String, (Group, Value)> = Default::default();
        for group in Group::ALL {
            let described = serde_json::to_value(group.description()).unwrap();
            let schemas = described["components"]["schemas"].as_object().cloned();
            for (name, schema) in schemas.unwrap_or_default() {
                if let Some((first, earlier)) = seen.get(&name) {
                    assert_eq!(
                        earlier, &schema,
                        "{name} is a schema of {first:?} and another of {group:?}"
                    );
                } else {
                    seen.insert(name, (group, schema));
                }
            }
        }
    }

    #[test]
    fn the_documented_display_name_pattern_is_the_one_the_code_defines() {
        let doc = serde_json::to_value(document()).unwrap();
        let pattern = &doc["components"]["schemas"]["RegisterRequest"]["properties"]["displayName"]
            ["pattern"];
        assert_eq!(
            pattern.as_str(),
            Some(paddock_core::identity::fields::display_name_pattern().as_str())
        );
    }

    #[test]
    fn registration_and_profile_changes_document_one_display_name_rule() {
        let doc = serde_json::to_value(document()).unwrap();
        let schemas = &doc["components"]["schemas"];
        for schema in ["RegisterRequest", "ProfileUpdate"] {
            let name = &schemas[schema]["properties"]["displayName"];
            assert_eq!(
                name["maxLength"].as_u64(),
                Some(paddock_core::identity::fields::DISPLAY_NAME_MAX as u64),
                "{schema}"
            );
            assert_eq!(name["minLength"].as_u64(), Some(1), "{schema}");
            assert_eq!(
                name["pattern"].as_str(),
                Some(paddock_core::identity::fields::display_name_pattern().as_str()),
                "{schema}"
            );
        }
    }

    #[test]
    fn the_documented_feed_post_patterns_are_the_ones_the_code_defines() {
        let doc = serde_json::to_value(document()).unwrap();
        let post = &doc["components"]["schemas"]["FeedPostRequest"]["properties"];
        let names = paddock_core::identity::fields::display_name_pattern();
        assert_eq!(post["title"]["pattern"].as_str(), Some(names.as_str()));
        let free = paddock_core::identity::fields::free_text_pattern();
        assert_eq!(post["subtitle"]["pattern"].as_str(), Some(free.as_str()));
    }

    #[test]
    fn the_documented_upload_name_patterns_are_the_ones_the_code_defines() {
        let doc = serde_json::to_value(document()).unwrap();
        let upload = &doc["components"]["schemas"]["SessionUploadDto"]["properties"];
        let names = paddock_core::identity::fields::display_name_pattern();
        for field in ["gameId", "trackName", "vehicleName"] {
            assert_eq!(
                upload[field]["pattern"].as_str(),
                Some(names.as_str()),
                "{field}"
            );
        }
        let free = paddock_core::identity::fields::free_text_pattern();
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
                    for status in ["400", "413"] {
                        assert!(responses.contains_key(status), "{method} {path}: {status}");
                    }
                }
                for (status, response) in responses {
                    // The pages answer their own 400 and 404 as HTML pages.
                    let page = response["content"].get("text/html").is_some();
                    if (status.starts_with('4') || status.starts_with('5')) && !page {
                        let schema = &response["content"]["application/json"]["schema"];
                        // The OAuth endpoints refuse as their RFCs say; the layers they run
                        // through (body limit, deadline, a bug) still answer the envelope.
                        let oauth = oauth_operation(op)
                            && schema["$ref"] == "#/components/schemas/OAuthErrorBody";
                        assert!(
                            oauth || schema["$ref"] == "#/components/schemas/ErrorEnvelope",
                            "{method} {path} {status}"
                        );
                    }
                }
            }
        }
    }

    /// Whether `op` is one of the OAuth endpoints, which answer as their RFCs say.
    fn oauth_operation(op: &Value) -> bool {
        op["tags"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "oauth"))
    }

    /// Every operation of the document with its method and path.
    fn operations(doc: &Value) -> Vec<(String, String, Value)> {
        let mut all = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                all.push((method.clone(), path.clone(), op.clone()));
            }
        }
        all
    }

    #[test]
    fn operation_ids_are_unique_camel_case_names() {
        let doc = serde_json::to_value(document()).unwrap();
        let mut seen = HashSet::new();
        for (method, path, op) in operations(&doc) {
            let id = op["operationId"].as_str().unwrap_or_default();
            assert!(
                id.starts_with(|c: char| c.is_ascii_lowercase())
                    && id.chars().all(|c| c.is_ascii_alphanumeric()),
                "{method} {path}: operationId {id:?} is not camelCase"
            );
            assert!(seen.insert(id.to_owned()), "{method} {path}: {id} repeats");
        }
    }

    #[test]
    fn every_operation_states_its_security() {
        let doc = serde_json::to_value(document()).unwrap();
        for (method, path, op) in operations(&doc) {
            let security = op["security"].as_array();
            assert!(security.is_some(), "{method} {path} states no security");
            for requirement in security.unwrap() {
                for (scheme, scopes) in requirement.as_object().unwrap() {
                    assert!(
                        doc["components"]["securitySchemes"].get(scheme).is_some(),
                        "{method} {path}: unknown scheme {scheme}"
                    );
                    // The scope a personal access token needs, where one may be used.
                    for scope in scopes.as_array().unwrap() {
                        assert!(
                            paddock_core::identity::personal_tokens::Scope::ALL
                                .iter()
                                .any(|s| scope == s.name()),
                            "{method} {path}: unknown scope {scope}"
                        );
                    }
                }
            }
        }
        assert_eq!(doc["servers"][0]["url"], "/");
        let scoped = operations(&doc)
            .into_iter()
            .filter(|(_, _, op)| op["security"].to_string().contains(':'))
            .count();
        assert!(
            scoped >= 15,
            "the operations tokens may use name their scope"
        );
    }

    /// `docs/openapi.json`, which the health function serves, is the document the routers
    /// describe for a deployment in AWS.
    #[test]
    fn the_committed_document_is_the_deployed_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
        let mut generated =
            serde_json::to_string_pretty(&super::described(super::MetricsShape::Store)).unwrap();
        generated.push('\n');
        if std::env::var_os("PADDOCK_WRITE_DOCS").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        assert!(
            generated.as_bytes() == super::COMMITTED,
            "docs/openapi.json differs from the routers' description; regenerate it: \
             PADDOCK_WRITE_DOCS=1 cargo test -p paddock-api --lib the_committed_document"
        );
    }

    /// The health function serves the committed document as the local server serves its own:
    /// the same bytes the routers' description serialises to.
    #[tokio::test]
    async fn the_deployed_document_is_served_compact() {
        let served = super::deployed_openapi_json().await;
        let body = axum::body::to_bytes(served.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(body, super::serialised(super::MetricsShape::Store));
    }

    /// `GET /metrics` states the metrics token: required where the health function reads the
    /// metrics store, one of two ways (none, or the token) in the local server's document.
    #[test]
    fn the_metrics_operation_states_the_metrics_token() {
        use super::{MetricsShape, document_for};
        let security = |shape| {
            let doc = serde_json::to_value(document_for(shape)).unwrap();
            assert_eq!(
                doc["components"]["securitySchemes"]["metricsToken"]["scheme"],
                "bearer"
            );
            let op = doc["paths"]["/metrics"]["get"].clone();
            assert!(op["responses"].get("403").is_none(), "{op}");
            assert!(op["responses"].get("401").is_some(), "{op}");
            op["security"].clone()
        };
        assert_eq!(
            security(MetricsShape::Store),
            serde_json::json!([{"metricsToken": []}])
        );
        assert_eq!(
            security(MetricsShape::Local),
            serde_json::json!([{}, {"metricsToken": []}])
        );
    }

    /// Every `$ref` in `value`, as the component name it points to.
    fn references(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.trim_start_matches("#/components/schemas/").to_owned());
                }
                map.values().for_each(|v| references(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| references(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_component_is_used_and_every_reference_resolves() {
        let doc = serde_json::to_value(document()).unwrap();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        // The components reachable from the operations, following references.
        let mut reached = HashSet::new();
        let mut pending = Vec::new();
        references(&doc["paths"], &mut pending);
        while let Some(name) = pending.pop() {
            let schema = schemas.get(&name);
            assert!(schema.is_some(), "$ref to a missing component {name}");
            if reached.insert(name) {
                references(schema.unwrap(), &mut pending);
            }
        }
        for name in schemas.keys() {
            assert!(
                reached.contains(name),
                "component {name} is never referenced"
            );
        }
    }

    #[test]
    fn json_answers_refer_to_named_envelopes() {
        let doc = serde_json::to_value(document()).unwrap();
        for (method, path, op) in operations(&doc) {
            for (status, response) in op["responses"].as_object().unwrap() {
                if let Some(json) = response["content"].get("application/json") {
                    let target = json["schema"]["$ref"].as_str().unwrap_or_default();
                    // The export is a file to keep, not an answer: it is not enveloped;
                    // nor are the OAuth endpoints' answers and the MCP endpoint's resource
                    // metadata, shaped by their RFCs.
                    let export = target.ends_with("/ExportDocument");
                    let rfc = oauth_operation(&op) || path.starts_with("/.well-known/");
                    assert!(
                        target.ends_with("Envelope") || export || rfc,
                        "{method} {path} {status}: {target:?} is not an envelope schema"
                    );
                }
            }
        }
    }
}
