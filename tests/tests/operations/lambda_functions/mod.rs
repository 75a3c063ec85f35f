//! Every function binary of `functions/` (but `local`), started as Lambda starts it: the real
//! executable with `AWS_LAMBDA_RUNTIME_API` pointing at a runtime API on loopback, over
//! DynamoDB Local and moto_server (S3, SQS, Secrets Manager), answering the events API
//! Gateway, SQS, the outbox table's stream and the schedules send.
//!
//! Adding a function is one line in [`HTTP_FUNCTIONS`], [`CONSUMERS`] or [`OTHER_FUNCTIONS`];
//! `every_function_is_in_a_table` fails until it is there.

use base64::Engine;
use paddock_api::routes::Group;
use paddock_aws::SecretsManagerSecrets;
use paddock_core::activity::feed;
use paddock_core::ids::UserId;
use paddock_core::ports::items::{Key, TxOp, item};
use paddock_core::ports::{Clock, ManualClock};
use paddock_core::queues::QueueName;
use paddock_core::tables::Table;
use paddock_core::tracks::jobs;
use paddock_tests::lambda_events::{
    EventBody, HttpAnswer, HttpRequest, dynamodb_inserts, dynamodb_ttl_removals, scheduled_event,
    sqs_batch,
};
use paddock_tests::lambda_runtime_api::{Answer, FunctionProcess, RuntimeApi};
use paddock_tests::{Backend, TestApp, TestPorts, binaries, session_body, unique};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use time::OffsetDateTime;

mod events;
mod http;

/// The HTTP functions: (name, a GET route of the group, a POST route of the group that reads
/// a JSON body). The probes below send each of them the same requests as the local server.
const HTTP_FUNCTIONS: &[(&str, &str, &str)] = &[
    ("auth", "/v1/auth/validate", "/v1/auth/exchange"),
    ("sessions", "/v1/sessions?limit=5", "/v1/sessions"),
    (
        "leaderboards",
        "/v1/leaderboards?gameId=acc&trackName=Monza&trackLayout=",
        "/v1/leaderboards/submit",
    ),
    ("activity", "/v1/feed?limit=5", "/v1/feed"),
    ("ai", "/v1/ai/chat", "/v1/ai/insights"),
    (
        "sharepacks",
        "/v1/sharepacks?limit=5",
        "/v1/sharepacks/uploads",
    ),
    ("profile", "/v1/profile", "/v1/profile"),
    ("webhooks", "/v1/webhooks", "/v1/webhooks"),
    ("leagues", "/v1/leagues", "/v1/leagues/join"),
    ("oauth", "/v1/apps", "/v1/apps"),
    ("mcp", "/.well-known/oauth-protected-resource/mcp", "/mcp"),
    ("health", "/health/ready?detail=1", "/health"),
];

/// The SQS consumers: (name, queue).
const CONSUMERS: &[(&str, QueueName)] = &[
    ("track-maps", QueueName::TrackMaps),
    ("achievements", QueueName::Achievements),
    ("feed", QueueName::Feed),
];

/// The functions on other triggers (the outbox table's stream, the share-pack table's stream), and
/// the accounts consumer, whose events (renames, deletions) have a test of their own.
/// The webhook deliveries consumer has its scenarios in `webhooks.rs`.
const OTHER_FUNCTIONS: &[&str] = &[
    "outbox-relay",
    "retention",
    "accounts",
    "webhook-deliveries",
];

/// Headers that differ between two answers to the same request for good reasons: the
/// request id (made per request), the date, and the length (the socket server counts the
/// bytes; API Gateway does that for a function).
const VOLATILE_HEADERS: &[&str] = &["x-request-id", "date", "content-length"];

/// The CloudWatch namespace the functions are given for their metric lines.
const METRICS_NAMESPACE: &str = "Paddock/lambda-test";

/// How long a function may take to start, or to answer one event.
const PATIENCE: Duration = Duration::from_secs(30);

/// Every function name of the tables.
fn all_functions() -> Vec<&'static str> {
    HTTP_FUNCTIONS
        .iter()
        .map(|(name, _, _)| *name)
        .chain(CONSUMERS.iter().map(|(name, _)| *name))
        .chain(OTHER_FUNCTIONS.iter().copied())
        .collect()
}

