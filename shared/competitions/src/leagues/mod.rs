//! Leagues: a driver makes one and owns it; others join through its invite code, which the
//! owner can rotate (the old code then names nothing). The owner removes members and hands
//! the league on; a member leaves; an owner who leaves hands it to the longest-standing member,
//! or closes it when nobody else is in it.
//!
//! Key layout (table `competitions`):
//! - `LEAGUE#<id>` / `META`: the league, its owner, its member count and its invite code;
//! - `LEAGUE#<id>` / `MEMBER#<user id>`: one member (the owner is a member too), with when
//!   they joined;
//! - `INVITE#<code>` / `INVITE`: the league a live invite code opens;
//! - `DRIVER#<user id>` / `LEAGUE#<id>`: the driver's own list of leagues;
//! - `DRIVER#<user id>` / `COUNTS`: how many leagues the driver owns and belongs to (the
//!   limits are conditions on these counts, kept in the same transaction as each change).
//!
//! Every change is one transaction whose conditions state what it read (the owner, the code,
//! the count), so two changes racing never leave half of either, and a lost race is retried
//! from a fresh read or refused as the state now says.

mod changes;
mod departure;
mod reads;

pub use changes::*;
pub use departure::*;
pub use reads::*;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hidden_characters::shown_text;
use paddock_kernel::ids::{LeagueId, UserId};
use paddock_kernel::ports::items::{Key, StoreError};
use paddock_kernel::problems::{FieldProblems, Problems};
use paddock_kernel::tables::Table;

/// The table leagues live in.
pub const TABLE: Table = Table::Competitions;
/// Leagues one driver may own at once.
pub const MAX_OWNED: u32 = 5;
/// Leagues one driver may belong to at once (those they own included).
pub const MAX_JOINED: u32 = 20;
/// Members one league may have (its owner included).
pub const MAX_MEMBERS: u32 = 50;
/// Longest league name, in characters.
pub const MAX_NAME_CHARS: usize = 60;
/// Longest league description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Random bytes in an invite code (128 bits: not guessable).
const CODE_BYTES: usize = 16;
/// Characters of an invite code (its bytes in unpadded URL-safe base64).
pub const CODE_CHARS: usize = 22;

/// A league as a member sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct League {
    /// The league's id.
    #[schema(value_type = String, format = Uuid)]
    pub id: LeagueId,
    /// Its name.
    pub name: String,
    /// What it is about (may be empty).
    pub description: String,
    /// The owner's user id.
    #[schema(value_type = String, format = Uuid)]
    pub owner_id: UserId,
    /// Members, the owner included.
    pub member_count: u32,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// The caller's place in it.
    pub role: Role,
    /// The invite code others join with: shown to the owner only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invite_code: Option<String>,
}

/// A driver's place in a league.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Runs the league.
    Owner,
    /// Belongs to it.
    Member,
}

/// One member of a league.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// The member's user id.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: UserId,
    /// Owner or member.
    pub role: Role,
    /// When they joined (RFC 3339).
    pub joined_at: String,
}

/// The stored league (`LEAGUE#<id>` / `META`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeagueRecord {
    pub id: LeagueId,
    pub name: String,
    pub description: String,
    pub owner_id: UserId,
    pub member_count: u32,
    pub created_at: String,
    pub invite_code: String,
    /// Moved on by every change of the league's live events (see `events::live`).
    #[serde(default)]
    pub events_version: u64,
}

impl LeagueRecord {
    /// The league as `viewer` sees it.
    pub(crate) fn seen_by(self, viewer: &UserId) -> League {
        let owner = self.owner_id == *viewer;
        League {
            id: self.id,
            name: self.name,
            description: self.description,
            owner_id: self.owner_id,
            member_count: self.member_count,
            created_at: self.created_at,
            role: if owner { Role::Owner } else { Role::Member },
            invite_code: owner.then_some(self.invite_code),
        }
    }
}

/// A stored member (`LEAGUE#<id>` / `MEMBER#<user>`, and the driver's `DRIVER#<user>` /
/// `LEAGUE#<id>` beside it).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemberRecord {
    pub league_id: LeagueId,
    pub user_id: UserId,
    pub joined_at: String,
    /// Milliseconds since the epoch: the order of seniority (ties go to the smaller id).
    pub joined_ms: i64,
}

pub(crate) fn meta_key(league: &LeagueId) -> Key {
    Key::new(format!("LEAGUE#{league}"), "META")
}

pub(crate) fn member_key(league: &LeagueId, user: &UserId) -> Key {
    Key::new(format!("LEAGUE#{league}"), format!("MEMBER#{user}"))
}

/// The sort-key prefix of a league's members.
pub(crate) const MEMBER_PREFIX: &str = "MEMBER#";

/// Every member of league `id` as stored, in key order (one query: at most [`MAX_MEMBERS`]).
pub(crate) async fn member_records(
    ports: &paddock_kernel::ports::Ports,
    id: &LeagueId,
) -> Result<Vec<MemberRecord>, StoreError> {
    let query = paddock_kernel::ports::items::Query::partition(TABLE, meta_key(id).pk)
        .begins_with(MEMBER_PREFIX)
        .limit(MAX_MEMBERS as usize + 1);
    let page = ports.items.query(query).await?;
    page.items
        .into_iter()
        .map(|item| paddock_kernel::ports::items::decode(item, "league member"))
        .collect()
}

pub(crate) fn invite_key(code: &str) -> Key {
    Key::new(format!("INVITE#{code}"), "INVITE")
}

