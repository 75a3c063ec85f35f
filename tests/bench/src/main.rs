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
    let settings = Settings::embedded(dir, SocketAddr::from(([127, 0, 0, 1], 0)));
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
    Ok(())
}
