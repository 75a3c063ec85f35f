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
    let (_, board) = client
        .get(
            "board",
            &format!("/v1/leaderboards?trackId={track}&limit=100"),
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
    for _ in 0..60 {
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
    last.extend(dead_letters(&sqs, app).await);
    last
}

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

/// Runs the scenario on a fresh server and fresh tables, with `rules` set once the resources
/// exist; compares the end state with `baseline` when given.
async fn run(
    name: &'static str,
    size: Size,
    rules: Vec<Rule>,
    baseline: Option<&BTreeMap<String, Value>>,
) -> (Run, BTreeMap<String, Value>) {
    run_on(Via::LocalServer, name, size, rules, baseline).await
}

/// What answers the scenario's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// The local server on the AWS adapters.
    LocalServer,
    /// The Lambda functions behind the local API, each a process of its own.
    Functions,
}

async fn run_on(
    via: Via,
    name: &'static str,
    size: Size,
    rules: Vec<Rule>,
    baseline: Option<&BTreeMap<String, Value>>,
) -> (Run, BTreeMap<String, Value>) {
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let app = match via {
        Via::LocalServer => {
            let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
            let mut t = paddock_tests::aws_ports_through(sdk).await;
            // As in the template (180 s, past a function's timeout), a message stays hidden
            // longer than a hung call: with the tests' 2 s, a call hanging 4 s has its event
            // delivered again beside it, and each such delivery counts toward the dead-letter
            // queue. A failed event still comes back after its retry delay, not this.
            t.settings.visibility = Duration::from_secs(30);
            paddock_tests::spawn_with(t.settings, t.ports, t.dir).await
        }
        Via::Functions => {
            // The functions' DynamoDB, S3 and SQS calls go through the proxy; the local API's
            // own deliveries (stream, queues) go to the emulators.
            let url = proxy.url();
            paddock_tests::spawn_functions_with(&[
                ("AWS_ENDPOINT_URL_DYNAMODB", &url),
                ("AWS_ENDPOINT_URL_S3", &url),
                ("AWS_ENDPOINT_URL_SQS", &url),
            ])
            .await
        }
    };
    proxy.set_rules(rules);
    let client = Client::new(&app);
    let (drivers, track) = scenario(&client, size).await;
    // Read by a client of its own, so that the figures are the scenario's; the faults go on
    // while the background work settles.
    let reader = Client::new(&app);
    let mut state = settled(&reader, &app, &drivers, &track).await;
    state.extend(exports(&reader, &drivers).await);
    proxy.set_rules(Vec::new());
    let reads = reader.seen.into_inner().unwrap();
    assert!(
        reads.unexpected.is_empty(),
        "{name}: {:?}",
        reads.unexpected
    );
    assert_eq!(
        reads.internal, 0,
        "{name}: reads answered 500: {:?}",
        reads.internal_answers
    );
    let counts = proxy.counts();
    let differences = match baseline {
        Some(base) => base
            .keys()
            .chain(state.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| base.get(*k) != state.get(*k))
            .map(|k| {
                format!(
                    "{k}: without faults {}, here {}",
                    base.get(k).unwrap_or(&Value::Null),
                    state.get(k).unwrap_or(&Value::Null)
                )
            })
            .collect(),
        None => Vec::new(),
    };
    let seen = client.seen.into_inner().unwrap();
    (
        Run {
            name,
            seen,
            proxy: counts,
            differences,
        },
        state,
    )
}

