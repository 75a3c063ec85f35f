//! Identifiers of users, sessions, tracks and track-map jobs, one type each.
//!
//! They are all strings (UUIDs, as it happens) and functions take several of them at once
//! (`entry_key(track, user)`, `create_op(job, track, session, user, ...)`), so as plain
//! strings they are easy to pass in the wrong order. As types, a swap does not compile.
//!
//! On the wire and in stored items each id is its bare string (`#[serde(transparent)]`), so
//! answers and records keep their shape. API structs that hold one mark the field
//! `#[schema(value_type = String)]`, so the OpenAPI document still says `string`.
//!
//! This module imports nothing from the crate: every other module may use it without
//! creating an import cycle.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Declares a string id type with its conversions.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, without copying it.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

string_id!(
    /// A user (account) id: the `sub` of access tokens.
    UserId
);

string_id!(
    /// A stored session's id: a UUIDv7 carrying the session's RecordedAt.
    SessionId
);

string_id!(
    /// A canonical track's id: derived from (game, track name, layout).
    TrackId
);

string_id!(
    /// A track-processing job's id.
    JobId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_their_bare_strings_on_the_wire() {
        let id = TrackId::from("0190a0b2-3c4d-8e5f-9a0b-1c2d3e4f5a6b");
        let wire = serde_json::to_value(&id).unwrap();
        assert_eq!(
            wire,
            serde_json::json!("0190a0b2-3c4d-8e5f-9a0b-1c2d3e4f5a6b")
        );
        assert_eq!(serde_json::from_value::<TrackId>(wire).unwrap(), id);
        assert_eq!(id.to_string(), id.as_str());
        assert_eq!(String::from(id.clone()), id.into_string());
    }
}
