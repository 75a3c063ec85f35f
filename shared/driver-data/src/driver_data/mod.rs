//! The registry of a driver's data: every kind of item and blob that belongs to a driver, with
//! where it lives and how it is found. The export ([`export`]) and the account deletion
//! ([`deletion`]) both walk [`DriverData::ALL`], and each of them matches on every kind, so a
//! kind added here cannot be left out of either. [`DriverData::covering`] tells which kind
//! covers a stored item; a test writes one of every kind through the API, scans every table
//! and the blob store for the driver's ids and fails on anything no kind covers, so a feature
//! that stores driver data without registering it here fails that test.
//!
//! Canonical tracks and merged track maps are shared aggregates of every driver's uploads:
//! they are not a driver's data and stay when an account is deleted.

pub mod deletion;
pub mod export;

use serde_json::Value;

use crate::credentials::Credential;
use paddock_authorization::grants::GRANT_PREFIX;
use paddock_boards::leaderboards::lap_history::LAP_HISTORY_PREFIX;
use paddock_competitions::leagues;
use paddock_identity::identity::personal_tokens::TOKEN_INDEX_PREFIX;
use paddock_identity::identity::users::User;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Item, PK, Query, SK, StoreError};
use paddock_kernel::tables::Table;

/// A kind of data that belongs to a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DriverData {
    /// The profile (`users`: `USER#<id>` / `PROFILE`).
    Profile,
    /// The email claim with the password hash (`users`: `EMAIL#<email>` / `ACCOUNT`), found
    /// from the profile's email. Exported without the hash; freed at once on deletion.
    EmailSignIn,
    /// Provider identity links (`users`: `IDENTITY#<provider>#<subject>` / `LINK`) and their
    /// index (`USER#<id>` / `LINK#...`). Removed at once on deletion.
    ProviderLinks,
    /// Sign-ins: refresh-token families (`tokens`: `FAMILY#<id>` / `STATE`) and their index
    /// (`USER#<id>` / `FAMILY#<id>`). Revoked at once on deletion.
    SignIns,
    /// Refresh tokens (`tokens`: `REFRESH#<hash>` / `TOKEN`), found through each family's
    /// chain of token hashes. Never exported (they are credentials).
    RefreshTokens,
    /// One-time exchange codes (`tokens`: `CODE#<hash>` / `CODE`) and their index
    /// (`USER#<id>` / `CODE#<hash>`). Never exported (credentials of 5 minutes).
    ExchangeCodes,
    /// Personal access tokens (`tokens`: `PAT#<hash>` / `TOKEN`, and the driver's list
    /// `USER#<id>` / `PAT#<token id>`). Revoked at once on deletion; exported as metadata
    /// (name, scopes, dates), never their hashes.
    AccessTokens,
    /// Sessions with their laps (`sessions`: `USER#<id>` / `SESSION#<id>`).
    Sessions,
    /// Upload idempotency records (`sessions`: `USER#<id>` / `CLIENT#<ClientSessionId>`).
    UploadRecords,
    /// Track-processing jobs of the driver's sessions (`tracks`: `JOBS` / `<job>` and
    /// `LEASES` / `<job>`), found through the sessions' `trackJobId`.
    TrackJobs,
    /// Uploaded track points (blobs `tracks/<track>/points/<session>.json`), found through
    /// the sessions that brought them.
    TrackPoints,
    /// Leaderboard entries and their rank rows on track and car boards (`leaderboards`:
    /// `BOARD#<track>[#CAR#<car>]` / `ENTRY#<id>` and `RANK#...#<id>`), found through the
    /// driver's board index (`USER#<id>` / `BOARD#`). The boards' counts (`COUNT#`, `VEH#`)
    /// are numbers without a driver in them; removing an entry takes its share off them.
    LeaderboardEntries,
    /// Every lap the driver submitted to a board (`leaderboards`: `USER#<id>` /
    /// `LAP#<track>#...`), drawn as the progress chart on the driver's public page.
    LapHistory,
    /// Feed entries (`activity`: `FEED#<id>`).
    Feed,
    /// Statistics, first-seen markers and unlocked achievements (`activity`: `ACH#<id>`).
    Achievements,
    /// Share-pack metadata, the owner's list and quota usage (`sharepacks`: `PACK#<id>` /
    /// `META`, `OWNER#<id>`, `USAGE#<id>`).
    SharePacks,
    /// Share-pack ZIPs (blobs `packs/<id>.zip`, `uploads/<id>.zip`), found through the
    /// owner's list.
    SharePackObjects,
    /// Stored coaching answers (`coaching`: `AI#<id>`).
    CoachingAnswers,
    /// Leagues the driver belongs to and owns (`competitions`: their list and counts
    /// `DRIVER#<id>`, their membership `LEAGUE#<league>` / `MEMBER#<id>`, and each league they
    /// own, `LEAGUE#<league>` / `META`). Deletion leaves each league as the driver would: one
    /// they own passes to its longest-standing member, or closes when they are alone in it.
    Leagues,
    /// Usage counters of the driver (`limits`:
    /// `RL#<upload|ai|ai-tokens|sharepack-upload|feed-post|export|webhook-check>#<id>`): the
    /// AI usage and the upload, feed-post, export and webhook receiver check rates.
    UsageCounters,
    /// Addresses the account signed in from and its failed-login counter (`limits`:
    /// `KNOWN#<account>` and `RL#login-failures#<account>`, the account named by its email's
    /// hash), found from the profile's email.
    SignInAddresses,
    /// Idempotency keys of the driver's requests (`limits`: `REQ#<id>` / `<operation>#<key>`),
    /// kept a day.
    RequestKeys,
    /// Events of the driver waiting in the outbox (`outbox`): relayed within seconds and
    /// removed by the relay; their consumers write nothing for a deleted account.
    PendingEvents,
    /// Webhook subscriptions with their secrets, delivery history, delivered-event markers
    /// and `board.passed` markers (`activity`: `HOOK#<id>`). Exported as the subscriptions
    /// without their secrets; deleted first, so nothing more is delivered.
    Webhooks,
    /// Exports handed out through the blob store (AWS: blobs `exports/<id>/<export>.json`,
    /// offered by a presigned URL, expired after a day by the bucket's lifecycle rule).
    Exports,
    /// OAuth apps the driver registered (`tokens`: `APP#<client id>` / `APP` and the
    /// driver's list `USER#<id>` / `APP#<client id>`). Deleting one ends every driver's grant
    /// to it. Exported without their secrets' hashes.
    Apps,
    /// The driver's grants to OAuth apps (`tokens`: `USER#<id>` / `GRANT#<client id>`, each
    /// app's row `APP#<client id>` / `GRANT#<id>`, and codes of the last ten minutes
    /// `OAUTHCODE#<hash>` / `CODE` with their index `USER#<id>` / `OAUTHCODE#<hash>`). Their tokens are refresh-token families, as sign-ins'
    /// ([`Self::SignIns`]). Revoked at once on deletion.
    AppGrants,
}

