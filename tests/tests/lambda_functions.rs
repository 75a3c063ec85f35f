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

/// Each HTTP function answers API Gateway's events for its routes as the local server
/// answers the same requests over the same tables, bucket, queues and secret: a GET with a
/// query string, cookies and a caller's request id, a JSON body as text and base64-encoded,
/// a binary body, no token, and a route of another group.
#[tokio::test(flavor = "multi_thread")]
async fn http_functions_answer_as_the_local_server() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let app = deployment.local_server().await;
    let (token, _) = app.driver("LambdaProbe").await;
    let functions =
        futures::future::join_all(HTTP_FUNCTIONS.iter().map(|(name, _, _)| start(name, &env)))
            .await;
    let probes = functions.iter().enumerate().map(|(n, function)| {
        let (_, get_route, post_route) = HTTP_FUNCTIONS[n];
        let foreign_route = HTTP_FUNCTIONS[(n + 1) % HTTP_FUNCTIONS.len()].1;
        let (app, token) = (&app, &token);
        async move {
            let separator = if get_route.contains('?') { '&' } else { '?' };
            let get = HttpRequest::new("GET", &format!("{get_route}{separator}q=a%20b&q=c"))
                .bearer(token)
                .header("accept", "application/json")
                .header("x-request-id", "lambda-probe-1")
                .cookie("theme=dark")
                .cookie("paddock_pref=1");
            assert_same(function, app, &get, &get).await;
            let anonymous = HttpRequest::new("GET", get_route);
            assert_same(function, app, &anonymous, &anonymous).await;

            let probe = json!({"probe": true, "name": "Spa-Francorchamps"});
            let text = HttpRequest::new("POST", post_route)
                .bearer(token)
                .json(&probe);
            let as_text = assert_same(function, app, &text, &text).await;
            let encoded = HttpRequest::new("POST", post_route).bearer(token).body(
                "application/json",
                EventBody::Base64(probe.to_string().into_bytes()),
            );
            let as_base64 = assert_same(function, app, &encoded, &encoded).await;
            assert_eq!(
                (as_text.status, as_text.body),
                (as_base64.status, as_base64.body),
                "{}: a base64-encoded body reads as the same bytes",
                function.name
            );
            let binary = HttpRequest::new("POST", post_route).bearer(token).body(
                "application/octet-stream",
                EventBody::Base64(binary_bytes()),
            );
            assert_same(function, app, &binary, &binary).await;

            // Another group's route is not this function's: the envelope's 404, as the local
            // server answers a route no group has.
            let foreign = HttpRequest::new("GET", foreign_route).bearer(token);
            let unknown = HttpRequest::new("GET", "/v1/no-such-route").bearer(token);
            let answer = assert_same(function, app, &foreign, &unknown).await;
            assert_eq!(answer.status, 404, "{}", function.name);
        }
    });
    futures::future::join_all(probes).await;
}

/// The leaderboards function serves the public board pages as the local server does: the
/// tracks page, a board with a car and its error pages, a driver's page, and a 304.
#[tokio::test(flavor = "multi_thread")]
async fn the_leaderboards_function_serves_the_board_pages() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let app = deployment.local_server().await;
    let function = start("leaderboards", &env).await;
    let (_, user) = app.driver("PageProbe").await;
    let unknown = uuid::Uuid::new_v4();
    for path in [
        "/boards".to_owned(),
        "/boards?q=spa".to_owned(),
        format!("/boards/{unknown}?car=BMW%20M4"),
        "/boards/not-a-track".to_owned(),
        format!("/drivers/{user}"),
        format!("/drivers/{unknown}"),
        "/boards?cursor=nonsense".to_owned(),
    ] {
        let request = HttpRequest::new("GET", &path);
        let answer = assert_same(&function, &app, &request, &request).await;
        let etag = answer
            .headers
            .iter()
            .find(|(name, _)| name == "etag")
            .map(|(_, value)| value.clone());
        if let Some(etag) = etag.filter(|_| answer.status == 200) {
            let again = HttpRequest::new("GET", &path).header("if-none-match", &etag);
            assert_eq!(
                assert_same(&function, &app, &again, &again).await.status,
                304,
                "{path}"
            );
        }
    }
}

