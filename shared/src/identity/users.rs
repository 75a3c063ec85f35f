//! Accounts.
//!
//! Keys (table `users`):
//! - `USER#<id>` / `PROFILE`: the profile ([`User`]).
//! - `EMAIL#<lower-case email>` / `ACCOUNT`: `{userId, passwordHash?}`, the one-account-per-email
//!   claim, written with the profile under a not-exists condition.
//! - `IDENTITY#<provider>#<subject>` / `LINK`: `{userId}`, a provider identity of the user.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::ports::Ports;
use crate::ports::clock::rfc3339;
use crate::ports::items::{Condition, Key, StoreError, TxOp, item};
use crate::tables::Table;

/// A user's profile as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// User UUID.
    pub id: String,
    /// Account email; null for accounts that signed in only through a provider without email.
    pub email: Option<String>,
    /// Shown on leaderboards and the feed.
    pub display_name: String,
    /// Profile image URL.
    pub avatar_url: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
}

/// The key of a user's profile.
pub fn profile_key(user_id: &str) -> Key {
    Key::new(format!("USER#{user_id}"), "PROFILE")
}

/// The key of an email claim.
pub fn email_key(normalized_email: &str) -> Key {
    Key::new(format!("EMAIL#{normalized_email}"), "ACCOUNT")
}

/// The key of a provider identity link.
pub fn identity_key(provider: &str, subject: &str) -> Key {
    Key::new(format!("IDENTITY#{provider}#{subject}"), "LINK")
}

impl User {
    /// A new user created now.
    pub fn new(
        email: Option<String>,
        display_name: String,
        avatar_url: Option<String>,
        now: OffsetDateTime,
    ) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            email,
            display_name,
            avatar_url,
            created_at: rfc3339(now),
        }
    }

    /// The transaction operation that creates the profile.
    pub fn create_op(&self) -> TxOp {
        TxOp::Put {
            table: Table::Users,
            item: item(
                &profile_key(&self.id),
                serde_json::to_value(self).expect("a user serialises"),
            ),
            condition: Some(Condition::NotExists),
        }
    }
}

/// Why registration failed.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates an account with an email claim; the claim's condition keeps one account per email.
pub async fn register(
    ports: &Ports,
    user: &User,
    normalized_email: &str,
    password_hash: String,
) -> Result<(), RegisterError> {
    let claim = TxOp::Put {
        table: Table::Users,
        item: item(
            &email_key(normalized_email),
            json!({"userId": user.id, "passwordHash": password_hash}),
        ),
        condition: Some(Condition::NotExists),
    };
    match ports.items.transact(vec![claim, user.create_op()]).await {
        Ok(()) => Ok(()),
        Err(e) if e.is_condition_failed_at(0) => Err(RegisterError::EmailTaken),
        Err(e) => Err(e.into()),
    }
}

/// The account id and password hash claimed by an email.
pub async fn find_by_email(
    ports: &Ports,
    normalized_email: &str,
) -> Result<Option<(String, Option<String>)>, StoreError> {
    let claim = ports
        .items
        .get(Table::Users, &email_key(normalized_email))
        .await?;
    Ok(claim.and_then(|c| {
        let user_id = c.get("userId")?.as_str()?.to_owned();
        Some((
            user_id,
            c.get("passwordHash")
                .and_then(Value::as_str)
                .map(str::to_owned),
        ))
    }))
}

/// The profile of `user_id`.
pub async fn get(ports: &Ports, user_id: &str) -> Result<Option<User>, StoreError> {
    let item = ports.items.get(Table::Users, &profile_key(user_id)).await?;
    item.map(|i| {
        serde_json::from_value(Value::Object(i))
            .map_err(|e| StoreError::Unavailable(format!("corrupt profile: {e}")))
    })
    .transpose()
}
