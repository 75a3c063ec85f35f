//! The feed: one entry per upload, submission and unlock (written by the feed consumer), and
//! the driver's own posts. Entries older than 90 days are never shown.
//!
//! Key layout (table `activity`, partition `FEED#<user id>`): sort key `<date>#<entry id>`,
//! the date in UTC with milliseconds (so keys sort by time), the entry id the event's id (so a
//! redelivered event finds its entry and writes nothing). `ttl` is the date plus 90 days, so
//! reads skip older entries and the store's expiry (and the retention sweep) removes them.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

pub use super::feed_text::FeedKind;
use super::feed_text::{self, FeedText};
use hidden_characters::shown_text;
use paddock_identity::identity::users;
use paddock_kernel::events::{Event, ProcessError};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{
    Condition, Key, Query, StoreError, TTL, TxOp, decode, decode_cursor, encode_cursor, item,
};
use paddock_kernel::problems::{FieldProblems, Problems};
use paddock_kernel::rate_limits::{self, Limit, LimitError};
use paddock_kernel::request_keys::{
    self, Claim, KeyError, Operation, Refusal, RefusalKind, RequestKey,
};
use paddock_kernel::tables::Table;

/// Entries older than this are hidden and then removed.
pub const MAX_AGE: time::Duration = time::Duration::days(90);
/// Longest post title, in characters.
pub const TITLE_MAX: usize = 100;
/// Longest post subtitle, in characters.
pub const SUBTITLE_MAX: usize = 280;

/// One feed entry (also its stored attributes, with `ttl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedEntry {
    /// The entry's id (the id of the event it tells of, or of the post).
    pub id: String,
    /// What it is about.
    pub kind: FeedKind,
    /// A short sentence.
    pub title: String,
    /// Details.
    pub subtitle: String,
    /// When the thing happened (RFC 3339, UTC).
    pub date: String,
}

fn partition(user_id: &UserId) -> String {
    format!("FEED#{user_id}")
}

/// `2026-03-01T12:00:00.000Z`: fixed width, so sort keys order by time.
fn sortable(date: OffsetDateTime) -> String {
    let d = date.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        d.year(),
        u8::from(d.month()),
        d.day(),
        d.hour(),
        d.minute(),
        d.second(),
        d.millisecond()
    )
}

fn entry_key(user_id: &UserId, date: OffsetDateTime, id: &str) -> Key {
    Key::new(partition(user_id), format!("{}#{id}", sortable(date)))
}

