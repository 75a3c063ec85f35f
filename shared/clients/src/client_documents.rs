//! The fetcher of OAuth clients' metadata documents: a `GET` under the webhook address rules
//! (every name resolved by the webhook client's [`CheckedResolver`], an address in the URL
//! checked before the request), no proxy, no redirects, the document read chunk by chunk
//! and given up past its size bound, the whole fetch within its time bound.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use crate::webhooks::{CheckedResolver, refusal_in};
use paddock_core::client_documents::{
    DocumentFetcher, FETCH_TIMEOUT, FetchFailure, Fetched, MAX_DOCUMENT_BYTES,
};
use paddock_core::webhooks::address::{self, Policy, Refused, Rule, WebhookUrl};

/// The fetcher over reqwest; its HTTP clients are built at the first fetch (building one
/// reads the system's root certificates, which a function's start should not wait for).
#[derive(Debug)]
pub struct HttpsDocumentFetcher {
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
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .user_agent("Paddock-OAuth/1")
        .build()
        .expect("the document fetcher's configuration is valid")
}

impl HttpsDocumentFetcher {
    /// A fetcher under `policy`.
    pub fn new(policy: Policy) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            policy,
            https: OnceLock::new(),
            http: policy.allow_loopback_http.then(OnceLock::new),
        }
    }

    async fn fetch(&self, url: &WebhookUrl) -> Result<Fetched, FetchFailure> {
        let plain_http = url.is_plain_http();
        // An address in the URL is connected to without a lookup: check it here.
        if let Ok(literal) = url.host().parse::<IpAddr>() {
            address::check_addresses(&[literal], plain_http, self.policy)
                .map_err(FetchFailure::Refused)?;
        }
        let http = match (plain_http, &self.http) {
            (false, _) => self.https.get_or_init(|| client(self.policy, false)),
            (true, Some(http)) => http.get_or_init(|| client(self.policy, true)),
            (true, None) => {
                return Err(FetchFailure::Refused(Refused {
                    rule: Rule::Scheme,
                    address: None,
                }));
            }
        };
        let mut response = http
            .get(url.as_str())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| failure(&e))?;
        if response
            .content_length()
            .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(FetchFailure::TooLarge);
        }
        let status = response.status().as_u16();
        let cache_control = (response.headers().get(reqwest::header::CACHE_CONTROL))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failure(&e))? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(FetchFailure::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            status,
            body,
            cache_control,
        })
    }
}

fn failure(error: &reqwest::Error) -> FetchFailure {
    if let Some(refused) = refusal_in(error) {
        return FetchFailure::Refused(refused);
    }
    if error.is_timeout() {
        return FetchFailure::Timeout;
    }
    // The innermost cause says most (refused, reset, certificate).
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    FetchFailure::Connection(cause.to_string())
}

#[async_trait]
impl DocumentFetcher for HttpsDocumentFetcher {
    fn policy(&self) -> Policy {
        self.policy
    }

    async fn get(&self, url: &WebhookUrl) -> Result<Fetched, FetchFailure> {
        // The client's own timeout covers the body too; this bounds the lookup as well.
        tokio::time::timeout(FETCH_TIMEOUT, self.fetch(url))
            .await
            .unwrap_or(Err(FetchFailure::Timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refused_addresses_are_never_connected_to() {
        let strict = Policy::default();
        let fetcher = HttpsDocumentFetcher::new(strict);
        for (url, rule) in [
            ("https://127.0.0.1:1/client.json", Rule::Loopback),
            ("https://10.0.0.8/client.json", Rule::Private),
            ("https://[fe80::1]/client.json", Rule::LinkLocal),
            ("https://169.254.169.254/latest/meta-data", Rule::Metadata),
            ("https://localhost:1/client.json", Rule::Loopback),
        ] {
            let url = WebhookUrl::parse(url, strict).unwrap();
            match fetcher.get(&url).await {
                Err(FetchFailure::Refused(r)) => assert_eq!(r.rule, rule, "{}", url.as_str()),
                other => panic!("{}: {other:?}", url.as_str()),
            }
        }
    }
}
