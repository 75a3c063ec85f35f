//! The HTTP side of the local API: a request becomes an API Gateway HTTP API event (payload
//! format 2.0) for the function of its route, and the function's answer becomes the HTTP
//! answer, as API Gateway turns them (`statusCode`, `headers`, `cookies`, `body`,
//! `isBase64Encoded`, or any other JSON as a 200 JSON body).

use super::functions::Functions;
use super::routes::{Matched, RouteTable};
use crate::lambda_runtime_api::Outcome;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest request body API Gateway takes (10 MB).
const MAX_BODY: usize = 10 * 1024 * 1024;

/// The largest synchronous Lambda request (6 MB), the event and its base64 included.
const MAX_EVENT: usize = 6 * 1024 * 1024;

/// API Gateway waits at most this long for an integration.
const MAX_INTEGRATION: Duration = Duration::from_secs(30);

/// What the request handler shares.
pub struct Gateway {
    /// The HTTP API's routes.
    pub routes: RouteTable,
    /// The functions they go to.
    pub functions: Functions,
}

/// API Gateway's own answers: a status and `{"message": ...}`.
fn gateway_answer(status: StatusCode, message: &str, request_id: &str) -> Response {
    let mut response = (status, axum::Json(json!({ "message": message }))).into_response();
    response
        .headers_mut()
        .insert("apigw-requestid", header_value(request_id));
    response
}

fn header_value(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Handles every request: route, event, invocation, answer.
pub async fn handle(
    State(gateway): State<Arc<Gateway>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request<Body>,
) -> Response {
    let request_id = request_id();
    let (parts, body) = request.into_parts();
    let Some(matched) = gateway
        .routes
        .select(parts.method.as_str(), parts.uri.path())
    else {
        return gateway_answer(StatusCode::NOT_FOUND, "Not Found", &request_id);
    };
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return gateway_answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request Entity Too Large",
            &request_id,
        );
    };
    let event = event(
        &parts.method,
        &parts.uri,
        &parts.headers,
        &body,
        peer,
        &matched,
        &request_id,
    );
    if event.to_string().len() > MAX_EVENT {
        return gateway_answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request Entity Too Large",
            &request_id,
        );
    }
    let Some(function) = gateway.functions.get(&matched.function) else {
        tracing::error!(
            function = matched.function,
            "the route's function is not built"
        );
        return gateway_answer(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error",
            &request_id,
        );
    };
    let answer = tokio::time::timeout(
        MAX_INTEGRATION.min(function.timeout() + Duration::from_secs(1)),
        function.invoke(&event),
    )
    .await;
    let outcome = match answer {
        Err(_) => {
            return gateway_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable",
                &request_id,
            );
        }
        Ok(Err(e)) => {
            tracing::error!(function = matched.function, "{e:#}");
            return gateway_answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error",
                &request_id,
            );
        }
        Ok(Ok(answer)) => answer.outcome,
    };
    let response = match outcome {
        Outcome::Response(body) => serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| http_answer(&v)),
        Outcome::Error(e) => {
            tracing::error!(
                function = matched.function,
                "{}: {}",
                e.error_type,
                e.message
            );
            None
        }
    };
    match response {
        Some(mut response) => {
            response
                .headers_mut()
                .insert("apigw-requestid", header_value(&request_id));
            response
        }
        None => gateway_answer(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error",
            &request_id,
        ),
    }
}

/// A request id in API Gateway's shape (base64 of random bytes).
fn request_id() -> String {
    let bytes = uuid::Uuid::new_v4();
    format!("{}=", &STANDARD.encode(bytes.as_bytes())[..15])
}

/// Whether API Gateway hands a body of `content_type` over as text.
fn is_text(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else { return false };
    let ct = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.ends_with("+json")
        || ct.ends_with("+xml")
        || matches!(
            ct.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-www-form-urlencoded"
        )
}

/// The payload 2.0 event of one request.
pub fn event(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
    peer: SocketAddr,
    matched: &Matched,
    request_id: &str,
) -> Value {
    let mut event_headers = serde_json::Map::new();
    let mut cookies: Vec<String> = Vec::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == "cookie" {
            cookies.extend(
                value
                    .split(';')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            );
            continue;
        }
        // Names are lower case already (the http crate keeps them so); repeated headers are
        // joined with commas, as API Gateway joins them.
        let joined = match event_headers.get(name.as_str()).and_then(Value::as_str) {
            Some(before) => format!("{before},{value}"),
            None => value,
        };
        event_headers.insert(name.as_str().to_owned(), Value::String(joined));
    }
    let source_ip = peer.ip().to_string();
    event_headers.insert("x-forwarded-for".into(), json!(source_ip));
    event_headers.insert("x-forwarded-port".into(), json!(peer.port().to_string()));
    event_headers.insert("x-forwarded-proto".into(), json!("http"));
    let host = event_headers
        .get("host")
        .and_then(Value::as_str)
        .unwrap_or("localhost")
        .to_owned();
    let user_agent = event_headers
        .get("user-agent")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let query = uri.query().unwrap_or("");
    let mut parameters = serde_json::Map::new();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        let joined = match parameters.get(k.as_ref()).and_then(Value::as_str) {
            Some(before) => format!("{before},{v}"),
            None => v.into_owned(),
        };
        parameters.insert(k.into_owned(), Value::String(joined));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let time = time::OffsetDateTime::from_unix_timestamp(now.as_secs() as i64)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[day]/[month repr:short]/[year]:[hour]:[minute]:[second] +0000"
            ))
            .ok()
        })
        .unwrap_or_default();
    let mut event = json!({
        "version": "2.0",
        "routeKey": matched.route_key,
        "rawPath": uri.path(),
        "rawQueryString": query,
        "headers": event_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": host,
            "domainPrefix": host.split('.').next().unwrap_or(""),
            "http": {
                "method": method.as_str(),
                "path": uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": user_agent,
            },
            "requestId": request_id,
            "routeKey": matched.route_key,
            "stage": "$default",
            "time": time,
            "timeEpoch": now.as_millis() as u64,
        },
        "isBase64Encoded": false,
    });
    if !parameters.is_empty() {
        event["queryStringParameters"] = Value::Object(parameters);
    }
    if !cookies.is_empty() {
        event["cookies"] = json!(cookies);
    }
    if !matched.path_parameters.is_empty() {
        event["pathParameters"] = json!(matched.path_parameters);
    }
    if !body.is_empty() {
        let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
        match std::str::from_utf8(body) {
            Ok(text) if is_text(content_type) => event["body"] = json!(text),
            _ => {
                event["body"] = json!(STANDARD.encode(body));
                event["isBase64Encoded"] = json!(true);
            }
        }
    }
    event
}

