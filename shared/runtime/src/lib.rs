//! Paddock's processes: the Lambda entry points, the local server, the wiring of ports from
//! settings, and the logs.
//!
//! The binaries under `functions/` are a dozen lines each over this crate.

// Everything the binaries and tests use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod app;
pub mod lambda;
pub mod local_runner;
mod log_text;
pub mod secret_fields;
pub mod telemetry;
pub mod wiring;
