//! Loopback benchmark: drives the local server and a bare axum handler that returns the same
//! bytes, in the same run, and prints requests/s, p50/p99 latency and the ratio to the baseline.
//!
//! `cargo run --release -p bench -- [--seconds N] [--connections N] [--rounds N]
//! [--log queued|blocking|off] [--log-sink memory|disk]`

mod activity;
mod backfill_memory;
mod boards;
mod coaching;
mod lambda;
mod load;
mod metric_lines;
mod packs;

use anyhow::Context;
use axum::Router;
use paddock_core::config::Settings;
use paddock_runtime::app::Application;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use load::{Load, Stats};

struct Options {
    seconds: u64,
    connections: usize,
    rounds: usize,
    /// Run only this scenario (`health`, `validate`, `refresh`, `sessions`, `ai`, `packs`,
    /// `activity`, `memory`, `login`; `lambda` runs only when named, as it builds the
    /// function binaries, and so do `metric-lines`, as it installs the CloudWatch outlet, and
    /// `boards`, as it writes boards of a million drivers).
    only: Option<String>,
    /// The cargo profile the `lambda` scenario builds the functions with (`release`, as
    /// deployed).
    lambda_profile: String,
    /// The functions the `lambda` scenario measures (all of `functions/` when empty).
    lambda_functions: Vec<String>,
    /// The `boards` scenario's board sizes on the embedded store.
    board_sizes: Vec<usize>,
    /// The `boards` scenario's board sizes on DynamoDB Local.
    dynamodb_sizes: Vec<usize>,
    /// How the in-process service writes its request log: `queued` (as the local server,
    /// from a writer thread), `blocking` (as a Lambda function) or `off` (no subscriber).
    log: String,
    /// Where the log file is: `memory` (`/dev/shm`, when there is one) or `disk` (the
    /// temporary directory).
    log_sink: String,
}

impl Options {
    fn wants(&self, scenario: &str) -> bool {
        self.only.as_deref().is_none_or(|s| s == scenario)
    }
}

fn options() -> anyhow::Result<Options> {
    // Many short rounds: on a small shared machine the rate of either side moves between
    // a fast and a slow state from one round to the next, and the best of few rounds can
    // miss one side's fast state.
    let mut o = Options {
        seconds: 2,
        connections: 32,
        rounds: 8,
        only: None,
        lambda_profile: "release".into(),
        lambda_functions: Vec::new(),
        board_sizes: vec![1_000, 100_000, 1_000_000],
        dynamodb_sizes: vec![1_000, 100_000],
        log: "queued".into(),
        log_sink: "memory".into(),
    };
    let sizes = |v: &str| -> anyhow::Result<Vec<usize>> {
        v.split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.trim().replace('_', "").parse().context("a board size"))
            .collect()
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--seconds" => o.seconds = value.parse()?,
            "--connections" => o.connections = value.parse()?,
            "--rounds" => o.rounds = value.parse()?,
            "--only" => o.only = Some(value),
            "--lambda-profile" => o.lambda_profile = value,
            "--lambda-functions" => {
                o.lambda_functions = value.split(',').map(|f| f.trim().to_owned()).collect();
            }
            "--board-sizes" => o.board_sizes = sizes(&value)?,
            "--dynamodb-sizes" => o.dynamodb_sizes = sizes(&value)?,
            "--log" if ["queued", "blocking", "off"].contains(&value.as_str()) => o.log = value,
            "--log-sink" if ["memory", "disk"].contains(&value.as_str()) => o.log_sink = value,
            other => anyhow::bail!("unknown option {other}"),
        }
    }
    Ok(o)
}

const HEALTH_BODY: &str = r#"{"success":true,"data":{"status":"Healthy"},"error":null}"#;

