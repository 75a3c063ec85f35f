//! Cost control, counted in the item store so it holds across instances: requests per driver
//! an hour, input plus output tokens per driver a day, and tokens of every driver together a
//! day, so that the spend is bounded however many accounts are registered.
//!
//! A call reserves the most tokens it can cost ([`most_tokens`]) on both daily counters before
//! the model is asked, each with one conditional update that adds the reservation only while
//! the counter leaves room for all of it; calls made at once can never admit more than the cap
//! between them. Once the provider has answered, the call is settled: its reservation is
//! replaced by what the provider counted. Every reservation is also kept on the counter's item
//! under an attribute of its own (`held_<id>`), which makes both steps safe to apply twice: a
//! reservation whose answer was lost and is sent again finds its attribute and is not added
//! again, and a settlement applies only while the attribute is there. A reservation never
//! settled (the instance stopped in between, the store failed) stays counted until its day's
//! counter expires: the error is always tokens unspent, never tokens spent past a cap.
//!
//! Keys (table `limits`): the request counter is a rate limit (`RL#ai#<user>`); the token
//! counters are `RL#ai-tokens#<user>` / `<day start>` and, for the whole service,
//! `RL#ai-tokens#*` / `<day start>` (`*` is never a user id), expiring with their day; their
//! `tokens` attribute is what is spent and held.

use serde_json::Value;

use super::llm::Prompt;
use paddock_config::config::AiSettings;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Key, StoreError, TTL, Update};
use paddock_kernel::rate_limits::{self, Limit, LimitError, RateLimited};
use paddock_kernel::tables::Table;

const DAY: i64 = 24 * 3600;

/// The counted attribute of a token counter.
const TOKENS: &str = "tokens";

/// Tokens a provider may count for a call beyond those of its text: the framing of the
/// conversation, and what a chat template adds around the system prompt.
const FRAMING_TOKENS: u64 = 64;
/// Tokens a provider may count per message beyond those of its text (role markers and the
/// like).
const TOKENS_PER_MESSAGE: u64 = 8;

/// The most tokens `prompt` can cost, input and output: every input token stands for at least
/// one byte of the prompt's UTF-8 text (the providers' tokenizers work on bytes), plus the
/// framing, plus the most the model may generate. A bound, not an estimate: typical English
/// text takes about a quarter of it.
pub(crate) fn most_tokens(prompt: &Prompt) -> u64 {
    let bytes = prompt.system.len()
        + prompt
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>();
    let messages = prompt.messages.len() as u64 + 1;
    bytes as u64 + FRAMING_TOKENS + TOKENS_PER_MESSAGE * messages + u64::from(prompt.max_tokens)
}

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
/// The subject of the service-wide counter.
pub const SERVICE: &str = "*";

/// Whose tokens a refused reservation wanted.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    /// The driver's own daily tokens do not leave room for the call (or the store failed).
    #[error(transparent)]
    Driver(#[from] LimitError),
    /// The whole service's daily tokens do not leave room for the call.
    #[error("the service's tokens for today are spent")]
    Service(RateLimited),
}

impl From<StoreError> for BudgetError {
    fn from(e: StoreError) -> Self {
        Self::Driver(e.into())
    }
}

/// One daily counter a reservation is held on.
#[derive(Debug, Clone)]
pub struct Counter {
    key: Key,
    /// The counter's day end (Unix seconds); the item expires a minute after it.
    day_end: i64,
    /// The day's cap.
    cap: u64,
}

impl Counter {
    /// Today's counter of `subject`, capped at `cap`.
    pub fn today(ports: &Ports, subject: &str, cap: u64) -> Self {
        let now = ports.clock.unix();
        let start = now - now.rem_euclid(DAY);
        Self {
            key: Key::new(format!("RL#ai-tokens#{subject}"), start.to_string()),
            day_end: start + DAY,
            cap,
        }
    }

    /// The refusal of a call that does not fit: it waits for the day to end.
    fn refusal(&self, ports: &Ports) -> RateLimited {
        RateLimited {
            max: u32::try_from(self.cap).unwrap_or(u32::MAX),
            window_secs: DAY,
            retry_after_secs: u64::try_from(self.day_end - ports.clock.unix())
                .unwrap_or(1)
                .max(1),
        }
    }

