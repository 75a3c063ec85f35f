//! Every metric of the service, defined once: name, help, labels, unit, kind, and whether it
//! reaches CloudWatch. [`crate::metrics::Metrics`] records them; the Prometheus text and the embedded
//! metric format both take their names, help and units from here.

use ::metrics::{KeyName, Recorder, SharedString, Unit};

/// What a metric counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A count that only goes up.
    Counter,
    /// A value set as it is.
    Gauge,
    /// A distribution of observed values.
    Histogram,
}

/// One metric's definition.
#[derive(Debug)]
pub struct Definition {
    /// The metric's name, in Prometheus and in CloudWatch.
    pub name: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
    /// The label names, in order (CloudWatch's dimensions).
    pub labels: &'static [&'static str],
    /// The unit (described to both outlets; the Prometheus names carry no unit suffix).
    pub unit: Unit,
    /// What it counts.
    pub kind: Kind,
    /// Whether it reaches CloudWatch in AWS (otherwise the local server's Prometheus only).
    pub cloudwatch: bool,
    /// A histogram's bucket bounds in Prometheus.
    pub buckets: Option<&'static [f64]>,
}

impl Definition {
    /// Gives `recorder` this metric's help text and unit.
    pub(crate) fn describe_to(&self, recorder: &dyn Recorder) {
        let name = KeyName::from_const_str(self.name);
        let help = SharedString::const_str(self.help);
        let unit = Some(self.unit);
        match self.kind {
            Kind::Counter => recorder.describe_counter(name, unit, help),
            Kind::Gauge => recorder.describe_gauge(name, unit, help),
            Kind::Histogram => recorder.describe_histogram(name, unit, help),
        }
    }
}

/// The reasons a lap is refused as implausible: the label values of
/// `paddock_implausible_laps_total`, exported at 0 from the start.
pub const IMPLAUSIBLE_LAP_REASONS: [&str; 2] = ["too_fast", "sectors_mismatch"];

/// A counter of both outlets.
const fn counter(
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
) -> Definition {
    Definition {
        name,
        help,
        labels,
        unit: Unit::Count,
        kind: Kind::Counter,
        cloudwatch: true,
        buckets: None,
    }
}

/// A counter of the local server's Prometheus text only.
const fn local_counter(
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
) -> Definition {
    Definition {
        cloudwatch: false,
        ..counter(name, help, labels)
    }
}

