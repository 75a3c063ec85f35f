//! Extractors whose rejections use the envelope and name the offending field.

use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use camel_keys::CamelCase;

use super::error::ApiError;

/// A JSON body: the one reader of request bodies. Accepts camelCase and PascalCase field names
/// (the desktop client is a .NET program whose serializer writes PascalCase) by the rule of
/// `paddock_camel_keys`, so `T` is declared with camelCase names; a `serde_json::Value`
/// arrives with camelCase keys at every depth.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

/// `application/json` or `application/<anything>+json`, with any parameters (as axum's `Json`
/// reads the media type).
fn is_json(headers: &HeaderMap) -> bool {
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    media_type
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| {
            m.type_() == "application"
                && (m.subtype() == "json" || m.suffix().is_some_and(|s| s == "json"))
        })
}

/// Reads a request's body bytes after checking its content type.
async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    if !is_json(req.headers()) {
        return Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ));
    }
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge("request body is too large".into())
        } else {
            ApiError::BadRequest(format!(
                "could not read the request body: {}",
                rejection.body_text()
            ))
        }
    })
}

/// Deserializes `T` straight from JSON bytes, reading PascalCase names as camelCase on the
/// way (no intermediate tree), and names the path of a bad field.
pub fn from_json_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match stream(bytes) {
        Err(e) if e.to_string().contains("duplicate field") => {
            // A field sent in PascalCase before its camelCase spelling: a request type takes a
            // field once, so the body is read as a tree first, where the camelCase value
            // replaces the other (the one rule of `paddock_camel_keys`).
            let mut de = serde_json::Deserializer::from_slice(bytes);
            let tree = serde_json::Value::deserialize(CamelCase(&mut de)).map_err(|_| e)?;
            de.end()
                .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
            serde_path_to_error::deserialize(tree)
                .map_err(|e| refusal(&e.path().to_string(), e.into_inner()))
        }
        read => read,
    }
}

/// The 400 of a body that could not be read as `T`.
fn refusal(path: &str, inner: serde_json::Error) -> ApiError {
    match inner.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            ApiError::BadRequest(format!("malformed JSON: {inner}"))
        }
        Category::Data if path == "." => ApiError::BadRequest(inner.to_string()),
        Category::Data => ApiError::BadRequest(format!("{path}: {inner}")),
    }
}

/// Deserializes `T` as the bytes stream in.
fn stream<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(CamelCase(&mut de))
        .map_err(|e| refusal(&e.path().to_string(), e.into_inner()))?;
    // Anything after the value is malformed too.
    de.end()
        .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
    Ok(value)
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = json_bytes(req, state).await?;
        from_json_slice(&bytes).map(ApiJson)
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
    from_json_slice(bytes)
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
        // The parameters are flat, so serde's own message names the parameter (a path
        // tracker would add a copy of every name and tell nothing more).
        T::deserialize(de)
            .map(ApiQuery)
            .map_err(|e| ApiError::BadRequest(format!("query: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Body {
        game_id: String,
    }

    #[test]
    fn syntax_errors_and_field_errors_are_told_apart() {
        let err = from_json_slice::<Body>(br#"{"GameId": "acc""#).unwrap_err();
        assert!(err.to_string().starts_with("malformed JSON"), "{err}");
        let err = from_json_slice::<Body>(br#"{"GameId": 5}"#).unwrap_err();
        assert!(err.to_string().starts_with("gameId: invalid type"), "{err}");
        let err = from_json_slice::<Body>(br#"{"gameId": "a"} trailing"#).unwrap_err();
        assert!(err.to_string().starts_with("malformed JSON"), "{err}");
        assert_eq!(
            from_json_slice::<Body>(br#"{"GameId": "acc"}"#)
                .unwrap()
                .game_id,
            "acc"
        );
    }

    #[test]
    fn of_a_field_sent_in_both_spellings_the_camel_case_one_is_read() {
        for both in [
            br#"{"GameId": "pascal", "gameId": "camel"}"#.as_slice(),
            br#"{"gameId": "camel", "GameId": "pascal"}"#.as_slice(),
        ] {
            assert_eq!(from_json_slice::<Body>(both).unwrap().game_id, "camel");
        }
        let err = from_json_slice::<Body>(br#"{"gameId": "a", "gameId": "b"}"#).unwrap_err();
        assert!(
            err.to_string().contains("duplicate field `gameId`"),
            "{err}"
        );
    }

    #[test]
    fn json_and_json_suffixed_media_types_are_read_with_any_parameters() {
        let json = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, http::HeaderValue::from_static(value));
            is_json(&headers)
        };
        for accepted in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
        ] {
            assert!(json(accepted), "{accepted}");
        }
        for refused in [
            "text/json",
            "application/jsonx",
            "text/plain",
            "application/json x",
        ] {
            assert!(!json(refused), "{refused}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}
