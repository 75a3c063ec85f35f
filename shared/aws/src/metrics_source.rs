//! The metrics source on CloudWatch: the series of one namespace (where the functions'
//! embedded-metric lines go), found with `ListMetrics` and read with `GetMetricData`.
//!
//! A read is `ListMetrics` once per 500 series of the namespace, then `GetMetricData` once
//! per 500 (series, statistic) queries, each query one period over the whole window, so one
//! value per query. CloudWatch bills `GetMetricData` per query and `ListMetrics` per call.

use async_trait::async_trait;
use aws_sdk_cloudwatch::Client;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Metric, MetricDataQuery, MetricStat};
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;

use paddock_core::ports::metrics_source::{
    MetricsSource, MetricsSourceError, SeriesValue, Statistic, Wanted,
};

use crate::OnFirstUse;
use crate::call_limits::CLOUDWATCH;

/// Queries one `GetMetricData` call takes at most.
const QUERIES_PER_CALL: usize = 500;

/// The series of one CloudWatch namespace.
pub struct CloudWatchMetrics {
    client: OnFirstUse<Client>,
    namespace: String,
}

impl CloudWatchMetrics {
    /// Reads namespace `namespace` with a client built from `sdk` at the first read.
    pub fn new(sdk: &aws_config::SdkConfig, namespace: impl Into<String>) -> Self {
        let sdk = sdk.clone();
        Self {
            client: OnFirstUse::new(move || {
                Client::from_conf(
                    aws_sdk_cloudwatch::config::Builder::from(&sdk)
                        .retry_config(CLOUDWATCH.retry_config())
                        .timeout_config(CLOUDWATCH.timeout_config())
                        .build(),
                )
            }),
            namespace: namespace.into(),
        }
    }

    /// Every metric of the namespace named in `wanted`, with its dimensions, each once.
    async fn list(
        &self,
        wanted: &[Wanted<'_>],
    ) -> Result<(Vec<Metric>, usize), MetricsSourceError> {
        let mut metrics = Vec::new();
        // CloudWatch lists a series once; moto_server can list one several times.
        let mut seen = HashSet::new();
        let mut token = None;
        let mut calls = 0;
        loop {
            let page = self
                .client
                .get()
                .list_metrics()
                .namespace(&self.namespace)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| unavailable("ListMetrics", &e))?;
            calls += 1;
            for metric in page.metrics() {
                let name = metric.metric_name().unwrap_or_default();
                if !wanted.iter().any(|w| w.name == name) {
                    continue;
                }
                let mut dimensions: Vec<(&str, &str)> = metric
                    .dimensions()
                    .iter()
                    .map(|d| (d.name().unwrap_or_default(), d.value().unwrap_or_default()))
                    .collect();
                dimensions.sort_unstable();
                if seen.insert(format!("{name}{dimensions:?}")) {
                    metrics.push(metric.clone());
                }
            }
            match page.next_token() {
                Some(next) if !next.is_empty() => token = Some(next.to_owned()),
                _ => return Ok((metrics, calls)),
            }
        }
    }
}

fn unavailable(call: &str, error: &(dyn std::error::Error + 'static)) -> MetricsSourceError {
    MetricsSourceError::Unavailable(format!("CloudWatch {call}: {}", crate::describe(error)))
}

fn statistic_name(statistic: Statistic) -> &'static str {
    match statistic {
        Statistic::Sum => "Sum",
        Statistic::SampleCount => "SampleCount",
    }
}

fn timestamp(t: OffsetDateTime) -> DateTime {
    DateTime::from_secs(t.unix_timestamp())
}

#[async_trait]
impl MetricsSource for CloudWatchMetrics {
    async fn series(
        &self,
        wanted: &[Wanted<'_>],
        since: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Vec<SeriesValue>, MetricsSourceError> {
        let (metrics, list_calls) = self.list(wanted).await?;
        // One period over the whole window: CloudWatch's periods are whole minutes.
        let period = i32::try_from((until - since).whole_seconds().max(60) / 60 * 60)
            .map_err(|_| MetricsSourceError::Unavailable("the window is too long".into()))?;
        let mut queries = Vec::new();
        for metric in &metrics {
            let name = metric.metric_name().unwrap_or_default();
            let statistics = wanted
                .iter()
                .find(|w| w.name == name)
                .map_or(&[][..], |w| w.statistics);
            for &statistic in statistics {
                queries.push((metric, statistic));
            }
        }
        let mut totals: HashMap<String, f64> = HashMap::new();
        let mut data_calls = 0;
        for (batch_index, batch) in queries.chunks(QUERIES_PER_CALL).enumerate() {
            let mut request = self
                .client
                .get()
                .get_metric_data()
                .start_time(timestamp(since))
                .end_time(timestamp(until));
            for (i, (metric, statistic)) in batch.iter().enumerate() {
                request = request.metric_data_queries(
                    MetricDataQuery::builder()
                        .id(format!("q{}", batch_index * QUERIES_PER_CALL + i))
                        .metric_stat(
                            MetricStat::builder()
                                .metric((*metric).clone())
                                .period(period)
                                .stat(statistic_name(*statistic))
                                .build(),
                        )
                        .return_data(true)
                        .build(),
                );
            }
            let mut token = None;
            loop {
                let page = request
                    .clone()
                    .set_next_token(token)
                    .send()
                    .await
                    .map_err(|e| unavailable("GetMetricData", &e))?;
                data_calls += 1;
                for result in page.metric_data_results() {
                    if let Some(id) = result.id() {
                        *totals.entry(id.to_owned()).or_default() +=
                            result.values().iter().sum::<f64>();
                    }
                }
                match page.next_token() {
                    Some(next) if !next.is_empty() => token = Some(next.to_owned()),
                    _ => break,
                }
            }
        }
        tracing::info!(
            namespace = self.namespace,
            series = metrics.len(),
            queries = queries.len(),
            list_calls,
            data_calls,
            "metrics read from CloudWatch"
        );
        let series = queries
            .iter()
            .enumerate()
            .map(|(i, (metric, statistic))| SeriesValue {
                name: metric.metric_name().unwrap_or_default().to_owned(),
                dimensions: metric
                    .dimensions()
                    .iter()
                    .map(|d| {
                        (
                            d.name().unwrap_or_default().to_owned(),
                            d.value().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect(),
                statistic: *statistic,
                value: totals.get(&format!("q{i}")).copied().unwrap_or(0.0),
            })
            .collect();
        Ok(series)
    }
}
