//! Rotating refresh tokens in families.
//!
//! Keys (table `tokens`):
//! - `REFRESH#<sha256 hex of the token>` / `TOKEN`: `{userId, familyId, used, expiresAt,
//!   previous, ttl}`. Only the hash is stored; the raw value exists only in the client's
//!   hands. `previous` is the hash of the token this one replaced.
//! - `FAMILY#<id>` / `STATE`: `{userId, revoked, currentToken, ttl}`. The family id is the access
//!   tokens' `sid`, so revoking a family also shuts out its access tokens. `currentToken` is
//!   the hash of the newest token: with each token's `previous` it chains every token of the
//!   family, so export and account deletion find them without an index of their own.
//! - `USER#<user id>` / `FAMILY#<id>`: `{ttl}`, the index of a user's families, so that every
//!   sign-in of an account can be revoked at once (account takeover by its rightful owner,
//!   password change, account deletion). Its expiry follows the family's.
//!
//! Rotation is one transaction: mark the old token used (condition: unused), check the family
//! is not revoked, store the new token. A used token presented again is a replay: the whole
//! family is revoked. When the store fails to answer the transaction (its answer lost after
//! the SDK's retries), the rotation reads whether its own new token became the family's
//! newest: if so it was applied and its token is answered, since the client's retry of a 503
//! would otherwise present a used token and lose the session as a replay.

use serde_json::{Value, json};
use time::OffsetDateTime;

use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{
    Condition, Key, Query, SK, StoreError, TTL, TxOp, Update, item,
};
use paddock_kernel::retry::retry_on_conflict;
use paddock_kernel::tables::Table;

/// Refresh-token lifetime: 30 days.
pub const LIFETIME_SECS: i64 = 30 * 24 * 3600;
/// Attempts of a rotation whose transaction collided with another before it gives up.
const ROTATE_ATTEMPTS: u32 = 5;

fn token_key(raw: &str) -> Key {
    token_key_of_hash(&paddock_kernel::hashing::sha256_hex(raw))
}

/// The key of the token whose hash is `hash`.
pub fn token_key_of_hash(hash: &str) -> Key {
    Key::new(format!("REFRESH#{hash}"), "TOKEN")
}

/// Sort-key prefix of a user's family index rows (partition `USER#<user id>`).
pub const FAMILY_INDEX_PREFIX: &str = "FAMILY#";

/// The key of a token family's state.
pub fn family_key(family_id: &str) -> Key {
    // Read on every authenticated request: concatenated without the formatting machinery.
    Key::new(["FAMILY#", family_id].concat(), "STATE")
}

/// The key of a user's index entry for one family.
fn user_family_key(user_id: &UserId, family_id: &str) -> Key {
    Key::new(format!("USER#{user_id}"), format!("FAMILY#{family_id}"))
}

/// A freshly issued refresh token.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The raw value for the client (32 random bytes, base64url).
    pub raw: String,
    /// The refresh-token family (the sign-in).
    pub family_id: String,
    /// The driver's id.
    pub user_id: UserId,
}

fn token_op(
    raw: &str,
    previous: Option<&str>,
    user_id: &UserId,
    family_id: &str,
    client: Option<&str>,
    now: OffsetDateTime,
) -> TxOp {
    let expires = now.unix_timestamp() + LIFETIME_SECS;
    let mut attributes = json!({"userId": user_id, "familyId": family_id, "used": false, "expiresAt": expires, TTL: expires});
    if let Some(previous) = previous {
        attributes["previous"] = previous.into();
    }
    if let Some(client) = client {
        attributes["clientId"] = client.into();
    }
    TxOp::Put {
        table: Table::Tokens,
        item: item(&token_key(raw), attributes),
        condition: Some(Condition::NotExists),
    }
}

/// Starts a new family (a sign-in) with its first token.
pub async fn issue_new_family(ports: &Ports, user_id: &UserId) -> Result<Issued, StoreError> {
    issue_new_family_with(ports, user_id, Vec::new()).await
}

