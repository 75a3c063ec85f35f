//! Accounts.
//!
//! Keys (table `users`):
//! - `USER#<id>` / `PROFILE`: the profile ([`User`]).
//! - `EMAIL#<lower-case email>` / `ACCOUNT`: [`EmailClaim`], the one-account-per-email claim,
//!   written with the profile under a not-exists condition.
//! - `IDENTITY#<provider>#<subject>` / `LINK`: [`IdentityLink`], a provider identity of the user.
//! - `USER#<id>` / `LINK#<provider>#<subject>`: the index of the user's identity links, written
//!   with each link, so export and deletion find them.
//! - `DELETED#<sha-256 hex of the id>` / `TOMBSTONE`: written when the account is deleted and
//!   kept 30 days (longer than any queue or the outbox keeps an event), so a late event or an
//!   in-flight write of the deleted driver is refused. It holds only the deletion time.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;

use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Item, Key, StoreError, TxOp, decode, item};
use paddock_kernel::tables::Table;

/// A user's profile as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// User UUID.
    #[schema(value_type = String)]
    pub id: UserId,
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
pub fn profile_key(user_id: &UserId) -> Key {
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

/// Sort-key prefix of the user's identity-link index rows.
pub const LINK_INDEX_PREFIX: &str = "LINK#";

/// The key of the user's index row of one provider identity.
pub fn link_index_key(user_id: &UserId, provider: &str, subject: &str) -> Key {
    Key::new(
        format!("USER#{user_id}"),
        format!("{LINK_INDEX_PREFIX}{provider}#{subject}"),
    )
}

/// The transaction operation that writes the index row of a provider identity link.
pub fn link_index_op(user_id: &UserId, provider: &str, subject: &str) -> TxOp {
    TxOp::Put {
        table: Table::Users,
        item: item(
            &link_index_key(user_id, provider, subject),
            serde_json::json!({"provider": provider, "subject": subject}),
        ),
        condition: None,
    }
}

/// How long a deleted account's tombstone is kept.
pub const TOMBSTONE_SECS: i64 = 30 * 24 * 3600;

/// The key of a deleted account's tombstone (no id in it, only its hash).
pub fn tombstone_key(user_id: &UserId) -> Key {
    Key::new(
        format!(
            "DELETED#{}",
            paddock_kernel::hashing::sha256_hex(user_id.as_str())
        ),
        "TOMBSTONE",
    )
}

/// A transaction check that holds while `user_id` is not a deleted account: writers of a
/// driver's data that may run after a deletion (queue consumers, sign-ins) include it.
pub fn not_deleted_op(user_id: &UserId) -> TxOp {
    TxOp::Check {
        table: Table::Users,
        key: tombstone_key(user_id),
        condition: Condition::NotExists,
    }
}

/// The profile item as stored: the profile and its bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredProfile {
    /// What the API shows.
    #[serde(flatten)]
    pub user: User,
    /// Bumped by every change of the name or avatar; copies of them (leaderboard rows) record
    /// the version they show, so a late rewrite never replaces a newer one.
    #[serde(default)]
    pub version: i64,
    /// Set when the account was deleted (RFC 3339); the deletion job removes the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<String>,
    /// The deletion job's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_job: Option<String>,
    /// The kinds of data the deletion job has finished, so a restarted job skips them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletion_done: Vec<String>,
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
            id: UserId::new(),
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

/// The claim of an email by one account, with the account's password hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailClaim {
    /// The driver's id.
    pub user_id: UserId,
    /// The argon2id PHC string; absent for accounts that sign in only through providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// Whether the owner of the address proved it (a trusted provider said so). Registration
    /// proves nothing: anyone can type any address. Claims written before this was recorded
    /// are verified exactly when they carry no password (only providers wrote those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_verified: Option<bool>,
}

impl EmailClaim {
    /// Whether the address was proven to belong to the account's owner.
    pub fn is_verified(&self) -> bool {
        self.email_verified.unwrap_or(self.password_hash.is_none())
    }

