//! The trace context that follows a request across the asynchronous hop: an event records
//! the X-Ray trace header of the invocation that caused it, the relay hands it to SQS as the
//! message's `AWSTraceHeader` (so X-Ray links the consumer's invocation to the request), and
//! the relay and consumers log each event under its id and that trace.

use serde::Deserialize;
use tracing::Span;
use uuid::Uuid;

/// The variable the Lambda runtime sets to the current invocation's trace header.
const TRACE_VARIABLE: &str = "_X_AMZN_TRACE_ID";

/// The longest trace header kept (X-Ray's are about 100 characters).
const MAX_TRACE_LEN: usize = 256;

/// A trace header as it may be passed on: short, printable ASCII, no quotes.
fn plausible(header: &str) -> bool {
    !header.is_empty()
        && header.len() <= MAX_TRACE_LEN
        && header
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

/// The trace header of the current invocation, in Lambda (the runtime sets it per
/// invocation, one invocation at a time); `None` locally.
pub fn current() -> Option<String> {
    std::env::var(TRACE_VARIABLE).ok().filter(|t| plausible(t))
}

/// What the relay and the consumers read of a queued body before handling it: the event's id
/// and trace (an unreadable body has neither).
#[derive(Debug, Default, Deserialize)]
pub struct EventHeader {
    /// The event id.
    pub id: Option<Uuid>,
    /// The trace header of the request that caused the event.
    pub trace: Option<String>,
}

impl EventHeader {
    /// The header of a queued body (empty when the body is not a JSON object).
    pub fn of(body: &str) -> Self {
        let mut header: Self = serde_json::from_str(body).unwrap_or_default();
        header.trace = header.trace.filter(|t| plausible(t));
        header
    }

    /// The span one event is handled in, so every log line of it names the event id and the
    /// trace of the request behind it.
    pub fn span(&self, consumer: &str, message_id: &str) -> Span {
        // At the error level, so the span exists whatever level the log filter lets through
        // (an `info` span is filtered out under `RUST_LOG=warn`, and its warnings lose it).
        tracing::error_span!(
            "event",
            consumer,
            message_id,
            event_id = self.id.map(|id| id.to_string()).unwrap_or_default(),
            trace_id = self.trace.as_deref().unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_names_its_event_and_trace() {
        let id = Uuid::now_v7();
        let header = EventHeader::of(&format!(
            r#"{{"id":"{id}","kind":"x","trace":"Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"}}"#
        ));
        assert_eq!(header.id, Some(id));
        assert_eq!(
            header.trace.as_deref(),
            Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
        );
        let odd = EventHeader::of(r#"{"id":"nope","trace":"a b"}"#);
        assert_eq!((odd.id, odd.trace), (None, None));
        let unreadable = EventHeader::of("{");
        assert_eq!((unreadable.id, unreadable.trace), (None, None));
    }
}