/// The writes of a new family of `user_id` with its first token, and the token: for a
/// transaction that signs in as it writes something else (a registration).
pub(crate) fn new_family_ops(ports: &Ports, user_id: &UserId) -> (Issued, Vec<TxOp>) {
    let now = ports.clock.now();
    let family_id = uuid::Uuid::new_v4().to_string();
    let raw = paddock_kernel::hashing::random_token(32);
    let family = TxOp::Put {
        table: Table::Tokens,
        item: item(
            &family_key(&family_id),
            json!({"userId": user_id, "revoked": false, "currentToken": paddock_kernel::hashing::sha256_hex(&raw),
                   TTL: now.unix_timestamp() + LIFETIME_SECS}),
        ),
        condition: Some(Condition::NotExists),
    };
    let index = TxOp::Put {
        table: Table::Tokens,
        item: item(
            &user_family_key(user_id, &family_id),
            json!({TTL: now.unix_timestamp() + LIFETIME_SECS}),
        ),
        condition: None,
    };
    let ops = vec![
        family,
        token_op(&raw, None, user_id, &family_id, None, now),
        index,
        // A sign-in that raced the account's deletion gets no tokens.
        super::users::not_deleted_op(user_id),
    ];
    let issued = Issued {
        raw,
        family_id,
        user_id: user_id.to_owned(),
    };
    (issued, ops)
}

/// [`issue_new_family`] with `more` writes in the same transaction (what a sign-in records
/// of itself, such as the address it came from), so they are made exactly when it is.
pub async fn issue_new_family_with(
    ports: &Ports,
    user_id: &UserId,
    more: Vec<TxOp>,
) -> Result<Issued, StoreError> {
    let (issued, mut ops) = new_family_ops(ports, user_id);
    ops.extend(more);
    match ports.items.transact(ops).await {
        Ok(()) => {}
        // Applied with its answer lost: the new family (a fresh id) names this token.
        Err(e) if e.is_condition_failed_at(0) || matches!(e, StoreError::Unavailable(_)) => {
            if !applied(ports, &issued.family_id, &issued.raw)
                .await
                .unwrap_or(false)
            {
                return Err(e);
            }
        }
        Err(e) => return Err(e),
    }
    Ok(issued)
}

/// The writes of a new family for `client`'s grant from `user_id` (an OAuth app's consent),
/// without a token yet: each code the app exchanges adds one ([`added_token_ops`]).
pub fn app_family_ops(ports: &Ports, user_id: &UserId, client: &str) -> (String, Vec<TxOp>) {
    let now = ports.clock.unix();
    let family_id = uuid::Uuid::new_v4().to_string();
    let ops = vec![
        TxOp::Put {
            table: Table::Tokens,
            item: item(
                &family_key(&family_id),
                json!({"userId": user_id, "revoked": false, "currentToken": "", "clientId": client,
                       TTL: now + LIFETIME_SECS}),
            ),
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: Table::Tokens,
            item: item(
                &user_family_key(user_id, &family_id),
                json!({TTL: now + LIFETIME_SECS}),
            ),
            condition: None,
        },
    ];
    (family_id, ops)
}

/// The writes that add a first token to `client`'s family `family_id` (an app exchanging a
/// code), conditioned on the family being live, and the token.
pub fn added_token_ops(
    ports: &Ports,
    user_id: &UserId,
    family_id: &str,
    client: &str,
) -> (Issued, Vec<TxOp>) {
    let now = ports.clock.now();
    let raw = paddock_kernel::hashing::random_token(32);
    let ttl = now.unix_timestamp() + LIFETIME_SECS;
    let ops = vec![
        TxOp::Update {
            table: Table::Tokens,
            key: family_key(family_id),
            update: Update::set(TTL, ttl)
                .and_set("currentToken", paddock_kernel::hashing::sha256_hex(&raw)),
            condition: Some(Condition::And(vec![
                Condition::Exists,
                Condition::eq("revoked", false),
                Condition::eq("clientId", client),
            ])),
        },
        token_op(&raw, None, user_id, family_id, Some(client), now),
        TxOp::Put {
            table: Table::Tokens,
            item: item(&user_family_key(user_id, family_id), json!({TTL: ttl})),
            condition: None,
        },
    ];
    let issued = Issued {
        raw,
        family_id: family_id.to_owned(),
        user_id: user_id.clone(),
    };
    (issued, ops)
}

