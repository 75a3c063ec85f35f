//! The service's metrics, over one facade: the `metrics` crate. Each metric is defined once,
//! in [`definitions`], with its name, help, labels, unit and kind; an update is recorded once,
//! through a `metrics` handle, and reaches the process's one outlet:
//!
//! - locally, the Prometheus recorder of `metrics-exporter-prometheus`, rendered by
//!   `GET /metrics` (with the `prometheus` feature, which the local server and the tests
//!   enable; a Lambda function's binary does not link it);
//! - in Lambda, once [`crate::metrics_cloudwatch::install`] has run, the embedded metric
//!   format recorder (`metrics_cloudwatch_embedded`), the process's global `metrics`
//!   recorder.
//!
//! The HTTP request metrics, the queue-depth gauge and the store's read counts are not sent
//! to CloudWatch: in AWS, API Gateway and Lambda measure requests per route, SQS measures its
//! queues and DynamoDB its consumed capacity, and a series per (method, route, status) would
//! be hundreds of CloudWatch metrics for what is already there.

use ::metrics::{Key, Label, Metadata, Recorder};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

pub use crate::metric_definitions::{
    self as definitions, Definition, IMPLAUSIBLE_LAP_REASONS, Kind,
};
use crate::metrics_cloudwatch as cloudwatch;

#[cfg_attr(feature = "prometheus", path = "metrics/prometheus_outlet.rs")]
#[cfg_attr(not(feature = "prometheus"), path = "metrics/no_local_outlet.rs")]
mod local_outlet;
use local_outlet::LocalOutlet;

/// Where the updates of this crate come from, for the recorders' metadata.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), ::metrics::Level::INFO, Some(module_path!()));

/// How often the Prometheus recorder folds the histograms' recorded values into their
/// buckets: without it, the values of a server nobody scrapes would be kept one by one.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The outlet a [`Metrics`] records into: its own Prometheus recorder, unless the CloudWatch
/// outlet is installed (then the global `metrics` recorder, for the metrics that go there).
struct Outlet {
    /// None in a Lambda function, whose metrics were made after the CloudWatch outlet was
    /// installed: nothing would read the recorder, and building it (every definition
    /// described and registered, an upkeep thread) fell in the function's first request.
    prometheus: Option<LocalOutlet>,
}

impl Outlet {
    /// The key of `definition` with label `values`, in the order of its labels.
    fn key(definition: &Definition, values: &[&str]) -> Key {
        debug_assert_eq!(definition.labels.len(), values.len(), "{}", definition.name);
        let labels: Vec<Label> = definition
            .labels
            .iter()
            .zip(values)
            .map(|(name, value)| Label::new(*name, (*value).to_owned()))
            .collect();
        Key::from_parts(definition.name, labels)
    }

    /// Runs `register` on the recorder that takes `definition`'s updates, or answers
    /// `none` when no outlet takes them (a Prometheus-only metric in Lambda).
    fn with_recorder<T>(
        &self,
        definition: &Definition,
        none: impl FnOnce() -> T,
        register: impl FnOnce(&dyn Recorder) -> T,
    ) -> T {
        match &self.prometheus {
            _ if cloudwatch::installed() && definition.cloudwatch => {
                ::metrics::with_recorder(register)
            }
            Some(prometheus) if !cloudwatch::installed() => register(prometheus.recorder()),
            _ => none(),
        }
    }

    fn counter(&self, definition: &Definition, values: &[&str]) -> ::metrics::Counter {
        let key = Self::key(definition, values);
        self.with_recorder(definition, ::metrics::Counter::noop, |r| {
            r.register_counter(&key, &METADATA)
        })
    }

    fn gauge(&self, definition: &Definition, values: &[&str]) -> ::metrics::Gauge {
        let key = Self::key(definition, values);
        self.with_recorder(definition, ::metrics::Gauge::noop, |r| {
            r.register_gauge(&key, &METADATA)
        })
    }

