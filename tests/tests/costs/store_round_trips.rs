//! How many times each main request waits on the item store: its calls and its sequential
//! steps (calls made at once, whose spans overlap, count as one step), and on DynamoDB Local
//! the read and write units it consumed. The routes are the Lambda functions' own (no local
//! workers run meanwhile), with the board page cache off so a board read is a miss.
//!
//! Each request kind has a limit of calls and of steps in [`LIMITS`]: a change that adds a
//! round trip fails here. Each call is held a few milliseconds before it is passed on, as a
//! network round trip holds it, so calls made at once overlap on either backend (see
//! [`CountingItems::with_latency`]). Printed with
//! `RUST_TEST_NOCAPTURE=1 ./tests/run.sh --test costs store_round_trips::`.

use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use paddock_api::state::AppState;
use paddock_authorization::grants;
use paddock_aws::DynamoItemStore;
use paddock_core::identity::app_tokens::{self, AppTokenRequest, Resource};
use paddock_core::identity::personal_tokens::Scope;
use paddock_core::ids::UserId;
use paddock_core::ports::{Clock, ManualClock};
use paddock_tests::counting_items::{Counted, CountingItems, grouped};
use paddock_tests::{Backend, ports, session_body};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// Each request kind's most calls and most sequential steps: a write waits on at most three
/// round trips (a slower lap than the driver's best on four: its rank needs the entry read
/// first), a read on at most two. A submission's first step also reads the events the driver's
/// laps may count for (their league rows and the public events' item), so a lap that counts
/// for open events reads the driver's entries in them, and their counts, beside those on the
/// boards: a new best is three steps with events or without.
const LIMITS: &[(&str, u64, u64)] = &[
    ("POST /v1/auth/register", 3, 3),
    ("POST /v1/auth/login/email", 4, 3),
    ("POST /v1/auth/refresh", 3, 2),
    ("POST /v1/sessions (30 laps)", 4, 3),
    ("POST /v1/leaderboards/submit (new best)", 9, 3),
    ("POST /v1/leaderboards/submit (no improvement)", 11, 4),
    ("POST /v1/leaderboards/submit (two open events)", 14, 4),
    (
        "POST /v1/leaderboards/submit (new best, two open events)",
        12,
        3,
    ),
    ("GET /v1/leaderboards/me", 6, 2),
    ("GET /v1/leaderboards?around=me", 7, 2),
    ("GET /v1/leaderboards (first page)", 3, 1),
    ("GET /boards/{trackId}", 5, 1),
    ("GET /v1/sessions", 2, 1),
    ("GET /v1/feed", 2, 1),
    ("GET /v1/profile/me", 2, 1),
    ("GET /v1/achievements", 3, 1),
    ("GET /v1/sessions (personal access token)", 5, 4),
    ("GET /v1/sessions (an app's token)", 6, 3),
    // The same read as a tool of the MCP server: the caller admitted once, for the tool.
    (
        "MCP tools/call list_my_sessions (personal access token)",
        5,
        4,
    ),
];

/// What each store call is held, as a round trip takes a few milliseconds: long enough that
/// calls made at once are all under way before any answers, even when the machine is busy
/// with other tests and a task waits a while to be polled (at 5 ms, a loaded run once saw
/// the three reads a submission makes at once as two steps).
const LATENCY: Duration = Duration::from_millis(25);

/// What one request cost.
struct Cost {
    what: &'static str,
    counted: Counted,
    steps: Vec<Vec<&'static str>>,
    read_units: f64,
    write_units: f64,
}

/// The routes over a counted store, and what each request cost.
struct Meter {
    router: axum::Router,
    counting: Arc<CountingItems>,
    dynamo: Option<Arc<DynamoItemStore>>,
    clock: Arc<ManualClock>,
    costs: Vec<Cost>,
    /// The routes' state: its ports and keys make an app's grant and token directly.
    state: AppState,
}

