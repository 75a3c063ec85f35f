//! Personal access tokens: long-lived bearer credentials a driver makes for their own tools
//! (a spreadsheet, a bot, a league page), each limited to the scopes chosen at creation.
//!
//! A token reads `pdk_` + 43 base62 characters of randomness (256 bits) + 6 base62 characters
//! of the CRC32 of those 43: the prefix lets a secret scanner recognise a leaked token and
//! the checksum lets it (and the service, before any store read) tell a token from a typo.
//! The value is shown once, at creation; the store keeps only its SHA-256.
//!
//! Keys (table `tokens`):
//! - `PAT#<sha256 hex of the token>` / `TOKEN`: `{userId, tokenId, scopes, expiresAt,
//!   revokedAt?, lastUsedAt?, ttl}`: read on every request made with the token.
//! - `USER#<user id>` / `PAT#<token id>`: `{name, scopes, createdAt, expiresAt, revokedAt?,
//!   hash, ttl}`: the driver's list, and the way to the first row for revocation, export and
//!   account deletion. `hash` never leaves the service.
//!
//! Both rows live a week past the token's expiry, so an expired token is refused as expired
//! rather than unknown, and then go with the table's expiry.

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

mod form;
mod usage;

pub use form::{PREFIX, TOKEN_LEN, check_form, generate, is_personal_token};
pub use usage::{AuthError, authenticate, last_used_due, mark_used};

use crate::identity::capped_lists::{CappedList, ListVersion};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{
    Condition, Item, Key, Query, SK, StoreError, TTL, TxOp, Update, item,
};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

/// Expiry when the request names none, in days.
pub const DEFAULT_EXPIRY_DAYS: u32 = 90;
/// The longest expiry, in days.
pub const MAX_EXPIRY_DAYS: u32 = 365;
/// Live (unrevoked, unexpired) tokens a driver may hold.
pub const MAX_LIVE_TOKENS: usize = 20;
/// The longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// How long the rows stay after expiry (so an expired token is told apart from an unknown).
const KEPT_AFTER_EXPIRY_SECS: i64 = 7 * 24 * 3600;
/// `lastUsedAt` is written at most this often per token.
pub const LAST_USED_EVERY_SECS: i64 = 60;
/// Sort-key prefix of a driver's token rows (partition `USER#<user id>`).
pub const TOKEN_INDEX_PREFIX: &str = "PAT#";

/// What a token may do: each route that accepts tokens names the one it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ToSchema)]
pub enum Scope {
    /// List and read sessions (`GET /v1/sessions`, `GET /v1/sessions/{id}`) and tracks.
    #[serde(rename = "sessions:read")]
    SessionsRead,
    /// Upload sessions (`POST /v1/sessions`).
    #[serde(rename = "sessions:write")]
    SessionsWrite,
    /// Leaderboard reads that need a caller (`around=me`, `/v1/leaderboards/me`).
    #[serde(rename = "boards:read")]
    BoardsRead,
    /// Submit laps to leaderboards (`POST /v1/leaderboards/submit`).
    #[serde(rename = "boards:submit")]
    BoardsSubmit,
    /// Read the profile (`GET /v1/profile`, `GET /v1/profile/me`).
    #[serde(rename = "profile:read")]
    ProfileRead,
    /// Read the feed and achievements.
    #[serde(rename = "activity:read")]
    ActivityRead,
    /// List, upload, read, download and delete share packs.
    #[serde(rename = "sharepacks")]
    Sharepacks,
    /// Make, list, change, test and delete webhook subscriptions (`/v1/webhooks`).
    #[serde(rename = "webhooks")]
    Webhooks,
    /// Read competition events, their standings and season tables (`GET /v1/events...`,
    /// `GET /v1/leagues/{id}/events`).
    #[serde(rename = "events:read")]
    EventsRead,
    /// Run the driver's leagues: make, join, read, leave and hand on leagues, rotate codes,
    /// remove members, make events (`/v1/leagues`, `POST /v1/events`).
    #[serde(rename = "leagues")]
    Leagues,
}

impl Scope {
    /// Every scope, in the documented order.
    pub const ALL: [Scope; 10] = [
        Self::SessionsRead,
        Self::SessionsWrite,
        Self::BoardsRead,
        Self::BoardsSubmit,
        Self::ProfileRead,
        Self::ActivityRead,
        Self::Sharepacks,
        Self::Webhooks,
        Self::EventsRead,
        Self::Leagues,
    ];

