//! The access-token keys of a process: read from the secrets port, kept for
//! `Secrets__RefreshSeconds` and read again after that, so a key rotation reaches warm Lambda
//! instances without a deployment.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::access_tokens::AccessTokens;
use crate::config::JwtSettings;
use crate::ports::secrets::{SecretError, SecretSource};

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

/// The current [`AccessTokens`] and when their keys were read.
#[derive(Default)]
pub(crate) struct SigningKeys {
    current: RwLock<Option<(Instant, Arc<AccessTokens>)>>,
    reload: tokio::sync::Mutex<()>,
}

impl SigningKeys {
    fn cached(&self, refresh: Duration) -> Option<Arc<AccessTokens>> {
        let current = self.current.read().ok()?;
        let (loaded, tokens) = current.as_ref()?;
        (refresh.is_zero() || loaded.elapsed() < refresh).then(|| tokens.clone())
    }

    /// The signer and checker, read from `secrets` when older than `refresh` (zero: once).
    /// A failed re-read keeps the keys read before; only the first read can fail.
    pub(crate) async fn get(
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
        match load(secrets).await {
            Ok(keys) => {
                // Unchanged keys keep the signer, and with it the tokens it has verified: a
                // refresh must not make every warm instance verify every token again.
                let tokens = match self.cached(Duration::ZERO) {
                    Some(tokens) if tokens.uses_keys(&keys.current, &keys.previous) => tokens,
                    _ => Arc::new(AccessTokens::new(&keys.current, &keys.previous, jwt)),
                };
                if let Ok(mut current) = self.current.write() {
                    *current = Some((Instant::now(), tokens.clone()));
                }
                Ok(tokens)
            }
            Err(e) => match self.cached(Duration::ZERO) {
                Some(tokens) => {
                    tracing::warn!(error = %e, "could not re-read the signing keys; keeping the current ones");
                    Ok(tokens)
                }
                None => Err(e),
            },
        }
    }
}

/// The signing keys as configured.
struct Keys {
    current: String,
    previous: Vec<String>,
}

async fn load(secrets: &dyn SecretSource) -> Result<Keys, SigningKeyError> {
    let key = secrets
        .get("jwtSigningKey")
        .await?
        .ok_or(SigningKeyError::Missing)?;
    let previous = match secrets.get("jwtPreviousSigningKeys").await? {
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
