//! A fault-injecting HTTP proxy on loopback, between the service's AWS SDK clients and the
//! emulators (DynamoDB Local, moto_server's S3 and SQS), so the service meets the faults AWS
//! hands out every day: a throttled or failed call in the service's own wire format, a call
//! that hangs past the SDK's timeout, a connection reset, and a call whose write happened but
//! whose answer was lost.
//!
//! Calls are routed by what they are: a DynamoDB call (`x-amz-target: DynamoDB_…`) goes to
//! DynamoDB Local, anything else (S3, SQS, Secrets Manager) to moto_server. Each call is given
//! to the rules in order; the first rule whose filter matches and whose turn has come decides
//! the fault. Rates are drawn from a seeded generator, so a run's sequence of decisions is the
//! same each time (which call gets which decision still follows the order calls arrive in).
//! The proxy counts every call and every fault it handed out.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does to a call a rule picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The service's throttling answer: DynamoDB `ProvisionedThroughputExceededException`,
    /// SQS `ThrottlingException` (400 JSON with `__type`), S3 `503 SlowDown` (XML).
    Throttle,
    /// The service's internal error: 500 `InternalServerError` (DynamoDB, SQS JSON), 500
    /// `InternalError` (S3 XML).
    InternalError,
    /// The call waits this long before it is forwarded (past the SDK's attempt timeout, the
    /// caller has given up; the call may still be applied afterwards, as in AWS).
    Delay(Duration),
    /// The connection is closed without an answer; nothing was forwarded.
    Reset,
    /// The call is forwarded and applied, then the connection is closed without its answer.
    LoseAnswer,
    /// The call is forwarded and applied, and its answer is held back for two minutes: the
    /// caller waits there, after its write, for as long as a test needs to end it.
    Stall,
}

impl Fault {
    /// The name the proxy counts this fault under.
    pub fn name(self) -> &'static str {
        match self {
            Self::Throttle => "throttle",
            Self::InternalError => "internal_error",
            Self::Delay(_) => "delay",
            Self::Reset => "reset",
            Self::LoseAnswer => "lose_answer",
            Self::Stall => "stall",
        }
    }
}

/// Which calls a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Calls {
    /// Every call.
    All,
    /// Calls that change state: DynamoDB and SQS writes by operation, S3 PUT, POST and DELETE.
    Writes,
    /// Calls of these operations: the DynamoDB or SQS operation name (`PutItem`,
    /// `TransactWriteItems`, `SendMessage`), or `S3 <METHOD>` for S3 (`S3 PUT`).
    Operations(Vec<String>),
    /// Writes whose request body contains this text (a key prefix, a table name).
    WritesContaining(String),
}

/// When a matching call gets the fault.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// Each matching call with this probability (0 to 1), drawn from the seeded generator.
    Rate(f64),
    /// Only the n-th matching call (1-based), once.
    Nth(u64),
    /// The `count` matching calls from the `from`-th (1-based): a fault that outlasts the
    /// SDK's retries when `count` is at least its attempts.
    Run {
        /// The first call given the fault.
        from: u64,
        /// How many calls in a row are given it.
        count: u64,
    },
    /// Every matching call.
    Always,
}

/// One rule: the calls, when, and what is done to them.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The calls it applies to.
    pub calls: Calls,
    /// When a matching call gets the fault.
    pub when: When,
    /// The fault.
    pub fault: Fault,
}

impl Rule {
    /// `fault` on `rate` of the calls `calls`.
    pub fn rate(calls: Calls, rate: f64, fault: Fault) -> Self {
        Self {
            calls,
            when: When::Rate(rate),
            fault,
        }
    }

    /// `fault` on `count` calls of `calls` in a row from the `from`-th.
    pub fn run(calls: Calls, from: u64, count: u64, fault: Fault) -> Self {
        Self {
            calls,
            when: When::Run { from, count },
            fault,
        }
    }

    /// `fault` on the n-th call of `calls` only.
    pub fn nth(calls: Calls, n: u64, fault: Fault) -> Self {
        Self {
            calls,
            when: When::Nth(n),
            fault,
        }
    }
}

