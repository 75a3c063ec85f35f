//! The language models behind the coach's port: Anthropic's Messages API, or any OpenAI Chat
//! Completions-compatible server, over HTTPS.

pub mod anthropic;
pub mod openai;

use async_trait::async_trait;
use std::sync::{Arc, OnceLock};

use paddock_core::coaching::llm::{Completion, LanguageModel, LlmError, Prompt};
use paddock_core::config::{AiProvider, AiSettings};
use paddock_core::ports::SecretSource;

/// The model the settings name; keys come from `secrets`. Its HTTP client is built on the
/// first call: building it reads the system's root certificates, which would otherwise hold
/// up a Lambda function's init.
pub fn language_model(
    settings: &AiSettings,
    secrets: Arc<dyn SecretSource>,
) -> Arc<dyn LanguageModel> {
    // The crypto provider is the process's from now on (cheap, and other clients rely on it).
    let _ = rustls::crypto::ring::default_provider().install_default();
    Arc::new(OnFirstCall {
        settings: settings.clone(),
        secrets,
        model: OnceLock::new(),
    })
}

/// The configured model, built when first asked.
struct OnFirstCall {
    settings: AiSettings,
    secrets: Arc<dyn SecretSource>,
    model: OnceLock<Arc<dyn LanguageModel>>,
}

impl OnFirstCall {
    fn model(&self) -> &dyn LanguageModel {
        self.model
            .get_or_init(|| build_model(&self.settings, self.secrets.clone()))
            .as_ref()
    }
}

#[async_trait]
impl LanguageModel for OnFirstCall {
    async fn ready(&self) -> Result<(), LlmError> {
        self.model().ready().await
    }

    async fn complete(&self, prompt: &Prompt) -> Result<Completion, LlmError> {
        self.model().complete(prompt).await
    }
}

fn build_model(settings: &AiSettings, secrets: Arc<dyn SecretSource>) -> Arc<dyn LanguageModel> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout.min(std::time::Duration::from_secs(5)))
        .build()
        .expect("HTTP client configuration is valid");
    match settings.provider {
        AiProvider::Anthropic => Arc::new(anthropic::Anthropic::new(
            http,
            &settings.base_url,
            &settings.model,
            secrets,
        )),
        AiProvider::OpenAi => Arc::new(openai::OpenAiCompatible::new(
            http,
            &settings.base_url,
            &settings.model,
            secrets,
            settings.base_url_configured,
        )),
    }
}

/// Maps an upstream error status to the error it means; `retry_after` is the upstream's
/// `Retry-After` header.
fn status_error(status: u16, retry_after: Option<&str>) -> LlmError {
    match status {
        401 | 403 => LlmError::Rejected { status },
        // 529 is Anthropic's "overloaded"; 503 the usual one.
        429 | 503 | 529 => LlmError::Busy {
            retry_after_secs: retry_after.and_then(|v| v.trim().parse().ok()),
        },
        status => LlmError::Failed { status },
    }
}

/// The answer of a call: its JSON body as `T` when the status is 200, else the error the
/// status means (with the upstream's `Retry-After`).
pub(crate) async fn read_answer<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, LlmError> {
    let status = response.status().as_u16();
    if status != 200 {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        return Err(status_error(status, retry_after.as_deref()));
    }
    let bytes = response.bytes().await.map_err(|e| transport_error(&e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| LlmError::Upstream(format!("unreadable answer: {e}")))
}

/// Maps a transport error.
pub(crate) fn transport_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout
    } else {
        LlmError::Upstream(format!("request failed: {e}"))
    }
}
