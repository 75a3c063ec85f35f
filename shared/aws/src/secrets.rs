//! Secrets Manager: one JSON secret holding every named value, read at the first use and
//! again once the refresh time has passed (so a rotated key reaches warm Lambda instances).

use async_trait::async_trait;
use aws_sdk_secretsmanager::Client;
use serde_json::{Map, Value};
use std::time::{Duration, Instant};
use tokio::sync::RwLock;

use super::{OnFirstUse, describe};
use paddock_core::ports::secrets::{SecretError, SecretSource};

/// Named values from one Secrets Manager secret whose SecretString is a JSON object.
pub struct SecretsManagerSecrets {
    client: OnFirstUse<Client>,
    secret_id: String,
    refresh: Duration,
    cache: RwLock<Option<(Instant, Map<String, Value>)>>,
}

impl SecretsManagerSecrets {
    /// Secrets from `secret_id` (a name or ARN).
    pub fn new(client: Client, secret_id: impl Into<String>) -> Self {
        Self::on_first_use(OnFirstUse::built(client), secret_id)
    }

    /// Secrets from `secret_id` through a client built at the first read.
    pub fn on_first_use(client: OnFirstUse<Client>, secret_id: impl Into<String>) -> Self {
        Self {
            client,
            secret_id: secret_id.into(),
            refresh: Duration::ZERO,
            cache: RwLock::new(None),
        }
    }

    /// Reads the secret again when the values are older than `refresh` (zero: never).
    pub fn with_refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh;
        self
    }

    fn is_fresh(&self, loaded: Instant) -> bool {
        self.refresh.is_zero() || loaded.elapsed() < self.refresh
    }

    async fn load(&self) -> Result<Map<String, Value>, SecretError> {
        let out = self
            .client
            .get()
            .get_secret_value()
            .secret_id(&self.secret_id)
            .send()
            .await
            .map_err(|e| SecretError::Unavailable(describe(&e)))?;
        let text = out.secret_string().unwrap_or("{}");
        serde_json::from_str(text).map_err(|e| SecretError::Malformed {
            name: self.secret_id.clone(),
            reason: format!("SecretString is not a JSON object: {e}"),
        })
    }
}

#[async_trait]
impl SecretSource for SecretsManagerSecrets {
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        {
            let cache = self.cache.read().await;
            if let Some((loaded, map)) = cache.as_ref()
                && self.is_fresh(*loaded)
            {
                return Ok(lookup(map, name));
            }
        }
        let mut cache = self.cache.write().await;
        if let Some((loaded, map)) = cache.as_ref()
            && self.is_fresh(*loaded)
        {
            return Ok(lookup(map, name));
        }
        match self.load().await {
            Ok(map) => {
                let value = lookup(&map, name);
                *cache = Some((Instant::now(), map));
                Ok(value)
            }
            // A failed refresh keeps the values read before; only a first read fails.
            Err(e) => match cache.as_ref() {
                Some((_, map)) => {
                    tracing::warn!(error = %e, "could not re-read secrets; keeping the values read before");
                    Ok(lookup(map, name))
                }
                None => Err(e),
            },
        }
    }
}

fn lookup(map: &Map<String, Value>, name: &str) -> Option<String> {
    map.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
