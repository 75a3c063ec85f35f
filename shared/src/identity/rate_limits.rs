//! Fixed-window rate limits counted in the item store, so they hold across instances.
//!
//! Key (table `limits`): `RL#<scope>#<subject>` / `<window start>`: one counter attribute per
//! limit checked together (e.g. every login from an address, and per account from it), so one
//! atomic update counts a request against all its limits at once.

use crate::http::ApiError;
use crate::ports::Ports;
use crate::ports::items::{Key, Update};
use crate::tables::Table;

/// A limit: at most `max` hits per window, counted in attribute `counter`.
#[derive(Debug, Clone)]
pub struct Limit {
    pub counter: String,
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

/// Counts one hit of `subject` in `scope` against every limit; a hit over any limit answers
/// 429 with the seconds until the window ends.
pub async fn hit(
    ports: &Ports,
    scope: &str,
    subject: &str,
    window_secs: i64,
    limits: &[Limit],
) -> Result<(), ApiError> {
    let now = ports.clock.unix();
    let window = window_secs.max(1);
    let start = now - now.rem_euclid(window);
    let end = start + window;
    let key = Key::new(format!("RL#{scope}#{subject}"), start.to_string());
    let update = limits.iter().fold(Update::set("ttl", end + 60), |u, l| {
        u.and_add(&l.counter, 1)
    });
    let counted = ports
        .items
        .update(Table::Limits, &key, update, None)
        .await?;
    let over = limits.iter().find(|l| {
        counted
            .get(&l.counter)
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0)
            > i64::from(l.max)
    });
    if let Some(limit) = over {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "too many requests: at most {} per {} seconds, retry later",
                limit.max, window
            ),
            retry_after_secs: u64::try_from(end - now).unwrap_or(1).max(1),
        });
    }
    Ok(())
}
