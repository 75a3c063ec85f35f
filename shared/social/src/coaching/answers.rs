//! Stored insight answers: drivers re-open the same lap, so an identical insights request
//! (the same model and the same normalised context) within 24 hours is answered from the
//! store without an upstream call.
//!
//! Keys (table `coaching`): `AI#<user id>` / `INSIGHTS#<sha-256 of the request>`, expiring
//! after 24 hours. Per driver: one driver's answer is never shown to another.

use sha2::{Digest, Sha256};

use super::context::SessionContext;
use super::llm::Completion;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Key, StoreError, TTL, decode, item};
use paddock_kernel::tables::Table;

/// How long an answer is reused.
pub(crate) const KEPT_SECS: i64 = 24 * 3600;

/// The request's fingerprint: the model and the parsed context as canonical JSON (names
/// trimmed, object keys sorted), so spelling, casing, spacing and unknown fields of the body
/// do not matter.
pub(crate) fn fingerprint(model: &str, context: &SessionContext) -> String {
    let canonical = serde_json::json!({"model": model, "context": context}).to_string();
    paddock_kernel::hashing::hex(&Sha256::digest(canonical.as_bytes()))
}

fn key(user_id: &UserId, fingerprint: &str) -> Key {
    Key::new(format!("AI#{user_id}"), format!("INSIGHTS#{fingerprint}"))
}

/// The stored answer of this request, if one is less than a day old.
pub(crate) async fn find(
    ports: &Ports,
    user_id: &UserId,
    fingerprint: &str,
) -> Result<Option<Completion>, StoreError> {
    match ports
        .items
        .get(Table::Coaching, &key(user_id, fingerprint))
        .await?
    {
        Some(item) => decode(item, "stored coaching answer").map(Some),
        None => Ok(None),
    }
}

/// Stores the answer of this request for a day.
pub(crate) async fn keep(
    ports: &Ports,
    user_id: &UserId,
    fingerprint: &str,
    answer: &Completion,
) -> Result<(), StoreError> {
    let mut attributes = serde_json::to_value(answer).expect("a completion serialises");
    attributes[TTL] = (ports.clock.unix() + KEPT_SECS).into();
    ports
        .items
        .put(
            Table::Coaching,
            item(&key(user_id, fingerprint), attributes),
            None,
        )
        .await
}