/// Why a refresh was refused (all answer 401).
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The value is unknown, expired or malformed.
    #[error("refresh token is invalid or expired")]
    Invalid,
    /// A used token was presented again: its family is now revoked.
    #[error("refresh token was already used; the session has been revoked")]
    Replayed,
    /// The family was revoked (logout, replay, password change, takeover).
    #[error("the session has been revoked")]
    Revoked,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Rotates `raw`: exactly one of any number of concurrent calls succeeds.
pub async fn rotate(ports: &Ports, raw: &str) -> Result<Issued, RefreshError> {
    let nothing = |_: UserId| async { Ok::<_, StoreError>(()) };
    rotate_with(ports, raw, nothing)
        .await
        .map(|(issued, ())| issued)
}

/// [`rotate`], with `beside` (a read of the token's user, say) made at the same time as the
/// rotation's write, once the token is read: a refresh then waits on two round trips, not
/// three. What `beside` answers is handed back with the new token; it is made whether or not
/// the rotation is applied, so it must write nothing.
pub async fn rotate_with<T, F, Fut>(
    ports: &Ports,
    raw: &str,
    beside: F,
) -> Result<(Issued, T), RefreshError>
where
    F: Fn(UserId) -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    rotate_for(ports, raw, None, beside).await
}

/// [`rotate_with`] for the tokens of `client` (an OAuth app; `None`: a sign-in's): a token
/// of any other is refused as invalid, so neither can be refreshed where the other is.
pub async fn rotate_for<T, F, Fut>(
    ports: &Ports,
    raw: &str,
    client: Option<&str>,
    beside: F,
) -> Result<(Issued, T), RefreshError>
where
    F: Fn(UserId) -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let key = token_key(raw);
    let beside = &beside;
    let conflict = |e: &RefreshError| matches!(e, RefreshError::Store(StoreError::Conflict));
    retry_on_conflict(ROTATE_ATTEMPTS, conflict, || async {
        let Some(current) = ports.items.get(Table::Tokens, &key).await? else {
            return Err(RefreshError::Invalid);
        };
        let text = |k: &str| {
            current
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let user_id = text("userId")
            .parse::<UserId>()
            .map_err(|e| StoreError::Unavailable(format!("corrupt refresh token: userId: {e}")))?;
        let family_id = text("familyId");
        if current.get("clientId").and_then(Value::as_str) != client {
            return Err(RefreshError::Invalid);
        }
        if current.get("used").and_then(Value::as_bool) != Some(false) {
            revoke_family(ports, &family_id).await?;
            return Err(RefreshError::Replayed);
        }
        let now = ports.clock.now();
        let new_raw = paddock_kernel::hashing::random_token(32);
        let ops = vec![
            TxOp::Update {
                table: Table::Tokens,
                key: key.clone(),
                update: Update::set("used", true).and_set("usedAt", now.unix_timestamp()),
                condition: Some(Condition::And(vec![
                    Condition::Exists,
                    Condition::eq("used", false),
                ])),
            },
            TxOp::Update {
                table: Table::Tokens,
                key: family_key(&family_id),
                update: Update::set(TTL, now.unix_timestamp() + LIFETIME_SECS).and_set(
                    "currentToken",
                    paddock_kernel::hashing::sha256_hex(&new_raw),
                ),
                condition: Some(Condition::And(vec![
                    Condition::Exists,
                    Condition::eq("revoked", false),
                ])),
            },
            token_op(
                &new_raw,
                Some(&paddock_kernel::hashing::sha256_hex(raw)),
                &user_id,
                &family_id,
                client,
                now,
            ),
            // The index entry lives as long as the family it points to.
            TxOp::Put {
                table: Table::Tokens,
                item: item(
                    &user_family_key(&user_id, &family_id),
                    json!({TTL: now.unix_timestamp() + LIFETIME_SECS}),
                ),
                condition: None,
            },
        ];
        let (written, alongside) =
            futures::join!(ports.items.transact(ops), beside(user_id.clone()));
        let issued = Issued {
            raw: new_raw,
            family_id,
            user_id,
        };
        match written {
            Ok(()) => Ok((issued, alongside?)),
            // Someone used it between our read and our write: that is a replay too.
            Err(e) if e.is_condition_failed_at(0) => {
                revoke_family(ports, &issued.family_id).await?;
                Err(RefreshError::Replayed)
            }
            Err(e) if e.is_condition_failed_at(1) => Err(RefreshError::Revoked),
            // Not answered after the SDK's retries, perhaps applied: the family tells.
            Err(e @ StoreError::Unavailable(_)) => {
                if applied(ports, &issued.family_id, &issued.raw)
                    .await
                    .unwrap_or(false)
                {
                    return Ok((issued, alongside?));
                }
                Err(e.into())
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
}

/// Whether the rotation that issued `new_raw` in `family_id` was applied: the family, not
/// revoked, names it as its newest token.
async fn applied(ports: &Ports, family_id: &str, new_raw: &str) -> Result<bool, StoreError> {
    let family = ports
        .items
        .get(Table::Tokens, &family_key(family_id))
        .await?;
    Ok(family.is_some_and(|f| {
        f.get("revoked").and_then(Value::as_bool) == Some(false)
            && f.get("currentToken").and_then(Value::as_str)
                == Some(super::sha256_hex(new_raw).as_str())
    }))
}

/// The family of a live refresh token, if any.
pub async fn family_of(ports: &Ports, raw: &str) -> Result<Option<(String, String)>, StoreError> {
    let token = ports.items.get(Table::Tokens, &token_key(raw)).await?;
    Ok(token.and_then(|t| {
        Some((
            t.get("userId")?.as_str()?.to_owned(),
            t.get("familyId")?.as_str()?.to_owned(),
        ))
    }))
}

/// The family and the app of a live refresh token an OAuth app holds, if it is one.
pub async fn app_family_of(
    ports: &Ports,
    raw: &str,
) -> Result<Option<(String, String)>, StoreError> {
    let token = ports.items.get(Table::Tokens, &token_key(raw)).await?;
    Ok(token.and_then(|t| {
        Some((
            t.get("familyId")?.as_str()?.to_owned(),
            t.get("clientId")?.as_str()?.to_owned(),
        ))
    }))
}

/// Revokes a family: its refresh tokens and its access tokens stop working.
pub async fn revoke_family(ports: &Ports, family_id: &str) -> Result<(), StoreError> {
    match ports
        .items
        .update(
            Table::Tokens,
            &family_key(family_id),
            Update::set("revoked", true),
            Some(Condition::Exists),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_condition_failed_at(0) => Ok(()), // already gone: nothing left to revoke
        Err(e) => Err(e),
    }
}

/// Whether `family_id` belongs to `user_id` and is not revoked (a consistent read).
pub async fn family_active(
    ports: &Ports,
    family_id: &str,
    user_id: &UserId,
) -> Result<bool, StoreError> {
    let family = ports
        .items
        .get_shared(Table::Tokens, &family_key(family_id))
        .await?;
    Ok(family.is_some_and(|f| {
        f.get("revoked").and_then(Value::as_bool) == Some(false)
            && f.get("userId").and_then(Value::as_str) == Some(user_id.as_str())
    }))
}

/// Revokes every family of `user_id` except `keep` (the caller's own sign-in, when it stays):
/// all their refresh tokens and access tokens stop working on the next request.
pub async fn revoke_all_families(
    ports: &Ports,
    user_id: &UserId,
    keep: Option<&str>,
) -> Result<usize, StoreError> {
    let mut cursor = None;
    let mut revoked = 0;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Tokens, format!("USER#{user_id}"))
                    .begins_with("FAMILY#")
                    .after(cursor),
            )
            .await?;
        for entry in &page.items {
            let Some(family_id) = entry
                .get(SK)
                .and_then(Value::as_str)
                .and_then(|sk| sk.strip_prefix("FAMILY#"))
            else {
                continue;
            };
            if Some(family_id) != keep {
                revoke_family(ports, family_id).await?;
                revoked += 1;
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(revoked),
        }
    }
}
