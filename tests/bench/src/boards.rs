//! The `boards` scenario: what a page read and a submission cost on boards of 1,000 to
//! 1,000,000 drivers (embedded store) and 1,000 and 100,000 drivers (DynamoDB Local, when the
//! emulators run: `eval "$(infra/emulators.sh up)"`).
//!
//! Each board is written in bulk (`paddock_core::leaderboards::bulk`), lap times drawn around a
//! median of 90 s with a standard deviation of 1.5 % (most drivers within a few percent of
//! each other, so equal times to the millisecond are common on large boards), submissions
//! spread over a year, ten cars. Then the local server binary is started over that store with
//! the page cache off, so every read goes to the store, and each request is sent in turn:
//! the first page (100 rows), a page in the middle of the board, the HTML board page
//! (`/boards/{trackId}`, 25 rows) first and in the middle, the driver's own place
//! (`/v1/leaderboards/me`) and submissions of ever faster laps. Per request it prints the
//! items the store read and (DynamoDB) the read units, from the server's own counters, p50
//! and p99 latency, and the server's resident memory afterwards.
//!
//! `cargo run --profile perf -p bench -- --only boards [--board-sizes 1000,100000,1000000]
//! [--dynamodb-sizes 1000,100000]`

use anyhow::{Context, bail};
use paddock_core::config::{Backend, Settings};
use paddock_core::ids::TrackId;
use paddock_core::leaderboards::bulk::{BulkBoard, BulkEntry};
use paddock_tests::binaries;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Samples of each read; submissions are fewer (each is a new best of the bench driver).
const READS: usize = 40;
const SUBMISSIONS: usize = 25;
/// Entries written per bulk call.
const CHUNK: usize = 20_000;
const CARS: [&str; 10] = [
    "Porsche 992 GT3 R",
    "Ferrari 296 GT3",
    "BMW M4 GT3",
    "Mercedes-AMG GT3 Evo",
    "Audi R8 LMS Evo II",
    "Lamborghini Huracan GT3 Evo2",
    "McLaren 720S GT3 Evo",
    "Ford Mustang GT3",
    "Aston Martin V8 Vantage GT3",
    "Corvette Z06 GT3.R",
];

/// A tiny deterministic generator (the bench needs no cryptographic randomness).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    #[allow(clippy::cast_precision_loss)]
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Normal (Box-Muller).
    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        mean + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// One measured kind of request.
struct Measured {
    name: &'static str,
    latencies: Vec<Duration>,
    items: f64,
    units: f64,
}

impl Measured {
    fn percentile(&self, p: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let at = ((l.len() as f64 - 1.0) * p).round() as usize;
        l.get(at).copied().unwrap_or_default()
    }
}

/// The local server's binary, built in this build's profile (`perf` for a release bench).
pub(crate) fn local_server() -> anyhow::Result<std::path::PathBuf> {
    let profile = if cfg!(debug_assertions) {
        "dev"
    } else {
        "perf"
    };
    let bins = binaries::build(profile, &["paddock-local"])?;
    Ok(bins
        .get("paddock-local")
        .context("cargo built no paddock-local")?
        .clone())
}

/// Runs the scenario for every size.
pub(crate) async fn run(embedded: &[usize], dynamodb: &[usize]) -> anyhow::Result<()> {
    paddock_tests::tls_provider();
    let server = local_server()?;
    println!(
        "{:<10} {:>9}  {:<28} {:>9} {:>9} {:>10} {:>10} {:>9}",
        "backend", "drivers", "request", "items/req", "RU/req", "p50 ms", "p99 ms", "RSS MB"
    );
    let dynamo_up = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_ok();
    let mut runs: Vec<(Backend, usize)> =
        embedded.iter().map(|n| (Backend::Embedded, *n)).collect();
    if dynamo_up {
        runs.extend(dynamodb.iter().map(|n| (Backend::Aws, *n)));
    } else if !dynamodb.is_empty() {
        println!(
            "(DynamoDB Local sizes skipped: start the emulators, `eval \"$(infra/emulators.sh up)\"`)"
        );
    }
    for (backend, n) in runs {
        one_board(&server, backend, n).await?;
    }
    Ok(())
}

