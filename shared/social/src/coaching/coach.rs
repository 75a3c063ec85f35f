//! The coaching flow: the request limit first, then the stored answer, then the call's most
//! tokens reserved, then the model, then the reservation settled with what the call cost. No
//! upstream call is made when the model is not configured, or a limit has no room for it.

use serde::Serialize;
use std::time::Instant;
use utoipa::ToSchema;

use super::answers;
use super::budget;
use super::context::SessionContext;
use super::llm::{Completion, LanguageModel, LlmError, Message, Role};
use super::prompt::{self, INSIGHTS_QUESTION, MAX_PROMPT_BYTES};
use paddock_config::config::AiSettings;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::rate_limits::LimitError;

/// A coaching answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoachAnswer {
    /// The coach's answer.
    pub text: String,
    /// The model that answered.
    pub model: String,
    /// Prompt tokens counted by the provider.
    pub input_tokens: u64,
    /// Generated tokens counted by the provider (at most 1024).
    pub output_tokens: u64,
    /// Why generation stopped, as the provider says (`end_turn`, `max_tokens`, `stop`, ...).
    pub stop_reason: String,
    /// True when a stored answer of the identical request was reused (no provider call).
    pub cached: bool,
}

impl CoachAnswer {
    fn from(completion: Completion, cached: bool) -> Self {
        Self {
            text: completion.text,
            model: completion.model,
            input_tokens: completion.input_tokens,
            output_tokens: completion.output_tokens,
            stop_reason: completion.stop_reason,
            cached,
        }
    }
}

/// Why a coaching request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum CoachError {
    /// The prompt would be larger than [`MAX_PROMPT_BYTES`].
    #[error("body: the prompt would be {0} bytes; at most {MAX_PROMPT_BYTES}")]
    PromptTooLarge(usize),
    /// A limit is spent, or the store failed while counting.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The whole service's tokens for today are spent (every driver waits for the next day).
    #[error(
        "AI coaching has used this service's tokens for today; retry in {} seconds, when the UTC day ends",
        .0.retry_after_secs
    )]
    ServiceSpent(paddock_kernel::rate_limits::RateLimited),
    /// The model failed (or is not configured).
    #[error(transparent)]
    Llm(#[from] LlmError),
}

/// Everything a coaching call needs.
pub struct Coach<'a> {
    /// The ports (limits and stored answers).
    pub ports: &'a Ports,
    /// The model, if this function has one.
    pub model: Option<&'a dyn LanguageModel>,
    /// The `Ai__*` settings.
    pub settings: &'a AiSettings,
    /// Who asks.
    pub user_id: &'a UserId,
}

impl Coach<'_> {
    /// One-shot insights about `context`; an identical request within a day is answered
    /// from the store.
    pub async fn insights(&self, context: SessionContext) -> Result<CoachAnswer, CoachError> {
        let question = Message {
            role: Role::User,
            content: INSIGHTS_QUESTION.into(),
        };
        let fingerprint = answers::fingerprint(&self.settings.model, &context);
        let prompt = prompt::build(&context, vec![question]);
        let model = self.admit(&prompt).await?;
        match answers::find(self.ports, self.user_id, &fingerprint).await {
            Ok(Some(stored)) => {
                record_cache("hit");
                return Ok(CoachAnswer::from(stored, true));
            }
            Ok(None) => record_cache("miss"),
            // A store hiccup costs a call, not the answer.
            Err(e) => tracing::warn!(error = %e, "could not read stored coaching answers"),
        }
        let completion = self.call(model, &prompt).await?;
        if let Err(e) = answers::keep(self.ports, self.user_id, &fingerprint, &completion).await {
            tracing::warn!(error = %e, "could not store a coaching answer");
        }
        Ok(CoachAnswer::from(completion, false))
    }

    /// A chat turn: the context, then the whole history.
    pub async fn chat(
        &self,
        context: SessionContext,
        messages: Vec<Message>,
    ) -> Result<CoachAnswer, CoachError> {
        let prompt = prompt::build(&context, messages);
        let model = self.admit(&prompt).await?;
        let completion = self.call(model, &prompt).await?;
        Ok(CoachAnswer::from(completion, false))
    }

    /// Checks the prompt's size, that a model is configured, and the hourly request limit
    /// (counting this request); answers the model.
    async fn admit(&self, prompt: &super::llm::Prompt) -> Result<&dyn LanguageModel, CoachError> {
        let size = prompt::size(prompt);
        if size > MAX_PROMPT_BYTES {
            return Err(CoachError::PromptTooLarge(size));
        }
        let model = self.model.ok_or(LlmError::NotConfigured)?;
        model.ready().await?;
        budget::count_request(self.ports, self.user_id, self.settings).await?;
        Ok(model)
    }

    /// Reserves the call's most tokens, calls the model, and settles the reservation with
    /// what the provider counted.
    async fn call(
        &self,
        model: &dyn LanguageModel,
        prompt: &super::llm::Prompt,
    ) -> Result<Completion, CoachError> {
        let reservation = budget::reserve(
            self.ports,
            self.user_id,
            self.settings,
            budget::most_tokens(prompt),
        )
        .await
        .map_err(|e| match e {
            budget::BudgetError::Driver(limit) => CoachError::Limit(limit),
            budget::BudgetError::Service(limited) => CoachError::ServiceSpent(limited),
        })?;
        let started = Instant::now();
        let outcome = model.complete(prompt).await;
        let metrics = paddock_platform::metrics::global();
        metrics.ai_latency.observe(started.elapsed().as_secs_f64());
        let label = match &outcome {
            Ok(_) => "ok",
            Err(LlmError::NotConfigured) => "not_configured",
            Err(LlmError::Rejected { .. }) => "rejected",
            Err(LlmError::Busy { .. }) => "busy",
            Err(LlmError::Failed { .. } | LlmError::Upstream(_)) => "upstream_error",
            Err(LlmError::Timeout) => "timeout",
        };
        metrics.ai_calls.with_label_values(&[label]).inc();
        let spent = match &outcome {
            Ok(completion) => completion.input_tokens + completion.output_tokens,
            // Counted as the provider may have counted it, all of it, or none.
            Err(e) if e.may_have_counted_tokens() => reservation.tokens(),
            Err(_) => 0,
        };
        if let Err(e) = reservation.settle(self.ports, spent).await {
            // Left reserved until its day ends: fewer tokens spent, never more.
            tracing::warn!(error = %e, "could not settle reserved coaching tokens");
        }
        let completion = outcome?;
        metrics
            .ai_tokens
            .with_label_values(&["input"])
            .inc_by(completion.input_tokens);
        metrics
            .ai_tokens
            .with_label_values(&["output"])
            .inc_by(completion.output_tokens);
        Ok(completion)
    }
}

fn record_cache(result: &str) {
    paddock_platform::metrics::global()
        .ai_cache
        .with_label_values(&[result])
        .inc();
}
