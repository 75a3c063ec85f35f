//! Loopback benchmark: drives the local server and a bare axum handler that returns the same
//! bytes, in the same run, and prints requests/s, p50/p99 latency and the ratio to the baseline.
//!
//! `cargo run --release -p bench -- [--seconds N] [--connections N] [--rounds N]`

mod load;

use anyhow::Context;
use axum::Router;
use axum::routing::get;
use paddock::app::Application;
use paddock::config::Settings;
use std::net::SocketAddr;
use std::time::Duration;

use load::{Load, Stats};

struct Options {
    seconds: u64,
    connections: usize,
    rounds: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        seconds: 4,
        connections: 32,
        rounds: 3,
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
            other => anyhow::bail!("unknown option {other}"),
        }
    }
    Ok(o)
}

const HEALTH_BODY: &str = r#"{"success":true,"data":{"status":"Healthy"},"error":null}"#;

/// The baseline: the same bytes from a bare axum handler, no middleware.
async fn spawn_baseline() -> anyhow::Result<SocketAddr> {
    let router = Router::new().route(
        "/health",
        get(|| async {
            (
                [(http::header::CONTENT_TYPE, "application/json")],
                HEALTH_BODY,
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

async fn spawn_paddock(dir: &std::path::Path) -> anyhow::Result<SocketAddr> {
    let mut settings = Settings::embedded(dir, SocketAddr::from(([127, 0, 0, 1], 0)));
    // The bench signs in thousands of times from one address; the limits are not under test.
    settings.auth.login_attempts_per_account = u32::MAX;
    settings.auth.attempts_per_address = u32::MAX;
    let app = Application::build(settings).await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], app.port()));
    tokio::spawn(app.run_until(std::future::pending()));
    Ok(addr)
}

fn row(name: &str, s: &Stats, baseline: Option<&Stats>) {
    let ratio = baseline
        .map(|b| format!("{:.2}x", s.rps / b.rps))
        .unwrap_or_else(|| "1.00x".into());
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
    let dir = tempfile::tempdir()?;
    let baseline = spawn_baseline().await?;
    let paddock = spawn_paddock(dir.path()).await?;
    let run = |addr: SocketAddr, load: Load| async move {
        load::run(addr, &load, o.connections, Duration::from_secs(o.seconds)).await
    };

    println!(
        "Paddock loopback benchmark: {} connections, {} s per measurement, best of {} rounds, {} cores",
        o.connections,
        o.seconds,
        o.rounds,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    let health = Load::get("/health");
    // Warm both servers (connections, allocator, SQLite caches) before measuring.
    run(baseline, health.clone()).await?;
    run(paddock, health.clone()).await?;

    let (mut best_base, mut best_paddock): (Option<Stats>, Option<Stats>) = (None, None);
    for _ in 0..o.rounds {
        // Alternate the two so drift in machine load hits both alike.
        let b = run(baseline, health.clone()).await?;
        let p = run(paddock, health.clone()).await?;
        if best_base.as_ref().is_none_or(|x| b.rps > x.rps) {
            best_base = Some(b);
        }
        if best_paddock.as_ref().is_none_or(|x| p.rps > x.rps) {
            best_paddock = Some(p);
        }
    }
    let (base, pad) = (best_base.expect("a round"), best_paddock.expect("a round"));
    row("baseline: bare axum GET /health", &base, None);
    row("paddock:  GET /health", &pad, Some(&base));

    // Identity scenarios.
    let client = Client::new(paddock);
    let creds = serde_json::json!({"email": "bench@example.com", "password": "correct horse battery", "displayName": "Bench"});
    let registered = client.post("/v1/auth/register", &creds).await?;
    let access = registered["data"]["accessToken"]
        .as_str()
        .context("register answered no token")?
        .to_owned();
    let validate = run(
        paddock,
        Load::get("/v1/auth/validate").header("authorization", &format!("Bearer {access}")),
    )
    .await?;
    row("paddock:  GET /v1/auth/validate", &validate, Some(&base));
    let mut tokens = Vec::new();
    for _ in 0..o.connections {
        let login = client.post("/v1/auth/login/email", &creds).await?;
        tokens.push(
            login["data"]["refreshToken"]
                .as_str()
                .context("login answered no token")?
                .to_owned(),
        );
    }
    let refresh = load::run_refresh_chains(paddock, tokens, Duration::from_secs(o.seconds)).await?;
    row("paddock:  POST /v1/auth/refresh", &refresh, Some(&base));

    // Login is dominated by one argon2id verify: compare with that verify alone, both at the
    // machine's parallelism.
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
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
