//! Cost control, counted in the item store so it holds across instances: requests per driver
//! an hour, and input plus output tokens per driver a day (from the upstream's usage figures).
//!
//! Keys (table `limits`): the request counter is a rate limit (`RL#ai#<user>`); the token
//! counter is `RL#ai-tokens#<user>` / `<day start>`, expiring with its day.

use serde_json::Value;

use crate::config::AiSettings;
use crate::identity::rate_limits::{self, Limit, LimitError, RateLimited};
use crate::ids::UserId;
use crate::ports::Ports;
use crate::ports::items::{Key, StoreError, TTL, Update};
use crate::tables::Table;

const DAY: i64 = 24 * 3600;

/// Counts one coaching request of `user_id` against the hourly limit.
pub(crate) async fn count_request(
    ports: &Ports,
    user_id: &UserId,
    ai: &AiSettings,
) -> Result<(), LimitError> {
    let limit = [Limit::new("n", ai.requests_per_hour)];
    rate_limits::hit(ports, "ai", user_id.as_str(), 3600, &limit).await
}

/// Today's token counter of `user_id`, and the day's end (Unix seconds).
fn today(ports: &Ports, user_id: &UserId) -> (Key, i64, i64) {
    let now = ports.clock.unix();
    let start = now - now.rem_euclid(DAY);
    (
        Key::new(format!("RL#ai-tokens#{user_id}"), start.to_string()),
        start + DAY,
        now,
    )
}

/// Refuses a call when `user_id` has spent today's tokens.
pub(crate) async fn check_tokens(
    ports: &Ports,
    user_id: &UserId,
    ai: &AiSettings,
) -> Result<(), LimitError> {
    let (key, end, now) = today(ports, user_id);
    let spent = ports
        .items
        .get(Table::Limits, &key)
        .await?
        .and_then(|item| item.get("tokens").and_then(Value::as_u64))
        .unwrap_or(0);
    if spent >= ai.tokens_per_day {
        return Err(RateLimited {
            max: u32::try_from(ai.tokens_per_day).unwrap_or(u32::MAX),
            window_secs: DAY,
            retry_after_secs: u64::try_from(end - now).unwrap_or(1).max(1),
        }
        .into());
    }
    Ok(())
}

/// Adds `tokens` to today's counter of `user_id`.
pub(crate) async fn spend_tokens(
    ports: &Ports,
    user_id: &UserId,
    tokens: u64,
) -> Result<(), StoreError> {
    let (key, end, _) = today(ports, user_id);
    let update =
        Update::set(TTL, end + 60).and_add("tokens", i64::try_from(tokens).unwrap_or(i64::MAX));
    ports
        .items
        .update(Table::Limits, &key, update, None)
        .await?;
    Ok(())
}
