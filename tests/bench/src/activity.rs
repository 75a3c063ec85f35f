//! Activity scenarios: each consumer draining a backlog of 10,000 events against the bare
//! queue drained by a consumer that does nothing (same queue, same run), and the time from an
//! upload's answer to its feed entry while uploads run at full load.

use anyhow::Context;
use paddock_core::config::Settings;
use paddock_core::events::{Event, EventKind, LeaderboardSubmitted, SessionUploaded};
use paddock_core::ids::UserId;
use paddock_core::ports::{Ports, SystemClock};
use paddock_core::queues::QueueName;
use paddock_core::workers::{self, Processor, RetryPolicy};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

use super::Client;
use crate::load;

/// Events in each backlog.
const BACKLOG: usize = 10_000;
/// Drivers the backlog's events belong to.
const DRIVERS: usize = 500;

/// A backlog mixing uploads and submissions of [`DRIVERS`] drivers.
fn backlog() -> Vec<String> {
    let now = time::OffsetDateTime::now_utc();
    (0..BACKLOG)
        .map(|i| {
            // Fixed ids with the numbers the backlog's drivers, tracks and sessions had.
            let id = |kind: usize, n: usize| format!("0000000{kind}-0000-4000-8000-{n:012}");
            let user: UserId = id(1, i % DRIVERS).parse().expect("a user id");
            let kind = if i % 4 == 3 {
                EventKind::LeaderboardSubmitted(LeaderboardSubmitted {
                    track_id: id(2, i % 7).parse().expect("a track id"),
                    session_id: id(3, i).parse().expect("a session id"),
                    lap_time_ms: 90_000 + (i % 1000) as i64,
                    previous_best_ms: Some(91_000),
                    improved: i % 8 == 3,
                    rank: Some(1 + i % 40),
                    game_id: "acc".into(),
                    track_name: format!("Track {}", i % 7),
                    track_layout: String::new(),
                    vehicle_name: "Porsche 992 GT3 R".into(),
                    passing: None,
                    car_passing: None,
                    event_passing: Vec::new(),
                })
            } else {
                EventKind::SessionUploaded(SessionUploaded {
                    session_id: id(3, i).parse().expect("a session id"),
                    track_id: id(2, i % 7).parse().expect("a track id"),
                    game_id: "acc".into(),
                    track_name: format!("Track {}", i % 7),
                    track_layout: String::new(),
                    vehicle_name: format!("Car {}", i % 11),
                    recorded_at: "2026-11-01T10:00:00Z".into(),
                    session_phase: "race".into(),
                    best_lap_ms: 90_000,
                    lap_count: 12,
                    job_id: None,
                    valid_lap_count: 11,
                    driving_ms: 1_100_000,
                    valid_lap_spread_ms: Some(700),
                })
            };
            serde_json::to_string(&Event::new(kind, Some(user), now)).expect("event")
        })
        .collect()
}

