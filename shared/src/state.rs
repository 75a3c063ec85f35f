//! State shared by every handler.

use std::sync::{Arc, RwLock};
use std::time::Instant;

use crate::config::Settings;
use crate::http::ApiError;
use crate::identity::access_tokens::AccessTokens;
use crate::identity::passwords::PasswordHasher;
use crate::identity::providers::{self, Providers};
use crate::leaderboards::BoardCache;
use crate::ports::Ports;

/// The ports, settings and per-process caches, cloned into every handler.
#[derive(Clone)]
pub struct AppState {
    pub ports: Ports,
    pub settings: Arc<Settings>,
    /// Identity providers by name (their discovery documents and keys are cached inside).
    /// Empty unless [`AppState::with_identity_providers`] was called: only the auth group
    /// needs them, and leaving them out keeps the HTTP client out of the other functions.
    pub providers: Providers,
    /// Leaderboard boards and rendered pages, kept for a few seconds.
    pub leaderboards: Arc<BoardCache>,
    /// The password hashing threads; started by [`AppState::with_identity_providers`] (only
    /// the auth group hashes passwords).
    passwords: Option<Arc<PasswordHasher>>,
    /// The access-token keys, re-read from the secrets port after `Secrets__RefreshSeconds`.
    access_tokens: Arc<SigningKeys>,
}

/// The access-token signer and checker with the time its keys were read.
struct SigningKeys {
    current: RwLock<Option<(Instant, Arc<AccessTokens>)>>,
    reload: tokio::sync::Mutex<()>,
}

impl AppState {
    /// State over `ports` with `settings`.
    pub fn new(ports: Ports, settings: Settings) -> Self {
        Self {
            ports,
            leaderboards: Arc::new(BoardCache::new(settings.leaderboard_cache)),
            settings: Arc::new(settings),
            providers: Providers::default(),
            passwords: None,
            access_tokens: Arc::new(SigningKeys {
                current: RwLock::new(None),
                reload: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The same state with the configured sign-in providers (`Auth__Providers__*`) and the
    /// password hashing threads (`Auth__HashingThreads`), whose dummy hash is computed now.
    pub fn with_identity_providers(mut self) -> Self {
        self.providers = providers::from_configs(&self.settings.auth.providers);
        self.passwords = Some(Arc::new(PasswordHasher::start(
            self.settings.auth.hashing_threads,
            self.settings.auth.hashing_wait,
        )));
        self
    }

    /// The password hasher, in the functions that sign in with passwords.
    pub fn passwords(&self) -> Result<&PasswordHasher, ApiError> {
        self.passwords.as_deref().ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!(
                "password hashing was not started in this function"
            ))
        })
    }

    /// The access-token signer and checker; its keys are read from the secrets port once and
    /// again after `Secrets__RefreshSeconds`, so a key rotation reaches warm instances.
    pub async fn access_tokens(&self) -> Result<Arc<AccessTokens>, ApiError> {
        let refresh = self.settings.secrets_refresh;
        let fresh = |loaded: &Instant| refresh.is_zero() || loaded.elapsed() < refresh;
        if let Ok(current) = self.access_tokens.current.read()
            && let Some((loaded, tokens)) = current.as_ref()
            && fresh(loaded)
        {
            return Ok(tokens.clone());
        }
        // One reader at a time goes to the secrets port; the others wait for its answer.
        let _reload = self.access_tokens.reload.lock().await;
        if let Ok(current) = self.access_tokens.current.read()
            && let Some((loaded, tokens)) = current.as_ref()
            && fresh(loaded)
        {
            return Ok(tokens.clone());
        }
        let loaded = match self.load_signing_keys().await {
            Ok(tokens) => Arc::new(tokens),
            Err(e) => {
                // Keep serving with the keys we have when a refresh fails; fail only at start.
                if let Ok(current) = self.access_tokens.current.read()
                    && let Some((_, tokens)) = current.as_ref()
                {
                    tracing::warn!(error = %e, "could not re-read the signing keys; keeping the current ones");
                    return Ok(tokens.clone());
                }
                return Err(e);
            }
        };
        if let Ok(mut current) = self.access_tokens.current.write() {
            *current = Some((Instant::now(), loaded.clone()));
        }
        Ok(loaded)
    }

    async fn load_signing_keys(&self) -> Result<AccessTokens, ApiError> {
        let secrets = &self.ports.secrets;
        let key = secrets.get("jwtSigningKey").await?.ok_or_else(|| {
            ApiError::Unavailable(
                "sign-in is not configured: the jwtSigningKey secret is missing".into(),
            )
        })?;
        let previous = match secrets.get("jwtPreviousSigningKeys").await? {
            Some(text) => previous_keys(&text)?,
            None => Vec::new(),
        };
        if key.len() < 32 || previous.iter().any(|k| k.len() < 32) {
            return Err(ApiError::Unavailable(
                "sign-in is misconfigured: a signing key is shorter than 32 characters".into(),
            ));
        }
        Ok(AccessTokens::new(&key, &previous, &self.settings.jwt))
    }

    /// The public base URL (for provider callbacks).
    pub fn public_url(&self) -> String {
        self.settings
            .auth
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.settings.address))
    }
}

/// `jwtPreviousSigningKeys`: a JSON array of keys, or keys separated by commas or whitespace.
fn previous_keys(text: &str) -> Result<Vec<String>, ApiError> {
    let text = text.trim();
    if text.starts_with('[') {
        return serde_json::from_str(text).map_err(|e| {
            ApiError::Unavailable(format!(
                "sign-in is misconfigured: jwtPreviousSigningKeys is not a JSON list of strings ({e})"
            ))
        });
    }
    Ok(text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect())
}