/// The fault kinds and their rates; the soak's rates are higher.
fn fault_kinds(soak: bool) -> Vec<(&'static str, Vec<Rule>)> {
    let k = if soak { 2.0 } else { 1.0 };
    let mut kinds = vec![
        (
            if soak {
                "throttled 10%"
            } else {
                "throttled 5%"
            },
            vec![Rule::rate(Calls::All, 0.05 * k, Fault::Throttle)],
        ),
        (
            if soak {
                "internal errors 4%"
            } else {
                "internal errors 2%"
            },
            vec![Rule::rate(Calls::All, 0.02 * k, Fault::InternalError)],
        ),
        (
            if soak {
                "write answers lost 10%"
            } else {
                "write answers lost 1%"
            },
            vec![Rule::rate(
                Calls::Writes,
                if soak { 0.10 } else { 0.01 },
                Fault::LoseAnswer,
            )],
        ),
        (
            if soak {
                "connections reset 2%"
            } else {
                "connections reset 1%"
            },
            vec![Rule::rate(Calls::All, 0.01 * k, Fault::Reset)],
        ),
        (
            "writes lost past retries",
            // Four answers in a row lost: the SDK gives up, the request answers 503 although
            // its write happened, and the client sends it again.
            [25, 90, 160, 230, 300]
                .into_iter()
                .map(|from| Rule::run(Calls::Writes, from, 4, Fault::LoseAnswer))
                .collect(),
        ),
        (
            "calls hang past retries",
            vec![
                Rule::run(Calls::Writes, 40, 4, Fault::Delay(Duration::from_secs(4))),
                Rule::run(Calls::All, 400, 4, Fault::Delay(Duration::from_secs(4))),
            ],
        ),
        (
            "all of them at once",
            vec![
                Rule::rate(Calls::Writes, 0.01 * k, Fault::LoseAnswer),
                Rule::rate(Calls::All, 0.05 * k, Fault::Throttle),
                Rule::rate(Calls::All, 0.02 * k, Fault::InternalError),
                Rule::rate(Calls::All, 0.01 * k, Fault::Reset),
            ],
        ),
    ];
    if soak {
        kinds.push((
            "two calls hang 4 s",
            vec![
                Rule::nth(Calls::Writes, 20, Fault::Delay(Duration::from_secs(4))),
                Rule::nth(Calls::All, 150, Fault::Delay(Duration::from_secs(4))),
            ],
        ));
    }
    kinds
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_on_the_wire_lose_and_duplicate_nothing() {
    require_emulators();
    paddock_tests::tls_provider();
    let soak = std::env::var_os("PADDOCK_FAULT_SOAK").is_some();
    let size = if soak { SOAK } else { SHORT };
    let (none, baseline) = run("no faults", size, Vec::new(), None).await;
    none.print();
    let mut runs = vec![none];
    // `PADDOCK_FAULT_ONLY` names the one fault kind to run (after the run without faults).
    let only = std::env::var("PADDOCK_FAULT_ONLY").ok();
    for (name, rules) in fault_kinds(soak) {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let (r, _) = run(name, size, rules, Some(&baseline)).await;
        r.print();
        runs.push(r);
    }
    for r in &runs {
        assert_eq!(
            r.seen.internal, 0,
            "{}: no 500: {:?}",
            r.name, r.seen.internal_answers
        );
        assert!(
            r.seen.unexpected.is_empty(),
            "{}: {:?}",
            r.name,
            r.seen.unexpected
        );
        assert!(r.differences.is_empty(), "{}: {:?}", r.name, r.differences);
    }
    // Faults were handed out where they were asked for.
    for r in &runs[1..] {
        assert!(
            r.proxy.faults_total() > 0,
            "{}: no fault handed out",
            r.name
        );
    }
}

/// The upload limit counts an upload once however its writes are answered: a third of the
/// limit log's write answers are lost (the SDK sends the write again and finds the log
/// changed), and the client sends five uploads twice. Exactly 30 are admitted.
#[tokio::test(flavor = "multi_thread")]
async fn the_upload_limit_counts_each_upload_once_when_answers_are_lost() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    proxy.set_rules(vec![Rule::rate(
        Calls::WritesContaining("RL#upload#".into()),
        0.3,
        Fault::LoseAnswer,
    )]);
    let client = Client::new(&app);
    let driver = sign_in(&client, "Uploader").await.expect("signed in");
    for n in 0..UPLOADS_PER_MINUTE {
        let id = upload(&client, &driver, &format!("u-{n}"), 100_000 + n as i64).await;
        assert!(
            id.is_some(),
            "upload {n}: {:?}",
            client.seen.lock().unwrap().unexpected
        );
        if n % 6 == 0 {
            let again = upload(&client, &driver, &format!("u-{n}"), 100_000 + n as i64).await;
            assert_eq!(again, id, "the same session");
        }
    }
    let over = session_body("u-over", "2026-11-01T10:00:00Z", &[(99_000, true, 0.9)], 0);
    let (status, body) = client
        .post("upload", "/v1/sessions", Some(&driver.token), &over)
        .await;
    assert_eq!(status, 429, "{body}");
    let lost = proxy
        .counts()
        .faults
        .get("lose_answer")
        .copied()
        .unwrap_or(0);
    println!("limit log writes whose answer was lost: {lost}");
    assert!(lost >= 5, "answers were lost ({lost})");
    assert_eq!(client.seen.lock().unwrap().internal, 0);
}

/// DynamoDB's writes, for faults aimed at a request's own writes.
fn dynamodb_writes() -> Calls {
    Calls::Operations(
        [
            "PutItem",
            "UpdateItem",
            "DeleteItem",
            "BatchWriteItem",
            "TransactWriteItems",
        ]
        .map(str::to_owned)
        .to_vec(),
    )
}

/// The request kinds whose every write is lost past the SDK's retries in turn.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Register,
    Refresh,
    Upload,
    Submit,
    FeedPost,
    ProfileChange,
    SharePack,
    DeleteAccount,
}

