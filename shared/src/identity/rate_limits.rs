//! Fixed-window rate limits counted in the item store, so they hold across instances.
//!
//! Keys (table `limits`):
//! - `RL#<scope>#<subject>` / `<window start>`: one counter attribute per limit checked
//!   together (e.g. every login from an address, and per account from it), so one atomic
//!   update counts a request against all its limits at once.
//! - `KNOWN#<account>` / `<address>`: an address the account signed in from successfully
//!   (kept 90 days); the per-account failure limit does not shut such addresses out.

use serde_json::{Value, json};

use crate::ports::Ports;
use crate::ports::items::{Item, Key, StoreError, TTL, Update, item};
use crate::tables::Table;

/// How long an address stays known after a successful sign-in.
const KNOWN_ADDRESS_SECS: i64 = 90 * 24 * 3600;

/// A limit: at most `max` hits per window, counted in attribute `counter`.
#[derive(Debug, Clone)]
pub struct Limit {
    /// The attribute the hits are counted in.
    pub counter: String,
    /// Hits allowed per window.
    pub max: u32,
}

impl Limit {
    /// A limit of `max` hits counted in `counter`.
    pub fn new(counter: impl Into<String>, max: u32) -> Self {
        Self {
            counter: counter.into(),
            max,
        }
    }
}

/// A request over a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("too many requests: at most {max} per {window_secs} seconds, retry later")]
pub struct RateLimited {
    /// The limit that was exceeded.
    pub max: u32,
    /// Its window.
    pub window_secs: i64,
    /// Seconds until the window ends.
    pub retry_after_secs: u64,
}

/// Why a limited request was not let through.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    /// The request is over a limit.
    #[error(transparent)]
    Limited(#[from] RateLimited),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The counter item of `subject` in `scope` for the window holding now, and the window's
/// end.
fn window(ports: &Ports, scope: &str, subject: &str, window_secs: i64) -> (Key, i64, i64) {
    let now = ports.clock.unix();
    let window = window_secs.max(1);
    let start = now - now.rem_euclid(window);
    (
        Key::new(format!("RL#{scope}#{subject}"), start.to_string()),
        start + window,
        now,
    )
}

/// The first limit whose counter in `counted` exceeds its maximum less `headroom` (0: the
/// hit is already counted; 1: would the next hit be over).
fn over<'a>(counted: &Item, limits: &'a [Limit], headroom: i64) -> Option<&'a Limit> {
    limits.iter().find(|l| {
        counted.get(&l.counter).and_then(Value::as_i64).unwrap_or(0) + headroom > i64::from(l.max)
    })
}

fn limited(limit: &Limit, window_secs: i64, end: i64, now: i64) -> RateLimited {
    RateLimited {
        max: limit.max,
        window_secs: window_secs.max(1),
        retry_after_secs: u64::try_from(end - now).unwrap_or(1).max(1),
    }
}

/// Counts one hit of `subject` in `scope` against every limit; a hit over any limit is
/// refused with the seconds until the window ends.
pub async fn hit(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limits: &[Limit],
) -> Result<(), LimitError> {
    let (key, end, now) = window(ports, scope, subject, window_secs);
    let update = limits
        .iter()
        .fold(Update::set(TTL, end + 60), |u, l| u.and_add(&l.counter, 1));
    let counted = ports
        .items
        .update(Table::Limits, &key, update, None)
        .await?;
    match over(&counted, limits, 0) {
        Some(limit) => Err(limited(limit, window_secs, end, now).into()),
        None => Ok(()),
    }
}

/// Refuses when a limit is already used up, without counting: a cheap read that lets a
/// request over its limit be turned away before its body is parsed or any work is done.
pub async fn check(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limits: &[Limit],
) -> Result<(), LimitError> {
    let (key, end, now) = window(ports, scope, subject, window_secs);
    let Some(counted) = ports.items.get(Table::Limits, &key).await? else {
        return Ok(());
    };
    // Counted as if this request were the next hit.
    let full = over(&counted, limits, 1);
    match full {
        Some(limit) => Err(limited(limit, window_secs, end, now).into()),
        None => Ok(()),
    }
}

fn known_key(account: &str, address: &str) -> Key {
    Key::new(format!("KNOWN#{account}"), address)
}

/// Whether `account` signed in from `address` before.
pub async fn is_known_address(
    ports: &Ports,
    account: &str,
    address: &str,
) -> Result<bool, StoreError> {
    Ok(ports
        .items
        .get(Table::Limits, &known_key(account, address))
        .await?
        .is_some())
}

/// Remembers that `account` signed in from `address` (written only when not yet known).
pub async fn remember_address(
    ports: &Ports,
    account: &str,
    address: &str,
) -> Result<(), StoreError> {
    if is_known_address(ports, account, address).await? {
        return Ok(());
    }
    let ttl = ports.clock.unix() + KNOWN_ADDRESS_SECS;
    ports
        .items
        .put(
            Table::Limits,
            item(&known_key(account, address), json!({ TTL: ttl })),
            None,
        )
        .await
}
