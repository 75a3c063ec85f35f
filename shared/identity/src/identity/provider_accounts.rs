//! The account of a provider sign-in: linked before, linked now by a verified email, or new.
//!
//! Account pre-hijacking: registration proves nothing about an email, so an attacker could
//! register `victim@example.com` with a password of their own and wait for the victim to sign
//! in through a provider that vouches for that address. Linking the victim's identity to that
//! account would hand the attacker the victim's account. Instead, a trusted provider's
//! verified email that matches an account whose email was never verified takes the account
//! over for its rightful owner: in one transaction the password is removed, the email is
//! marked verified and the identity is linked (flagged as pending revocation); then every
//! credential of the account is ended (`paddock_driver_data::credentials::provider_sign_in`): the
//! attacker's sign-ins, exchange codes and personal access tokens stop working and their
//! webhook subscriptions are deleted; and the flag is cleared ([`clear_takeover`]). A sign-in that finds the flag still set (the revocation
//! was interrupted) finishes it. The driver who really registered with that password sets a
//! new one from the signed-in account (`POST /v1/auth/password`).

use crate::identity::fields::{AvatarUrl, DisplayName, Email};
use crate::identity::users::{self, EmailClaim, IdentityLink, User};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, StoreError, TxOp, Update, item};
use paddock_kernel::retry::retry_on_conflict;
use paddock_kernel::tables::Table;

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderIdentity {
    /// The provider's stable id of the person.
    pub subject: String,
    /// The account email, if any.
    pub email: Option<String>,
    /// Whether the provider vouches for the email (and is trusted to).
    pub email_verified: bool,
    /// The name the provider gives.
    pub name: Option<String>,
    /// The picture URL the provider gives.
    pub picture: Option<String>,
}

/// Attempts before concurrent sign-ins of one identity give up.
const ROUNDS: u32 = 3;

/// Why a provider sign-in found no account.
#[derive(Debug, thiserror::Error)]
pub enum ProviderSignInError {
    /// Concurrent sign-ins kept changing the account's records.
    #[error("concurrent sign-ins for this account, please retry")]
    Contended,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn link_op(provider: &str, subject: &str, user_id: &UserId, pending: bool) -> TxOp {
    let link = IdentityLink {
        user_id: user_id.to_owned(),
        pending_revocation: pending,
    };
    TxOp::Put {
        table: Table::Users,
        item: item(
            &users::identity_key(provider, subject),
            serde_json::to_value(link).expect("a link serialises"),
        ),
        condition: Some(Condition::NotExists),
    }
}

/// The password and verification of `claim` are still what was read.
fn claim_unchanged(claim: &EmailClaim) -> Condition {
    let password = match &claim.password_hash {
        Some(hash) => Condition::eq("passwordHash", hash.as_str()),
        None => Condition::AttrNotExists("passwordHash".into()),
    };
    Condition::And(vec![
        Condition::eq("userId", claim.user_id.as_str()),
        password,
    ])
}

/// The account a provider sign-in found or made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderAccount {
    /// The account.
    pub user_id: UserId,
    /// The account was taken over (now, or by a sign-in interrupted before it finished): its
    /// credentials are to be ended, then [`clear_takeover`] called.
    pub takeover_pending: bool,
}