/// A small ZIP, as the desktop app builds share packs.
fn share_pack() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("setup.json", options).expect("an entry");
    std::io::Write::write_all(&mut zip, br#"{"tyrePressures":[26.1,26.0,25.8,25.9]}"#)
        .expect("written");
    zip.start_file("notes/lap.bin", options).expect("an entry");
    std::io::Write::write_all(&mut zip, &binary_bytes()).expect("written");
    zip.finish().expect("a ZIP").into_inner()
}

/// Without `Auth__PublicUrl` (the template's default: the auth function cannot be given the
/// HTTP API's own URL, which refers to it), a provider is given the callback on the domain API
/// Gateway received the request on (`requestContext.domainName`), whatever `Host` and
/// forwarding headers the client sent; with it, the configured URL.
#[tokio::test(flavor = "multi_thread")]
async fn the_auth_function_gives_providers_the_callback_on_the_domain_api_gateway_received() {
    let deployment = deployment().await;
    let providers = r#"{"discord":{"clientId":"paddock-lambda-test"}}"#;
    let unset = deployment.env_with(&[
        ("Auth__ProvidersJson", Some(providers)),
        ("Auth__PublicUrl", None),
    ]);
    let set = deployment.env_with(&[
        ("Auth__ProvidersJson", Some(providers)),
        ("Auth__PublicUrl", Some("https://paddock.example/")),
    ]);
    let (derived, configured) = tokio::join!(start("auth", &unset), start("auth", &set));
    let api_domain = "k3x9q2w1ab.execute-api.us-east-1.amazonaws.com";
    // The provider's redirect_uri and the flow cookie of a sign-in start answered by `auth`.
    let start_at = async |auth: &Running| {
        let start = HttpRequest::new(
            "GET",
            "/v1/auth/login/discord?redirect_uri=http%3A%2F%2F127.0.0.1%3A5173%2Fcallback\
             &code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGzSMW-cM4",
        )
        .header("host", "evil.example")
        .header("x-forwarded-host", "evil.example")
        .header("forwarded", "host=evil.example;proto=https");
        let mut event = start.api_gateway_event();
        event["requestContext"]["domainName"] = json!(api_domain);
        event["requestContext"]["domainPrefix"] = json!("k3x9q2w1ab");
        let response = auth.answer(&event).await;
        let answer =
            HttpAnswer::from_api_gateway(&response).unwrap_or_else(|e| panic!("{e:#}: {response}"));
        assert_eq!(
            answer.status,
            303,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        let location = answer.header("location").expect("a redirect").to_owned();
        let query = location.split_once('?').expect("a query").1;
        let (_, redirect) = form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "redirect_uri")
            .unwrap_or_else(|| panic!("no redirect_uri in {location}"));
        let redirect = redirect.into_owned();
        let cookie = answer.header("set-cookie").unwrap_or_default().to_owned();
        (redirect, cookie)
    };
    let (redirect, cookie) = start_at(&derived).await;
    assert_eq!(
        redirect,
        format!("https://{api_domain}/v1/auth/callback/discord")
    );
    assert!(cookie.contains("; Secure"), "{cookie}");
    let (redirect, _) = start_at(&configured).await;
    assert_eq!(redirect, "https://paddock.example/v1/auth/callback/discord");
}

