//! `GET /metrics` where the metrics are in CloudWatch: the metrics of
//! [`crate::metrics::Metrics::cloudwatch_metrics`] read back through the
//! [`MetricsSource`] port and rendered as Prometheus text, with the names, help, types and
//! labels the local server's own `/metrics` gives them.
//!
//! Every Lambda instance writes its own counts, so no instance's registry holds the service's:
//! CloudWatch sums them. A counter is its total since 00:00 UTC of the current day (a
//! Prometheus counter must not go down, and a day is a window CloudWatch answers cheaply); at
//! midnight it starts again from 0, which Prometheus reads as a counter reset. A histogram's
//! values are kept but not its buckets, so it is rendered as a summary: its count and sum.
//!
//! A read is billed per metric series, so a rendering is kept for `Metrics__CacheSeconds`;
//! scrapes that arrive while a read is under way wait for that read instead of starting their
//! own. A failed read is kept for a few seconds too, and answered with when to come back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use prometheus::proto::{
    Counter as CounterValue, LabelPair, Metric, MetricFamily, MetricType, Summary,
};
use prometheus::{Encoder, TextEncoder};
use time::OffsetDateTime;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::metrics::{CloudWatchKind, CloudWatchMetric, IMPLAUSIBLE_LAP_REASONS};
use crate::ports::Clock;
use crate::ports::metrics_source::{MetricsSource, SeriesValue, Statistic, Wanted};

/// How long a failed read is answered from memory: long enough that a throttled store is not
/// asked again by every scrape, short enough that a passing fault passes quickly.
const FAILURE_KEPT: Duration = Duration::from_secs(5);

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

/// The last read and when it was made.
struct LastRead {
    at: Instant,
    outcome: Result<Bytes, String>,
}

/// The metrics source behind `GET /metrics`, read at most once per `keep_for`.
pub struct MetricsReadout {
    source: Arc<dyn MetricsSource>,
    clock: Arc<dyn Clock>,
    metrics: Vec<CloudWatchMetric>,
    keep_for: Duration,
    /// Held across a read, so concurrent scrapes share it. One value behind a lock rather than
    /// a cache crate: there is one reading, with no keys or eviction to manage.
    last: Mutex<Option<LastRead>>,
}

impl MetricsReadout {
    /// Reads `metrics` from `source`, keeping each rendering for `keep_for`.
    pub fn new(
        source: Arc<dyn MetricsSource>,
        clock: Arc<dyn Clock>,
        metrics: Vec<CloudWatchMetric>,
        keep_for: Duration,
    ) -> Self {
        Self {
            source,
            clock,
            metrics,
            keep_for,
            last: Mutex::new(None),
        }
    }

    /// The Prometheus text of the metrics, read again when the kept one is older than
    /// `keep_for`.
    pub async fn text(&self) -> Result<Bytes, ReadoutError> {
        let mut last = self.last.lock().await;
        if let Some(kept) = last.as_ref() {
            let kept_for = match kept.outcome {
                Ok(_) => self.keep_for,
                Err(_) => FAILURE_KEPT.min(self.keep_for),
            };
            let age = kept.at.elapsed();
            if age < kept_for {
                return kept.outcome.clone().map_err(|reason| ReadoutError {
                    reason,
                    retry_after_secs: (kept_for - age).as_secs_f64().ceil() as u64,
                });
            }
        }
        let outcome = self.read().await;
        let kept = last.insert(LastRead {
            at: Instant::now(),
            outcome,
        });
        kept.outcome.clone().map_err(|reason| ReadoutError {
            reason,
            retry_after_secs: FAILURE_KEPT.min(self.keep_for).as_secs().max(1),
        })
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
    use crate::ports::ManualClock;
    use crate::ports::metrics_source::MetricsSourceError;
    use std::sync::atomic::{AtomicUsize, Ordering};
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
        let metrics = crate::metrics::global().cloudwatch_metrics();
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
        crate::metrics::global()
            .sign_ins
            .with_label_values(&["email", "ok"]);
        let local = crate::metrics::global().render();
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

    /// A source that counts its reads, takes 100 ms each, and fails while `failing` is set.
    #[derive(Default)]
    struct CountingSource {
        reads: AtomicUsize,
        failing: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl MetricsSource for CountingSource {
        async fn series(
            &self,
            _: &[Wanted<'_>],
            _: OffsetDateTime,
            _: OffsetDateTime,
        ) -> Result<Vec<SeriesValue>, MetricsSourceError> {
            let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
            if self.failing.load(Ordering::SeqCst) {
                return Err(MetricsSourceError::Unavailable("throttled".into()));
            }
            Ok(vec![value(
                "paddock_outbox_relayed_total",
                &[],
                Statistic::Sum,
                n as f64,
            )])
        }
    }

    fn text(scrape: Result<Bytes, ReadoutError>) -> String {
        String::from_utf8(scrape.expect("a text").to_vec()).expect("utf-8")
    }

    fn readout(source: Arc<CountingSource>) -> MetricsReadout {
        MetricsReadout::new(
            source,
            Arc::new(ManualClock::new(datetime!(2026-11-26 12:00 UTC))),
            vec![metric(
                "paddock_outbox_relayed_total",
                &[],
                CloudWatchKind::Counter,
            )],
            Duration::from_secs(60),
        )
    }

    /// Scrapes during a read share it, scrapes within `keep_for` get the kept text, and the
    /// first scrape after it reads again.
    #[tokio::test(start_paused = true)]
    async fn scrapes_share_one_read_per_cache_period() {
        let source = Arc::new(CountingSource::default());
        let readout = readout(source.clone());
        let scrapes = futures::future::join_all((0..10).map(|_| readout.text())).await;
        assert_eq!(source.reads.load(Ordering::SeqCst), 1);
        for scrape in scrapes {
            assert!(text(scrape).contains("paddock_outbox_relayed_total 1\n"));
        }
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(text(readout.text().await).contains(" 1\n"));
        assert_eq!(source.reads.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(text(readout.text().await).contains(" 2\n"));
        assert_eq!(source.reads.load(Ordering::SeqCst), 2);
    }

    /// A failed read is an error with the seconds until the next read, kept for a few
    /// seconds (no read meanwhile), and a read after that succeeds again.
    #[tokio::test(start_paused = true)]
    async fn a_failed_read_says_when_to_retry_and_is_not_repeated_at_once() {
        let source = Arc::new(CountingSource::default());
        source.failing.store(true, Ordering::SeqCst);
        let readout = readout(source.clone());
        let error = readout.text().await.unwrap_err();
        assert_eq!(error.retry_after_secs, 5);
        assert!(error.reason.contains("throttled"), "{error}");
        tokio::time::advance(Duration::from_secs(2)).await;
        let error = readout.text().await.unwrap_err();
        assert_eq!(error.retry_after_secs, 3);
        assert_eq!(source.reads.load(Ordering::SeqCst), 1);
        source.failing.store(false, Ordering::SeqCst);
        tokio::time::advance(Duration::from_secs(4)).await;
        assert!(readout.text().await.is_ok());
        assert_eq!(source.reads.load(Ordering::SeqCst), 2);
    }
}
