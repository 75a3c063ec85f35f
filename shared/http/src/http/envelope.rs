//! The response envelope as an axum answer.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use std::sync::Arc;

use super::error_cause::ErrorCause;

pub use crate::envelope::Envelope;

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        // Most answers are a few hundred bytes: one buffer of that size, handed to the body
        // as it is, instead of one grown from 128 bytes (as `Json` does).
        let mut body = Vec::with_capacity(512);
        match serde_json::to_writer(&mut body, &self) {
            Ok(()) => json_bytes(body),
            Err(e) => {
                let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
                response.extensions_mut().insert(ErrorCause(Arc::new(
                    anyhow::Error::new(e).context("serialising the answer"),
                )));
                response
            }
        }
    }
}

/// A 200 answer of JSON that is already bytes (a serialised envelope, a cached page, a
/// constant).
pub fn json_bytes(body: impl Into<Body>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.into(),
    )
        .into_response()
}

/// A 200 answer with `data` in the envelope.
pub fn ok<T: Serialize>(data: T) -> Response {
    Envelope::ok(data).into_response()
}

/// An answer with `status` and `data` in the envelope.
pub fn with_status<T: Serialize>(status: StatusCode, data: T) -> Response {
    (status, Envelope::ok(data)).into_response()
}
