//! Profile changes: a driver's display name and avatar.
//!
//! A change is one transaction: the profile (conditional on the version read, so two changes
//! at once never lose one) and a `profile.updated` event, whose consumer copies the new name
//! onto the driver's leaderboard entries. New access tokens carry it from the next sign-in or
//! refresh on, since tokens are issued from the stored profile.

use serde_json::Value;

use super::fields::{AvatarUrl, DisplayName};
use super::users::{self, StoredProfile, User, profile_key};
use paddock_kernel::events::{Event, EventKind, ProfileUpdated};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, StoreError, TxOp, Update};
use paddock_kernel::problems::{FieldProblems, Problems};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

pub use super::fields::DISPLAY_NAME_MAX;
/// Attempts before concurrent changes of one profile give up.
const ROUNDS: u32 = 5;

/// A parsed change: each part is absent when the request left it alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileChange {
    display_name: Option<String>,
    /// `Some(None)` clears the avatar.
    avatar_url: Option<Option<String>>,
}

impl ProfileChange {
    /// Parses a change: `displayName` as registration takes it (trimmed, 1 to
    /// [`DISPLAY_NAME_MAX`] characters, no control, invisible or text-direction characters); `avatarUrl` an https URL of at most 2,048 characters, or
    /// null to clear it. At least one of them must be given.
    pub fn parse(
        display_name: Option<Value>,
        avatar_url: Option<Value>,
    ) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        if display_name.is_none() && avatar_url.is_none() {
            p.add("body", "must give displayName, avatarUrl or both");
        }
        let name = display_name.and_then(|v| {
            p.check(
                "displayName",
                match v {
                    Value::String(s) => parse_name(&s),
                    _ => Err("must be a string".into()),
                },
            )
        });
        let avatar = avatar_url.and_then(|v| {
            p.check(
                "avatarUrl",
                match v {
                    Value::Null => Ok(None),
                    Value::String(s) => AvatarUrl::parse(&s).map(|u| Some(u.into_string())),
                    _ => Err("must be an https URL or null".into()),
                },
            )
        });
        p.finish()?;
        Ok(Self {
            display_name: name,
            avatar_url: avatar,
        })
    }
}

fn parse_name(raw: &str) -> Result<String, String> {
    Ok(DisplayName::parse(raw)?.as_str().to_owned())
}

/// Why a profile could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// No profile, or the account is deleted.
    #[error("account no longer exists")]
    Gone,
    /// Other changes of the same profile kept winning.
    #[error("the profile changed concurrently, please retry")]
    Contended,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The profile of `user_id` (none for a deleted account).
pub async fn get(ports: &Ports, user_id: &UserId) -> Result<Option<User>, StoreError> {
    users::get(ports, user_id).await
}

/// Applies `change` to `user_id`'s profile; answers the profile as it is afterwards.
pub async fn update(
    ports: &Ports,
    user_id: &UserId,
    change: &ProfileChange,
) -> Result<User, ProfileError> {
    let contended = |e: &ProfileError| matches!(e, ProfileError::Store(e) if is_conflict(e));
    let outcome = retry_on_conflict(ROUNDS, contended, || async {
        let Some(current) = users::get_stored(ports, user_id).await? else {
            return Err(ProfileError::Gone);
        };
        if current.deleted_at.is_some() {
            return Err(ProfileError::Gone);
        }
        let next = applied(&current, change);
        if next.user == current.user {
            return Ok(next.user); // nothing to change: no version, no event
        }
        let mut update = Update::set("displayName", next.user.display_name.as_str())
            .and_set("version", next.version);
        update = match &next.user.avatar_url {
            Some(url) => update.and_set("avatarUrl", url.as_str()),
            None => update.and_set("avatarUrl", Value::Null),
        };
        let unchanged = if current.version == 0 {
            Condition::AttrNotExists("version".into())
        } else {
            Condition::eq("version", current.version)
        };
        let event = Event::new(
            EventKind::ProfileUpdated(ProfileUpdated {
                version: next.version,
            }),
            Some(user_id.clone()),
            ports.clock.now(),
        );
        let ops = vec![
            TxOp::Update {
                table: Table::Users,
                key: profile_key(user_id),
                update,
                condition: Some(Condition::And(vec![
                    Condition::Exists,
                    Condition::AttrNotExists("deletedAt".into()),
                    unchanged,
                ])),
            },
            event.outbox_op(),
        ];
        ports.items.transact(ops).await?;
        Ok(next.user)
    })
    .await;
    match outcome {
        Err(e) if contended(&e) => Err(ProfileError::Contended),
        other => other,
    }
}

/// The profile with `change` applied and its version bumped.
fn applied(current: &StoredProfile, change: &ProfileChange) -> StoredProfile {
    let mut next = current.clone();
    if let Some(name) = &change.display_name {
        next.user.display_name.clone_from(name);
    }
    if let Some(avatar) = &change.avatar_url {
        next.user.avatar_url.clone_from(avatar);
    }
    next.version = current.version + 1;
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_are_checked_field_by_field() {
        let ok = ProfileChange::parse(Some(json!("  Max  ")), Some(Value::Null)).unwrap();
        assert_eq!(ok.display_name.as_deref(), Some("Max"));
        assert_eq!(ok.avatar_url, Some(None));
        let longest = "x".repeat(DISPLAY_NAME_MAX);
        assert!(ProfileChange::parse(Some(json!(longest)), None).is_ok());
        let err = ProfileChange::parse(
            Some(json!("x".repeat(DISPLAY_NAME_MAX + 1))),
            Some(json!("http://a.b/c")),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "displayName: must be 1 to 64 characters; avatarUrl: must be an https URL"
        );
        assert!(ProfileChange::parse(None, None).is_err());
        assert!(ProfileChange::parse(Some(json!("a\u{202e}b")), None).is_err());
        assert!(ProfileChange::parse(Some(json!(5)), None).is_err());
        assert!(
            ProfileChange::parse(
                None,
                Some(json!(format!("https://x.io/{}", "a".repeat(2040))))
            )
            .is_err()
        );
    }
}
