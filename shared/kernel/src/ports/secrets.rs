//! Secrets port: named secret values (signing keys, provider client secrets, API keys).

use async_trait::async_trait;

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The backend could not be reached or failed.
    #[error("secret backend unavailable: {0}")]
    Unavailable(String),
    /// The secret exists but cannot be used.
    #[error("secret {name} is malformed: {reason}")]
    Malformed {
        /// The secret's name.
        name: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// A source of named secrets. Adapters may cache values (Secrets Manager keeps them for
/// `Secrets__RefreshSeconds`).
#[async_trait]
pub trait SecretSource: Send + Sync {
    /// The value of `name`, or `None` when it is not configured.
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError>;
}
