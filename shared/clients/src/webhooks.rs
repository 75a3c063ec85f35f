//! The webhook client: posts signed events to drivers' URLs over HTTPS through the checked
//! clients ([`crate::checked_http`]: only addresses that pass the webhook address rules, no
//! proxy, no redirects, a short deadline), with a bounded read of the answer.

use async_trait::async_trait;

use crate::checked_http::{CheckedClients, RequestFailure};
use paddock_core::webhooks::address::Policy;
use paddock_core::webhooks::client::{
    DeliveryFailure, MAX_ANSWER_BYTES, TIMEOUT, WebhookAnswer, WebhookClient, WebhookRequest,
};

/// The webhook client over reqwest.
#[derive(Debug)]
pub struct HttpsWebhookClient {
    clients: CheckedClients,
}

impl HttpsWebhookClient {
    /// A client under `policy`.
    pub fn new(policy: Policy) -> Self {
        Self {
            clients: CheckedClients::new(policy, TIMEOUT, "Paddock-Webhooks/1"),
        }
    }
}

fn failure(error: &reqwest::Error) -> DeliveryFailure {
    match RequestFailure::from(error) {
        RequestFailure::Refused(refused) => DeliveryFailure::Refused(refused),
        RequestFailure::Timeout => DeliveryFailure::Timeout,
        RequestFailure::Connection(cause) => DeliveryFailure::Connection(cause),
    }
}

#[async_trait]
impl WebhookClient for HttpsWebhookClient {
    fn policy(&self) -> Policy {
        self.clients.policy()
    }

    async fn post(&self, request: WebhookRequest) -> Result<WebhookAnswer, DeliveryFailure> {
        let http = (self.clients.for_url(&request.url)).map_err(DeliveryFailure::Refused)?;
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