    fn histogram(&self, definition: &Definition, values: &[&str]) -> ::metrics::Histogram {
        let key = Self::key(definition, values);
        self.with_recorder(definition, ::metrics::Histogram::noop, |r| {
            r.register_histogram(&key, &METADATA)
        })
    }
}

/// A counter without labels.
pub struct Counter {
    definition: &'static Definition,
    outlet: Arc<Outlet>,
}

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Adds `n`.
    pub fn inc_by(&self, n: u64) {
        self.outlet.counter(self.definition, &[]).increment(n);
    }
}

/// A counter with labels; the label values are bounded sets (never an id).
pub struct CounterFamily {
    definition: &'static Definition,
    outlet: Arc<Outlet>,
}

/// One label set's counter of a [`CounterFamily`].
pub struct LabelledCounter(::metrics::Counter);

impl CounterFamily {
    /// The counter of one label set, values in the order of the labels.
    pub fn with_label_values(&self, values: &[&str]) -> LabelledCounter {
        LabelledCounter(self.outlet.counter(self.definition, values))
    }
}

impl LabelledCounter {
    /// Adds one.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Adds `n`.
    pub fn inc_by(&self, n: u64) {
        self.0.increment(n);
    }
}

/// A gauge with labels.
pub struct GaugeFamily {
    definition: &'static Definition,
    outlet: Arc<Outlet>,
}

/// One label set's gauge of a [`GaugeFamily`].
pub struct LabelledGauge(::metrics::Gauge);

impl GaugeFamily {
    /// The gauge of one label set, values in the order of the labels.
    pub fn with_label_values(&self, values: &[&str]) -> LabelledGauge {
        LabelledGauge(self.outlet.gauge(self.definition, values))
    }
}

impl LabelledGauge {
    /// Sets the value.
    pub fn set(&self, value: i64) {
        // Gauges are floats in both outlets; the values set here (queue depths) are far
        // below 2^53, so none is rounded.
        self.0.set(value as f64);
    }
}

/// A histogram without labels.
pub struct Histogram {
    definition: &'static Definition,
    outlet: Arc<Outlet>,
}

impl Histogram {
    /// Records one value.
    pub fn observe(&self, value: f64) {
        self.outlet.histogram(self.definition, &[]).record(value);
    }
}

/// A histogram with labels.
pub struct HistogramFamily {
    definition: &'static Definition,
    outlet: Arc<Outlet>,
}

impl HistogramFamily {
    /// Records one value in the histogram of one label set.
    pub fn observe(&self, values: &[&str], value: f64) {
        self.outlet.histogram(self.definition, values).record(value);
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

/// Every metric the service exports.
pub struct Metrics {
    outlet: Arc<Outlet>,
    /// HTTP requests answered, by method, route and status (Prometheus only).
    requests: CounterFamily,
    /// HTTP request latency, by method, route and status (Prometheus only).
    latency: HistogramFamily,
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
    pub queue_depth: GaugeFamily,
    /// Items the item store read (returned by gets, examined by queries), by backend
    /// (Prometheus only: in AWS, DynamoDB reports its consumed capacity per table).
    pub store_items_read: CounterFamily,
    /// Read capacity DynamoDB reported consumed, in thousandths of a unit (Prometheus only).
    pub store_read_milliunits: Counter,
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
    /// Link previews drawn (a cache miss each), by preview (`board`, `driver`, `event`).
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

static GLOBAL: LazyLock<Metrics> = LazyLock::new(|| {
    let metrics = Metrics::new();
    if metrics.outlet.prometheus.is_none() {
        return metrics;
    }
    let outlet = Arc::downgrade(&metrics.outlet);
    let upkeep = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            while let Some(outlet) = outlet.upgrade() {
                if let Some(prometheus) = &outlet.prometheus {
                    prometheus.upkeep();
                }
                drop(outlet);
                std::thread::sleep(UPKEEP_EVERY);
            }
        });
    if let Err(e) = upkeep {
        // `render` folds the values too; only an unscraped server keeps them longer.
        tracing::warn!(error = %e, "could not start the metrics upkeep thread");
    }
    metrics
});

/// The process-wide metrics.
pub fn global() -> &'static Metrics {
    &GLOBAL
}