/// The auth function registers and signs in against DynamoDB Local (its tokens work on the
/// local server and the other way round, and the sign-in cookie reaches it); the sessions
/// function stores an upload the local server then finds; the share-pack function takes a
/// binary ZIP and hands it back byte for byte through S3.
#[tokio::test(flavor = "multi_thread")]
async fn functions_register_sign_in_upload_and_store_packs() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let app = deployment.local_server().await;
    let (auth, sessions, sharepacks) = tokio::join!(
        start("auth", &env),
        start("sessions", &env),
        start("sharepacks", &env)
    );

    let email = format!("{}@example.com", unique("lambda"));
    let credentials = json!({"email": email, "password": "correct horse battery", "displayName": "Lambda Driver"});
    let registered = auth
        .http(&HttpRequest::new("POST", "/v1/auth/register").json(&credentials))
        .await;
    assert_eq!(
        registered.status,
        201,
        "{}",
        String::from_utf8_lossy(&registered.body)
    );
    assert_eq!(registered.header("cache-control"), Some("no-store"));
    let login = HttpRequest::new("POST", "/v1/auth/login/email")
        .json(&json!({"email": email, "password": "correct horse battery"}));
    let signed_in = auth.http(&login).await;
    assert_eq!(signed_in.status, 200);
    let locally = local(&app, &login).await;
    assert_eq!(locally.status, 200);
    assert_eq!(
        signed_in.json()["data"]["user"],
        locally.json()["data"]["user"]
    );
    assert_eq!(
        signed_in.json()["data"]["user"],
        registered.json()["data"]["user"]
    );
    let token = signed_in.json()["data"]["accessToken"]
        .as_str()
        .expect("a token")
        .to_owned();
    let local_token = locally.json()["data"]["accessToken"]
        .as_str()
        .expect("a token")
        .to_owned();
    for (issued_by, token) in [("auth", &token), ("local", &local_token)] {
        let validate = HttpRequest::new("GET", "/v1/auth/validate").bearer(token);
        let (by_lambda, by_local) = (auth.http(&validate).await, local(&app, &validate).await);
        assert_eq!(by_lambda.status, 200, "a token of {issued_by}");
        assert_eq!(by_lambda.json(), by_local.json(), "a token of {issued_by}");
    }
    let wrong = HttpRequest::new("POST", "/v1/auth/login/email")
        .json(&json!({"email": email, "password": "wrong horse battery"}));
    assert_same(&auth, &app, &wrong, &wrong).await;
    // Each sign-in is one count in the function's metric lines, by method and result.
    let sign_ins = "paddock_sign_ins_total";
    for result in ["ok", "failed"] {
        let dims = [("method", "email"), ("result", result)];
        assert_eq!(
            auth.counted(sign_ins, &dims).await,
            1,
            "{result}: {}",
            auth.process.output()
        );
    }
    // The sign-in cookie arrives in API Gateway's `cookies`: with it the state is looked up
    // (and unknown), without it the callback refuses before.
    let callback = HttpRequest::new("GET", "/v1/auth/callback/oidc?state=s1&code=c1");
    let with_cookie = callback.clone().cookie("paddock_signin=s1");
    let answer = assert_same(&auth, &app, &with_cookie, &with_cookie).await;
    assert!(
        String::from_utf8_lossy(&answer.body).contains("unknown or expired"),
        "{answer:?}"
    );
    let answer = assert_same(&auth, &app, &callback, &callback).await;
    assert!(
        String::from_utf8_lossy(&answer.body).contains("cookie missing"),
        "{answer:?}"
    );

    // An upload with track points (to S3) through the function; the local server sees the
    // same session, and a repeat there is the duplicate.
    let upload = session_body(
        "lambda-upload-1",
        "2026-11-20T18:30:00Z",
        &[(92_000, true, 0.95), (91_500, true, 0.93)],
        200,
    );
    let create = HttpRequest::new("POST", "/v1/sessions")
        .bearer(&token)
        .json(&upload);
    let created = sessions.http(&create).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let uploads = "paddock_sessions_uploaded_total";
    assert_eq!(
        sessions.counted(uploads, &[("result", "created")]).await,
        1,
        "{}",
        sessions.process.output()
    );
    let repeat = local(&app, &create).await;
    assert_eq!(repeat.status, 200);
    assert_eq!(repeat.json()["data"]["duplicate"], true);
    let session_id = created.json()["data"]["sessionId"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(repeat.json()["data"]["sessionId"], session_id.as_str());
    let detail = HttpRequest::new("GET", &format!("/v1/sessions/{session_id}")).bearer(&token);
    let answer = assert_same(&sessions, &app, &detail, &detail).await;
    assert_eq!(
        answer.json()["data"]["laps"].as_array().map(Vec::len),
        Some(2)
    );

    // A binary body: the ZIP arrives intact, and S3 hands the same bytes back.
    let pack = share_pack();
    let store = HttpRequest::new("POST", "/v1/sharepacks?name=Spa%20setup&description=wet")
        .bearer(&token)
        .body("application/zip", EventBody::Base64(pack.clone()));
    let stored = sharepacks.http(&store).await;
    assert_eq!(
        stored.status,
        201,
        "{}",
        String::from_utf8_lossy(&stored.body)
    );
    let id = stored.json()["data"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(stored.json()["data"]["sizeBytes"], pack.len());
    let metadata = HttpRequest::new("GET", &format!("/v1/sharepacks/{id}")).bearer(&token);
    assert_same(&sharepacks, &app, &metadata, &metadata).await;
    let download = sharepacks
        .http(&HttpRequest::new("GET", &format!("/v1/sharepacks/{id}/download")).bearer(&token))
        .await;
    assert_eq!(download.status, 302);
    let location = download.header("location").expect("a presigned URL");
    let bytes = reqwest::get(location)
        .await
        .expect("S3 answers")
        .bytes()
        .await
        .expect("the object");
    assert_eq!(bytes.as_ref(), pack.as_slice());
}

/// The outbox rows in DynamoDB as the table's stream carries them (DynamoDB JSON).
async fn outbox_images(t: &TestPorts) -> Vec<Value> {
    let sdk = paddock_aws::sdk_config().await;
    let dynamo = aws_sdk_dynamodb::Client::new(&sdk);
    let rows = dynamo
        .scan()
        .table_name(Table::Outbox.physical(&t.settings.table_prefix))
        .send()
        .await
        .expect("a scan of the outbox");
    rows.items()
        .iter()
        .map(|row| {
            let image: serde_dynamo::Item = row.clone().into();
            serde_json::to_value(image).expect("an image")
        })
        .collect()
}

/// Receives every message of `queue` (waiting a little for the first).
async fn drain(t: &TestPorts, queue: QueueName) -> Vec<String> {
    let queue = t.ports.queues.get(queue);
    let mut bodies = Vec::new();
    loop {
        let batch = queue
            .receive(10, Duration::from_millis(500))
            .await
            .expect("a receive");
        if batch.is_empty() {
            return bodies;
        }
        for message in batch {
            queue.ack(&message.receipt).await.expect("an ack");
            bodies.push(message.body);
        }
    }
}

/// A record of `consumer` that fails on every delivery, so it must be reported for
/// redelivery: an unreadable job (track maps) or statistics item (achievements) of the
/// driver, or a feed entry whose key DynamoDB refuses (feed).
async fn failing_record(t: &TestPorts, consumer: QueueName, upload_event: &Value) -> String {
    let mut event = upload_event.clone();
    match consumer {
        QueueName::TrackMaps => {
            let job = unique("broken-job-");
            t.ports
                .items
                .put(
                    Table::Tracks,
                    item(
                        &Key::new("JOBS", &job),
                        json!({"status": "pending", "attempts": "many"}),
                    ),
                    None,
                )
                .await
                .expect("a broken job");
            event["id"] = json!(uuid::Uuid::now_v7().to_string());
            event["payload"]["jobId"] = json!(job);
        }
        QueueName::Achievements => {
            t.ports
                .items
                .put(
                    Table::Activity,
                    item(
                        &Key::new("ACH#broken-driver", "STATS"),
                        json!({"sessions": "many"}),
                    ),
                    None,
                )
                .await
                .expect("a broken statistics item");
            event["id"] = json!(uuid::Uuid::now_v7().to_string());
            event["userId"] = json!("broken-driver");
        }
        QueueName::Feed => {
            // The entry's partition key would pass DynamoDB's 2,048 bytes: every write fails.
            event["id"] = json!(uuid::Uuid::now_v7().to_string());
            event["userId"] = json!("d".repeat(3000));
        }
        QueueName::Accounts => {
            panic!("the accounts consumer does not take uploads; it has a test of its own")
        }
        QueueName::Webhooks => {
            panic!("the webhook deliveries consumer has its scenarios in webhooks.rs")
        }
    }
    event.to_string()
}

/// An upload through the sessions function writes its event to the outbox; the relay,
/// given the outbox table's stream batch, puts it on every subscribing queue; each consumer,
/// given an SQS batch of that event, one that fails every time and one that is poison,
/// applies the good one, dead-letters the poison one and reports only the failing one.
///
/// "Reports only the poison one", read against `lambda.rs`: a poison record (unreadable, or
/// an event without a driver) is moved to the dead-letter queue at once and is *not* in
/// `batchItemFailures`, since redelivering it cannot help; only a record that failed and
/// may succeed later is reported, so that SQS delivers it again (and moves it to the
/// dead-letter queue itself after `maxReceiveCount`). A poison record is reported only when
/// the dead-letter move itself fails.
#[tokio::test(flavor = "multi_thread")]
async fn relay_and_consumers_carry_an_upload_through_the_queues() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let t = &deployment.t;
    let (auth, sessions, relay) = tokio::join!(
        start("auth", &env),
        start("sessions", &env),
        start("outbox-relay", &env)
    );
    let consumers =
        futures::future::join_all(CONSUMERS.iter().map(|(name, _)| start(name, &env))).await;

    let email = format!("{}@example.com", unique("relay"));
    let registered = auth
        .http(&HttpRequest::new("POST", "/v1/auth/register").json(
            &json!({"email": email, "password": "correct horse battery", "displayName": "Relay"}),
        ))
        .await;
    assert_eq!(registered.status, 201);
    let data = registered.json()["data"].clone();
    let (token, user_id) = (
        data["accessToken"].as_str().expect("a token").to_owned(),
        data["user"]["id"].as_str().expect("an id").to_owned(),
    );
    let laps = [(92_000, true, 0.95), (91_500, true, 0.93)];
    let upload = session_body("relay-upload-1", "2026-11-20T18:30:00Z", &laps, 400);
    let invocation = sessions
        .invoke(
            &HttpRequest::new("POST", "/v1/sessions")
                .bearer(&token)
                .json(&upload)
                .api_gateway_event(),
        )
        .await;
    let created = HttpAnswer::from_api_gateway(&invocation.json().expect("an answer"))
        .expect("an HTTP answer");
    assert_eq!(created.status, 201);
    // The upload's trace (the header Lambda handed the invocation) travels with its event.
    let trace = invocation.trace_id.clone();
    let track_id = created.json()["data"]["trackId"]
        .as_str()
        .expect("a track")
        .to_owned();

    let images = outbox_images(t).await;
    assert_eq!(images.len(), 1, "the upload's one event: {images:?}");
    assert_eq!(
        images[0]["event"]["M"]["trace"]["S"],
        trace.as_str(),
        "{}",
        images[0]
    );
    let table_arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
        Table::Outbox.physical(&t.settings.table_prefix)
    );
    let answer = relay.answer(&dynamodb_inserts(&table_arn, &images)).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    assert_eq!(
        relay.counted("paddock_outbox_relayed_total", &[]).await,
        1,
        "{}",
        relay.process.output()
    );
    let mut delivered = HashMap::new();
    for (_, queue) in CONSUMERS {
        let bodies = drain(t, *queue).await;
        assert_eq!(bodies.len(), 1, "{queue}: {bodies:?}");
        delivered.insert(*queue, bodies[0].clone());
    }
    let event: Value = serde_json::from_str(&delivered[&QueueName::Feed]).expect("an event");
    assert_eq!(event["kind"], "session.uploaded");
    assert_eq!(event["trace"], trace.as_str());
    assert_eq!(event["userId"], user_id.as_str());

    let runs = consumers
        .iter()
        .zip(CONSUMERS)
        .map(|(consumer, (_, queue))| {
            let good = delivered[queue].clone();
            let event = event.clone();
            let trace = trace.clone();
            async move {
                let failing = failing_record(t, *queue, &event).await;
                let mut orphan = event.clone();
                orphan["id"] = json!(uuid::Uuid::now_v7().to_string());
                orphan["userId"] = Value::Null;
                let poison = if *queue == QueueName::TrackMaps {
                    // Track maps need no driver: only an unreadable body is poison there.
                    "{\"kind\": \"session.uploaded\"".to_owned()
                } else {
                    orphan.to_string()
                };
                // Through the queue itself, as Lambda's event source receives them: the records
                // carry real message ids and receipt handles, which settling them needs.
                let sqs = t.ports.queues.get(*queue);
                sqs.send(vec![good.clone(), failing.clone(), poison.clone()])
                    .await
                    .expect("sent");
                let mut received = Vec::new();
                while received.len() < 3 {
                    let batch = sqs
                        .receive(10, Duration::from_secs(2))
                        .await
                        .expect("received");
                    assert!(!batch.is_empty(), "{queue}: the three messages arrive");
                    received.extend(batch);
                }
                let id_of = |body: &str| {
                    received
                        .iter()
                        .find(|m| m.body == body)
                        .map(|m| m.id.clone())
                        .expect("the message")
                };
                let records: Vec<(&str, &str, &str)> = received
                    .iter()
                    .map(|m| (m.id.as_str(), m.receipt.as_str(), m.body.as_str()))
                    .collect();
                let batch = sqs_batch(&format!("paddock-{queue}"), &records);
                let answer = consumer.answer(&batch).await;
                assert_eq!(
                    answer,
                    json!({"batchItemFailures": [{"itemIdentifier": id_of(&failing)}]}),
                    "{queue}: {}",
                    consumer.process.output()
                );
                let dead = t
                    .ports
                    .queues
                    .get(*queue)
                    .dead_letters(10)
                    .await
                    .expect("dead letters");
                assert_eq!(dead, vec![poison], "{queue}");
                // The failing event's log line names its event id and the upload's trace.
                let failing_id = serde_json::from_str::<Value>(&failing).expect("JSON")["id"]
                    .as_str()
                    .expect("an id")
                    .to_owned();
                let output = consumer.process.output();
                let line = output
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .find(|l| l["message"] == "event failed; SQS will redeliver")
                    .unwrap_or_else(|| panic!("{queue}: no failure line: {output}"));
                assert_eq!(
                    line["span"]["event_id"],
                    failing_id.as_str(),
                    "{queue}: {line}"
                );
                assert_eq!(line["span"]["trace_id"], trace.as_str(), "{queue}: {line}");
                assert_eq!(line["span"]["consumer"], queue.name(), "{queue}: {line}");
                // The batch's outcomes, one count each, under the consumer's name.
                let kind = if *queue == QueueName::TrackMaps {
                    "unreadable"
                } else {
                    "session.uploaded"
                };
                for (outcome, kind) in [
                    ("ok", "session.uploaded"),
                    ("retry", "session.uploaded"),
                    ("dead_letter", kind),
                ] {
                    let dims = [
                        ("consumer", queue.name()),
                        ("kind", kind),
                        ("outcome", outcome),
                    ];
                    assert_eq!(
                        consumer
                            .counted("paddock_events_processed_total", &dims)
                            .await,
                        1,
                        "{queue} {outcome}: {}",
                        consumer.process.output()
                    );
                }
            }
        });
    futures::future::join_all(runs).await;

    // The good event took effect in each consumer.
    let driver = UserId::from(user_id.as_str());
    let (entries, _) = feed::list(&t.ports, &driver, 10, None)
        .await
        .expect("the feed");
    assert_eq!(entries.len(), 1, "one feed entry for the upload");
    let mine = paddock_core::activity::achievements::for_driver(&t.ports, &driver)
        .await
        .expect("achievements");
    let mine = serde_json::to_value(mine).expect("JSON");
    assert!(
        mine.as_array()
            .expect("a list")
            .iter()
            .any(|a| a["id"] == "first-session" && !a["unlockedAt"].is_null()),
        "{mine}"
    );
    let job_id = event["payload"]["jobId"].as_str().expect("a track job");
    let status = jobs::status(&t.ports, &job_id.into())
        .await
        .expect("a status")
        .expect("the job");
    assert_eq!(status.status, "done", "track {track_id}: {status:?}");
}

