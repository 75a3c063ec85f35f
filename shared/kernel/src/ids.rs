//! Identifiers of users, sessions, tracks, track-map jobs, webhook subscriptions and share
//! packs, one type each.
//!
//! Each is a UUID, and a value of these types can only hold a well-formed one: text becomes
//! an id once, where it enters (a path, a body, a stored item, a token), through `FromStr` or
//! serde, and everything past that point takes the type. There is no conversion from an
//! arbitrary string.
//!
//! Functions take several of them at once (`entry_key(track, user)`, `create_op(job, track,
//! session, user, ...)`); as types, passing them in the wrong order does not compile.
//!
//! The one text of an id is the lowercase hyphenated form (`8-4-4-4-12` hex digits), which
//! is how every id is minted and stored. Only that text parses: an id is part of store keys,
//! and a second spelling of the same UUID would name a key that does not exist. On the wire
//! and in stored items each id is that bare string, so answers and records keep their shape;
//! API structs that hold one mark the field `#[schema(value_type = String)]`, so the OpenAPI
//! document still says `string`.
//!
//! This module imports nothing from the crate: every other module may use it without
//! creating an import cycle.

use serde::de::{self, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

/// Length of an id's text: 32 hex digits and 4 hyphens.
const TEXT_LEN: usize = 36;

/// Why a text is not an id of some kind: it breaks [`MalformedId::RULE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be a {kind}: {rule}", rule = MalformedId::RULE)]
pub struct MalformedId {
    kind: &'static str,
}

impl MalformedId {
    /// The rule an id's text follows.
    pub const RULE: &'static str = "a UUID in lowercase hyphenated form (8-4-4-4-12 hex digits)";

    /// The kind of id that was expected (`user id`, `session id`, ...).
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

/// The canonical text of `uuid`.
fn text_of(uuid: Uuid) -> [u8; TEXT_LEN] {
    let mut text = [0u8; TEXT_LEN];
    uuid.hyphenated().encode_lower(&mut text);
    text
}

/// The UUID `text` spells in the canonical form, or `None`.
fn parse_canonical(text: &str) -> Option<Uuid> {
    if text.len() != TEXT_LEN {
        return None;
    }
    let uuid = Uuid::try_parse(text).ok()?;
    (text_of(uuid) == text.as_bytes()).then_some(uuid)
}

/// Declares a UUID id type with its parsing, text and serde.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        ///
        /// Always well formed; its text is the lowercase hyphenated UUID.
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            // The text is kept beside the UUID so `as_str` lends it (ids are formatted into
            // keys all the time). It is a function of `uuid`, so deriving the comparisons
            // over both fields orders ids as their UUIDs, which is also their text's order.
            uuid: Uuid,
            text: [u8; TEXT_LEN],
        }

        impl $name {
            /// What this kind of id is called in messages.
            pub const KIND: &'static str = $kind;

            /// The id's UUID.
            pub fn as_uuid(&self) -> Uuid {
                self.uuid
            }

            /// The id as text (lowercase hyphenated).
            pub fn as_str(&self) -> &str {
                // Only ever written by `text_of`: ASCII hex digits and hyphens.
                std::str::from_utf8(&self.text).expect("an id's text is ASCII")
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.as_str().to_owned()
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self {
                    uuid,
                    text: text_of(uuid),
                }
            }
        }

        impl FromStr for $name {
            type Err = MalformedId;

            fn from_str(text: &str) -> Result<Self, MalformedId> {
                parse_canonical(text)
                    .map(Self::from)
                    .ok_or(MalformedId { kind: $kind })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.as_str())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.into_string()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_str(IdVisitor::<$name>::new())
            }
        }
    };
}

/// Reads an id from a string, refusing a malformed one with the rule it breaks.
struct IdVisitor<T>(std::marker::PhantomData<T>);

impl<T> IdVisitor<T> {
    fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<T> Visitor<'_> for IdVisitor<T>
where
    T: FromStr<Err = MalformedId>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an id, {}", MalformedId::RULE)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        text.parse().map_err(|e: MalformedId| {
            E::invalid_value(
                Unexpected::Str(text),
                &format!("a {}, {}", e.kind(), MalformedId::RULE).as_str(),
            )
        })
    }
}

uuid_id!(
    /// A user (account) id: the `sub` of access tokens; a random UUID (v4).
    UserId,
    "user id"
);

impl UserId {
    /// A new user's id: random (v4), so it says nothing about the account.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from(Uuid::new_v4())
    }
}

uuid_id!(
    /// A stored session's id: a UUIDv7 carrying the session's RecordedAt.
    SessionId,
    "session id"
);

impl SessionId {
    /// The id of a session recorded at Unix time `secs` + `nanos`: a UUIDv7 of that time,
    /// so a driver's sessions sort by when they were driven.
    pub fn recorded_at(secs: u64, nanos: u32) -> Self {
        Self::from(Uuid::new_v7(uuid::Timestamp::from_unix(
            uuid::NoContext,
            secs,
            nanos,
        )))
    }
}

uuid_id!(
    /// A canonical track's id: derived from (game, track name, layout).
    TrackId,
    "track id"
);

uuid_id!(
    /// A track-processing job's id: a UUIDv7 of when it was made.
    JobId,
    "job id"
);

impl JobId {
    /// A new job's id, ordered by when it was made (v7).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from(Uuid::now_v7())
    }
}

uuid_id!(
    /// A webhook subscription's id: a UUIDv7 of when it was made, so a driver's
    /// subscriptions sort oldest first.
    SubscriptionId,
    "subscription id"
);

impl SubscriptionId {
    /// A new subscription's id, ordered by when it was made (v7).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from(Uuid::now_v7())
    }
}