/// The function binaries, built once per test run (see [`binaries::build`]).
fn binary(function: &str) -> PathBuf {
    static BUILT: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    let built =
        BUILT.get_or_init(|| binaries::build("dev", &[]).expect("the workspace's binaries build"));
    built
        .get(&format!("paddock-{function}"))
        .unwrap_or_else(|| panic!("no binary paddock-{function} was built"))
        .clone()
}

/// Fresh tables, bucket and queues on the emulators, a Secrets Manager secret with the
/// signing keys, and the settings a deployed function gets for them.
struct Deployment {
    t: TestPorts,
    env: Vec<(String, String)>,
}

async fn deployment() -> Deployment {
    let mut t = paddock_tests::ports(Backend::Aws).await;
    let sdk = paddock_aws::sdk_config().await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let secret_id = unique("paddock-secrets-");
    let key = || {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
            [
                *uuid::Uuid::new_v4().as_bytes(),
                *uuid::Uuid::new_v4().as_bytes(),
            ]
            .concat(),
        )
    };
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(
            json!({
                "jwtSigningKey": key(),
                "uploadUrlKey": key(),
                "metricsToken": paddock_tests::METRICS_TOKEN,
            })
            .to_string(),
        )
        .send()
        .await
        .expect("a secret");
    t.ports.secrets = Arc::new(SecretsManagerSecrets::new(secrets, secret_id.clone()));
    t.settings.secret_id = Some(secret_id.clone());

    let mut env: Vec<(String, String)> = vec![
        ("Store__Backend".into(), "aws".into()),
        ("Store__TablePrefix".into(), t.settings.table_prefix.clone()),
        (
            "Blobs__Bucket".into(),
            t.settings.bucket.clone().expect("a bucket"),
        ),
        ("Secrets__Id".into(), secret_id),
        ("Log__Format".into(), "json".into()),
        ("RUST_LOG".into(), "warn".into()),
        ("AWS_SESSION_TOKEN".into(), "test-session".into()),
        ("Metrics__Namespace".into(), METRICS_NAMESPACE.into()),
    ];
    for (name, urls) in &t.settings.queue_urls {
        let section = name.config_section();
        let (url, dlq) = (urls.url.clone(), urls.dead_letter_url.clone());
        env.push((format!("Queue__{section}__Url"), url.expect("a queue")));
        env.push((
            format!("Queue__{section}__DeadLetterUrl"),
            dlq.expect("a DLQ"),
        ));
    }
    // The emulators' endpoints and credentials, as the test command exports them.
    env.extend(std::env::vars().filter(|(k, _)| {
        k.starts_with("AWS_ENDPOINT_URL")
            || k == "AWS_ACCESS_KEY_ID"
            || k == "AWS_SECRET_ACCESS_KEY"
    }));
    Deployment { t, env }
}

impl Deployment {
    /// The settings with `changes` applied (`None` removes a key).
    fn env_with(&self, changes: &[(&str, Option<&str>)]) -> Vec<(String, String)> {
        let mut env = self.env.clone();
        for (key, value) in changes {
            env.retain(|(k, _)| k != key);
            if let Some(value) = value {
                env.push(((*key).to_owned(), (*value).to_owned()));
            }
        }
        env
    }

    /// The local server over the same tables, bucket, queues and secret.
    async fn local_server(self) -> TestApp {
        paddock_tests::spawn_with(self.t.settings, self.t.ports, self.t.dir).await
    }
}

/// A function process and its runtime API, ready for events.
struct Running {
    name: &'static str,
    api: RuntimeApi,
    process: FunctionProcess,
}

async fn start(name: &'static str, env: &[(String, String)]) -> Running {
    let api = RuntimeApi::start(name).await.expect("a runtime API");
    let process = FunctionProcess::spawn(&binary(name), name, &api, env).expect("a process");
    if let Err(e) = api.first_next(PATIENCE).await {
        panic!(
            "{name} did not start: {e}; init error: {:?}; its output:\n{}",
            api.reported_init_error(),
            process.output()
        );
    }
    Running { name, api, process }
}

impl Running {
    async fn invoke(&self, event: &Value) -> Answer {
        match self.api.invoke(event, PATIENCE).await {
            Ok(answer) => answer,
            Err(e) => panic!("{}: {e}; its output:\n{}", self.name, self.process.output()),
        }
    }

    /// The function's JSON answer to `event`.
    async fn answer(&self, event: &Value) -> Value {
        let answer = self.invoke(event).await;
        answer.json().unwrap_or_else(|e| {
            panic!(
                "{}: {e:#}; its output:\n{}",
                self.name,
                self.process.output()
            )
        })
    }

