//! Process metrics in Prometheus text format (`GET /metrics`).

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use std::sync::LazyLock;
use std::time::Duration;

/// The reasons a lap is refused as implausible: the label values of
/// `paddock_implausible_laps_total`, exported at 0 from the start.
pub(crate) const IMPLAUSIBLE_LAP_REASONS: [&str; 2] = ["too_fast", "sectors_mismatch"];

/// Every metric the service exports.
pub(crate) struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    /// Events relayed from the outbox to the queues.
    pub outbox_relayed: IntCounter,
    /// Events handled by the consumers, by consumer, kind and outcome (`ok`, `retry`,
    /// `dead_letter`).
    pub events: IntCounterVec,
    /// Achievements unlocked, by achievement id (a fixed catalogue).
    pub achievements_unlocked: IntCounterVec,
    /// Items removed by the retention sweep, by kind.
    pub retention_deleted: IntCounterVec,
    /// Messages waiting or in flight per queue, where the adapter can read it.
    pub queue_depth: IntGaugeVec,
    /// Language-model calls, by outcome.
    pub ai_calls: IntCounterVec,
    /// Language-model tokens, by direction (`input`, `output`).
    pub ai_tokens: IntCounterVec,
    /// Language-model call latency, seconds.
    pub ai_latency: prometheus::Histogram,
    /// Stored coaching answers looked up, by result (`hit`, `miss`).
    pub ai_cache: IntCounterVec,
    /// Share-pack uploads, by result (`ok`, `refused`) and reason.
    pub sharepack_uploads: IntCounterVec,
    /// Bytes of share packs stored.
    pub sharepack_bytes: IntCounter,
    /// Share-pack downloads.
    pub sharepack_downloads: IntCounter,
    /// Session uploads, by result (`created`, `duplicate`).
    pub sessions_uploaded: IntCounterVec,
    /// Leaderboard submissions, by result (`improved`, `unchanged`, `rejected`).
    pub leaderboard_submissions: IntCounterVec,
    /// Leaderboard page lookups, by cache result (`hit`, `miss`).
    pub leaderboard_cache: IntCounterVec,
    /// Track-processing job outcomes (`done`, `failed`, `retry`).
    pub track_jobs: IntCounterVec,
    /// Leaderboard submissions refused as implausible, by reason (`too_fast`,
    /// `sectors_mismatch`).
    pub implausible_laps: IntCounterVec,
    /// Data exports, by result (`complete`, `failed`).
    pub exports: IntCounterVec,
    /// Account deletions, by stage (`started`, `finished`).
    pub account_deletions: IntCounterVec,
    /// Items and objects removed by account deletion jobs, by kind of driver data.
    pub account_deletion_items: IntCounterVec,
}

fn counter_vec(name: &str, help: &str, label: &str) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), &[label]).expect("valid metric")
}

/// The request methods that are labels of their own.
const STANDARD_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
];

/// The `method` label of a request: a standard method as it is, any other `other`. Hyper
/// accepts any token as a method, so labelling by the raw method would let a client create
/// series without end.
fn method_label(method: &str) -> &'static str {
    STANDARD_METHODS
        .into_iter()
        .find(|m| *m == method)
        .unwrap_or("other")
}

static GLOBAL: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process-wide metrics.
pub(crate) fn global() -> &'static Metrics {
    &GLOBAL
}

