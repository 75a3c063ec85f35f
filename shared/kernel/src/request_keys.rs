//! Idempotency keys: a client names one logical request with the `Idempotency-Key` header, so
//! that sending it again (its answer lost on the way, or the function ended after its writes
//! and before answering) makes the thing it asked for once.
//!
//! The first request records the key (`limits`: `REQ#<user>` / `<operation>#<key>`, kept a
//! day) with the id and time of what it makes and a digest of the request. A repeat with the
//! same request gets the same id and time back, so the write it repeats lands on the same key
//! and finds its own earlier result; a repeat with another request under the same key is
//! refused rather than answered with something the client did not ask for.
//!
//! A request refused for what it holds (a field that breaks a rule, a ZIP that fails its
//! check) leaves its refusal in the key's record ([`refuse`]): a repeat is refused again from
//! there, without redoing the work that refused it. Refusals that depend on the moment (a
//! limit, a quota, a backing service) are not kept, so a repeat after them is tried again.

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::hashing::hex;
use crate::ids::UserId;
use crate::ports::Ports;
use crate::ports::items::{Condition, Key, StoreError, TTL, Update, decode, item};
use crate::tables::Table;

/// How long a key is remembered: a client retries within minutes, a day covers a device that
/// was offline overnight.
pub const KEPT_SECS: i64 = 24 * 3600;

/// The longest key; a UUID (36) or a ULID (26) fits with room for a prefix.
pub const MAX_LEN: usize = 100;

/// The header's name.
pub const HEADER: &str = "Idempotency-Key";

/// A client's name for one logical request: 1 to 100 of `A-Z a-z 0-9 - _ . :`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKey(String);

impl RequestKey {
    /// Parses a header value; the error names the header and the rule.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':');
        if raw.is_empty() || raw.len() > MAX_LEN || !raw.chars().all(allowed) {
            return Err(format!(
                "{HEADER}: must be 1 to {MAX_LEN} characters of A-Z, a-z, 0-9, '-', '_', '.' \
                 and ':' (a UUID will do)"
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a key is used for: each has keys of its own, so one key may name a post and a pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `POST /v1/feed`.
    FeedPost,
    /// `POST /v1/sharepacks`.
    SharePack,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Self::FeedPost => "feed-post",
            Self::SharePack => "sharepack",
        }
    }
}

/// What a claimed key stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The id of what the request makes.
    pub id: String,
    /// When the first request with the key was received (milliseconds precision).
    pub at: OffsetDateTime,
    /// Whether an earlier request claimed the key (this one repeats it).
    pub repeat: bool,
    /// How an earlier request under the key was refused, if it was: the answer to repeat.
    pub refused: Option<Refusal>,
}

/// Which answer a kept refusal is (the API answers [`Self::Invalid`] with 400 and
/// [`Self::Unacceptable`] with 422).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RefusalKind {
    /// A field breaks a rule.
    Invalid,
    /// Well-formed, and refused for what it holds (a ZIP that fails its check).
    Unacceptable,
}

/// A refusal kept with its key: the kind of answer and its message, as first answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// The kind of answer (its status).
    pub kind: RefusalKind,
    /// The message the first request got.
    pub message: String,
}

impl Refusal {
    /// A refusal of `kind` with `message`.
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Why a request's key could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key named another request of the driver.
    #[error(
        "{HEADER}: was sent with a different request in the last 24 hours; use a new key for a new request"
    )]
    Reused,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The stored record of a key.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyRecord {
    operation: String,
    key: String,
    /// SHA-256 of what the request asked for, so that another request under the key is told.
    request: String,
    resource_id: String,
    /// Unix milliseconds.
    received_ms: i64,
    /// How the request was refused, once it was ([`refuse`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refusal: Option<Refusal>,
}

/// The partition of `user`'s keys.
pub fn partition(user: &UserId) -> String {
    format!("REQ#{user}")
}

/// A digest of a request's parts, each length-prefixed so that no two requests share one.
pub fn digest(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// Claims `key` for `user`'s `operation` asking for `request` (a [`digest`]): the first time
/// with a fresh id from `fresh_id` and the current time, again with the first claim's own.
pub async fn claim(
    ports: &Ports,
    user: &UserId,
    operation: Operation,
    key: &RequestKey,
    request: &str,
    fresh_id: impl FnOnce() -> String,
) -> Result<Claim, KeyError> {
    let k = Key::new(partition(user), format!("{}#{}", operation.name(), key.0));
    let now = ports.clock.now();
    let received_ms = i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX);
    let record = KeyRecord {
        operation: operation.name().into(),
        key: key.0.clone(),
        request: request.into(),
        resource_id: fresh_id(),
        received_ms,
        refusal: None,
    };
    let mut attributes = serde_json::to_value(&record).expect("a key record serialises");
    attributes[TTL] = json!(now.unix_timestamp() + KEPT_SECS);
    let first = ports
        .items
        .put(
            Table::Limits,
            item(&k, attributes),
            Some(Condition::NotExists),
        )
        .await;
    let (record, repeat) = match first {
        Ok(()) => (record, false),
        // The key is taken: by an earlier request, or by this one's own put whose answer was
        // lost and which the SDK sent again. Either way the record says what it stands for.
        Err(StoreError::ConditionFailed { .. }) => {
            let Some(stored) = ports.items.get(Table::Limits, &k).await? else {
                // Expired between the two calls: the claim is gone, so the key is free.
                return Err(StoreError::Conflict.into());
            };
            (decode::<KeyRecord>(stored, "idempotency key")?, true)
        }
        Err(e) => return Err(e.into()),
    };
    if record.request != request || record.operation != operation.name() {
        return Err(KeyError::Reused);
    }
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(record.received_ms) * 1_000_000)
        .map_err(|e| StoreError::Unavailable(format!("an idempotency key's time: {e}")))?;
    Ok(Claim {
        id: record.resource_id,
        at,
        repeat,
        refused: record.refusal,
    })
}

/// Keeps `refusal` with `user`'s claimed `key` of `operation` for `request` (a [`digest`]), so
/// that a repeat is answered with it ([`Claim::refused`]). Written on condition that the key
/// still stands for that request: sent again, it writes the same; on a key that expired in
/// between, it writes nothing (the repeat then starts afresh).
pub async fn refuse(
    ports: &Ports,
    user: &UserId,
    operation: Operation,
    key: &RequestKey,
    request: &str,
    refusal: &Refusal,
) -> Result<(), StoreError> {
    let k = Key::new(partition(user), format!("{}#{}", operation.name(), key.0));
    let kept = ports
        .items
        .update(
            Table::Limits,
            &k,
            Update::set(
                "refusal",
                serde_json::to_value(refusal).expect("a refusal serialises"),
            ),
            Some(Condition::And(vec![
                Condition::Exists,
                Condition::eq("operation", operation.name()),
                Condition::eq("request", request),
            ])),
        )
        .await;
    match kept {
        Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_and_plain() {
        assert!(RequestKey::parse("0b9e6f3c-6a3e-4c1e-9c49-0f3f4b7a1d2e").is_ok());
        assert!(RequestKey::parse("post:2026-11-26.1_a").is_ok());
        for bad in ["", " ", "a b", "é", "a/b", "a\nb", &"k".repeat(MAX_LEN + 1)] {
            let e = RequestKey::parse(bad).unwrap_err();
            assert!(e.starts_with("Idempotency-Key: must be 1 to 100"), "{e}");
        }
    }

    #[test]
    fn digests_tell_parts_apart() {
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
        assert_eq!(digest(&[b"ab", b"c"]), digest(&[b"ab", b"c"]));
    }
}