async fn one_board(server: &Path, backend: Backend, n: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let prefix = format!("bench{}-{n}-", std::process::id());
    let mut settings = Settings::embedded(dir.path(), SocketAddr::from(([127, 0, 0, 1], 0)));
    if backend == Backend::Aws {
        settings.backend = Backend::Aws;
        settings.table_prefix.clone_from(&prefix);
        settings.create_resources = true;
        settings.bucket = Some(format!("bench-{}-{n}", std::process::id()));
    }
    let track = paddock_core::tracks::TrackKey::new("acc", "Spa-Francorchamps", "GP").id();
    let started = Instant::now();
    let middle_key = {
        let ports = paddock_runtime::wiring::ports(&mut settings).await?;
        let key = write_board(&ports, n, BulkBoard::new(&track)).await?;
        // The store is closed before the server opens it.
        drop(ports);
        key
    };
    let written = started.elapsed();
    // The bulk write leaves gigabytes for the kernel to write back; the server's commits would
    // wait behind that in their fsync. Measure the board, not the load's writeback.
    let _ = Command::new("sync").status();

    let port = free_port()?;
    let mut child = start_server(server, &settings, dir.path(), port)?;
    let result = measure(port, &track, &middle_key).await;
    let rss = rss_of(child.id());
    // Stopped by its own pid.
    let _ = child.kill();
    let _ = child.wait();
    let (label, rows) = result?;
    let backend_name = if backend == Backend::Aws {
        "dynamodb"
    } else {
        "embedded"
    };
    for m in &rows {
        println!(
            "{:<10} {:>9}  {:<28} {:>9.1} {:>9.1} {:>10.2} {:>10.2} {:>9.1}",
            backend_name,
            n,
            m.name,
            m.items,
            m.units,
            m.percentile(0.5).as_secs_f64() * 1e3,
            m.percentile(0.99).as_secs_f64() * 1e3,
            rss.unwrap_or(0) as f64 / 1_048_576.0
        );
    }
    println!(
        "{:<10} {:>9}  (written in bulk in {:.1} s; {label})",
        backend_name,
        n,
        written.as_secs_f64()
    );
    Ok(())
}

/// Writes a board of `n` drivers on `track` through `board` (of the current layout or the
/// older one); answers the rank key of the row in its middle.
pub(crate) async fn write_board(
    ports: &paddock_core::ports::Ports,
    n: usize,
    mut board: BulkBoard,
) -> anyhow::Result<String> {
    let mut rng = SplitMix(n as u64);
    let year_micros: i64 = 365 * 86_400 * 1_000_000;
    let now = time::OffsetDateTime::now_utc();
    let mut keys: Vec<(i64, i64, u32)> = Vec::with_capacity(n);
    let mut chunk = Vec::with_capacity(CHUNK);
    for i in 0..n {
        #[allow(clippy::cast_possible_truncation)]
        let ms = rng
            .normal(90_000.0, 1_350.0)
            .round()
            .clamp(60_000.0, 200_000.0) as i64;
        #[allow(clippy::cast_possible_wrap)]
        let back = (rng.next() % year_micros as u64) as i64;
        let at = now - time::Duration::microseconds(back);
        let micros = i64::try_from(at.unix_timestamp_nanos() / 1_000)?;
        #[allow(clippy::cast_possible_truncation)]
        keys.push((ms, micros, i as u32));
        chunk.push(BulkEntry {
            user_id: driver_id(i).parse()?,
            display_name: format!("Driver {i}"),
            lap_time_ms: ms,
            vehicle_name: CARS[i % CARS.len()].to_owned(),
            session_id: format!("00000000-0000-4000-9000-{i:012}").parse()?,
            submitted_at: at,
        });
        if chunk.len() == CHUNK {
            board.add(ports, &chunk).await?;
            chunk.clear();
        }
    }
    board.add(ports, &chunk).await?;
    board.finish(ports).await?;
    // The rank order of the rows: lap time, then submission time (then user id, unique).
    keys.sort_unstable_by(|a, b| {
        (a.0, a.1, driver_id(a.2 as usize)).cmp(&(b.0, b.1, driver_id(b.2 as usize)))
    });
    let (ms, micros, i) = keys[keys.len() / 2];
    Ok(format!(
        "RANK#{ms:010}#{micros:016}#{}",
        driver_id(i as usize)
    ))
}

fn driver_id(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

fn start_server(
    server: &Path,
    settings: &Settings,
    dir: &Path,
    port: u16,
) -> anyhow::Result<Child> {
    let mut command = Command::new(server);
    command
        .env("Server__Address", format!("127.0.0.1:{port}"))
        .env("Data__Dir", dir)
        // Every read goes to the store.
        .env("Leaderboards__CacheSeconds", "0")
        .env("Limits__UploadsPerMinute", "1000000")
        .env("Log__Format", "json")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if settings.backend == Backend::Aws {
        command
            .env("Store__Backend", "aws")
            .env("Store__TablePrefix", &settings.table_prefix)
            .env("Store__CreateResources", "true")
            .env("Blobs__Bucket", settings.bucket.clone().unwrap_or_default());
    }
    Ok(command.spawn()?)
}

/// Resident memory of process `pid`, bytes.
pub(crate) fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The server's counters of store reads: (items, read units).
async fn store_reads(client: &reqwest::Client, base: &str) -> anyhow::Result<(f64, f64)> {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let mut items = 0.0;
    let mut milliunits = 0.0;
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let value: f64 = value.parse().unwrap_or(0.0);
        if name.starts_with("paddock_store_items_read_total") {
            items += value;
        } else if name == "paddock_store_read_capacity_milliunits_total" {
            milliunits += value;
        }
    }
    Ok((items, milliunits / 1000.0))
}

