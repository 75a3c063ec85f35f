//! One-time exchange codes of the desktop sign-in flow.
//!
//! Key (table `tokens`): `CODE#<sha256 hex of the code>` / `CODE`:
//! `{userId, codeChallenge, ttl}`. A code lives 5 minutes and is consumed by a conditional
//! delete, so of two exchanges of one code exactly one gets it. `USER#<user id>` /
//! `CODE#<sha256 hex>` indexes the user's codes (same expiry), so account deletion finds them.

use serde_json::{Value, json};

use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Key, Query, SK, StoreError, TTL, TxOp, item};
use paddock_kernel::tables::Table;

/// Exchange-code lifetime.
pub const LIFETIME_SECS: i64 = 5 * 60;

fn code_key(code: &str) -> Key {
    code_key_of_hash(&paddock_kernel::hashing::sha256_hex(code))
}

/// The key of the code whose hash is `hash`.
pub fn code_key_of_hash(hash: &str) -> Key {
    Key::new(format!("CODE#{hash}"), "CODE")
}

/// Sort-key prefix of a user's code index rows (partition `USER#<user id>`).
pub const CODE_INDEX_PREFIX: &str = "CODE#";

/// Issues a code (128+ random bits) for `user_id`, bound to the desktop's PKCE challenge.
pub async fn issue(
    ports: &Ports,
    user_id: &UserId,
    code_challenge: &str,
) -> Result<String, StoreError> {
    let code = paddock_kernel::hashing::random_token(32);
    let ttl = ports.clock.unix() + LIFETIME_SECS;
    let hash = paddock_kernel::hashing::sha256_hex(&code);
    let record = item(
        &code_key_of_hash(&hash),
        json!({"userId": user_id, "codeChallenge": code_challenge, TTL: ttl}),
    );
    let index = item(
        &Key::new(
            format!("USER#{user_id}"),
            format!("{CODE_INDEX_PREFIX}{hash}"),
        ),
        json!({ TTL: ttl }),
    );
    ports
        .items
        .transact(vec![
            TxOp::Put {
                table: Table::Tokens,
                item: record,
                condition: Some(Condition::NotExists),
            },
            TxOp::Put {
                table: Table::Tokens,
                item: index,
                condition: None,
            },
        ])
        .await?;
    Ok(code)
}

/// Why an exchange was refused (all answer 400).
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The value is unknown, expired or malformed.
    #[error("code is invalid, expired or already used")]
    Invalid,
    /// The PKCE verifier does not match the challenge.
    #[error("codeVerifier does not match the code_challenge given at login")]
    WrongVerifier,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Consumes `code` and checks `verifier` against its challenge; returns the user id.
/// A wrong verifier still consumes the code, so it cannot be guessed at.
pub async fn redeem(ports: &Ports, code: &str, verifier: &str) -> Result<UserId, ExchangeError> {
    let consumed = match ports
        .items
        .delete(Table::Tokens, &code_key(code), Some(Condition::Exists))
        .await
    {
        Ok(Some(item)) => item,
        Ok(None) => return Err(ExchangeError::Invalid),
        Err(e) if e.is_condition_failed_at(0) => return Err(ExchangeError::Invalid),
        Err(e) => return Err(e.into()),
    };
    let challenge = consumed
        .get("codeChallenge")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !constant_time_eq(&paddock_kernel::hashing::s256(verifier), challenge) {
        return Err(ExchangeError::WrongVerifier);
    }
    consumed
        .get("userId")
        .and_then(Value::as_str)
        .and_then(|id| id.parse::<UserId>().ok())
        .ok_or(ExchangeError::Invalid)
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Deletes every outstanding code of `user_id` and its index row, so none can be exchanged
/// for a sign-in afterwards; answers how many codes it deleted.
pub async fn revoke_all(ports: &Ports, user_id: &UserId) -> Result<usize, StoreError> {
    let mut revoked = 0;
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Tokens, format!("USER#{user_id}"))
                    .begins_with(CODE_INDEX_PREFIX)
                    .after(cursor),
            )
            .await?;
        for row in &page.items {
            if let Some(hash) = row
                .get(SK)
                .and_then(Value::as_str)
                .and_then(|sk| sk.strip_prefix(CODE_INDEX_PREFIX))
            {
                revoked += usize::from(revoke_one(ports, user_id, hash).await?);
            }
            if let Some(key) = Key::of(row) {
                ports.items.delete(Table::Tokens, &key, None).await?;
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(revoked),
        }
    }
}

/// Deletes the code whose hash is `hash` if it is `user_id`'s; answers whether it was there
/// (one exchanged or expired is gone already).
async fn revoke_one(ports: &Ports, user_id: &UserId, hash: &str) -> Result<bool, StoreError> {
    let owned = Some(Condition::eq("userId", user_id.as_str()));
    match ports
        .items
        .delete(Table::Tokens, &code_key_of_hash(hash), owned)
        .await
    {
        Ok(found) => Ok(found.is_some()),
        Err(e) if e.is_condition_failed_at(0) => Ok(false),
        Err(e) => Err(e),
    }
}
