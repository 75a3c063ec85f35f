//! A Lambda runtime API on loopback, and function binaries started against it the way Lambda
//! starts them.
//!
//! [`RuntimeApi`] implements the part of the runtime API a function talks to
//! (<https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html>): the long-polled
//! `GET /2018-06-01/runtime/invocation/next` with the request id, deadline, function ARN and
//! trace id headers, `POST .../invocation/{id}/response`, `POST .../invocation/{id}/error` and
//! `POST /2018-06-01/runtime/init/error`. A test queues an event with [`RuntimeApi::invoke`]
//! and gets the function's answer with the moments it was handed out and answered.
//!
//! [`FunctionProcess`] runs a binary with `AWS_LAMBDA_RUNTIME_API` pointing at one such API
//! and the other variables Lambda sets, keeps its output for failure messages, and kills it
//! when dropped. One API serves one process, as one Lambda execution environment runs one
//! runtime.

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::net::SocketAddr;
use std::path::Path as FsPath;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot, watch};

/// The region Lambda's variables name.
pub const REGION: &str = "us-east-1";

/// How long a function gets for one invocation (the deadline it is told).
const INVOCATION_TIMEOUT: Duration = Duration::from_secs(30);

/// What a function answered to one invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The body posted to `/invocation/{id}/response`.
    Response(Bytes),
    /// The error posted to `/invocation/{id}/error`.
    Error(ReportedError),
}

/// An error a function reported to `/invocation/{id}/error` or `/init/error`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedError {
    /// The `Lambda-Runtime-Function-Error-Type` header, when sent.
    pub error_type_header: Option<String>,
    /// The body's `errorType`.
    pub error_type: String,
    /// The body's `errorMessage`.
    pub message: String,
}

/// One invocation's outcome and its timing as the runtime API saw it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The request id the event was handed out with.
    pub request_id: String,
    /// The trace header (`Lambda-Runtime-Trace-Id`) the event was handed out with.
    pub trace_id: String,
    /// What the function posted.
    pub outcome: Outcome,
    /// When the `next` request was answered with the event.
    pub handed_out: Instant,
    /// When the function's response or error arrived.
    pub answered: Instant,
}

impl Answer {
    /// The response body as JSON; fails when the function reported an error instead.
    pub fn json(&self) -> anyhow::Result<serde_json::Value> {
        match &self.outcome {
            Outcome::Response(body) => {
                serde_json::from_slice(body).context("the function's response is not JSON")
            }
            Outcome::Error(e) => bail!(
                "invocation {} failed: {}: {}",
                self.request_id,
                e.error_type,
                e.message
            ),
        }
    }

    /// From handing the event out to receiving the answer.
    pub fn latency(&self) -> Duration {
        self.answered.duration_since(self.handed_out)
    }
}

/// An event waiting for the function's `next` request.
struct Pending {
    request_id: String,
    payload: Bytes,
}

/// An invocation handed out: when, with which trace header, and where the answer goes.
type InFlight = (Instant, String, oneshot::Sender<Answer>);

/// What the handlers share.
struct Shared {
    function_arn: String,
    events: mpsc::Sender<Pending>,
    /// Taken by one `next` request at a time (a runtime polls sequentially).
    queue: tokio::sync::Mutex<mpsc::Receiver<Pending>>,
    /// Invocations handed out and not answered yet: when, and where the answer goes.
    in_flight: Mutex<HashMap<String, InFlight>>,
    /// Invocations queued and not handed out yet.
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    first_next: watch::Sender<Option<Instant>>,
    init_error: watch::Sender<Option<ReportedError>>,
}

/// The runtime API on a free loopback port, serving until dropped.
pub struct RuntimeApi {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl RuntimeApi {
    /// Starts the API for a function named `function_name`.
    pub async fn start(function_name: &str) -> anyhow::Result<Self> {
        let (events, queue) = mpsc::channel(64);
        let shared = Arc::new(Shared {
            function_arn: format!("arn:aws:lambda:{REGION}:123456789012:function:{function_name}"),
            events,
            queue: tokio::sync::Mutex::new(queue),
            in_flight: Mutex::new(HashMap::new()),
            waiting: Mutex::new(HashMap::new()),
            first_next: watch::Sender::new(None),
            init_error: watch::Sender::new(None),
        });
        let router = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(response),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the runtime API")?;
        let address = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Self {
            address,
            shared,
            server,
        })
    }

    /// The value of `AWS_LAMBDA_RUNTIME_API` (host and port, no scheme).
    pub fn address(&self) -> String {
        self.address.to_string()
    }

