//! The one rule for the names of request fields: the documented camelCase (`gameId`), or
//! PascalCase (`GameId`: what the desktop client's .NET serializer writes). The two spellings
//! name one field; when an object holds both, the camelCase one is read and the other is
//! ignored (a key spelled as documented does not lose to another spelling). The API's body
//! reader applies it to every JSON body as it deserializes.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_capital_is_lowered_and_nothing_else_changes() {
        assert_eq!(camel_case("GameId"), "gameId");
        assert_eq!(camel_case("gameId"), "gameId");
        assert_eq!(camel_case("_x"), "_x");
        assert!(matches!(camel_case("gameId"), Cow::Borrowed(_)));
    }
}