/// The baseline: the same bytes from a bare axum handler, no middleware, on any path (so it
/// can be sent the very request the service gets), its connections without Nagle's delay as
/// the service's are (`axum::serve` leaves it on).
async fn spawn_baseline(body: &'static [u8]) -> anyhow::Result<SocketAddr> {
    let router = Router::new().fallback(move || async move {
        ([(http::header::CONTENT_TYPE, "application/json")], body)
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

async fn spawn_paddock(dir: &std::path::Path, model_api: SocketAddr) -> anyhow::Result<SocketAddr> {
    let mut settings = Settings::embedded(dir, SocketAddr::from(([127, 0, 0, 1], 0)));
    // The bench signs in thousands of times from one address; the limits are not under test.
    settings.auth.login_attempts_per_account = u32::MAX;
    settings.auth.attempts_per_address = u32::MAX;
    settings.uploads_per_minute = u32::MAX;
    // The coach talks to the loopback stand-in, with limits out of the way.
    settings.ai.model = "bench-model".into();
    settings.ai.base_url = format!("http://{model_api}");
    settings.ai.base_url_configured = true;
    settings.ai.requests_per_hour = u32::MAX;
    settings.ai.tokens_per_day = u64::MAX;
    settings.sharepacks.uploads_per_minute = u32::MAX;
    settings.sharepacks.max_per_user = u32::MAX;
    settings.sharepacks.max_bytes_per_user = u64::MAX / 4;
    std::fs::write(
        dir.join("secrets.json"),
        serde_json::json!({"anthropicApiKey": "bench-key"}).to_string(),
    )?;
    let app = Application::build(settings).await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], app.port()));
    tokio::spawn(app.run_until(std::future::pending()));
    Ok(addr)
}

