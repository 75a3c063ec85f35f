//! Faults in the cloud shape: the local server on the AWS adapters, its DynamoDB, S3 and SQS
//! calls through the fault proxy (`paddock_tests::fault_proxy`), and the black-box scenarios
//! as a client that retries a 503 or 504 the way the desktop app does. Under each kind of
//! fault the end state (sessions, board and ranks, feed, achievements, the tables' items)
//! must be the one reached without faults: nothing lost, nothing twice, and no 500.
//!
//! The test command runs a short version; `PADDOCK_FAULT_SOAK=1` runs more drivers and
//! uploads at higher fault rates. Each run prints its figures (requests, answers by class,
//! faults handed out, p50/p99 of the main requests).

use paddock_tests::fault_proxy::{Calls, Counts, Fault, FaultProxy, Rule};
use paddock_tests::{TestApp, require_emulators, session_body, spawn_aws_through, unique};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod functions;
mod retries;
mod wire;
use wire::*;

/// The proxy's generator seed: the same decisions each run.
const SEED: u64 = 39;

/// What a scenario does, by size.
#[derive(Debug, Clone, Copy)]
struct Size {
    /// Drivers besides the one who fills the upload limit.
    drivers: usize,
    /// Sessions each of them uploads and submits.
    sessions: usize,
    /// Feed posts each driver writes.
    posts: usize,
}

const SHORT: Size = Size {
    drivers: 2,
    sessions: 2,
    posts: 1,
};

const SOAK: Size = Size {
    drivers: 6,
    sessions: 5,
    posts: 3,
};

/// The uploads a driver may make a minute (the service's default).
const UPLOADS_PER_MINUTE: usize = 30;

/// What the client saw, over every attempt of every request.
#[derive(Debug, Default)]
struct Seen {
    /// Requests made (each retried until it got a final answer).
    requests: u64,
    /// Attempts answered 2xx.
    ok: u64,
    /// Attempts answered 503 or 504.
    retryable: u64,
    /// Requests that got a 503 or 504 and then succeeded when retried.
    retried_ok: u64,
    /// Attempts answered 500.
    internal: u64,
    /// What each 500 answered (request label, path, body).
    internal_answers: Vec<(String, String, String)>,
    /// Final answers that were neither 2xx nor expected (status, request label, body).
    unexpected: Vec<(u16, String, String)>,
    /// Time to the final answer of each request, by label.
    latencies: BTreeMap<&'static str, Vec<Duration>>,
}

/// A client that retries a 5xx answer (after `Retry-After`, at most 2 s) as the desktop app
/// does, up to ten attempts.
struct Client<'a> {
    app: &'a TestApp,
    seen: Mutex<Seen>,
}

