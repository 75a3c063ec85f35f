//! HTTP clients that connect only to addresses the webhook address rules allow: every name
//! resolved by [`CheckedResolver`], which refuses the host when any address it resolves to
//! breaks a rule (a name that resolves differently later is checked again then), and an
//! address written in the URL checked before the request. No proxy, no redirects, one
//! deadline. The webhook client and the client metadata documents' fetcher both send through
//! them.

use std::error::Error as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use paddock_core::webhooks::address::{self, Policy, Refused, Rule, WebhookUrl};

/// Resolves names and refuses any that reach an address the rules forbid.
#[derive(Debug, Clone, Copy)]
struct CheckedResolver {
    policy: Policy,
    plain_http: bool,
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

/// The checked clients of one sender: built at the first request, since building one reads
/// the system's root certificates, which in a Lambda function's init doubled its start
/// (docs/perf.md).
#[derive(Debug)]
pub(crate) struct CheckedClients {
    policy: Policy,
    timeout: Duration,
    user_agent: &'static str,
    https: OnceLock<reqwest::Client>,
    /// Plain http to loopback, when the local-test setting allows it.
    http: Option<OnceLock<reqwest::Client>>,
}

impl CheckedClients {
    /// Clients under `policy`, each request within `timeout`, sent as `user_agent`.
    pub(crate) fn new(policy: Policy, timeout: Duration, user_agent: &'static str) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            policy,
            timeout,
            user_agent,
            https: OnceLock::new(),
            http: policy.allow_loopback_http.then(OnceLock::new),
        }
    }

    /// The rules the clients apply.
    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    /// The client to send to `url` with, once an address written in it passed the rules.
    pub(crate) fn for_url(&self, url: &WebhookUrl) -> Result<&reqwest::Client, Refused> {
        let plain_http = url.is_plain_http();
        // An address in the URL is connected to without a lookup: check it here.
        if let Ok(literal) = url.host().parse::<IpAddr>() {
            address::check_addresses(&[literal], plain_http, self.policy)?;
        }
        match (plain_http, &self.http) {
            (false, _) => Ok(self.https.get_or_init(|| self.client(false))),
            (true, Some(http)) => Ok(http.get_or_init(|| self.client(true))),
            (true, None) => Err(Refused {
                rule: Rule::Scheme,
                address: None,
            }),
        }
    }

    fn client(&self, plain_http: bool) -> reqwest::Client {
        let resolver = CheckedResolver {
            policy: self.policy,
            plain_http,
        };
        reqwest::Client::builder()
            .dns_resolver(Arc::new(resolver))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(!plain_http)
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .user_agent(self.user_agent)
            .build()
            .expect("a checked client's configuration is valid")
    }
}

/// Why a request through the checked clients failed.
#[derive(Debug)]
pub(crate) enum RequestFailure {
    /// A rule refused an address the name resolved to.
    Refused(Refused),
    /// The deadline passed.
    Timeout,
    /// The connection failed: the innermost cause (refused, reset, certificate).
    Connection(String),
}

impl From<&reqwest::Error> for RequestFailure {
    fn from(error: &reqwest::Error) -> Self {
        let mut source = error.source();
        while let Some(cause) = source {
            if let Some(refused) = cause.downcast_ref::<Refused>() {
                return Self::Refused(refused.clone());
            }
            source = cause.source();
        }
        if error.is_timeout() {
            return Self::Timeout;
        }
        let mut cause: &dyn std::error::Error = error;
        while let Some(next) = cause.source() {
            cause = next;
        }
        Self::Connection(cause.to_string())
    }
}
