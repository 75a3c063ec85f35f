//! The `Idempotency-Key` request header of the creating requests that take one.

use axum::extract::FromRequestParts;
use http::request::Parts;
use paddock_core::request_keys::{HEADER, RequestKey};

use super::error::ApiError;

/// The request's `Idempotency-Key`, when it sent one; a malformed one is a 400 naming the
/// header and the rule, never ignored (the client would believe its retries safe).
#[derive(Debug, Clone, Default)]
pub struct IdempotencyKey(pub Option<RequestKey>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let mut values = parts.headers.get_all(HEADER).iter();
        let Some(value) = values.next() else {
            return Ok(Self(None));
        };
        if values.next().is_some() {
            return Err(ApiError::BadRequest(format!(
                "{HEADER}: send the header once"
            )));
        }
        let text = value.to_str().unwrap_or("\u{fffd}");
        RequestKey::parse(text)
            .map(|k| Self(Some(k)))
            .map_err(ApiError::BadRequest)
    }
}

/// The header as the API description gives it, for the operations that take it.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct IdempotencyKeyHeader {
    /// Optional. Names this request so that sending it again (its answer lost, or a 503 or
    /// 504) makes one resource: within 24 hours the same key with the same request answers
    /// what the first made; with another request it is a 422. A UUID will do.
    #[param(
        rename = "Idempotency-Key",
        pattern = "^[A-Za-z0-9._:-]{1,100}$",
        min_length = 1,
        max_length = 100
    )]
    idempotency_key: Option<String>,
}
