//! The HTTP core: envelope on every answer, request ids, health, metrics, OpenAPI.
//! Routers are exercised with `oneshot` and the whole server on a real port.

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use paddock_api::http::{ApiJson, ok, with_service_layers};
use paddock_tests::{envelope, spawn_app, spawn_with};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Lap {
    lap_time_ms: u32,
    is_valid: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Upload {
    game_id: String,
    laps: Vec<Lap>,
}

fn probe_router() -> Router {
    let routes = Router::new()
        .route(
            "/echo",
            post(|ApiJson(u): ApiJson<Upload>| async move {
                {
                    let valid_ms: u32 = u
                        .laps
                        .iter()
                        .filter(|l| l.is_valid)
                        .map(|l| l.lap_time_ms)
                        .sum();
                    ok(json!({"gameId": u.game_id, "laps": u.laps.len(), "validMs": valid_ms}))
                }
            }),
        )
        .route(
            "/panic",
            get(|| async {
                if std::hint::black_box(true) {
                    panic!("secret internal detail");
                }
                "unreachable"
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    with_service_layers(routes, 1024, Duration::from_millis(300))
}

async fn call(router: Router, req: Request<Body>) -> (StatusCode, http::HeaderMap, Value) {
    let res = router.oneshot(req).await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let body: Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("not JSON: {bytes:?}"));
    assert_eq!(body["success"], json!(status.is_success()), "{body}");
    assert!(
        body.get("data").is_some() && body.get("error").is_some(),
        "not an envelope: {body}"
    );
    (status, headers, body)
}

fn post_json(path: &str, content_type: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(path)
        .header("content-type", content_type)
        .body(body.into())
        .unwrap()
}

#[tokio::test]
async fn json_bodies_accept_pascal_and_camel_case() {
    let pascal = r#"{"GameId":"acc","Laps":[{"LapTimeMs":90001,"IsValid":true}]}"#;
    let (status, _, body) = call(
        probe_router(),
        post_json("/echo", "application/json; charset=utf-8", pascal),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"gameId": "acc", "laps": 1, "validMs": 90001})
    );
    let camel = r#"{"gameId":"acc","laps":[]}"#;
    assert_eq!(
        call(
            probe_router(),
            post_json("/echo", "application/json", camel)
        )
        .await
        .0,
        200
    );
}

#[tokio::test]
async fn bad_bodies_get_envelopes_that_name_the_problem() {
    let cases: Vec<(&str, &str, String, u16, &str)> = vec![
        (
            "malformed",
            "application/json",
            "{\"gameId\": ".into(),
            400,
            "malformed JSON",
        ),
        (
            "wrong type",
            "application/json",
            r#"{"gameId":"a","laps":[{"lapTimeMs":"fast","isValid":true}]}"#.into(),
            400,
            "laps[0].lapTimeMs",
        ),
        (
            "negative",
            "application/json",
            r#"{"gameId":"a","laps":[{"lapTimeMs":-5,"isValid":true}]}"#.into(),
            400,
            "laps[0].lapTimeMs",
        ),
        (
            "missing field",
            "application/json",
            r#"{"laps":[]}"#.into(),
            400,
            "gameId",
        ),
        (
            "unknown field",
            "application/json",
            r#"{"gameId":"a","laps":[{"lapTimeMs":1,"isValid":true,"bogus":1}]}"#.into(),
            400,
            "bogus",
        ),
        (
            "not an object",
            "application/json",
            "[1,2]".into(),
            400,
            "invalid type",
        ),
        (
            "wrong content type",
            "text/plain",
            r#"{"gameId":"a","laps":[]}"#.into(),
            415,
            "application/json",
        ),
        (
            "too large",
            "application/json",
            format!(r#"{{"gameId":"{}","laps":[]}}"#, "x".repeat(5000)),
            413,
            "too large",
        ),
    ];
    for (name, ct, body, want, needle) in cases {
        let (status, _, env) = call(probe_router(), post_json("/echo", ct, body)).await;
        assert_eq!(status.as_u16(), want, "{name}: {env}");
        let message = env["error"].as_str().unwrap();
        assert!(
            message.contains(needle),
            "{name}: {message:?} should mention {needle:?}"
        );
        assert_eq!(env["data"], Value::Null);
    }
    let no_ct = Request::post("/echo").body(Body::from("{}")).unwrap();
    assert_eq!(call(probe_router(), no_ct).await.0, 415);
}

#[tokio::test]
async fn framework_failures_use_the_envelope() {
    let (status, _, body) = call(
        probe_router(),
        Request::get("/nope").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "no such endpoint");
    let (status, _, _) = call(
        probe_router(),
        Request::delete("/echo").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, 405);
    let (status, _, body) = call(
        probe_router(),
        Request::get("/panic").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, 500);
    assert!(
        !body.to_string().contains("secret"),
        "panic details never reach the client"
    );
    let (status, _, body) = call(
        probe_router(),
        Request::get("/slow").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, 504, "{body}");
}

#[tokio::test]
async fn every_answer_has_a_request_id_of_the_services_own() {
    let (_, headers, _) = call(
        probe_router(),
        Request::get("/nope").body(Body::empty()).unwrap(),
    )
    .await;
    let id = headers["x-request-id"].to_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 4);
    // A client's id, plain or not, is never taken for the service's.
    for sent in ["client-abc-123", "bad id\twith junk", id] {
        let req = Request::get("/nope")
            .header("x-request-id", sent)
            .body(Body::empty())
            .unwrap();
        let answered = call(probe_router(), req).await.1["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_ne!(answered, sent);
        assert_eq!(
            uuid::Uuid::parse_str(&answered).unwrap().get_version_num(),
            4
        );
    }
}

#[tokio::test]
async fn health_endpoints_answer_on_a_real_port() {
    let app = spawn_app().await;
    let (status, body) = envelope(app.get("/health").await).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("Healthy"))
    );
    let (status, body) = envelope(app.get("/health/ready").await).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["database"], "Healthy");
    assert_eq!(envelope(app.get("/health/live").await).await.0, 200);
    let (status, body) = envelope(app.get("/v1/nothing-here").await).await;
    assert_eq!(status, 404, "{body}");
    let res = app
        .client
        .post(format!("{}/health", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 405);
}