async fn measure(
    port: u16,
    track: &TrackId,
    middle_key: &str,
) -> anyhow::Result<(String, Vec<Measured>)> {
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let ready = Instant::now();
    while client.get(format!("{base}/health")).send().await.is_err() {
        if ready.elapsed() > Duration::from_secs(120) {
            bail!("the server did not start");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let start_up = ready.elapsed();
    // The bench driver: a session of laps, each faster than the one before.
    let creds = json!({"email": "boards@example.com", "password": "correct horse battery", "displayName": "Bench"});
    let registered: Value = client
        .post(format!("{base}/v1/auth/register"))
        .json(&creds)
        .send()
        .await?
        .json()
        .await?;
    let token = registered["data"]["accessToken"]
        .as_str()
        .context("no token")?
        .to_owned();
    let laps: Vec<(i64, bool, f64)> = (0..=SUBMISSIONS as i64)
        .map(|i| (95_000 - i * 150, true, 0.95))
        .collect();
    let body = paddock_tests::session_body("bench-board", "2026-11-01T10:00:00Z", &laps, 0);
    let uploaded: Value = client
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    let session = uploaded["data"]["sessionId"]
        .as_str()
        .with_context(|| format!("upload failed: {uploaded}"))?
        .to_owned();
    let cursor = paddock_core::ports::items::encode_cursor(&format!("after:{middle_key}"));
    let reads: [(&'static str, String, bool); 5] = [
        (
            "GET first page (100)",
            format!("/v1/leaderboards?trackId={track}&limit=100"),
            false,
        ),
        (
            "GET middle page (100)",
            format!("/v1/leaderboards?trackId={track}&limit=100&cursor={cursor}"),
            false,
        ),
        (
            "GET /boards/{id} (HTML, 25)",
            format!("/boards/{track}"),
            false,
        ),
        (
            "GET /boards/{id} middle",
            format!("/boards/{track}?cursor={cursor}"),
            false,
        ),
        (
            "GET /v1/leaderboards/me",
            format!("/v1/leaderboards/me?trackId={track}"),
            true,
        ),
    ];
    let mut out = Vec::new();
    // The first submission puts the driver on the board (for `/me`); measured below.
    submit(&client, &base, &token, &session, laps[0].0).await?;
    for (name, path, auth) in reads {
        let (items0, units0) = store_reads(&client, &base).await?;
        let mut latencies = Vec::with_capacity(READS);
        for _ in 0..READS {
            let mut request = client.get(format!("{base}{path}"));
            if auth {
                request = request.bearer_auth(&token);
            }
            let t = Instant::now();
            let res = request.send().await?;
            let status = res.status();
            let _ = res.bytes().await?;
            latencies.push(t.elapsed());
            if !status.is_success() {
                bail!("{name}: {status}");
            }
        }
        let (items1, units1) = store_reads(&client, &base).await?;
        #[allow(clippy::cast_precision_loss)]
        out.push(Measured {
            name,
            latencies,
            items: (items1 - items0) / READS as f64,
            units: (units1 - units0) / READS as f64,
        });
    }
    let (items0, units0) = store_reads(&client, &base).await?;
    let mut latencies = Vec::with_capacity(SUBMISSIONS);
    for (ms, _, _) in &laps[1..] {
        let t = Instant::now();
        submit(&client, &base, &token, &session, *ms).await?;
        latencies.push(t.elapsed());
    }
    let (items1, units1) = store_reads(&client, &base).await?;
    #[allow(clippy::cast_precision_loss)]
    out.push(Measured {
        name: "POST submit (new best)",
        latencies,
        items: (items1 - items0) / SUBMISSIONS as f64,
        units: (units1 - units0) / SUBMISSIONS as f64,
    });
    Ok((
        format!("server ready {:.1} s after start", start_up.as_secs_f64()),
        out,
    ))
}

async fn submit(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    session: &str,
    ms: i64,
) -> anyhow::Result<()> {
    let res = client
        .post(format!("{base}/v1/leaderboards/submit"))
        .bearer_auth(token)
        .json(&json!({"SessionId": session, "LapTimeMs": ms, "QualityScore": 0.95}))
        .send()
        .await?;
    if !res.status().is_success() {
        bail!(
            "submit: {} {}",
            res.status(),
            res.text().await.unwrap_or_default()
        );
    }
    Ok(())
}