/// What the proxy did, by call and by fault.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls received.
    pub calls: u64,
    /// Calls forwarded whose answer was passed on unchanged.
    pub passed: u64,
    /// Faults handed out, by [`Fault::name`].
    pub faults: BTreeMap<&'static str, u64>,
    /// Calls received, by operation (`PutItem`, `S3 PUT`, ...).
    pub operations: BTreeMap<String, u64>,
    /// Events handed to consumers by SQS `ReceiveMessage` answers.
    pub deliveries: u64,
    /// Of those, deliveries of an event its queue had handed out before (a redelivery after
    /// a failed or ended consumer, or a duplicate send).
    pub redeliveries: u64,
}

impl Counts {
    /// Faults of every kind.
    pub fn faults_total(&self) -> u64 {
        self.faults.values().sum()
    }
}

struct State {
    rules: Vec<Rule>,
    /// Matching calls seen by each rule so far.
    seen: Vec<u64>,
    rng: u64,
    counts: Counts,
    /// Deliveries so far of each (queue, event id).
    delivered: HashMap<(String, String), u64>,
}

impl State {
    /// splitmix64: small, seedable, and the same on every machine.
    fn next_unit(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn decide(&mut self, call: &Call) -> Option<Fault> {
        self.counts.calls += 1;
        *self
            .counts
            .operations
            .entry(call.operation.clone())
            .or_default() += 1;
        for i in 0..self.rules.len() {
            if !call.matches(&self.rules[i].calls) {
                continue;
            }
            self.seen[i] += 1;
            let rule = &self.rules[i];
            let (when, fault, seen) = (rule.when, rule.fault, self.seen[i]);
            let hit = match when {
                When::Always => true,
                When::Nth(n) => seen == n,
                When::Run { from, count } => seen >= from && seen < from + count,
                // Drawn for every matching call, so a rule's decisions do not depend on others'.
                When::Rate(rate) => self.next_unit() < rate,
            };
            if hit {
                *self.counts.faults.entry(fault.name()).or_default() += 1;
                return Some(fault);
            }
        }
        None
    }
}

/// What the proxy knows of a call before deciding.
struct Call {
    /// DynamoDB or SQS operation name, or `S3 <METHOD>`.
    operation: String,
    upstream: Upstream,
    writes: bool,
    body: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upstream {
    DynamoDb,
    /// SQS (JSON protocol) on moto.
    Sqs,
    /// S3 and anything else on moto.
    Other,
}

const DYNAMODB_WRITES: &[&str] = &[
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "TransactWriteItems",
];
const SQS_WRITES: &[&str] = &[
    "SendMessage",
    "SendMessageBatch",
    "DeleteMessage",
    "DeleteMessageBatch",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
];

impl Call {
    fn of(request: &http::request::Parts, body: Bytes) -> Self {
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let (service, op) = target.split_once('.').unwrap_or(("", ""));
        if service.starts_with("DynamoDB") {
            Self {
                operation: op.to_owned(),
                upstream: Upstream::DynamoDb,
                writes: DYNAMODB_WRITES.contains(&op),
                body,
            }
        } else if service == "AmazonSQS" {
            Self {
                operation: op.to_owned(),
                upstream: Upstream::Sqs,
                writes: SQS_WRITES.contains(&op),
                body,
            }
        } else {
            let method = request.method.as_str().to_owned();
            Self {
                writes: matches!(method.as_str(), "PUT" | "POST" | "DELETE"),
                operation: format!("S3 {method}"),
                upstream: Upstream::Other,
                body,
            }
        }
    }

    fn matches(&self, calls: &Calls) -> bool {
        match calls {
            Calls::All => true,
            Calls::Writes => self.writes,
            Calls::Operations(names) => names.contains(&self.operation),
            Calls::WritesContaining(text) => {
                self.writes
                    && self
                        .body
                        .windows(text.len().max(1))
                        .any(|w| w == text.as_bytes())
            }
        }
    }

