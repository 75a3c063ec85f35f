//! The prompt: the fixed system prompt, and the session context rendered compactly in front of
//! the driver's first message.

use std::fmt::Write;

use super::context::SessionContext;
use super::llm::{Message, Prompt, Role};
use paddock_boards::leaderboards::format_lap_time;

/// The system prompt, the same for every call (`system_prompt.txt`).
pub const SYSTEM_PROMPT: &str = include_str!("system_prompt.txt");
/// The most tokens a call may generate.
pub const MAX_OUTPUT_TOKENS: u32 = 1024;
/// The largest prompt (system prompt, context and messages) a request may build, in bytes.
pub const MAX_PROMPT_BYTES: usize = 32 * 1024;
/// What a one-shot insights request asks.
pub const INSIGHTS_QUESTION: &str =
    "Where am I losing time on this lap against the reference, and what should I change first?";

/// The context as compact text.
pub fn render(context: &SessionContext) -> String {
    let mut out = String::from("<session>\n");
    let mut session = vec![context.game_id.as_str(), context.track_name.as_str()];
    if !context.track_layout.is_empty() {
        session.push(context.track_layout.as_str());
    }
    if !context.vehicle_name.is_empty() {
        session.push(context.vehicle_name.as_str());
    }
    let _ = writeln!(out, "{}", session.join(" | "));
    let delta = context.cur_lap_ms - context.ref_lap_ms;
    let _ = writeln!(
        out,
        "reference lap {} ({} ms), current lap {} ({} ms), delta {:+.3} s",
        format_lap_time(context.ref_lap_ms),
        context.ref_lap_ms,
        format_lap_time(context.cur_lap_ms),
        context.cur_lap_ms,
        delta as f64 / 1000.0
    );
    for (title, items) in [
        ("insights", &context.insights),
        ("segment deltas", &context.segment_deltas),
    ] {
        if items.is_empty() {
            let _ = writeln!(out, "{title}: none");
            continue;
        }
        let _ = writeln!(out, "{title} ({}):", items.len());
        for item in items {
            let _ = writeln!(out, "- {}", serde_json::Value::Object(item.clone()));
        }
    }
    out.push_str("</session>");
    out
}

/// The prompt of a conversation about `context`: the context goes in front of the first
/// message (always the driver's).
pub fn build(context: &SessionContext, mut messages: Vec<Message>) -> Prompt {
    let rendered = render(context);
    match messages.first_mut() {
        Some(first) if first.role == Role::User => {
            first.content = format!("{rendered}\n\n{}", first.content);
        }
        _ => messages.insert(
            0,
            Message {
                role: Role::User,
                content: rendered,
            },
        ),
    }
    Prompt {
        system: SYSTEM_PROMPT.to_owned(),
        messages,
        max_tokens: MAX_OUTPUT_TOKENS,
    }
}

/// The prompt's size in bytes (what [`MAX_PROMPT_BYTES`] bounds).
pub fn size(prompt: &Prompt) -> usize {
    prompt.system.len()
        + prompt
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> SessionContext {
        SessionContext {
            game_id: "acc".into(),
            track_name: "Spa-Francorchamps".into(),
            track_layout: "GP".into(),
            vehicle_name: "Porsche 992 GT3 R".into(),
            ref_lap_ms: 138_456,
            cur_lap_ms: 139_102,
            insights: vec![
                json!({"corner": "T1", "finding": "late braking"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ],
            segment_deltas: Vec::new(),
        }
    }

    #[test]
    fn the_context_is_compact_and_goes_before_the_first_message() {
        let text = render(&context());
        assert_eq!(
            text,
            "<session>\nacc | Spa-Francorchamps | GP | Porsche 992 GT3 R\n\
             reference lap 2:18.456 (138456 ms), current lap 2:19.102 (139102 ms), delta +0.646 s\n\
             insights (1):\n- {\"corner\":\"T1\",\"finding\":\"late braking\"}\n\
             segment deltas: none\n</session>"
        );
        let prompt = build(
            &context(),
            vec![Message {
                role: Role::User,
                content: "Why?".into(),
            }],
        );
        assert_eq!(prompt.messages.len(), 1);
        assert!(prompt.messages[0].content.ends_with("</session>\n\nWhy?"));
        assert_eq!(prompt.max_tokens, 1024);
        assert!(prompt.system.contains("sim-racing performance analyst"));
    }
}
