//! State shared by every handler.

use std::sync::Arc;
use tokio::sync::OnceCell;

use crate::config::Settings;
use crate::http::ApiError;
use crate::identity::access_tokens::AccessTokens;
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
    /// The access-token key, read from the secrets port once.
    access_tokens: Arc<OnceCell<AccessTokens>>,
}

impl AppState {
    /// State over `ports` with `settings`.
    pub fn new(ports: Ports, settings: Settings) -> Self {
        Self {
            ports,
            leaderboards: Arc::new(BoardCache::new(settings.leaderboard_cache)),
            settings: Arc::new(settings),
            providers: Providers::default(),
            access_tokens: Arc::new(OnceCell::new()),
        }
    }

    /// The same state with the configured sign-in providers (`Auth__Providers__*`).
    pub fn with_identity_providers(mut self) -> Self {
        self.providers = providers::from_configs(&self.settings.auth.providers);
        self
    }

    /// The access-token signer and checker.
    pub async fn access_tokens(&self) -> Result<&AccessTokens, ApiError> {
        self.access_tokens
            .get_or_try_init(|| async {
                let key = self
                    .ports
                    .secrets
                    .get("jwtSigningKey")
                    .await?
                    .ok_or_else(|| {
                        ApiError::Unavailable(
                            "sign-in is not configured: the jwtSigningKey secret is missing".into(),
                        )
                    })?;
                if key.len() < 32 {
                    return Err(ApiError::Unavailable(
                        "sign-in is misconfigured: jwtSigningKey is shorter than 32 characters"
                            .into(),
                    ));
                }
                Ok(AccessTokens::new(&key, &self.settings.jwt))
            })
            .await
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