fn row(name: &str, s: &Stats, baseline: Option<&Stats>) {
    let ratio = baseline.map_or_else(|| "1.00x".into(), |b| format!("{:.2}x", s.rps / b.rps));
    println!(
        "{name:<34} {:>10.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   errors {:>3}   ratio {ratio}",
        s.rps,
        s.p50.as_secs_f64() * 1e3,
        s.p99.as_secs_f64() * 1e3,
        s.errors
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let o = options()?;
    if o.only.as_deref() == Some("metric-lines") {
        return metric_lines::run();
    }
    if o.only.as_deref() == Some("boards") {
        return boards::run(&o.board_sizes, &o.dynamodb_sizes).await;
    }
    if o.only.as_deref() == Some("lambda") {
        // Five measured starts per function, whatever the rounds: one start is one sample.
        return lambda::cold_starts(&o.lambda_profile, &o.lambda_functions, o.rounds.max(5)).await;
    }
    let dir = tempfile::tempdir()?;
    // The service logs every request as it does when deployed (one JSON line at `info`),
    // here to a file; the baseline logs nothing. By default the file is in memory: the write
    // call's copy is the service's cost, as with the pipe its standard output is in Lambda or
    // a container, while a disk's writeback afterwards runs on the machine's own threads and
    // is nothing the service does (`--log-sink disk` to include it).
    let log_dir = match o.log_sink.as_str() {
        "memory" if Path::new("/dev/shm").is_dir() => tempfile::tempdir_in("/dev/shm")?,
        _ => tempfile::tempdir()?,
    };
    let log_path = log_dir.path().join("paddock.log");
    let log_file = std::fs::File::create(&log_path)?;
    let _log = match o.log.as_str() {
        "queued" => Some(paddock_runtime::telemetry::init_to(
            paddock_core::config::LogFormat::Json,
            log_file,
        )),
        "blocking" => {
            paddock_runtime::telemetry::init_blocking_to(
                paddock_core::config::LogFormat::Json,
                log_file,
            );
            None
        }
        _ => None,
    };
    let baseline = spawn_baseline(HEALTH_BODY.as_bytes()).await?;
    let model_api = coaching::spawn_model_api().await?;
    let paddock = spawn_paddock(dir.path(), model_api).await?;
    let run = |addr: SocketAddr, load: Load| async move {
        load::run(addr, &load, o.connections, Duration::from_secs(o.seconds)).await
    };

    println!(
        "Paddock loopback benchmark: {} connections, {} s per measurement, best of {} rounds, {} cores",
        o.connections,
        o.seconds,
        o.rounds,
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    );
    if o.wants("health") {
        let (base, pad) = paired(
            o.rounds,
            || run(baseline, Load::get("/")),
            || run(paddock, Load::get("/health")),
        )
        .await?;
        row("baseline: bare axum GET /health", &base, None);
        row("paddock:  GET /health", &pad, Some(&base));
    }

    // Identity scenarios.
    let client = Client::new(paddock);
    let creds = serde_json::json!({"email": "bench@example.com", "password": "correct horse battery", "displayName": "Bench"});
    let registered = client.post("/v1/auth/register", &creds).await?;
    let access = registered["data"]["accessToken"]
        .as_str()
        .context("register answered no token")?
        .to_owned();
    if o.wants("validate") {
        // The baseline gets the identical request (path and bearer header) and answers
        // validate's own bytes, so the ratio is the cost of authenticating and nothing else.
        let answer = client.get_bytes("/v1/auth/validate", Some(&access)).await?;
        let same_bytes = spawn_baseline(Box::leak(answer.into_boxed_slice())).await?;
        let authorized =
            Load::get("/v1/auth/validate").header("authorization", &format!("Bearer {access}"));
        let (base, validate) = paired(
            o.rounds,
            || run(same_bytes, authorized.clone()),
            || run(paddock, authorized.clone()),
        )
        .await?;
        row("baseline: same request and bytes", &base, None);
        row("paddock:  GET /v1/auth/validate", &validate, Some(&base));
    }
    println!(
        "(log {}: the service wrote {} lines meanwhile, {:.0} MB, to {})",
        o.log,
        std::fs::read(&log_path).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count()),
        std::fs::metadata(&log_path).map_or(0, |m| m.len()) as f64 / 1e6,
        log_path.display()
    );
    let mut tokens = Vec::new();
    for _ in 0..if o.wants("refresh") { o.connections } else { 0 } {
        let login = client.post("/v1/auth/login/email", &creds).await?;
        tokens.push(
            login["data"]["refreshToken"]
                .as_str()
                .context("login answered no token")?
                .to_owned(),
        );
    }
    if o.wants("refresh") {
        let refresh =
            load::run_refresh_chains(paddock, tokens, Duration::from_secs(o.seconds)).await?;
        let base = run(baseline, Load::get("/")).await?;
        row("baseline: bare axum GET /health", &base, None);
        row("paddock:  POST /v1/auth/refresh", &refresh, Some(&base));
    }
    if o.wants("sessions") {
        sessions_and_leaderboards(&o, paddock, &client, &access).await?;
    }
    if o.wants("ai") {
        let seconds = Duration::from_secs(o.seconds);
        coaching::chat(
            paddock,
            model_api,
            &access,
            o.connections,
            seconds,
            o.rounds,
        )
        .await?;
    }
    if o.wants("packs") {
        packs::direct(paddock, &access, Duration::from_secs(o.seconds)).await?;
        packs::large_uploads_memory(paddock, &access).await?;
    }
    if o.wants("activity") {
        let consumers_dir = tempfile::tempdir()?;
        activity::consumers(consumers_dir.path()).await?;
        let seconds = Duration::from_secs(o.seconds);
        activity::feed_latency(paddock, &client, &access, upload_body_parts(), seconds).await?;
    }
    if o.wants("memory") {
        login_memory(paddock, &creds).await?;
        backfill_memory::run().await?;
    }
    if !o.wants("login") {
        return Ok(());
    }

    // Login is dominated by one argon2id verify: compare with that verify alone, both at the
    // machine's parallelism.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let login = load::run(
        paddock,
        &Load::post_json("/v1/auth/login/email", &creds),
        cores,
        Duration::from_secs(o.seconds),
    )
    .await?;
    let verify = argon2_verifies(cores, Duration::from_secs(o.seconds)).await?;
    println!(
        "{:<34} {:>10.1} verify/s  p50 {:>7.3} ms",
        "baseline: bare argon2id verify",
        verify.rps,
        verify.p50.as_secs_f64() * 1e3
    );
    println!(
        "{:<34} {:>10.1} login/s   p50 {:>7.3} ms   errors {:>3}   cost {:.2}x one verify (p50), {:.2}x (throughput)",
        "paddock:  POST /v1/auth/login/email",
        login.rps,
        login.p50.as_secs_f64() * 1e3,
        login.errors,
        login.p50.as_secs_f64() / verify.p50.as_secs_f64(),
        verify.rps / login.rps
    );
    Ok(())
}

