//! The service's metric definitions, and their two outlets: the Prometheus registry of
//! `GET /metrics` (always), and in AWS the CloudWatch embedded metric format
//! ([`crate::metrics_cloudwatch`], once installed). A metric is defined once, here, with its
//! name, help and labels; an update reaches both outlets with the same name and label values.
//!
//! The HTTP request metrics and the queue-depth gauge go to Prometheus only: in AWS, API
//! Gateway and Lambda measure requests per route and SQS measures its queues, and a series
//! per (method, route, status) would be hundreds of CloudWatch metrics for what is already
//! there.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};
use std::time::Duration;

use crate::metrics_cloudwatch as cloudwatch;

/// The reasons a lap is refused as implausible: the label values of
/// `paddock_implausible_laps_total`, exported at 0 from the start.
pub const IMPLAUSIBLE_LAP_REASONS: [&str; 2] = ["too_fast", "sectors_mismatch"];

/// A counter without labels, in both outlets.
pub struct Counter {
    name: &'static str,
    prometheus: IntCounter,
}

impl Counter {
    fn new(name: &'static str, help: &str) -> Self {
        Self {
            name,
            prometheus: IntCounter::new(name, help).expect("valid metric"),
        }
    }

    /// Adds one.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Adds `n`.
    pub fn inc_by(&self, n: u64) {
        self.prometheus.inc_by(n);
        if let Some(c) = cloudwatch::counter(self.name, &[], &[]) {
            c.increment(n);
        }
    }
}

/// A counter with labels, in both outlets; the label values are bounded sets (never an id).
pub struct CounterFamily {
    name: &'static str,
    labels: &'static [&'static str],
    prometheus: IntCounterVec,
}

/// One label set's counter of a [`CounterFamily`].
pub struct LabelledCounter {
    prometheus: IntCounter,
    cloudwatch: Option<::metrics::Counter>,
}

impl CounterFamily {
    fn new(name: &'static str, help: &str, labels: &'static [&'static str]) -> Self {
        Self {
            name,
            labels,
            prometheus: IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric"),
        }
    }

    /// The counter of one label set, values in the order of the labels.
    pub fn with_label_values(&self, values: &[&str]) -> LabelledCounter {
        LabelledCounter {
            prometheus: self.prometheus.with_label_values(values),
            cloudwatch: cloudwatch::counter(self.name, self.labels, values),
        }
    }
}

impl LabelledCounter {
    /// Adds one.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Adds `n`.
    pub fn inc_by(&self, n: u64) {
        self.prometheus.inc_by(n);
        if let Some(c) = &self.cloudwatch {
            c.increment(n);
        }
    }
}

/// A histogram without labels, in both outlets (CloudWatch keeps the observed values).
pub struct Histogram {
    name: &'static str,
    prometheus: prometheus::Histogram,
}

impl Histogram {
    /// Records one value.
    pub fn observe(&self, value: f64) {
        self.prometheus.observe(value);
        if let Some(h) = cloudwatch::histogram(self.name, &[], &[]) {
            h.record(value);
        }
    }
}

/// One metric of both outlets.
enum Outlet<'a> {
    Counter(&'a Counter),
    Family(&'a CounterFamily),
    Histogram(&'a Histogram),
}

impl Outlet<'_> {
    fn name(&self) -> &'static str {
        match self {
            Outlet::Counter(c) => c.name,
            Outlet::Family(f) => f.name,
            Outlet::Histogram(h) => h.name,
        }
    }

    /// The Prometheus collector (a handle on the same values).
    fn collector(&self) -> Box<dyn prometheus::core::Collector> {
        match self {
            Outlet::Counter(c) => Box::new(c.prometheus.clone()),
            Outlet::Family(f) => Box::new(f.prometheus.clone()),
            Outlet::Histogram(h) => Box::new(h.prometheus.clone()),
        }
    }
}

/// What CloudWatch keeps of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloudWatchKind {
    /// A counter: its increments, read back as their sum.
    Counter,
    /// A histogram: its observed values, read back as their count and sum (not bucketed).
    Histogram,
}

/// A metric that reaches CloudWatch, as the Prometheus text names and describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudWatchMetric {
    /// The metric's name (also its CloudWatch metric name).
    pub name: &'static str,
    /// The `# HELP` text.
    pub help: String,
    /// The label names, in order (its CloudWatch dimensions).
    pub labels: Vec<String>,
    /// What CloudWatch keeps of it.
    pub kind: CloudWatchKind,
}

/// The request count and latency of one (method, route, status), resolved once.
#[derive(Clone)]
struct RequestSeries {
    method: &'static str,
    status: u16,
    count: IntCounter,
    latency: prometheus::Histogram,
}