    /// Sends `request` as an API Gateway event; reads the function's HTTP answer.
    async fn http(&self, request: &HttpRequest) -> HttpAnswer {
        let response = self.answer(&request.api_gateway_event()).await;
        HttpAnswer::from_api_gateway(&response)
            .unwrap_or_else(|e| panic!("{}: {e:#}: {response}", self.name))
    }
}

/// One embedded-metric-format line of a function's output: CloudWatch's reading of it.
#[derive(Debug)]
struct MetricLine {
    namespace: String,
    /// The dimension names and their values.
    dimensions: BTreeMap<String, String>,
    /// The metrics and their values.
    values: BTreeMap<String, Value>,
    /// The Lambda request id the line names.
    request_id: Option<String>,
}

/// The embedded-metric-format lines of `output`, read as CloudWatch reads them: a JSON
/// object whose `_aws.CloudWatchMetrics` names the namespace, one dimension set whose
/// values are members of the object, and the metrics whose values are members too.
fn metric_lines(output: &str) -> Vec<MetricLine> {
    output
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|doc| {
            let directive = doc["_aws"]["CloudWatchMetrics"].get(0)?.clone();
            assert!(
                doc["_aws"]["Timestamp"].is_u64(),
                "a metric line without a timestamp: {doc}"
            );
            let sets = directive["Dimensions"].as_array()?;
            assert_eq!(sets.len(), 1, "one dimension set: {doc}");
            let dimensions = sets[0]
                .as_array()?
                .iter()
                .map(|name| {
                    let name = name.as_str().expect("a dimension name");
                    let value = doc[name]
                        .as_str()
                        .unwrap_or_else(|| panic!("dimension {name} has no string value: {doc}"));
                    (name.to_owned(), value.to_owned())
                })
                .collect();
            let values = directive["Metrics"]
                .as_array()?
                .iter()
                .map(|m| {
                    let name = m["Name"].as_str().expect("a metric name");
                    (name.to_owned(), doc[name].clone())
                })
                .collect();
            Some(MetricLine {
                namespace: directive["Namespace"].as_str()?.to_owned(),
                dimensions,
                values,
                request_id: doc["requestId"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

impl Running {
    /// The sum of counter `metric` over the function's metric lines with exactly
    /// `dimensions`, waiting a little for the lines to be read; every such line is in the
    /// test namespace and names the request id of an invocation.
    async fn counted(&self, metric: &str, dimensions: &[(&str, &str)]) -> u64 {
        let wanted: BTreeMap<String, String> = dimensions
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut total = 0;
        for _ in 0..50 {
            let lines = metric_lines(&self.process.output());
            total = 0;
            for line in lines.iter().filter(|l| l.dimensions == wanted) {
                let Some(value) = line.values.get(metric) else {
                    continue;
                };
                assert_eq!(line.namespace, METRICS_NAMESPACE, "{line:?}");
                assert!(line.request_id.is_some(), "{line:?}");
                total += value.as_u64().expect("a count");
            }
            if total > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        total
    }
}

/// Sends `request` to the local server.
async fn local(app: &TestApp, request: &HttpRequest) -> HttpAnswer {
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).expect("a method");
    let mut builder = app.client.request(
        method,
        format!("{}{}", app.address, request.path_and_query()),
    );
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    if !request.cookies.is_empty() {
        builder = builder.header("cookie", request.cookies.join("; "));
    }
    let body = request.body.bytes();
    if !body.is_empty() {
        builder = builder.body(body);
    }
    let response = builder.send().await.expect("the local server answers");
    HttpAnswer::from_reqwest(response)
        .await
        .expect("a readable answer")
}

/// Asserts that the function answers `request` as the local server answers `local_request`
/// (the same request, unless the local server owns a route the function does not).
async fn assert_same(
    function: &Running,
    app: &TestApp,
    request: &HttpRequest,
    local_request: &HttpRequest,
) -> HttpAnswer {
    let lambda = function.http(request).await;
    let socket = local(app, local_request).await;
    assert_eq!(
        lambda.clone().without_headers(VOLATILE_HEADERS),
        socket.without_headers(VOLATILE_HEADERS),
        "{}: {} {} (bodies: {} / local {})",
        function.name,
        request.method,
        request.path_and_query(),
        String::from_utf8_lossy(&lambda.body),
        String::from_utf8_lossy(&local(app, local_request).await.body),
    );
    lambda
}

/// Bytes that are not UTF-8, as a client uploading binary data sends them.
fn binary_bytes() -> Vec<u8> {
    (0..=255u8).rev().chain(0..=255u8).collect()
}

/// A function's settings, as `(key, value)` variables.
type Settings = Vec<(String, String)>;

/// A start-up failure reaches the runtime API's init-error endpoint with a message naming
/// the key, and the process exits: a bad `Jwt__ExpiryMinutes` in every function, a missing
/// `Blobs__Bucket` where blobs are used, a missing queue URL in a consumer.
#[tokio::test(flavor = "multi_thread")]
async fn init_errors_are_reported_naming_the_key() {
    let deployment = deployment().await;
    let mut cases: Vec<(&str, Settings, &str)> = all_functions()
        .into_iter()
        .map(|name| {
            let env = deployment.env_with(&[("Jwt__ExpiryMinutes", Some("0"))]);
            (name, env, "Jwt__ExpiryMinutes")
        })
        .collect();
    cases.push((
        "sessions",
        deployment.env_with(&[("Blobs__Bucket", None)]),
        "Blobs__Bucket",
    ));
    cases.push((
        "feed",
        deployment.env_with(&[("Queue__Feed__Url", None)]),
        "Queue__Feed__Url",
    ));
    let runs = cases.into_iter().map(|(name, env, key)| async move {
        let api = RuntimeApi::start(name).await.expect("a runtime API");
        let mut process =
            FunctionProcess::spawn(&binary(name), name, &api, &env).expect("a process");
        let error = api.init_error(PATIENCE).await.unwrap_or_else(|e| {
            panic!(
                "{name} without a good {key}: {e}; output:\n{}",
                process.output()
            )
        });
        assert!(
            error.message.contains(key),
            "{name}: the init error names {key}: {error:?}"
        );
        assert_eq!(
            error.error_type_header.as_deref(),
            Some("Runtime.InitError")
        );
        let code = process.exit_code(PATIENCE).await.expect("the process ends");
        assert_eq!(code, Some(1), "{name} exits with a failure");
        assert!(
            api.first_next(Duration::ZERO).await.is_err(),
            "{name} never asked for an event"
        );
    });
    futures::future::join_all(runs).await;
}

/// `GET /metrics` of the health function reads CloudWatch, for a scrape with the metrics
/// token only (without it: 401, and CloudWatch is not asked); when CloudWatch cannot be
/// reached, it answers 503 with `Retry-After` and the error envelope (never a 500), as does
/// the next scrape, answered from the failure kept for a few seconds.
#[tokio::test(flavor = "multi_thread")]
async fn the_health_function_answers_503_when_cloudwatch_cannot_be_read() {
    let deployment = deployment().await;
    // Nothing listens on the discard port of loopback: every call is refused.
    let env = deployment.env_with(&[("AWS_ENDPOINT_URL_CLOUDWATCH", Some("http://127.0.0.1:9"))]);
    let health = start("health", &env).await;
    let refused = health.http(&HttpRequest::new("GET", "/metrics")).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["success"], false);
    let bearer = format!("Bearer {}", paddock_tests::METRICS_TOKEN);
    for _ in 0..2 {
        let answer = health
            .http(&HttpRequest::new("GET", "/metrics").header("authorization", &bearer))
            .await;
        assert_eq!(
            answer.status,
            503,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        let retry_after: u64 = answer
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .expect("seconds");
        assert!((1..=5).contains(&retry_after), "{retry_after}");
        let body = answer.json();
        assert_eq!(body["success"], false);
        assert!(
            body["error"]
                .as_str()
                .unwrap_or_default()
                .contains("metrics"),
            "{body}"
        );
    }
}

/// The tables above name every function of `functions/` but the local server, so a new
/// function cannot go untested.
#[test]
fn every_function_is_in_a_table() {
    let dir = binaries::workspace_root().join("functions");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("functions/")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name != "local")
        .collect();
    let tabled: BTreeSet<String> = all_functions().into_iter().map(str::to_owned).collect();
    assert_eq!(on_disk, tabled);
    let http: BTreeSet<&str> = HTTP_FUNCTIONS.iter().map(|(name, _, _)| *name).collect();
    let groups: BTreeSet<&str> = Group::ALL.into_iter().map(Group::name).collect();
    assert_eq!(http, groups, "the HTTP functions are the endpoint groups");
}