pub(crate) fn driver_league_key(user: &UserId, league: &LeagueId) -> Key {
    Key::new(driver_partition(user), format!("LEAGUE#{league}"))
}

/// The partition of a driver's own league items (their list and their counts).
pub fn driver_partition(user: &UserId) -> String {
    format!("DRIVER#{user}")
}

/// The sort-key prefix of a driver's list of leagues.
pub(crate) const DRIVER_LEAGUE_PREFIX: &str = "LEAGUE#";

pub(crate) fn counts_key(user: &UserId) -> Key {
    Key::new(driver_partition(user), "COUNTS")
}

/// The count attributes of `DRIVER#<user>` / `COUNTS`.
pub(crate) const OWNED: &str = "owned";
pub(crate) const JOINED: &str = "joined";
/// The member count attribute of a league.
pub(crate) const MEMBER_COUNT: &str = "memberCount";
pub(crate) const OWNER_ID: &str = "ownerId";
pub(crate) const INVITE_CODE: &str = "inviteCode";
/// The attribute a league's live events' changes move on.
pub(crate) const EVENTS_VERSION: &str = "eventsVersion";

/// Why a league operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LeagueError {
    /// A field breaks a rule.
    #[error(transparent)]
    Invalid(#[from] FieldProblems),
    /// No such league, or the caller is not in it.
    #[error("league not found")]
    NotFound,
    /// No live invite code is this one (wrong, or rotated since).
    #[error("code: no league has this invite code (it may have been rotated)")]
    UnknownCode,
    /// Only the owner may do this.
    #[error("only the league's owner may {0}")]
    NotOwner(&'static str),
    /// The driver named is not a member of the league.
    #[error("userId: is not a member of this league")]
    NotAMember,
    /// The owner named themselves where another member is meant.
    #[error("userId: {0}")]
    OwnerThemselves(&'static str),
    /// The league has as many members as allowed.
    #[error("the league is full: it has {MAX_MEMBERS} members")]
    Full,
    /// The driver owns as many leagues as allowed.
    #[error("{0} already owns {MAX_OWNED} leagues; hand one on first")]
    TooManyOwned(&'static str),
    /// The driver belongs to as many leagues as allowed.
    #[error("you already belong to {MAX_JOINED} leagues; leave one first")]
    TooManyJoined,
    /// The item store failed (or concurrent changes kept winning).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A league's name and description, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    name: String,
    description: String,
}

impl Labels {
    /// `name` 1 to [`MAX_NAME_CHARS`] characters as sent, `description` at most
    /// [`MAX_DESCRIPTION_CHARS`]; both trimmed, without control, invisible or text-direction
    /// characters.
    pub fn parse(name: Option<String>, description: Option<String>) -> Result<Self, LeagueError> {
        let mut p = Problems::default();
        let name = p.required("name", name, |n| shown_text(&n, 1, MAX_NAME_CHARS));
        let description = p.check(
            "description",
            shown_text(
                description.as_deref().unwrap_or_default(),
                0,
                MAX_DESCRIPTION_CHARS,
            ),
        );
        let labels = name
            .zip(description)
            .map(|(name, description)| Self { name, description });
        Ok(p.into_result(labels)?)
    }
}

/// A fresh invite code: 128 random bits, URL-safe.
pub(crate) fn new_code() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; CODE_BYTES]>())
}

/// An invite code as a driver typed it: trimmed, and of the form codes have, or refused
/// naming the field (a code of another form cannot name a league).
pub fn parse_code(raw: Option<String>) -> Result<String, LeagueError> {
    let raw = raw.ok_or_else(|| FieldProblems::one("code", "is required"))?;
    let code = raw.trim();
    let well_formed = code.len() == CODE_CHARS
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !well_formed {
        let rule = format!("must be an invite code of {CODE_CHARS} letters, digits, - or _");
        return Err(FieldProblems::one("code", &rule).into());
    }
    Ok(code.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_trimmed_and_bounded() {
        let l = Labels::parse(Some("  Tuesday Hotlaps ".into()), None).unwrap();
        assert_eq!(l.name, "Tuesday Hotlaps");
        assert_eq!(l.description, "");
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        let e = Labels::parse(Some(long), Some("\u{202e}evil".into())).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("name: must be at most 60"), "{text}");
        assert!(
            text.starts_with("name") && text.contains("description: "),
            "{text}"
        );
        assert!(Labels::parse(Some("   ".into()), None).is_err());
        assert!(
            Labels::parse(None, None)
                .unwrap_err()
                .to_string()
                .contains("name: is required")
        );
        assert!(Labels::parse(Some("a\u{7}b".into()), None).is_err());
        assert!(Labels::parse(Some("a\u{200b}b".into()), None).is_err());
    }

    #[test]
    fn codes_are_unguessable_and_checked_for_form() {
        let (a, b) = (new_code(), new_code());
        assert_ne!(a, b);
        assert_eq!(a.len(), CODE_CHARS);
        assert_eq!(parse_code(Some(format!(" {a} "))).unwrap(), a);
        for bad in ["", "short", &format!("{}!", &a[..CODE_CHARS - 1])] {
            let e = parse_code(Some(bad.into())).unwrap_err().to_string();
            assert!(e.starts_with("code: must be an invite code"), "{e}");
        }
        assert!(
            parse_code(None)
                .unwrap_err()
                .to_string()
                .contains("code: is required")
        );
    }
}
