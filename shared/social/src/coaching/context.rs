//! What a coaching request carries, parsed: the session context and, for chat, the
//! conversation. Every rule names its field; unknown fields never get here.

use serde::Serialize;
use serde_json::{Map, Value};

use super::llm::{Message, Role};
use paddock_kernel::problems::Problems;

/// Most insights in one request.
pub const MAX_INSIGHTS: usize = 50;
/// Most segment deltas in one request.
pub const MAX_SEGMENT_DELTAS: usize = 200;
/// Largest insight, as compact JSON.
pub const MAX_INSIGHT_BYTES: usize = 2_000;
/// Largest segment delta, as compact JSON.
pub const MAX_SEGMENT_DELTA_BYTES: usize = 500;
/// Most messages in a chat history.
pub const MAX_MESSAGES: usize = 40;
/// Longest message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 8_000;
/// Longest name (game, track, layout, car), in characters.
pub const MAX_NAME_CHARS: usize = 128;
/// Longest lap time accepted, milliseconds (a day).
pub const MAX_LAP_MS: i64 = 86_400_000;

/// The session a driver asks about, as the desktop analyser describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext {
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track.
    pub track_name: String,
    /// The layout (may be empty).
    pub track_layout: String,
    /// The car (may be empty).
    pub vehicle_name: String,
    /// The reference lap, milliseconds.
    pub ref_lap_ms: i64,
    /// The current lap, milliseconds.
    pub cur_lap_ms: i64,
    /// The analyser's findings, free-form objects.
    pub insights: Vec<Map<String, Value>>,
    /// Time gained or lost per segment or corner, free-form objects.
    pub segment_deltas: Vec<Map<String, Value>>,
}

/// The context fields as sent.
#[derive(Debug, Default)]
pub struct ContextFields {
    /// `gameId`.
    pub game_id: Option<String>,
    /// `trackName`.
    pub track_name: Option<String>,
    /// `trackLayout`.
    pub track_layout: Option<String>,
    /// `vehicleName`.
    pub vehicle_name: Option<String>,
    /// `refLapMs`.
    pub ref_lap_ms: Option<i64>,
    /// `curLapMs`.
    pub cur_lap_ms: Option<i64>,
    /// `insights`.
    pub insights: Option<Vec<Value>>,
    /// `segmentDeltas`.
    pub segment_deltas: Option<Vec<Value>>,
}

/// A message as sent.
#[derive(Debug, Default)]
pub struct MessageFields {
    /// `role`.
    pub role: Option<String>,
    /// `content`.
    pub content: Option<String>,
}

fn name(raw: String, required: bool) -> Result<String, String> {
    let text = raw.trim();
    if required && text.is_empty() {
        return Err("must not be empty".into());
    }
    if raw.chars().count() > MAX_NAME_CHARS {
        return Err(format!("must be at most {MAX_NAME_CHARS} characters"));
    }
    if text.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(text.to_owned())
}

fn lap_ms(ms: i64) -> Result<i64, String> {
    if (1..=MAX_LAP_MS).contains(&ms) {
        Ok(ms)
    } else {
        Err(format!(
            "must be a positive whole number of milliseconds, at most {MAX_LAP_MS}"
        ))
    }
}

/// A list of free-form objects: at most `max` of them, each at most `max_bytes` as JSON.
fn objects(
    p: &mut Problems,
    field: &str,
    items: Option<Vec<Value>>,
    max: usize,
    max_bytes: usize,
) -> Vec<Map<String, Value>> {
    let items = items.unwrap_or_default();
    if items.len() > max {
        p.add(field, &format!("must hold at most {max} entries"));
        return Vec::new();
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Value::Object(map) => {
                let size = Value::Object(map.clone()).to_string().len();
                if size > max_bytes {
                    p.add(
                        &format!("{field}[{i}]"),
                        &format!("must be at most {max_bytes} bytes as JSON"),
                    );
                } else {
                    out.push(map);
                }
            }
            _ => p.add(&format!("{field}[{i}]"), "must be an object"),
        }
    }
    out
}

impl SessionContext {
    /// Parses the context fields, recording every problem in `p`.
    pub fn parse(p: &mut Problems, fields: ContextFields) -> Option<Self> {
        let game_id = p.required("gameId", fields.game_id, |v| name(v, true));
        let track_name = p.required("trackName", fields.track_name, |v| name(v, true));
        let track_layout = p.check(
            "trackLayout",
            name(fields.track_layout.unwrap_or_default(), false),
        );
        let vehicle_name = p.check(
            "vehicleName",
            name(fields.vehicle_name.unwrap_or_default(), false),
        );
        let ref_lap_ms = p.required("refLapMs", fields.ref_lap_ms, lap_ms);
        let cur_lap_ms = p.required("curLapMs", fields.cur_lap_ms, lap_ms);
        let insights = objects(
            p,
            "insights",
            fields.insights,
            MAX_INSIGHTS,
            MAX_INSIGHT_BYTES,
        );
        let segment_deltas = objects(
            p,
            "segmentDeltas",
            fields.segment_deltas,
            MAX_SEGMENT_DELTAS,
            MAX_SEGMENT_DELTA_BYTES,
        );
        Some(Self {
            game_id: game_id?,
            track_name: track_name?,
            track_layout: track_layout?,
            vehicle_name: vehicle_name?,
            ref_lap_ms: ref_lap_ms?,
            cur_lap_ms: cur_lap_ms?,
            insights,
            segment_deltas,
        })
    }
}

/// Parses a chat history: 1 to 40 messages, roles `user` or `assistant`, starting and ending
/// with the driver, each 1 to 8,000 characters.
pub fn parse_messages(
    p: &mut Problems,
    messages: Option<Vec<MessageFields>>,
) -> Option<Vec<Message>> {
    let Some(messages) = messages else {
        p.add("messages", "is required");
        return None;
    };
    if messages.is_empty() || messages.len() > MAX_MESSAGES {
        p.add(
            "messages",
            &format!("must hold 1 to {MAX_MESSAGES} messages"),
        );
        return None;
    }
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.into_iter().enumerate() {
        let role = p.required(&format!("messages[{i}].role"), m.role, |r| {
            match r.as_str() {
                "user" => Ok(Role::User),
                "assistant" => Ok(Role::Assistant),
                _ => Err("must be user or assistant".into()),
            }
        });
        let content = p.required(&format!("messages[{i}].content"), m.content, |c| {
            if c.trim().is_empty() {
                Err("must not be empty".into())
            } else if c.chars().count() > MAX_MESSAGE_CHARS {
                Err(format!("must be at most {MAX_MESSAGE_CHARS} characters"))
            } else {
                Ok(c.trim().to_owned())
            }
        });
        if let (Some(role), Some(content)) = (role, content) {
            out.push(Message { role, content });
        }
    }
    let first = out.first().map(|m| m.role);
    let last = out.last().map(|m| m.role);
    if first.is_some_and(|r| r != Role::User) || last.is_some_and(|r| r != Role::User) {
        p.add("messages", "must start and end with a user message");
        return None;
    }
    Some(out)
}