    /// The scope's name in requests, answers and documentation.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionsRead => "sessions:read",
            Self::SessionsWrite => "sessions:write",
            Self::BoardsRead => "boards:read",
            Self::BoardsSubmit => "boards:submit",
            Self::ProfileRead => "profile:read",
            Self::ActivityRead => "activity:read",
            Self::Sharepacks => "sharepacks",
            Self::Webhooks => "webhooks",
            Self::EventsRead => "events:read",
            Self::Leagues => "leagues",
        }
    }

    /// The scope named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Why a token request was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The name is empty, too long or holds control characters.
    #[error("name: must be 1 to {MAX_NAME_CHARS} characters without control characters")]
    BadName,
    /// No scopes were asked for.
    #[error("scopes: at least one scope is required")]
    NoScopes,
    /// A scope is not one of the documented ones.
    #[error(
        "scopes: unknown scope `{0}`; the scopes are sessions:read, sessions:write, boards:read, boards:submit, profile:read, activity:read, sharepacks, webhooks, events:read, leagues"
    )]
    UnknownScope(String),
    /// The expiry is outside 1 to 365 days.
    #[error("expiresInDays: must be between 1 and {MAX_EXPIRY_DAYS}")]
    BadExpiry,
    /// The driver already holds the most live tokens allowed.
    #[error("at most {MAX_LIVE_TOKENS} live personal access tokens per driver; revoke one first")]
    TooMany,
    /// No token of the caller has that id.
    #[error("no such personal access token")]
    NotFound,
    /// The account was deleted meanwhile.
    #[error("account no longer exists")]
    AccountGone,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a presented token does not authenticate (each answers 401 with its text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefused {
    /// Not `pdk_` + 49 base62 characters.
    #[error("malformed personal access token")]
    Malformed,
    /// The checksum does not match the token's random part.
    #[error("personal access token checksum does not match")]
    BadChecksum,
    /// Well-formed but not issued by this service (or gone with its account).
    #[error("unknown personal access token")]
    Unknown,
    /// Revoked by its driver, a password change or the account's deletion.
    #[error("personal access token has been revoked")]
    Revoked,
    /// Past its expiry.
    #[error("personal access token expired")]
    Expired,
}

/// A new token's request, checked.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// The driver's label for it.
    pub name: String,
    /// What it may do (sorted, without repeats).
    pub scopes: Vec<Scope>,
    /// Days until it expires.
    pub expires_in_days: u32,
}

impl NewToken {
    /// Checks a request's fields: a name, known scopes, an expiry of 1 to 365 days.
    pub fn parse(
        name: &str,
        scopes: &[String],
        expires_in_days: Option<i64>,
    ) -> Result<Self, TokenError> {
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(TokenError::BadName);
        }
        if scopes.is_empty() {
            return Err(TokenError::NoScopes);
        }
        let mut parsed = scopes
            .iter()
            .map(|s| Scope::parse(s).ok_or_else(|| TokenError::UnknownScope(s.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        parsed.sort_unstable();
        parsed.dedup();
        let days = expires_in_days.unwrap_or(i64::from(DEFAULT_EXPIRY_DAYS));
        let days = u32::try_from(days)
            .ok()
            .filter(|d| (1..=MAX_EXPIRY_DAYS).contains(d))
            .ok_or(TokenError::BadExpiry)?;
        Ok(Self {
            name: name.to_owned(),
            scopes: parsed,
            expires_in_days: days,
        })
    }
}

/// A token as its driver sees it in the list (never its value or hash).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// The token's id (for revocation).
    pub id: String,
    /// The driver's label.
    pub name: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// The first characters of the value (`pdk_` and four more), to recognise it by.
    pub prefix: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it stops working (RFC 3339).
    pub expires_at: String,
    /// When it was last used (RFC 3339, to the minute); null when never.
    pub last_used_at: Option<String>,
    /// When it was revoked (RFC 3339); null while not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

/// A freshly made token: the value, shown this once, and what the list shows of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    /// The token (`pdk_...`): shown only in this answer; store it now.
    pub token: String,
    /// The token as the list shows it.
    #[serde(flatten)]
    pub info: TokenInfo,
}

/// What an accepted token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The token's id.
    pub token_id: String,
    /// The driver it acts for.
    pub user_id: UserId,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it was last marked used (Unix seconds), as read.
    pub last_used_at: Option<i64>,
    /// The hash of its value (the key of its row).
    pub(crate) hash: String,
}

