//! The functions' embedded-metric lines delivered to CloudWatch, as CloudWatch Logs delivers
//! the lines of a function's log in AWS: each line in the embedded metric format
//! (<https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>)
//! becomes one `PutMetricData` call to the SDK's CloudWatch endpoint (moto_server locally,
//! `AWS_ENDPOINT_URL_CLOUDWATCH`), in the order the lines were printed.
//!
//! One difference: each datum also gets the dimension `namespace` (its namespace). moto_server's
//! `GetMetricData` matches a series that has dimensions by name and dimensions only, not by
//! namespace, so function sets running at once on one moto_server (the tests, each with a
//! namespace of its own) would read each other's counts. `GET /metrics` sums over dimensions
//! that are not labels of a metric, so it reads the same counts as without it.

use crate::lambda_runtime_api::LineTap;
use aws_sdk_cloudwatch::Client;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Dimension, MetricDatum, StandardUnit};
use serde_json::Value;

/// One metric of a line: its name, unit and values (one for a count, several for a
/// histogram's observations).
#[derive(Debug, Clone, PartialEq)]
pub struct LineMetric {
    /// The metric's name.
    pub name: String,
    /// Its unit, when the line names one.
    pub unit: Option<String>,
    /// Its values.
    pub values: Vec<f64>,
}

/// What CloudWatch reads from one embedded-metric line.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricLine {
    /// The namespace.
    pub namespace: String,
    /// The first dimension set, with each dimension's value.
    pub dimensions: Vec<(String, String)>,
    /// `_aws.Timestamp`, Unix milliseconds.
    pub timestamp_ms: i64,
    /// The metrics and their values.
    pub metrics: Vec<LineMetric>,
}

impl MetricLine {
    /// The line read as CloudWatch reads it; `None` when it is not an embedded-metric line
    /// (an ordinary log line) or breaks the format.
    pub fn parse(line: &str) -> Option<Self> {
        let doc: Value = serde_json::from_str(line.trim()).ok()?;
        let aws = doc.get("_aws")?;
        let directive = aws["CloudWatchMetrics"].get(0)?;
        // A dimension named but without a text value breaks the format.
        let dimensions = directive["Dimensions"]
            .get(0)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(Value::as_str)
            .map(|name| Some((name.to_owned(), doc[name].as_str()?.to_owned())))
            .collect::<Option<Vec<_>>>()?;
        let metrics = directive["Metrics"]
            .as_array()?
            .iter()
            .map(|m| {
                let name = m["Name"].as_str()?.to_owned();
                let values = match &doc[name.as_str()] {
                    Value::Number(n) => vec![n.as_f64()?],
                    Value::Array(items) => items
                        .iter()
                        .map(Value::as_f64)
                        .collect::<Option<Vec<_>>>()?,
                    _ => return None,
                };
                Some(LineMetric {
                    unit: m["Unit"].as_str().map(str::to_owned),
                    name,
                    values,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            namespace: directive["Namespace"].as_str()?.to_owned(),
            dimensions,
            timestamp_ms: aws["Timestamp"].as_i64()?,
            metrics,
        })
    }

    /// The line's metrics as `PutMetricData` data, with the dimension `namespace` besides its
    /// own (see the module's documentation).
    fn data(&self) -> Vec<MetricDatum> {
        let namespace = ("namespace".to_owned(), self.namespace.clone());
        self.metrics
            .iter()
            .map(|metric| {
                let mut datum = MetricDatum::builder()
                    .metric_name(&metric.name)
                    .timestamp(DateTime::from_millis(self.timestamp_ms))
                    .set_dimensions(Some(
                        self.dimensions
                            .iter()
                            .chain(std::iter::once(&namespace))
                            .map(|(name, value)| {
                                Dimension::builder().name(name).value(value).build()
                            })
                            .collect(),
                    ))
                    .set_unit(metric.unit.as_deref().map(StandardUnit::from));
                datum = match metric.values.as_slice() {
                    [one] => datum.value(*one),
                    many => datum.set_values(Some(many.to_vec())),
                };
                datum.build()
            })
            .collect()
    }
}

/// A tap for the functions' output lines, and the task that delivers their metric lines
/// through `client` (it runs until aborted).
pub fn deliver(client: Client) -> (LineTap, tokio::task::JoinHandle<()>) {
    let (lines, mut received) = tokio::sync::mpsc::unbounded_channel::<String>();
    let tap = LineTap::new(move |line: &str| {
        if line.contains("\"_aws\"") {
            let _ = lines.send(line.to_owned());
        }
    });
    let task = tokio::spawn(async move {
        while let Some(line) = received.recv().await {
            let Some(parsed) = MetricLine::parse(&line) else {
                tracing::warn!(line, "a line names _aws but is not an embedded-metric line");
                continue;
            };
            let sent = client
                .put_metric_data()
                .namespace(&parsed.namespace)
                .set_metric_data(Some(parsed.data()))
                .send()
                .await;
            if let Err(e) = sent {
                tracing::warn!(error = ?e, "could not deliver a metric line to CloudWatch");
            }
        }
    });
    (tap, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_line_and_a_histogram_line_are_read_as_cloudwatch_reads_them() {
        let counter = r#"{"_aws":{"Timestamp":1764190000000,"CloudWatchMetrics":[{"Namespace":"Paddock/t","Dimensions":[["method","result"]],"Metrics":[{"Name":"paddock_sign_ins_total"}]}]},"method":"email","result":"ok","requestId":"r1","paddock_sign_ins_total":1}"#;
        assert_eq!(
            MetricLine::parse(counter),
            Some(MetricLine {
                namespace: "Paddock/t".into(),
                dimensions: vec![
                    ("method".into(), "email".into()),
                    ("result".into(), "ok".into())
                ],
                timestamp_ms: 1_764_190_000_000,
                metrics: vec![LineMetric {
                    name: "paddock_sign_ins_total".into(),
                    unit: None,
                    values: vec![1.0],
                }],
            })
        );
        let histogram = r#"{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"P","Dimensions":[[]],"Metrics":[{"Name":"h","Unit":"Seconds"}]}]},"h":[0.5,1.5]}"#;
        let line = MetricLine::parse(histogram).unwrap();
        assert_eq!(line.metrics[0].values, [0.5, 1.5]);
        assert_eq!(line.metrics[0].unit.as_deref(), Some("Seconds"));
        assert!(line.dimensions.is_empty());
        assert_eq!(
            MetricLine::parse(r#"{"level":"INFO","message":"_aws"}"#),
            None
        );
    }
}
