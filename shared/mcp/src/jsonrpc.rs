//! JSON-RPC as the endpoint reads it before the transport: what a body holds (a request, a
//! notification, a response), and the errors it answers with, in the protocol's codes.
//! Kept by hand because `rmcp` answers a body that is not one message in plain text (415),
//! not with the JSON-RPC codes a client reads (-32700, -32600).

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

/// Invalid JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// Not a JSON-RPC message this server takes (a batch among them).
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// What the server could not do (a store failure).
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// A message posted to the endpoint, as far as the endpoint's checks need it.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// A request: its id, its method, and for `tools/call` the tool's name.
    Request {
        /// The request's id, echoed by an error.
        id: Value,
        /// `tools/call`'s `params.name`.
        tool: Option<String>,
    },
    /// A notification or a response: nothing is answered but 202.
    Other,
}

/// A body that is not one JSON-RPC message: the error code and message it is answered with.
#[derive(Debug, PartialEq)]
pub(crate) struct Malformed {
    code: i64,
    message: String,
}

impl Malformed {
    /// The answer: 400 with the JSON-RPC error.
    pub(crate) fn answer(self) -> Response {
        error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            self.code,
            self.message,
        )
    }
}

/// What `body` holds.
pub(crate) fn read(body: &[u8]) -> Result<Incoming, Malformed> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Malformed {
        code: PARSE_ERROR,
        message: format!("Parse error: the body is not JSON ({e})"),
    })?;
    let invalid = |message: &str| Malformed {
        code: INVALID_REQUEST,
        message: format!("Invalid Request: {message}"),
    };
    let message = match value {
        Value::Object(message) => message,
        Value::Array(_) => {
            return Err(invalid(
                "batches are not accepted: the protocol versions served send one message per request",
            ));
        }
        _ => return Err(invalid("a message is a JSON object")),
    };
    if message.get("jsonrpc") != Some(&Value::from("2.0")) {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let id = message.get("id").cloned();
    if let Some(id) = &id
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return Err(invalid("id must be a string or an integer"));
    }
    let Some(method) = message.get("method") else {
        return if message.contains_key("result") || message.contains_key("error") {
            Ok(Incoming::Other)
        } else {
            Err(invalid("a message needs a method, or a result or an error"))
        };
    };
    let Some(method) = method.as_str() else {
        return Err(invalid("method must be a string"));
    };
    let Some(id) = id else {
        return Ok(Incoming::Other);
    };
    let tool = (method == "tools/call")
        .then(|| {
            message
                .get("params")?
                .get("name")?
                .as_str()
                .map(str::to_owned)
        })
        .flatten();
    Ok(Incoming::Request { id, tool })
}

/// A JSON-RPC error answer, with `status`.
pub(crate) fn error(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    with_data(status, id, code, message, None)
}

/// A JSON-RPC error answer with `data`.
pub(crate) fn with_data(
    status: StatusCode,
    id: Value,
    code: i64,
    message: String,
    data: Option<Value>,
) -> Response {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<i64> {
        read(body.as_bytes()).err().map(|malformed| malformed.code)
    }

    #[test]
    fn malformed_messages_are_refused_with_the_protocols_codes() {
        assert_eq!(code("{"), Some(PARSE_ERROR));
        assert_eq!(code("[]"), Some(INVALID_REQUEST));
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(code("7"), Some(INVALID_REQUEST));
        assert_eq!(code(r#"{"id":1,"method":"ping"}"#), Some(INVALID_REQUEST));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), Some(INVALID_REQUEST));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            Some(INVALID_REQUEST)
        );
    }

    #[test]
    fn a_tool_call_is_read_with_its_tool() {
        let read_ok = |body: &str| read(body.as_bytes()).ok();
        assert_eq!(
            read_ok(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#),
            Some(Incoming::Request {
                id: "a".into(),
                tool: Some("x".into())
            })
        );
        assert_eq!(
            read_ok(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
            Some(Incoming::Request {
                id: 2.into(),
                tool: None
            })
        );
        assert_eq!(
            read_ok(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Some(Incoming::Other)
        );
    }
}