impl<'a> Client<'a> {
    fn new(app: &'a TestApp) -> Self {
        Self {
            app,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// `method` on `path` with a JSON body, if any; answers the final status and body.
    async fn send(
        &self,
        label: &'static str,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let payload = body.map(|b| ("application/json", b.to_string().into_bytes()));
        self.send_bytes(label, method, path, token, payload, None)
            .await
    }

    /// `method` on `path` with a body of the given content type, if any, and the same
    /// `Idempotency-Key` on every attempt, if any.
    async fn send_bytes(
        &self,
        label: &'static str,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<(&'static str, Vec<u8>)>,
        key: Option<&str>,
    ) -> (u16, Value) {
        let started = Instant::now();
        let mut retried = false;
        for attempt in 1..=10 {
            let mut request = self
                .app
                .client
                .request(method.clone(), format!("{}{path}", self.app.address));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            if let Some(key) = key {
                request = request.header("idempotency-key", key);
            }
            if let Some((content_type, bytes)) = &body {
                request = request
                    .header("content-type", *content_type)
                    .body(bytes.clone());
            }
            let response = request.send().await.expect("the local server answers");
            let status = response.status().as_u16();
            let wait = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(Duration::from_millis(200), |s| {
                    Duration::from_secs(s).min(Duration::from_secs(2))
                });
            let text = response.text().await.unwrap_or_default();
            let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let retry = matches!(status, 500 | 503 | 504) && attempt < 10;
            {
                let mut seen = self.seen.lock().unwrap();
                match status {
                    200..=299 => seen.ok += 1,
                    503 | 504 => seen.retryable += 1,
                    500 => {
                        seen.internal += 1;
                        seen.internal_answers.push((
                            label.to_owned(),
                            path.to_owned(),
                            text.clone(),
                        ));
                    }
                    _ => {}
                }
                if !retry {
                    seen.requests += 1;
                    if retried && (200..300).contains(&status) {
                        seen.retried_ok += 1;
                    }
                    seen.latencies
                        .entry(label)
                        .or_default()
                        .push(started.elapsed());
                    return (status, value);
                }
            }
            retried = true;
            tokio::time::sleep(wait).await;
        }
        unreachable!("the last attempt returns")
    }

    async fn post(
        &self,
        label: &'static str,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        self.send(label, reqwest::Method::POST, path, token, Some(body))
            .await
    }

    /// A POST of a JSON body under an `Idempotency-Key`, as the desktop app sends its posts.
    async fn post_keyed(
        &self,
        label: &'static str,
        path: &str,
        token: &str,
        key: &str,
        body: &Value,
    ) -> (u16, Value) {
        let payload = ("application/json", body.to_string().into_bytes());
        let method = reqwest::Method::POST;
        self.send_bytes(label, method, path, Some(token), Some(payload), Some(key))
            .await
    }

    /// A share pack under an `Idempotency-Key`.
    async fn pack_keyed(&self, token: &str, key: &str, name: &str, zip: Vec<u8>) -> (u16, Value) {
        let path = format!("/v1/sharepacks?name={name}");
        let payload = Some(("application/zip", zip));
        let method = reqwest::Method::POST;
        self.send_bytes("share pack", method, &path, Some(token), payload, Some(key))
            .await
    }

    async fn get(&self, label: &'static str, path: &str, token: &str) -> (u16, Value) {
        self.send(label, reqwest::Method::GET, path, Some(token), None)
            .await
    }

    /// Notes a final answer the scenario did not expect.
    fn unexpected(&self, status: u16, what: &str, body: &Value) {
        self.seen
            .lock()
            .unwrap()
            .unexpected
            .push((status, what.to_owned(), body.to_string()));
    }

    /// Expects one of `statuses`; notes anything else.
    fn expect(&self, what: &str, (status, body): &(u16, Value), statuses: &[u16]) -> bool {
        let ok = statuses.contains(status);
        if !ok {
            self.unexpected(*status, what, body);
        }
        ok
    }
}

/// A driver of the scenario.
struct Driver {
    email: String,
    name: String,
    token: String,
}

/// Registers, signs in again and rotates the refresh token.
async fn sign_in(client: &Client<'_>, name: &str) -> Option<Driver> {
    let email = format!("{}@example.com", unique("driver"));
    let password = "correct horse battery";
    let body = json!({"email": email, "password": password, "displayName": name});
    let answer = client
        .post("register", "/v1/auth/register", None, &body)
        .await;
    // A retried registration whose first attempt created the account is 409: noted.
    if !client.expect("register", &answer, &[201]) {
        return None;
    }
    let body = json!({"email": email, "password": password});
    let answer = client
        .post("login", "/v1/auth/login/email", None, &body)
        .await;
    if !client.expect("login", &answer, &[200]) {
        return None;
    }
    let refresh = answer.1["data"]["refreshToken"].as_str()?.to_owned();
    let body = json!({"refreshToken": refresh});
    let answer = client
        .post("refresh", "/v1/auth/refresh", None, &body)
        .await;
    if !client.expect("refresh", &answer, &[200]) {
        return None;
    }
    let data = &answer.1["data"];
    data["refreshToken"].as_str()?;
    Some(Driver {
        email,
        name: name.to_owned(),
        token: data["accessToken"].as_str()?.to_owned(),
    })
}

/// Uploads one session of one lap of `ms` (the client session id names it); answers the
/// session id.
async fn upload(client: &Client<'_>, driver: &Driver, csid: &str, ms: i64) -> Option<String> {
    let body = session_body(csid, "2026-11-01T10:00:00Z", &[(ms, true, 0.95)], 0);
    let answer = client
        .post("upload", "/v1/sessions", Some(&driver.token), &body)
        .await;
    // 200: the client's retry found the upload already stored (the same session).
    if !client.expect("upload", &answer, &[201, 200]) {
        return None;
    }
    Some(answer.1["data"]["sessionId"].as_str()?.to_owned())
}

/// The scenario: sign-in and refresh, uploads up to the limit, submissions, feed posts and
/// share packs (each under its `Idempotency-Key`), board reads, and the last driver deleting
/// the account. Answers the drivers (in order) and the track of their board.
async fn scenario(client: &Client<'_>, size: Size) -> (Vec<Driver>, String) {
    let mut drivers = Vec::new();
    for i in 0..=size.drivers + 1 {
        if let Some(d) = sign_in(client, &format!("Driver {i}")).await {
            drivers.push(d);
        }
    }
    assert_eq!(
        drivers.len(),
        size.drivers + 2,
        "every driver signed in: {:?}",
        client.seen.lock().unwrap().unexpected
    );

    // The first driver fills the minute's uploads, sending one of them twice (as a client
    // does whose answer was lost): exactly 30 admitted, the 31st refused.
    let filler = &drivers[0];
    let mut first_session = None;
    for n in 0..UPLOADS_PER_MINUTE {
        let id = upload(client, filler, &format!("fill-{n}"), 120_000 + n as i64).await;
        first_session = first_session.or(id);
        if n == 3 {
            upload(client, filler, "fill-3", 120_003).await;
        }
    }
    let over = session_body(
        "fill-over",
        "2026-11-01T10:00:00Z",
        &[(119_000, true, 0.9)],
        0,
    );
    let answer = client
        .post("upload", "/v1/sessions", Some(&filler.token), &over)
        .await;
    client.expect("the 31st upload", &answer, &[429]);

    // Every other driver uploads and submits each session's lap.
    let submit = |driver: &Driver, session: String, ms: i64| {
        let body = json!({"SessionId": session, "LapTimeMs": ms, "QualityScore": 0.95});
        let token = driver.token.clone();
        async move {
            client
                .post("submit", "/v1/leaderboards/submit", Some(&token), &body)
                .await
        }
    };
    if let Some(session) = first_session {
        let answer = submit(filler, session, 120_000).await;
        client.expect("submit", &answer, &[200]);
    }
    for (i, driver) in drivers.iter().enumerate().skip(1) {
        for s in 0..size.sessions {
            let ms = 110_000 + (i * 1_000) as i64 - (s * 10) as i64;
            let Some(session) = upload(client, driver, &format!("d{i}-{s}"), ms).await else {
                continue;
            };
            let answer = submit(driver, session, ms).await;
            client.expect("submit", &answer, &[200]);
        }
        for p in 0..size.posts {
            let body = json!({"title": format!("{} post {p}", driver.name)});
            let key = format!("post-{i}-{p}");
            let answer = client
                .post_keyed("feed post", "/v1/feed", &driver.token, &key, &body)
                .await;
            client.expect("feed post", &answer, &[201]);
        }
        let name = format!("pack-{i}");
        let answer = client
            .pack_keyed(&driver.token, &name, &name, a_pack(i as u64))
            .await;
        client.expect("share pack", &answer, &[201]);
    }
    let (_, sessions) = client
        .get("read", "/v1/sessions?limit=1", &drivers[0].token)
        .await;
    let track = sessions["data"]["items"][0]["trackId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for driver in &drivers {
        let path = format!("/v1/leaderboards?trackId={track}&limit=20");
        let answer = client.get("board", &path, &driver.token).await;
        client.expect("board", &answer, &[200]);
        let path = format!("/v1/leaderboards/me?trackId={track}");
        let answer = client.get("board", &path, &driver.token).await;
        client.expect("standing", &answer, &[200]);
    }
    if let Some(leaving) = drivers.last() {
        // Its events handled first, so that what the consumers wrote for it is the same in
        // every run (an event handled after the deletion writes nothing).
        wait_for_own_work(client, leaving, size.sessions).await;
        let answer = client
            .send(
                "delete",
                reqwest::Method::DELETE,
                "/v1/profile/me",
                Some(&leaving.token),
                None,
            )
            .await;
        client.expect("account deletion", &answer, &[202]);
    }
    (drivers, track)
}

/// Waits until `driver`'s feed and achievements show its `sessions` uploads and hold still.
async fn wait_for_own_work(client: &Client<'_>, driver: &Driver, sessions: usize) {
    let mut last = Value::Null;
    for _ in 0..60 {
        let (_, feed) = client
            .get("read", "/v1/feed?limit=100", &driver.token)
            .await;
        let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
        let counted = mine["data"]["items"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["id"] == "sessions-100"))
            .and_then(|a| a["progress"]["current"].as_u64());
        let now = json!([feed["data"]["items"], mine["data"]["items"]]);
        if counted == Some(sessions as u64) && now == last {
            return;
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
}

/// Each driver's export, as the service hands it out (streamed, or stored and offered by a
/// presigned URL): whether it is complete, and how many sessions, feed entries and packs it
/// holds; a deleted account's answer status.
async fn exports(client: &Client<'_>, drivers: &[Driver]) -> BTreeMap<String, Value> {
    let mut state = BTreeMap::new();
    for (i, driver) in drivers.iter().enumerate() {
        let (status, body) = client
            .get("export", "/v1/profile/me/export", &driver.token)
            .await;
        let document = match status {
            200 => Some(body),
            302 => fetch_export(client, &driver.token).await,
            _ => None,
        };
        let count = |d: &Value, kind: &str| d[kind].as_array().map(Vec::len);
        let summary = match document {
            Some(d) => json!([
                d["complete"],
                count(&d, "sessions"),
                count(&d, "feed"),
                count(&d, "sharePacks")
            ]),
            None => json!(status),
        };
        state.insert(format!("driver {i} export"), summary);
    }
    state
}

/// A stored export through its presigned URL (the request for it is sent again, as a client
/// would, while the URL's answer is a fault's).
async fn fetch_export(client: &Client<'_>, token: &str) -> Option<Value> {
    for _ in 0..5 {
        let response = client
            .app
            .client
            .get(format!("{}/v1/profile/me/export", client.app.address))
            .bearer_auth(token)
            .send()
            .await
            .ok()?;
        let location = response
            .headers()
            .get("location")?
            .to_str()
            .ok()?
            .to_owned();
        if let Ok(document) = reqwest::get(location).await
            && document.status().is_success()
            && let Ok(value) = document.json::<Value>().await
        {
            return Some(value);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    None
}

/// What a driver and an operator see after the scenario, with the run's own ids replaced by
/// the drivers' order, so that two runs compare.
async fn end_state(
    client: &Client<'_>,
    app: &TestApp,
    drivers: &[Driver],
    track: &str,
) -> BTreeMap<String, Value> {
    let mut state = BTreeMap::new();
    let mut ids = BTreeMap::new();
    for (i, driver) in drivers.iter().enumerate() {
        let token = &driver.token;
        let (_, me) = client.get("read", "/v1/profile", token).await;
        if let Some(id) = me["data"]["id"].as_str() {
            ids.insert(id.to_owned(), format!("driver {i}"));
        }
        let (_, sessions) = client.get("read", "/v1/sessions?limit=100", token).await;
        let mut laps: Vec<i64> = sessions["data"]["items"]
            .as_array()
            .map(|s| s.iter().filter_map(|s| s["bestLapMs"].as_i64()).collect())
            .unwrap_or_default();
        laps.sort_unstable();
        state.insert(format!("driver {i} sessions"), json!(laps));
        let (status, standing) = client
            .get(
                "board",
                &format!("/v1/leaderboards/me?trackId={track}"),
                token,
            )
            .await;
        state.insert(
            format!("driver {i} standing"),
            json!([
                status,
                standing["data"]["rank"],
                standing["data"]["entry"]["lapTimeMs"],
                standing["data"]["totalEntries"]
            ]),
        );
        let (_, feed) = client.get("read", "/v1/feed?limit=100", token).await;
        let mut entries: Vec<String> = feed["data"]["items"]
            .as_array()
            .map(|f| {
                f.iter()
                    .map(|e| format!("{} | {} | {}", e["kind"], e["title"], e["subtitle"]))
                    .collect()
            })
            .unwrap_or_default();
        entries.sort();
        state.insert(format!("driver {i} feed"), json!(entries));
        let (_, mine) = client.get("read", "/v1/achievements", token).await;
        let mut unlocked: Vec<String> = mine["data"]["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|a| a["unlockedAt"].is_string())
                    .filter_map(|a| a["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        unlocked.sort();
        state.insert(format!("driver {i} achievements"), json!(unlocked));
        let (status, packs) = client.get("read", "/v1/sharepacks?limit=100", token).await;
        let mut held: Vec<String> = packs["data"]["items"]
            .as_array()
            .map(|p| {
                p.iter()
                    .map(|p| format!("{} | {} | {}", p["name"], p["sizeBytes"], p["sha256"]))
                    .collect()
            })
            .unwrap_or_default();
        held.sort();
        state.insert(format!("driver {i} packs"), json!([status, held]));
    }
    // The board as stored: `around=me` is never served from a function's page cache, which
    // may hold a page from before the last driver's deletion for its lifetime (5 s), longer
    // than the second between two reads of the end state.
    let (_, board) = client
        .get(
            "board",
            &format!("/v1/leaderboards?trackId={track}&limit=100&around=me"),
            &drivers[0].token,
        )
        .await;
    let rows: Vec<Value> = board["data"]["entries"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|e| {
                    let who = e["userId"]
                        .as_str()
                        .and_then(|u| ids.get(u))
                        .cloned()
                        .unwrap_or_default();
                    json!([e["rank"], who, e["lapTimeMs"]])
                })
                .collect()
        })
        .unwrap_or_default();
    state.insert("board".into(), json!(rows));
    state.insert("board total".into(), board["data"]["totalEntries"].clone());
    // Every item of every table, counted by table and by the shape of its key (the run's ids
    // taken out).
    for (shape, n) in item_shapes(app).await {
        state.insert(format!("items {shape}"), json!(n));
    }
    state
}

/// Items counted by table and key shape: each key with its ids (uuids, numbers, tokens)
/// replaced by `*`.
async fn item_shapes(app: &TestApp) -> BTreeMap<String, u64> {
    let mut shapes = BTreeMap::new();
    for (table, item) in paddock_tests::every_item(&app.settings).await {
        let part = |name: &str| {
            item.get(name)
                .and_then(Value::as_str)
                .map(|k| {
                    k.split('#')
                        .map(|seg| {
                            if seg.len() > 12 || seg.chars().any(|c| c.is_ascii_digit()) {
                                "*"
                            } else {
                                seg
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("#")
                })
                .unwrap_or_default()
        };
        let shape = format!("{table:?} {} / {}", part("pk"), part("sk"));
        *shapes.entry(shape).or_default() += 1;
    }
    shapes
}

/// Waits until the background work (feed, achievements, track maps) has settled: the end
/// state read twice a second apart is the same, no event waits in the outbox, and every queue
/// is empty (none waiting, none in flight). Answers it. The queues are read from the emulator
/// itself, past the proxy: an event whose handling failed is out of sight for the queues'
/// visibility timeout (2 s here) before it is delivered again, longer than the second between
/// two reads, so an unchanged state alone is not a settled one.
async fn settled(
    client: &Client<'_>,
    app: &TestApp,
    drivers: &[Driver],
    track: &str,
) -> BTreeMap<String, Value> {
    let sqs = aws_sdk_sqs::Client::new(&paddock_aws::sdk_config().await);
    let mut last = end_state(client, app, drivers, track).await;
    for _ in 0..SETTLE_SECS {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = end_state(client, app, drivers, track).await;
        let outbox_empty = !now.keys().any(|k| k.starts_with("items Outbox"));
        if now == last && outbox_empty && queues_empty(&sqs, app).await {
            let mut now = now;
            now.extend(dead_letters(&sqs, app).await);
            return now;
        }
        last = now;
    }
    // Still moving: said as such, rather than as whatever the work had not reached yet.
    last.insert("not settled".into(), json!(SETTLE_SECS));
    last.extend(dead_letters(&sqs, app).await);
    last
}

/// How long, at most, the background work is given to settle. An event whose calls hung past
/// its retries comes back after its retry delay (up to a minute), then the visibility of the
/// wire runs (30 s) if its handling hangs again.
const SETTLE_SECS: u64 = 180;

/// Messages in each dead-letter queue of `app`, by queue (an event given up on is lost to
/// the end state until an operator redrives it).
async fn dead_letters(sqs: &aws_sdk_sqs::Client, app: &TestApp) -> BTreeMap<String, Value> {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let mut held = BTreeMap::new();
    for (queue, urls) in &app.settings.queue_urls {
        let Some(url) = &urls.dead_letter_url else {
            continue;
        };
        let n = sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .send()
            .await
            .ok()
            .and_then(|a| {
                a.attributes()
                    .and_then(|a| a.get(&A::ApproximateNumberOfMessages))
                    .and_then(|n| n.parse::<u64>().ok())
            });
        held.insert(format!("dead letters {queue}"), json!(n));
    }
    held
}

/// Whether every queue of `app` holds no message, visible, in flight or delayed.
async fn queues_empty(sqs: &aws_sdk_sqs::Client, app: &TestApp) -> bool {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    for urls in app.settings.queue_urls.values() {
        let Some(url) = &urls.url else { continue };
        let Ok(answer) = sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(A::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
        else {
            return false;
        };
        let held = answer
            .attributes()
            .is_some_and(|a| a.values().any(|n| n.parse::<u64>().map_or(true, |n| n > 0)));
        if held {
            return false;
        }
    }
    true
}

/// One run's figures.
struct Run {
    name: &'static str,
    seen: Seen,
    proxy: Counts,
    differences: Vec<String>,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

impl Run {
    fn print(&self) {
        let s = &self.seen;
        println!(
            "{:<28} requests {:>4}  2xx {:>4}  503/504 {:>3} (retried to success {:>3})  500 {:>2}  \
             unexpected {:>2}  proxy calls {:>5}  faults {:?}  events delivered {} (again {})  \
             end-state differences {}",
            self.name,
            s.requests,
            s.ok,
            s.retryable,
            s.retried_ok,
            s.internal,
            s.unexpected.len(),
            self.proxy.calls,
            self.proxy.faults,
            self.proxy.deliveries,
            self.proxy.redeliveries,
            self.differences.len(),
        );
        for (label, times) in &s.latencies {
            if matches!(*label, "upload" | "submit" | "board") {
                let mut times = times.clone();
                times.sort_unstable();
                println!(
                    "{:<28}   {label:<7} n {:>4}  p50 {:>7.1?}  p99 {:>7.1?}",
                    "",
                    times.len(),
                    percentile(&times, 0.5),
                    percentile(&times, 0.99)
                );
            }
        }
        for d in &self.differences {
            println!("{:<28}   differs: {d}", "");
        }
        for (status, what, body) in &s.unexpected {
            println!("{:<28}   unexpected {status} on {what}: {body}", "");
        }
    }
}

/// A small share pack, different for each `n`.
fn a_pack(n: u64) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("setup/spa.json", zip::write::SimpleFileOptions::default())
        .expect("a zip entry");
    zip.write_all(format!("{{\"wing\": {n}}}").as_bytes())
        .expect("zip bytes");
    zip.finish().expect("a zip").into_inner()
}
