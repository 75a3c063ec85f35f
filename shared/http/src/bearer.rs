//! The bearer token of a request, read as every credential check reads it.

use http::{HeaderValue, header};

/// The bearer token of a request's headers, if any.
pub fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(bearer_of)
}

/// The bearer token of an `Authorization` value, if it holds one. Read as bytes: a token is
/// ASCII, and what else a header value may hold fails the token's verification anyway (a
/// per-byte visibility check of `to_str` over a 300-byte token cost more than the rest).
pub(crate) fn bearer_of(authorization: &HeaderValue) -> Option<&str> {
    let value = authorization.as_bytes();
    let space = value.iter().position(|b| *b == b' ')?;
    let (scheme, token) = (&value[..space], value[space + 1..].trim_ascii());
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty())
        .then(|| std::str::from_utf8(token).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_token_is_read_whatever_the_scheme_case_and_padding() {
        let token = |v: &'static str| bearer_of(&HeaderValue::from_static(v)).map(str::to_owned);
        assert_eq!(token("Bearer a.b.c"), Some("a.b.c".to_owned()));
        assert_eq!(token("bearer   a.b.c  "), Some("a.b.c".to_owned()));
        assert_eq!(token("BEARER a.b.c"), Some("a.b.c".to_owned()));
        assert_eq!(token("Basic a.b.c"), None);
        assert_eq!(token("Bearer"), None);
        assert_eq!(token("Bearer    "), None);
        assert_eq!(token("Bearera.b.c"), None);
        let not_utf8 = HeaderValue::from_bytes(b"Bearer \xff\xfe").unwrap();
        assert_eq!(bearer_of(&not_utf8), None);
    }
}
