//! The response envelope every API answer is wrapped in.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
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

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        Json(self).into_response()
    }
}

/// A 200 answer with `data` in the envelope.
pub fn ok<T: Serialize>(data: T) -> Response {
    Envelope::ok(data).into_response()
}

/// An answer with `status` and `data` in the envelope.
pub fn with_status<T: Serialize>(status: StatusCode, data: T) -> Response {
    (status, Envelope::ok(data)).into_response()
}
