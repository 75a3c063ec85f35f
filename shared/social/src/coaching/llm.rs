//! The language-model port: one completion of a system prompt and a conversation.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Who wrote a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The driver.
    User,
    /// The coach (earlier answers).
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: String,
}

/// What the model is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The fixed system prompt.
    pub system: String,
    /// The conversation, starting and ending with the driver.
    pub messages: Vec<Message>,
    /// The most tokens the model may generate.
    pub max_tokens: u32,
}

/// The model's answer and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The answer.
    pub text: String,
    /// The model that answered, as the API names it.
    pub model: String,
    /// Prompt tokens the API counted.
    pub input_tokens: u64,
    /// Generated tokens the API counted.
    pub output_tokens: u64,
    /// Why generation stopped (`end_turn`, `max_tokens`, `stop`, `length`, ...).
    pub stop_reason: String,
}

/// Why a completion failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// No key (or no endpoint) is configured: no request was made.
    #[error("AI coaching is not configured on this server")]
    NotConfigured,
    /// The API refused our credentials or permissions (a misconfiguration).
    #[error("the AI provider refused the server's credentials ({status})")]
    Rejected {
        /// The upstream status (401 or 403).
        status: u16,
    },
    /// The API is rate limiting or overloaded.
    #[error("the AI provider is busy")]
    Busy {
        /// Seconds to wait, when the upstream said.
        retry_after_secs: Option<u64>,
    },
    /// The API answered an error status (other than those above).
    #[error("the AI provider failed: status {status}")]
    Failed {
        /// The upstream status.
        status: u16,
    },
    /// The call failed on its way, or the API answered something unreadable.
    #[error("the AI provider failed: {0}")]
    Upstream(String),
    /// The API did not answer in time.
    #[error("the AI provider did not answer in time")]
    Timeout,
}

impl LlmError {
    /// Whether the provider may have counted tokens for the failed call: a call that timed
    /// out, broke off or was answered unreadably may have been generated in full, whereas an
    /// error status (or no call at all) is not billed.
    pub fn may_have_counted_tokens(&self) -> bool {
        match self {
            Self::NotConfigured
            | Self::Rejected { .. }
            | Self::Busy { .. }
            | Self::Failed { .. } => false,
            Self::Upstream(_) | Self::Timeout => true,
        }
    }
}

/// A chat-completion API.
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// Whether a call could be made at all (a key, or an endpoint that needs none), checked
    /// before anything is counted; makes no request.
    async fn ready(&self) -> Result<(), LlmError>;
    /// Completes `prompt`.
    async fn complete(&self, prompt: &Prompt) -> Result<Completion, LlmError>;
}