/// For each request kind and each of its DynamoDB writes in turn, the answer of that write is
/// lost (the write was applied and the SDK sends it again), then the answers of that write
/// and of the SDK's three retries (the request answers 503 or 504 and the client sends it
/// again): the end state must be that of one request each time.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_whose_write_outlasts_the_retries_is_applied_once() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    let client = Client::new(&app);
    let mut findings = Vec::new();
    let mut figures = Vec::new();
    // One answer lost (the SDK's retry meets the applied write), then four in a row (the SDK
    // gives up and the client sends the request again).
    for lost_in_a_row in [1, 4] {
        for kind in [
            Kind::Upload,
            Kind::Submit,
            Kind::FeedPost,
            Kind::Refresh,
            Kind::Register,
            Kind::ProfileChange,
            Kind::SharePack,
            Kind::DeleteAccount,
        ] {
            let driver = sign_in(&client, "Writer").await.expect("signed in");
            let mut posts = 0;
            let mut lost_runs = 0;
            for k in 1..=12u64 {
                // What the request needs, made without faults.
                let csid = format!("{kind:?}-{k}");
                let session = match kind {
                    Kind::Submit => upload(&client, &driver, &csid, 100_000 - k as i64).await,
                    _ => None,
                };
                let refresh = match kind {
                    Kind::Refresh => {
                        let email = &driver.email;
                        let body = json!({"email": email, "password": "correct horse battery"});
                        let (_, res) = client
                            .post("login", "/v1/auth/login/email", None, &body)
                            .await;
                        res["data"]["refreshToken"].as_str().map(str::to_owned)
                    }
                    _ => None,
                };
                let before = client.seen.lock().unwrap().retryable;
                proxy.reset_counts();
                proxy.set_rules(vec![Rule::run(
                    dynamodb_writes(),
                    k,
                    lost_in_a_row,
                    Fault::LoseAnswer,
                )]);
                let (status, body) = match kind {
                    Kind::Register => {
                        let body = json!({"email": format!("{}@example.com", unique("reg")),
                            "password": "correct horse battery", "displayName": "Again"});
                        client
                            .post("register", "/v1/auth/register", None, &body)
                            .await
                    }
                    Kind::Refresh => {
                        let body = json!({"refreshToken": refresh});
                        client
                            .post("refresh", "/v1/auth/refresh", None, &body)
                            .await
                    }
                    Kind::Upload => {
                        let body =
                            session_body(&csid, "2026-11-01T10:00:00Z", &[(99_000, true, 0.9)], 0);
                        client
                            .post("upload", "/v1/sessions", Some(&driver.token), &body)
                            .await
                    }
                    Kind::Submit => {
                        let body = json!({"SessionId": session, "LapTimeMs": 100_000 - k as i64,
                            "QualityScore": 0.95});
                        client
                            .post(
                                "submit",
                                "/v1/leaderboards/submit",
                                Some(&driver.token),
                                &body,
                            )
                            .await
                    }
                    Kind::ProfileChange => {
                        let body = json!({"displayName": format!("Renamed {k}")});
                        client
                            .send(
                                "profile",
                                reqwest::Method::PATCH,
                                "/v1/profile",
                                Some(&driver.token),
                                Some(&body),
                            )
                            .await
                    }
                    Kind::SharePack => {
                        posts += 1;
                        client
                            .send_bytes(
                                "share pack",
                                reqwest::Method::POST,
                                &format!("/v1/sharepacks?name=pack-{k}"),
                                Some(&driver.token),
                                Some(("application/zip", a_pack(k))),
                                None,
                            )
                            .await
                    }
                    Kind::DeleteAccount => {
                        // A driver of its own each time: the deletion ends the account.
                        proxy.set_rules(Vec::new());
                        let gone = sign_in(&client, "Leaving").await.expect("signed in");
                        proxy.reset_counts();
                        proxy.set_rules(vec![Rule::run(
                            dynamodb_writes(),
                            k,
                            lost_in_a_row,
                            Fault::LoseAnswer,
                        )]);
                        let answer = client
                            .send(
                                "delete",
                                reqwest::Method::DELETE,
                                "/v1/profile/me",
                                Some(&gone.token),
                                None,
                            )
                            .await;
                        let (after, _) = client.get("read", "/v1/profile", &gone.token).await;
                        if after != 401 {
                            findings.push(format!(
                                "DeleteAccount, write {k}: the account still answers {after}"
                            ));
                        }
                        answer
                    }
                    Kind::FeedPost => {
                        posts += 1;
                        let body = json!({"title": format!("post {k}")});
                        client
                            .post("feed post", "/v1/feed", Some(&driver.token), &body)
                            .await
                    }
                };
                proxy.set_rules(Vec::new());
                let lost = proxy.counts().faults_total();
                let answered_503 = client.seen.lock().unwrap().retryable - before;
                if lost > 0 {
                    lost_runs += 1;
                }
                let what = format!("{kind:?}, write {k}, {lost_in_a_row} answers lost");
                if !(200..300).contains(&status) {
                    findings.push(format!("{what}: final answer {status} {body}"));
                }
                // The end state of one request.
                match kind {
                    Kind::Register | Kind::Upload | Kind::DeleteAccount => {}
                    Kind::ProfileChange => {
                        let (_, me) = client.get("read", "/v1/profile", &driver.token).await;
                        let name = me["data"]["displayName"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned();
                        if name != format!("Renamed {k}") {
                            findings.push(format!("{what}: the name is {name:?}"));
                        }
                    }
                    Kind::SharePack => {
                        let (_, mine) = client.get("read", "/v1/sharepacks", &driver.token).await;
                        let n = mine["data"]["items"].as_array().map_or(0, Vec::len);
                        if n != posts {
                            findings.push(format!("{what}: {n} packs after {posts} sent"));
                            posts = n;
                        }
                    }
                    Kind::Refresh => {
                        let again = json!({"refreshToken": body["data"]["refreshToken"]});
                        let (s, b) = client
                            .post("refresh", "/v1/auth/refresh", None, &again)
                            .await;
                        if s != 200 {
                            findings.push(format!("{what}: the rotated token is refused: {s} {b}"));
                        }
                    }
                    Kind::Submit => {
                        let (_, mine) = client
                            .get("board", "/v1/sessions?limit=1", &driver.token)
                            .await;
                        let track = mine["data"]["items"][0]["trackId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned();
                        let (_, board) = client
                            .get(
                                "board",
                                &format!("/v1/leaderboards?trackId={track}"),
                                &driver.token,
                            )
                            .await;
                        let total = board["data"]["totalEntries"].as_u64();
                        let (_, me) = client
                            .get(
                                "board",
                                &format!("/v1/leaderboards/me?trackId={track}"),
                                &driver.token,
                            )
                            .await;
                        let best = me["data"]["entry"]["lapTimeMs"].as_i64();
                        // One driver on the board per pass.
                        let drivers = if lost_in_a_row == 1 { 1 } else { 2 };
                        if total != Some(drivers) || best != Some(100_000 - k as i64) {
                            findings.push(format!("{what}: board total {total:?}, best {best:?}"));
                        }
                    }
                    Kind::FeedPost => {
                        let (_, feed) = client
                            .get("read", "/v1/feed?limit=100", &driver.token)
                            .await;
                        let mine = feed["data"]["items"]
                            .as_array()
                            .map_or(0, |f| f.iter().filter(|e| e["kind"] == "post").count());
                        if mine != posts {
                            findings.push(format!("{what}: {mine} posts after {posts} sent"));
                            posts = mine;
                        }
                    }
                }
                figures.push(format!(
                    "{what}: faults {lost}, answered 503/504 {answered_503}, final {status}"
                ));
                if lost == 0 {
                    break;
                }
            }
            if matches!(kind, Kind::Upload) {
                let (_, sessions) = client
                    .get("read", "/v1/sessions?limit=100", &driver.token)
                    .await;
                let n = sessions["data"]["items"].as_array().map_or(0, Vec::len);
                if n != lost_runs + 1 && n != lost_runs {
                    findings.push(format!(
                        "Upload: {n} sessions after {} uploads",
                        lost_runs + 1
                    ));
                }
            }
        }
    }
    for f in &figures {
        println!("{f}");
    }
    for f in &findings {
        println!("FINDING {f}");
    }
    assert_eq!(client.seen.lock().unwrap().internal, 0, "no 500");
    assert!(findings.is_empty(), "{findings:#?}");
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

/// The scenario through the Lambda functions (each route's binary behind the local API, the
/// consumers fed by the local API's stream and queues), without faults and with every fault
/// kind at once: the same end state, no 500.
#[tokio::test(flavor = "multi_thread")]
async fn faults_through_the_functions_lose_and_duplicate_nothing() {
    require_emulators();
    paddock_tests::tls_provider();
    let size = Size {
        drivers: 1,
        sessions: 2,
        posts: 1,
    };
    let (none, baseline) = run_on(
        Via::Functions,
        "functions, no faults",
        size,
        Vec::new(),
        None,
    )
    .await;
    none.print();
    let all = fault_kinds(false)
        .into_iter()
        .find(|(name, _)| *name == "all of them at once")
        .map(|(_, rules)| rules)
        .unwrap_or_default();
    let (faulty, _) = run_on(
        Via::Functions,
        "functions, all at once",
        size,
        all,
        Some(&baseline),
    )
    .await;
    faulty.print();
    for r in [&none, &faulty] {
        assert_eq!(
            r.seen.internal, 0,
            "{}: no 500: {:?}",
            r.name, r.seen.internal_answers
        );
        assert!(
            r.seen.unexpected.is_empty(),
            "{}: {:?}",
            r.name,
            r.seen.unexpected
        );
        assert!(r.differences.is_empty(), "{}: {:?}", r.name, r.differences);
    }
    assert!(faulty.proxy.faults_total() > 0, "faults were handed out");
}

/// The process ids of the function instances running `binary` for `app` alone: children of
/// the test process (every test of this file runs in it, each with function sets of its
/// own) started with `app`'s table prefix.
fn children_running(app: &TestApp, binary: &str) -> Vec<u32> {
    let me = std::process::id();
    // The kernel keeps 15 bytes of a process's name.
    let name: String = binary.chars().take(15).collect();
    let prefix = format!("Store__TablePrefix={}", app.settings.table_prefix);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`
            let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
            else {
                return false;
            };
            let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
            if comm != name || ppid != Some(me) {
                return false;
            }
            // Another test's instance of the same function is not this test's to end.
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ
                .split(|b| *b == 0)
                .any(|var| var == prefix.as_bytes())
        })
        .collect()
}

/// The achievements consumer is ended (SIGKILL, as Lambda ends a timed-out or out-of-memory
/// instance) after its first write and before its answer; the event comes back after the
/// visibility timeout and its redelivery finishes the work once: the session counted once,
/// the first-session achievement unlocked once.
#[tokio::test(flavor = "multi_thread")]
async fn a_consumer_ended_after_its_first_write_finishes_once_on_redelivery() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let url = proxy.url();
    let app = paddock_tests::spawn_functions_with(&[
        ("AWS_ENDPOINT_URL_DYNAMODB", &url),
        ("AWS_ENDPOINT_URL_S3", &url),
        ("AWS_ENDPOINT_URL_SQS", &url),
    ])
    .await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Ended").await.expect("signed in");
    proxy.set_rules(vec![Rule::nth(
        Calls::WritesContaining("ACH#".into()),
        1,
        Fault::Stall,
    )]);
    let started = Instant::now();
    upload(&client, &driver, "ended-1", 101_000)
        .await
        .expect("uploaded");
    // Wait for the consumer's first write to be applied and held.
    while proxy.counts().faults.get("stall").copied().unwrap_or(0) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the consumer never wrote"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.set_rules(Vec::new());
    let instances = children_running(&app, "paddock-achievements");
    assert_eq!(
        instances.len(),
        1,
        "one achievements instance: {instances:?}"
    );
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &instances[0].to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let ended = started.elapsed();
    // Redelivered once the invocation has timed out and the message is visible again.
    let counted = |mine: &Value| -> (Option<i64>, bool) {
        let items = mine["data"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let sessions = items
            .iter()
            .find(|a| a["id"] == "sessions-100")
            .and_then(|a| a["progress"]["current"].as_i64());
        let first = items
            .iter()
            .any(|a| a["id"] == "first-session" && a["unlockedAt"].is_string());
        (sessions, first)
    };
    // The event comes back to a new instance once the ended invocation has timed out (the
    // function's 30 s) and the message is visible again.
    let victim = instances[0];
    while !children_running(&app, "paddock-achievements")
        .iter()
        .any(|pid| *pid != victim)
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the event was not delivered again"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let redelivered = started.elapsed();
    let mut last = (None, false);
    while started.elapsed() < Duration::from_secs(150) {
        let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
        last = counted(&mine);
        if last.1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let recovered = started.elapsed();
    // Nothing more comes later.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
    let settled = counted(&mine);
    let (_, feed) = client
        .get("read", "/v1/feed?limit=100", &driver.token)
        .await;
    let unlocked_entries = feed["data"]["items"].as_array().map_or(0, |f| {
        f.iter().filter(|e| e["kind"] == "achievement").count()
    });
    println!(
        "consumer ended {ended:.1?} after the upload, its event delivered again to a new \
         instance {redelivered:.1?} after it, state read {recovered:.1?} after it; sessions \
         counted {:?}, first session unlocked {}, achievement feed entries {unlocked_entries}",
        settled.0, settled.1
    );
    assert_eq!(last, settled, "nothing changed after the redelivery");
    assert_eq!(settled, (Some(1), true), "counted once and unlocked");
}

/// Waits until the proxy has held a write (the `Stall` fault), then ends `app`'s instances of
/// `binary` as Lambda ends one that timed out or ran out of memory; answers a process id.
async fn end_instance_after_its_write(app: &TestApp, proxy: &FaultProxy, binary: &str) -> u32 {
    let started = Instant::now();
    while proxy.counts().faults.get("stall").copied().unwrap_or(0) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{binary} never wrote"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.set_rules(Vec::new());
    // Every instance of the function (one holds the write; the local API may have started
    // another meanwhile), as a deployment replaces them all.
    let instances = children_running(app, binary);
    assert!(!instances.is_empty(), "a {binary} instance runs");
    for pid in &instances {
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
    }
    instances[0]
}

/// An HTTP function ended after its write and before its answer (the client gets the
/// gateway's error) is sent the request again under the same `Idempotency-Key`: one post and
/// one pack, each answered as the first request made it.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_whose_function_ended_after_its_write_is_applied_once_when_sent_again() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let url = proxy.url();
    let app = paddock_tests::spawn_functions_with(&[
        ("AWS_ENDPOINT_URL_DYNAMODB", &url),
        ("AWS_ENDPOINT_URL_S3", &url),
        ("AWS_ENDPOINT_URL_SQS", &url),
    ])
    .await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Ended").await.expect("signed in");

    // The post's entry is written and held; the activity function is ended.
    proxy.set_rules(vec![Rule::nth(
        Calls::WritesContaining("FEED#".into()),
        1,
        Fault::Stall,
    )]);
    let body = json!({"title": "Written, never answered"});
    let started = Instant::now();
    let (post, ended) = tokio::join!(
        client.post_keyed("feed post", "/v1/feed", &driver.token, "ended-post", &body),
        end_instance_after_its_write(&app, &proxy, "paddock-activity"),
    );
    println!(
        "feed post: instance {ended} ended after its write; answered {} after {:.1?}",
        post.0,
        started.elapsed()
    );
    assert_eq!(post.0, 201, "{}", post.1);
    let (status, again) = client
        .post_keyed("feed post", "/v1/feed", &driver.token, "ended-post", &body)
        .await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["data"], post.1["data"]);
    let (_, feed) = client
        .get("read", "/v1/feed?limit=100", &driver.token)
        .await;
    let posts = feed["data"]["items"]
        .as_array()
        .map_or(0, |f| f.iter().filter(|e| e["kind"] == "post").count());
    assert_eq!(posts, 1, "{feed}");

    // The pack is published (its listing row written) and held; the function is ended.
    proxy.reset_counts();
    proxy.set_rules(vec![Rule::nth(
        Calls::WritesContaining("OWNER#".into()),
        1,
        Fault::Stall,
    )]);
    let started = Instant::now();
    let (pack, ended) = tokio::join!(
        client.pack_keyed(&driver.token, "ended-pack", "ended", a_pack(7)),
        end_instance_after_its_write(&app, &proxy, "paddock-sharepacks"),
    );
    println!(
        "share pack: instance {ended} ended after its publication; answered {} after {:.1?}",
        pack.0,
        started.elapsed()
    );
    assert_eq!(pack.0, 201, "{}", pack.1);
    let (_, mine) = client
        .get("read", "/v1/sharepacks?limit=100", &driver.token)
        .await;
    let held = mine["data"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(held.len(), 1, "{mine}");
    assert_eq!(held[0]["id"], pack.1["data"]["id"]);
    let seen = client.seen.lock().unwrap();
    println!(
        "requests {}, 2xx {}, retried to success {}, gateway 500s (the ended instances) {}",
        seen.requests, seen.ok, seen.retried_ok, seen.internal
    );
    assert!(seen.unexpected.is_empty(), "{:?}", seen.unexpected);
}

/// S3's and SQS's answers lost once (the SDK sends the call again) and past the SDK's retries
/// (the request answers 503 and is sent again; the relay's batch fails and is delivered
/// again): one pack object, and each upload's event applied once by every consumer.
#[tokio::test(flavor = "multi_thread")]
async fn s3_and_sqs_answers_lost_change_nothing_twice() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Lost").await.expect("signed in");
    let mut figures = Vec::new();
    for (n, lost) in [1u64, 4].into_iter().enumerate() {
        proxy.reset_counts();
        proxy.set_rules(vec![Rule::run(
            Calls::Operations(vec!["S3 PUT".into()]),
            1,
            lost,
            Fault::LoseAnswer,
        )]);
        let name = format!("lost-{lost}");
        let (status, body) = client
            .pack_keyed(&driver.token, &name, &name, a_pack(100 + lost))
            .await;
        proxy.set_rules(Vec::new());
        assert_eq!(status, 201, "{body}");
        let faults = proxy.counts().faults_total();
        assert_eq!(faults, lost, "the pack's S3 answers were lost");
        figures.push(format!(
            "S3 PUT answers lost {lost} in a row: faults {faults}, pack answered {status}"
        ));
        let (_, mine) = client
            .get("read", "/v1/sharepacks?limit=100", &driver.token)
            .await;
        assert_eq!(
            mine["data"]["items"].as_array().map_or(0, Vec::len),
            n + 1,
            "{mine}"
        );

        proxy.reset_counts();
        proxy.set_rules(vec![Rule::run(
            Calls::Operations(vec!["SendMessage".into(), "SendMessageBatch".into()]),
            1,
            lost,
            Fault::LoseAnswer,
        )]);
        upload(
            &client,
            &driver,
            &format!("sqs-{lost}"),
            100_000 + lost as i64,
        )
        .await
        .expect("uploaded");
        // Every consumer has had the event (the session's feed entry is the last to appear
        // of a consumer's work) and nothing comes twice.
        let started = Instant::now();
        let feed_entries = loop {
            let (_, feed) = client
                .get("read", "/v1/feed?limit=100", &driver.token)
                .await;
            let sessions = feed["data"]["items"]
                .as_array()
                .map_or(0, |f| f.iter().filter(|e| e["kind"] == "session").count());
            if sessions > n || started.elapsed() > Duration::from_secs(60) {
                break sessions;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        proxy.set_rules(Vec::new());
        let faults = proxy.counts().faults_total();
        assert_eq!(faults, lost, "the event's SQS answers were lost");
        figures.push(format!(
            "SendMessage answers lost {lost} in a row: faults {faults}, feed entries {feed_entries}"
        ));
        let (_, feed) = client
            .get("read", "/v1/feed?limit=100", &driver.token)
            .await;
        let sessions = feed["data"]["items"]
            .as_array()
            .map_or(0, |f| f.iter().filter(|e| e["kind"] == "session").count());
        assert_eq!(sessions, n + 1, "one entry per upload: {feed}");
        assert_eq!(feed_entries, sessions);
        let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
        let counted = mine["data"]["items"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["id"] == "sessions-100"))
            .and_then(|a| a["progress"]["current"].as_i64());
        assert_eq!(counted, Some(n as i64 + 1), "sessions counted once each");
    }
    let objects = app.ports.blobs.list("packs/").await.expect("listed");
    for f in &figures {
        println!("{f}");
    }
    assert_eq!(objects.len(), 2, "one object per pack: {objects:?}");
    assert_eq!(client.seen.lock().unwrap().internal, 0, "no 500");
}

/// Each kind of DynamoDB call has its own attempt timeout: a read held 2.5 s is given up at
/// its 2 s and sent again, while a single write held as long (3 s) and a transaction held
/// 3.5 s (4 s) are waited for. Counted in calls the proxy received, not timed.
#[tokio::test(flavor = "multi_thread")]
async fn each_kind_of_call_waits_its_own_attempt_timeout() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Timed").await.expect("signed in");
    let calls_of = |operation: &str| {
        proxy
            .counts()
            .operations
            .get(operation)
            .copied()
            .unwrap_or(0)
    };
    let mut n = 0;
    // A keyed feed post claims its key (`PutItem`) and writes its entry in a transaction.
    let mut post = async |held: Option<(&str, Duration)>| {
        n += 1;
        proxy.reset_counts();
        if let Some((operation, delay)) = held {
            let calls = Calls::Operations(vec![operation.to_owned()]);
            proxy.set_rules(vec![Rule::nth(calls, 1, Fault::Delay(delay))]);
        }
        let body = json!({"title": format!("post {n}")});
        let key = format!("timed-{n}");
        let (status, answer) = client
            .post_keyed("feed post", "/v1/feed", &driver.token, &key, &body)
            .await;
        proxy.set_rules(Vec::new());
        assert_eq!(status, 201, "{answer}");
        (calls_of("PutItem"), calls_of("TransactWriteItems"))
    };
    let (puts, transactions) = post(None).await;
    let held_put = post(Some(("PutItem", Duration::from_millis(2_500)))).await;
    let held_transaction = post(Some(("TransactWriteItems", Duration::from_millis(3_500)))).await;

    let read = async |held: Option<Duration>| {
        proxy.reset_counts();
        if let Some(delay) = held {
            let calls = Calls::Operations(vec!["GetItem".to_owned()]);
            proxy.set_rules(vec![Rule::nth(calls, 1, Fault::Delay(delay))]);
        }
        let (status, answer) = client.get("read", "/v1/profile", &driver.token).await;
        proxy.set_rules(Vec::new());
        assert_eq!(status, 200, "{answer}");
        calls_of("GetItem")
    };
    let gets = read(None).await;
    let held_get = read(Some(Duration::from_millis(2_500))).await;
    println!(
        "calls without a hold: PutItem {puts}, TransactWriteItems {transactions}, GetItem {gets}; \
         PutItem held 2.5 s: {held_put:?}; TransactWriteItems held 3.5 s: {held_transaction:?}; \
         GetItem held 2.5 s: {held_get}"
    );
    assert_eq!(held_put, (puts, transactions), "the write was waited for");
    assert_eq!(
        held_transaction,
        (puts, transactions),
        "the transaction was waited for"
    );
    assert!(
        held_get > gets,
        "the read was sent again ({held_get} > {gets})"
    );
}

/// One SQS batch of `events` as Lambda hands it to a consumer, each record named by its id.
fn sqs_batch(
    events: &[(&str, &paddock_core::events::Event)],
) -> paddock_runtime::lambda::WorkerInvocation {
    let records: Vec<Value> = events
        .iter()
        .map(|(id, e)| {
            json!({"messageId": id, "receiptHandle": format!("r-{id}"),
                "body": serde_json::to_string(e).expect("an event serialises"),
                "attributes": {"ApproximateReceiveCount": "1"}})
        })
        .collect();
    serde_json::from_value(json!({"Records": records})).expect("an SQS batch")
}

/// A consumer's batch of three events on the AWS adapters, one driver's writes failing past
/// the SDK's retries and half of the other writes' answers lost: the consumer reports that one
/// record alone in `batchItemFailures`; the whole batch delivered again (as SQS does when an
/// invocation fails) finishes it, and each event is applied once.
#[tokio::test(flavor = "multi_thread")]
async fn a_consumer_reports_only_the_record_that_failed_and_finishes_it_once() {
    use paddock_core::activity::achievements;
    use paddock_core::events::{Event, EventKind, SessionUploaded};
    use paddock_core::ids::UserId;
    use paddock_core::ports::Clock;
    use paddock_core::queues::QueueName;

    require_emulators();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let t = paddock_tests::aws_ports_through(
        proxy.sdk_config_through(&paddock_aws::sdk_config().await),
    )
    .await;
    let users = [unique("fine"), unique("failing"), unique("also-fine")];
    let events: Vec<Event> = users
        .iter()
        .map(|user| {
            Event::new(
                EventKind::SessionUploaded(SessionUploaded {
                    session_id: "s1".into(),
                    track_id: "t1".into(),
                    game_id: "acc".into(),
                    track_name: "Monza".into(),
                    track_layout: String::new(),
                    vehicle_name: "Ferrari 296 GT3".into(),
                    recorded_at: "2026-11-01T10:00:00Z".into(),
                    session_phase: "Race".into(),
                    best_lap_ms: 107_250,
                    lap_count: 12,
                    job_id: None,
                    valid_lap_count: 12,
                    driving_ms: 1_300_000,
                    valid_lap_spread_ms: Some(400),
                }),
                Some(UserId::from(user.as_str())),
                t.clock.now(),
            )
        })
        .collect();
    let batch = sqs_batch(&[("m1", &events[0]), ("m2", &events[1]), ("m3", &events[2])]);
    let processor = paddock_core::workers::processor(QueueName::Achievements);
    // The records are handled at once, so which write a rate picks depends on their order: the
    // first write of the first driver loses its answer whatever the order, and half of the
    // others at random.
    proxy.set_rules(vec![
        Rule::rate(
            Calls::WritesContaining(format!("ACH#{}", users[1])),
            1.0,
            Fault::InternalError,
        ),
        Rule::nth(
            Calls::WritesContaining(format!("ACH#{}", users[0])),
            1,
            Fault::LoseAnswer,
        ),
        Rule::rate(Calls::Writes, 0.5, Fault::LoseAnswer),
    ]);
    let first = paddock_runtime::lambda::handle_worker_event(
        QueueName::Achievements,
        batch.clone(),
        &t.ports,
        &processor,
    )
    .await;
    proxy.set_rules(Vec::new());
    let faults = proxy.counts().faults;
    assert_eq!(
        serde_json::to_value(&first).expect("JSON"),
        json!({"batchItemFailures": [{"itemIdentifier": "m2"}]}),
        "faults {faults:?}"
    );
    let again = paddock_runtime::lambda::handle_worker_event(
        QueueName::Achievements,
        batch,
        &t.ports,
        &processor,
    )
    .await;
    assert_eq!(
        serde_json::to_value(&again).expect("JSON"),
        json!({"batchItemFailures": []})
    );
    for user in &users {
        let mine = achievements::for_driver(&t.ports, &UserId::from(user.as_str()))
            .await
            .expect("achievements");
        let mine = serde_json::to_value(mine).expect("JSON");
        let sessions = mine
            .as_array()
            .and_then(|a| a.iter().find(|a| a["id"] == "sessions-100"))
            .map(|a| a["progress"]["current"].clone());
        assert_eq!(sessions, Some(json!(1)), "{user}: counted once");
    }
    println!("first delivery's faults: {faults:?}");
    assert!(
        faults.get("lose_answer").copied().unwrap_or(0) > 0,
        "{faults:?}"
    );
}