impl Metrics {
    fn new() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests answered, by method, matched route and status.",
            ),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "HTTP request latency in seconds, by method, matched route and status.",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0,
            ]),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let outbox_relayed = IntCounter::new(
            "paddock_outbox_relayed_total",
            "Outbox events delivered to the event queues.",
        )
        .expect("valid metric");
        let events = IntCounterVec::new(
            Opts::new(
                "paddock_events_processed_total",
                "Queued events handled by consumers, by consumer (queue), kind and outcome.",
            ),
            &["consumer", "kind", "outcome"],
        )
        .expect("valid metric");
        let achievements_unlocked = counter_vec(
            "paddock_achievements_unlocked_total",
            "Achievements unlocked, by achievement id.",
            "achievement",
        );
        let retention_deleted = counter_vec(
            "paddock_retention_deleted_total",
            "Expired items removed by the retention sweep, by kind.",
            "kind",
        );
        let queue_depth = IntGaugeVec::new(
            Opts::new(
                "paddock_queue_depth",
                "Messages waiting or in flight per queue (local server; SQS reports its own).",
            ),
            &["queue"],
        )
        .expect("valid metric");
        let ai_calls = counter_vec(
            "paddock_ai_upstream_calls_total",
            "Language-model calls, by outcome (ok, rejected, busy, upstream_error, timeout).",
            "outcome",
        );
        let ai_tokens = counter_vec(
            "paddock_ai_tokens_total",
            "Language-model tokens counted by the provider, by direction (input or output).",
            "direction",
        );
        let ai_latency = prometheus::Histogram::with_opts(
            HistogramOpts::new(
                "paddock_ai_upstream_duration_seconds",
                "Language-model call latency in seconds.",
            )
            .buckets(vec![0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0]),
        )
        .expect("valid metric");
        let ai_cache = counter_vec(
            "paddock_ai_cache_total",
            "Stored coaching answers looked up, by result (hit or miss).",
            "result",
        );
        let sharepack_uploads = IntCounterVec::new(
            Opts::new(
                "paddock_sharepack_uploads_total",
                "Share-pack uploads, by result (ok or refused) and reason.",
            ),
            &["result", "reason"],
        )
        .expect("valid metric");
        let sharepack_bytes = IntCounter::new(
            "paddock_sharepack_bytes_stored_total",
            "Bytes of share packs stored.",
        )
        .expect("valid metric");
        let sharepack_downloads = IntCounter::new(
            "paddock_sharepack_downloads_total",
            "Share-pack downloads (streamed or redirected).",
        )
        .expect("valid metric");
        let sessions_uploaded = counter_vec(
            "paddock_sessions_uploaded_total",
            "Session uploads, by result (created or duplicate).",
            "result",
        );
        let leaderboard_submissions = counter_vec(
            "paddock_leaderboard_submissions_total",
            "Leaderboard submissions, by result (improved, unchanged or rejected).",
            "result",
        );
        let leaderboard_cache = counter_vec(
            "paddock_leaderboard_cache_total",
            "Leaderboard page lookups, by in-process cache result (hit or miss).",
            "result",
        );
        let track_jobs = counter_vec(
            "paddock_track_jobs_total",
            "Track-processing job outcomes (done, failed or retry).",
            "outcome",
        );
        let implausible_laps = counter_vec(
            "paddock_implausible_laps_total",
            "Leaderboard submissions refused as implausible laps, by reason.",
            "reason",
        );
        // The reasons are a fixed set: export each from the start, at 0, so a rate over the
        // series works before the first refusal.
        for reason in IMPLAUSIBLE_LAP_REASONS {
            implausible_laps.with_label_values(&[reason]);
        }
        let exports = counter_vec(
            "paddock_exports_total",
            "Data exports, by result (complete or failed).",
            "result",
        );
        let account_deletions = counter_vec(
            "paddock_account_deletions_total",
            "Account deletions, by stage (started: the account is gone and the job queued; finished: every record removed).",
            "stage",
        );
        let account_deletion_items = counter_vec(
            "paddock_account_deletion_items_total",
            "Items and objects removed by account deletion jobs, by kind of driver data.",
            "kind",
        );
        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(exports.clone()),
            Box::new(account_deletions.clone()),
            Box::new(account_deletion_items.clone()),
            Box::new(latency.clone()),
            Box::new(outbox_relayed.clone()),
            Box::new(events.clone()),
            Box::new(achievements_unlocked.clone()),
            Box::new(retention_deleted.clone()),
            Box::new(queue_depth.clone()),
            Box::new(ai_calls.clone()),
            Box::new(ai_tokens.clone()),
            Box::new(ai_latency.clone()),
            Box::new(ai_cache.clone()),
            Box::new(sharepack_uploads.clone()),
            Box::new(sharepack_bytes.clone()),
            Box::new(sharepack_downloads.clone()),
            Box::new(sessions_uploaded.clone()),
            Box::new(leaderboard_submissions.clone()),
            Box::new(leaderboard_cache.clone()),
            Box::new(track_jobs.clone()),
            Box::new(implausible_laps.clone()),
        ] {
            registry.register(collector).expect("unique metric");
        }
        Self {
            registry,
            requests,
            latency,
            outbox_relayed,
            events,
            achievements_unlocked,
            retention_deleted,
            queue_depth,
            ai_calls,
            ai_tokens,
            ai_latency,
            ai_cache,
            sharepack_uploads,
            sharepack_bytes,
            sharepack_downloads,
            sessions_uploaded,
            leaderboard_submissions,
            leaderboard_cache,
            track_jobs,
            implausible_laps,
            exports,
            account_deletions,
            account_deletion_items,
        }
    }

    /// Records one answered request.
    pub(crate) fn observe_request(
        &self,
        method: &str,
        route: &str,
        status: u16,
        elapsed: Duration,
    ) {
        // `route` is the matched route template or `unmatched`, never the path; the method
        // is bounded by `method_label`.
        let status = status.to_string();
        let labels = [method_label(method), route, status.as_str()];
        self.requests.with_label_values(&labels).inc();
        self.latency
            .with_label_values(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// The exposition text.
    pub(crate) fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding");
        String::from_utf8(out).expect("utf-8 exposition")
    }
}