uuid_id!(
    /// A share pack's id: a UUIDv7 of when it was made. Whoever holds it may read the pack,
    /// and it names the pack's objects in the blob store.
    SharePackId,
    "share pack id"
);

impl SharePackId {
    /// A new pack's id, ordered by when it was made (v7).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from(Uuid::now_v7())
    }
}

uuid_id!(
    /// A league's id: random (v4), so it says nothing about when or by whom it was made.
    LeagueId,
    "league id"
);

impl LeagueId {
    /// A new league's id.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from(Uuid::new_v4())
    }
}

uuid_id!(
    /// A competition event's id: random (v4), like a league's.
    EventId,
    "event id"
);

impl EventId {
    /// A new event's id.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from(Uuid::new_v4())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "0190a0b2-3c4d-8e5f-9a0b-1c2d3e4f5a6b";

    #[test]
    fn ids_are_their_bare_strings_on_the_wire() {
        let id: TrackId = TEXT.parse().unwrap();
        let wire = serde_json::to_value(&id).unwrap();
        assert_eq!(wire, serde_json::json!(TEXT));
        assert_eq!(serde_json::from_value::<TrackId>(wire).unwrap(), id);
        assert_eq!(id.to_string(), id.as_str());
        assert_eq!(String::from(id.clone()), id.into_string());
    }

    #[test]
    fn the_canonical_text_round_trips() {
        let id: SessionId = TEXT.parse().unwrap();
        assert_eq!(id.as_str(), TEXT);
        assert_eq!(id.to_string().parse::<SessionId>().unwrap(), id);
        assert_eq!(id.as_uuid().to_string(), TEXT);
        for fresh in [UserId::new().into_string(), JobId::new().into_string()] {
            assert_eq!(fresh.parse::<UserId>().unwrap().as_str(), fresh);
        }
    }

    #[test]
    fn malformed_text_is_refused_naming_the_rule() {
        let upper = TEXT.to_uppercase();
        let braced = format!("{{{TEXT}}}");
        let simple = TEXT.replace('-', "");
        let urn = format!("urn:uuid:{TEXT}");
        let padded = format!(" {TEXT}");
        let moved_hyphen = format!("{}-{}", &TEXT[..7], TEXT[7..].replacen('-', "", 1));
        for text in [
            "",
            "u1",
            "not-a-uuid",
            &upper,
            &braced,
            &simple,
            &urn,
            &padded,
            &moved_hyphen,
        ] {
            let refused = text.parse::<UserId>().unwrap_err();
            assert_eq!(refused.kind(), "user id", "{text:?}");
            assert_eq!(
                refused.to_string(),
                "must be a user id: a UUID in lowercase hyphenated form (8-4-4-4-12 hex digits)"
            );
        }
    }

    #[test]
    fn subscription_and_pack_ids_refuse_the_spellings_a_loose_uuid_parse_took() {
        // These ids were text checked with `Uuid::parse_str`, which also takes these forms;
        // none of them is the text an id is stored under.
        let loose = [
            TEXT.to_uppercase(),
            format!("{{{TEXT}}}"),
            TEXT.replace('-', ""),
            format!("urn:uuid:{TEXT}"),
        ];
        for text in &loose {
            assert!(uuid::Uuid::parse_str(text).is_ok(), "{text}");
            let refused = text.parse::<SubscriptionId>().unwrap_err();
            assert_eq!(refused.kind(), "subscription id");
            let refused = text.parse::<SharePackId>().unwrap_err();
            assert_eq!(refused.kind(), "share pack id");
        }
        assert_eq!(TEXT.parse::<SharePackId>().unwrap().as_str(), TEXT);
        let fresh = SubscriptionId::new();
        assert_eq!(fresh.as_str().parse::<SubscriptionId>().unwrap(), fresh);
    }

    #[test]
    fn serde_refuses_a_malformed_id() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Record {
            user_id: UserId,
        }
        let refused =
            serde_json::from_value::<Record>(serde_json::json!({"user_id": "u1"})).unwrap_err();
        let message = refused.to_string();
        assert!(message.contains("\"u1\""), "{message}");
        assert!(
            message.contains("a user id, a UUID in lowercase"),
            "{message}"
        );
        assert!(serde_json::from_value::<JobId>(serde_json::json!(7)).is_err());
        assert!(serde_json::from_str::<JobId>(&format!("\"{}\"", TEXT.to_uppercase())).is_err());
        let read: Record = serde_json::from_value(serde_json::json!({"user_id": TEXT})).unwrap();
        assert_eq!(read.user_id.as_str(), TEXT);
    }

    #[test]
    fn minted_ids_have_their_versions() {
        assert_eq!(UserId::new().as_uuid().get_version_num(), 4);
        assert_eq!(JobId::new().as_uuid().get_version_num(), 7);
        assert_eq!(SubscriptionId::new().as_uuid().get_version_num(), 7);
        assert_eq!(SharePackId::new().as_uuid().get_version_num(), 7);
        let session = SessionId::recorded_at(1_700_000_000, 5_000_000);
        assert_eq!(session.as_uuid().get_version_num(), 7);
        let (secs, nanos) = session.as_uuid().get_timestamp().unwrap().to_unix();
        assert_eq!((secs, nanos), (1_700_000_000, 5_000_000));
        assert!(SessionId::recorded_at(1, 0) < SessionId::recorded_at(2, 0));
    }

    #[test]
    fn ids_order_as_their_text() {
        let mut ids: Vec<UserId> = (0..50).map(|_| UserId::new()).collect();
        ids.sort();
        let mut texts: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let sorted = texts.clone();
        texts.sort();
        assert_eq!(texts, sorted);
    }
}