    /// Holds `tokens` under `held` when the counter leaves room for them; false when it
    /// does not. Applied twice (an answer lost and the call sent again), it holds them once.
    pub async fn hold(&self, ports: &Ports, held: &str, tokens: u64) -> Result<bool, StoreError> {
        // Without room for the call even on an empty counter, there is nothing to write.
        let Some(room) = self.cap.checked_sub(tokens) else {
            return Ok(false);
        };
        let amount = i64::try_from(tokens).unwrap_or(i64::MAX);
        let update = Update::set(TTL, self.day_end + 60)
            .and_add(TOKENS, amount)
            .and_set(held, amount);
        // At most `room` spent and held before this call: `tokens < room + 1`.
        let fits = Condition::Or(vec![
            Condition::AttrNotExists(TOKENS.into()),
            Condition::Lt(
                TOKENS.into(),
                Value::from(i64::try_from(room).unwrap_or(i64::MAX - 1) + 1),
            ),
        ]);
        let condition = Condition::And(vec![Condition::AttrNotExists(held.into()), fits]);
        match ports
            .items
            .update(Table::Limits, &self.key, update, Some(condition))
            .await
        {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed { .. }) => {
                // Either no room, or this very hold was applied already and its answer lost.
                let item = ports.items.get(Table::Limits, &self.key).await?;
                Ok(item.is_some_and(|item| item.get(held) == Some(&Value::from(amount))))
            }
            Err(e) => Err(e),
        }
    }

    /// The tokens counted today, spent and held.
    pub async fn counted(&self, ports: &Ports) -> Result<u64, StoreError> {
        Ok(ports
            .items
            .get(Table::Limits, &self.key)
            .await?
            .and_then(|item| item.get(TOKENS).and_then(Value::as_u64))
            .unwrap_or(0))
    }

    /// Whether today's counter has an item in the store.
    pub async fn is_stored(&self, ports: &Ports) -> Result<bool, StoreError> {
        Ok(ports.items.get(Table::Limits, &self.key).await?.is_some())
    }

    /// Replaces the `tokens` held under `held` by `spent`. Applied twice, or to a hold that is
    /// gone, it changes nothing.
    pub async fn settle(
        &self,
        ports: &Ports,
        held: &str,
        tokens: u64,
        spent: u64,
    ) -> Result<(), StoreError> {
        let amount = i64::try_from(tokens).unwrap_or(i64::MAX);
        let change = i64::try_from(spent)
            .unwrap_or(i64::MAX)
            .saturating_sub(amount);
        let mut update = Update::set(TTL, self.day_end + 60).and_remove(held);
        if change != 0 {
            update = update.and_add(TOKENS, change);
        }
        match ports
            .items
            .update(
                Table::Limits,
                &self.key,
                update,
                Some(Condition::Eq(held.into(), Value::from(amount))),
            )
            .await
        {
            Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Tokens held for one call on today's counters of its driver and of the service, until the
/// call is settled.
#[derive(Debug)]
#[must_use = "a reservation stays counted until it is settled"]
pub struct Reservation {
    /// The attribute the reservation is held under, on both counters.
    held: String,
    /// The tokens held.
    tokens: u64,
    /// The counters (the driver's, then the service's), of the day the call was admitted.
    counters: [Counter; 2],
}

/// Holds `tokens` for a call of `user_id` on the driver's and the service's counters of
/// today; refused (nothing held) when either has no room left for all of them.
pub async fn reserve(
    ports: &Ports,
    user_id: &UserId,
    ai: &AiSettings,
    tokens: u64,
) -> Result<Reservation, BudgetError> {
    let driver = Counter::today(ports, user_id.as_str(), ai.tokens_per_day);
    let service = Counter::today(ports, SERVICE, ai.service_tokens_per_day);
    let held = format!("held_{:016x}", rand::random::<u64>());
    // The driver's counter first: a driver over their own cap never touches the shared one.
    match driver.hold(ports, &held, tokens).await {
        Ok(true) => {}
        Ok(false) => return Err(LimitError::from(driver.refusal(ports)).into()),
        Err(e) => {
            // The hold may have been written before the error: take it back if so.
            release_quietly(ports, &driver, &held, tokens).await;
            return Err(e.into());
        }
    }
    let refused = match service.hold(ports, &held, tokens).await {
        Ok(true) => None,
        Ok(false) => Some(BudgetError::Service(service.refusal(ports))),
        Err(e) => {
            release_quietly(ports, &service, &held, tokens).await;
            Some(e.into())
        }
    };
    if let Some(refused) = refused {
        release_quietly(ports, &driver, &held, tokens).await;
        return Err(refused);
    }
    Ok(Reservation {
        held,
        tokens,
        counters: [driver, service],
    })
}

/// Takes a hold back; a failure leaves it counted until its day ends (logged).
async fn release_quietly(ports: &Ports, counter: &Counter, held: &str, tokens: u64) {
    if let Err(e) = counter.settle(ports, held, tokens, 0).await {
        tracing::warn!(error = %e, "could not release reserved coaching tokens");
    }
}

impl Reservation {
    /// The tokens held.
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Replaces the reservation by `spent` tokens on both counters (0 releases it whole,
    /// [`Self::tokens`] keeps it whole). A counter the store fails to settle keeps the
    /// reservation until its day ends.
    pub async fn settle(self, ports: &Ports, spent: u64) -> Result<(), StoreError> {
        let mut outcome = Ok(());
        for counter in &self.counters {
            if let Err(e) = counter.settle(ports, &self.held, self.tokens, spent).await {
                outcome = Err(e);
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coaching::llm::{Message, Role};

    #[test]
    fn a_call_reserves_its_bytes_its_framing_and_its_output() {
        let prompt = Prompt {
            system: "s".repeat(1000),
            messages: vec![
                Message {
                    role: Role::User,
                    content: "é".repeat(100),
                },
                Message {
                    role: Role::Assistant,
                    content: "ok".into(),
                },
            ],
            max_tokens: 1024,
        };
        // 1000 + 200 (two bytes a character) + 2 bytes; 64 + 8 for each of 3 messages.
        assert_eq!(most_tokens(&prompt), 1202 + 64 + 24 + 1024);
    }
}
