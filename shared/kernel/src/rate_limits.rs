//! Sliding-window rate limits counted in the item store, so they hold across instances and
//! over every trailing window, not per calendar window: at most `max` hits in any `window`
//! seconds, wherever the window starts.
//!
//! Each subject keeps a log of the times (milliseconds) of its admitted hits in the last
//! window, one list per limit checked together (e.g. every login from an address, and per
//! account from it), in one item. A check reads the item and, when every limit has room,
//! writes it back with the hit added, conditional on the version it read: one conditional
//! write per check, and two requests at once can never both take the last place (the loser
//! of the race reads again). A refused hit writes nothing, and `Retry-After` is the exact
//! time until the oldest hit that fills the window leaves it.
//!
//! A hit is counted once however often its write is sent: each admitted hit leaves its id in
//! the log (`once`), so when the answer to a write that was applied is lost and the write is
//! sent again (by the SDK's retries, which then find the version changed), the check re-reads,
//! finds its id, and answers as admitted instead of counting it a second time. A request
//! that names itself ([`hit_once`], e.g. an upload by its client session id) is counted once
//! per window even when the client sends it again.
//!
//! Keys (table `limits`):
//! - `RL#<scope>#<subject>` / `log`: the hit logs (attribute per limit: a list of
//!   milliseconds), the ids of the hits in the window (`once`: id to milliseconds), the
//!   version `v`, and an expiry one window after the last hit. A subject may keep further
//!   logs beside it in its partition (`hit_log`).
//! - `KNOWN#<account>` / `<address>`: an address the account signed in from successfully
//!   (kept 90 days); the per-account failure limit does not slow such addresses.
//!
//! Addresses are limited by their network (`address_group`): an IPv6 /64 is one subject,
//! as a host usually holds the whole /64.

use std::net::IpAddr;

use serde_json::{Map, Value, json};

use crate::ports::Ports;
use crate::ports::items::{Condition, Item, Key, StoreError, TTL, TxOp, item};
use crate::retry::{is_conflict, retry_on_conflict};
use crate::tables::Table;

/// How long an address stays known after a successful sign-in.
const KNOWN_ADDRESS_SECS: i64 = 90 * 24 * 3600;

/// The version attribute of a log item.
const VERSION: &str = "v";

/// The attribute of a log item holding the ids of the hits in the window.
const ONCE: &str = "once";

/// How many times a check re-reads after losing a race before giving up (as "busy").
const MAX_RACES: u32 = 200;

/// A limit: at most `max` hits per window, logged in attribute `counter`.
#[derive(Debug, Clone)]
pub struct Limit {
    /// The attribute the hits are logged in.
    pub counter: String,
    /// Hits allowed in any window.
    pub max: u32,
}

impl Limit {
    /// A limit of `max` hits logged in `counter`.
    pub fn new(counter: impl Into<String>, max: u32) -> Self {
        Self {
            counter: counter.into(),
            max,
        }
    }
}

/// A request over a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "too many requests: at most {max} per {window_secs} seconds, retry in {retry_after_secs} seconds"
)]
pub struct RateLimited {
    /// The limit that was exceeded.
    pub max: u32,
    /// Its window.
    pub window_secs: i64,
    /// Seconds until the request would be let through (rounded up).
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

/// The subject an address is limited as: IPv4 addresses (also IPv4-mapped IPv6) exactly,
/// IPv6 addresses by their /64 network, since a single host is commonly given a whole /64
/// and could otherwise take a fresh budget per address. Anything else is kept as it is.
pub fn address_group(address: &str) -> String {
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.to_string(),
        Ok(IpAddr::V6(v6)) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.to_string();
            }
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Err(_) => address.to_owned(),
    }
}

/// The sort key of a subject's main log.
const MAIN_LOG: &str = "log";

fn log_key(scope: &str, subject: &str, log: &str) -> Key {
    Key::new(format!("RL#{scope}#{subject}"), log)
}

