//! Test harness: both adapter sets on demand, and the local server on a real port.
//!
//! The AWS adapters run against DynamoDB Local and moto_server started by `tests/run.sh`,
//! which exports `AWS_ENDPOINT_URL_*` and `PADDOCK_TEST_EMULATORS=1`.

pub mod binaries;
pub mod browser;
pub mod captured_log;
pub mod counted_routes;
pub mod counting_items;
pub mod document_server;
pub mod fake_llm;
pub mod fault_proxy;
pub mod lambda_events;
pub mod lambda_runtime_api;
pub mod local_api;
pub mod loopback_http;
pub mod oauth_flow;
pub mod own_process;
pub mod process_memory;
pub mod webhook_receiver;

use paddock_core::config::{QueueUrls, Settings};
use paddock_core::ports::{Clock, ManualClock, Ports, SystemClock};
use paddock_core::queues::QueueName;
use paddock_runtime::app::Application;
use paddock_runtime::wiring;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;
use time::OffsetDateTime;

/// Which adapter set a conformance test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Aws,
}

/// Ports under test, with whatever must live as long as they do.
pub struct TestPorts {
    pub ports: Ports,
    pub clock: Arc<ManualClock>,
    pub settings: Settings,
    pub dir: TempDir,
}

/// The metrics token of the function sets the tests start ([`spawn_functions`]): the app
/// secret's `metricsToken`, which the health function's `GET /metrics` requires.
pub const METRICS_TOKEN: &str = "metrics-token-of-the-test-functions-0123456789";

/// Panics with instructions when the emulators are not running.
pub fn require_emulators() {
    assert!(
        std::env::var_os("PADDOCK_TEST_EMULATORS").is_some(),
        "the AWS adapter tests need DynamoDB Local and moto_server: run ./tests/run.sh"
    );
}

/// A unique short name for per-test resources.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Settings for a test: data in `dir`, port 0 on loopback.
pub fn test_settings(dir: &TempDir) -> Settings {
    let mut s = Settings::embedded(dir.path(), SocketAddr::from(([127, 0, 0, 1], 0)));
    s.visibility = Duration::from_secs(2);
    // Webhook receivers of tests listen on loopback (the template never sets this).
    s.webhooks_allow_loopback_http = true;
    s
}

/// Installs rustls's ring provider for this test process: reqwest here is built without one
/// of its own (as in the service), and the service installs it only where it makes a client.
pub fn tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Fresh ports of `backend` on a manual clock (fresh tables, bucket and queues for AWS).
pub async fn ports(backend: Backend) -> TestPorts {
    match backend {
        Backend::Embedded => ports_with(backend, None).await,
        Backend::Aws => ports_with(backend, Some(paddock_aws::sdk_config().await)).await,
    }
}

/// Fresh AWS ports whose clients are configured from `sdk` (their endpoints, say).
pub async fn aws_ports_through(sdk: aws_config::SdkConfig) -> TestPorts {
    ports_with(Backend::Aws, Some(sdk)).await
}

async fn ports_with(backend: Backend, service_sdk: Option<aws_config::SdkConfig>) -> TestPorts {
    tls_provider();
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let mut settings = test_settings(&dir);
    let ports = match backend {
        Backend::Embedded => {
            wiring::embedded_ports(&settings, clock.clone()).expect("embedded ports")
        }
        Backend::Aws => {
            require_emulators();
            settings.backend = paddock_core::config::Backend::Aws;
            settings.create_resources = true;
            settings.table_prefix = unique("t");
            settings.bucket = Some(unique("b"));
            let sdk = paddock_aws::sdk_config().await;
            let sqs = aws_sdk_sqs_client(&sdk);
            // Fresh queues per test, so tests running at once never see each other's events.
            for queue in QueueName::ALL {
                let (url, dlq) =
                    paddock_aws::provision::create_queues(&sqs, &unique(&format!("{queue}-")))
                        .await
                        .expect("queues");
                settings.queue_urls.insert(
                    queue,
                    QueueUrls {
                        url: Some(url),
                        dead_letter_url: Some(dlq),
                    },
                );
            }
            let service_sdk = service_sdk.unwrap_or(sdk);
            wiring::aws_ports_with(&mut settings, clock.clone(), service_sdk)
                .await
                .expect("aws ports")
        }
    };
    TestPorts {
        ports,
        clock,
        settings,
        dir,
    }
}

