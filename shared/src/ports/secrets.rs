//! Secrets port: named secret values (signing keys, provider client secrets, API keys).

use async_trait::async_trait;

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("secret backend unavailable: {0}")]
    Unavailable(String),
    #[error("secret {name} is malformed: {reason}")]
    Malformed { name: String, reason: String },
}

/// A source of named secrets. Adapters may cache values (Secrets Manager keeps them for
/// `Secrets__RefreshSeconds`).
#[async_trait]
pub trait SecretSource: Send + Sync {
    /// The value of `name`, or `None` when it is not configured.
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError>;
}