#[tokio::test]
async fn readiness_reports_an_unreachable_database_with_503() {
    let dir = tempfile::tempdir().unwrap();
    let settings = paddock_tests::test_settings(&dir);
    let mut ports = paddock_runtime::wiring::embedded_ports(
        &settings,
        Arc::new(paddock_core::ports::SystemClock),
    )
    .unwrap();
    // A DynamoDB adapter pointed at a closed loopback port stands for a database that is down.
    let sdk = paddock_aws::sdk_config().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url("http://127.0.0.1:9")
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "k", "s", None, None, "test",
        ))
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    ports.items = Arc::new(paddock_aws::DynamoItemStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        "down-",
        Arc::new(paddock_core::ports::SystemClock),
    ));
    let app = spawn_with(settings, ports, dir).await;
    let (status, body) = envelope(app.get("/health/ready").await).await;
    assert_eq!(status, 503);
    assert!(
        body["error"].as_str().unwrap().contains("Unhealthy"),
        "{body}"
    );
    assert_eq!(
        envelope(app.get("/health").await).await.0,
        200,
        "liveness does not depend on the database"
    );
}

#[tokio::test]
async fn invented_methods_and_paths_do_not_grow_the_metric_labels() {
    let app = spawn_app().await;
    for i in 0..20 {
        let method = reqwest::Method::from_bytes(format!("AAAA{i}").as_bytes()).unwrap();
        let res = app
            .client
            .request(method, format!("{}/v1/no-such-{i}", app.address))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_client_error());
    }
    let text = app.get("/metrics").await.text().await.unwrap();
    assert!(
        !text.contains("AAAA"),
        "no series per invented method: {text}"
    );
    assert!(!text.contains("no-such"), "no series per path: {text}");
    assert!(
        text.contains(r#"method="other",route="unmatched""#),
        "{text}"
    );
    let series = text
        .lines()
        .filter(|l| l.starts_with("http_requests_total{") && l.contains("method=\"other\""))
        .count();
    assert_eq!(series, 1, "one series for all of them: {text}");
}

#[tokio::test]
async fn metrics_are_valid_prometheus_text() {
    let app = spawn_app().await;
    for _ in 0..3 {
        app.get("/health").await;
    }
    app.get("/v1/unknown").await;
    let res = app.get("/metrics").await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = res.text().await.unwrap();
    assert!(text.contains("# HELP http_requests_total"));
    assert!(text.contains("# TYPE http_request_duration_seconds histogram"));
    assert!(
        text.contains(r#"http_requests_total{method="GET",route="/health",status="200"}"#),
        "{text}"
    );
    assert!(text.contains(r#"route="unmatched",status="404""#), "{text}");

    let promtool = which("promtool")
        .expect("promtool is required (Debian package prometheus); ./tests/run.sh installs it");
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}

#[tokio::test]
async fn openapi_document_describes_the_api() {
    let app = spawn_app().await;
    let res = app.get("/openapi.json").await;
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    for path in [
        "/health",
        "/health/ready",
        "/health/live",
        "/metrics",
        "/v1/auth/register",
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/tracks",
        "/v1/tracks/{id}/map",
        "/v1/leaderboards",
        "/v1/leaderboards/submit",
        "/v1/tokens",
        "/v1/tokens/{id}",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the document"
        );
    }
    assert!(doc["paths"]["/v1/sessions"].get("post").is_some());
    assert!(
        doc["components"]["schemas"]
            .get("LeaderboardPage")
            .is_some()
    );
    let lap = &doc["components"]["schemas"]["Lap"];
    assert!(
        lap["properties"].get("sectorTimesMs").is_some(),
        "laps describe their optional sector times: {lap}"
    );
    assert!(
        !lap["required"]
            .as_array()
            .unwrap()
            .contains(&Value::from("sectorTimesMs")),
        "{lap}"
    );
}
