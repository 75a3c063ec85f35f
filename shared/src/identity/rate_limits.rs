//! Fixed-window rate limits counted in the item store, so they hold across instances.
//!
//! Key (table `limits`): `RL#<limit>#<subject>` / `<window start>`: `{count, ttl}`.

use crate::http::ApiError;
use crate::ports::Ports;
use crate::ports::items::{Key, Update};
use crate::tables::Table;

/// A limit: at most `max` hits per `window_secs` per subject.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub name: &'static str,
    pub max: u32,
    pub window_secs: i64,
}

/// Counts one hit of `subject` against `limit`; the hit over the limit answers 429 with the
/// seconds until the window ends.
pub async fn hit(ports: &Ports, limit: Limit, subject: &str) -> Result<(), ApiError> {
    let now = ports.clock.unix();
    let window = limit.window_secs.max(1);
    let start = now - now.rem_euclid(window);
    let end = start + window;
    let key = Key::new(format!("RL#{}#{subject}", limit.name), start.to_string());
    let counted = ports
        .items
        .update(
            Table::Limits,
            &key,
            Update::set("ttl", end + 60).and_add("count", 1),
            None,
        )
        .await?;
    let count = counted
        .get("count")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(0);
    if count > i64::from(limit.max) {
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
