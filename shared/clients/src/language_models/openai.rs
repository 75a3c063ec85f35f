//! The OpenAI Chat Completions adapter (`POST <base>/chat/completions`): OpenAI itself, or any
//! compatible server (llama.cpp's server, Ollama, vLLM) for a model on the driver's machine.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

use super::{read_answer, transport_error};
use paddock_core::coaching::llm::{Completion, LanguageModel, LlmError, Prompt};
use paddock_core::ports::SecretSource;

/// The secret holding the API key (optional for a server of one's own).
pub const KEY_SECRET: &str = "openaiApiKey";

/// A Chat Completions-compatible API.
pub struct OpenAiCompatible {
    http: reqwest::Client,
    base_url: String,
    model: String,
    secrets: Arc<dyn SecretSource>,
    /// Whether the endpoint works without a key (a base URL of one's own was configured).
    key_optional: bool,
}

impl OpenAiCompatible {
    /// The API at `base_url` (ending in `/v1` as such servers do) with `model`; a key is
    /// required unless `key_optional`.
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        model: &str,
        secrets: Arc<dyn SecretSource>,
        key_optional: bool,
    ) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            secrets,
            key_optional,
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    model: Option<String>,
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

impl OpenAiCompatible {
    /// The key, if any; an error when one is needed and missing.
    async fn key(&self) -> Result<Option<String>, LlmError> {
        let key = self
            .secrets
            .get(KEY_SECRET)
            .await
            .map_err(|e| LlmError::Upstream(format!("reading the API key: {e}")))?
            .filter(|k| !k.trim().is_empty());
        if key.is_none() && !self.key_optional {
            return Err(LlmError::NotConfigured);
        }
        Ok(key)
    }
}

#[async_trait]
impl LanguageModel for OpenAiCompatible {
    async fn ready(&self) -> Result<(), LlmError> {
        self.key().await.map(|_| ())
    }

    async fn complete(&self, prompt: &Prompt) -> Result<Completion, LlmError> {
        let key = self.key().await?;
        let mut messages = vec![json!({"role": "system", "content": prompt.system})];
        messages.extend(prompt.messages.iter().map(|m| json!(m)));
        let body = json!({
            "model": self.model,
            "max_tokens": prompt.max_tokens,
            "messages": messages,
        });
        let mut request = self
            .http
            .post(format!("{}/chat/completions", self.base_url))
            .json(&body);
        if let Some(key) = key {
            request = request.bearer_auth(key.trim());
        }
        let response = request.send().await.map_err(|e| transport_error(&e))?;
        let answer: Answer = read_answer(response).await?;
        let choice = answer
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| LlmError::Upstream("an answer without choices".into()))?;
        let text = choice.message.content.unwrap_or_default();
        if text.trim().is_empty() {
            return Err(LlmError::Upstream("an answer without text".into()));
        }
        // Servers without usage figures are counted at zero (a local model costs nothing).
        let usage = answer.usage.unwrap_or(Usage {
            prompt_tokens: 0,
            completion_tokens: 0,
        });
        Ok(Completion {
            text,
            model: answer.model.unwrap_or_else(|| self.model.clone()),
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            stop_reason: choice.finish_reason.unwrap_or_default(),
        })
    }
}
