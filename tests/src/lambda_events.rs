//! The events AWS sends Paddock's functions, as JSON: API Gateway HTTP API (payload 2.0)
//! requests and their responses, SQS batches, DynamoDB stream batches and EventBridge
//! scheduled events.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// How a request body travels in the event.
#[derive(Debug, Clone)]
pub enum EventBody {
    /// No body.
    Empty,
    /// Text sent as is (`isBase64Encoded: false`).
    Text(String),
    /// Bytes sent base64-encoded (`isBase64Encoded: true`), as API Gateway sends binary
    /// media and may send any body.
    Base64(Vec<u8>),
}

impl EventBody {
    /// The bytes the function should see.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Self::Empty => Vec::new(),
            Self::Text(text) => text.clone().into_bytes(),
            Self::Base64(bytes) => bytes.clone(),
        }
    }
}

/// One HTTP request, to send as an API Gateway event or over a socket.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The method, upper case.
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: String,
    /// Headers, lower-case names (cookies go in `cookies`).
    pub headers: Vec<(String, String)>,
    /// `name=value` cookies (API Gateway sends them apart from the headers).
    pub cookies: Vec<String>,
    /// The body.
    pub body: EventBody,
}

impl HttpRequest {
    /// A request of `method` to `path_and_query` without body, headers or cookies.
    pub fn new(method: &str, path_and_query: &str) -> Self {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        Self {
            method: method.to_owned(),
            path: path.to_owned(),
            query: query.to_owned(),
            headers: Vec::new(),
            cookies: Vec::new(),
            body: EventBody::Empty,
        }
    }

    /// The same request with a header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// The same request with a bearer token.
    #[must_use]
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// The same request with a cookie.
    #[must_use]
    pub fn cookie(mut self, cookie: &str) -> Self {
        self.cookies.push(cookie.to_owned());
        self
    }

    /// The same request with a body and its content type.
    #[must_use]
    pub fn body(self, content_type: &str, body: EventBody) -> Self {
        let mut request = self.header("content-type", content_type);
        request.body = body;
        request
    }

    /// The same request with a JSON body sent as text.
    #[must_use]
    pub fn json(self, value: &Value) -> Self {
        self.body("application/json", EventBody::Text(value.to_string()))
    }

    /// The path with its query string.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query)
        }
    }

    /// The API Gateway HTTP API event (payload format 2.0) of this request, from `127.0.0.1`
    /// on the `$default` stage.
    pub fn api_gateway_event(&self) -> Value {
        let mut headers = serde_json::Map::new();
        for (name, value) in &self.headers {
            // API Gateway joins repeated headers with commas.
            let joined = match headers.get(name).and_then(Value::as_str) {
                Some(before) => format!("{before},{value}"),
                None => value.clone(),
            };
            headers.insert(name.clone(), Value::String(joined));
        }
        headers
            .entry("host")
            .or_insert_with(|| json!("api.example.com"));
        headers
            .entry("user-agent")
            .or_insert_with(|| json!("paddock-tests"));
        let body_length = self.body.bytes().len();
        if body_length > 0 {
            headers
                .entry("content-length")
                .or_insert_with(|| json!(body_length.to_string()));
        }
        let query_parameters: serde_json::Map<String, Value> = form_urlencoded_pairs(&self.query)
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let mut event = json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": self.path,
            "rawQueryString": self.query,
            "headers": headers,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "paddockapi",
                "domainName": "api.example.com",
                "domainPrefix": "api",
                "http": {
                    "method": self.method,
                    "path": self.path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": "paddock-tests"
                },
                "requestId": uuid::Uuid::new_v4().to_string(),
                "routeKey": "$default",
                "stage": "$default",
                "time": "23/Nov/2026:10:00:00 +0000",
                "timeEpoch": 1_795_428_000_000_u64
            },
            "isBase64Encoded": matches!(self.body, EventBody::Base64(_)),
        });
        if !query_parameters.is_empty() {
            event["queryStringParameters"] = Value::Object(query_parameters);
        }
        if !self.cookies.is_empty() {
            event["cookies"] = json!(self.cookies);
        }
        match &self.body {
            EventBody::Empty => {}
            EventBody::Text(text) => event["body"] = json!(text),
            EventBody::Base64(bytes) => event["body"] = json!(STANDARD.encode(bytes)),
        }
        event
    }
}

/// Query pairs as API Gateway decodes them (repeated keys joined with commas).
fn form_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match pairs.iter_mut().find(|(key, _)| *key == k) {
            Some((_, value)) => {
                value.push(',');
                value.push_str(&v);
            }
            None => pairs.push((k.into_owned(), v.into_owned())),
        }
    }
    pairs
}

