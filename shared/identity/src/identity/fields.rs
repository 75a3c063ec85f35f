//! Domain newtypes that parse client input once, with messages naming the field and rule.

pub use paddock_kernel::problems::Problems;

use serde::Serialize;

use hidden_characters::{self, is_invisible_or_bidi};

/// An email address: trimmed; compared and stored for lookup in lower case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Email(String);

impl Email {
    /// Parses `raw`, or says which rule it breaks.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let email = raw.trim();
        let (local, domain) = email
            .split_once('@')
            .ok_or("must be an email address (name@domain)")?;
        if email.len() > 254 {
            return Err("must be at most 254 characters".into());
        }
        if local.is_empty()
            || domain.is_empty()
            || domain.contains('@')
            || email.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err("must be an email address (name@domain)".into());
        }
        Ok(Self(email.to_owned()))
    }

    /// As the user typed it (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The lookup form (lower case).
    pub fn normalized(&self) -> String {
        self.0.to_lowercase()
    }
}

/// A password: 8 to 256 characters, no composition rules.
#[derive(Clone)]
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

impl Password {
    /// Parses `raw`, or says which rule it breaks.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let n = raw.chars().count();
        if !(8..=MAX_PASSWORD_CHARS).contains(&n) {
            return Err(format!("must be 8 to {MAX_PASSWORD_CHARS} characters"));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The password text.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// A password as typed at login: only capped, since the rules of the day it was chosen may
/// differ; the cap keeps an attacker from making the server hash megabytes.
pub fn login_password(raw: &str) -> Result<String, String> {
    if raw.chars().count() > MAX_PASSWORD_CHARS {
        return Err(format!("must be at most {MAX_PASSWORD_CHARS} characters"));
    }
    Ok(raw.to_owned())
}

/// The longest password accepted anywhere.
pub const MAX_PASSWORD_CHARS: usize = 256;

/// A profile image URL: `https`, at most 2,048 characters, no user info.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AvatarUrl(String);

impl AvatarUrl {
    /// The longest accepted URL.
    pub(crate) const MAX_CHARS: usize = 2048;

    /// Parses `raw`, or says which rule it breaks.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.chars().count() > Self::MAX_CHARS {
            return Err(format!("must be at most {} characters", Self::MAX_CHARS));
        }
        let url = url::Url::parse(raw).map_err(|_| "must be an https URL".to_owned())?;
        if url.scheme() != "https" || url.host_str().is_none_or(str::is_empty) {
            return Err("must be an https URL".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry user name or password".into());
        }
        Ok(Self(url.to_string()))
    }

    /// The URL, owned.
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

/// The characters a display name may not hold, as a regular-expression class body: control
/// characters and the invisible or text-direction characters of [`is_invisible_or_bidi`] (all
/// in the Basic Multilingual Plane, so the class reads the same in every regex dialect). The
/// OpenAPI attributes of `displayName` and of the upload's names spell the pattern out; tests
/// check they agree.
const NAME_FORBIDDEN: &str = "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb";

/// The OpenAPI pattern of a display name: allowed characters only, and at least one that is
/// not white space (the name is trimmed).
pub fn display_name_pattern() -> String {
    format!("^[^{NAME_FORBIDDEN}]*[^\\s{NAME_FORBIDDEN}][^{NAME_FORBIDDEN}]*$")
}

/// The pattern of free text that may be blank: none of the refused characters.
pub fn free_text_pattern() -> String {
    format!("^[^{NAME_FORBIDDEN}]*$")
}

/// The longest display name, counted in characters as sent: the one rule of registration,
/// profile changes and the name a provider's sign-in brings (the OpenAPI `maxLength` of both
/// request bodies; a test checks they agree).
pub const DISPLAY_NAME_MAX: usize = 64;

/// A display name: 1 to [`DISPLAY_NAME_MAX`] characters as sent and after trimming, no control,
/// invisible or text-direction characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisplayName(String);

impl DisplayName {
    /// Parses `raw`, or says which rule it breaks.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let name = raw.trim();
        if name.is_empty() || raw.chars().count() > DISPLAY_NAME_MAX {
            return Err(format!("must be 1 to {DISPLAY_NAME_MAX} characters"));
        }
        if name.chars().any(char::is_control) {
            return Err("must not contain control characters".into());
        }
        if name.chars().any(is_invisible_or_bidi) {
            return Err(hidden_characters::RULE.into());
        }
        Ok(Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_trimmed_and_compared_case_insensitively() {
        let e = Email::parse("  Ana.Driver@Example.COM ").unwrap();
        assert_eq!(e.as_str(), "Ana.Driver@Example.COM");
        assert_eq!(e.normalized(), "ana.driver@example.com");
        for bad in ["", "no-at", "@x", "x@", "a b@c.d", "a@b@c"] {
            assert!(Email::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn password_and_name_lengths() {
        assert!(Password::parse("1234567").is_err());
        assert!(Password::parse("12345678").is_ok());
        assert!(Password::parse(&"x".repeat(257)).is_err());
        assert!(
            Password::parse(&"é".repeat(256)).is_ok(),
            "characters, not bytes"
        );
        assert!(DisplayName::parse("   ").is_err());
        assert!(DisplayName::parse("a\u{0}b").is_err());
        assert_eq!(DisplayName::parse("  Max  ").unwrap().as_str(), "Max");
        assert!(login_password(&"x".repeat(257)).is_err());
        assert!(login_password("short").is_ok());
    }

    #[test]
    fn names_that_hide_or_reverse_text_are_refused() {
        for bad in [
            "Max\u{200B}",
            "\u{202E}xaM",
            "Ma\u{200D}x",
            "Max\u{2066}",
            "\u{FEFF}Max",
            "Ma\u{061C}x",
        ] {
            assert!(DisplayName::parse(bad).is_err(), "{bad:?}");
        }
        assert!(DisplayName::parse("Kimi Räikkönen").is_ok());
        assert!(DisplayName::parse("周冠宇").is_ok());
        assert!(
            DisplayName::parse("محمد").is_ok(),
            "right-to-left letters are fine"
        );
    }

    #[test]
    fn avatar_urls_are_https_and_bounded() {
        assert!(AvatarUrl::parse("https://cdn.example.com/a.png").is_ok());
        for bad in [
            "http://cdn.example.com/a.png",
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "https://user:pw@cdn.example.com/a.png",
            "not a url",
        ] {
            assert!(AvatarUrl::parse(bad).is_err(), "{bad}");
        }
        let long = format!("https://cdn.example.com/{}", "a".repeat(2048));
        assert!(AvatarUrl::parse(&long).is_err());
    }
}
