//! The error type of every handler: what the client is told, kept apart from what is logged.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use std::sync::Arc;

use super::envelope::Envelope;
pub use super::error_cause::ErrorCause;

/// `Retry-After` of a 503 for a backing service that failed after the SDK's retries.
const BACKEND_RETRY_AFTER_SECS: u64 = 1;

/// An error answer. Client-facing variants carry the message the client sees; `Internal`
/// carries the cause, which is logged with the request id and never sent.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed or a field breaks a rule (the message names them).
    #[error("{0}")]
    BadRequest(String),
    /// 401: missing, invalid, expired or revoked credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: authenticated but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such resource (or not the caller's).
    #[error("{0}")]
    NotFound(String),
    /// 405.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 409: the resource's state forbids the change.
    #[error("{0}")]
    Conflict(String),
    /// 413.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 415.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422: well-formed but refused by a business rule.
    #[error("{0}")]
    Unprocessable(String),
    /// 429 with `Retry-After` seconds.
    #[error("{message}")]
    TooManyRequests {
        /// What the client is told.
        message: String,
        /// Seconds until a retry may succeed (`Retry-After`).
        retry_after_secs: u64,
    },
    /// 503: a feature is not configured (the message says which).
    #[error("{0}")]
    Unavailable(String),
    /// 503 with `Retry-After`: a backing service failed; `message` is for the client, `cause`
    /// for the log.
    #[error("{message}")]
    Backend {
        /// What the client is told.
        message: String,
        /// The server-side cause (logged with the request id, never sent).
        #[source]
        cause: anyhow::Error,
    },
    /// 503 with `Retry-After` seconds: the server is saturated for now.
    #[error("{message}")]
    Busy {
        /// What the client is told.
        message: String,
        /// Seconds until a retry may succeed (`Retry-After`).
        retry_after_secs: u64,
    },
    /// 502: an upstream service failed or answered badly; `cause` is logged, never sent.
    #[error("{message}")]
    BadGateway {
        /// What the client is told.
        message: String,
        /// The server-side cause.
        #[source]
        cause: anyhow::Error,
    },
    /// 504: an upstream service did not answer in time.
    #[error("{0}")]
    GatewayTimeout(String),
    /// 500: a bug or an unexpected failure; details go to the log only.
    #[error("internal error: {0:#}")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// A 400 naming `field` and the `rule` it breaks.
    pub fn invalid(field: &str, rule: &str) -> Self {
        Self::BadRequest(format!("{field}: {rule}"))
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) | Self::Backend { .. } | Self::Busy { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::BadGateway { .. } => StatusCode::BAD_GATEWAY,
            Self::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = match &self {
            Self::TooManyRequests {
                retry_after_secs, ..
            }
            | Self::Busy {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            // The SDK has already retried the call; a second later the fault has usually passed.
            Self::Backend { .. } => Some(BACKEND_RETRY_AFTER_SECS),
            _ => None,
        };
        let (message, cause) = match self {
            Self::Internal(cause) => ("internal server error".to_owned(), Some(cause)),
            Self::Backend { message, cause } | Self::BadGateway { message, cause } => {
                (message, Some(cause))
            }
            other => (other.to_string(), None),
        };
        let mut response = (status, Envelope::error(message)).into_response();
        if let Some(cause) = cause {
            response
                .extensions_mut()
                .insert(ErrorCause(Arc::new(cause)));
        }
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        response
    }
}