impl DriverData {
    /// Every kind, in export order.
    pub const ALL: [DriverData; 27] = [
        Self::Profile,
        Self::EmailSignIn,
        Self::ProviderLinks,
        Self::SignIns,
        Self::RefreshTokens,
        Self::ExchangeCodes,
        Self::AccessTokens,
        Self::Sessions,
        Self::UploadRecords,
        Self::TrackJobs,
        Self::TrackPoints,
        Self::LeaderboardEntries,
        Self::LapHistory,
        Self::Feed,
        Self::Achievements,
        Self::SharePacks,
        Self::SharePackObjects,
        Self::CoachingAnswers,
        Self::Leagues,
        Self::UsageCounters,
        Self::SignInAddresses,
        Self::RequestKeys,
        Self::Webhooks,
        Self::PendingEvents,
        Self::Exports,
        Self::Apps,
        Self::AppGrants,
    ];

    /// The credential this kind is, if it is one: what a takeover, a password change and the
    /// account's deletion end ([`crate::credentials`]). No wildcard: a new kind
    /// says whether it grants access to the account or its events.
    pub fn credential(self) -> Option<Credential> {
        match self {
            Self::SignIns | Self::RefreshTokens => Some(Credential::SignIns),
            Self::ExchangeCodes => Some(Credential::ExchangeCodes),
            Self::AccessTokens => Some(Credential::PersonalTokens),
            Self::Webhooks => Some(Credential::WebhookSubscriptions),
            Self::AppGrants => Some(Credential::AppGrants),
            // The password is removed or replaced by each of those paths itself, and provider
            // links are the verified owner's own; the rest grants nothing.
            Self::Profile
            | Self::EmailSignIn
            | Self::ProviderLinks
            | Self::Sessions
            | Self::UploadRecords
            | Self::TrackJobs
            | Self::TrackPoints
            | Self::LeaderboardEntries
            | Self::LapHistory
            | Self::Feed
            | Self::Achievements
            | Self::SharePacks
            | Self::SharePackObjects
            | Self::CoachingAnswers
            | Self::Leagues
            | Self::UsageCounters
            | Self::SignInAddresses
            | Self::RequestKeys
            | Self::PendingEvents
            | Self::Exports
            // An app the driver runs acts for other drivers, never for its owner's account.
            | Self::Apps => None,
        }
    }