impl TokenGrant {
    /// Whether the token was granted `scope`.
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

fn lookup_key(hash: &str) -> Key {
    Key::new(["PAT#", hash].concat(), "TOKEN")
}

fn index_key(user_id: &UserId, token_id: &str) -> Key {
    Key::new(
        format!("USER#{user_id}"),
        format!("{TOKEN_INDEX_PREFIX}{token_id}"),
    )
}

fn rfc3339(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .map(paddock_kernel::ports::clock::rfc3339)
        .unwrap_or_default()
}

fn scopes_of(row: &Item) -> Vec<Scope> {
    row.get("scopes")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .filter_map(Scope::parse)
                .collect()
        })
        .unwrap_or_default()
}

fn number(row: &Item, name: &str) -> Option<i64> {
    row.get(name).and_then(Value::as_i64)
}

fn text<'a>(row: &'a Item, name: &str) -> &'a str {
    row.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// What the list shows of an index row; `None` for a row that is not a token's.
fn info_of(row: &Item) -> Option<TokenInfo> {
    let id = row.get(SK)?.as_str()?.strip_prefix(TOKEN_INDEX_PREFIX)?;
    Some(TokenInfo {
        id: id.to_owned(),
        name: text(row, "name").to_owned(),
        scopes: scopes_of(row),
        prefix: text(row, "prefix").to_owned(),
        created_at: rfc3339(number(row, "createdAt").unwrap_or_default()),
        expires_at: rfc3339(number(row, "expiresAt").unwrap_or_default()),
        last_used_at: None,
        revoked_at: number(row, "revokedAt").map(rfc3339),
    })
}

/// Every token row of `user_id` (live, revoked and recently expired).
pub(crate) async fn rows_of(ports: &Ports, user_id: &UserId) -> Result<Vec<Item>, StoreError> {
    let mut rows = Vec::new();
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Tokens, format!("USER#{user_id}"))
                    .begins_with(TOKEN_INDEX_PREFIX)
                    .limit(50)
                    .after(cursor),
            )
            .await?;
        rows.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(rows),
        }
    }
}

fn is_live(row: &Item, now: i64) -> bool {
    row.get("revokedAt").is_none() && number(row, "expiresAt").is_some_and(|e| e > now)
}

/// Attempts of a creation that lost the list's version to concurrent creations.
const CREATE_ROUNDS: u32 = 20;

/// Makes a token for `user_id`. Each call makes a new token (a retried request makes a
/// second one, which its driver can revoke). The live-token limit holds under creations
/// sent at once: see [`super::capped_lists`].
pub async fn create(
    ports: &Ports,
    user_id: &UserId,
    new: NewToken,
) -> Result<CreatedToken, TokenError> {
    let lost_race = |e: &TokenError| matches!(e, TokenError::Store(e) if is_conflict(e));
    match retry_on_conflict(CREATE_ROUNDS, lost_race, || {
        create_once(ports, user_id, &new)
    })
    .await
    {
        // Lost every round: a conflict the client may retry, not a failure.
        Err(TokenError::Store(StoreError::ConditionFailed { .. })) => {
            Err(TokenError::Store(StoreError::Conflict))
        }
        outcome => outcome,
    }
}

/// One attempt of [`create`]: the list's version, the count, the write.
async fn create_once(
    ports: &Ports,
    user_id: &UserId,
    new: &NewToken,
) -> Result<CreatedToken, TokenError> {
    let version = ListVersion::read(ports, user_id, CappedList::PersonalTokens).await?;
    let now = ports.clock.unix();
    let live = rows_of(ports, user_id)
        .await?
        .iter()
        .filter(|r| is_live(r, now))
        .count();
    if live >= MAX_LIVE_TOKENS {
        return Err(TokenError::TooMany);
    }
    let token = generate();
    let hash = paddock_kernel::hashing::sha256_hex(&token);
    let token_id = uuid::Uuid::now_v7().to_string();
    let expires_at = now + i64::from(new.expires_in_days) * 24 * 3600;
    let ttl = expires_at + KEPT_AFTER_EXPIRY_SECS;
    let scopes: Vec<&str> = new.scopes.iter().map(|s| s.name()).collect();
    let prefix = token[..PREFIX.len() + 4].to_owned();
    let ops = vec![
        TxOp::Put {
            table: Table::Tokens,
            item: item(
                &lookup_key(&hash),
                json!({"userId": user_id, "tokenId": token_id, "scopes": scopes,
                       "expiresAt": expires_at, TTL: ttl}),
            ),
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: Table::Tokens,
            item: item(
                &index_key(user_id, &token_id),
                json!({"name": new.name, "scopes": scopes, "prefix": prefix, "createdAt": now,
                       "expiresAt": expires_at, "hash": hash, TTL: ttl}),
            ),
            condition: Some(Condition::NotExists),
        },
        // A token made while the account is being deleted would outlive it.
        super::users::not_deleted_op(user_id),
        version.advance_op(user_id),
    ];
    match ports.items.transact(ops).await {
        Ok(()) => {}
        Err(e) if e.is_condition_failed_at(2) => return Err(TokenError::AccountGone),
        Err(e) => return Err(e.into()),
    }
    Ok(CreatedToken {
        token,
        info: TokenInfo {
            id: token_id,
            name: new.name.clone(),
            scopes: new.scopes.clone(),
            prefix,
            created_at: rfc3339(now),
            expires_at: rfc3339(expires_at),
            last_used_at: None,
            revoked_at: None,
        },
    })
}

