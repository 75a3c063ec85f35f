//! The CloudWatch outlet of the service's metrics, in AWS: the embedded metric format, one
//! JSON line per label set written to standard output at the end of each invocation, which
//! CloudWatch Logs turns into metrics (no API call on the request path).
//!
//! The metric definitions are those of [`crate::metric_definitions`]; once [`install`] has
//! run (a Lambda function's start), the updates of [`crate::metrics`] that reach CloudWatch
//! go to this outlet instead of the Prometheus recorder. The local server never installs it
//! and keeps the Prometheus text of `GET /metrics`.

use metrics_cloudwatch_embedded::{Builder, Collector};
use std::io::Write;
use std::sync::OnceLock;

use crate::metric_definitions as definitions;

/// The collector, once installed.
static OUTLET: OnceLock<&'static Collector> = OnceLock::new();

/// The namespace of the installed outlet.
static NAMESPACE: OnceLock<String> = OnceLock::new();

/// Installs the outlet with CloudWatch namespace `namespace` as the process's `metrics`
/// recorder, with each metric's unit; later calls keep the first. Each metric's labels are
/// its dimensions; there are no dimensions beyond them, so a metric's series is the same
/// whichever function counted it.
pub fn install(namespace: &str) -> Result<(), String> {
    if OUTLET.get().is_some() {
        return Ok(());
    }
    let collector = Builder::new()
        .cloudwatch_namespace(namespace.to_owned())
        .init()
        .map_err(|e| e.to_string())?;
    ::metrics::with_recorder(|recorder| {
        for definition in definitions::ALL.iter().filter(|d| d.cloudwatch) {
            definition.describe_to(recorder);
        }
    });
    let _ = NAMESPACE.set(namespace.to_owned());
    let _ = OUTLET.set(collector);
    Ok(())
}

/// Whether the outlet is installed: then the metrics that reach CloudWatch are recorded
/// through the global `metrics` recorder, and the others nowhere.
pub(crate) fn installed() -> bool {
    OUTLET.get().is_some()
}

/// The CloudWatch namespace the metrics go to, once the outlet is installed.
pub fn namespace() -> Option<&'static str> {
    NAMESPACE.get().map(String::as_str)
}

/// What one invocation's metric lines name besides the metrics: the Lambda request id and
/// trace id, so a line leads to the invocation's log lines and trace.
#[derive(Debug, Default, Clone)]
pub struct Invocation<'a> {
    /// Lambda's request id of the invocation.
    pub request_id: Option<&'a str>,
    /// The X-Ray trace header of the invocation.
    pub trace_id: Option<&'a str>,
}

/// Writes what was counted since the last flush as embedded-metric lines on standard output
/// (nothing when nothing was counted, or the outlet is not installed). Called once at the end
/// of each invocation; the lines are written at once, after the invocation's own.
pub fn flush(invocation: &Invocation<'_>) {
    let mut lines = Vec::new();
    flush_to(invocation, &mut lines);
    if !lines.is_empty() {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(&lines).and_then(|()| out.flush()) {
            tracing::warn!(error = %e, "could not write the metric lines");
        }
    }
}

/// [`flush`] into `lines` instead of standard output.
pub fn flush_to(invocation: &Invocation<'_>, lines: &mut Vec<u8>) {
    let Some(collector) = OUTLET.get() else {
        return;
    };
    for (name, value) in [
        ("requestId", invocation.request_id),
        ("traceId", invocation.trace_id),
    ] {
        match value {
            Some(v) => collector.set_property(name, v),
            None => collector.remove_property(name),
        };
    }
    if let Err(e) = collector.flush(&mut *lines) {
        tracing::warn!(error = %e, "could not write the metric lines");
    }
}