    /// The kind's name: its key in the export and its label in metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Profile => "profile",
            Self::EmailSignIn => "emailSignIn",
            Self::ProviderLinks => "providerLinks",
            Self::SignIns => "signIns",
            Self::RefreshTokens => "refreshTokens",
            Self::ExchangeCodes => "exchangeCodes",
            Self::AccessTokens => "accessTokens",
            Self::Sessions => "sessions",
            Self::UploadRecords => "uploadRecords",
            Self::TrackJobs => "trackJobs",
            Self::TrackPoints => "trackPoints",
            Self::LeaderboardEntries => "leaderboardEntries",
            Self::LapHistory => "lapHistory",
            Self::Feed => "feed",
            Self::Achievements => "achievements",
            Self::SharePacks => "sharePacks",
            Self::SharePackObjects => "sharePackObjects",
            Self::CoachingAnswers => "coachingAnswers",
            Self::Leagues => "leagues",
            Self::UsageCounters => "usageCounters",
            Self::SignInAddresses => "signInAddresses",
            Self::RequestKeys => "requestKeys",
            Self::PendingEvents => "pendingEvents",
            Self::Webhooks => "webhooks",
            Self::Exports => "exports",
            Self::Apps => "apps",
            Self::AppGrants => "appGrants",
        }
    }

    /// The kind that covers the stored `item` of `table` belonging to `driver`, if any.
    pub fn covering(driver: &Driver, table: Table, item: &Item) -> Option<Self> {
        let text = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default();
        let (pk, sk) = (text(PK), text(SK));
        let user = driver.id.as_str();
        let mine = |attr: &str| text(attr) == user;
        let user_pk = format!("USER#{user}");
        let kind = match table {
            Table::Users if pk == user_pk && sk == "PROFILE" => Self::Profile,
            Table::Users if pk.starts_with("EMAIL#") && mine("userId") => Self::EmailSignIn,
            Table::Users if pk.starts_with("IDENTITY#") && mine("userId") => Self::ProviderLinks,
            Table::Users if pk == user_pk && sk.starts_with("LINK#") => Self::ProviderLinks,
            Table::Tokens if pk.starts_with("FAMILY#") && mine("userId") => Self::SignIns,
            Table::Tokens if pk == user_pk && sk.starts_with("FAMILY#") => Self::SignIns,
            Table::Tokens if pk.starts_with("REFRESH#") && mine("userId") => Self::RefreshTokens,
            Table::Tokens if pk.starts_with("CODE#") && mine("userId") => Self::ExchangeCodes,
            Table::Tokens if pk == user_pk && sk.starts_with("CODE#") => Self::ExchangeCodes,
            Table::Tokens if pk.starts_with("PAT#") && mine("userId") => Self::AccessTokens,
            Table::Tokens if pk == user_pk && sk.starts_with(TOKEN_INDEX_PREFIX) => {
                Self::AccessTokens
            }
            Table::Tokens if pk == user_pk && sk.starts_with("APP#") => Self::Apps,
            Table::Tokens if pk.starts_with("APP#") && sk == "APP" && mine("ownerId") => Self::Apps,
            Table::Tokens if pk == user_pk && sk.starts_with(GRANT_PREFIX) => Self::AppGrants,
            Table::Tokens if pk.starts_with("APP#") && sk == format!("{GRANT_PREFIX}{user}") => {
                Self::AppGrants
            }
            Table::Tokens if pk.starts_with("OAUTHCODE#") && mine("userId") => Self::AppGrants,
            Table::Tokens if pk == user_pk && sk.starts_with("OAUTHCODE#") => Self::AppGrants,
            Table::Sessions if pk == user_pk && sk.starts_with("SESSION#") => Self::Sessions,
            Table::Sessions if pk == user_pk && sk.starts_with("CLIENT#") => Self::UploadRecords,
            Table::Tracks if pk == "JOBS" && mine("userId") => Self::TrackJobs,
            Table::Leaderboards
                if pk.starts_with("BOARD#")
                    && (sk == format!("ENTRY#{user}") || sk.ends_with(&format!("#{user}"))) =>
            {
                Self::LeaderboardEntries
            }
            Table::Leaderboards
                if pk == user_pk && (sk.starts_with("BOARD#") || sk.starts_with("TRACKBOARD#")) =>
            {
                Self::LeaderboardEntries
            }
            Table::Leaderboards if pk == user_pk && sk.starts_with(LAP_HISTORY_PREFIX) => {
                Self::LapHistory
            }
            Table::Activity if pk == format!("FEED#{user}") => Self::Feed,
            Table::Activity if pk == format!("ACH#{user}") => Self::Achievements,
            Table::Sharepacks if pk.starts_with("PACK#") && mine("ownerId") => Self::SharePacks,
            Table::Sharepacks if pk == format!("OWNER#{user}") || pk == format!("USAGE#{user}") => {
                Self::SharePacks
            }
            Table::Coaching if pk == format!("AI#{user}") => Self::CoachingAnswers,
            Table::Competitions if pk == leagues::driver_partition(&driver.id) => Self::Leagues,
            Table::Competitions
                if pk.starts_with("LEAGUE#")
                    && (sk == format!("MEMBER#{user}") || (sk == "META" && mine("ownerId"))) =>
            {
                Self::Leagues
            }
            Table::Activity if pk == paddock_social::webhooks::partition(&driver.id) => {
                Self::Webhooks
            }
            Table::Limits if USAGE_SCOPES.iter().any(|s| pk == format!("RL#{s}#{user}")) => {
                Self::UsageCounters
            }
            Table::Limits
                if driver.account.as_deref().is_some_and(|a| {
                    pk == format!("KNOWN#{a}") || pk == format!("RL#login-failures#{a}")
                }) =>
            {
                Self::SignInAddresses
            }
            Table::Limits if pk == paddock_kernel::request_keys::partition(&driver.id) => {
                Self::RequestKeys
            }
            Table::Outbox
                if item
                    .get("event")
                    .and_then(|e| e.get("userId"))
                    .and_then(Value::as_str)
                    == Some(user) =>
            {
                Self::PendingEvents
            }
            _ => return None,
        };
        Some(kind)
    }

    /// The kind that covers the blob `key`, if it is a kind of driver data.
    pub fn covering_blob(key: &str) -> Option<Self> {
        if key.starts_with("tracks/") && key.contains("/points/") {
            Some(Self::TrackPoints)
        } else if key.starts_with("packs/") || key.starts_with("uploads/") {
            Some(Self::SharePackObjects)
        } else if key.starts_with(EXPORTS_PREFIX) {
            Some(Self::Exports)
        } else {
            None
        }
    }
}

