//! Paddock's platform: what every layer records and carries but no domain decides. The metric
//! definitions with their outlets (Prometheus locally, CloudWatch's embedded metric format in
//! Lambda), and the trace context an event carries from the request that caused it.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod metric_definitions;
pub mod metrics;
pub mod metrics_cloudwatch;
pub mod trace_context;
