//! The response envelope as an axum answer.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Serialize;

pub use crate::envelope::Envelope;

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