/// Where exports handed out through the blob store live: `exports/<user id>/`.
pub(crate) const EXPORTS_PREFIX: &str = "exports/";

/// The blob key prefix of `user`'s exports.
pub fn exports_of(user: &UserId) -> String {
    format!("{EXPORTS_PREFIX}{user}/")
}

/// The rate-limit scopes counted per driver id (see [`DriverData::UsageCounters`]).
pub(crate) const USAGE_SCOPES: [&str; 8] = [
    "upload",
    "new-board",
    "ai",
    "ai-tokens",
    "sharepack-upload",
    "feed-post",
    "export",
    paddock_social::webhooks::verification::SCOPE,
];

/// Whose data: the driver's id, and the name of their account in sign-in counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driver {
    /// The driver's id.
    pub id: UserId,
    /// The email's account name in sign-in rate limits (see `identity::account_subject`).
    pub account: Option<String>,
    /// The email, normalised.
    pub email: Option<String>,
}

impl Driver {
    /// The driver of `profile`.
    pub fn of(profile: &User) -> Self {
        let email = profile
            .email
            .as_deref()
            .and_then(|e| paddock_identity::identity::fields::Email::parse(e).ok())
            .map(|e| e.normalized());
        Self {
            id: profile.id.clone(),
            account: email
                .as_deref()
                .map(paddock_identity::identity::account_subject),
            email,
        }
    }
}

