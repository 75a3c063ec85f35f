//! What happens around the boards: the activity feed and achievements, coaching on a
//! driver's laps, and webhooks that tell a driver's own tools (a new best, a lost place).

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod activity;
pub mod coaching;
pub mod webhooks;
