//! Metrics source port: the service's metrics as its metrics store holds them (CloudWatch in
//! AWS, where the functions' embedded-metric lines end up), summed over a time window.
//!
//! Only the Lambda health function reads it (`GET /metrics`): the local server serves its own
//! Prometheus registry instead.

use async_trait::async_trait;
use time::OffsetDateTime;

/// A statistic of a metric over a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Statistic {
    /// The sum of the values: a counter's total, a histogram's sum of observations.
    Sum,
    /// How many values were recorded: a histogram's count of observations.
    SampleCount,
}

/// One metric the caller wants, and which of its statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted<'a> {
    /// The metric's name (as the embedded-metric lines name it).
    pub name: &'a str,
    /// The statistics to read, each its own query (and its own cost).
    pub statistics: &'a [Statistic],
}

/// One statistic of one series (a metric and one set of dimension values) over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesValue {
    /// The metric's name.
    pub name: String,
    /// The series' dimensions as (name, value), in the store's order.
    pub dimensions: Vec<(String, String)>,
    /// Which statistic `value` is.
    pub statistic: Statistic,
    /// The statistic over the window.
    pub value: f64,
}

/// Why the metrics could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MetricsSourceError {
    /// The metrics store could not be reached, refused the call or throttled it.
    #[error("metrics store unavailable: {0}")]
    Unavailable(String),
}

/// The store of the service's metrics.
#[async_trait]
pub trait MetricsSource: Send + Sync {
    /// Every series of the `wanted` metrics that has data in `[since, until)`, with each
    /// wanted statistic over that window. Series without data in the window may be left out.
    async fn series(
        &self,
        wanted: &[Wanted<'_>],
        since: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Vec<SeriesValue>, MetricsSourceError>;
}