/// Writes `entry` for `user_id` unless an entry with its key exists or the account is
/// deleted; answers the entry when it wrote it.
async fn write(
    ports: &Ports,
    user_id: &UserId,
    text: FeedText,
    id: String,
) -> Result<Option<FeedEntry>, StoreError> {
    let expires = (text.date + MAX_AGE).unix_timestamp();
    if expires <= ports.clock.unix() {
        return Ok(None); // already past the feed's age: nothing a driver would see
    }
    let entry = FeedEntry {
        id,
        kind: text.kind,
        title: text.title,
        subtitle: text.subtitle,
        date: sortable(text.date),
    };
    let mut attributes = serde_json::to_value(&entry).expect("a feed entry serialises");
    attributes[TTL] = expires.into();
    let key = entry_key(user_id, text.date, &entry.id);
    let ops = vec![
        TxOp::Put {
            table: Table::Activity,
            item: item(&key, attributes),
            condition: Some(Condition::NotExists),
        },
        // A late event (or post) of a deleted account writes nothing.
        users::not_deleted_op(user_id),
    ];
    match ports.items.transact(ops).await {
        Ok(()) => Ok(Some(entry)),
        Err(StoreError::ConditionFailed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The feed consumer: writes the entry `event` makes, once.
pub async fn process(ports: &Ports, event: &Event) -> Result<(), ProcessError> {
    let Some(text) = feed_text::for_event(event) else {
        return Ok(());
    };
    let user_id = event
        .user_id
        .as_ref()
        .ok_or_else(|| ProcessError::Poison(format!("{} without a user", event.kind.name())))?;
    write(ports, user_id, text, event.id.to_string())
        .await
        .map(|_| ())
        .map_err(|e| ProcessError::Retry(anyhow::Error::new(e).context("writing a feed entry")))
}

/// A driver's post, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedPost {
    title: String,
    subtitle: String,
}

impl FeedPost {
    /// The digest an `Idempotency-Key` keeps of the post.
    fn digest(&self) -> String {
        request_keys::digest(&[self.title.as_bytes(), self.subtitle.as_bytes()])
    }

    /// Parses a post: `title` is required (at most 100 characters, not blank), `subtitle`
    /// optional (at most 280); both trimmed.
    pub fn parse(title: Option<String>, subtitle: Option<String>) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let title = p.required("title", title, |t| shown_text(&t, 1, TITLE_MAX));
        let subtitle = p.check(
            "subtitle",
            shown_text(subtitle.as_deref().unwrap_or_default(), 0, SUBTITLE_MAX),
        );
        let post = title
            .zip(subtitle)
            .map(|(title, subtitle)| Self { title, subtitle });
        p.into_result(post)
    }
}

/// Why a driver's post was not posted.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// A field breaks a rule.
    #[error(transparent)]
    Invalid(#[from] FieldProblems),
    /// A repeat under an `Idempotency-Key` whose first request was refused: that refusal.
    #[error("{0}")]
    Refused(Refusal),
    /// The minute's posts are spent (or the limit's store failed).
    #[error(transparent)]
    Limited(#[from] LimitError),
    /// The key names another request (or the store failed).
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// The scope of the posts-a-minute limit.
const LIMIT_SCOPE: &str = "feed-post";

/// `user_id`'s post as sent (`title`, `subtitle`), at most `per_minute` a minute: checked,
/// counted, posted. Without a key a refused post costs nothing (it never reaches the store).
/// Under a `key` the request is posted once however often it is sent (counted once), and a
/// refused one is refused again from its key's record, counted each time: a client sending it
/// again and again meets 429.
pub async fn post_request(
    ports: &Ports,
    user_id: &UserId,
    title: Option<String>,
    subtitle: Option<String>,
    key: Option<&RequestKey>,
    per_minute: u32,
) -> Result<FeedEntry, PostError> {
    let limits = [Limit::new("n", per_minute)];
    let subject = user_id.as_str();
    let Some(key) = key else {
        let parsed = FeedPost::parse(title, subtitle)?;
        rate_limits::hit(ports, LIMIT_SCOPE, subject, 60, &limits).await?;
        return Ok(post(ports, user_id, parsed, None).await?);
    };
    let parsed = FeedPost::parse(title.clone(), subtitle.clone());
    let request = if let Ok(post) = &parsed {
        post.digest()
    } else {
        // What was sent, told apart from any post's digest by its first part.
        let field = |f: &Option<String>| {
            f.as_ref()
                .map_or(b"-".to_vec(), |text| [b"+", text.as_bytes()].concat())
        };
        request_keys::digest(&[b"refused".as_slice(), &field(&title), &field(&subtitle)])
    };
    let new_id = || uuid::Uuid::now_v7().to_string();
    let claim =
        request_keys::claim(ports, user_id, Operation::FeedPost, key, &request, new_id).await?;
    if let Some(refusal) = claim.refused {
        rate_limits::hit(ports, LIMIT_SCOPE, subject, 60, &limits).await?;
        return Err(PostError::Refused(refusal));
    }
    let parsed = match parsed {
        Ok(parsed) => parsed,
        Err(problems) => {
            let refusal = Refusal::new(RefusalKind::Invalid, problems.to_string());
            request_keys::refuse(ports, user_id, Operation::FeedPost, key, &request, &refusal)
                .await
                .map_err(KeyError::Store)?;
            rate_limits::hit(ports, LIMIT_SCOPE, subject, 60, &limits).await?;
            return Err(problems.into());
        }
    };
    // A post sent again under its key counts once.
    rate_limits::hit_once(ports, LIMIT_SCOPE, subject, 60, &limits, key.as_str()).await?;
    write_post(ports, user_id, parsed, claim)
        .await
        .map_err(|e| KeyError::Store(e).into())
}

/// Adds `user_id`'s post, dated now; with a `key`, once for every request sent under it (the
/// post of the first, answered again).
pub async fn post(
    ports: &Ports,
    user_id: &UserId,
    post: FeedPost,
    key: Option<&RequestKey>,
) -> Result<FeedEntry, KeyError> {
    let claim = match key {
        Some(key) => {
            let request = post.digest();
            let new_id = || uuid::Uuid::now_v7().to_string();
            request_keys::claim(ports, user_id, Operation::FeedPost, key, &request, new_id).await?
        }
        None => Claim {
            id: uuid::Uuid::now_v7().to_string(),
            at: ports.clock.now(),
            repeat: false,
            refused: None,
        },
    };
    Ok(write_post(ports, user_id, post, claim).await?)
}

/// Writes `post` as the entry `claim` names (its id and date).
async fn write_post(
    ports: &Ports,
    user_id: &UserId,
    post: FeedPost,
    claim: Claim,
) -> Result<FeedEntry, StoreError> {
    let (id, date) = (claim.id, claim.at);
    let text = FeedText {
        kind: FeedKind::Post,
        title: post.title,
        subtitle: post.subtitle,
        date,
    };
    let outcome = write(ports, user_id, text, id.clone()).await;
    if let Ok(Some(entry)) = outcome {
        return Ok(entry);
    }
    // A write applied whose answer was lost is either not answered after the SDK's retries
    // or refused when sent again, and a keyed request sent again is refused too: the post's
    // own key then holds it. Answering it spares the client's retry a second post.
    if matches!(outcome, Ok(None) | Err(StoreError::Unavailable(_)))
        && let Ok(Some(written)) = ports
            .items
            .get(Table::Activity, &entry_key(user_id, date, &id))
            .await
        && let Ok(entry) = serde_json::from_value::<FeedEntry>(serde_json::Value::Object(written))
    {
        return Ok(entry);
    }
    outcome?.ok_or_else(|| StoreError::Unavailable("a new post's key was taken".into()))
}

/// Why a feed page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FeedReadError {
    /// The cursor is not a `nextCursor` of the caller's feed.
    #[error("cursor: is not a nextCursor of your feed")]
    BadCursor,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A feed cursor: the caller and the last sort key, so a cursor of another driver's feed is
/// refused rather than silently paging from its position.
fn encode_feed_cursor(user_id: &UserId, sk: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{user_id}\n{sk}"))
}

fn decode_feed_cursor(user_id: &UserId, cursor: &str) -> Result<String, FeedReadError> {
    let raw = URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or(FeedReadError::BadCursor)?;
    let (owner, sk) = raw.split_once('\n').ok_or(FeedReadError::BadCursor)?;
    // A sort key is `<24-character date>#<id>`.
    let well_formed = sk.len() > 25 && sk.as_bytes().get(24) == Some(&b'#');
    if owner != user_id.as_str() || !well_formed {
        return Err(FeedReadError::BadCursor);
    }
    Ok(sk.to_owned())
}

/// One page of `user_id`'s feed, newest first, nothing older than 90 days.
pub async fn list(
    ports: &Ports,
    user_id: &UserId,
    limit: usize,
    cursor: Option<&str>,
) -> Result<(Vec<FeedEntry>, Option<String>), FeedReadError> {
    let after = cursor.map(|c| decode_feed_cursor(user_id, c)).transpose()?;
    let oldest = sortable(ports.clock.now() - MAX_AGE);
    let page = ports
        .items
        .query(
            Query::partition(Table::Activity, partition(user_id))
                .between(oldest, "9999")
                .descending()
                .limit(limit)
                .after(after.as_deref().map(encode_cursor)),
        )
        .await?;
    let entries = page
        .items
        .into_iter()
        .map(|item| decode::<FeedEntry>(item, "feed entry"))
        .collect::<Result<Vec<_>, _>>()?;
    let next = page
        .next_cursor
        .map(|c| decode_cursor(&c).map(|sk| encode_feed_cursor(user_id, &sk)))
        .transpose()?;
    Ok((entries, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn posts_are_trimmed_and_checked() {
        let post = FeedPost::parse(Some("  Hello  ".into()), None).unwrap();
        assert_eq!((post.title.as_str(), post.subtitle.as_str()), ("Hello", ""));
        let err = FeedPost::parse(None, Some("x".repeat(281)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "title: is required; subtitle: must be at most 280 characters"
        );
        let err = FeedPost::parse(Some("a\u{7}b".into()), Some("   ".into())).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("title: must not contain control"),
            "{err}"
        );
        assert!(FeedPost::parse(Some("  ".into()), None).is_err());
    }

    #[test]
    fn cursors_belong_to_one_feed() {
        let me = UserId::new();
        let sk = format!("{}#0190", sortable(datetime!(2026-03-01 12:00 UTC)));
        let cursor = encode_feed_cursor(&me, &sk);
        assert_eq!(decode_feed_cursor(&me, &cursor).unwrap(), sk);
        assert!(decode_feed_cursor(&UserId::new(), &cursor).is_err());
        assert!(decode_feed_cursor(&me, "!!").is_err());
        assert!(decode_feed_cursor(&me, &URL_SAFE_NO_PAD.encode(format!("{me}\nshort"))).is_err());
    }
}