    /// Hands `payload` to the function's next `next` request and waits at most `timeout` for
    /// its answer.
    pub async fn invoke(
        &self,
        payload: &serde_json::Value,
        timeout: Duration,
    ) -> anyhow::Result<Answer> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.waiting).insert(request_id.clone(), tx);
        self.shared
            .events
            .send(Pending {
                request_id: request_id.clone(),
                payload: Bytes::from(serde_json::to_vec(payload)?),
            })
            .await
            .context("the runtime API has stopped")?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => bail!("invocation {request_id} was dropped"),
            Err(_) => bail!("no answer to invocation {request_id} within {timeout:?}"),
        }
    }

    /// When the function first asked for an event (its init is over); waits at most `timeout`.
    pub async fn first_next(&self, timeout: Duration) -> anyhow::Result<Instant> {
        let mut seen = self.shared.first_next.subscribe();
        let at = tokio::time::timeout(timeout, seen.wait_for(Option::is_some))
            .await
            .with_context(|| format!("the function did not ask for an event within {timeout:?}"))?
            .context("the runtime API has stopped")?;
        Ok(at.expect("waited for a value"))
    }

    /// The init error the function reported; waits at most `timeout`.
    pub async fn init_error(&self, timeout: Duration) -> anyhow::Result<ReportedError> {
        let mut seen = self.shared.init_error.subscribe();
        let error = tokio::time::timeout(timeout, seen.wait_for(Option::is_some))
            .await
            .with_context(|| format!("no init error was reported within {timeout:?}"))?
            .context("the runtime API has stopped")?;
        Ok(error.clone().expect("waited for a value"))
    }

    /// The init error reported so far, if any.
    pub fn reported_init_error(&self) -> Option<ReportedError> {
        self.shared.init_error.borrow().clone()
    }

    /// The variables Lambda sets for a function named `function_name` (128 MB, version
    /// `$LATEST`, this API's address, the region and its log group and stream).
    pub fn lambda_env(&self, function_name: &str) -> Vec<(String, String)> {
        [
            ("AWS_LAMBDA_RUNTIME_API", self.address()),
            ("AWS_LAMBDA_FUNCTION_NAME", function_name.to_owned()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128".to_owned()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{function_name}"),
            ),
            (
                "AWS_LAMBDA_LOG_STREAM_NAME",
                "2026/11/23/[$LATEST]0123456789abcdef0123456789abcdef".to_owned(),
            ),
            ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".to_owned()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_DEFAULT_REGION", REGION.to_owned()),
            ("AWS_EXECUTION_ENV", "AWS_Lambda_rust".to_owned()),
            ("LAMBDA_TASK_ROOT", "/var/task".to_owned()),
            ("LAMBDA_RUNTIME_DIR", "/var/runtime".to_owned()),
            ("TZ", ":UTC".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn header(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).expect("a header value")
}

/// `GET /invocation/next`: waits for an event and hands it out with Lambda's headers.
async fn next(State(shared): State<Arc<Shared>>) -> Response {
    shared.first_next.send_if_modified(|first| {
        let unset = first.is_none();
        if unset {
            *first = Some(Instant::now());
        }
        unset
    });
    // Lambda freezes the environment between invocations; here the request just waits. A
    // runtime that disconnects meanwhile loses nothing: receiving is cancel-safe.
    let Some(pending) = shared.queue.lock().await.recv().await else {
        return StatusCode::GONE.into_response();
    };
    let Some(answer_to) = lock(&shared.waiting).remove(&pending.request_id) else {
        return StatusCode::GONE.into_response();
    };
    let deadline = SystemTime::now() + INVOCATION_TIMEOUT;
    let deadline_ms = deadline
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis();
    let mut headers = HeaderMap::new();
    headers.insert("content-type", header("application/json"));
    headers.insert("lambda-runtime-aws-request-id", header(&pending.request_id));
    headers.insert(
        "lambda-runtime-deadline-ms",
        header(&deadline_ms.to_string()),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        header(&shared.function_arn),
    );
    let trace_id = format!(
        "Root=1-{:08x}-{};Parent={};Sampled=0",
        deadline_ms / 1000 % (1 << 32),
        &uuid::Uuid::new_v4().simple().to_string()[..24],
        &uuid::Uuid::new_v4().simple().to_string()[..16]
    );
    headers.insert("lambda-runtime-trace-id", header(&trace_id));
    lock(&shared.in_flight).insert(pending.request_id, (Instant::now(), trace_id, answer_to));
    (StatusCode::OK, headers, pending.payload).into_response()
}

