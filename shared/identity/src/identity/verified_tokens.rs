//! Access tokens this process has already verified, so a token presented again skips the
//! signature check and the JSON parses.
//!
//! The desktop client presents one token on every call for up to an hour; checking its HMAC
//! and decoding its header and claims each time was the largest share of an authenticated
//! request's own work. A hit requires the presented token to equal, byte for byte, a token
//! that passed full verification with this process's key, so it proves exactly what the full
//! check proves. Expiry is still judged on every hit, and revocation is not cached here at
//! all: the family is read on every request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::claims::Claims;

/// Tokens kept at most (about 1 KB each); beyond this, expired ones go and then all of them.
const MAX_ENTRIES: usize = 10_000;

/// Tokens each thread keeps of its own (by two characters of their signature).
const RECENT_SLOTS: usize = 16;

/// The next cache's number: a thread's recent tokens name the cache, and with it the keys,
/// they were verified under.
static NEXT_CACHE: AtomicU64 = AtomicU64::new(1);

struct Verified {
    token: Box<str>,
    claims: Arc<Claims>,
}

/// A token a thread found verified, with claims of its own.
struct Recent {
    cache: u64,
    token: Box<str>,
    claims: Arc<Claims>,
}

thread_local! {
    /// Each thread's recently presented tokens. Both cores check tokens all the time; reading
    /// the shared map takes its lock and the claims' reference count, writes to memory both
    /// cores share, while a thread's own copies are written by it alone.
    static RECENT: RefCell<[Option<Recent>; RECENT_SLOTS]> =
        const { RefCell::new([const { None }; RECENT_SLOTS]) };
}

/// Verified tokens by signature (the token's last segment, unique per token), shared by the
/// process's threads, and each thread's own recent ones in front of them.
pub struct VerifiedTokens {
    id: u64,
    by_signature: RwLock<HashMap<Box<str>, Verified>>,
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        Self {
            id: NEXT_CACHE.fetch_add(1, Ordering::Relaxed),
            by_signature: RwLock::default(),
        }
    }
}

/// The signature segment of a compact JWT.
fn signature(token: &str) -> Option<&str> {
    token.rsplit_once('.').map(|(_, s)| s)
}

/// A thread's slot for a signature: its characters are an HMAC's bytes in base64, as good as
/// a hash.
fn recent_slot(signature: &str) -> usize {
    let bytes = signature.as_bytes();
    let byte = |i: usize| usize::from(bytes.get(i).copied().unwrap_or(0));
    (byte(0) * 31 + byte(1)) % RECENT_SLOTS
}

impl VerifiedTokens {
    /// The claims of `token` if it was verified before (expiry is the caller's to judge).
    pub fn get(&self, token: &str) -> Option<Arc<Claims>> {
        let sig = signature(token)?;
        let slot = recent_slot(sig);
        let recent = RECENT.with_borrow(|recent| {
            recent[slot]
                .as_ref()
                .filter(|r| r.cache == self.id && *r.token == *token)
                .map(|r| r.claims.clone())
        });
        if recent.is_some() {
            return recent;
        }
        let shared = {
            let entries = self.by_signature.read().ok()?;
            let found = entries.get(sig)?;
            (*found.token == *token).then(|| Claims::clone(&found.claims))?
        };
        let claims = Arc::new(shared);
        self.remember_here(slot, token, &claims);
        Some(claims)
    }

    /// Keeps `claims` in this thread's slot for `token`.
    fn remember_here(&self, slot: usize, token: &str, claims: &Arc<Claims>) {
        RECENT.with_borrow_mut(|recent| {
            recent[slot] = Some(Recent {
                cache: self.id,
                token: token.into(),
                claims: claims.clone(),
            });
        });
    }

    /// Remembers a token that passed full verification; `now` lets a full cache drop
    /// expired tokens first.
    pub fn insert(&self, token: &str, claims: Arc<Claims>, now: i64) {
        let Some(sig) = signature(token) else {
            return;
        };
        self.remember_here(recent_slot(sig), token, &claims);
        let Ok(mut entries) = self.by_signature.write() else {
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
            sub: paddock_kernel::ids::UserId::new(),
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
    fn a_thread_s_recent_tokens_are_those_of_its_cache_and_match_whole() {
        let (first, second) = (VerifiedTokens::default(), VerifiedTokens::default());
        first.insert("h.c.sig", claims(10), 0);
        assert!(first.get("h.c.sig").is_some());
        // Another cache (another key set, after a rotation) has not verified it.
        assert!(second.get("h.c.sig").is_none());
        // The same slot, another token.
        assert!(first.get("h.x.sig").is_none());
        second.insert("h.x.sig", claims(10), 0);
        assert!(first.get("h.c.sig").is_some());
        assert!(first.get("h.x.sig").is_none());
    }

    #[test]
    fn another_thread_finds_what_one_verified_with_claims_of_its_own() {
        let cache = Arc::new(VerifiedTokens::default());
        let verified = claims(10);
        cache.insert("h.c.sig", verified.clone(), 0);
        let theirs = std::thread::scope(|s| {
            s.spawn(|| (cache.get("h.c.sig"), cache.get("h.c.sig")))
                .join()
                .unwrap()
        });
        let (found, again) = (theirs.0.unwrap(), theirs.1.unwrap());
        assert_eq!(*found, *verified);
        assert!(!Arc::ptr_eq(&found, &verified), "a copy of its own");
        assert!(Arc::ptr_eq(&found, &again), "kept by the thread");
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
