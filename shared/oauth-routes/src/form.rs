//! What the OAuth endpoints read from a request besides JSON: `application/x-www-form-urlencoded`
//! bodies and queries (where a parameter given twice is an error, RFC 6749 §3.1), and a
//! client's HTTP Basic credentials (RFC 6749 §2.3.1). Read by hand: the typed-header crates'
//! Basic credentials are not form-urlencoded first, as the RFC has a client send them.

use base64::Engine;
use http::{HeaderMap, header};

/// A form's or a query's parameters, in order, each name possibly repeated.
#[derive(Debug, Clone, Default)]
pub(crate) struct Params(pub(crate) Vec<(String, String)>);

impl Params {
    /// The parameters of an urlencoded `text`.
    pub(crate) fn parse(text: &[u8]) -> Self {
        Self(form_urlencoded::parse(text).into_owned().collect())
    }

    /// The one value of `name` (an empty value counts as absent), or `Err` naming it when it
    /// is given twice.
    pub(crate) fn one(&self, name: &str) -> Result<Option<&str>, String> {
        let mut values = self.0.iter().filter(|(k, _)| k == name);
        let first = values.next();
        if values.next().is_some() {
            return Err(format!("{name}: may be given once"));
        }
        Ok(first.map(|(_, v)| v.as_str()).filter(|v| !v.is_empty()))
    }

    /// The parameters named in `names` (the rest are not part of what the form carries on).
    pub(crate) fn only(&self, names: &[&str]) -> Vec<(String, String)> {
        (self.0.iter())
            .filter(|(k, _)| names.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

/// Whether the body is a form (`application/x-www-form-urlencoded`, any parameters).
pub(crate) fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| m.essence_str() == "application/x-www-form-urlencoded")
}

/// The client id and secret of an `Authorization: Basic` header (each form-urlencoded, RFC
/// 6749 §2.3.1); `Err` when the header is there but not of that form.
pub(crate) fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, ()> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| ())?;
    let (scheme, encoded) = value.split_once(' ').ok_or(())?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(());
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| ())?;
    let decoded = String::from_utf8(decoded).map_err(|_| ())?;
    let (id, secret) = decoded.split_once(':').ok_or(())?;
    let unescape = |s: &str| -> String {
        form_urlencoded::parse(format!("v={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    Ok(Some((unescape(id), unescape(secret))))
}