/// Settles invocation `id` with `outcome`; 400 for an id that is not in flight, as Lambda
/// answers.
fn settle(shared: &Shared, id: String, outcome: Outcome) -> Response {
    let Some((handed_out, trace_id, answer_to)) = lock(&shared.in_flight).remove(&id) else {
        return (StatusCode::BAD_REQUEST, "unknown or settled request id").into_response();
    };
    let _ = answer_to.send(Answer {
        request_id: id,
        trace_id,
        outcome,
        handed_out,
        answered: Instant::now(),
    });
    (
        StatusCode::ACCEPTED,
        axum::Json(serde_json::json!({"status": "OK"})),
    )
        .into_response()
}

/// Reads an error report (`{errorType, errorMessage}` and the error-type header).
fn reported(headers: &HeaderMap, body: &[u8]) -> ReportedError {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    ReportedError {
        error_type_header: headers
            .get("lambda-runtime-function-error-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        error_type: json["errorType"].as_str().unwrap_or_default().to_owned(),
        message: json["errorMessage"]
            .as_str()
            .map_or_else(|| String::from_utf8_lossy(body).into_owned(), str::to_owned),
    }
}

/// `POST /invocation/{id}/response`.
async fn response(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    settle(&shared, id, Outcome::Response(body))
}

/// `POST /invocation/{id}/error`.
async fn error(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    settle(&shared, id, Outcome::Error(reported(&headers, &body)))
}

/// `POST /init/error`.
async fn init_error(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared
        .init_error
        .send_replace(Some(reported(&headers, &body)));
    (
        StatusCode::ACCEPTED,
        axum::Json(serde_json::json!({"status": "OK"})),
    )
        .into_response()
}

/// Sees each line a function prints (as Lambda's log delivery does), besides where the line
/// goes.
#[derive(Clone)]
pub struct LineTap(Arc<dyn Fn(&str) + Send + Sync>);

impl LineTap {
    /// A tap that calls `see` with each line.
    pub fn new(see: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(see))
    }
}

impl std::fmt::Debug for LineTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineTap")
    }
}

/// A function binary started as Lambda starts it, killed when dropped.
pub struct FunctionProcess {
    child: std::process::Child,
    /// When the process was started.
    pub started: Instant,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Drop for FunctionProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl FunctionProcess {
    /// Starts `binary` with Lambda's variables for `api` and `env` on top, in a clean
    /// environment (only `PATH` and `HOME` are kept besides), so nothing of the test's own
    /// environment decides what the function sees.
    pub fn spawn(
        binary: &FsPath,
        function_name: &str,
        api: &RuntimeApi,
        env: &[(String, String)],
    ) -> anyhow::Result<Self> {
        Self::spawn_logged(binary, function_name, api, env, None, None)
    }

    /// As [`FunctionProcess::spawn`]; with `echo`, each output line goes to this process's
    /// standard error behind `[<echo>] ` instead of being kept; with `tap`, each line is
    /// also handed to it.
    pub fn spawn_logged(
        binary: &FsPath,
        function_name: &str,
        api: &RuntimeApi,
        env: &[(String, String)],
        echo: Option<String>,
        tap: Option<LineTap>,
    ) -> anyhow::Result<Self> {
        let mut command = std::process::Command::new(binary);
        command
            .env_clear()
            .envs(std::env::vars().filter(|(k, _)| k == "PATH" || k == "HOME"))
            .envs(api.lambda_env(function_name))
            .envs(env.iter().cloned())
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let output = Arc::new(Mutex::new(Vec::new()));
        let streams = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ];
        for stream in streams.into_iter().flatten() {
            let output = output.clone();
            let echo = echo.clone();
            let tap = tap.clone();
            std::thread::spawn(move || {
                let mut lines = std::io::BufReader::new(stream);
                let mut line = Vec::new();
                while let Ok(n) = lines.read_until(b'\n', &mut line) {
                    if n == 0 {
                        break;
                    }
                    if let Some(LineTap(see)) = &tap {
                        see(&String::from_utf8_lossy(&line));
                    }
                    match &echo {
                        Some(name) => {
                            eprint!("[{name}] {}", String::from_utf8_lossy(&line));
                        }
                        None => lock(&output).extend_from_slice(&line),
                    }
                    line.clear();
                }
            });
        }
        Ok(Self {
            child,
            started,
            output,
        })
    }

    /// What the function printed so far (its log lines), for failure messages.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&lock(&self.output)).into_owned()
    }

    /// Waits at most `timeout` for the process to exit; answers its exit code.
    pub async fn exit_code(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status.code());
            }
            if Instant::now() > until {
                bail!("the function still runs after {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
