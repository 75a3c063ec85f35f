//! Webhooks: a driver's own tools hear of a new best, an unlocked achievement, an upload or
//! a lost place on a board as it happens, signed per Standard Webhooks.
//!
//! A driver keeps up to [`subscriptions::MAX_PER_DRIVER`] subscriptions ([`subscriptions`]);
//! the webhooks consumer ([`delivery`]) posts each subscribed event to each subscription that
//! wants it, through a [`client::WebhookClient`] that checks every address the URL resolves
//! to against [`address`]'s rules before it connects, a few at a time per host
//! ([`host_slots`]), waiting on a host that stopped answering ([`host_backoff`]).
//!
//! Key layout (table `activity`, partition `HOOK#<user id>`):
//! - `SUB#<subscription id>`: a subscription with its secrets;
//! - `LOG#<subscription id>#<attempt id>`: one delivery attempt, kept [`delivery::LOG_KEPT_SECS`];
//! - `DONE#<subscription id>#<event id>`: an event delivered to a subscription (a redelivered
//!   event skips it), kept as long as processed-event markers;
//! - `WANTS#board.passed`: present while a live subscription wants `board.passed`, so telling
//!   the drivers a new best passed reads one small item per driver instead of their
//!   subscriptions;
//! - `PASSED#<board>#<window>`: a `board.passed` already sent for that board in that window
//!   ([`passing`]).
//!
//! And one partition per failing receiver host, `HOST#<host>:<port>` ([`host_backoff`]).

/// The address rules (the `paddock-webhook-address` crate, here under its old path).
pub use ::webhook_address as address;
pub mod client;
pub mod delivery;
pub mod host_backoff;
pub mod host_slots;
pub mod message;
pub mod passing;
pub mod signing;
pub mod subscriptions;
pub mod verification;

use paddock_config::config::Settings;
use paddock_kernel::ids::UserId;

/// The address policy `settings` configure (`Webhooks__AllowLoopbackHttp`).
pub fn address_policy(settings: &Settings) -> address::Policy {
    address::Policy::new(settings.webhooks_allow_loopback_http)
}

/// The partition of `user`'s webhook items.
pub fn partition(user: &UserId) -> String {
    format!("{PARTITION_PREFIX}{user}")
}

/// The prefix of every driver's webhook partition.
pub(crate) const PARTITION_PREFIX: &str = "HOOK#";

/// The event types a subscription may ask for, in documented order.
pub const EVENT_TYPES: [&str; 6] = [
    "session.uploaded",
    "leaderboard.best",
    "achievement.unlocked",
    "board.passed",
    "event.finished",
    "event.started",
];

/// The type sent by `POST /v1/webhooks/{id}/test` (always delivered, never subscribed to).
pub const TEST_EVENT_TYPE: &str = "webhook.test";