/// The live tokens of `user_id`, newest first, with when each was last used.
pub async fn list(ports: &Ports, user_id: &UserId) -> Result<Vec<TokenInfo>, TokenError> {
    let now = ports.clock.unix();
    let mut shown = Vec::new();
    for row in rows_of(ports, user_id).await? {
        if is_live(&row, now)
            && let Some(info) = with_last_use(ports, &row).await?
        {
            shown.push(info);
        }
    }
    shown.reverse();
    Ok(shown)
}

/// What the list shows of an index row, with the last use its lookup row records.
async fn with_last_use(ports: &Ports, row: &Item) -> Result<Option<TokenInfo>, StoreError> {
    let Some(mut info) = info_of(row) else {
        return Ok(None);
    };
    if let Some(lookup) = ports
        .items
        .get(Table::Tokens, &lookup_key(text(row, "hash")))
        .await?
    {
        info.last_used_at = number(&lookup, "lastUsedAt").map(rfc3339);
    }
    Ok(Some(info))
}

/// What the export shows of every token row of `user_id` (live, revoked and recently
/// expired): metadata only, oldest first.
pub async fn exported(ports: &Ports, user_id: &UserId) -> Result<Vec<TokenInfo>, StoreError> {
    let mut shown = Vec::new();
    for row in rows_of(ports, user_id).await? {
        shown.extend(with_last_use(ports, &row).await?);
    }
    Ok(shown)
}

/// The operations that mark a token row and its lookup row revoked at `now`.
fn revoke_ops(user_id: &UserId, token_id: &str, hash: &str, now: i64) -> Vec<TxOp> {
    vec![
        TxOp::Update {
            table: Table::Tokens,
            key: index_key(user_id, token_id),
            update: Update::set("revokedAt", now),
            condition: Some(Condition::And(vec![
                Condition::Exists,
                Condition::AttrNotExists("revokedAt".into()),
            ])),
        },
        TxOp::Update {
            table: Table::Tokens,
            key: lookup_key(hash),
            update: Update::set("revokedAt", now),
            condition: Some(Condition::eq("userId", user_id.as_str())),
        },
    ]
}

/// Revokes the token `token_id` of `user_id`. Revoking a token already revoked is
/// harmless (a retried request); an id the driver never had is `NotFound`.
pub async fn revoke(ports: &Ports, user_id: &UserId, token_id: &str) -> Result<(), TokenError> {
    let valid_id = !token_id.is_empty()
        && token_id.len() <= 64
        && token_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !valid_id {
        return Err(TokenError::NotFound);
    }
    let Some(row) = ports
        .items
        .get(Table::Tokens, &index_key(user_id, token_id))
        .await?
    else {
        return Err(TokenError::NotFound);
    };
    if row.get("revokedAt").is_some() {
        return Ok(());
    }
    let ops = revoke_ops(user_id, token_id, text(&row, "hash"), ports.clock.unix());
    match ports.items.transact(ops).await {
        // Revoked meanwhile by another request: the same outcome.
        Ok(()) | Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Revokes every unrevoked token of `user_id` (password change, account deletion); answers
/// how many it revoked.
pub async fn revoke_all(ports: &Ports, user_id: &UserId) -> Result<usize, StoreError> {
    let now = ports.clock.unix();
    let mut revoked = 0;
    for row in rows_of(ports, user_id).await? {
        if row.get("revokedAt").is_some() {
            continue;
        }
        let Some(info) = info_of(&row) else {
            continue;
        };
        match ports
            .items
            .transact(revoke_ops(user_id, &info.id, text(&row, "hash"), now))
            .await
        {
            Ok(()) => revoked += 1,
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(revoked)
}

/// The keys of a token row's two items, for account deletion: the lookup row's (when the
/// row names its hash) and the row's own.
pub fn keys_of_row(row: &Item) -> (Option<Key>, Option<Key>) {
    let hash = text(row, "hash");
    ((!hash.is_empty()).then(|| lookup_key(hash)), Key::of(row))
}

#[cfg(test)]
mod tests;
