//! The webhook client: posts signed events to drivers' URLs over HTTPS, connecting only to
//! addresses that passed `paddock_core::webhooks::address`'s rules.
//!
//! Every name is resolved by [`CheckedResolver`], which refuses the host when any address
//! it resolves to breaks a rule, so the connection can only go to a checked address (a name
//! that resolves differently on a later lookup is checked again then). An address written
//! in the URL is checked before the request. No proxy, no redirects, a short deadline and a
//! bounded read of the answer.

use std::error::Error as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use paddock_core::webhooks::address::{self, Policy, Refused};
use paddock_core::webhooks::client::{
    DeliveryFailure, MAX_ANSWER_BYTES, TIMEOUT, WebhookAnswer, WebhookClient, WebhookRequest,
};

/// Resolves names and refuses any that reach an address the rules forbid (the webhook
/// client's, and the client metadata documents' fetcher's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckedResolver {
    pub(crate) policy: Policy,
    pub(crate) plain_http: bool,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let (policy, plain_http) = (self.policy, self.plain_http);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips: Vec<IpAddr> = found.iter().map(SocketAddr::ip).collect();
            address::check_addresses(&ips, plain_http, policy)?;
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// The webhook client over reqwest.
///
/// Its HTTP clients are built at the first delivery: building one reads the system's root
/// certificates, which in a Lambda function's init doubled its start (docs/perf.md).
#[derive(Debug, Clone)]
pub struct HttpsWebhookClient {
    policy: Policy,
    https: OnceLock<reqwest::Client>,
    /// Plain http to loopback, when the local-test setting allows it.
    http: Option<OnceLock<reqwest::Client>>,
}

fn client(policy: Policy, plain_http: bool) -> reqwest::Client {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(CheckedResolver { policy, plain_http }))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .https_only(!plain_http)
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .user_agent("Paddock-Webhooks/1")
        .build()
        .expect("the webhook client's configuration is valid")
}

impl HttpsWebhookClient {
    /// A client under `policy`.
    pub fn new(policy: Policy) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            policy,
            https: OnceLock::new(),
            http: policy.allow_loopback_http.then(OnceLock::new),
        }
    }
}

/// The rule a failed request's cause names, if a check refused it.
pub(crate) fn refusal_in(error: &reqwest::Error) -> Option<Refused> {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<Refused>() {
            return Some(refused.clone());
        }
        source = cause.source();
    }
    None
}

fn failure(error: &reqwest::Error) -> DeliveryFailure {
    if let Some(refused) = refusal_in(error) {
        return DeliveryFailure::Refused(refused);
    }
    if error.is_timeout() {
        return DeliveryFailure::Timeout;
    }
    // The innermost cause says most (refused, reset, certificate).
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    DeliveryFailure::Connection(cause.to_string())
}

#[async_trait]
impl WebhookClient for HttpsWebhookClient {
    fn policy(&self) -> Policy {
        self.policy
    }

    async fn post(&self, request: WebhookRequest) -> Result<WebhookAnswer, DeliveryFailure> {
        let plain_http = request.url.is_plain_http();
        // An address in the URL is connected to without a lookup: check it here.
        if let Ok(literal) = request.url.host().parse::<IpAddr>() {
            address::check_addresses(&[literal], plain_http, self.policy)
                .map_err(DeliveryFailure::Refused)?;
        }
        let http = match (plain_http, &self.http) {
            (false, _) => self.https.get_or_init(|| client(self.policy, false)),
            (true, Some(http)) => http.get_or_init(|| client(self.policy, true)),
            (true, None) => {
                return Err(DeliveryFailure::Refused(Refused {
                    rule: address::Rule::Scheme,
                    address: None,
                }));
            }
        };
        let mut builder = http
            .post(request.url.as_str())
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        let mut response = builder
            .body(request.body)
            .send()
            .await
            .map_err(|e| failure(&e))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while body.len() < MAX_ANSWER_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                // The status is the answer; a body cut short does not change it.
                Err(_) => break,
            }
        }
        body.truncate(MAX_ANSWER_BYTES);
        Ok(WebhookAnswer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::webhooks::address::{Rule, WebhookUrl};

    fn request(url: &str, policy: Policy) -> WebhookRequest {
        WebhookRequest {
            url: WebhookUrl::parse(url, policy).unwrap(),
            headers: vec![],
            body: "{}".into(),
        }
    }

    #[tokio::test]
    async fn refused_addresses_are_never_connected_to() {
        let strict = Policy::default();
        let client = HttpsWebhookClient::new(strict);
        for (url, rule) in [
            ("https://127.0.0.1:1/", Rule::Loopback),
            ("https://[::ffff:169.254.169.254]/", Rule::Metadata),
            ("https://localhost:1/", Rule::Loopback),
        ] {
            match client.post(request(url, strict)).await {
                Err(DeliveryFailure::Refused(r)) => assert_eq!(r.rule, rule, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn plain_http_goes_to_loopback_only_when_allowed() {
        let local = Policy {
            allow_loopback_http: true,
        };
        let client = HttpsWebhookClient::new(local);
        // Nothing listens on port 1: the connection is tried, and fails.
        assert!(matches!(
            client.post(request("http://127.0.0.1:1/", local)).await,
            Err(DeliveryFailure::Connection(_))
        ));
        match client.post(request("http://localhost:1/", local)).await {
            Err(DeliveryFailure::Connection(_)) => {}
            other => panic!("{other:?}"),
        }
    }
}
