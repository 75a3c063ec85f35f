//! Secrets Manager: one JSON secret holding every named value, read once per cold start.

use async_trait::async_trait;
use aws_sdk_secretsmanager::Client;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use super::describe;
use crate::ports::secrets::{SecretError, SecretSource};

/// Named values from one Secrets Manager secret whose SecretString is a JSON object.
pub struct SecretsManagerSecrets {
    client: Client,
    secret_id: String,
    cache: OnceCell<Map<String, Value>>,
}

impl SecretsManagerSecrets {
    /// Secrets from `secret_id` (a name or ARN).
    pub fn new(client: Client, secret_id: impl Into<String>) -> Self {
        Self {
            client,
            secret_id: secret_id.into(),
            cache: OnceCell::new(),
        }
    }

    async fn load(&self) -> Result<Map<String, Value>, SecretError> {
        let out = self
            .client
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
        let map = self.cache.get_or_try_init(|| self.load()).await?;
        Ok(map
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned))
    }
}