/// Sends the backlog to `queue`, runs `processor` over it as the local server does, and
/// answers events/s until the queue is empty.
async fn drain(ports: &Ports, queue: QueueName, processor: Processor) -> anyhow::Result<f64> {
    let q = ports.queues.get(queue).clone();
    for chunk in backlog().chunks(500) {
        q.send(chunk.to_vec()).await?;
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let started = Instant::now();
    let runner = tokio::spawn(paddock_runtime::local_runner::run_consumer(
        queue,
        ports.clone(),
        processor,
        RetryPolicy::default(),
        stop_rx,
    ));
    loop {
        if q.depth()
            .await?
            .context("the local queue tells its depth")?
            == 0
        {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(600),
            "backlog not drained"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    stop_tx.send(true)?;
    runner.await?;
    anyhow::ensure!(
        q.dead_letters(1).await?.is_empty(),
        "{queue}: events dead-lettered"
    );
    Ok(BACKLOG as f64 / elapsed.as_secs_f64())
}

/// Each consumer against the bare queue, on fresh embedded ports in `dir`.
pub(crate) async fn consumers(dir: &std::path::Path) -> anyhow::Result<()> {
    let settings = Settings::embedded(dir, SocketAddr::from(([127, 0, 0, 1], 0)));
    let ports = paddock_runtime::wiring::embedded_ports(&settings, Arc::new(SystemClock))?;
    let nothing: Processor = Arc::new(|_, _| Box::pin(async { Ok(()) }));
    let bare = drain(&ports, QueueName::TrackMaps, nothing).await?;
    println!(
        "{:<34} {:>10.0} events/s ({BACKLOG} events, {DRIVERS} drivers)",
        "baseline: queue drained, no work", bare
    );
    for queue in [QueueName::Achievements, QueueName::Feed] {
        let rate = drain(&ports, queue, workers::processor(queue)).await?;
        println!(
            "{:<34} {:>10.0} events/s   ratio {:.2}x",
            format!("paddock:  {queue} consumer"),
            rate,
            rate / bare
        );
    }
    Ok(())
}

/// Uploads a one-lap probe session told apart by its RecordedAt (its feed entry's date) and
/// answers the time from the upload's answer until the feed shows it, polling every 5 ms.
async fn probe(client: &Client, token: &str, n: u32) -> anyhow::Result<Duration> {
    let recorded = format!(
        "2026-10-01T{:02}:{:02}:{:02}Z",
        n / 3600 % 24,
        n / 60 % 60,
        n % 60
    );
    let body = serde_json::json!({
        "GameId": "acc", "TrackName": "Probe Ring", "TrackLayout": "", "VehicleName": "Probe",
        "RecordedAt": recorded, "BestLapMs": 60_000, "WeatherSummary": "dry",
        "SessionPhase": "practice", "ClientSessionId": format!("probe-{n}"),
        "Laps": [{"LapIndex": 0, "LapTimeMs": 60_000, "IsValid": true, "CountsForSessionTiming": true,
            "QualityCombined": 0.95, "QualityCoherence": 0.9, "QualityStability": 0.9,
            "QualityCompleteness": 1.0, "NumPenalties": 0, "NumPitstops": 0, "InPitsAtLapEnd": false}],
    });
    let stored = client.post_auth("/v1/sessions", &body, token).await?;
    anyhow::ensure!(stored["success"] == true, "probe upload failed: {stored}");
    let answered = Instant::now();
    let date = format!("{}.000Z", recorded.trim_end_matches('Z'));
    loop {
        let feed = client.get_auth("/v1/feed?limit=10", token).await?;
        let items = feed["data"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if items
            .iter()
            .any(|e| e["kind"] == "session" && e["date"] == date.as_str())
        {
            return Ok(answered.elapsed());
        }
        anyhow::ensure!(
            answered.elapsed() < Duration::from_secs(120),
            "probe {n} never reached the feed"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn latency_row(name: &str, latencies: Vec<Duration>, note: &str) {
    let count = latencies.len();
    let s = load::stats(latencies, 0, Duration::from_secs(1));
    println!(
        "{name:<34} p50 {:>7.1} ms   p99 {:>7.1} ms   ({count} probes{note})",
        s.p50.as_secs_f64() * 1e3,
        s.p99.as_secs_f64() * 1e3,
    );
}

/// Upload → feed-visible latency: probes one after another on an idle server, then while
/// four connections upload 30-lap, 5,000-point sessions for `seconds`.
pub(crate) async fn feed_latency(
    paddock: SocketAddr,
    client: &Client,
    access: &str,
    parts: (bytes::Bytes, bytes::Bytes),
    seconds: Duration,
) -> anyhow::Result<()> {
    let creds = serde_json::json!({"email": "probe@example.com", "password": "correct horse battery", "displayName": "Probe"});
    let token = client.post("/v1/auth/register", &creds).await?["data"]["accessToken"]
        .as_str()
        .context("no probe token")?
        .to_owned();
    let mut idle = Vec::new();
    for n in 0..20 {
        idle.push(probe(client, &token, n).await?);
    }
    latency_row("paddock:  upload → feed, idle", idle, "");

    let access = access.to_owned();
    let load =
        tokio::spawn(async move { load::run_uploads(paddock, &access, parts, 4, seconds).await });
    let deadline = Instant::now() + seconds;
    let mut loaded = Vec::new();
    let mut n = 100;
    while Instant::now() < deadline {
        n += 1;
        loaded.push(probe(client, &token, n).await?);
    }
    let uploads = load.await??;
    let note = format!(
        "; meanwhile {:.1} uploads/s of 30 laps and 5,000 points",
        uploads.rps
    );
    latency_row("paddock:  upload → feed, under load", loaded, &note);
    Ok(())
}
