//! `/v1/ai`: one-shot insights and multi-turn chat about a lap, answered by the configured
//! language model.

use crate::routes::registry::{Routes, operations};
use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::envelopes::envelope;
use crate::http::auth_user::{Caller, scope};
use crate::http::{ApiError, ApiJson, ok};
use crate::state::AppState;
use paddock_core::coaching::coach::Coach;
use paddock_core::coaching::context::{
    ContextFields, MessageFields, SessionContext, parse_messages,
};
use paddock_core::problems::{FieldProblems, Problems};

/// The AI routes.
pub fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(insights))
        .operations(operations!(chat))
}

/// `AiInsightRequestDto`: the session context the desktop analyser sends.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AiInsightRequest {
    /// The game, e.g. `acc`: 1 to 128 characters, trimmed.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub game_id: Option<String>,
    /// The track: 1 to 128 characters, trimmed.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub track_name: Option<String>,
    /// The layout; may be empty.
    #[schema(value_type = Option<String>, max_length = 128, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub track_layout: Option<String>,
    /// The car; may be empty.
    #[schema(value_type = Option<String>, max_length = 128, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub vehicle_name: Option<String>,
    /// The reference lap, milliseconds.
    #[schema(required = true, value_type = i64, minimum = 1, maximum = 86_400_000)]
    pub ref_lap_ms: Option<i64>,
    /// The current lap, milliseconds.
    #[schema(required = true, value_type = i64, minimum = 1, maximum = 86_400_000)]
    pub cur_lap_ms: Option<i64>,
    /// The analyser's findings: free-form objects, at most 50, each at most 2,000 bytes.
    #[schema(value_type = Option<Vec<Object>>, max_items = 50)]
    pub insights: Option<Vec<Value>>,
    /// Time gained or lost per segment: free-form objects, at most 200, each at most 500 bytes.
    #[schema(value_type = Option<Vec<Object>>, max_items = 200)]
    pub segment_deltas: Option<Vec<Value>>,
}

/// One message of a chat history.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AiChatMessage {
    /// `user` or `assistant`.
    #[schema(required = true, value_type = String, pattern = "^(user|assistant)$")]
    pub role: Option<String>,
    /// 1 to 8,000 characters, not blank.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 8000, pattern = "\\S")]
    pub content: Option<String>,
}

/// `AiChatRequestDto`: the session context and the whole conversation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AiChatRequest {
    /// The session context.
    #[serde(flatten)]
    pub context: AiInsightRequest,
    /// The whole history, 1 to 40 messages, starting and ending with the driver's.
    #[schema(required = true, value_type = Vec<AiChatMessage>, min_items = 1, max_items = 40)]
    pub messages: Option<Vec<AiChatMessage>>,
}

impl AiInsightRequest {
    fn fields(self) -> ContextFields {
        ContextFields {
            game_id: self.game_id,
            track_name: self.track_name,
            track_layout: self.track_layout,
            vehicle_name: self.vehicle_name,
            ref_lap_ms: self.ref_lap_ms,
            cur_lap_ms: self.cur_lap_ms,
            insights: self.insights,
            segment_deltas: self.segment_deltas,
        }
    }
}

impl TryFrom<AiInsightRequest> for SessionContext {
    type Error = FieldProblems;

    fn try_from(body: AiInsightRequest) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let context = SessionContext::parse(&mut p, body.fields());
        p.into_result(context)
    }
}

/// A chat request whose every field parsed.
struct ChatForm {
    context: SessionContext,
    messages: Vec<paddock_core::coaching::llm::Message>,
}

impl TryFrom<AiChatRequest> for ChatForm {
    type Error = FieldProblems;

    fn try_from(body: AiChatRequest) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let context = SessionContext::parse(&mut p, body.context.fields());
        let messages = body.messages.map(|list| {
            list.into_iter()
                .map(|m| MessageFields {
                    role: m.role,
                    content: m.content,
                })
                .collect()
        });
        let messages = parse_messages(&mut p, messages);
        let form = context
            .zip(messages)
            .map(|(context, messages)| Self { context, messages });
        p.into_result(form)
    }
}

fn coach<'a>(state: &'a AppState, user: &'a Caller<scope::SignIn>) -> Coach<'a> {
    Coach {
        ports: &state.ports,
        model: state.coach.as_deref(),
        settings: &state.settings.ai,
        user_id: user.user_id(),
    }
}

/// One-shot coaching on a lap against its reference. An identical request within 24 hours is
/// answered from the stored answer (`cached: true`).
#[utoipa::path(post, path = "/v1/ai/insights", operation_id = "getLapInsights", tag = "ai", security(("bearer" = [])),
    request_body(content = AiInsightRequest, description = "AiInsightRequestDto, camelCase or PascalCase; unknown fields are ignored"),
    responses((status = 200, description = "The coach's answer", body = CoachAnswerEnvelope),
              (status = 400, description = "Every problem, by field; or a prompt over 32 KB"),
              (status = 401, description = "No valid token"),
              (status = 429, description = "The caller's hourly requests are spent, or the caller's or the service's daily tokens have no room left for the call's most (Retry-After)"),
              (status = 502, description = "The AI provider failed or refused this server's credentials"),
              (status = 503, description = "AI coaching is not configured, or the provider is busy (Retry-After)"),
              (status = 504, description = "The AI provider did not answer in time")))]
pub(crate) async fn insights(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<AiInsightRequest>,
) -> Result<Response, ApiError> {
    let context = SessionContext::try_from(body)?;
    Ok(ok(coach(&state, &user).insights(context).await?))
}

/// A chat turn: the session context and the whole history; the answer is the coach's next
/// message.
#[utoipa::path(post, path = "/v1/ai/chat", operation_id = "chatAboutLap", tag = "ai", security(("bearer" = [])),
    request_body(content = AiChatRequest, description = "AiChatRequestDto, camelCase or PascalCase; unknown fields are ignored"),
    responses((status = 200, description = "The coach's answer", body = CoachAnswerEnvelope),
              (status = 400, description = "Every problem, by field; or a prompt over 32 KB"),
              (status = 401, description = "No valid token"),
              (status = 429, description = "The caller's hourly requests are spent, or the caller's or the service's daily tokens have no room left for the call's most (Retry-After)"),
              (status = 502, description = "The AI provider failed or refused this server's credentials"),
              (status = 503, description = "AI coaching is not configured, or the provider is busy (Retry-After)"),
              (status = 504, description = "The AI provider did not answer in time")))]
pub(crate) async fn chat(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<AiChatRequest>,
) -> Result<Response, ApiError> {
    let form = ChatForm::try_from(body)?;
    Ok(ok(coach(&state, &user)
        .chat(form.context, form.messages)
        .await?))
}

envelope!(
    /// A coaching answer.
    CoachAnswerEnvelope => paddock_core::coaching::coach::CoachAnswer
);
