//! One function's way to the emulators: a proxy on loopback that every AWS endpoint of the
//! function points to. Each request is read as IAM reads it (the service and region it was
//! signed for, its calls), decided by the function's policy, and either forwarded to the
//! emulator of its service or answered with the service's own `AccessDenied`.

use super::calls::{self, Call};
use super::policy::{Decision, FunctionPolicy, Names};
use super::{Refusal, Seen};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// What one function's proxy needs.
pub struct FunctionProxy {
    /// The function's binary name (`paddock-auth`).
    pub binary: String,
    pub policy: FunctionPolicy,
    pub names: Names,
    pub account: String,
    /// Each service's emulator by signing name (`dynamodb` → `http://127.0.0.1:8000`).
    pub upstreams: HashMap<String, String>,
    /// Whether a call outside the policy is refused (otherwise only reported).
    pub enforce: bool,
    pub seen: Seen,
}

struct Shared {
    proxy: FunctionProxy,
    client: Client<HttpConnector, Full<Bytes>>,
}

type Closed = std::io::Error;

impl FunctionProxy {
    /// Serves on a free loopback port until the runtime ends; answers its address.
    pub async fn start(self) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            proxy: self,
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        crate::loopback_http::serve(listener, move |request| {
            let shared = shared.clone();
            async move { handle(&shared, request).await }
        });
        Ok(address)
    }
}

/// The signing name and region of a request: its `Authorization` header's credential scope,
/// or a presigned URL's `X-Amz-Credential`.
fn signed_for(parts: &http::request::Parts) -> Option<(String, String)> {
    let scope = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("Credential=").nth(1))
        .map(|v| v.split([',', ' ']).next().unwrap_or_default().to_owned())
        .or_else(|| {
            form_urlencoded::parse(parts.uri.query()?.as_bytes())
                .find(|(k, _)| k == "X-Amz-Credential")
                .map(|(_, v)| v.into_owned())
        })?;
    // AKID/date/region/service/aws4_request
    let mut fields = scope.split('/').skip(2);
    let region = fields.next()?.to_owned();
    let service = fields.next()?.to_owned();
    Some((service, region))
}

async fn handle(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Closed> {
    let proxy = &shared.proxy;
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(Closed::other)?.to_bytes();
    let Some((service, region)) = signed_for(&parts) else {
        return Ok(refuse(proxy, "unknown", &[], "the request is not signed"));
    };
    let request = calls::Request {
        service: &service,
        region: &region,
        account: &proxy.account,
        method: &parts.method,
        uri: &parts.uri,
        headers: &parts.headers,
        body: &body,
    };
    let calls = match calls::calls(&request) {
        Ok(calls) => calls,
        Err(why) => return Ok(refuse(proxy, &service, &[], &why)),
    };
    let mut refused = Vec::new();
    for call in &calls {
        match proxy.policy.decide(call) {
            Decision::Allowed {
                statement,
                action,
                resource,
            } => proxy
                .seen
                .allowed(&proxy.policy.logical_id, &statement, &action, &resource),
            Decision::Denied => refused.push(call.clone()),
        }
    }
    if !refused.is_empty() {
        for call in &refused {
            let refusal = Refusal {
                function: proxy.policy.logical_id.clone(),
                action: call.action.clone(),
                resource: proxy.names.as_written(&call.resource),
            };
            tracing::warn!(
                function = refusal.function,
                binary = proxy.binary,
                action = refusal.action,
                resource = refusal.resource,
                enforced = proxy.enforce,
                "the function's policy does not allow this call"
            );
            proxy.seen.refused(refusal);
        }
        if proxy.enforce {
            return Ok(refuse(proxy, &service, &refused, ""));
        }
    }
    let Some(base) = proxy.upstreams.get(&service) else {
        return Ok(refuse(
            proxy,
            &service,
            &[],
            "no emulator serves this service",
        ));
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri: http::Uri = format!("{}{path}", base.trim_end_matches('/'))
        .parse()
        .map_err(Closed::other)?;
    let mut upstream = Request::new(Full::new(body));
    *upstream.method_mut() = parts.method;
    *upstream.uri_mut() = uri;
    // Headers as signed (the emulators do not check signatures, so the proxy's Host is kept).
    *upstream.headers_mut() = parts.headers;
    let answer = shared
        .client
        .request(upstream)
        .await
        .map_err(Closed::other)?;
    let (parts, body) = answer.into_parts();
    let body = body.collect().await.map_err(Closed::other)?.to_bytes();
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// The service's own answer to a call IAM refuses.
fn refuse(
    proxy: &FunctionProxy,
    service: &str,
    calls: &[Call],
    why: &str,
) -> Response<Full<Bytes>> {
    let role = format!(
        "arn:aws:sts::{}:assumed-role/{}Role/{}",
        proxy.account, proxy.policy.logical_id, proxy.binary
    );
    let message = match calls.first() {
        Some(call) => format!(
            "User: {role} is not authorized to perform: {} on resource: {} because no identity-based policy allows the {} action",
            call.action, call.resource, call.action
        ),
        None => format!("User: {role} is not authorized: {why}"),
    };
    let json = |status: StatusCode, kind: &str, extra: Option<(&str, &str)>| {
        let mut builder = Response::builder()
            .status(status)
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amzn-requestid", uuid::Uuid::new_v4().to_string());
        if let Some((k, v)) = extra {
            builder = builder.header(k, v);
        }
        let body = serde_json::json!({ "__type": kind, "message": message, "Message": message });
        builder
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a well-formed answer")
    };
    let xml = |body: String| {
        Response::builder()
            .status(StatusCode::FORBIDDEN)
            .header("content-type", "application/xml")
            .body(Full::new(Bytes::from(body)))
            .expect("a well-formed answer")
    };
    let escaped = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    match service {
        "dynamodb" => json(
            StatusCode::BAD_REQUEST,
            "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
            None,
        ),
        "secretsmanager" => json(StatusCode::BAD_REQUEST, "AccessDeniedException", None),
        "sqs" => json(
            StatusCode::FORBIDDEN,
            "com.amazon.coral.service#AccessDeniedException",
            Some(("x-amzn-query-error", "AccessDenied;Sender")),
        ),
        "monitoring" => xml(format!(
            "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>{escaped}</Message></Error><RequestId>{}</RequestId></ErrorResponse>",
            uuid::Uuid::new_v4()
        )),
        _ => xml(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>{escaped}</Message><RequestId>{}</RequestId></Error>",
            uuid::Uuid::new_v4()
        )),
    }
}
