//! The access-token keys of a process: read from the secrets port, kept for
//! `Secrets__RefreshSeconds` and read again after that, so a key rotation reaches warm Lambda
//! instances without a deployment.

use arc_swap::ArcSwapOption;
use std::sync::Arc;
use std::time::Duration;

use super::access_tokens::AccessTokens;
use paddock_config::config::JwtSettings;
use paddock_kernel::ports::clock::monotonic_seconds;
use paddock_kernel::ports::secrets::{SecretError, SecretSource};

/// Why no access-token keys could be had.
#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    /// `jwtSigningKey` is not configured.
    #[error("sign-in is not configured: the jwtSigningKey secret is missing")]
    Missing,
    /// A key is too short or the previous keys are unreadable.
    #[error("sign-in is misconfigured: {0}")]
    Misconfigured(String),
    /// The secrets could not be read.
    #[error(transparent)]
    Secrets(#[from] SecretError),
}

/// Keys as read, and when ([`monotonic_seconds`]).
struct Loaded {
    at: i64,
    tokens: Arc<AccessTokens>,
}

impl Loaded {
    fn fresh(&self, now: i64, refresh: Duration) -> bool {
        let refresh = i64::try_from(refresh.as_secs()).unwrap_or(i64::MAX);
        refresh == 0 || now.saturating_sub(self.at) < refresh
    }
}

/// The current [`AccessTokens`] and when their keys were read.
///
/// Every authenticated request reads them, on every core at once: an `ArcSwap` is read
/// without a lock or a reference count both cores write (a read lock and an `Arc` clone were
/// two such writes each).
#[derive(Default)]
pub struct SigningKeys {
    current: ArcSwapOption<Loaded>,
    reload: tokio::sync::Mutex<()>,
}

impl SigningKeys {
    /// `f` of the current keys, when they were read less than `refresh` ago (zero: read
    /// once); `None` when they are due to be read (see [`SigningKeys::get`]).
    pub fn with_fresh<R>(
        &self,
        refresh: Duration,
        f: impl FnOnce(&Arc<AccessTokens>) -> R,
    ) -> Option<R> {
        let current = self.current.load();
        let loaded = current.as_deref()?;
        loaded
            .fresh(monotonic_seconds(), refresh)
            .then(|| f(&loaded.tokens))
    }

    fn cached(&self, refresh: Duration) -> Option<Arc<AccessTokens>> {
        self.with_fresh(refresh, Arc::clone)
    }

    /// The signer and checker, read from `secrets` when read `refresh` or longer ago (zero:
    /// once). A failed re-read keeps the keys read before; only the first read can fail.
    pub async fn get(
        &self,
        secrets: &dyn SecretSource,
        jwt: &JwtSettings,
        refresh: Duration,
    ) -> Result<Arc<AccessTokens>, SigningKeyError> {
        if let Some(tokens) = self.cached(refresh) {
            return Ok(tokens);
        }
        // One caller at a time goes to the secrets port; the others wait for its answer.
        let _reload = self.reload.lock().await;
        if let Some(tokens) = self.cached(refresh) {
            return Ok(tokens);
        }
        let before = self.current.load_full();
        match load(secrets).await {
            Ok(keys) => {
                // Unchanged keys keep the signer, and with it the tokens it has verified: a
                // refresh must not make every warm instance verify every token again.
                let tokens = match before {
                    Some(loaded) if loaded.tokens.uses_keys(&keys.current, &keys.previous) => {
                        loaded.tokens.clone()
                    }
                    _ => Arc::new(AccessTokens::new(&keys.current, &keys.previous, jwt)),
                };
                self.current.store(Some(Arc::new(Loaded {
                    at: monotonic_seconds(),
                    tokens: tokens.clone(),
                })));
                Ok(tokens)
            }
            Err(e) => match before {
                Some(loaded) => {
                    tracing::warn!(error = %e, "could not re-read the signing keys; keeping the current ones");
                    Ok(loaded.tokens.clone())
                }
                None => Err(e),
            },
        }
    }
}

/// The secret field holding the key tokens are signed with.
pub const KEY_SECRET: &str = "jwtSigningKey";

/// The secret field holding keys still accepted after a rotation (written by the rotation).
pub const PREVIOUS_KEYS_SECRET: &str = "jwtPreviousSigningKeys";

/// The signing keys as configured.
struct Keys {
    current: String,
    previous: Vec<String>,
}

async fn load(secrets: &dyn SecretSource) -> Result<Keys, SigningKeyError> {
    let key = secrets
        .get(KEY_SECRET)
        .await?
        .ok_or(SigningKeyError::Missing)?;
    let previous = match secrets.get(PREVIOUS_KEYS_SECRET).await? {
        Some(text) => previous_keys(&text)?,
        None => Vec::new(),
    };
    if key.len() < 32 || previous.iter().any(|k| k.len() < 32) {
        return Err(SigningKeyError::Misconfigured(
            "a signing key is shorter than 32 characters".into(),
        ));
    }
    Ok(Keys {
        current: key,
        previous,
    })
}

/// `jwtPreviousSigningKeys`: a JSON array of keys, or keys separated by commas or whitespace.
fn previous_keys(text: &str) -> Result<Vec<String>, SigningKeyError> {
    let text = text.trim();
    if text.starts_with('[') {
        return serde_json::from_str(text).map_err(|e| {
            SigningKeyError::Misconfigured(format!(
                "jwtPreviousSigningKeys is not a JSON list of strings ({e})"
            ))
        });
    }
    Ok(text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::previous_keys;

    #[test]
    fn previous_keys_are_a_json_list_or_separated_text() {
        assert_eq!(previous_keys(r#"["a", "b"]"#).unwrap(), ["a", "b"]);
        assert_eq!(previous_keys("a, b\nc").unwrap(), ["a", "b", "c"]);
        assert!(previous_keys("").unwrap().is_empty());
        assert!(previous_keys("[1]").is_err());
    }
}
