//! The fetcher of OAuth clients' metadata documents: a `GET` through the checked clients
//! ([`crate::checked_http`]: the webhook address rules, no proxy, no redirects), the document
//! read chunk by chunk and given up past its size bound, the whole fetch within its time
//! bound.

use async_trait::async_trait;

use crate::checked_http::{CheckedClients, RequestFailure};
use paddock_core::client_documents::{
    DocumentFetcher, FETCH_TIMEOUT, FetchFailure, Fetched, MAX_DOCUMENT_BYTES,
};
use paddock_core::webhooks::address::{Policy, WebhookUrl};

/// The fetcher over reqwest.
#[derive(Debug)]
pub struct HttpsDocumentFetcher {
    clients: CheckedClients,
}

impl HttpsDocumentFetcher {
    /// A fetcher under `policy`.
    pub fn new(policy: Policy) -> Self {
        Self {
            clients: CheckedClients::new(policy, FETCH_TIMEOUT, "Paddock-OAuth/1"),
        }
    }

    async fn fetch(&self, url: &WebhookUrl) -> Result<Fetched, FetchFailure> {
        let http = self.clients.for_url(url).map_err(FetchFailure::Refused)?;
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
    match RequestFailure::from(error) {
        RequestFailure::Refused(refused) => FetchFailure::Refused(refused),
        RequestFailure::Timeout => FetchFailure::Timeout,
        RequestFailure::Connection(cause) => FetchFailure::Connection(cause),
    }
}

#[async_trait]
impl DocumentFetcher for HttpsDocumentFetcher {
    fn policy(&self) -> Policy {
        self.clients.policy()
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
    use paddock_core::webhooks::address::Rule;

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