    /// The claim as an item under `normalized_email`.
    pub fn to_item(&self, normalized_email: &str) -> paddock_kernel::ports::items::Item {
        item(
            &email_key(normalized_email),
            serde_json::to_value(self).expect("a claim serialises"),
        )
    }
}

/// A provider identity's link to its account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityLink {
    /// The driver's id.
    pub user_id: UserId,
    /// Set while the account is being taken over by the verified owner of its email and its
    /// earlier sign-ins are not all revoked yet; a sign-in that finds it finishes the job.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending_revocation: bool,
}

/// Why registration failed.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// Another account holds the email.
    #[error("an account with this email already exists")]
    EmailTaken,
    /// The item store failed.
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
    register_with(ports, user, normalized_email, password_hash, Vec::new()).await
}

/// [`register`] with `more` operations in the same transaction (the account's first sign-in:
/// `registration`).
pub(crate) async fn register_with(
    ports: &Ports,
    user: &User,
    normalized_email: &str,
    password_hash: String,
    more: Vec<TxOp>,
) -> Result<(), RegisterError> {
    let claim = EmailClaim {
        user_id: user.id.clone(),
        password_hash: Some(password_hash),
        email_verified: Some(false),
    };
    let claim = TxOp::Put {
        table: Table::Users,
        item: claim.to_item(normalized_email),
        condition: Some(Condition::NotExists),
    };
    let mut ops = vec![claim, user.create_op()];
    ops.extend(more);
    match ports.items.transact(ops).await {
        Ok(()) => Ok(()),
        // Applied, its answer lost, and refused when sent again (or not answered at all):
        // the claim names this new account, so the registration is done, not a conflict
        // (and, the transaction being whole, so is what was written with it).
        Err(e) if e.is_condition_failed_at(0) || matches!(e, StoreError::Unavailable(_)) => {
            match find_by_email(ports, normalized_email).await {
                Ok(Some(claim)) if claim.user_id == user.id => Ok(()),
                _ if e.is_condition_failed_at(0) => Err(RegisterError::EmailTaken),
                _ => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The claim of an email, if an account holds it.
pub async fn find_by_email(
    ports: &Ports,
    normalized_email: &str,
) -> Result<Option<EmailClaim>, StoreError> {
    let claim = ports
        .items
        .get(Table::Users, &email_key(normalized_email))
        .await?;
    email_claim_of(claim)
}

/// The table and key of the claim of `normalized_email`, for a sign-in that reads it beside
/// its other items.
pub fn email_claim_key(normalized_email: &str) -> (Table, Key) {
    (Table::Users, email_key(normalized_email))
}

/// The claim as read under [`email_claim_key`].
pub fn email_claim_of(item: Option<Item>) -> Result<Option<EmailClaim>, StoreError> {
    item.map(|c| {
        serde_json::from_value(Value::Object(c))
            .map_err(|e| StoreError::Unavailable(format!("corrupt email claim: {e}")))
    })
    .transpose()
}

/// The link of a provider identity, if any.
pub async fn find_link(
    ports: &Ports,
    provider: &str,
    subject: &str,
) -> Result<Option<IdentityLink>, StoreError> {
    let link = ports
        .items
        .get(Table::Users, &identity_key(provider, subject))
        .await?;
    link.map(|l| {
        serde_json::from_value(Value::Object(l))
            .map_err(|e| StoreError::Unavailable(format!("corrupt identity link: {e}")))
    })
    .transpose()
}

/// The profile of `user_id`; `None` when there is none or the account is deleted.
pub async fn get(ports: &Ports, user_id: &UserId) -> Result<Option<User>, StoreError> {
    Ok(get_stored(ports, user_id)
        .await?
        .filter(|p| p.deleted_at.is_none())
        .map(|p| p.user))
}

/// The stored profile of `user_id`, deleted or not.
pub async fn get_stored(
    ports: &Ports,
    user_id: &UserId,
) -> Result<Option<StoredProfile>, StoreError> {
    let item = ports.items.get(Table::Users, &profile_key(user_id)).await?;
    item.map(|i| decode(i, "profile")).transpose()
}