/// Every metric the service exports.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    /// The series of each route seen so far, by route: a request then costs one map read
    /// instead of a label lookup per metric, the status formatted as text and the labels
    /// hashed twice. Bounded like the labels: routes are templates, methods a fixed set,
    /// statuses three digits.
    request_series: RwLock<HashMap<String, Vec<RequestSeries>>>,
    /// Events relayed from the outbox to the queues.
    pub outbox_relayed: Counter,
    /// Events handled by the consumers, by consumer, kind and outcome (`ok`, `retry`,
    /// `dead_letter`).
    pub events: CounterFamily,
    /// Achievements unlocked, by achievement id (a fixed catalogue).
    pub achievements_unlocked: CounterFamily,
    /// Items removed by the retention sweep, by kind.
    pub retention_deleted: CounterFamily,
    /// Messages waiting or in flight per queue, where the adapter can read it (Prometheus
    /// only: SQS reports its own).
    pub queue_depth: IntGaugeVec,
    /// Items the item store read (returned by gets, examined by queries), by backend
    /// (Prometheus only: in AWS, DynamoDB reports its consumed capacity per table).
    pub store_items_read: IntCounterVec,
    /// Read capacity DynamoDB reported consumed, in thousandths of a unit (Prometheus only).
    pub store_read_milliunits: IntCounter,
    /// Sign-ins, by method (`email`, `provider`) and result (`ok`, `failed`, `limited`,
    /// `error`).
    pub sign_ins: CounterFamily,
    /// Language-model calls, by outcome.
    pub ai_calls: CounterFamily,
    /// Language-model tokens, by direction (`input`, `output`).
    pub ai_tokens: CounterFamily,
    /// Language-model call latency, seconds.
    pub ai_latency: Histogram,
    /// Stored coaching answers looked up, by result (`hit`, `miss`).
    pub ai_cache: CounterFamily,
    /// Share-pack uploads, by result (`ok`, `refused`) and reason.
    pub sharepack_uploads: CounterFamily,
    /// Bytes of share packs stored.
    pub sharepack_bytes: Counter,
    /// Share-pack downloads.
    pub sharepack_downloads: Counter,
    /// Session uploads, by result (`created`, `duplicate`).
    pub sessions_uploaded: CounterFamily,
    /// Leaderboard submissions, by result (`improved`, `unchanged`, `rejected`).
    pub leaderboard_submissions: CounterFamily,
    /// Leaderboard page lookups, by cache result (`hit`, `miss`).
    pub leaderboard_cache: CounterFamily,
    /// Link previews drawn (a cache miss each), by preview (`board`, `driver`).
    pub previews_rendered: CounterFamily,
    /// Track-processing job outcomes (`done`, `failed`, `retry`).
    pub track_jobs: CounterFamily,
    /// Leaderboard submissions refused as implausible, by reason (`too_fast`,
    /// `sectors_mismatch`).
    pub implausible_laps: CounterFamily,
    /// Webhook delivery attempts, by outcome (`ok`, `failed`).
    pub webhook_deliveries: CounterFamily,
    /// Data exports, by result (`complete`, `failed`).
    pub exports: CounterFamily,
    /// Account deletions, by stage (`started`, `finished`).
    pub account_deletions: CounterFamily,
    /// Items and objects removed by account deletion jobs, by kind of driver data.
    pub account_deletion_items: CounterFamily,
}

