//! Paddock's kernel: what every part of the domain stands on. The ids, the events and the
//! queues they travel on, the tables, the port traits the adapters implement, and the mechanisms
//! the domain shares: retries on conflict, rate limits, hashing, request keys, processed-event
//! markers and the outbox.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod events;
pub mod hashing;
pub mod ids;
pub mod outbox;
pub mod ports;
pub mod problems;
pub mod processed_events;
pub mod queues;
pub mod rate_limits;
pub mod request_keys;
pub mod retry;
pub mod tables;
