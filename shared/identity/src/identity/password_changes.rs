//! Setting or changing the password of a signed-in driver (`POST /v1/auth/password`).
//!
//! An account that has a password needs it to set a new one (a stolen access token alone
//! must not be enough to lock the owner out); an account without one (provider sign-in, or
//! taken over by the verified owner of its email) sets its first password. Every other
//! sign-in of the account is revoked afterwards, so whoever knew the old password is out, and
//! every other credential ends with them: `paddock_driver_data::credentials::change_password` sets it
//! through [`set_password`] and then ends them (exchange codes and personal access tokens
//! revoked, webhook subscriptions paused until the driver resumes them).

use crate::identity::fields::{Email, Password};
use crate::identity::passwords::{PasswordError, PasswordHasher};
use crate::identity::users;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, StoreError, Update};
use paddock_kernel::tables::Table;

/// Why the password was not set.
#[derive(Debug, thiserror::Error)]
pub enum PasswordChangeError {
    /// Passwords sign in by email; this account has none.
    #[error("this account has no email address to sign in with a password")]
    NoEmail,
    /// The account has a password and the request did not give it.
    #[error("currentPassword: is required to change the password")]
    CurrentRequired,
    /// The current password given is wrong.
    #[error("currentPassword: does not match")]
    CurrentWrong,
    /// The account's password changed meanwhile.
    #[error("the password was changed meanwhile, please retry")]
    Concurrent,
    /// The account does not exist anymore.
    #[error("account no longer exists")]
    NoAccount,
    /// Password hashing failed or is saturated.
    #[error(transparent)]
    Hashing(#[from] PasswordError),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a successful change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PasswordChanged {
    /// Other sign-ins of the account that were revoked.
    pub revoked_sessions: usize,
    /// Personal access tokens of the account that were revoked.
    pub revoked_tokens: usize,
    /// Webhook subscriptions of the account that were paused.
    pub paused_webhooks: usize,
}

/// Sets `new` as the password of `user_id`, checking `current` when the account has one.
/// The account's other credentials are ended by the caller
/// (`paddock_driver_data::credentials::change_password`).
pub async fn set_password(
    ports: &Ports,
    hasher: &PasswordHasher,
    user_id: &UserId,
    current: Option<String>,
    new: Password,
) -> Result<(), PasswordChangeError> {
    let user = users::get(ports, user_id)
        .await?
        .ok_or(PasswordChangeError::NoAccount)?;
    let email = user
        .email
        .as_deref()
        .and_then(|e| Email::parse(e).ok())
        .ok_or(PasswordChangeError::NoEmail)?
        .normalized();
    let claim = users::find_by_email(ports, &email)
        .await?
        .filter(|c| &c.user_id == user_id)
        .ok_or(PasswordChangeError::NoEmail)?;
    if let Some(hash) = &claim.password_hash {
        let current = current.ok_or(PasswordChangeError::CurrentRequired)?;
        if !hasher.verify(current, Some(hash.clone())).await? {
            return Err(PasswordChangeError::CurrentWrong);
        }
    }
    let new_hash = hasher.hash(new).await?;
    let unchanged = match &claim.password_hash {
        Some(hash) => Condition::eq("passwordHash", hash.as_str()),
        None => Condition::AttrNotExists("passwordHash".into()),
    };
    let written = ports
        .items
        .update(
            Table::Users,
            &users::email_key(&email),
            Update::set("passwordHash", new_hash),
            Some(Condition::And(vec![
                Condition::eq("userId", user_id.as_str()),
                unchanged,
            ])),
        )
        .await;
    match written {
        Ok(_) => {}
        Err(e) if e.is_condition_failed_at(0) => return Err(PasswordChangeError::Concurrent),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