/// The pages of one partition (or the part of it under a sort-key prefix), in order.
pub(crate) struct Pages {
    query: Query,
    done: bool,
}

impl Pages {
    /// Pages of 50 items of partition `pk` of `table`, under `prefix` when given.
    pub(crate) fn new(table: Table, pk: String, prefix: Option<&str>) -> Self {
        let mut query = Query::partition(table, pk).limit(50);
        if let Some(prefix) = prefix {
            query = query.begins_with(prefix);
        }
        Self { query, done: false }
    }

    /// Every item of every page (for the small index partitions).
    pub(crate) async fn all(mut self, ports: &Ports) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        while let Some(page) = self.next(ports).await? {
            items.extend(page);
        }
        Ok(items)
    }

    /// The next page; `None` after the last.
    pub(crate) async fn next(&mut self, ports: &Ports) -> Result<Option<Vec<Item>>, StoreError> {
        if self.done {
            return Ok(None);
        }
        let page = ports.items.query(self.query.clone()).await?;
        self.query.cursor = page.next_cursor;
        self.done = self.query.cursor.is_none();
        Ok(Some(page.items))
    }
}

/// A league operation's failure as the store's: on deletion and export, anything but the
/// store failing would be a league left inconsistent, so it is reported as the store failing
/// (the job is retried).
pub(crate) fn league_store_error(e: leagues::LeagueError) -> StoreError {
    match e {
        leagues::LeagueError::Store(s) => s,
        other => StoreError::Unavailable(format!("leaving a league: {other}")),
    }
}

/// The sort key of `item` after `prefix` (the id an index row points to).
pub(crate) fn sk_after(item: &Item, prefix: &str) -> Option<String> {
    item.get(SK)?
        .as_str()?
        .strip_prefix(prefix)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every credential kind is some kind of driver data, and every kind of driver data that
    /// is a credential is ended by [`crate::credentials::end_all`].
    #[test]
    fn the_credential_list_and_the_registry_agree() {
        for credential in Credential::ALL {
            assert!(
                DriverData::ALL
                    .iter()
                    .any(|d| d.credential() == Some(credential)),
                "{} is no kind of driver data",
                credential.name()
            );
        }
        for kind in DriverData::ALL {
            if let Some(credential) = kind.credential() {
                assert!(
                    Credential::ALL.contains(&credential),
                    "{} is a credential that end_all does not end",
                    kind.name()
                );
            }
        }
    }
}
