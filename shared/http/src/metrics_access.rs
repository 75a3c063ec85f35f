//! Who may read the service's metrics in AWS: a scraper presenting the metrics token the
//! operator keeps in the app secret (`metricsToken`). Without a token there, the metrics are
//! off: a deployment is not readable by anyone until its operator chooses a credential.
//!
//! The local server's own `GET /metrics` (its process registry, on loopback by default) does
//! not go through here.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use paddock_core::ports::secrets::SecretSource;

/// The name of the metrics token in the secrets port (a key of the app secret in AWS).
pub const METRICS_TOKEN_SECRET: &str = "metricsToken";

/// Fewest characters a metrics token may have: a shorter one could be guessed, so it counts
/// as no token (the metrics stay off) and is logged.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Why a scrape may not read the metrics.
#[derive(Debug, thiserror::Error)]
pub enum MetricsAccessError {
    /// No usable metrics token is configured: the metrics are off.
    #[error("no metrics token is configured")]
    Off,
    /// The scrape presented no token, or another one.
    #[error("missing or wrong metrics token")]
    Refused,
    /// The secret could not be read.
    #[error("the metrics token cannot be read: {0}")]
    Unavailable(String),
}

/// Whether `presented` (the scrape's bearer token, if any) is the configured metrics token.
/// The two are compared as SHA-256 digests in constant time, so neither the time taken nor a
/// length check tells a caller how much of a guess was right.
pub async fn check(
    secrets: &dyn SecretSource,
    presented: Option<&str>,
) -> Result<(), MetricsAccessError> {
    let configured = secrets
        .get(METRICS_TOKEN_SECRET)
        .await
        .map_err(|e| MetricsAccessError::Unavailable(e.to_string()))?;
    let Some(configured) = configured.filter(|t| !t.trim().is_empty()) else {
        return Err(MetricsAccessError::Off);
    };
    if configured.chars().count() < MIN_TOKEN_CHARS {
        tracing::warn!(
            min_chars = MIN_TOKEN_CHARS,
            "the metrics token is too short to be used: GET /metrics stays off"
        );
        return Err(MetricsAccessError::Off);
    }
    let presented = presented.ok_or(MetricsAccessError::Refused)?;
    let same = Sha256::digest(configured.as_bytes()).ct_eq(&Sha256::digest(presented.as_bytes()));
    if bool::from(same) {
        Ok(())
    } else {
        Err(MetricsAccessError::Refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::ports::secrets::SecretError;

    struct OneSecret(Option<&'static str>);

    #[async_trait::async_trait]
    impl SecretSource for OneSecret {
        async fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
            assert_eq!(name, METRICS_TOKEN_SECRET);
            Ok(self.0.map(str::to_owned))
        }
    }

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    #[tokio::test]
    async fn only_the_configured_token_reads_and_no_token_means_off() {
        let configured = OneSecret(Some(TOKEN));
        assert!(check(&configured, Some(TOKEN)).await.is_ok());
        for wrong in [None, Some(""), Some("0123456789abcdef"), Some(&TOKEN[1..])] {
            assert!(matches!(
                check(&configured, wrong).await,
                Err(MetricsAccessError::Refused)
            ));
        }
        for off in [None, Some(""), Some("  "), Some("short-token")] {
            assert!(matches!(
                check(&OneSecret(off), Some(TOKEN)).await,
                Err(MetricsAccessError::Off)
            ));
            assert!(matches!(
                check(&OneSecret(off), off).await,
                Err(MetricsAccessError::Off)
            ));
        }
    }
}
