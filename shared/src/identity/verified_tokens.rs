//! Access tokens this process has already verified, so a token presented again skips the
//! signature check and the JSON parses.
//!
//! The desktop client presents one token on every call for up to an hour; checking its HMAC
//! and decoding its header and claims each time was the largest share of an authenticated
//! request's own work. A hit requires the presented token to equal, byte for byte, a token
//! that passed full verification with this process's key, so it proves exactly what the full
//! check proves. Expiry is still judged on every hit, and revocation is not cached here at
//! all: the family is read on every request.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::claims::Claims;

/// Tokens kept at most (about 1 KB each); beyond this, expired ones go and then all of them.
const MAX_ENTRIES: usize = 10_000;

struct Verified {
    token: Box<str>,
    claims: Arc<Claims>,
}

/// Verified tokens by signature (the token's last segment, unique per token).
#[derive(Default)]
pub(crate) struct VerifiedTokens {
    by_signature: RwLock<HashMap<Box<str>, Verified>>,
}

/// The signature segment of a compact JWT.
fn signature(token: &str) -> Option<&str> {
    token.rsplit_once('.').map(|(_, s)| s)
}

impl VerifiedTokens {
    /// The claims of `token` if it was verified before (expiry is the caller's to judge).
    pub(crate) fn get(&self, token: &str) -> Option<Arc<Claims>> {
        let entries = self.by_signature.read().ok()?;
        let found = entries.get(signature(token)?)?;
        (*found.token == *token).then(|| found.claims.clone())
    }

    /// Remembers a token that passed full verification; `now` lets a full cache drop
    /// expired tokens first.
    pub(crate) fn insert(&self, token: &str, claims: Arc<Claims>, now: i64) {
        let (Some(sig), Ok(mut entries)) = (signature(token), self.by_signature.write()) else {
            return;
        };
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, v| v.claims.exp > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(
            sig.into(),
            Verified {
                token: token.into(),
                claims,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> Arc<Claims> {
        Arc::new(Claims {
            sub: "u".into(),
            email: None,
            display_name: "D".into(),
            avatar_url: None,
            jti: "j".into(),
            iss: "i".into(),
            aud: "a".into(),
            exp,
            iat: 0,
            sid: "s".into(),
        })
    }

    #[test]
    fn a_hit_needs_the_whole_token_not_just_its_signature() {
        let cache = VerifiedTokens::default();
        cache.insert("h.c.sig", claims(10), 0);
        assert!(cache.get("h.c.sig").is_some());
        // Same signature segment, different header or claims: not the verified token.
        assert!(cache.get("h.other.sig").is_none());
        assert!(cache.get("x.c.sig").is_none());
        assert!(cache.get("h.c.sig2").is_none());
        assert!(cache.get("nodots").is_none());
    }

    #[test]
    fn a_full_cache_drops_expired_tokens_first() {
        let cache = VerifiedTokens::default();
        for i in 0..MAX_ENTRIES {
            let exp = if i == 0 { 100 } else { 5 };
            cache.insert(&format!("h.c.{i}"), claims(exp), 0);
        }
        cache.insert("h.c.new", claims(100), 50);
        assert!(cache.get("h.c.0").is_some(), "a live token is kept");
        assert!(cache.get("h.c.1").is_none(), "an expired token is dropped");
        assert!(cache.get("h.c.new").is_some());
    }
}
