//! The envelope every API answer is wrapped in: the wire shape only, so that code which
//! renders answers ahead of time (the leaderboard page cache) needs no HTTP types.

use serde::Serialize;
use utoipa::ToSchema;

/// `{"success": bool, "data": payload|null, "error": string|null}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T> {
    /// True when the request succeeded.
    pub success: bool,
    /// The payload; null on error.
    pub data: Option<T>,
    /// The error message; null on success.
    pub error: Option<String>,
}

impl<T: Serialize> Envelope<T> {
    /// A successful envelope around `data`.
    pub fn ok(data: T) -> Self {
        Self {
            success: true,
            data: Some(data),
            error: None,
        }
    }
}

impl Envelope<()> {
    /// A failed envelope with `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            success: false,
            data: None,
            error: Some(message.into()),
        }
    }
}
