//! Conditional GETs: whether a request's `If-None-Match` holds the answer's entity tag.
//! Hand-written rather than the `headers` crate's `IfNoneMatch`: one comparison, and our ETags
//! are already strings, so a typed-header crate would add a parse and a dependency for it.

use http::HeaderValue;

/// Whether `if_none_match` names `etag` (or is `*`), compared weakly as RFC 9110 (13.1.2)
/// says `If-None-Match` is: `W/"x"` and `"x"` match each other, so a client or cache that
/// weakened the tag (a compressing proxy does) still gets its 304.
pub fn holds(if_none_match: Option<&HeaderValue>, etag: &str) -> bool {
    let Some(tags) = if_none_match.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let wanted = opaque(etag);
    tags.split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || opaque(tag) == wanted)
}

/// The quoted tag without its weakness indicator.
fn opaque(tag: &str) -> &str {
    tag.trim().strip_prefix("W/").unwrap_or(tag.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds_str(header: &str, etag: &str) -> bool {
        holds(Some(&HeaderValue::from_str(header).unwrap()), etag)
    }

    #[test]
    fn tags_match_weakly() {
        assert!(holds_str(r#""abc""#, r#""abc""#));
        assert!(holds_str(r#"W/"abc""#, r#""abc""#));
        assert!(holds_str(r#""abc""#, r#"W/"abc""#));
        assert!(holds_str(r#""x", W/"abc""#, r#""abc""#));
        assert!(holds_str("*", r#""abc""#));
        assert!(!holds_str(r#""abd""#, r#""abc""#));
        assert!(!holds_str(r#"W/"abd""#, r#""abc""#));
        assert!(!holds_str("abc", r#""abc""#));
        assert!(!holds(None, r#""abc""#));
    }
}