fn aws_sdk_sqs_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(sdk)
}

/// The local server on a free port, on the embedded backend and the system clock.
pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub ports: Ports,
    /// The settings the server runs with (its table prefix, data directory, ...).
    pub settings: Settings,
    /// The data directory (embedded store, local secrets).
    pub dir: TempDir,
    /// Behind the local API: the calls the functions' policies allowed and refused.
    pub iam: Option<local_api::iam::Seen>,
}

/// Starts the whole local server (all groups, relay and worker) on a free port.
pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = test_settings(&dir);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ports = wiring::embedded_ports(&settings, clock).expect("ports");
    spawn_with(settings, ports, dir).await
}

/// The local server over fresh ports of `backend` on a manual clock.
pub async fn spawn_on(backend: Backend) -> (TestApp, Arc<ManualClock>) {
    let t = ports(backend).await;
    let clock = t.clock.clone();
    (spawn_with(t.settings, t.ports, t.dir).await, clock)
}

/// The local server over fresh ports of `backend` with settings changed by `configure`.
pub async fn spawn_configured(
    backend: Backend,
    configure: impl FnOnce(&mut Settings),
) -> (TestApp, Arc<ManualClock>) {
    let mut t = ports(backend).await;
    configure(&mut t.settings);
    let clock = t.clock.clone();
    (spawn_with(t.settings, t.ports, t.dir).await, clock)
}

/// The local server on fresh AWS ports whose SDK clients are configured from `sdk`.
pub async fn spawn_aws_through(sdk: aws_config::SdkConfig) -> (TestApp, Arc<ManualClock>) {
    let t = aws_ports_through(sdk).await;
    let clock = t.clock.clone();
    (spawn_with(t.settings, t.ports, t.dir).await, clock)
}

/// The function set behind the local API (`local_api`) over fresh tables, bucket, queues
/// and a Secrets Manager secret on the emulators: each route of `template.yaml` answered by
/// its function's binary as Lambda runs it, with the outbox stream, the queues and the
/// schedules delivering events. `ports` and `settings` are those of the same resources, so a
/// test reads what the functions wrote.
pub async fn spawn_functions() -> TestApp {
    spawn_functions_with(&[]).await
}

/// As [`spawn_functions`], with `settings` (`Section__Key`, value) given to every function.
pub async fn spawn_functions_with(settings: &[(&str, &str)]) -> TestApp {
    let iam = local_api::Iam::from_env().expect("the functions' policies");
    spawn_functions_under(iam, settings).await
}

/// As [`spawn_functions_with`], each function under its policy in `iam`.
pub async fn spawn_functions_under(iam: local_api::Iam, settings: &[(&str, &str)]) -> TestApp {
    start_functions(iam, settings, None).await
}

/// As [`spawn_functions`], with every schedule firing at `every` instead of its rate.
pub async fn spawn_functions_scheduled(every: Duration) -> TestApp {
    let iam = local_api::Iam::from_env().expect("the functions' policies");
    start_functions(iam, &[], Some(every)).await
}