/// The series of `method` and `status` among one route's.
fn find_series<'a>(
    series: &'a [RequestSeries],
    method: &str,
    status: u16,
) -> Option<&'a RequestSeries> {
    series
        .iter()
        .find(|s| s.status == status && s.method == method)
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
pub fn global() -> &'static Metrics {
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
        let outbox_relayed = Counter::new(
            "paddock_outbox_relayed_total",
            "Outbox events delivered to the event queues.",
        );
        let events = CounterFamily::new(
            "paddock_events_processed_total",
            "Queued events handled by consumers, by consumer (queue), kind and outcome.",
            &["consumer", "kind", "outcome"],
        );
        let achievements_unlocked = CounterFamily::new(
            "paddock_achievements_unlocked_total",
            "Achievements unlocked, by achievement id.",
            &["achievement"],
        );
        let retention_deleted = CounterFamily::new(
            "paddock_retention_deleted_total",
            "Expired items removed by the retention sweep, by kind.",
            &["kind"],
        );
        let queue_depth = IntGaugeVec::new(
            Opts::new(
                "paddock_queue_depth",
                "Messages waiting or in flight per queue (local server; SQS reports its own).",
            ),
            &["queue"],
        )
        .expect("valid metric");
        let store_items_read = IntCounterVec::new(
            Opts::new(
                "paddock_store_items_read_total",
                "Items the item store read: returned by gets, examined by queries (by backend).",
            ),
            &["backend"],
        )
        .expect("valid metric");
        let store_read_milliunits = IntCounter::new(
            "paddock_store_read_capacity_milliunits_total",
            "Read capacity DynamoDB reported consumed, in thousandths of a unit.",
        )
        .expect("valid metric");
        let sign_ins = CounterFamily::new(
            "paddock_sign_ins_total",
            "Sign-ins, by method (email or provider) and result (ok, failed, limited or error).",
            &["method", "result"],
        );
        let ai_calls = CounterFamily::new(
            "paddock_ai_upstream_calls_total",
            "Language-model calls, by outcome (ok, rejected, busy, upstream_error, timeout).",
            &["outcome"],
        );
        let ai_tokens = CounterFamily::new(
            "paddock_ai_tokens_total",
            "Language-model tokens counted by the provider, by direction (input or output).",
            &["direction"],
        );
        let ai_latency = Histogram {
            name: "paddock_ai_upstream_duration_seconds",
            prometheus: prometheus::Histogram::with_opts(
                HistogramOpts::new(
                    "paddock_ai_upstream_duration_seconds",
                    "Language-model call latency in seconds.",
                )
                .buckets(vec![0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0]),
            )
            .expect("valid metric"),
        };
        let ai_cache = CounterFamily::new(
            "paddock_ai_cache_total",
            "Stored coaching answers looked up, by result (hit or miss).",
            &["result"],
        );
        let sharepack_uploads = CounterFamily::new(
            "paddock_sharepack_uploads_total",
            "Share-pack uploads, by result (ok or refused) and reason.",
            &["result", "reason"],
        );
        let sharepack_bytes = Counter::new(
            "paddock_sharepack_bytes_stored_total",
            "Bytes of share packs stored.",
        );
        let sharepack_downloads = Counter::new(
            "paddock_sharepack_downloads_total",
            "Share-pack downloads (streamed or redirected).",
        );
        let sessions_uploaded = CounterFamily::new(
            "paddock_sessions_uploaded_total",
            "Session uploads, by result (created or duplicate).",
            &["result"],
        );
        let leaderboard_submissions = CounterFamily::new(
            "paddock_leaderboard_submissions_total",
            "Leaderboard submissions, by result (improved, unchanged or rejected).",
            &["result"],
        );
        let leaderboard_cache = CounterFamily::new(
            "paddock_leaderboard_cache_total",
            "Leaderboard page lookups, by in-process cache result (hit or miss).",
            &["result"],
        );
        let previews_rendered = CounterFamily::new(
            "paddock_previews_rendered_total",
            "Link previews (PNG) drawn, by preview (board or driver); a cached one is not drawn again.",
            &["preview"],
        );
        let track_jobs = CounterFamily::new(
            "paddock_track_jobs_total",
            "Track-processing job outcomes (done, failed or retry).",
            &["outcome"],
        );
        let implausible_laps = CounterFamily::new(
            "paddock_implausible_laps_total",
            "Leaderboard submissions refused as implausible laps, by reason.",
            &["reason"],
        );
        // The reasons are a fixed set: export each from the start, at 0, so a rate over the
        // series works before the first refusal.
        for reason in IMPLAUSIBLE_LAP_REASONS {
            implausible_laps.prometheus.with_label_values(&[reason]);
        }
        let webhook_deliveries = CounterFamily::new(
            "paddock_webhook_deliveries_total",
            "Webhook delivery attempts, by outcome (ok or failed).",
            &["outcome"],
        );
        let exports = CounterFamily::new(
            "paddock_exports_total",
            "Data exports, by result (complete or failed).",
            &["result"],
        );
        let account_deletions = CounterFamily::new(
            "paddock_account_deletions_total",
            "Account deletions, by stage (started: the account is gone and the job queued; finished: every record removed).",
            &["stage"],
        );
        let account_deletion_items = CounterFamily::new(
            "paddock_account_deletion_items_total",
            "Items and objects removed by account deletion jobs, by kind of driver data.",
            &["kind"],
        );
        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
            Box::new(queue_depth.clone()),
            Box::new(store_items_read.clone()),
            Box::new(store_read_milliunits.clone()),
        ] {
            registry.register(collector).expect("unique metric");
        }
        let metrics = Self {
            registry,
            requests,
            latency,
            request_series: RwLock::default(),
            outbox_relayed,
            events,
            achievements_unlocked,
            retention_deleted,
            queue_depth,
            store_items_read,
            store_read_milliunits,
            sign_ins,
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
            previews_rendered,
            track_jobs,
            implausible_laps,
            webhook_deliveries,
            exports,
            account_deletions,
            account_deletion_items,
        };
        for outlet in metrics.cloudwatch_outlets() {
            metrics
                .registry
                .register(outlet.collector())
                .expect("unique metric");
        }
        metrics
    }

    /// The metrics with both outlets: the one list that registers them with Prometheus and
    /// that `GET /metrics` of a Lambda function reads back from CloudWatch.
    fn cloudwatch_outlets(&self) -> [Outlet<'_>; 22] {
        [
            Outlet::Counter(&self.outbox_relayed),
            Outlet::Counter(&self.sharepack_bytes),
            Outlet::Counter(&self.sharepack_downloads),
            Outlet::Family(&self.events),
            Outlet::Family(&self.achievements_unlocked),
            Outlet::Family(&self.retention_deleted),
            Outlet::Family(&self.sign_ins),
            Outlet::Family(&self.ai_calls),
            Outlet::Family(&self.ai_tokens),
            Outlet::Family(&self.ai_cache),
            Outlet::Family(&self.sharepack_uploads),
            Outlet::Family(&self.sessions_uploaded),
            Outlet::Family(&self.leaderboard_submissions),
            Outlet::Family(&self.leaderboard_cache),
            Outlet::Family(&self.previews_rendered),
            Outlet::Family(&self.track_jobs),
            Outlet::Family(&self.implausible_laps),
            Outlet::Family(&self.webhook_deliveries),
            Outlet::Family(&self.exports),
            Outlet::Family(&self.account_deletions),
            Outlet::Family(&self.account_deletion_items),
            Outlet::Histogram(&self.ai_latency),
        ]
    }

    /// The metrics that reach CloudWatch, with the help and labels the Prometheus text gives
    /// them.
    pub fn cloudwatch_metrics(&self) -> Vec<CloudWatchMetric> {
        self.cloudwatch_outlets()
            .iter()
            .map(|outlet| {
                let collector = outlet.collector();
                let desc = collector.desc()[0];
                CloudWatchMetric {
                    name: outlet.name(),
                    help: desc.help.clone(),
                    labels: desc.variable_labels.clone(),
                    kind: match outlet {
                        Outlet::Histogram(_) => CloudWatchKind::Histogram,
                        Outlet::Counter(_) | Outlet::Family(_) => CloudWatchKind::Counter,
                    },
                }
            })
            .collect()
    }

    /// Records one answered request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        // `route` is the matched route template or `unmatched`, never the path; the method
        // is bounded by `method_label`.
        let method = method_label(method);
        let seconds = elapsed.as_secs_f64();
        let count = |s: &RequestSeries| {
            s.count.inc();
            s.latency.observe(seconds);
        };
        if !std::ptr::eq(self, global()) {
            count(&self.series(method, route, status));
            return;
        }
        // The process's metrics: each thread keeps the handles it has used, so a request
        // takes no lock (a read lock's count is a write the cores take turns at).
        thread_local! {
            static SEEN: RefCell<HashMap<String, Vec<RequestSeries>>> =
                RefCell::new(HashMap::new());
        }
        let counted = SEEN.with_borrow(|seen| {
            seen.get(route)
                .and_then(|series| find_series(series, method, status))
                .map(count)
        });
        if counted.is_none() {
            let series = self.series(method, route, status);
            count(&series);
            SEEN.with_borrow_mut(|seen| seen.entry(route.to_owned()).or_default().push(series));
        }
    }

    /// The request series of (method, route, status), made on its first request.
    fn series(&self, method: &'static str, route: &str, status: u16) -> RequestSeries {
        // A poisoned lock only means another request panicked while adding a series; the
        // map itself is whole (an insert either happened or not).
        let known = self
            .request_series
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(route)
            .and_then(|series| find_series(series, method, status).cloned());
        if let Some(known) = known {
            return known;
        }
        let status_text = status.to_string();
        let labels = [method, route, status_text.as_str()];
        let added = RequestSeries {
            method,
            status,
            count: self.requests.with_label_values(&labels),
            latency: self.latency.with_label_values(&labels),
        };
        let mut map = self
            .request_series
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let series = map.entry(route.to_owned()).or_default();
        // Another request may have added it meanwhile: both handles are the same series.
        if let Some(known) = find_series(series, method, status) {
            return known.clone();
        }
        series.push(added.clone());
        added
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding");
        String::from_utf8(out).expect("utf-8 exposition")
    }
}

#[cfg(test)]
mod tests;