    /// The service's own answer for a throttled or failed call.
    fn error_answer(&self, fault: Fault) -> Response<Full<Bytes>> {
        let throttled = fault == Fault::Throttle;
        let (status, content_type, body) = match (self.upstream, throttled) {
            (Upstream::DynamoDb, true) => (
                StatusCode::BAD_REQUEST,
                "application/x-amz-json-1.0",
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}"#.to_owned(),
            ),
            (Upstream::DynamoDb, false) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/x-amz-json-1.0",
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}"#.to_owned(),
            ),
            (Upstream::Sqs, true) => (
                StatusCode::BAD_REQUEST,
                "application/x-amz-json-1.0",
                r#"{"__type":"com.amazonaws.sqs#ThrottlingException","message":"Rate exceeded"}"#
                    .to_owned(),
            ),
            (Upstream::Sqs, false) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/x-amz-json-1.0",
                r#"{"__type":"com.amazonaws.sqs#InternalError","message":"We encountered an internal error. Please try again."}"#.to_owned(),
            ),
            (Upstream::Other, true) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "application/xml",
                s3_error("SlowDown", "Please reduce your request rate."),
            ),
            (Upstream::Other, false) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/xml",
                s3_error(
                    "InternalError",
                    "We encountered an internal error. Please try again.",
                ),
            ),
        };
        let mut answer = Response::new(Full::new(Bytes::from(body)));
        *answer.status_mut() = status;
        answer.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(content_type),
        );
        answer
            .headers_mut()
            .insert("x-amzn-requestid", http::HeaderValue::from_static("fault"));
        answer
    }
}

fn s3_error(code: &str, message: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>fault</RequestId></Error>"
    )
}

/// Why the proxy closed a connection without an answer (hyper then drops the connection).
type Closed = std::io::Error;

fn closed(why: impl std::fmt::Display) -> Closed {
    std::io::Error::other(why.to_string())
}

struct Shared {
    state: Mutex<State>,
    dynamodb: String,
    moto: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// The running proxy; it serves until the test's runtime ends.
#[derive(Clone)]
pub struct FaultProxy {
    address: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// A proxy on a free loopback port in front of `dynamodb` and `moto` (base URLs such as
    /// `http://127.0.0.1:8000`), with no rules yet and its generator seeded with `seed`.
    pub async fn start(dynamodb: &str, moto: &str, seed: u64) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                rules: Vec::new(),
                seen: Vec::new(),
                rng: seed,
                counts: Counts::default(),
                delivered: HashMap::new(),
            }),
            dynamodb: dynamodb.trim_end_matches('/').to_owned(),
            moto: moto.trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        let serving = shared.clone();
        // A connection the proxy closes on purpose ends there with its error.
        crate::loopback_http::serve(listener, move |request| {
            let shared = serving.clone();
            async move { handle(&shared, request).await }
        });
        Ok(Self { address, shared })
    }

    /// A proxy in front of the emulators the environment names (`AWS_ENDPOINT_URL_DYNAMODB`,
    /// `AWS_ENDPOINT_URL_S3`).
    pub async fn in_front_of_emulators(seed: u64) -> std::io::Result<Self> {
        let var = |name: &str| {
            std::env::var(name).map_err(|_| {
                std::io::Error::other(format!("{name} is not set: start the emulators"))
            })
        };
        Self::start(
            &var("AWS_ENDPOINT_URL_DYNAMODB")?,
            &var("AWS_ENDPOINT_URL_S3")?,
            seed,
        )
        .await
    }

    /// The proxy's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// `sdk` with DynamoDB, S3 and SQS sent through this proxy (Secrets Manager and every
    /// other setting as they were).
    pub fn sdk_config_through(&self, sdk: &aws_config::SdkConfig) -> aws_config::SdkConfig {
        sdk.to_builder()
            .service_config(Through { url: self.url() })
            .build()
    }

    /// Replaces the rules (and restarts their call counts); an empty list passes every call.
    pub fn set_rules(&self, rules: Vec<Rule>) {
        let mut state = self.shared.state.lock().expect("proxy state");
        state.seen = vec![0; rules.len()];
        state.rules = rules;
    }

    /// What was done so far.
    pub fn counts(&self) -> Counts {
        self.shared
            .state
            .lock()
            .expect("proxy state")
            .counts
            .clone()
    }

    /// Clears the counts (the rules and the generator are kept).
    pub fn reset_counts(&self) {
        self.shared.state.lock().expect("proxy state").counts = Counts::default();
    }
}

