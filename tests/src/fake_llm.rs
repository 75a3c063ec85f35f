//! A fake language-model API on loopback: a real HTTP server speaking the Anthropic Messages
//! API (`POST /v1/messages`) and the OpenAI Chat Completions API (`POST /v1/chat/completions`).
//! It checks every request it receives (a bad one is answered 400 with the reason, which the
//! service reports as an upstream failure), records it, and answers as the test sets.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A normal answer with usage figures.
    Answer,
    /// 401: the key is refused.
    Unauthorized,
    /// 429 with `retry-after: 17`.
    RateLimited,
    /// 529: Anthropic's overloaded.
    Overloaded,
    /// 500.
    Failing,
    /// 200 with a body that is not the API's JSON.
    Garbage,
    /// Never answers (until the client gives up).
    Hang,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its path.
    pub path: String,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its JSON body.
    pub body: Value,
}

#[derive(Clone)]
struct Shared {
    mode: Arc<Mutex<Mode>>,
    received: Arc<Mutex<Vec<Received>>>,
    usage: Arc<Mutex<(u64, u64)>>,
    delay: Arc<Mutex<Duration>>,
}

/// The running fake.
pub struct FakeLlm {
    /// Its base URL (`http://127.0.0.1:<port>`).
    pub url: String,
    shared: Shared,
}

/// The answer text of the fake.
pub const ANSWER: &str = "Brake 10 m later into T1: you lose 0.3 s there.";

impl FakeLlm {
    /// Starts the fake on a free loopback port, answering normally.
    pub async fn start() -> Self {
        let shared = Shared {
            mode: Arc::new(Mutex::new(Mode::Answer)),
            received: Arc::default(),
            usage: Arc::new(Mutex::new((120, 80))),
            delay: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/messages", post(anthropic))
            .route("/v1/chat/completions", post(openai))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, shared }
    }

    /// Answers as `mode` from now on.
    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// Reports `input` and `output` tokens from now on.
    pub fn set_usage(&self, input: u64, output: u64) {
        *self.shared.usage.lock().unwrap() = (input, output);
    }

    /// Takes `delay` over each answer from now on, so that calls made together are in flight
    /// together.
    pub fn set_delay(&self, delay: Duration) {
        *self.shared.delay.lock().unwrap() = delay;
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

/// What every request must hold, whichever API: the model, `max_tokens` 1024, the system
/// prompt, and the session context in front of the first message (which is the driver's).
fn check_common(body: &Value, messages: &[Value]) -> Result<(), String> {
    if body["model"] != "test-model" {
        return Err(format!("model {}", body["model"]));
    }
    if body["max_tokens"] != 1024 {
        return Err(format!("max_tokens {}", body["max_tokens"]));
    }
    let first = messages.first().ok_or("no messages")?;
    if first["role"] != "user"
        || !first["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("<session>")
    {
        return Err("the first message must be the driver's, with the session context".into());
    }
    if messages.last().is_none_or(|m| m["role"] != "user") {
        return Err("the last message must be the driver's".into());
    }
    Ok(())
}

async fn answer(
    shared: &Shared,
    received: Received,
    check: Result<(), String>,
) -> Option<Response> {
    shared.received.lock().unwrap().push(received);
    let delay = *shared.delay.lock().unwrap();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Err(reason) = check {
        return Some((StatusCode::BAD_REQUEST, reason).into_response());
    }
    let mode = *shared.mode.lock().unwrap();
    match mode {
        Mode::Answer => None,
        Mode::Unauthorized => Some(
            (StatusCode::UNAUTHORIZED, Json(json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key SECRET-UPSTREAM-DETAIL"}}))).into_response(),
        ),
        Mode::RateLimited => Some(
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "17")], "slow down SECRET-UPSTREAM-DETAIL").into_response(),
        ),
        Mode::Overloaded => Some(
            (StatusCode::from_u16(529).unwrap(), "overloaded SECRET-UPSTREAM-DETAIL").into_response(),
        ),
        Mode::Failing => Some((StatusCode::INTERNAL_SERVER_ERROR, "boom SECRET-UPSTREAM-DETAIL").into_response()),
        Mode::Garbage => Some((StatusCode::OK, "<html>SECRET-UPSTREAM-DETAIL</html>").into_response()),
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            None
        }
    }
}

async fn anthropic(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let check = check_common(&body, &messages).and_then(|()| {
        if headers.get("x-api-key").is_none_or(|k| k != "test-key") {
            return Err("x-api-key".into());
        }
        if headers.get("anthropic-version").is_none() {
            return Err("anthropic-version".into());
        }
        if !body["system"]
            .as_str()
            .unwrap_or_default()
            .contains("sim-racing performance analyst")
        {
            return Err("system prompt".into());
        }
        Ok(())
    });
    let received = Received {
        path: "/v1/messages".into(),
        headers,
        body,
    };
    if let Some(response) = answer(&shared, received, check).await {
        return response;
    }
    let (input, output) = *shared.usage.lock().unwrap();
    Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": [{"type": "text", "text": ANSWER}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output},
    }))
    .into_response()
}

async fn openai(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let all = body["messages"].as_array().cloned().unwrap_or_default();
    let check = match all.split_first() {
        Some((system, rest))
            if system["role"] == "system"
                && system["content"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("sim-racing performance analyst") =>
        {
            check_common(&body, rest)
        }
        _ => Err("the first message must be the system prompt".into()),
    };
    let received = Received {
        path: "/v1/chat/completions".into(),
        headers,
        body,
    };
    if let Some(response) = answer(&shared, received, check).await {
        return response;
    }
    let (input, output) = *shared.usage.lock().unwrap();
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    }))
    .into_response()
}