/// The track-map function on the maintenance schedule hands a job whose lease ran out back
/// to pending; the retention function, on a TTL removal of the share-pack stream, removes the
/// objects of a pack that expired unfinished.
#[tokio::test(flavor = "multi_thread")]
async fn schedules_run_maintenance_and_retention() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let t = &deployment.t;
    let (track_maps, retention) = tokio::join!(start("track-maps", &env), start("retention", &env));

    // A job claimed an hour ago: its two-minute lease is long over.
    let an_hour_ago = Arc::new(ManualClock::new(
        OffsetDateTime::now_utc() - time::Duration::hours(1),
    ));
    let earlier = paddock_core::ports::Ports {
        clock: an_hour_ago.clone(),
        ..t.ports.clone()
    };
    let job_id = paddock_core::ids::JobId::from(unique("stuck-job-").as_str());
    let create: TxOp = jobs::create_op(
        &job_id,
        &"track-1".into(),
        &"session-1".into(),
        &"driver-1".into(),
        "points/none.bin",
        an_hour_ago.now(),
    );
    earlier.items.transact(vec![create]).await.expect("a job");
    assert!(
        jobs::claim(&earlier, &job_id)
            .await
            .expect("a claim")
            .is_some()
    );
    let answer = track_maps
        .answer(&scheduled_event("paddock-maintenance"))
        .await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    let status = jobs::status(&t.ports, &job_id).await.expect("a status");
    assert_eq!(status.map(|s| s.status).as_deref(), Some("pending"));

    // A share pack whose upload was never completed, removed by TTL: the retention function
    // on its stream record removes the pack's objects.
    let id = unique("pack-");
    let pending = item(
        &Key::new(format!("PACK#{id}"), "META"),
        json!({"state": "pending", "ttl": OffsetDateTime::now_utc().unix_timestamp() - 60}),
    );
    for object in [
        paddock_core::sharepacks::blob_key(&id),
        paddock_core::sharepacks::upload_key(&id),
    ] {
        t.ports
            .blobs
            .put(&object, bytes::Bytes::from_static(b"PK"), "application/zip")
            .await
            .expect("an object");
    }
    let image: serde_dynamo::Item = serde_dynamo::to_item(&pending).expect("an image");
    let table_arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
        Table::Sharepacks.physical(&t.settings.table_prefix)
    );
    let event = dynamodb_ttl_removals(
        &table_arn,
        &[serde_json::to_value(image).expect("an image")],
        1,
    );
    let answer = retention.answer(&event).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    for object in [
        paddock_core::sharepacks::blob_key(&id),
        paddock_core::sharepacks::upload_key(&id),
    ] {
        assert!(t.ports.blobs.get(&object).await.expect("a read").is_none());
    }
}

