//! Paddock: the cloud service behind the desktop sim-racing telemetry analyser.
//!
//! One crate holds the domain, the ports and both adapter sets, the HTTP routers and the
//! workers. Lambda binaries under `functions/` and the local server are thin wrappers.

// Everything the binaries and tests use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod activity;
pub mod app;
pub mod aws;
pub(crate) mod board_pages;
pub mod coaching;
pub mod config;
pub mod cores;
pub mod driver_data;
pub mod embedded;
pub(crate) mod envelope;
pub mod events;
pub(crate) mod hidden_characters;
pub mod http;
pub mod identity;
pub mod ids;
pub mod lambda;
pub mod leaderboards;
/// The JSON log line format.
mod log_line;
mod log_text;
pub mod log_writer;
pub mod metrics;
pub mod metrics_cloudwatch;
pub mod outbox;
pub mod ports;
pub(crate) mod problems;
pub mod processed_events;
pub mod queues;
pub mod request_context;
pub mod retention;
pub mod routes;
pub mod sessions;
pub mod sharepacks;
pub mod state;
pub mod tables;
pub mod telemetry;
pub mod trace_context;
pub mod tracks;
pub mod wiring;
pub mod workers;