impl Meter {
    /// The routes over fresh ports of `backend`, each store call held `latency` (see
    /// [`CountingItems::with_latency`]).
    async fn new(backend: Backend, latency: Duration) -> Self {
        let mut t = ports(backend).await;
        t.settings.leaderboard_cache = Duration::ZERO;
        t.settings.uploads_per_minute = 1_000_000;
        let dynamo = match backend {
            Backend::Aws => {
                let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
                Some(Arc::new(DynamoItemStore::new(
                    client,
                    t.settings.table_prefix.clone(),
                    t.clock.clone(),
                )))
            }
            Backend::Embedded => None,
        };
        let inner: Arc<dyn paddock_core::ports::items::ItemStore> = match &dynamo {
            Some(d) => d.clone(),
            None => t.ports.items.clone(),
        };
        let counting = CountingItems::with_latency(inner, latency);
        let clock = t.clock.clone();
        t.ports.items = counting.clone();
        // As the functions wire it: the auth function starts password hashing.
        let state = AppState::new(t.ports, t.settings).with_identity_providers();
        // The temporary directory of the embedded store lives as long as the test.
        std::mem::forget(t.dir);
        Self {
            router: paddock_api::routes::app_router(state.clone()),
            state,
            counting,
            dynamo,
            clock,
            costs: Vec::new(),
        }
    }

    /// An access token of a fresh grant of `user_id` to the app `client_id`, for `scopes`,
    /// made through the domain (the consent page's forms are another test's).
    async fn app_token(&self, user_id: &str, client_id: &str, scopes: &[Scope]) -> String {
        let user: UserId = user_id.parse().unwrap();
        let app = grants::Approved {
            client_id,
            name: "trips",
        };
        let grant = grants::approve(&self.state.ports, &user, app, scopes)
            .await
            .unwrap();
        let keys = self.state.access_tokens().await.unwrap();
        let request = AppTokenRequest {
            issuer: "https://paddock.example",
            user_id: &user,
            client_id,
            grant_id: &grant.family_id,
            scopes,
            resource: Resource::RestApi,
        };
        app_tokens::issue(&keys, &request, self.state.ports.clock.now()).0
    }

    fn capacity(&self) -> (f64, f64) {
        self.dynamo.as_ref().map_or((0.0, 0.0), |d| {
            let c = d.consumed();
            (c.read_units, c.write_units)
        })
    }

    /// Sends one request through the routes, as API Gateway would hand it to a function,
    /// counting what it cost under `what` (when given).
    async fn call(
        &mut self,
        what: Option<&'static str>,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let body = match body {
            Some(body) => {
                request = request.header("content-type", "application/json");
                Body::from(serde_json::to_vec(&body).unwrap())
            }
            None => Body::empty(),
        };
        // As every client does; an MCP client must accept both.
        request = request.header("accept", "application/json, text/event-stream");
        // A second apart, so the rank order of equal times is the order of submission.
        self.clock.advance(time::Duration::seconds(1));
        let mut request = request.body(body).unwrap();
        request
            .extensions_mut()
            .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 7], 50_000))));
        let (read_before, write_before) = self.capacity();
        let (response, counted, spans) = self
            .counting
            .spans_of(self.router.clone().oneshot(request))
            .await;
        let (read_after, write_after) = self.capacity();
        let response = response.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if let Some(what) = what {
            self.costs.push(Cost {
                what,
                counted,
                steps: grouped(&spans),
                read_units: read_after - read_before,
                write_units: write_after - write_before,
            });
        }
        (status, body)
    }
}

fn thirty_laps() -> Vec<(i64, bool, f64)> {
    (0..30)
        .map(|i| (92_000 + i * 37, i % 7 != 3, 0.8 + (i % 5) as f64 * 0.0371))
        .collect()
}

