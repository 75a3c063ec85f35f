//! Paddock's core: the ids, events, queues and tables, the port traits, the mechanisms the
//! domain shares (retries on conflict, rate limits, hashing, the maintenance tick), and the
//! domain (identity, sessions, tracks, leaderboards, activity, share packs, coaching, a
//! driver's data, retention, the outbox and the workers).
//!
//! Nothing here speaks HTTP, AWS, Lambda or SQLite: the adapters (`paddock-embedded`,
//! `paddock-aws`) implement the ports, `paddock-api` turns requests into calls of these
//! functions, and `paddock-runtime` wires them into processes.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod activity;
pub mod coaching;
pub mod config;
pub mod credentials;
pub mod driver_data;
pub mod events;
pub mod field_names;
pub mod hashing;
/// The characters no text another person reads may hold (the `paddock-hidden-characters`
/// crate, here under its old path).
pub use ::hidden_characters;
pub mod identity;
pub mod ids;
pub mod leaderboards;
pub mod maintenance;
pub mod metrics;
pub mod metrics_access;
pub mod metrics_cloudwatch;
pub mod metrics_readout;
pub mod outbox;
pub mod ports;
pub mod problems;
pub mod processed_events;
pub mod queues;
pub mod rate_limits;
pub mod request_keys;
pub mod retention;
pub mod retry;
pub mod sessions;
pub mod sharepacks;
pub mod tables;
pub mod trace_context;
pub mod tracks;
pub mod webhooks;
pub mod workers;
