//! Reading a request's cookies: the provider sign-in's flow cookie and the consent page's.

use http::{HeaderMap, header};

/// The value of cookie `name`, if the request carries it (in any of its `Cookie` headers).
pub fn value<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}
