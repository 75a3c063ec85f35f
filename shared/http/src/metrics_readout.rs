//! `GET /metrics` where the metrics are in CloudWatch: the metrics of
//! [`paddock_core::metrics::Metrics::cloudwatch_metrics`] read back through the
//! [`MetricsSource`] port and rendered as Prometheus text, with the names, help, types and
//! labels the local server's own `/metrics` gives them.
//!
//! Every Lambda instance writes its own counts, so no instance's registry holds the service's:
//! CloudWatch sums them. A counter is its total since 00:00 UTC of the current day (a
//! Prometheus counter must not go down, and a day is a window CloudWatch answers cheaply); at
//! midnight it starts again from 0, which Prometheus reads as a counter reset. A histogram's
//! values are kept but not its buckets, so it is rendered as a summary: its count and sum.
//!
//! A read is billed per metric series, and a scraper may reach any of the health function's
//! instances, so the last rendering is kept in the item store with its time ([`Table::Limits`],
//! one item with a TTL): within `Metrics__CacheSeconds` of it every instance answers the
//! stored text. Once it is older, the instance whose conditional write claims the refresh reads
//! the source and stores the new text; the others meanwhile answer the stored one (or, before
//! the first read, wait for it). So CloudWatch is read once per period however many instances
//! are scraped. A failed read holds the claim for a few seconds, and scrapes meanwhile are
//! answered with when to come back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use prometheus::proto::{
    Counter as CounterValue, LabelPair, Metric, MetricFamily, MetricType, Summary,
};
use prometheus::{Encoder, TextEncoder};
use serde::Deserialize;
use serde_json::json;
use time::OffsetDateTime;
use tokio::sync::Mutex;

use paddock_core::metrics::{CloudWatchKind, CloudWatchMetric, IMPLAUSIBLE_LAP_REASONS};
use paddock_core::ports::Clock;
use paddock_core::ports::items::{Condition, ItemStore, Key, StoreError, TTL, Update};
use paddock_core::ports::metrics_source::{MetricsSource, SeriesValue, Statistic, Wanted};
use paddock_core::tables::Table;

/// How long a failed read holds the refresh: long enough that a throttled store is not
/// asked again by every scrape, short enough that a passing fault passes quickly.
const FAILURE_KEPT: Duration = Duration::from_secs(5);

/// How long a claim of the refresh holds when its instance never finishes it (a read takes
/// at most the CloudWatch client's time limits; an instance may be stopped mid-read). Past
/// it another instance may claim the refresh. The stored text is answered meanwhile.
const CLAIM_HOLD: Duration = Duration::from_secs(30);

/// How long a scrape waits for another instance's read when no text is stored yet.
const WAIT_FOR_READ: Duration = Duration::from_secs(10);

/// How often a waiting scrape looks at the store again.
const POLL: Duration = Duration::from_millis(100);

/// How long the stored readout outlives its last write (TTL): a deployment nobody scrapes
/// keeps no item.
const KEPT_IN_STORE: Duration = Duration::from_secs(24 * 3600);

/// The statistics a counter is read with.
const COUNTER_STATISTICS: &[Statistic] = &[Statistic::Sum];

/// The statistics a histogram is read with.
const HISTOGRAM_STATISTICS: &[Statistic] = &[Statistic::SampleCount, Statistic::Sum];

/// Why the metrics cannot be given now.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason}")]
pub struct ReadoutError {
    /// What failed (for the log).
    pub reason: String,
    /// Seconds until a scrape may succeed (a new read is allowed then).
    pub retry_after_secs: u64,
}

/// The key of the stored readout in [`Table::Limits`].
fn stored_key() -> Key {
    Key::new("METRICS#readout", "last")
}

/// The stored readout item, as far as a scrape looks at it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    /// The last rendering.
    text: Option<String>,
    /// When it was read (Unix milliseconds).
    read_at_ms: Option<i64>,
    /// Until when another instance holds the refresh (Unix milliseconds).
    claimed_until_ms: Option<i64>,
    /// Why the last read failed, while its claim holds.
    failure: Option<String>,
}

/// A rendering and when it was read (Unix milliseconds).
#[derive(Clone)]
struct Kept {
    read_at_ms: i64,
    text: Bytes,
}

