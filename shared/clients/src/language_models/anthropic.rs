//! The Anthropic Messages API adapter (`POST /v1/messages`).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

use super::{read_answer, transport_error};
use paddock_core::coaching::llm::{Completion, LanguageModel, LlmError, Prompt};
use paddock_core::ports::SecretSource;

/// The secret holding the API key.
pub const KEY_SECRET: &str = "anthropicApiKey";
/// The API version this adapter speaks.
const API_VERSION: &str = "2023-06-01";

/// Claude through the Messages API.
pub struct Anthropic {
    http: reqwest::Client,
    base_url: String,
    model: String,
    secrets: Arc<dyn SecretSource>,
}

impl Anthropic {
    /// The API at `base_url` with `model`; the key is read from `secrets` on each call (the
    /// secrets adapter keeps it for `Secrets__RefreshSeconds`).
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        model: &str,
        secrets: Arc<dyn SecretSource>,
    ) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            secrets,
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    model: Option<String>,
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Usage,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

impl Anthropic {
    async fn key(&self) -> Result<String, LlmError> {
        self.secrets
            .get(KEY_SECRET)
            .await
            .map_err(|e| LlmError::Upstream(format!("reading the API key: {e}")))?
            .filter(|k| !k.trim().is_empty())
            .ok_or(LlmError::NotConfigured)
    }
}

#[async_trait]
impl LanguageModel for Anthropic {
    async fn ready(&self) -> Result<(), LlmError> {
        self.key().await.map(|_| ())
    }

    async fn complete(&self, prompt: &Prompt) -> Result<Completion, LlmError> {
        let key = self.key().await?;
        let body = json!({
            "model": self.model,
            "max_tokens": prompt.max_tokens,
            "system": prompt.system,
            "messages": prompt.messages,
        });
        let response = self
            .http
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", key.trim())
            .header("anthropic-version", API_VERSION)
            .json(&body)
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        let answer: Answer = read_answer(response).await?;
        let text: String = answer
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .map(|b| b.text.as_str())
            .collect();
        if text.trim().is_empty() {
            return Err(LlmError::Upstream("an answer without text".into()));
        }
        Ok(Completion {
            text,
            model: answer.model.unwrap_or_else(|| self.model.clone()),
            input_tokens: answer.usage.input_tokens,
            output_tokens: answer.usage.output_tokens,
            stop_reason: answer.stop_reason.unwrap_or_default(),
        })
    }
}