pub(crate) static HTTP_REQUESTS: Definition = local_counter(
    "http_requests_total",
    "HTTP requests answered, by method, matched route and status.",
    &["method", "route", "status"],
);
pub(crate) static HTTP_REQUEST_DURATION: Definition = Definition {
    name: "http_request_duration_seconds",
    help: "HTTP request latency in seconds, by method, matched route and status.",
    labels: &["method", "route", "status"],
    unit: Unit::Seconds,
    kind: Kind::Histogram,
    cloudwatch: false,
    buckets: Some(&[
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ]),
};
pub(crate) static OUTBOX_RELAYED: Definition = counter(
    "paddock_outbox_relayed_total",
    "Outbox events delivered to the event queues.",
    &[],
);
pub(crate) static EVENTS_PROCESSED: Definition = counter(
    "paddock_events_processed_total",
    "Queued events handled by consumers, by consumer (queue), kind and outcome.",
    &["consumer", "kind", "outcome"],
);
pub(crate) static ACHIEVEMENTS_UNLOCKED: Definition = counter(
    "paddock_achievements_unlocked_total",
    "Achievements unlocked, by achievement id.",
    &["achievement"],
);
pub(crate) static RETENTION_DELETED: Definition = counter(
    "paddock_retention_deleted_total",
    "Expired items removed by the retention sweep, by kind.",
    &["kind"],
);
pub(crate) static QUEUE_DEPTH: Definition = Definition {
    name: "paddock_queue_depth",
    help: "Messages waiting or in flight per queue (local server; SQS reports its own).",
    labels: &["queue"],
    unit: Unit::Count,
    kind: Kind::Gauge,
    cloudwatch: false,
    buckets: None,
};
pub(crate) static STORE_ITEMS_READ: Definition = local_counter(
    "paddock_store_items_read_total",
    "Items the item store read: returned by gets, examined by queries (by backend).",
    &["backend"],
);
pub(crate) static STORE_READ_MILLIUNITS: Definition = local_counter(
    "paddock_store_read_capacity_milliunits_total",
    "Read capacity DynamoDB reported consumed, in thousandths of a unit.",
    &[],
);
pub(crate) static SIGN_INS: Definition = counter(
    "paddock_sign_ins_total",
    "Sign-ins, by method (email or provider) and result (ok, failed, limited or error).",
    &["method", "result"],
);
pub(crate) static AI_CALLS: Definition = counter(
    "paddock_ai_upstream_calls_total",
    "Language-model calls, by outcome (ok, rejected, busy, upstream_error, timeout).",
    &["outcome"],
);
pub(crate) static AI_TOKENS: Definition = counter(
    "paddock_ai_tokens_total",
    "Language-model tokens counted by the provider, by direction (input or output).",
    &["direction"],
);
pub(crate) static AI_LATENCY: Definition = Definition {
    name: "paddock_ai_upstream_duration_seconds",
    help: "Language-model call latency in seconds.",
    labels: &[],
    unit: Unit::Seconds,
    kind: Kind::Histogram,
    cloudwatch: true,
    buckets: Some(&[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0]),
};
pub(crate) static AI_CACHE: Definition = counter(
    "paddock_ai_cache_total",
    "Stored coaching answers looked up, by result (hit or miss).",
    &["result"],
);
pub(crate) static SHAREPACK_UPLOADS: Definition = counter(
    "paddock_sharepack_uploads_total",
    "Share-pack uploads, by result (ok or refused) and reason.",
    &["result", "reason"],
);
pub(crate) static SHAREPACK_BYTES: Definition = Definition {
    unit: Unit::Bytes,
    ..counter(
        "paddock_sharepack_bytes_stored_total",
        "Bytes of share packs stored.",
        &[],
    )
};
pub(crate) static SHAREPACK_DOWNLOADS: Definition = counter(
    "paddock_sharepack_downloads_total",
    "Share-pack downloads (streamed or redirected).",
    &[],
);
pub(crate) static SESSIONS_UPLOADED: Definition = counter(
    "paddock_sessions_uploaded_total",
    "Session uploads, by result (created or duplicate).",
    &["result"],
);
pub(crate) static LEADERBOARD_SUBMISSIONS: Definition = counter(
    "paddock_leaderboard_submissions_total",
    "Leaderboard submissions, by result (improved, unchanged or rejected).",
    &["result"],
);
pub(crate) static LEADERBOARD_CACHE: Definition = counter(
    "paddock_leaderboard_cache_total",
    "Leaderboard page lookups, by in-process cache result (hit or miss).",
    &["result"],
);
pub(crate) static PREVIEWS_RENDERED: Definition = counter(
    "paddock_previews_rendered_total",
    "Link previews (PNG) drawn, by preview (board, driver or event); a cached one is not drawn again.",
    &["preview"],
);
pub(crate) static TRACK_JOBS: Definition = counter(
    "paddock_track_jobs_total",
    "Track-processing job outcomes (done, failed or retry).",
    &["outcome"],
);
pub(crate) static IMPLAUSIBLE_LAPS: Definition = counter(
    "paddock_implausible_laps_total",
    "Leaderboard submissions refused as implausible laps, by reason.",
    &["reason"],
);
pub(crate) static WEBHOOK_DELIVERIES: Definition = counter(
    "paddock_webhook_deliveries_total",
    "Webhook delivery attempts, by outcome (ok or failed).",
    &["outcome"],
);
pub(crate) static EXPORTS: Definition = counter(
    "paddock_exports_total",
    "Data exports, by result (complete or failed).",
    &["result"],
);
pub(crate) static ACCOUNT_DELETIONS: Definition = counter(
    "paddock_account_deletions_total",
    "Account deletions, by stage (started: the account is gone and the job queued; finished: every record removed).",
    &["stage"],
);
pub(crate) static ACCOUNT_DELETION_ITEMS: Definition = counter(
    "paddock_account_deletion_items_total",
    "Items and objects removed by account deletion jobs, by kind of driver data.",
    &["kind"],
);

/// Every definition, once (each is named by a field of [`crate::metrics::Metrics`] too, which records it).
pub static ALL: [&Definition; 27] = [
    &HTTP_REQUESTS,
    &HTTP_REQUEST_DURATION,
    &OUTBOX_RELAYED,
    &EVENTS_PROCESSED,
    &ACHIEVEMENTS_UNLOCKED,
    &RETENTION_DELETED,
    &QUEUE_DEPTH,
    &STORE_ITEMS_READ,
    &STORE_READ_MILLIUNITS,
    &SIGN_INS,
    &AI_CALLS,
    &AI_TOKENS,
    &AI_LATENCY,
    &AI_CACHE,
    &SHAREPACK_UPLOADS,
    &SHAREPACK_BYTES,
    &SHAREPACK_DOWNLOADS,
    &SESSIONS_UPLOADED,
    &LEADERBOARD_SUBMISSIONS,
    &LEADERBOARD_CACHE,
    &PREVIEWS_RENDERED,
    &TRACK_JOBS,
    &IMPLAUSIBLE_LAPS,
    &WEBHOOK_DELIVERIES,
    &EXPORTS,
    &ACCOUNT_DELETIONS,
    &ACCOUNT_DELETION_ITEMS,
];