/// Runs each request kind of [`LIMITS`] once, in an order that gives each its usual state
/// (a driver signed in, with sessions and an entry on the boards).
async fn each_request_kind(m: &mut Meter) {
    let register = json!({"email": "trips@example.com", "password": "correct horse battery", "displayName": "Trip Driver"});
    let (status, body) = m
        .call(
            Some("POST /v1/auth/register"),
            "POST",
            "/v1/auth/register",
            None,
            Some(register),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let user_id = body["data"]["user"]["id"].as_str().unwrap().to_owned();
    let login = json!({"email": "trips@example.com", "password": "correct horse battery"});
    let (status, body) = m
        .call(
            Some("POST /v1/auth/login/email"),
            "POST",
            "/v1/auth/login/email",
            None,
            Some(login),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let refresh = json!({"refreshToken": body["data"]["refreshToken"]});
    let (status, body) = m
        .call(
            Some("POST /v1/auth/refresh"),
            "POST",
            "/v1/auth/refresh",
            None,
            Some(refresh),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let token = body["data"]["accessToken"].as_str().unwrap().to_owned();
    let token = Some(token.as_str());

    // A first upload of the driver's, then the one measured.
    let mut session_id = String::new();
    let mut track_id = String::new();
    for n in 1..=2 {
        let upload = session_body(
            &format!("trips-{n}"),
            &format!("2026-11-0{n}T10:00:00Z"),
            &thirty_laps(),
            500,
        );
        let what = (n == 2).then_some("POST /v1/sessions (30 laps)");
        let (status, body) = m
            .call(what, "POST", "/v1/sessions", token, Some(upload))
            .await;
        assert_eq!(status, 201, "{body}");
        session_id = body["data"]["sessionId"].as_str().unwrap().to_owned();
        track_id = body["data"]["trackId"].as_str().unwrap().to_owned();
    }

    // Another driver on the board first, so the driver's rank counts someone ahead.
    let other = json!({"email": "ahead@example.com", "password": "correct horse battery", "displayName": "Ahead"});
    let (_, body) = m
        .call(None, "POST", "/v1/auth/register", None, Some(other))
        .await;
    let other_token = body["data"]["accessToken"].as_str().unwrap().to_owned();
    let upload = session_body("ahead-1", "2026-11-01T09:00:00Z", &thirty_laps(), 0);
    let (_, body) = m
        .call(
            None,
            "POST",
            "/v1/sessions",
            Some(&other_token),
            Some(upload),
        )
        .await;
    let submit =
        json!({"sessionId": body["data"]["sessionId"], "lapTimeMs": 92_000, "qualityScore": 0.8});
    let (status, body) = m
        .call(
            None,
            "POST",
            "/v1/leaderboards/submit",
            Some(&other_token),
            Some(submit),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let submit = json!({"sessionId": session_id, "lapTimeMs": 92_185, "qualityScore": 0.8});
    let (status, body) = m
        .call(None, "POST", "/v1/leaderboards/submit", token, Some(submit))
        .await;
    assert_eq!(status, 200, "{body}");
    let submit = json!({"sessionId": session_id, "lapTimeMs": 92_000, "qualityScore": 0.8});
    let (status, body) = m
        .call(
            Some("POST /v1/leaderboards/submit (new best)"),
            "POST",
            "/v1/leaderboards/submit",
            token,
            Some(submit),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["improved"], true, "{body}");
    assert_eq!(body["data"]["rank"], 2, "{body}");
    let submit = json!({"sessionId": session_id, "lapTimeMs": 92_185, "qualityScore": 0.8});
    let (status, body) = m
        .call(
            Some("POST /v1/leaderboards/submit (no improvement)"),
            "POST",
            "/v1/leaderboards/submit",
            token,
            Some(submit),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["improved"], false, "{body}");
    assert_eq!(body["data"]["rank"], 2, "{body}");

    let me = format!("/v1/leaderboards/me?trackId={track_id}");
    let (status, body) = m
        .call(Some("GET /v1/leaderboards/me"), "GET", &me, token, None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["rank"], 2, "{body}");
    assert_eq!(body["data"]["totalEntries"], 2, "{body}");
    let around = format!("/v1/leaderboards?trackId={track_id}&around=me");
    let (status, body) = m
        .call(
            Some("GET /v1/leaderboards?around=me"),
            "GET",
            &around,
            token,
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let board = format!("/v1/leaderboards?trackId={track_id}");
    let (status, body) = m
        .call(
            Some("GET /v1/leaderboards (first page)"),
            "GET",
            &board,
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let page = format!("/boards/{track_id}");
    let (status, _) = m
        .call(Some("GET /boards/{trackId}"), "GET", &page, None, None)
        .await;
    assert_eq!(status, 200);
    for (what, path) in [
        ("GET /v1/sessions", "/v1/sessions"),
        ("GET /v1/feed", "/v1/feed"),
        ("GET /v1/profile/me", "/v1/profile/me"),
        ("GET /v1/achievements", "/v1/achievements"),
    ] {
        let (status, body) = m.call(Some(what), "GET", path, token, None).await;
        assert_eq!(status, 200, "{path}: {body}");
    }

    // A personal access token: its grant, its rate limit and its last use.
    let made = json!({"name": "trips", "scopes": ["sessions:read"]});
    let (status, body) = m.call(None, "POST", "/v1/tokens", token, Some(made)).await;
    assert_eq!(status, 201, "{body}");
    let personal = body["data"]["token"].as_str().unwrap().to_owned();
    let (status, body) = m
        .call(
            Some("GET /v1/sessions (personal access token)"),
            "GET",
            "/v1/sessions",
            Some(&personal),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "list_my_sessions", "arguments": {}}});
    let (status, answer) = m
        .call(
            Some("MCP tools/call list_my_sessions (personal access token)"),
            "POST",
            "/mcp",
            Some(&personal),
            Some(call),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["structuredContent"]["data"], body["data"]);

    // An app's token: its grant, and the grant's and the app's rate limits, read at once.
    let registered = json!({"name": "trips", "redirectUris": ["https://bot.example.com/cb"]});
    let (status, body) = m
        .call(None, "POST", "/v1/apps", token, Some(registered))
        .await;
    assert_eq!(status, 201, "{body}");
    let client_id = body["data"]["app"]["clientId"].as_str().unwrap().to_owned();
    let app_token = m
        .app_token(&user_id, &client_id, &[Scope::SessionsRead])
        .await;
    let what = "GET /v1/sessions (an app's token)";
    let (status, body) = m
        .call(Some(what), "GET", "/v1/sessions", Some(&app_token), None)
        .await;
    assert_eq!(status, 200, "{body}");

    // A lap that also counts for two open events of the driver's league (one of them for its
    // car only): the same lap as the best already on the boards, so only the events change.
    let (status, body) = m
        .call(
            None,
            "POST",
            "/v1/leagues",
            token,
            Some(json!({"name": "Trips"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let league = body["data"]["id"].as_str().unwrap().to_owned();
    let now = m.clock.now();
    let window = |t: time::OffsetDateTime| {
        paddock_core::competition_events::time_text(
            i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap(),
        )
    };
    for car in [None, Some("Porsche 992 GT3 R")] {
        let event = json!({"name": "Trips week", "trackId": track_id, "car": car,
            "opensAt": window(now), "closesAt": window(now + time::Duration::hours(1))});
        let path = format!("/v1/leagues/{league}/events");
        let (status, body) = m.call(None, "POST", &path, token, Some(event)).await;
        assert_eq!(status, 201, "{body}");
    }
    let driven = window(m.clock.now());
    let upload = session_body("trips-events", &driven, &thirty_laps(), 0);
    let (status, body) = m
        .call(None, "POST", "/v1/sessions", token, Some(upload))
        .await;
    assert_eq!(status, 201, "{body}");
    let submit =
        json!({"sessionId": body["data"]["sessionId"], "lapTimeMs": 92_000, "qualityScore": 0.8});
    let (status, body) = m
        .call(
            Some("POST /v1/leaderboards/submit (two open events)"),
            "POST",
            "/v1/leaderboards/submit",
            token,
            Some(submit),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["events"].as_array().map(Vec::len),
        Some(2),
        "{body}"
    );
    // A new best on the boards that counts for both: its entries in the events are read
    // beside those on the boards.
    let upload = session_body("trips-events-best", &driven, &[(91_000, true, 0.9)], 0);
    let (status, uploaded) = m
        .call(None, "POST", "/v1/sessions", token, Some(upload))
        .await;
    assert_eq!(status, 201, "{uploaded}");
    let submit = json!({"sessionId": uploaded["data"]["sessionId"], "lapTimeMs": 91_000,
        "qualityScore": 0.8});
    let (status, body) = m
        .call(
            Some("POST /v1/leaderboards/submit (new best, two open events)"),
            "POST",
            "/v1/leaderboards/submit",
            token,
            Some(submit),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["improved"], true, "{body}");
    assert_eq!(
        body["data"]["events"].as_array().map(Vec::len),
        Some(2),
        "{body}"
    );
}

async fn each_request_kind_stays_within_its_round_trips(backend: Backend) {
    let mut m = Meter::new(backend, LATENCY).await;
    each_request_kind(&mut m).await;
    println!(
        "\n{backend:?}\n{:<48} {:>5} {:>5} {:>6} {:>6}  calls by step",
        "request", "calls", "steps", "RRU", "WRU"
    );
    for c in &m.costs {
        println!(
            "{:<48} {:>5} {:>5} {:>6.1} {:>6.1}  {}",
            c.what,
            c.counted.calls,
            c.counted.steps,
            c.read_units,
            c.write_units,
            c.steps
                .iter()
                .map(|step| step.join(" + "))
                .collect::<Vec<_>>()
                .join(" ; ")
        );
    }
    let mut over = Vec::new();
    for &(what, calls, steps) in LIMITS {
        let c = m
            .costs
            .iter()
            .find(|c| c.what == what)
            .unwrap_or_else(|| panic!("{what} was not measured"));
        if c.counted.calls > calls {
            over.push(format!(
                "{what}: {} calls, at most {calls}",
                c.counted.calls
            ));
        }
        if c.counted.steps > steps {
            over.push(format!(
                "{what}: {} steps, at most {steps}",
                c.counted.steps
            ));
        }
    }
    assert!(over.is_empty(), "past the limits:\n{}", over.join("\n"));
}

/// The median of `samples`, in milliseconds.
fn p50(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

/// A round trip to DynamoDB in the same region.
const ROUND_TRIP: Duration = Duration::from_millis(5);

/// How long a submission of a new best and a `/me` take through the routes, over 30 of
/// each after 5 to warm up: as the emulator answers, and with each store call held
/// [`ROUND_TRIP`]. Printed, not judged.
async fn a_submission_and_me_take(backend: Backend) {
    for latency in [Duration::ZERO, ROUND_TRIP] {
        let (submit, me) = medians(backend, latency).await;
        println!(
            "\n{backend:?}, each call held {latency:?}: p50 of a submission (new best) {submit:.2} ms, of /me {me:.2} ms"
        );
    }
}

/// The p50 of a submission of a new best and of a `/me` with each store call held `latency`.
async fn medians(backend: Backend, latency: Duration) -> (f64, f64) {
    let mut m = Meter::new(backend, latency).await;
    let register = json!({"email": "p50@example.com", "password": "correct horse battery", "displayName": "Median Driver"});
    let (_, body) = m
        .call(None, "POST", "/v1/auth/register", None, Some(register))
        .await;
    let token = body["data"]["accessToken"].as_str().unwrap().to_owned();
    let token = Some(token.as_str());
    let laps: Vec<_> = (0..35).map(|i| (120_000 - i * 100, true, 0.9)).collect();
    let upload = session_body("p50-1", "2026-11-01T10:00:00Z", &laps, 0);
    let (status, body) = m
        .call(None, "POST", "/v1/sessions", token, Some(upload))
        .await;
    assert_eq!(status, 201, "{body}");
    let session_id = body["data"]["sessionId"].as_str().unwrap().to_owned();
    let track_id = body["data"]["trackId"].as_str().unwrap().to_owned();
    let me = format!("/v1/leaderboards/me?trackId={track_id}");
    let (mut submits, mut mes) = (Vec::new(), Vec::new());
    for (ms, _, _) in &laps {
        let submit = json!({"sessionId": session_id, "lapTimeMs": ms, "qualityScore": 0.9});
        let started = Instant::now();
        let (status, body) = m
            .call(None, "POST", "/v1/leaderboards/submit", token, Some(submit))
            .await;
        submits.push(started.elapsed());
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"]["improved"], true, "{body}");
        let started = Instant::now();
        let (status, body) = m.call(None, "GET", &me, token, None).await;
        mes.push(started.elapsed());
        assert_eq!(status, 200, "{body}");
    }
    (p50(submits.split_off(5)), p50(mes.split_off(5)))
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [each_request_kind_stays_within_its_round_trips, a_submission_and_me_take],
);