/// The account of `identity` from `provider`; see the module documentation for the rule.
pub async fn find_or_create(
    ports: &Ports,
    provider: &str,
    identity: &ProviderIdentity,
) -> Result<ProviderAccount, ProviderSignInError> {
    let found = |user_id: UserId, takeover_pending: bool| ProviderAccount {
        user_id,
        takeover_pending,
    };
    let subject = identity.subject.as_str();
    // A concurrent sign-in or change moved the records read: look again.
    let contended = |e: &ProviderSignInError| matches!(e, ProviderSignInError::Contended);
    retry_on_conflict(ROUNDS, contended, || async {
        if let Some(link) = users::find_link(ports, provider, subject).await? {
            return Ok(found(link.user_id, link.pending_revocation));
        }
        let verified_email = identity
            .email
            .as_deref()
            .filter(|_| identity.email_verified)
            .and_then(|e| Email::parse(e).ok());
        if let Some(email) = &verified_email
            && let Some(claim) = users::find_by_email(ports, &email.normalized()).await?
        {
            let user_id = claim.user_id.clone();
            if claim.is_verified() {
                match ports
                    .items
                    .transact(vec![
                        link_op(provider, subject, &user_id, false),
                        users::link_index_op(&user_id, provider, subject),
                    ])
                    .await
                {
                    Ok(()) => return Ok(found(user_id, false)),
                    Err(e) if e.is_condition_failed_at(0) => {
                        return Err(ProviderSignInError::Contended);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let take_over = TxOp::Update {
                table: Table::Users,
                key: users::email_key(&email.normalized()),
                update: Update::set("emailVerified", true).and_remove("passwordHash"),
                condition: Some(claim_unchanged(&claim)),
            };
            let ops = vec![
                link_op(provider, subject, &user_id, true),
                take_over,
                users::link_index_op(&user_id, provider, subject),
            ];
            match ports.items.transact(ops).await {
                Ok(()) => return Ok(found(user_id, true)),
                // Linked meanwhile, or the claim changed (a password change): look again.
                Err(e) if e.is_condition_failed_at(0) || e.is_condition_failed_at(1) => {
                    return Err(ProviderSignInError::Contended);
                }
                Err(e) => return Err(e.into()),
            }
        }
        let user = new_user(identity, verified_email.as_ref(), ports);
        let mut ops = vec![
            link_op(provider, subject, &user.id, false),
            user.create_op(),
        ];
        // After the conditional ops, so their indices stay as the error handling reads them.
        let index = users::link_index_op(&user.id, provider, subject);
        if let Some(email) = &verified_email {
            let claim = EmailClaim {
                user_id: user.id.clone(),
                password_hash: None,
                email_verified: Some(true),
            };
            ops.push(TxOp::Put {
                table: Table::Users,
                item: claim.to_item(&email.normalized()),
                condition: Some(Condition::NotExists),
            });
        }
        ops.push(index);
        match ports.items.transact(ops).await {
            Ok(()) => Ok(found(user.id, false)),
            // A concurrent sign-in linked the identity or claimed the email first: look again.
            Err(e) if e.is_condition_failed_at(0) || e.is_condition_failed_at(2) => {
                Err(ProviderSignInError::Contended)
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
}

/// A new account from what the provider says: its name when it is a valid display name, its
/// picture when it is an https URL, and the email when it is verified and trusted.
fn new_user(identity: &ProviderIdentity, email: Option<&Email>, ports: &Ports) -> User {
    let name = identity
        .name
        .as_deref()
        .and_then(|n| DisplayName::parse(n).ok())
        .map_or_else(|| "Driver".to_owned(), |n| n.as_str().to_owned());
    let avatar = identity
        .picture
        .as_deref()
        .and_then(|p| AvatarUrl::parse(p).ok())
        .map(AvatarUrl::into_string);
    User::new(
        email.map(|e| e.as_str().to_owned()),
        name,
        avatar,
        ports.clock.now(),
    )
}

/// Clears the link's flag once every earlier credential of the taken-over account was ended.
pub async fn clear_takeover(
    ports: &Ports,
    provider: &str,
    subject: &str,
    user_id: &UserId,
) -> Result<(), StoreError> {
    let cleared = ports
        .items
        .update(
            Table::Users,
            &users::identity_key(provider, subject),
            Update::set("userId", user_id.as_str()).and_remove("pendingRevocation"),
            Some(Condition::eq("userId", user_id.as_str())),
        )
        .await;
    match cleared {
        Ok(_) => Ok(()),
        Err(e) if e.is_condition_failed_at(0) => Ok(()),
        Err(e) => Err(e),
    }
}
