//! The server-side cause of an error answer, kept apart from what the client is told.

use std::sync::Arc;

/// The server-side cause of an error answer, carried to the request middleware as a response
/// extension so that it is logged once, with its whole `source()` chain and the request id,
/// in the request's own log line. The client sees only the answer's message.
#[derive(Debug, Clone)]
pub struct ErrorCause(pub Arc<anyhow::Error>);

impl ErrorCause {
    /// The cause and each of its sources, outermost first, joined by `: `.
    pub fn chain(&self) -> String {
        format!("{:#}", self.0)
    }
}