async fn start_functions(
    iam: local_api::Iam,
    settings: &[(&str, &str)],
    schedule_every: Option<Duration>,
) -> TestApp {
    let seen = iam.seen.clone();
    // What the local API logs (a function that failed, with its output) is printed with a
    // failing test's output; the first test of a binary to get here installs it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("paddock_tests=warn"))
        .with_test_writer()
        .try_init();
    let mut t = ports(Backend::Aws).await;
    let sdk = paddock_aws::sdk_config().await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let secret_id = unique("paddock-secrets-");
    let key = || {
        use base64::Engine;
        let bytes = [
            *uuid::Uuid::new_v4().as_bytes(),
            *uuid::Uuid::new_v4().as_bytes(),
        ];
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes.concat())
    };
    paddock_aws::provision::put_secret(
        &secrets,
        &secret_id,
        &serde_json::json!({
            // As the stack's secret: no `uploadUrlKey` (S3 signs the upload URLs).
            "jwtSigningKey": key(),
            "metricsToken": METRICS_TOKEN,
        }),
    )
    .await
    .expect("a secret");
    t.ports.secrets = Arc::new(paddock_aws::SecretsManagerSecrets::new(
        secrets,
        secret_id.clone(),
    ));
    t.settings.secret_id = Some(secret_id.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = format!("http://{}", listener.local_addr().expect("an address"));
    let mut env: Vec<(String, String)> = vec![
        ("Store__Backend".into(), "aws".into()),
        ("Store__TablePrefix".into(), t.settings.table_prefix.clone()),
        (
            "Blobs__Bucket".into(),
            t.settings.bucket.clone().expect("a bucket"),
        ),
        ("Secrets__Id".into(), secret_id),
        ("Auth__PublicUrl".into(), address.clone()),
        ("Log__Format".into(), "json".into()),
        ("RUST_LOG".into(), "warn".into()),
        // Webhook receivers of tests listen on loopback (the template never sets this).
        ("Webhooks__AllowLoopbackHttp".into(), "true".into()),
        // The metric lines reach moto's CloudWatch, shared by the tests running at once: a
        // namespace of its own keeps each function set's counts apart.
        ("Metrics__Namespace".into(), unique("Paddock/test-")),
        // `/metrics` reads them again after a second, so a scenario sees its counts soon.
        ("Metrics__CacheSeconds".into(), "1".into()),
    ];
    let mut queues = std::collections::HashMap::new();
    for (name, urls) in &t.settings.queue_urls {
        let section = name.config_section();
        let (url, dlq) = (
            urls.url.clone().expect("a queue"),
            urls.dead_letter_url.clone().expect("a DLQ"),
        );
        env.push((format!("Queue__{section}__Url"), url.clone()));
        env.push((format!("Queue__{section}__DeadLetterUrl"), dlq.clone()));
        queues.insert(section.to_owned(), (url, dlq));
    }
    // The emulators' endpoints and credentials, as the test command exports them.
    env.extend(std::env::vars().filter(|(k, _)| {
        k.starts_with("AWS_ENDPOINT_URL")
            || k == "AWS_ACCESS_KEY_ID"
            || k == "AWS_SECRET_ACCESS_KEY"
    }));
    env.extend(
        settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let config = local_api::Config {
        template: binaries::workspace_root().join("template.yaml"),
        binaries: function_binaries().clone(),
        env,
        table_prefix: t.settings.table_prefix.clone(),
        queues,
        poll: Duration::from_millis(100),
        schedule_every,
        visibility: Some(t.settings.visibility),
        echo_logs: false,
        iam: Some(iam),
    };
    // The API serves until the test's runtime ends, which ends the function processes too.
    let _api = local_api::LocalApi::start(config, listener, &sdk)
        .await
        .expect("the local API");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    TestApp {
        address,
        client,
        ports: t.ports,
        settings: t.settings,
        dir: t.dir,
        iam: Some(seen),
    }
}

/// The workspace's binaries, built once per test process.
pub fn function_binaries() -> &'static std::collections::HashMap<String, std::path::PathBuf> {
    static BUILT: std::sync::OnceLock<std::collections::HashMap<String, std::path::PathBuf>> =
        std::sync::OnceLock::new();
    BUILT.get_or_init(|| binaries::build("dev", &[]).expect("the workspace's binaries build"))
}

/// Starts the local server over given ports.
pub async fn spawn_with(settings: Settings, ports: Ports, dir: TempDir) -> TestApp {
    tls_provider();
    let kept = settings.clone();
    let app = Application::build_with_ports(settings, ports.clone())
        .await
        .expect("build app");
    let address = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until(std::future::pending()));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    TestApp {
        address,
        client,
        ports,
        settings: kept,
        dir,
        iam: None,
    }
}