/// Measures `baseline` and `subject` alternately for `rounds` rounds (so drift in machine
/// load hits both alike), after one warm-up each; answers the best round of each and prints
/// every round's ratio and their median.
pub(crate) async fn paired<B, S, FB, FS>(
    rounds: usize,
    baseline: B,
    subject: S,
) -> anyhow::Result<(Stats, Stats)>
where
    B: Fn() -> FB,
    S: Fn() -> FS,
    FB: std::future::Future<Output = anyhow::Result<Stats>>,
    FS: std::future::Future<Output = anyhow::Result<Stats>>,
{
    baseline().await?;
    subject().await?;
    let (mut best_b, mut best_s): (Option<Stats>, Option<Stats>) = (None, None);
    // Each round's (subject, baseline) rates.
    let mut rounds_rps = Vec::new();
    for _ in 0..rounds.max(1) {
        let b = baseline().await?;
        let s = subject().await?;
        rounds_rps.push((s.rps, b.rps));
        if best_b.as_ref().is_none_or(|x| b.rps > x.rps) {
            best_b = Some(b);
        }
        if best_s.as_ref().is_none_or(|x| s.rps > x.rps) {
            best_s = Some(s);
        }
    }
    // How far the rounds spread says how much one figure can be trusted on this machine. The
    // median of the rounds' own ratios (each pair measured back to back) is the steadier
    // figure: the best of each side can pair one side's fast state with the other's slow one.
    let each: Vec<String> = rounds_rps
        .iter()
        .map(|(s, b)| format!("{:.2}x ({:.0}/{:.0})", s / b, s / 1e3, b / 1e3))
        .collect();
    let mut ratios: Vec<f64> = rounds_rps.iter().map(|(s, b)| s / b).collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = f64::midpoint(ratios[(n - 1) / 2], ratios[n / 2]);
    println!(
        "(each round, subject against baseline: {}; median of the rounds {median:.2}x)",
        each.join(" ")
    );
    Ok((best_b.expect("a round"), best_s.expect("a round")))
}

/// A 30-lap session with 5,000 track points; `ClientSessionId` is left for the caller.
fn upload_body_parts() -> (bytes::Bytes, bytes::Bytes) {
    let laps: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            serde_json::json!({
                "LapIndex": i, "LapTimeMs": 92_000 + i * 37, "IsValid": true, "CountsForSessionTiming": true,
                "QualityCombined": 0.912_345, "QualityCoherence": 0.9, "QualityStability": 0.95,
                "QualityCompleteness": 1.0, "NumPenalties": 0, "NumPitstops": 0, "InPitsAtLapEnd": false,
            })
        })
        .collect();
    let radius = 7000.0 / std::f64::consts::TAU;
    let points: Vec<serde_json::Value> = (0..5_000)
        .map(|i| {
            let d = 7000.0 * f64::from(i) / 5000.0;
            let a = d / radius;
            serde_json::json!({"X": radius * a.cos(), "Y": radius * a.sin(), "Distance": d})
        })
        .collect();
    let body = serde_json::json!({
        "GameId": "acc", "TrackName": "Spa-Francorchamps", "TrackLayout": "GP",
        "VehicleName": "Porsche 992 GT3 R", "RecordedAt": "2026-11-01T10:00:00Z", "Laps": laps,
        "BestLapMs": 92_000, "WeatherSummary": "dry, 22C", "SessionPhase": "race",
        "ClientSessionId": "@@ID@@", "TrackPoints": points,
    })
    .to_string();
    let (prefix, suffix) = body.split_once("@@ID@@").expect("placeholder");
    (
        bytes::Bytes::from(prefix.to_owned()),
        bytes::Bytes::from(suffix.to_owned()),
    )
}

