//! The one rule for the names of request fields: the documented camelCase (`gameId`), or
//! PascalCase (`GameId`: what the desktop client's .NET serializer writes). The two spellings
//! name one field; when an object holds both, the camelCase one is read and the other is
//! ignored (a key spelled as documented does not lose to another spelling), whichever way
//! the body is read.

use serde_json::{Map, Value};
use std::borrow::Cow;

/// `GameId` → `gameId`; a name that does not start with an ASCII capital stays as it is.
pub fn camel_case(name: &str) -> Cow<'_, str> {
    match name.as_bytes().first() {
        Some(b) if b.is_ascii_uppercase() => {
            let mut owned = name.to_owned();
            owned[..1].make_ascii_lowercase();
            Cow::Owned(owned)
        }
        _ => Cow::Borrowed(name),
    }
}

/// The value of `field` (its camelCase name) in `object`: under that name, or else under its
/// PascalCase spelling.
pub fn lookup<'a>(object: &'a Map<String, Value>, field: &str) -> Option<&'a Value> {
    if let Some(value) = object.get(field) {
        return Some(value);
    }
    // The names are ASCII literals of the callers; a stack buffer spares an allocation per
    // lookup (a PascalCase body misses the camelCase name on every field).
    let mut buffer = [0u8; 48];
    let name = field.as_bytes();
    let pascal = buffer.get_mut(..name.len()).filter(|b| !b.is_empty())?;
    pascal.copy_from_slice(name);
    pascal[0] = pascal[0].to_ascii_uppercase();
    object.get(std::str::from_utf8(pascal).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn either_spelling_is_the_field_and_camel_case_wins() {
        assert_eq!(camel_case("GameId"), "gameId");
        assert_eq!(camel_case("gameId"), "gameId");
        assert_eq!(camel_case("_x"), "_x");
        let pascal = json!({"GameId": "acc"});
        let camel = json!({"gameId": "acc"});
        let both = json!({"GameId": "a", "gameId": "b"});
        for body in [&pascal, &camel] {
            assert_eq!(
                lookup(body.as_object().unwrap(), "gameId"),
                Some(&json!("acc"))
            );
        }
        assert_eq!(lookup(camel.as_object().unwrap(), "trackName"), None);
        assert_eq!(
            lookup(both.as_object().unwrap(), "gameId"),
            Some(&json!("b"))
        );
    }
}