impl TestApp {
    /// `method` on `path` with `token` as the bearer and `body` as JSON, if any: the answer's
    /// status, envelope and headers.
    pub async fn send_auth(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value, reqwest::header::HeaderMap) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.address))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let headers = response.headers().clone();
        let (status, body) = envelope(response).await;
        (status, body, headers)
    }

    /// Sends `method` to `path` with a bearer token and an optional JSON body; answers the
    /// status and the envelope ([`Self::send_auth`] without the headers).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let (status, body, _) = self.send_auth(method, path, token, body).await;
        (status, body)
    }

    /// DELETE `path` with a bearer token; answers the status and the envelope, if any (a
    /// 204 has none: `Value::Null`).
    pub async fn delete_auth(&self, path: &str, token: &str) -> (u16, serde_json::Value) {
        let url = format!("{}{path}", self.address);
        let response = self
            .client
            .delete(url)
            .bearer_auth(token)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let bytes = response.bytes().await.expect("a body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        )
    }

    /// GET `path`.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .expect("request")
    }

    /// `GET /metrics` as a scraper sends it: with the metrics token (which the health
    /// function requires, and the local server does not look at).
    pub async fn scrape_metrics(&self) -> reqwest::Response {
        self.get_auth("/metrics", METRICS_TOKEN).await
    }

    /// POST a JSON body.
    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.address))
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// GET with a bearer token.
    pub async fn get_auth(&self, path: &str, token: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.address))
            .bearer_auth(token)
            .send()
            .await
            .expect("request")
    }

    /// Registers a driver; returns the token response's data.
    pub async fn register(&self, email: &str, password: &str) -> serde_json::Value {
        let res = self
            .post_json("/v1/auth/register", &serde_json::json!({"email": email, "password": password, "displayName": "Test Driver"}))
            .await;
        let (status, body) = envelope(res).await;
        assert_eq!(status, 201, "{body}");
        body["data"].clone()
    }

    /// `POST /v1/auth/exchange` with a code and a verifier; answers status and envelope.
    pub async fn exchange(&self, code: &str, verifier: &str) -> (u16, serde_json::Value) {
        let body = serde_json::json!({"code": code, "codeVerifier": verifier});
        envelope(self.post_json("/v1/auth/exchange", &body).await).await
    }

    /// POST a JSON body with a bearer token.
    pub async fn post_json_auth(
        &self,
        path: &str,
        body: &serde_json::Value,
        token: &str,
    ) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.address))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// Registers a driver named `name`; answers (access token, user id).
    ///
    /// A 503 (every password-hashing thread busy past the wait, as on a loaded machine) is
    /// sent again after its `Retry-After`, as the desktop app does, up to five times.
    pub async fn driver(&self, name: &str) -> (String, String) {
        let request = serde_json::json!({
            "email": format!("{}@example.com", unique(name)),
            "password": "correct horse battery",
            "displayName": name,
        });
        let mut tries = 0;
        let (status, body) = loop {
            tries += 1;
            let res = self.post_json("/v1/auth/register", &request).await;
            let wait = res
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(1);
            let (status, body) = envelope(res).await;
            if status != 503 || tries == 5 {
                break (status, body);
            }
            tokio::time::sleep(Duration::from_secs(wait)).await;
        };
        assert_eq!(status, 201, "{body}");
        let data = &body["data"];
        (
            data["accessToken"].as_str().expect("token").to_owned(),
            data["user"]["id"].as_str().expect("id").to_owned(),
        )
    }

    /// Uploads a one-lap session of `ms` in `car` on the test track as the driver of `token`
    /// and submits the lap; answers the track id.
    pub async fn submitted_lap(&self, token: &str, ms: i64, car: &str) -> String {
        let mut body = session_body(&unique("s"), "2026-11-01T10:00:00Z", &[(ms, true, 0.95)], 0);
        body["VehicleName"] = serde_json::json!(car);
        let (status, res) = envelope(self.post_json_auth("/v1/sessions", &body, token).await).await;
        assert_eq!(status, 201, "{res}");
        let submit = serde_json::json!({
            "sessionId": res["data"]["sessionId"],
            "lapTimeMs": ms,
            "qualityScore": 0.95,
        });
        let (status, res) = envelope(
            self.post_json_auth("/v1/leaderboards/submit", &submit, token)
                .await,
        )
        .await;
        assert_eq!(status, 200, "{res}");
        res["data"]["trackId"]
            .as_str()
            .expect("a track id")
            .to_owned()
    }

    /// A driver named `name` with a best lap of `ms` in `car` on the test track: (user id,
    /// track id).
    pub async fn driver_with_lap(&self, name: &str, ms: i64, car: &str) -> (String, String) {
        let (token, user) = self.driver(name).await;
        (user, self.submitted_lap(&token, ms, car).await)
    }

    /// Waits until the map of `track_id` has merged `sessions` sessions (the track-map
    /// worker runs in the background); answers the map.
    pub async fn wait_for_map(
        &self,
        token: &str,
        track_id: &str,
        sessions: u64,
    ) -> serde_json::Value {
        for _ in 0..150 {
            let (status, body) = envelope(
                self.get_auth(&format!("/v1/tracks/{track_id}/map"), token)
                    .await,
            )
            .await;
            if status == 200 && body["data"]["sessions"] == sessions {
                return body["data"].clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the track map of {track_id} did not reach {sessions} sessions");
    }

    /// POST a raw body with a content type.
    pub async fn post_raw(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.address))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request")
    }
}

