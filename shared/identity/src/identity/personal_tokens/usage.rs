//! A token in use: what it grants on a request (one store read), and its `lastUsedAt`.

use serde_json::json;

use super::{
    LAST_USED_EVERY_SECS, TokenGrant, TokenRefused, check_form, lookup_key, number, scopes_of, text,
};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, StoreError, Update};
use paddock_kernel::tables::Table;

/// What `token` grants, or why it is refused. One store read.
pub async fn authenticate(ports: &Ports, token: &str) -> Result<TokenGrant, AuthError> {
    check_form(token)?;
    let hash = paddock_kernel::hashing::sha256_hex(token);
    let row = ports
        .items
        .get_shared(Table::Tokens, &lookup_key(&hash))
        .await?
        .ok_or(TokenRefused::Unknown)?;
    if row.get("revokedAt").is_some() {
        return Err(TokenRefused::Revoked.into());
    }
    if number(&row, "expiresAt").is_none_or(|e| e <= ports.clock.unix()) {
        return Err(TokenRefused::Expired.into());
    }
    Ok(TokenGrant {
        token_id: text(&row, "tokenId").to_owned(),
        user_id: text(&row, "userId")
            .parse::<UserId>()
            .map_err(|e| StoreError::Unavailable(format!("corrupt personal token: userId: {e}")))?,
        scopes: scopes_of(&row),
        last_used_at: number(&row, "lastUsedAt"),
        hash,
    })
}

/// Why [`authenticate`] did not answer a grant.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The token is refused (401).
    #[error(transparent)]
    Refused(#[from] TokenRefused),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `grant`'s `lastUsedAt` is due for a write at `now` (at most once a minute).
pub fn last_used_due(grant: &TokenGrant, now: i64) -> bool {
    grant
        .last_used_at
        .is_none_or(|t| now - t >= LAST_USED_EVERY_SECS)
}

/// Writes `now` as `grant`'s `lastUsedAt`, unless another request did within the minute.
pub async fn mark_used(ports: &Ports, grant: &TokenGrant, now: i64) -> Result<(), StoreError> {
    let written = ports
        .items
        .update(
            Table::Tokens,
            &lookup_key(&grant.hash),
            Update::set("lastUsedAt", now),
            Some(Condition::And(vec![
                Condition::Exists,
                Condition::Or(vec![
                    Condition::AttrNotExists("lastUsedAt".into()),
                    Condition::Lt("lastUsedAt".into(), json!(now - LAST_USED_EVERY_SECS + 1)),
                ]),
            ])),
        )
        .await;
    match written {
        Ok(_) => Ok(()),
        Err(e) if e.is_condition_failed_at(0) => Ok(()),
        Err(e) => Err(e),
    }
}