fn now_ms(ports: &Ports) -> i64 {
    i64::try_from(ports.clock.now().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The hits of `counter` still inside the window ending at `now`, oldest first.
fn recent(item: Option<&Item>, counter: &str, now: i64, window_ms: i64) -> Vec<i64> {
    let mut hits: Vec<i64> = item
        .and_then(|i| i.get(counter))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    hits.retain(|&t| t > now - window_ms);
    hits.sort_unstable();
    hits
}

/// Whether one more hit at `now` would break a limit; if so, the refusal that waits for
/// every limit to have room again.
fn refusal(
    item: Option<&Item>,
    limits: &[Limit],
    now: i64,
    window_secs: i64,
) -> Option<RateLimited> {
    let window_ms = window_secs * 1000;
    limits
        .iter()
        .filter_map(|limit| {
            let hits = recent(item, &limit.counter, now, window_ms);
            let max = usize::try_from(limit.max).unwrap_or(usize::MAX);
            if hits.len() < max {
                return None;
            }
            // Room returns when the hit that makes the log full leaves the window.
            let free_at = match max {
                0 => now + window_ms,
                _ => hits[hits.len() - max] + window_ms,
            };
            let wait_ms = u64::try_from(free_at - now).unwrap_or(0);
            Some(RateLimited {
                max: limit.max,
                window_secs,
                retry_after_secs: wait_ms.div_ceil(1000).max(1),
            })
        })
        .max_by_key(|r| r.retry_after_secs)
}

/// The item to write back: every log pruned to the window, `limits` with the hit at `now`.
fn with_hit(
    key: &Key,
    current: Option<&Item>,
    limits: &[Limit],
    now: i64,
    window_secs: i64,
    id: &str,
) -> Item {
    let window_ms = window_secs * 1000;
    let mut attributes = Map::new();
    let mut ids: Map<String, Value> = current
        .and_then(|i| i.get(ONCE))
        .and_then(Value::as_object)
        .map(|ids| {
            ids.iter()
                .filter(|(_, at)| at.as_i64().is_some_and(|t| t > now - window_ms))
                .map(|(id, at)| (id.clone(), at.clone()))
                .collect()
        })
        .unwrap_or_default();
    ids.insert(id.to_owned(), json!(now));
    attributes.insert(ONCE.into(), Value::Object(ids));
    // Other logs of the subject (other accounts tried from an address) are kept, pruned.
    if let Some(current) = current {
        for (name, value) in current {
            if value.is_array() {
                let hits = recent(Some(current), name, now, window_ms);
                if !hits.is_empty() {
                    attributes.insert(name.clone(), json!(hits));
                }
            }
        }
    }
    for limit in limits {
        let mut hits = recent(current, &limit.counter, now, window_ms);
        hits.push(now);
        attributes.insert(limit.counter.clone(), json!(hits));
    }
    let version = current
        .and_then(|i| i.get(VERSION))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    attributes.insert(VERSION.into(), json!(version + 1));
    // The log expires once its last hit has left the window.
    attributes.insert(TTL.into(), json!(now / 1000 + window_secs + 1));
    item(key, Value::Object(attributes))
}

/// Counts one hit of `subject` in `scope` against every limit of `window_secs`; a hit over
/// any limit is refused, and not counted, with the seconds until it would be let through.
pub async fn hit(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limits: &[Limit],
) -> Result<(), LimitError> {
    hit_log(ports, scope, subject, MAIN_LOG, window_secs, limits).await
}

/// Like [`hit`], in a second log `log` of the subject (sort key `log`, kept apart from the
/// main one), so the logs of one subject share its partition (and its removal).
pub async fn hit_log(
    ports: &Ports,
    scope: &str,
    subject: &str,
    log: &str,
    window_secs: i64,
    limits: &[Limit],
) -> Result<(), LimitError> {
    counted_hit(ports, scope, subject, log, window_secs, limits, None)
        .await
        .map(drop)
}

/// What is left of a limit after an admitted hit, for the `RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Hits allowed in any window.
    pub limit: u32,
    /// Hits still allowed in the window ending now.
    pub remaining: u32,
    /// Seconds until the oldest hit in the window leaves it (and one more is allowed).
    pub reset_secs: u64,
}

/// Like [`hit`] with a single limit, answering what is left of it.
pub async fn hit_with_usage(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limit: &Limit,
) -> Result<Usage, LimitError> {
    let limits = std::slice::from_ref(limit);
    counted_hit(ports, scope, subject, MAIN_LOG, window_secs, limits, None).await
}

/// Like [`hit`], counting the request named `request` once per window: a hit whose name is
/// already in the window is admitted again without being counted (a client's retry of a
/// request whose answer it never got).
pub async fn hit_once(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limits: &[Limit],
    request: &str,
) -> Result<(), LimitError> {
    counted_hit(
        ports,
        scope,
        subject,
        MAIN_LOG,
        window_secs,
        limits,
        Some(request),
    )
    .await
    .map(drop)
}

/// Whether the hit `id` is in the log `item`'s window ending at `now`.
fn counted_before(item: &Item, id: &str, now: i64, window_ms: i64) -> bool {
    item.get(ONCE)
        .and_then(|ids| ids.get(id))
        .and_then(Value::as_i64)
        .is_some_and(|at| at > now - window_ms)
}

/// The usage of the first of `limits` in the log `written` at `now`.
fn usage_of(written: &Item, limits: &[Limit], now: i64, window_secs: i64) -> Usage {
    let Some(limit) = limits.first() else {
        return Usage {
            limit: 0,
            remaining: 0,
            reset_secs: 0,
        };
    };
    let window_ms = window_secs * 1000;
    let hits = recent(Some(written), &limit.counter, now, window_ms);
    let used = u32::try_from(hits.len()).unwrap_or(u32::MAX);
    let oldest = hits.first().copied().unwrap_or(now);
    let reset_ms = u64::try_from(oldest + window_ms - now).unwrap_or(0);
    Usage {
        limit: limit.max,
        remaining: limit.max.saturating_sub(used),
        reset_secs: reset_ms.div_ceil(1000),
    }
}

/// The table and key of `subject`'s main log in `scope`, for a request that reads it beside
/// its other items and hands it to [`hit_read`] or [`refusal_in`].
pub fn main_log(scope: &str, subject: &str) -> (Table, Key) {
    (Table::Limits, log_key(scope, subject, MAIN_LOG))
}

/// Like [`hit`] (or [`hit_once`], with `request`), from the main log as the caller just read
/// it ([`main_log`]): the first round writes without reading it again. A round that loses a
/// race reads it again, as [`hit`] does.
pub async fn hit_read(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limits: &[Limit],
    request: Option<&str>,
    read: Option<Item>,
) -> Result<Usage, LimitError> {
    counted_hit_from(
        ports,
        scope,
        subject,
        MAIN_LOG,
        window_secs,
        limits,
        request,
        Some(read),
    )
    .await
}

/// Like [`check`], on the main log as the caller just read it ([`main_log`]).
pub fn refusal_in(
    ports: &Ports,
    read: Option<&Item>,
    window_secs: i64,
    limits: &[Limit],
) -> Result<(), RateLimited> {
    match refusal(read, limits, now_ms(ports), window_secs.max(1)) {
        Some(limited) => Err(limited),
        None => Ok(()),
    }
}

async fn counted_hit(
    ports: &Ports,
    scope: &str,
    subject: &str,
    log: &str,
    window_secs: i64,
    limits: &[Limit],
    request: Option<&str>,
) -> Result<Usage, LimitError> {
    counted_hit_from(
        ports,
        scope,
        subject,
        log,
        window_secs,
        limits,
        request,
        None,
    )
    .await
}

/// A hit of the log, from `first` (the log as read by the caller) in the first round.
#[allow(clippy::too_many_arguments)]
async fn counted_hit_from(
    ports: &Ports,
    scope: &str,
    subject: &str,
    log: &str,
    window_secs: i64,
    limits: &[Limit],
    request: Option<&str>,
    first: Option<Option<Item>>,
) -> Result<Usage, LimitError> {
    let mut first = first;
    let key = log_key(scope, subject, log);
    let window_secs = window_secs.max(1);
    // A request without a name of its own gets one for this check, so that its write, sent
    // again after a lost answer, is recognised rather than counted twice.
    let id = match request {
        Some(request) => format!("r:{request}"),
        None => format!("h:{:016x}", rand::random::<u64>()),
    };
    let contended = |e: &LimitError| matches!(e, LimitError::Store(e) if is_conflict(e));
    // Another hit of the same subject was written first: read again.
    let (key, id) = (&key, &id);
    let outcome = retry_on_conflict(MAX_RACES, contended, || {
        // The first round starts from the log the caller read, if it read one.
        let given = first.take();
        async move {
            let now = now_ms(ports);
            let current = match given {
                Some(read) => read,
                None => ports.items.get(Table::Limits, key).await?,
            };
            let window_ms = window_secs * 1000;
            if let Some(log) = current
                .as_ref()
                .filter(|log| counted_before(log, id, now, window_ms))
            {
                return Ok(usage_of(log, limits, now, window_secs));
            }
            if let Some(limited) = refusal(current.as_ref(), limits, now, window_secs) {
                return Err(limited.into());
            }
            let condition = match current.as_ref().and_then(|i| i.get(VERSION)) {
                Some(version) => Condition::Eq(VERSION.into(), version.clone()),
                None => Condition::NotExists,
            };
            let next = with_hit(key, current.as_ref(), limits, now, window_secs, id);
            let usage = usage_of(&next, limits, now, window_secs);
            match ports.items.put(Table::Limits, next, Some(condition)).await {
                Ok(()) => Ok(usage),
                // Not answered after the SDK's retries, perhaps applied: the next read tells.
                Err(e @ StoreError::Unavailable(_)) => {
                    let written = ports.items.get(Table::Limits, key).await.ok().flatten();
                    match written
                        .as_ref()
                        .filter(|log| counted_before(log, id, now, window_ms))
                    {
                        Some(log) => Ok(usage_of(log, limits, now, window_secs)),
                        None => Err(e.into()),
                    }
                }
                Err(e) => Err(e.into()),
            }
        }
    })
    .await;
    match outcome {
        // Hundreds of hits of one subject at the same instant: refuse rather than over-admit.
        Err(e) if contended(&e) => Err(RateLimited {
            max: limits.iter().map(|l| l.max).min().unwrap_or(0),
            window_secs,
            retry_after_secs: 1,
        }
        .into()),
        other => other,
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
    let key = log_key(scope, subject, MAIN_LOG);
    let current = ports.items.get(Table::Limits, &key).await?;
    match refusal(current.as_ref(), limits, now_ms(ports), window_secs.max(1)) {
        Some(limited) => Err(limited.into()),
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

/// The table and key that say whether `account` signed in from `address` before, for a
/// sign-in that reads it beside its other items.
pub fn known_address(account: &str, address: &str) -> (Table, Key) {
    (Table::Limits, known_key(account, address))
}

/// The write that remembers that `account` signed in from `address`, to go in the sign-in's
/// own transaction.
pub fn remember_address_op(ports: &Ports, account: &str, address: &str) -> TxOp {
    let ttl = ports.clock.unix() + KNOWN_ADDRESS_SECS;
    TxOp::Put {
        table: Table::Limits,
        item: item(&known_key(account, address), json!({ TTL: ttl })),
        condition: None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn log(counter: &str, hits: &[i64]) -> Item {
        item(&log_key("s", "x", MAIN_LOG), json!({ counter: hits }))
    }

    #[test]
    fn a_full_window_waits_for_its_oldest_hit() {
        let limits = [Limit::new("n", 3)];
        let item = log("n", &[1_000, 2_000, 30_500]);
        // At 40 s the three hits are inside 60 s; the first leaves at 61 s.
        let refused = refusal(Some(&item), &limits, 40_000, 60).unwrap();
        assert_eq!(refused.retry_after_secs, 21);
        assert!(refusal(Some(&item), &limits, 61_000, 60).is_none());
        assert_eq!(
            refusal(Some(&item), &limits, 60_999, 60)
                .unwrap()
                .retry_after_secs,
            1
        );
    }

    #[test]
    fn a_log_keeps_only_its_window() {
        let key = log_key("s", "x", MAIN_LOG);
        let before = log("n", &[1_000, 2_000]);
        let after = with_hit(&key, Some(&before), &[Limit::new("n", 5)], 61_500, 60, "a");
        assert_eq!(after["n"], json!([2_000, 61_500]));
        assert_eq!(after[VERSION], json!(1));
    }

    #[test]
    fn a_hit_is_known_by_its_id_for_its_window() {
        let key = log_key("s", "x", MAIN_LOG);
        let limits = [Limit::new("n", 5)];
        let first = with_hit(&key, None, &limits, 1_000, 60, "r:a");
        assert!(counted_before(&first, "r:a", 2_000, 60_000));
        assert!(!counted_before(&first, "r:b", 2_000, 60_000));
        let second = with_hit(&key, Some(&first), &limits, 62_000, 60, "r:b");
        // The first hit has left the window, and its id with it.
        assert!(!counted_before(&second, "r:a", 62_000, 60_000));
        assert_eq!(second[ONCE], json!({"r:b": 62_000}));
    }

    #[test]
    fn addresses_are_grouped_by_network() {
        assert_eq!(address_group("192.0.2.7"), "192.0.2.7");
        assert_eq!(address_group("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(
            address_group("2001:db8:1:2:aaaa::1"),
            address_group("2001:db8:1:2:ffff:1:2:3")
        );
        assert_ne!(
            address_group("2001:db8:1:2::1"),
            address_group("2001:db8:1:3::1")
        );
        assert_eq!(address_group("unknown"), "unknown");
    }
}
