//! The `metric-lines` scenario: what the CloudWatch outlet adds to one Lambda invocation.
//!
//! For three invocation shapes (a sign-in, a session upload, a consumer batch of ten events
//! with a retry and a dead letter) it measures the metric updates alone (Prometheus only, as
//! the local server does them), then, with the embedded-metric outlet installed, the same
//! updates plus the end-of-invocation flush, written to a buffer; it prints the time each
//! takes, the time added, and the bytes of metric lines each invocation writes to its log.
//! Installing the outlet is for the whole process, so this scenario runs only when named.

use paddock_core::metrics::global;
use paddock_core::metrics_cloudwatch::{self, Invocation};
use std::time::{Duration, Instant};

/// One invocation's metric updates.
type Shape = (&'static str, fn());

fn sign_in() {
    global().sign_ins.with_label_values(&["email", "ok"]).inc();
}

fn upload() {
    let m = global();
    m.sessions_uploaded.with_label_values(&["created"]).inc();
    m.leaderboard_submissions
        .with_label_values(&["improved"])
        .inc();
}

fn consumer_batch() {
    let events = &global().events;
    for _ in 0..8 {
        events
            .with_label_values(&["feed", "session.uploaded", "ok"])
            .inc();
    }
    events
        .with_label_values(&["feed", "session.uploaded", "retry"])
        .inc();
    events
        .with_label_values(&["feed", "unreadable", "dead_letter"])
        .inc();
}

const SHAPES: [Shape; 3] = [
    ("sign-in", sign_in),
    ("session upload", upload),
    ("consumer batch of 10", consumer_batch),
];

/// Median time of `f` over `rounds` runs of `batch` calls, per call.
fn per_call(rounds: usize, batch: u32, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..batch {
                f();
            }
            started.elapsed() / batch
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Runs the scenario.
pub(crate) fn run() -> anyhow::Result<()> {
    const ROUNDS: usize = 15;
    const BATCH: u32 = 2_000;
    let baselines: Vec<Duration> = SHAPES
        .iter()
        .map(|(_, shape)| per_call(ROUNDS, BATCH, shape))
        .collect();
    metrics_cloudwatch::install("Paddock/bench").map_err(anyhow::Error::msg)?;
    let invocation = Invocation {
        request_id: Some("8476a536-e9f4-11e8-9739-2dfe598c3fcd"),
        trace_id: Some(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        ),
    };
    println!(
        "{:<34} {:>14} {:>18} {:>12} {:>14}",
        "invocation (median)", "updates µs", "updates+flush µs", "added µs", "log bytes"
    );
    for ((name, shape), baseline) in SHAPES.iter().zip(baselines) {
        let mut lines = Vec::new();
        let with_outlet = per_call(ROUNDS, BATCH, || {
            shape();
            lines.clear();
            metrics_cloudwatch::flush_to(&invocation, &mut lines);
        });
        let bytes = lines.len();
        println!(
            "{name:<34} {:>14.2} {:>18.2} {:>12.2} {bytes:>14}",
            baseline.as_secs_f64() * 1e6,
            with_outlet.as_secs_f64() * 1e6,
            (with_outlet.saturating_sub(baseline)).as_secs_f64() * 1e6,
        );
    }
    Ok(())
}
