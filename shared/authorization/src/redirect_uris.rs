//! Redirect URIs: what an app may register, and when a request's URI is the one registered.
//!
//! A redirect URI is `https`, or `http` on a loopback address for a native app (RFC 8252
//! §7.3: `127.0.0.1` or `[::1]`; `localhost` is refused, as §8.3 advises, since a name can
//! resolve elsewhere). It has no fragment and no user part. A request's URI must be the
//! registered one byte for byte, except the port of a loopback URI, which a native app picks
//! when it starts listening (RFC 8252 §7.3).

use url::{Host, Url};

/// The longest redirect URI accepted.
pub const MAX_URI_CHARS: usize = 2000;

/// Checks a URI an app registers; answers the rule it breaks.
pub fn check(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_URI_CHARS {
        return Err(format!("must be at most {MAX_URI_CHARS} characters"));
    }
    let url = Url::parse(uri).map_err(|_| "must be an absolute URL".to_owned())?;
    if url.fragment().is_some() {
        return Err("must not have a fragment (#...)".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not hold a user name or password".into());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(
            "must be https, or http on 127.0.0.1 or [::1] for a native app (not localhost)".into(),
        ),
        _ => Err("must be an https URL (or http on a loopback address)".into()),
    }
}

/// Whether `url`'s host is a loopback address literal.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        _ => false,
    }
}

/// Whether `presented` is the `registered` URI: the same bytes, or for a loopback `http` URI
/// the same except its port.
pub fn matches(registered: &str, presented: &str) -> bool {
    if registered == presented {
        return true;
    }
    let (Ok(mut registered), Ok(mut presented)) = (Url::parse(registered), Url::parse(presented))
    else {
        return false;
    };
    if registered.scheme() != "http" || !is_loopback(&registered) {
        return false;
    }
    // Both serialised by the same parser with the port taken out: the rest must agree.
    let _ = registered.set_port(None);
    let _ = presented.set_port(None);
    registered.as_str() == presented.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_and_loopback_http_are_registered() {
        assert!(check("https://bot.example.com/callback").is_ok());
        assert!(check("http://127.0.0.1/callback").is_ok());
        assert!(check("http://[::1]:8080/cb").is_ok());
        for bad in [
            "http://bot.example.com/callback",
            "http://localhost:8080/cb",
            "https://bot.example.com/cb#frag",
            "https://user:pw@bot.example.com/cb",
            "com.example.app:/callback",
            "/relative",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_uri_matches_byte_for_byte_except_a_loopback_port() {
        let https = "https://bot.example.com/callback";
        assert!(matches(https, https));
        assert!(!matches(https, "https://bot.example.com/callback/"));
        assert!(!matches(https, "https://bot.example.com/Callback"));
        assert!(!matches(https, "https://bot.example.com:443/callback"));
        assert!(!matches(https, "https://bot.example.com/callback?x=1"));
        let native = "http://127.0.0.1/callback";
        assert!(matches(native, "http://127.0.0.1:53122/callback"));
        assert!(!matches(native, "http://127.0.0.1:53122/callback2"));
        assert!(!matches(native, "http://[::1]:53122/callback"));
        assert!(!matches(native, "https://127.0.0.1:53122/callback"));
    }
}
