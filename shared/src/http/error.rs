//! The error type of every handler: what the client is told, kept apart from what is logged.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use std::sync::Arc;

use super::envelope::Envelope;
pub use super::error_cause::ErrorCause;
use crate::identity::passwords::PasswordError;
use crate::identity::rate_limits::{LimitError, RateLimited};
use crate::identity::signing_keys::SigningKeyError;
use crate::ports::{BlobError, QueueError, SecretError, StoreError};
use crate::problems::FieldProblems;

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

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) => Self::Backend {
                message: "storage is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            StoreError::Conflict => Self::Conflict("a concurrent change won, please retry".into()),
            StoreError::InvalidCursor => {
                Self::invalid("cursor", "is not a cursor this list returned")
            }
            other => Self::Internal(anyhow::Error::new(other)),
        }
    }
}

impl From<BlobError> for ApiError {
    fn from(e: BlobError) -> Self {
        match e {
            BlobError::Unavailable(_) => Self::Backend {
                message: "file storage is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            BlobError::InvalidKey(_) => Self::Internal(anyhow::Error::new(e)),
        }
    }
}

impl From<QueueError> for ApiError {
    fn from(e: QueueError) -> Self {
        match e {
            QueueError::Unavailable(_) => Self::Backend {
                message: "the service is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            QueueError::TooLarge(_) => Self::Internal(anyhow::Error::new(e)),
        }
    }
}

impl From<SecretError> for ApiError {
    fn from(e: SecretError) -> Self {
        match e {
            SecretError::Unavailable(_) => Self::Backend {
                message: "the service is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            SecretError::Malformed { .. } => Self::Internal(anyhow::Error::new(e)),
        }
    }
}

impl From<RateLimited> for ApiError {
    fn from(e: RateLimited) -> Self {
        Self::TooManyRequests {
            message: e.to_string(),
            retry_after_secs: e.retry_after_secs,
        }
    }
}

impl From<LimitError> for ApiError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::Limited(l) => l.into(),
            LimitError::Store(s) => s.into(),
        }
    }
}

impl From<PasswordError> for ApiError {
    fn from(e: PasswordError) -> Self {
        match e {
            PasswordError::Busy { retry_after_secs } => Self::Busy {
                message: "the server is busy signing other drivers in, please retry".into(),
                retry_after_secs,
            },
            PasswordError::Failed(cause) => Self::Internal(anyhow::anyhow!(cause)),
        }
    }
}

impl From<SigningKeyError> for ApiError {
    fn from(e: SigningKeyError) -> Self {
        match e {
            SigningKeyError::Secrets(s) => s.into(),
            other => Self::Backend {
                message: other.to_string(),
                cause: anyhow::Error::new(other),
            },
        }
    }
}

impl From<FieldProblems> for ApiError {
    fn from(e: FieldProblems) -> Self {
        Self::BadRequest(e.to_string())
    }
}
