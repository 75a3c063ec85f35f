//! Extractors whose rejections use the envelope and name the offending field.

use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ApiError;

/// A JSON body. Accepts camelCase and PascalCase field names (the desktop client is a .NET
/// program whose serializer writes PascalCase), so `T` is declared with camelCase names.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime_type::Essence>().ok())
        .is_some_and(|m| m.is_json())
}

/// Just enough media-type parsing to accept `application/json; charset=utf-8` and `+json`.
mod mime_type {
    pub(super) struct Essence(String);

    impl std::str::FromStr for Essence {
        type Err = ();
        fn from_str(s: &str) -> Result<Self, ()> {
            let essence = s
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            Ok(Self(essence))
        }
    }

    impl Essence {
        pub(super) fn is_json(&self) -> bool {
            self.0 == "application/json"
                || (self.0.starts_with("application/") && self.0.ends_with("+json"))
        }
    }
}

/// Rewrites object keys from PascalCase to camelCase, recursively.
pub fn camel_case_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let mut chars = k.chars();
                    let key = match chars.next() {
                        Some(c) if c.is_ascii_uppercase() => {
                            c.to_ascii_lowercase().to_string() + chars.as_str()
                        }
                        _ => k,
                    };
                    (key, camel_case_keys(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(camel_case_keys).collect()),
        other => other,
    }
}

/// Deserializes `value` into `T`, naming the path of the first bad field.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." {
            ApiError::BadRequest(inner)
        } else {
            ApiError::BadRequest(format!("{path}: {inner}"))
        }
    })
}

/// Reads a request's JSON body as parsed, keys as sent.
async fn json_value<S: Send + Sync>(req: Request, state: &S) -> Result<Value, ApiError> {
    if !is_json(req.headers()) {
        return Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ));
    }
    let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge("request body is too large".into())
        } else {
            ApiError::BadRequest(format!(
                "could not read the request body: {}",
                rejection.body_text()
            ))
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let value = json_value(req, state).await?;
        from_value(camel_case_keys(value)).map(ApiJson)
    }
}

/// A JSON body read by a handler that first did work of its own (auth endpoints check rate
/// limits before parsing): the same checks and messages as [`ApiJson`].
pub fn json_body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, ApiError> {
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
    from_value(camel_case_keys(value))
}

/// A JSON body as parsed, with its keys as the client sent them (the same rejections as
/// [`ApiJson`]). For bodies read field by field that accept both spellings themselves, so
/// the tree is not rebuilt with camelCase keys first.
#[derive(Debug, Clone, Default)]
pub struct JsonBody(pub Value);

impl<S> FromRequest<S> for JsonBody
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        json_value(req, state).await.map(JsonBody)
    }
}

/// Query parameters; a bad parameter answers 400 naming it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(ApiQuery)
            .map_err(|e| ApiError::BadRequest(format!("query: {}", e.into_inner())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pascal_case_keys_become_camel_case_at_every_depth() {
        let v = camel_case_keys(
            json!({"GameId": "x", "Laps": [{"LapTimeMs": 1}], "already": {"X": 1}}),
        );
        assert_eq!(
            v,
            json!({"gameId": "x", "laps": [{"lapTimeMs": 1}], "already": {"x": 1}})
        );
    }
}
