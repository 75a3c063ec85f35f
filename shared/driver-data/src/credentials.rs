//! The credentials an account can hold, listed once with what ends them.
//!
//! Whoever held an account before it was taken over by the verified owner of its email,
//! before its password was changed, or before it was deleted, may have made credentials of
//! every kind: sign-ins, one-time exchange codes, personal access tokens, webhook
//! subscriptions (a standing feed of the driver's events to a receiver of their choosing),
//! and grants to OAuth apps.
//! Each of those three paths calls [`end_all`] ([`change_password`], [`provider_sign_in`],
//! the deletion's start), which ends every kind in [`Credential::ALL`],
//! so a kind added to the list is ended by all of them at once. Every kind of driver data
//! says whether it is a credential ([`crate::driver_data::DriverData::credential`], a match
//! without a wildcard), so a new kind of driver data cannot skip the question either.
//!
//! A password change pauses webhook subscriptions instead of deleting them: the driver who
//! changed it keeps their receivers' settings and resumes each one they recognise, which asks
//! its receiver to confirm again ([`paddock_social::webhooks::verification`]). A takeover and a
//! deletion delete them.

use paddock_authorization::grants;
use paddock_identity::identity::fields::Password;
use paddock_identity::identity::password_changes::{self, PasswordChangeError, PasswordChanged};
use paddock_identity::identity::passwords::PasswordHasher;
use paddock_identity::identity::provider_accounts::{self, ProviderIdentity, ProviderSignInError};
use paddock_identity::identity::{exchange_codes, personal_tokens, refresh_tokens};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::StoreError;
use paddock_social::webhooks::subscriptions;

/// A kind of credential an account can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Credential {
    /// Sign-ins: refresh-token families, with their refresh and access tokens.
    SignIns,
    /// One-time exchange codes of the desktop sign-in flow, not yet exchanged.
    ExchangeCodes,
    /// Personal access tokens.
    PersonalTokens,
    /// Webhook subscriptions.
    WebhookSubscriptions,
    /// Grants to OAuth apps, with their access and refresh tokens.
    AppGrants,
}

impl Credential {
    /// Every kind, in the order they are ended (sign-ins first: they can make the others).
    pub const ALL: [Credential; 5] = [
        Self::SignIns,
        Self::ExchangeCodes,
        Self::PersonalTokens,
        Self::WebhookSubscriptions,
        Self::AppGrants,
    ];

    /// The kind's name in logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::SignIns => "signIns",
            Self::ExchangeCodes => "exchangeCodes",
            Self::PersonalTokens => "personalTokens",
            Self::WebhookSubscriptions => "webhookSubscriptions",
            Self::AppGrants => "appGrants",
        }
    }

    /// Ends every credential of this kind of `user` for `cause`; answers how many.
    async fn end(
        self,
        ports: &Ports,
        user: &UserId,
        cause: Cause<'_>,
    ) -> Result<usize, StoreError> {
        match self {
            Self::SignIns => {
                refresh_tokens::revoke_all_families(ports, user, cause.kept_sign_in()).await
            }
            Self::ExchangeCodes => exchange_codes::revoke_all(ports, user).await,
            Self::PersonalTokens => personal_tokens::revoke_all(ports, user).await,
            Self::WebhookSubscriptions => match cause {
                Cause::PasswordChange { .. } => {
                    subscriptions::pause_all(ports, user, PAUSED_BY_PASSWORD_CHANGE).await
                }
                Cause::Takeover | Cause::Deletion => subscriptions::delete_all(ports, user).await,
            },
            Self::AppGrants => grants::revoke_all(ports, user).await,
        }
    }
}

/// The reason a subscription paused by a password change shows.
pub const PAUSED_BY_PASSWORD_CHANGE: &str =
    "paused because the account's password changed; resume it to confirm it is yours";

/// Why an account's credentials end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause<'a> {
    /// The verified owner of the account's email took it over from whoever registered it.
    Takeover,
    /// The password was set or changed; the sign-in that changed it stays.
    PasswordChange {
        /// The family of the sign-in that changed it.
        keep_family: &'a str,
    },
    /// The account was deleted.
    Deletion,
}

impl<'a> Cause<'a> {
    /// The sign-in that stays, if one does.
    fn kept_sign_in(self) -> Option<&'a str> {
        match self {
            Self::PasswordChange { keep_family } => Some(keep_family),
            Self::Takeover | Self::Deletion => None,
        }
    }
}

/// How many credentials of each kind [`end_all`] ended, in [`Credential::ALL`]'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ended(pub [usize; Credential::ALL.len()]);

impl Ended {
    /// How many of `kind` were ended.
    pub fn of(&self, kind: Credential) -> usize {
        Credential::ALL
            .iter()
            .position(|k| *k == kind)
            .map_or(0, |i| self.0[i])
    }
}

/// Ends every credential of every kind of `user` for `cause`. Repeating it is harmless (an
/// interrupted takeover finishes it on the owner's next sign-in).
pub async fn end_all(ports: &Ports, user: &UserId, cause: Cause<'_>) -> Result<Ended, StoreError> {
    let mut ended = Ended::default();
    for (i, kind) in Credential::ALL.into_iter().enumerate() {
        ended.0[i] = kind.end(ports, user, cause).await?;
    }
    tracing::info!(
        user_id = user.as_str(),
        cause = ?cause,
        sign_ins = ended.of(Credential::SignIns),
        exchange_codes = ended.of(Credential::ExchangeCodes),
        personal_tokens = ended.of(Credential::PersonalTokens),
        webhook_subscriptions = ended.of(Credential::WebhookSubscriptions),
        app_grants = ended.of(Credential::AppGrants),
        "credentials ended"
    );
    Ok(ended)
}

/// Sets or changes the password of `user_id` ([`password_changes::set_password`]), then ends
/// every other credential of the account: every sign-in but `keep_family` (the caller's).
pub async fn change_password(
    ports: &Ports,
    hasher: &PasswordHasher,
    user_id: &UserId,
    current: Option<String>,
    new: Password,
    keep_family: &str,
) -> Result<PasswordChanged, PasswordChangeError> {
    password_changes::set_password(ports, hasher, user_id, current, new).await?;
    let ended = end_all(ports, user_id, Cause::PasswordChange { keep_family }).await?;
    Ok(PasswordChanged {
        revoked_sessions: ended.of(Credential::SignIns),
        revoked_tokens: ended.of(Credential::PersonalTokens),
        paused_webhooks: ended.of(Credential::WebhookSubscriptions),
    })
}

/// The account of a provider sign-in ([`provider_accounts::find_or_create`]); when it was
/// taken over from whoever registered its email, every earlier credential is ended before
/// the sign-in goes on, and only then is the takeover marked done (an interrupted one is
/// finished by the next sign-in).
pub async fn provider_sign_in(
    ports: &Ports,
    provider: &str,
    identity: &ProviderIdentity,
) -> Result<UserId, ProviderSignInError> {
    let account = provider_accounts::find_or_create(ports, provider, identity).await?;
    if account.takeover_pending {
        let user_id = &account.user_id;
        let ended = end_all(ports, user_id, Cause::Takeover).await?;
        tracing::warn!(
            user_id = user_id.as_str(),
            provider,
            sign_ins = ended.of(Credential::SignIns),
            personal_tokens = ended.of(Credential::PersonalTokens),
            webhook_subscriptions = ended.of(Credential::WebhookSubscriptions),
            "account of an unverified email taken over by its verified owner: password removed, every earlier credential ended"
        );
        provider_accounts::clear_takeover(ports, provider, &identity.subject, user_id).await?;
    }
    Ok(account.user_id)
}