impl Metrics {
    fn new() -> Self {
        use definitions as d;
        let local = cfg!(feature = "prometheus") && !cloudwatch::installed();
        let prometheus = local.then(LocalOutlet::new);
        let outlet = Arc::new(Outlet { prometheus });
        let counter = |definition| Counter {
            definition,
            outlet: outlet.clone(),
        };
        let family = |definition| CounterFamily {
            definition,
            outlet: outlet.clone(),
        };
        Self {
            requests: family(&d::HTTP_REQUESTS),
            latency: HistogramFamily {
                definition: &d::HTTP_REQUEST_DURATION,
                outlet: outlet.clone(),
            },
            outbox_relayed: counter(&d::OUTBOX_RELAYED),
            events: family(&d::EVENTS_PROCESSED),
            achievements_unlocked: family(&d::ACHIEVEMENTS_UNLOCKED),
            retention_deleted: family(&d::RETENTION_DELETED),
            queue_depth: GaugeFamily {
                definition: &d::QUEUE_DEPTH,
                outlet: outlet.clone(),
            },
            store_items_read: family(&d::STORE_ITEMS_READ),
            store_read_milliunits: counter(&d::STORE_READ_MILLIUNITS),
            sign_ins: family(&d::SIGN_INS),
            ai_calls: family(&d::AI_CALLS),
            ai_tokens: family(&d::AI_TOKENS),
            ai_latency: Histogram {
                definition: &d::AI_LATENCY,
                outlet: outlet.clone(),
            },
            ai_cache: family(&d::AI_CACHE),
            sharepack_uploads: family(&d::SHAREPACK_UPLOADS),
            sharepack_bytes: counter(&d::SHAREPACK_BYTES),
            sharepack_downloads: counter(&d::SHAREPACK_DOWNLOADS),
            sessions_uploaded: family(&d::SESSIONS_UPLOADED),
            leaderboard_submissions: family(&d::LEADERBOARD_SUBMISSIONS),
            leaderboard_cache: family(&d::LEADERBOARD_CACHE),
            previews_rendered: family(&d::PREVIEWS_RENDERED),
            track_jobs: family(&d::TRACK_JOBS),
            implausible_laps: family(&d::IMPLAUSIBLE_LAPS),
            webhook_deliveries: family(&d::WEBHOOK_DELIVERIES),
            exports: family(&d::EXPORTS),
            account_deletions: family(&d::ACCOUNT_DELETIONS),
            account_deletion_items: family(&d::ACCOUNT_DELETION_ITEMS),
            outlet,
        }
    }

    /// The metrics that reach CloudWatch, with the help and labels the Prometheus text gives
    /// them: the list that `GET /metrics` of a Lambda function reads back from CloudWatch.
    pub fn cloudwatch_metrics(&self) -> Vec<CloudWatchMetric> {
        definitions::ALL
            .iter()
            .filter(|d| d.cloudwatch)
            .map(|d| CloudWatchMetric {
                name: d.name,
                help: d.help.to_owned(),
                labels: d.labels.iter().map(|l| (*l).to_owned()).collect(),
                kind: match d.kind {
                    Kind::Histogram => CloudWatchKind::Histogram,
                    Kind::Counter | Kind::Gauge => CloudWatchKind::Counter,
                },
            })
            .collect()
    }

    /// Records one answered request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        // `route` is the matched route template or `unmatched`, never the path; the method
        // is bounded by `method_label`.
        let status = status.to_string();
        let labels = [method_label(method), route, status.as_str()];
        self.requests.with_label_values(&labels).inc();
        self.latency.observe(&labels, elapsed.as_secs_f64());
    }

    /// The exposition text of the Prometheus outlet (empty where the CloudWatch outlet
    /// takes the metrics).
    pub fn render(&self) -> String {
        (self.outlet.prometheus.as_ref()).map_or_else(String::new, LocalOutlet::render)
    }
}

#[cfg(test)]
mod tests;