/// The metrics source behind `GET /metrics`, read once per `keep_for` across every instance
/// sharing the item store.
pub struct MetricsReadout {
    source: Arc<dyn MetricsSource>,
    items: Arc<dyn ItemStore>,
    clock: Arc<dyn Clock>,
    metrics: Vec<CloudWatchMetric>,
    keep_for: Duration,
    /// This instance's copy of the stored rendering, so a warm instance answers without a
    /// store read while it is fresh. Held across a scrape, so this instance's concurrent
    /// scrapes share one look at the store.
    last: Mutex<Option<Kept>>,
}

/// Milliseconds of `d`, as the stored times count.
fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Whole seconds until `until_ms` from `now_ms`, at least 1.
fn seconds_until(until_ms: i64, now_ms: i64) -> u64 {
    u64::try_from((until_ms - now_ms + 999) / 1000)
        .unwrap_or(1)
        .max(1)
}

fn store_failed(e: &StoreError) -> ReadoutError {
    ReadoutError {
        reason: format!("the stored readout cannot be read: {e}"),
        retry_after_secs: FAILURE_KEPT.as_secs(),
    }
}

impl MetricsReadout {
    /// Reads `metrics` from `source`, keeping each rendering in `items` for `keep_for`.
    pub fn new(
        source: Arc<dyn MetricsSource>,
        items: Arc<dyn ItemStore>,
        clock: Arc<dyn Clock>,
        metrics: Vec<CloudWatchMetric>,
        keep_for: Duration,
    ) -> Self {
        Self {
            source,
            items,
            clock,
            metrics,
            keep_for,
            last: Mutex::new(None),
        }
    }

    fn now_ms(&self) -> i64 {
        let now = self.clock.now();
        i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
    }

    /// Whether a rendering read at `read_at_ms` is still the one to answer at `now_ms`.
    fn fresh(&self, read_at_ms: i64, now_ms: i64) -> bool {
        now_ms < read_at_ms.saturating_add(ms(self.keep_for))
    }