/// Session upload and leaderboard scenarios.
async fn sessions_and_leaderboards(
    o: &Options,
    paddock: SocketAddr,
    client: &Client,
    access: &str,
) -> anyhow::Result<()> {
    let seconds = Duration::from_secs(o.seconds);
    // Uploads: 30 laps and 5,000 track points each, every one a new session.
    let parts = upload_body_parts();
    let uploads = load::run_uploads(paddock, access, parts.clone(), 4, seconds).await?;
    println!(
        "{:<34} {:>10.1} uploads/s p50 {:>7.3} ms   p99 {:>7.3} ms   errors {:>3}   ({} body bytes, 4 connections)",
        "paddock:  POST /v1/sessions",
        uploads.rps,
        uploads.p50.as_secs_f64() * 1e3,
        uploads.p99.as_secs_f64() * 1e3,
        uploads.errors,
        parts.0.len() + parts.1.len() + 16
    );

    // A board of 50 drivers; the page is served from the in-process cache.
    let mut track = String::new();
    for i in 0..50 {
        let creds = serde_json::json!({"email": format!("driver{i}@example.com"), "password": "correct horse battery", "displayName": format!("Driver {i}")});
        let token = client.post("/v1/auth/register", &creds).await?["data"]["accessToken"]
            .as_str()
            .context("no token")?
            .to_owned();
        let lap = 90_000 + i * 13;
        let mut session = serde_json::json!({
            "GameId": "acc", "TrackName": "Monza", "TrackLayout": "", "VehicleName": "Ferrari 296 GT3",
            "RecordedAt": "2026-11-01T10:00:00Z", "BestLapMs": lap, "WeatherSummary": "dry",
            "SessionPhase": "qualifying", "ClientSessionId": format!("board-{i}"),
            "Laps": [{"LapIndex": 0, "LapTimeMs": lap, "IsValid": true, "CountsForSessionTiming": true,
                "QualityCombined": 0.95, "QualityCoherence": 0.9, "QualityStability": 0.9,
                "QualityCompleteness": 1.0, "NumPenalties": 0, "NumPitstops": 0, "InPitsAtLapEnd": false}],
        });
        let stored = client.post_auth("/v1/sessions", &session, &token).await?;
        let sid = stored["data"]["sessionId"]
            .as_str()
            .context("no session")?
            .to_owned();
        track = stored["data"]["trackId"]
            .as_str()
            .context("no track")?
            .to_owned();
        session = serde_json::json!({"SessionId": sid, "LapTimeMs": lap, "QualityScore": 0.95});
        client
            .post_auth("/v1/leaderboards/submit", &session, &token)
            .await?;
    }
    let path = format!("/v1/leaderboards?trackId={track}&limit=20");
    let page = client.get_bytes(&path, None).await?;
    let same_bytes = spawn_baseline(Box::leak(page.into_boxed_slice())).await?;
    let (root, board_load) = (Load::get("/"), Load::get(&path));
    let (base, board) = paired(
        o.rounds,
        || load::run(same_bytes, &root, o.connections, seconds),
        || load::run(paddock, &board_load, o.connections, seconds),
    )
    .await?;
    row("baseline: bare axum, same page bytes", &base, None);
    row(
        "paddock:  GET /v1/leaderboards (cached)",
        &board,
        Some(&base),
    );
    Ok(())
}

