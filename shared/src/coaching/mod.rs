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

use std::sync::Arc;

use crate::config::{AiProvider, AiSettings};
use crate::ports::SecretSource;
use llm::LanguageModel;

/// The model the settings name; keys come from `secrets`.
pub fn language_model(
    settings: &AiSettings,
    secrets: Arc<dyn SecretSource>,
) -> Arc<dyn LanguageModel> {
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
