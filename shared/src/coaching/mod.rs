//! AI coaching: one-shot insights and multi-turn chat about a lap, over a language model
//! (Anthropic's Messages API, or any OpenAI Chat Completions-compatible server), with
//! store-backed limits and stored answers.

pub(crate) mod answers;
pub mod anthropic;
pub(crate) mod budget;
pub mod coach;
pub mod context;
pub mod llm;
pub mod openai;
pub mod prompt;

use async_trait::async_trait;
use std::sync::{Arc, OnceLock};

use crate::config::{AiProvider, AiSettings};
use crate::ports::SecretSource;
use llm::{Completion, LanguageModel, LlmError, Prompt};

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