/// An HTTP answer, read from an API Gateway response or from a socket.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    /// The status code.
    pub status: u16,
    /// Headers with lower-case names, sorted; `set-cookie` ones included.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// Reads a function's API Gateway response (`statusCode`, `headers`, `cookies`, `body`,
    /// `isBase64Encoded`).
    pub fn from_api_gateway(response: &Value) -> anyhow::Result<Self> {
        let status = response["statusCode"]
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| anyhow::anyhow!("no statusCode in {response}"))?;
        let mut headers: Vec<(String, String)> = response["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or("").to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        for cookie in response["cookies"].as_array().into_iter().flatten() {
            headers.push((
                "set-cookie".into(),
                cookie.as_str().unwrap_or("").to_owned(),
            ));
        }
        headers.sort();
        let body = match response["body"].as_str() {
            None => Vec::new(),
            Some(b) if response["isBase64Encoded"] == true => STANDARD.decode(b)?,
            Some(b) => b.as_bytes().to_vec(),
        };
        Ok(Self {
            status,
            headers,
            body,
        })
    }

    /// Reads a response of the local server.
    pub async fn from_reqwest(response: reqwest::Response) -> anyhow::Result<Self> {
        let status = response.status().as_u16();
        let mut headers: Vec<(String, String)> = Vec::new();
        for (name, value) in response.headers() {
            let value = value.to_str().unwrap_or("").to_owned();
            // The socket path sends repeated headers apart; API Gateway joins them.
            match headers.iter_mut().find(|(n, _)| n == name.as_str()) {
                Some((_, before)) if name != "set-cookie" => {
                    before.push(',');
                    before.push_str(&value);
                }
                _ => headers.push((name.as_str().to_owned(), value)),
            }
        }
        headers.sort();
        let body = response.bytes().await?.to_vec();
        Ok(Self {
            status,
            headers,
            body,
        })
    }

    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (null when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The same answer without the headers named in `names`.
    #[must_use]
    pub fn without_headers(mut self, names: &[&str]) -> Self {
        self.headers.retain(|(n, _)| !names.contains(&n.as_str()));
        self
    }
}

/// An SQS batch of `(message id, receipt handle, body)` records from queue `queue_name`,
/// each on its first delivery.
pub fn sqs_batch(queue_name: &str, records: &[(&str, &str, &str)]) -> Value {
    let records: Vec<Value> = records
        .iter()
        .map(|(id, receipt, body)| {
            json!({
                "messageId": id,
                "receiptHandle": receipt,
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1795428000000",
                    "SenderId": "123456789012",
                    "ApproximateFirstReceiveTimestamp": "1795428000001"
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": format!("arn:aws:sqs:us-east-1:123456789012:{queue_name}"),
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    json!({ "Records": records })
}

/// A DynamoDB stream batch of INSERT records with `NEW_IMAGE`s (already in DynamoDB JSON),
/// sequence numbers counting from 1.
pub fn dynamodb_inserts(table_arn: &str, new_images: &[Value]) -> Value {
    let records: Vec<Value> = new_images
        .iter()
        .enumerate()
        .map(|(n, image)| {
            json!({
                "eventID": format!("event-{n}"),
                "eventName": "INSERT",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": {
                    "ApproximateCreationDateTime": 1_795_428_000,
                    "Keys": { "pk": image["pk"], "sk": image["sk"] },
                    "NewImage": image,
                    "SequenceNumber": format!("{}", 100 + n),
                    "SizeBytes": 512,
                    "StreamViewType": "NEW_IMAGE"
                },
                "eventSourceARN": format!("{table_arn}/stream/2026-11-23T10:00:00.000")
            })
        })
        .collect();
    json!({ "Records": records })
}

/// A DynamoDB stream batch of `REMOVE` records as TTL emits them: `OLD_IMAGE`s (already in
/// DynamoDB JSON) and the user identity of DynamoDB's own service principal. Sequence numbers
/// count from `first_sequence`.
pub fn dynamodb_ttl_removals(table_arn: &str, old_images: &[Value], first_sequence: u64) -> Value {
    let records: Vec<Value> = old_images
        .iter()
        .enumerate()
        .map(|(n, image)| {
            json!({
                "eventID": format!("ttl-{n}"),
                "eventName": "REMOVE",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": {
                    "ApproximateCreationDateTime": 1_795_428_000,
                    "Keys": { "pk": image["pk"], "sk": image["sk"] },
                    "OldImage": image,
                    "SequenceNumber": format!("{}", first_sequence + n as u64),
                    "SizeBytes": 256,
                    "StreamViewType": "OLD_IMAGE"
                },
                "userIdentity": {
                    "type": "Service",
                    "principalId": "dynamodb.amazonaws.com"
                },
                "eventSourceARN": format!("{table_arn}/stream/2026-11-23T10:00:00.000")
            })
        })
        .collect();
    json!({ "Records": records })
}

/// An EventBridge scheduled event of rule `rule`.
pub fn scheduled_event(rule: &str) -> Value {
    json!({
        "version": "0",
        "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-23T10:00:00Z",
        "region": "us-east-1",
        "resources": [format!("arn:aws:events:us-east-1:123456789012:rule/{rule}")],
        "detail": {}
    })
}