/// Reads an envelope, checking its shape.
pub async fn envelope(response: reqwest::Response) -> (u16, serde_json::Value) {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.expect("a JSON envelope");
    let obj = body.as_object().expect("envelope is an object");
    assert!(
        obj.contains_key("success") && obj.contains_key("data") && obj.contains_key("error"),
        "not an envelope: {body}"
    );
    assert_eq!(
        body["success"].as_bool(),
        Some(status < 400),
        "success flag disagrees with status {status}: {body}"
    );
    (status, body)
}

/// One lap of a test upload: (lap time ms, valid, combined quality).
pub type TestLap = (i64, bool, f64);

/// A `SessionUploadDto` in the desktop client's PascalCase, with `points` track points on a
/// circle of about 1 km.
pub fn session_body(
    client_session_id: &str,
    recorded_at: &str,
    laps: &[TestLap],
    points: usize,
) -> serde_json::Value {
    let laps: Vec<serde_json::Value> = laps
        .iter()
        .enumerate()
        .map(|(i, &(ms, valid, quality))| {
            serde_json::json!({
                "LapIndex": i, "LapTimeMs": ms, "IsValid": valid, "CountsForSessionTiming": valid,
                "QualityCombined": quality, "QualityCoherence": 0.9, "QualityStability": 0.95,
                "QualityCompleteness": 1.0, "NumPenalties": 0, "NumPitstops": 0, "InPitsAtLapEnd": false,
            })
        })
        .collect();
    let best = laps
        .iter()
        .filter_map(|l| l["LapTimeMs"].as_i64())
        .min()
        .unwrap_or(1);
    let mut body = serde_json::json!({
        "GameId": "acc", "TrackName": "Spa-Francorchamps", "TrackLayout": "GP",
        "VehicleName": "Porsche 992 GT3 R", "RecordedAt": recorded_at, "Laps": laps,
        "BestLapMs": best, "WeatherSummary": "dry, 22C", "SessionPhase": "practice",
        "ClientSessionId": client_session_id,
    });
    if points > 0 {
        let radius = 1000.0 / std::f64::consts::TAU;
        let track: Vec<serde_json::Value> = (0..points)
            .map(|i| {
                let d = 1000.0 * i as f64 / points as f64;
                let a = d / radius;
                serde_json::json!({"X": radius * a.cos(), "Y": radius * a.sin(), "Distance": d})
            })
            .collect();
        body["TrackPoints"] = serde_json::Value::Array(track);
    }
    body
}

/// An upload body (in either spelling) read as `POST /v1/sessions` reads it, and checked.
pub fn checked_upload(
    body: &serde_json::Value,
    now: time::OffsetDateTime,
) -> paddock_core::sessions::upload::SessionUpload {
    use paddock_core::sessions::upload::{self, Sent, SessionUploadDto};
    let bytes = serde_json::to_vec(body).expect("JSON");
    let sent: Sent<SessionUploadDto> =
        paddock_api::http::extract::from_json_slice(&bytes).expect("readable JSON");
    upload::check(sent, now).expect("a valid upload")
}

/// Runs each scenario on both adapter sets, as modules `embedded` and `dynamodb_local`:
/// `plain` scenarios take a fresh server, `clocked` ones the server and its manual clock,
/// `ports` ones the backend (they build their own ports). The `plain` scenarios run a third
/// time, as module `functions`, against the function set behind the local API
/// ([`spawn_functions`]): every request through its route's Lambda function.
#[macro_export]
macro_rules! on_both_backends {
    (
        plain: [$($plain:ident),* $(,)?]
        $(, clocked: [$($clocked:ident),* $(,)?])?
        $(, ports: [$($ported:ident),* $(,)?])?
        $(,)?
    ) => {
        $crate::on_both_backends!(@backend embedded, Embedded,
            [$($plain),*], [$($($clocked),*)?], [$($($ported),*)?]);
        $crate::on_both_backends!(@backend dynamodb_local, Aws,
            [$($plain),*], [$($($clocked),*)?], [$($($ported),*)?]);
        mod functions {
            $( $crate::functions_scenario!($plain); )*
        }
    };
    (@backend $module:ident, $backend:ident,
        [$($plain:ident),*], [$($clocked:ident),*], [$($ported:ident),*]) => {
        mod $module {
            $( #[tokio::test(flavor = "multi_thread")]
               async fn $plain() {
                   super::$plain($crate::spawn_on($crate::Backend::$backend).await.0).await
               } )*
            $( #[tokio::test(flavor = "multi_thread")]
               async fn $clocked() {
                   let (app, clock) = $crate::spawn_on($crate::Backend::$backend).await;
                   super::$clocked(app, clock).await
               } )*
            $( #[tokio::test(flavor = "multi_thread")]
               async fn $ported() { super::$ported($crate::Backend::$backend).await } )*
        }
    };
}