    /// The Prometheus text of the metrics: the stored one while it is fresh, else read again
    /// by whichever instance claims the refresh.
    pub async fn text(&self) -> Result<Bytes, ReadoutError> {
        let mut last = self.last.lock().await;
        if let Some(kept) = last.as_ref()
            && self.fresh(kept.read_at_ms, self.now_ms())
        {
            return Ok(kept.text.clone());
        }
        let waiting_since = tokio::time::Instant::now();
        loop {
            let item = self
                .items
                .get(Table::Limits, &stored_key())
                .await
                .map_err(|e| store_failed(&e))?;
            let stored: Stored = match item {
                Some(item) => {
                    serde_json::from_value(serde_json::Value::Object(item)).unwrap_or_default()
                }
                None => Stored::default(),
            };
            let now = self.now_ms();
            let kept = match (&stored.text, stored.read_at_ms) {
                (Some(text), Some(read_at_ms)) => Some(Kept {
                    read_at_ms,
                    text: Bytes::from(text.clone()),
                }),
                _ => None,
            };
            if let Some(kept) = kept.as_ref().filter(|k| self.fresh(k.read_at_ms, now)) {
                *last = Some(kept.clone());
                return Ok(kept.text.clone());
            }
            let claimed_until = stored.claimed_until_ms.unwrap_or(i64::MIN);
            if claimed_until <= now {
                match self.claim(now).await {
                    Ok(claim_id) => {
                        let read = self.refresh(&claim_id).await?;
                        *last = Some(read.clone());
                        return Ok(read.text);
                    }
                    // Another instance claimed it first (or just stored a fresh text).
                    Err(StoreError::ConditionFailed { .. }) => continue,
                    Err(e) => return Err(store_failed(&e)),
                }
            }
            // Another instance is reading: its predecessor is answered meanwhile, unless
            // that one is older than a read may take.
            if let Some(kept) = kept.filter(|k| {
                now < k
                    .read_at_ms
                    .saturating_add(ms(self.keep_for))
                    .saturating_add(ms(CLAIM_HOLD))
            }) {
                return Ok(kept.text);
            }
            if let Some(reason) = stored.failure {
                return Err(ReadoutError {
                    reason,
                    retry_after_secs: seconds_until(claimed_until, now),
                });
            }
            if waiting_since.elapsed() >= WAIT_FOR_READ {
                return Err(ReadoutError {
                    reason: "another instance is still reading the metrics".into(),
                    retry_after_secs: seconds_until(claimed_until, now),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Claims the refresh at `now_ms`: a conditional write that holds only while no claim
    /// holds and the stored text is stale, so one instance wins. Answers the claim's id.
    async fn claim(&self, now_ms: i64) -> Result<String, StoreError> {
        let claim_id = uuid::Uuid::new_v4().to_string();
        let unclaimed = Condition::Or(vec![
            Condition::AttrNotExists("claimedUntilMs".into()),
            Condition::Lt("claimedUntilMs".into(), json!(now_ms + 1)),
        ]);
        let stale = Condition::Or(vec![
            Condition::AttrNotExists("readAtMs".into()),
            Condition::Lt(
                "readAtMs".into(),
                json!(now_ms.saturating_sub(ms(self.keep_for)) + 1),
            ),
        ]);
        let update = Update::set("claimId", claim_id.clone())
            .and_set("claimedUntilMs", now_ms.saturating_add(ms(CLAIM_HOLD)))
            .and_set(TTL, self.expiry(now_ms))
            .and_remove("failure");
        self.items
            .update(
                Table::Limits,
                &stored_key(),
                update,
                Some(Condition::And(vec![unclaimed, stale])),
            )
            .await?;
        Ok(claim_id)
    }

    /// Reads the source under claim `claim_id` and stores what it got: the text and its time
    /// (releasing the claim), or the failure (holding the claim for [`FAILURE_KEPT`]). The
    /// writes are conditional on the claim still being this one, so a read whose claim ran
    /// out does not overwrite a later one.
    async fn refresh(&self, claim_id: &str) -> Result<Kept, ReadoutError> {
        let outcome = self.read().await;
        let now = self.now_ms();
        let ours = Condition::eq("claimId", claim_id);
        match outcome {
            Ok(text) => {
                let kept = Kept {
                    read_at_ms: now,
                    text,
                };
                let update = Update::set("text", String::from_utf8_lossy(&kept.text).as_ref())
                    .and_set("readAtMs", now)
                    .and_set(TTL, self.expiry(now))
                    .and_remove("claimId")
                    .and_remove("claimedUntilMs");
                if let Err(e) = self
                    .items
                    .update(Table::Limits, &stored_key(), update, Some(ours))
                    .await
                {
                    // The text is answered all the same; the next scrape reads again.
                    tracing::warn!(error = %e, "could not store the metrics readout");
                }
                Ok(kept)
            }
            Err(reason) => {
                let until = now.saturating_add(ms(FAILURE_KEPT));
                let update = Update::set("claimedUntilMs", until)
                    .and_set("failure", reason.clone())
                    .and_set(TTL, self.expiry(now));
                if let Err(e) = self
                    .items
                    .update(Table::Limits, &stored_key(), update, Some(ours))
                    .await
                {
                    tracing::warn!(error = %e, "could not store the failed metrics read");
                }
                Err(ReadoutError {
                    reason,
                    retry_after_secs: FAILURE_KEPT.as_secs(),
                })
            }
        }
    }

    /// The stored item's expiry (Unix seconds) when written at `now_ms`.
    fn expiry(&self, now_ms: i64) -> i64 {
        (now_ms.saturating_add(ms(KEPT_IN_STORE.max(self.keep_for)))) / 1000
    }

    async fn read(&self) -> Result<Bytes, String> {
        let (since, until) = window(self.clock.now());
        let wanted: Vec<Wanted<'_>> = self
            .metrics
            .iter()
            .map(|m| Wanted {
                name: m.name,
                statistics: match m.kind {
                    CloudWatchKind::Counter => COUNTER_STATISTICS,
                    CloudWatchKind::Histogram => HISTOGRAM_STATISTICS,
                },
            })
            .collect();
        let series = self
            .source
            .series(&wanted, since, until)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Bytes::from(render(&self.metrics, &series)))
    }
}

/// The window a read covers: from 00:00 UTC of `now`'s day to `now` rounded up to the
/// minute (CloudWatch's periods are whole minutes), at least one minute long.
pub fn window(now: OffsetDateTime) -> (OffsetDateTime, OffsetDateTime) {
    let since = now.replace_time(time::Time::MIDNIGHT);
    let minutes = ((now - since).whole_seconds() + 59) / 60;
    (since, since + time::Duration::minutes(minutes.max(1)))
}

/// The totals of one series: each statistic's sum over the source's values.
type Totals = BTreeMap<Statistic, f64>;

/// `series` of `metrics` as Prometheus text. A series' labels are its dimensions named by
/// the metric's labels (a label it lacks is empty); series with the same labels are summed.
/// As in the local server's text, a counter without labels, and each reason of
/// `paddock_implausible_laps_total`, are given at 0 before their first count.
pub fn render(metrics: &[CloudWatchMetric], series: &[SeriesValue]) -> String {
    let mut families = Vec::new();
    for metric in metrics {
        let mut by_labels: BTreeMap<Vec<String>, Totals> = BTreeMap::new();
        if metric.labels.is_empty() {
            by_labels.entry(Vec::new()).or_default();
        }
        if metric.name == "paddock_implausible_laps_total" {
            for reason in IMPLAUSIBLE_LAP_REASONS {
                by_labels.entry(vec![reason.to_owned()]).or_default();
            }
        }
        for s in series.iter().filter(|s| s.name == metric.name) {
            let labels = metric
                .labels
                .iter()
                .map(|label| {
                    s.dimensions
                        .iter()
                        .find(|(name, _)| name == label)
                        .map(|(_, value)| value.clone())
                        .unwrap_or_default()
                })
                .collect();
            *by_labels
                .entry(labels)
                .or_default()
                .entry(s.statistic)
                .or_default() += s.value;
        }
        if by_labels.is_empty() {
            continue;
        }
        let mut family = MetricFamily::default();
        family.set_name(metric.name.to_owned());
        family.set_help(metric.help.clone());
        family.set_field_type(match metric.kind {
            CloudWatchKind::Counter => MetricType::COUNTER,
            CloudWatchKind::Histogram => MetricType::SUMMARY,
        });
        let samples = by_labels
            .into_iter()
            .map(|(values, totals)| sample(metric, values, &totals))
            .collect();
        family.set_metric(samples);
        families.push(family);
    }
    families.sort_by(|a, b| a.name().cmp(b.name()));
    let mut out = Vec::new();
    TextEncoder::new()
        .encode(&families, &mut out)
        .expect("every family has a sample");
    String::from_utf8(out).expect("utf-8 exposition")
}

/// One sample of `metric` with label `values` and its `totals`.
fn sample(metric: &CloudWatchMetric, values: Vec<String>, totals: &Totals) -> Metric {
    let total = |statistic| totals.get(&statistic).copied().unwrap_or(0.0);
    let mut sample = Metric::default();
    sample.set_label(
        metric
            .labels
            .iter()
            .zip(values)
            .map(|(name, value)| {
                let mut pair = LabelPair::default();
                pair.set_name(name.clone());
                pair.set_value(value);
                pair
            })
            .collect(),
    );
    match metric.kind {
        CloudWatchKind::Counter => {
            let mut counter = CounterValue::default();
            counter.set_value(total(Statistic::Sum));
            sample.set_counter(counter);
        }
        CloudWatchKind::Histogram => {
            let mut summary = Summary::default();
            // CloudWatch answers counts as floating-point sums of whole numbers.
            summary.set_sample_count(total(Statistic::SampleCount).round() as u64);
            summary.set_sample_sum(total(Statistic::Sum));
            sample.set_summary(summary);
        }
    }
    sample
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn metric(name: &'static str, labels: &[&str], kind: CloudWatchKind) -> CloudWatchMetric {
        CloudWatchMetric {
            name,
            help: format!("Help of {name}."),
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
            kind,
        }
    }

    fn value(name: &str, dimensions: &[(&str, &str)], statistic: Statistic, v: f64) -> SeriesValue {
        SeriesValue {
            name: name.to_owned(),
            dimensions: dimensions
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            statistic,
            value: v,
        }
    }

    /// Series with the same labels are summed, dimensions that are not labels are summed
    /// over, a missing label is empty, and the text has the local server's HELP and TYPE
    /// lines; a histogram is a summary of count and sum.
    #[test]
    fn series_are_summed_by_label_and_rendered_with_help_and_type() {
        let metrics = [
            metric(
                "paddock_sign_ins_total",
                &["method", "result"],
                CloudWatchKind::Counter,
            ),
            metric("paddock_outbox_relayed_total", &[], CloudWatchKind::Counter),
            metric(
                "paddock_ai_upstream_duration_seconds",
                &[],
                CloudWatchKind::Histogram,
            ),
            metric(
                "paddock_exports_total",
                &["result"],
                CloudWatchKind::Counter,
            ),
        ];
        let sum = Statistic::Sum;
        let series = [
            value(
                "paddock_sign_ins_total",
                &[("method", "email"), ("result", "ok")],
                sum,
                2.0,
            ),
            value(
                "paddock_sign_ins_total",
                &[("result", "ok"), ("method", "email"), ("instance", "b")],
                sum,
                3.0,
            ),
            value(
                "paddock_sign_ins_total",
                &[("method", "provider")],
                sum,
                1.0,
            ),
            value("paddock_ai_upstream_duration_seconds", &[], sum, 1.5),
            value(
                "paddock_ai_upstream_duration_seconds",
                &[],
                Statistic::SampleCount,
                3.0,
            ),
            value("something_else", &[], sum, 9.0),
        ];
        let text = render(&metrics, &series);
        let expected = "\
# HELP paddock_ai_upstream_duration_seconds Help of paddock_ai_upstream_duration_seconds.
# TYPE paddock_ai_upstream_duration_seconds summary
paddock_ai_upstream_duration_seconds_sum 1.5
paddock_ai_upstream_duration_seconds_count 3
# HELP paddock_outbox_relayed_total Help of paddock_outbox_relayed_total.
# TYPE paddock_outbox_relayed_total counter
paddock_outbox_relayed_total 0
# HELP paddock_sign_ins_total Help of paddock_sign_ins_total.
# TYPE paddock_sign_ins_total counter
paddock_sign_ins_total{method=\"email\",result=\"ok\"} 5
paddock_sign_ins_total{method=\"provider\",result=\"\"} 1
";
        assert_eq!(text, expected);
    }

    /// The service's own definitions render: every CloudWatch metric has its local help.
    #[test]
    fn the_service_metrics_render_with_their_local_help() {
        let metrics = paddock_core::metrics::global().cloudwatch_metrics();
        let sign_ins = metrics
            .iter()
            .find(|m| m.name == "paddock_sign_ins_total")
            .expect("sign-ins reach CloudWatch");
        assert_eq!(sign_ins.labels, ["method", "result"]);
        let text = render(
            &metrics,
            &[value(
                "paddock_sign_ins_total",
                &[("method", "email"), ("result", "ok")],
                Statistic::Sum,
                1.0,
            )],
        );
        // The same HELP and TYPE lines, but that a histogram is a summary here. (Taking the
        // label set makes the local family render, at 0.)
        paddock_core::metrics::global()
            .sign_ins
            .with_label_values(&["email", "ok"]);
        let local = paddock_core::metrics::global().render();
        for line in text.lines().filter(|l| l.starts_with('#')) {
            let local_line = match line.strip_suffix(" summary") {
                Some(head) if line.starts_with("# TYPE ") => format!("{head} histogram"),
                _ => line.to_owned(),
            };
            assert!(
                local.contains(&local_line),
                "{line} is not in the local text"
            );
        }
        assert!(text.contains("paddock_sign_ins_total{method=\"email\",result=\"ok\"} 1\n"));
        assert!(text.contains("paddock_implausible_laps_total{reason=\"too_fast\"} 0\n"));
    }

    #[test]
    fn the_window_is_the_utc_day_to_the_next_whole_minute() {
        let (since, until) = window(datetime!(2026-11-26 21:58:31 UTC));
        assert_eq!(since, datetime!(2026-11-26 00:00 UTC));
        assert_eq!(until, datetime!(2026-11-26 21:59 UTC));
        let (since, until) = window(datetime!(2026-11-26 00:00 UTC));
        assert_eq!((since, until), (since, datetime!(2026-11-26 00:01 UTC)));
    }
}
