//! Cost control, counted in the item store so it holds across instances: requests per driver
//! an hour, input plus output tokens per driver a day (from the upstream's usage figures), and
//! tokens of every driver together a day, so that the spend is bounded however many accounts
//! are registered.
//!
//! Keys (table `limits`): the request counter is a rate limit (`RL#ai#<user>`); the token
//! counters are `RL#ai-tokens#<user>` / `<day start>` and, for the whole service,
//! `RL#ai-tokens#*` / `<day start>` (`*` is never a user id), expiring with their day.

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

/// The subject of the whole service's token counter.
const SERVICE: &str = "*";

/// Whose tokens a spent budget was.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BudgetError {
    /// The driver's own daily tokens are spent (or the request limit reached).
    #[error(transparent)]
    Driver(#[from] LimitError),
    /// The whole service's daily tokens are spent.
    #[error("the service's tokens for today are spent")]
    Service(RateLimited),
}

impl From<StoreError> for BudgetError {
    fn from(e: StoreError) -> Self {
        Self::Driver(e.into())
    }
}

/// Today's token counter of `subject`, and the day's end (Unix seconds).
fn today(ports: &Ports, subject: &str) -> (Key, i64, i64) {
    let now = ports.clock.unix();
    let start = now - now.rem_euclid(DAY);
    (
        Key::new(format!("RL#ai-tokens#{subject}"), start.to_string()),
        start + DAY,
        now,
    )
}

/// The refusal of a counter that has reached `max`, waiting for its day to end.
async fn spent_check(
    ports: &Ports,
    subject: &str,
    max: u64,
) -> Result<Option<RateLimited>, StoreError> {
    let (key, end, now) = today(ports, subject);
    let spent = ports
        .items
        .get(Table::Limits, &key)
        .await?
        .and_then(|item| item.get("tokens").and_then(Value::as_u64))
        .unwrap_or(0);
    Ok((spent >= max).then(|| RateLimited {
        max: u32::try_from(max).unwrap_or(u32::MAX),
        window_secs: DAY,
        retry_after_secs: u64::try_from(end - now).unwrap_or(1).max(1),
    }))
}

/// Refuses a call when `user_id` has spent today's tokens, or the service has.
pub(crate) async fn check_tokens(
    ports: &Ports,
    user_id: &UserId,
    ai: &AiSettings,
) -> Result<(), BudgetError> {
    if let Some(limited) = spent_check(ports, SERVICE, ai.service_tokens_per_day).await? {
        return Err(BudgetError::Service(limited));
    }
    if let Some(limited) = spent_check(ports, user_id.as_str(), ai.tokens_per_day).await? {
        return Err(LimitError::from(limited).into());
    }
    Ok(())
}

/// Adds `tokens` to today's counters of `user_id` and of the service.
pub(crate) async fn spend_tokens(
    ports: &Ports,
    user_id: &UserId,
    tokens: u64,
) -> Result<(), StoreError> {
    for subject in [user_id.as_str(), SERVICE] {
        let (key, end, _) = today(ports, subject);
        let update =
            Update::set(TTL, end + 60).and_add("tokens", i64::try_from(tokens).unwrap_or(i64::MAX));
        ports
            .items
            .update(Table::Limits, &key, update, None)
            .await?;
    }
    Ok(())
}