/// The HTTP answer of a function's response; `None` when it is malformed (API Gateway
/// answers 500 then).
pub fn http_answer(response: &Value) -> Option<Response> {
    let Some(status) = response.get("statusCode") else {
        // Any other JSON is the body of a 200 answer.
        let mut answer = (StatusCode::OK, response.to_string()).into_response();
        answer
            .headers_mut()
            .insert("content-type", HeaderValue::from_static("application/json"));
        return Some(answer);
    };
    let status = StatusCode::from_u16(u16::try_from(status.as_u64()?).ok()?).ok()?;
    let body = match response["body"].as_str() {
        None => Vec::new(),
        Some(b) if response["isBase64Encoded"] == true => STANDARD.decode(b).ok()?,
        Some(b) => b.as_bytes().to_vec(),
    };
    let mut answer = Response::new(Body::from(body));
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    for (name, value) in response["headers"].as_object().into_iter().flatten() {
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        headers.insert(name, HeaderValue::from_str(&value).ok()?);
    }
    for (name, values) in response["multiValueHeaders"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        for value in values.as_array().into_iter().flatten() {
            headers.append(name.clone(), HeaderValue::from_str(value.as_str()?).ok()?);
        }
    }
    for cookie in response["cookies"].as_array().into_iter().flatten() {
        headers.append("set-cookie", HeaderValue::from_str(cookie.as_str()?).ok()?);
    }
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_request_becomes_a_payload_two_event() {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("127.0.0.1:9000"));
        headers.append("x-thing", HeaderValue::from_static("a"));
        headers.append("x-thing", HeaderValue::from_static("b"));
        headers.insert("cookie", HeaderValue::from_static("a=1; b=2"));
        headers.insert("content-type", HeaderValue::from_static("application/zip"));
        let matched = Matched {
            route_key: "ANY /v1/sharepacks/{proxy+}".into(),
            function: "paddock-sharepacks".into(),
            path_parameters: BTreeMap::from([("proxy".into(), "x/y".into())]),
        };
        let uri: Uri = "/v1/sharepacks/x/y?a=1&a=2&b=%20".parse().unwrap();
        let event = event(
            &Method::POST,
            &uri,
            &headers,
            &Bytes::from_static(&[0xff, 0x00]),
            "127.0.0.1:5555".parse().unwrap(),
            &matched,
            "rid=",
        );
        assert_eq!(event["rawPath"], "/v1/sharepacks/x/y");
        assert_eq!(event["rawQueryString"], "a=1&a=2&b=%20");
        assert_eq!(
            event["queryStringParameters"],
            json!({"a": "1,2", "b": " "})
        );
        assert_eq!(event["headers"]["x-thing"], "a,b");
        assert!(event["headers"].get("cookie").is_none());
        assert_eq!(event["cookies"], json!(["a=1", "b=2"]));
        assert_eq!(event["pathParameters"]["proxy"], "x/y");
        assert_eq!(event["isBase64Encoded"], true);
        assert_eq!(event["body"], STANDARD.encode([0xff, 0x00]));
        let context = &event["requestContext"];
        assert_eq!(context["stage"], "$default");
        assert_eq!(context["http"]["sourceIp"], "127.0.0.1");
        assert_eq!(context["http"]["method"], "POST");
        assert_eq!(context["routeKey"], "ANY /v1/sharepacks/{proxy+}");
        assert_eq!(context["requestId"], "rid=");
    }

    #[test]
    fn text_bodies_travel_as_text() {
        assert!(is_text(Some("application/json; charset=utf-8")));
        assert!(is_text(Some("text/plain")));
        assert!(is_text(Some("application/problem+json")));
        assert!(!is_text(Some("application/zip")));
        assert!(!is_text(None));
    }

    #[test]
    fn answers_are_read_as_api_gateway_reads_them() {
        let answer = http_answer(&json!({
            "statusCode": 201, "headers": {"x-a": "1"}, "cookies": ["c=1", "d=2"],
            "body": STANDARD.encode(b"hi"), "isBase64Encoded": true,
        }))
        .unwrap();
        assert_eq!(answer.status(), 201);
        assert_eq!(answer.headers()["x-a"], "1");
        assert_eq!(answer.headers().get_all("set-cookie").iter().count(), 2);
        let plain = http_answer(&json!({"hello": "world"})).unwrap();
        assert_eq!(plain.status(), 200);
        assert!(http_answer(&json!({"statusCode": "nope"})).is_none());
    }
}