/// A minimal JSON client for setting scenarios up.
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    fn new(addr: SocketAddr) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: format!("http://{addr}"),
        }
    }

    async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> anyhow::Result<serde_json::Value> {
        Ok(self
            .http
            .post(format!("{}{path}", self.base))
            .json(body)
            .send()
            .await?
            .json()
            .await?)
    }

    async fn post_auth(
        &self,
        path: &str,
        body: &serde_json::Value,
        token: &str,
    ) -> anyhow::Result<serde_json::Value> {
        Ok(self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(body)
            .send()
            .await?
            .json()
            .await?)
    }

    async fn get_auth(&self, path: &str, token: &str) -> anyhow::Result<serde_json::Value> {
        Ok(self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await?
            .json()
            .await?)
    }

    /// The body of `GET path`, with `bearer` as the token when given.
    async fn get_bytes(&self, path: &str, bearer: Option<&str>) -> anyhow::Result<Vec<u8>> {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        let res = request.send().await?;
        anyhow::ensure!(res.status().is_success(), "GET {path}: {}", res.status());
        Ok(res.bytes().await?.to_vec())
    }
}

/// Bare argon2id verifies with the service's parameters on the blocking pool.
async fn argon2_verifies(parallel: usize, duration: Duration) -> anyhow::Result<Stats> {
    use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
    use argon2::{Algorithm, Argon2, Params, Version};
    let argon = || {
        Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(19 * 1024, 2, 1, None).expect("params"),
        )
    };
    let salt = SaltString::encode_b64(b"benchmark-salt-16").map_err(|e| anyhow::anyhow!("{e}"))?;
    let phc = argon()
        .hash_password(b"correct horse battery", &salt)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .to_string();
    let started = std::time::Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..parallel)
        .map(|_| {
            let phc = phc.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                while std::time::Instant::now() < deadline {
                    let phc = phc.clone();
                    let t0 = std::time::Instant::now();
                    tokio::task::spawn_blocking(move || {
                        let parsed = PasswordHash::new(&phc).expect("phc");
                        argon()
                            .verify_password(b"correct horse battery", &parsed)
                            .is_ok()
                    })
                    .await
                    .expect("verify task");
                    lat.push(t0.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await?);
    }
    Ok(load::stats(all, 0, started.elapsed()))
}

/// A line of `/proc/self/status` in kB (`VmRSS`, `VmHWM`), as bytes.
pub(crate) fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident memory of the process (the server runs in it) through 200 logins, 20 at a
/// time, against its resident memory when idle; a hashing thread allocates its memory block
/// at its first hash, so the idle figure may hold some blocks, and the budget counts them all.
async fn login_memory(paddock: SocketAddr, creds: &serde_json::Value) -> anyhow::Result<()> {
    const LOGINS: usize = 200;
    const PARALLEL: usize = 20;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = status_bytes("VmRSS:").context("no /proc/self/status")?;
    // Resets the peak (VmHWM) to the current size; a sampler backs it up where not allowed.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(status_bytes("VmRSS:").unwrap_or(0));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            peak
        })
    };
    let started = std::time::Instant::now();
    let tasks: Vec<_> = (0..PARALLEL)
        .map(|_| {
            let client = Client::new(paddock);
            let creds = creds.clone();
            tokio::spawn(async move {
                let mut failed = 0;
                for _ in 0..LOGINS / PARALLEL {
                    match client.post("/v1/auth/login/email", &creds).await {
                        Ok(answer) if answer["success"] == true => {}
                        _ => failed += 1,
                    }
                }
                failed
            })
        })
        .collect();
    let mut errors = 0;
    for t in tasks {
        errors += t.await?;
    }
    let elapsed = started.elapsed();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let sampled = sampler.await?;
    let peak = if reset {
        status_bytes("VmHWM:").unwrap_or(sampled).max(sampled)
    } else {
        sampled
    };
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as u64;
    let block = 19 * 1024 * 1024;
    let budget = 64 * 1024 * 1024 + threads * block;
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "{:<34} idle {:>6.1} MB   peak {:>6.1} MB   above idle {:>6.1} MB (budget {:.0} MB: 64 + {} x 19)   {:>6.1} login/s   errors {}",
        "paddock:  200 logins, 20 at a time",
        mb(idle),
        mb(peak),
        mb(peak.saturating_sub(idle)),
        mb(budget),
        threads,
        LOGINS as f64 / elapsed.as_secs_f64(),
        errors
    );
    Ok(())
}