/// Every stored item of every table, expired or not, read around the item-store port: the
/// embedded store's SQLite file, or a scan of each DynamoDB table.
pub async fn every_item(
    settings: &Settings,
) -> Vec<(
    paddock_core::tables::Table,
    paddock_core::ports::items::Item,
)> {
    use paddock_core::tables::Table;
    let mut all = Vec::new();
    match settings.backend {
        paddock_core::config::Backend::Embedded => {
            let path = settings.data_dir.join("paddock.db");
            let conn = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("the embedded store's file");
            let mut stmt = conn.prepare("SELECT tbl, body FROM items").unwrap();
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .unwrap();
            for row in rows {
                let (table, body) = row.unwrap();
                let table = Table::from_name(&table).expect("a known table");
                all.push((table, serde_json::from_str(&body).expect("an item")));
            }
        }
        paddock_core::config::Backend::Aws => {
            let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
            for table in Table::ALL {
                let mut start = None;
                loop {
                    let out = client
                        .scan()
                        .table_name(table.physical(&settings.table_prefix))
                        .consistent_read(true)
                        .set_exclusive_start_key(start)
                        .send()
                        .await
                        .expect("scan");
                    for attrs in out.items.unwrap_or_default() {
                        all.push((table, serde_dynamo::from_item(attrs).expect("an item")));
                    }
                    match out.last_evaluated_key {
                        Some(next) if !next.is_empty() => start = Some(next),
                        _ => break,
                    }
                }
            }
        }
    }
    all
}

/// Turns the store back into the layout of boards before the counts (the backfill's work):
/// no counts, no car boards, no progress item, no `counted` flag on entries and rank rows.
/// Answers how many items it changed. The progress items go last, so a backfill running
/// meanwhile (the maintenance schedule) finds nothing to do until the whole board is old.
pub async fn downgrade_boards(app: &TestApp) -> usize {
    use paddock_core::ports::items::{Key, PK, SK};
    use paddock_core::tables::Table;
    let mut changed = 0;
    let mut items = every_item(&app.settings).await;
    items.sort_by_key(|(_, item)| item[PK] == "LAYOUT");
    for (table, mut item) in items {
        if table != Table::Leaderboards {
            continue;
        }
        let (pk, sk) = (
            item[PK].as_str().unwrap().to_owned(),
            item[SK].as_str().unwrap().to_owned(),
        );
        let key = Key::new(pk.as_str(), sk.as_str());
        let newer = pk == "LAYOUT"
            || pk.contains("#CAR#")
            || sk.contains("#CAR#")
            || sk.starts_with("COUNT#")
            || sk.starts_with("VEH#")
            || sk.starts_with("CARS#")
            || sk.starts_with("TRACKBOARD#");
        if newer {
            app.ports.items.delete(table, &key, None).await.unwrap();
            changed += 1;
        } else if item.remove("counted").is_some() {
            app.ports.items.put(table, item, None).await.unwrap();
            changed += 1;
        }
    }
    assert!(changed > 0);
    changed
}

/// Every blob's key and bytes.
pub async fn every_blob(ports: &Ports) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for key in ports.blobs.list("").await.expect("blob listing") {
        if let Some(bytes) = ports.blobs.get(&key).await.expect("blob") {
            all.push((key, bytes.to_vec()));
        }
    }
    all
}

/// One `plain` scenario against the function set ([`spawn_functions`]).
#[doc(hidden)]
#[macro_export]
macro_rules! functions_scenario {
    ($plain:ident) => {
        #[tokio::test(flavor = "multi_thread")]
        async fn $plain() {
            super::$plain($crate::spawn_functions().await).await
        }
    };
}