/// The accounts function gets an SQS batch with a deleted account's `account.deleted` event
/// and a poison one (no driver): it runs the deletion job to its end, dead-letters the poison
/// record and reports no failure.
#[tokio::test(flavor = "multi_thread")]
async fn the_accounts_function_runs_deletion_jobs() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let t = &deployment.t;
    let accounts = start("accounts", &env).await;

    let user = UserId::from(uuid::Uuid::new_v4().to_string().as_str());
    let profile = paddock_core::identity::users::User {
        id: user.clone(),
        ..paddock_core::identity::users::User::new(None, "Ada".into(), None, t.clock.now())
    };
    t.ports
        .items
        .transact(vec![profile.create_op()])
        .await
        .expect("a profile");
    let post = feed::FeedPost::parse(Some("Last lap".into()), None).expect("a post");
    feed::post(&t.ports, &user, post, None)
        .await
        .expect("a post");
    paddock_core::driver_data::deletion::start(&t.ports, &user)
        .await
        .expect("deleted");
    paddock_core::outbox::relay_pending(&t.ports)
        .await
        .expect("relayed");
    let bodies = drain(t, QueueName::Accounts).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let good = bodies[0].clone();
    let mut orphan: Value = serde_json::from_str(&good).expect("an event");
    orphan["id"] = json!(uuid::Uuid::now_v7().to_string());
    orphan["userId"] = Value::Null;
    let poison = orphan.to_string();

    let sqs = t.ports.queues.get(QueueName::Accounts);
    sqs.send(vec![good.clone(), poison.clone()])
        .await
        .expect("sent");
    let mut received = Vec::new();
    while received.len() < 2 {
        let batch = sqs
            .receive(10, Duration::from_secs(2))
            .await
            .expect("received");
        assert!(!batch.is_empty(), "both messages arrive");
        received.extend(batch);
    }
    let records: Vec<(&str, &str, &str)> = received
        .iter()
        .map(|m| (m.id.as_str(), m.receipt.as_str(), m.body.as_str()))
        .collect();
    let answer = accounts
        .answer(&sqs_batch("paddock-accounts", &records))
        .await;
    assert_eq!(
        answer,
        json!({"batchItemFailures": []}),
        "{}",
        accounts.process.output()
    );
    assert_eq!(
        sqs.dead_letters(10).await.expect("dead letters"),
        vec![poison]
    );
    let left = paddock_core::identity::users::get_stored(&t.ports, &user)
        .await
        .expect("a read");
    assert!(left.is_none(), "the job ran to its end");
    let (entries, _) = feed::list(&t.ports, &user, 10, None)
        .await
        .expect("the feed");
    assert!(entries.is_empty(), "{entries:?}");
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