async fn handle(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Closed> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(closed)?.to_bytes();
    let call = Call::of(&parts, body);
    let fault = shared.state.lock().expect("proxy state").decide(&call);
    match fault {
        Some(fault @ (Fault::Throttle | Fault::InternalError)) => {
            return Ok(call.error_answer(fault));
        }
        Some(Fault::Reset) => return Err(closed("connection reset by the fault proxy")),
        Some(Fault::Delay(wait)) => tokio::time::sleep(wait).await,
        Some(Fault::LoseAnswer | Fault::Stall) | None => {}
    }
    let answer = forward(shared, &call, parts).await?;
    if fault == Some(Fault::LoseAnswer) {
        return Err(closed("answer dropped after the call was applied"));
    }
    if fault == Some(Fault::Stall) {
        tokio::time::sleep(Duration::from_secs(120)).await;
    }
    if fault.is_none() {
        shared.state.lock().expect("proxy state").counts.passed += 1;
    }
    Ok(answer)
}

async fn forward(
    shared: &Shared,
    call: &Call,
    parts: http::request::Parts,
) -> Result<Response<Full<Bytes>>, Closed> {
    let body = call.body.clone();
    let base = match call.upstream {
        Upstream::DynamoDb => &shared.dynamodb,
        Upstream::Sqs | Upstream::Other => &shared.moto,
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri: http::Uri = format!("{base}{path}").parse().map_err(closed)?;
    let mut upstream = Request::new(Full::new(body));
    *upstream.method_mut() = parts.method;
    *upstream.uri_mut() = uri;
    // Headers as signed (the emulators do not check signatures, so the proxy's Host is kept).
    *upstream.headers_mut() = parts.headers;
    let answer = shared.client.request(upstream).await.map_err(closed)?;
    let (parts, body) = answer.into_parts();
    let body = body.collect().await.map_err(closed)?.to_bytes();
    if call.operation == "ReceiveMessage" && parts.status.is_success() {
        count_deliveries(shared, &call.body, &body);
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// Counts the events a `ReceiveMessage` answer hands out (each message's body is an event
/// with its `id`), and those its queue handed out before.
fn count_deliveries(shared: &Shared, request: &[u8], answer: &[u8]) {
    let json = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok();
    let (Some(request), Some(answer)) = (json(request), json(answer)) else {
        return;
    };
    let queue = request["QueueUrl"].as_str().unwrap_or_default().to_owned();
    let ids: Vec<String> = answer["Messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| json(m["Body"].as_str()?.as_bytes()))
                .filter_map(|event| event["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut state = shared.state.lock().expect("proxy state");
    for id in ids {
        let seen = state.delivered.entry((queue.clone(), id)).or_default();
        *seen += 1;
        let again = *seen > 1;
        state.counts.deliveries += 1;
        if again {
            state.counts.redeliveries += 1;
        }
    }
}

/// Service settings from the environment, as the SDK reads them, except that DynamoDB, S3 and
/// SQS are sent to the proxy.
#[derive(Debug)]
struct Through {
    url: String,
}

impl aws_types::service_config::LoadServiceConfig for Through {
    fn load_config(&self, key: aws_types::service_config::ServiceConfigKey<'_>) -> Option<String> {
        let service = key.service_id();
        if key.env() == "AWS_ENDPOINT_URL" && matches!(service, "DynamoDB" | "S3" | "SQS") {
            return Some(self.url.clone());
        }
        let suffix = service.to_ascii_uppercase().replace(' ', "_");
        std::env::var(format!("{}_{suffix}", key.env()))
            .ok()
            .filter(|v| !v.is_empty())
    }
}
