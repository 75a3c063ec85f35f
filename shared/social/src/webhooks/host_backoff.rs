//! A receiver host that stopped answering is recorded once, for every driver: deliveries to
//! it from any subscription wait for its next window, and one of them probes it then; a
//! probe that is answered clears the record, one that fails widens the window
//! ([`HOST_DELAYS_SECS`]). So a host that is down receives one request per window however many
//! drivers, subscriptions and events point at it.
//!
//! Key layout (table `activity`): `HOST#<host>:<port>` / [`SK`], with `failures` (failed
//! windows in a row), `failingSince` (RFC 3339), `nextAtMs` (no attempt before, Unix
//! milliseconds), `probe` (the id of the attempt that holds the window) and `ttl`.
//!
//! Windows are in queue time (the system's clock), as the queue's own delays are: a
//! deferred delivery is a message the queue hides until the window opens.
//!
//! Every write is conditional on what was read, so two deliveries can never both take a
//! window, and a failure is counted once per window (a second one of the same window loses
//! its condition and changes nothing).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use uuid::Uuid;

use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Key, StoreError, TTL, item};
use paddock_kernel::tables::Table;

use super::client::TIMEOUT;

/// The sort key of a host's record.
const SK: &str = "BACKOFF";
/// The window after the 1st, 2nd, ... failed window in a row: shorter than a subscription's
/// own schedule, which it only gathers, and at most an hour.
const HOST_DELAYS_SECS: [u64; 6] = [5, 30, 120, 600, 1800, 3600];
/// How long a probe holds the window: its deadline and a margin for the writes around it.
const PROBE_LEASE: Duration = TIMEOUT.saturating_add(Duration::from_secs(1));
/// A host's record outlives its longest window by this much (then it reads as healthy).
const KEPT_SECS: i64 = 2 * 24 * 3600;

/// Unix milliseconds of queue time.
pub fn queue_now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The window after `failures` failed windows in a row.
pub fn host_delay(failures: u32) -> Duration {
    let index = usize::try_from(failures.saturating_sub(1)).unwrap_or(usize::MAX);
    Duration::from_secs(HOST_DELAYS_SECS[index.min(HOST_DELAYS_SECS.len() - 1)])
}

fn key(host: &str) -> Key {
    Key::new(format!("HOST#{host}"), SK)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Whether a delivery to a host may go now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// The host has no failures recorded.
    Open,
    /// The host is failing and this delivery holds its window (the id of the hold, and the
    /// failed windows so far).
    Probe(String, u32),
    /// The host is failing: not before these Unix milliseconds.
    Wait(i64),
}

/// How a delivery went, as far as the host is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostOutcome {
    /// The host answered (2xx, or a refusal that is the subscription's own, like a 404).
    Answered,
    /// No answer, a 429 or a 5xx: the host is not taking deliveries.
    Down,
    /// Nothing was sent (the address broke a rule): the host's record stays as it is.
    Untried,
}

/// Reads `host`'s record and, if its window is open, takes it.
pub async fn pass(ports: &Ports, host: &str) -> Result<Gate, StoreError> {
    let key = key(host);
    let Some(stored) = ports.items.get(Table::Activity, &key).await? else {
        return Ok(Gate::Open);
    };
    let now = queue_now_ms();
    let next = stored.get("nextAtMs").and_then(Value::as_i64).unwrap_or(0);
    if next > now {
        return Ok(Gate::Wait(next));
    }
    let failures = stored
        .get("failures")
        .and_then(Value::as_u64)
        .and_then(|f| u32::try_from(f).ok())
        .unwrap_or(1);
    let probe = Uuid::now_v7().to_string();
    let mut held = stored.clone();
    held.insert("nextAtMs".into(), (now + millis(PROBE_LEASE)).into());
    held.insert("probe".into(), probe.clone().into());
    match ports
        .items
        .put(Table::Activity, held, Some(Condition::eq("nextAtMs", next)))
        .await
    {
        Ok(()) => Ok(Gate::Probe(probe, failures)),
        // Another delivery took the window (or an answer cleared the record) meanwhile.
        Err(StoreError::ConditionFailed { .. }) => {
            match ports.items.get(Table::Activity, &key).await? {
                None => Ok(Gate::Open),
                Some(now_stored) => {
                    let next = now_stored
                        .get("nextAtMs")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    Ok(Gate::Wait(next.max(now + 1000)))
                }
            }
        }
        Err(e) => Err(e),
    }
}

/// Records how a delivery that passed `gate` went.
pub async fn settle(
    ports: &Ports,
    host: &str,
    gate: &Gate,
    outcome: HostOutcome,
) -> Result<(), StoreError> {
    let key = key(host);
    let now = queue_now_ms();
    let clock_now = ports.clock.now();
    let written = match (gate, outcome) {
        (Gate::Wait(_), _) | (_, HostOutcome::Untried) | (Gate::Open, HostOutcome::Answered) => {
            return Ok(());
        }
        (Gate::Probe(probe, _), HostOutcome::Answered) => ports
            .items
            .delete(
                Table::Activity,
                &key,
                Some(Condition::eq("probe", probe.as_str())),
            )
            .await
            .map(|_| ()),
        (Gate::Open, HostOutcome::Down) => {
            let record = json!({
                "failures": 1,
                "failingSince": rfc3339(clock_now),
                "nextAtMs": now + millis(host_delay(1)),
                TTL: clock_now.unix_timestamp() + KEPT_SECS,
            });
            ports
                .items
                .put(
                    Table::Activity,
                    item(&key, record),
                    Some(Condition::NotExists),
                )
                .await
        }
        (Gate::Probe(probe, failures), HostOutcome::Down) => {
            let failures = failures.saturating_add(1);
            let since = match ports.items.get(Table::Activity, &key).await? {
                Some(stored) => stored.get("failingSince").cloned(),
                None => None,
            }
            .unwrap_or_else(|| rfc3339(clock_now).into());
            let record = json!({
                "failures": failures,
                "failingSince": since,
                "nextAtMs": now + millis(host_delay(failures)),
                TTL: clock_now.unix_timestamp() + KEPT_SECS,
            });
            ports
                .items
                .put(
                    Table::Activity,
                    item(&key, record),
                    Some(Condition::eq("probe", probe.as_str())),
                )
                .await
        }
    };
    match written {
        // Another delivery of the same window wrote first: that one counts.
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_widen_to_an_hour() {
        assert_eq!(host_delay(1), Duration::from_secs(5));
        assert_eq!(host_delay(2), Duration::from_secs(30));
        assert_eq!(host_delay(99), Duration::from_secs(3600));
        // Over a day of failing, about 30 requests reach the host.
        let mut spent = 0;
        let mut probes = 1;
        while spent < 24 * 3600 {
            spent += host_delay(probes).as_secs();
            probes += 1;
        }
        assert!((25..35).contains(&probes), "{probes}");
    }
}
