//! Part of the `memory` scenario: the local server's resident memory after it upgrades a board
//! of the older layout (entries and rank rows without counts, as deployments before the
//! counts wrote them) at start, for boards of 1,000 and 50,000 drivers.
//!
//! Each board is written in bulk into a fresh data directory (with its track, which the
//! backfill walks), then the local server binary is started over it and left to run the
//! backfill; once it logs that the backfill is done and has settled, its resident memory is
//! read from `/proc` and split into heap and other anonymous memory (`RssAnon`), pages of
//! mapped files (`RssFile`: the SQLite file when it is memory-mapped) and shared memory
//! (`RssShmem`: SQLite's WAL index), beside the peak. The board is then read back through the
//! API (its total, its cars) to show the backfill did its work.

use anyhow::{Context, bail};
use paddock_core::config::Settings;
use paddock_core::leaderboards::bulk::BulkBoard;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::boards::{free_port, write_board};

/// The board sizes compared; the target is the larger one within 30 MB of the smaller.
const SIZES: [usize; 2] = [1_000, 50_000];
/// How far apart the two sizes' resident memory may be.
const TARGET_MB: f64 = 30.0;

/// What `/proc/<pid>/status` says of a process's memory, bytes.
#[derive(Debug, Default, Clone, Copy)]
struct Resident {
    total: u64,
    anon: u64,
    file: u64,
    shmem: u64,
    peak: u64,
}

fn resident_of(pid: u32) -> Option<Resident> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some(Resident {
        total: field("VmRSS:")?,
        anon: field("RssAnon:")?,
        file: field("RssFile:")?,
        shmem: field("RssShmem:")?,
        peak: field("VmHWM:")?,
    })
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// Runs the comparison and prints one row per board size.
pub(crate) async fn run() -> anyhow::Result<()> {
    let server = crate::boards::local_server()?;
    let mut totals = Vec::new();
    for n in SIZES {
        let (took, resident) = one_board(&server, n).await?;
        println!(
            "{:<34} {n:>6} drivers: backfill {:>6.1} s   RSS {:>6.1} MB (anon {:>6.1}, file {:>6.1}, shmem {:>5.1})   peak {:>6.1} MB",
            "paddock:  after the start-up backfill",
            took.as_secs_f64(),
            mb(resident.total),
            mb(resident.anon),
            mb(resident.file),
            mb(resident.shmem),
            mb(resident.peak),
        );
        totals.push(resident.total);
    }
    let growth = mb(totals[1].saturating_sub(totals[0]));
    println!(
        "{:<34} {growth:.1} MB from {} to {} drivers (target: within {TARGET_MB:.0} MB) {}",
        "paddock:  backfill memory growth",
        SIZES[0],
        SIZES[1],
        if growth <= TARGET_MB { "ok" } else { "OVER" }
    );
    Ok(())
}

/// Writes a board of `n` drivers in the older layout, starts the server over it and waits
/// for its backfill; answers how long the backfill took and the memory after it.
async fn one_board(server: &Path, n: usize) -> anyhow::Result<(Duration, Resident)> {
    let dir = tempfile::tempdir()?;
    let mut settings = Settings::embedded(dir.path(), SocketAddr::from(([127, 0, 0, 1], 0)));
    let key = paddock_core::tracks::TrackKey::new("acc", "Spa-Francorchamps", "GP");
    let track = key.id();
    {
        let ports = paddock_runtime::wiring::ports(&mut settings).await?;
        ports
            .items
            .transact(vec![paddock_core::tracks::count_session_op(&key)])
            .await?;
        write_board(&ports, n, BulkBoard::older_layout(&track)).await?;
        // The store is closed before the server opens it.
    }
    let _ = Command::new("sync").status();

    let port = free_port()?;
    let log_path = dir.path().join("server.log");
    let mut child = Command::new(server)
        .env("Server__Address", format!("127.0.0.1:{port}"))
        .env("Data__Dir", dir.path())
        .env("Log__Format", "json")
        .env("RUST_LOG", "info")
        .stdout(std::fs::File::create(&log_path)?)
        .stderr(Stdio::null())
        .spawn()?;
    let outcome = wait_and_measure(child.id(), port, &log_path, &track, n).await;
    // Stopped by its own pid.
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

async fn wait_and_measure(
    pid: u32,
    port: u16,
    log_path: &Path,
    track: &paddock_core::ids::TrackId,
    n: usize,
) -> anyhow::Result<(Duration, Resident)> {
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        if log.contains("leaderboard backfill done") {
            break;
        }
        if started.elapsed() > Duration::from_secs(1_800) {
            bail!("the backfill of {n} drivers did not finish in 30 minutes");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed();
    // What the process holds once it is idle, not in the middle of the last writes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let resident = resident_of(pid).context("the server's /proc status")?;
    let base = format!("http://127.0.0.1:{port}");
    let board: Value = reqwest::get(format!("{base}/v1/leaderboards?trackId={track}&limit=1"))
        .await?
        .json()
        .await?;
    let total = board["data"]["totalEntries"].as_u64().unwrap_or(0);
    let cars: Value = reqwest::get(format!("{base}/v1/leaderboards/vehicles?trackId={track}"))
        .await?
        .json()
        .await?;
    let counted_in_cars: u64 = cars["data"]["items"].as_array().map_or(0, |c| {
        c.iter().filter_map(|c| c["totalEntries"].as_u64()).sum()
    });
    if total != n as u64 || counted_in_cars != n as u64 {
        bail!(
            "after the backfill the board counts {total} drivers and its cars {counted_in_cars}, not {n}"
        );
    }
    Ok((took, resident))
}
