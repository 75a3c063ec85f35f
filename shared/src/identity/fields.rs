//! Domain newtypes that parse client input once, with messages naming the field and rule.

use serde::Serialize;

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
        if !(8..=256).contains(&n) {
            return Err("must be 8 to 256 characters".into());
        }
        Ok(Self(raw.to_owned()))
    }

    /// The password text.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// A display name: trimmed, 1 to 64 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisplayName(String);

impl DisplayName {
    /// Parses `raw`, or says which rule it breaks.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let name = raw.trim();
        let n = name.chars().count();
        if !(1..=64).contains(&n) {
            return Err("must be 1 to 64 characters".into());
        }
        if name.chars().any(char::is_control) {
            return Err("must not contain control characters".into());
        }
        Ok(Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Collects field problems so one 400 can list them all.
#[derive(Debug, Default)]
pub struct Problems(Vec<String>);

impl Problems {
    /// Parses a field; records `field: rule` on failure.
    pub fn check<T>(&mut self, field: &str, parsed: Result<T, String>) -> Option<T> {
        parsed
            .map_err(|rule| self.0.push(format!("{field}: {rule}")))
            .ok()
    }

    /// Records a problem directly.
    pub fn add(&mut self, field: &str, rule: &str) {
        self.0.push(format!("{field}: {rule}"));
    }

    /// `Ok` when nothing was recorded, else a 400 listing every problem.
    pub fn finish(self) -> Result<(), crate::http::ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(crate::http::ApiError::BadRequest(self.0.join("; ")))
        }
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
    }
}
