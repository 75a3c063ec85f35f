//! State shared by every handler.

use std::sync::Arc;

use http::HeaderValue;

use crate::metrics_readout::MetricsReadout;
use paddock_clients::client_documents::HttpsDocumentFetcher;
use paddock_clients::identity_providers::{self as providers, Providers};
use paddock_clients::webhooks::HttpsWebhookClient;
use paddock_core::client_documents::{self, ClientDocuments};
use paddock_core::coaching::llm::LanguageModel;
use paddock_core::config::Settings;
use paddock_core::identity::access_tokens::{AccessTokens, Claims};
use paddock_core::identity::app_tokens::Resource;
use paddock_core::identity::authentication::Door;
/// How often, at most, a token signed by an unknown key makes the keys be read again.
pub use paddock_core::identity::authentication::UNKNOWN_KEY_REREAD;
use paddock_core::identity::passwords::{PasswordError, PasswordHasher};
use paddock_core::identity::signing_keys::{SigningKeyError, SigningKeys};
use paddock_core::leaderboards::BoardCache;
use paddock_core::ports::{MetricsSource, Ports};
use paddock_core::webhooks::address_policy;
use paddock_core::webhooks::client::WebhookClient;

/// The ports, settings and per-process caches, shared by every handler: the router hands each
/// request its own clone, so the state is one pointer and a clone one reference count.
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

/// What [`AppState`] shares.
#[derive(Clone)]
pub struct SharedState {
    /// The adapters of every port.
    pub ports: Ports,
    /// The settings the process started with.
    pub settings: Arc<Settings>,
    /// Identity providers by name (their discovery documents and keys are cached inside).
    /// Empty unless [`AppState::with_identity_providers`] was called: only the auth group
    /// needs them, and leaving them out keeps the HTTP client out of the other functions.
    pub providers: Providers,
    /// Leaderboard boards and rendered pages, kept for a few seconds.
    pub leaderboards: Arc<BoardCache>,
    /// The `Cache-Control` of leaderboard answers and board pages: public, for the cache's
    /// lifetime (built once, sent with every board read).
    pub board_cache_control: HeaderValue,
    /// The password hashing threads; started by [`AppState::with_identity_providers`] (only
    /// the auth group hashes passwords).
    passwords: Option<Arc<PasswordHasher>>,
    /// The access-token keys, re-read from the secrets port after `Secrets__RefreshSeconds`.
    access_tokens: Arc<SigningKeys>,
    /// The language model of the AI coach; set by [`AppState::with_coach`] (only the AI group
    /// calls it, so the others do not build its HTTP client).
    pub coach: Option<Arc<dyn LanguageModel>>,
    /// The service's metrics read back from the metrics store, for `GET /metrics`; set by
    /// [`AppState::with_metrics_source`] (the health function), which then answers only a
    /// scrape with the metrics token. Without it, `GET /metrics` renders this process's own
    /// registry (the local server), to anyone who reaches it.
    pub metrics_readout: Option<Arc<MetricsReadout>>,
    /// The client that asks a webhook receiver to confirm a subscription; set by
    /// [`AppState::with_webhook_client`] (the webhooks group).
    webhook_client: Option<Arc<dyn WebhookClient>>,
    /// The metadata documents of OAuth clients known by their URL, fetched under the webhook
    /// address rules and kept a while; set by [`AppState::with_client_documents`] (the oauth
    /// group).
    client_documents: Option<Arc<ClientDocuments>>,
}

impl AppState {
    /// State over `ports` with `settings`.
    pub fn new(ports: Ports, settings: Settings) -> Self {
        let leaderboards = Arc::new(BoardCache::new(
            settings.leaderboard_cache,
            settings.leaderboard_cache_bytes,
        ));
        BoardCache::register(&leaderboards);
        let board_cache_control = HeaderValue::from_str(&format!(
            "public, max-age={}",
            settings.leaderboard_cache.as_secs()
        ))
        .unwrap_or(HeaderValue::from_static("no-cache"));
        Self(Arc::new(SharedState {
            ports,
            leaderboards,
            board_cache_control,
            settings: Arc::new(settings),
            providers: Providers::default(),
            passwords: None,
            access_tokens: Arc::new(SigningKeys::default()),
            coach: None,
            metrics_readout: None,
            webhook_client: None,
            client_documents: None,
        }))
    }

    /// The same state changed by `change` (while it is being built, before any clone).
    fn changed(self, change: impl FnOnce(&mut SharedState)) -> Self {
        let mut shared = Arc::unwrap_or_clone(self.0);
        change(&mut shared);
        Self(Arc::new(shared))
    }

    /// The same state with the AI coach's language model (`Ai__*`, keys from the secrets
    /// port).
    #[must_use]
    pub fn with_coach(self) -> Self {
        self.changed(|s| {
            s.coach = Some(paddock_clients::language_models::language_model(
                &s.settings.ai,
                s.ports.secrets.clone(),
            ));
        })
    }

    /// The same state with the HTTPS client of webhook receivers, under the configured
    /// address rules (`Webhooks__AllowLoopbackHttp`).
    #[must_use]
    pub fn with_webhook_client(self) -> Self {
        self.changed(|s| {
            let policy = address_policy(&s.settings);
            s.webhook_client = Some(Arc::new(HttpsWebhookClient::new(policy)));
        })
    }

    /// The same state with the fetcher of OAuth clients' metadata documents, under the
    /// configured address rules (`Webhooks__AllowLoopbackHttp`, as for webhooks).
    #[must_use]
    pub fn with_client_documents(self) -> Self {
        self.changed(|s| {
            let fetcher = HttpsDocumentFetcher::new(address_policy(&s.settings));
            s.client_documents = Some(Arc::new(ClientDocuments::new(Arc::new(fetcher))));
        })
    }

    /// The OAuth clients' metadata documents; without a fetcher (a process not given one),
    /// none can be read.
    pub fn client_documents(&self) -> Arc<ClientDocuments> {
        self.client_documents
            .clone()
            .unwrap_or_else(|| Arc::new(ClientDocuments::new(Arc::new(client_documents::Unwired))))
    }

    /// The client of webhook receivers; without one (a process not given it), every receiver
    /// reads as not answering.
    pub fn webhook_client(&self) -> Arc<dyn WebhookClient> {
        self.webhook_client
            .clone()
            .unwrap_or_else(|| Arc::new(paddock_core::webhooks::client::Unwired))
    }

    /// The same state with `GET /metrics` answered from `source`, for scrapes with the metrics
    /// token (read at most once per `Metrics__CacheSeconds` by all the instances sharing the
    /// item store).
    #[must_use]
    pub fn with_metrics_source(self, source: Arc<dyn MetricsSource>) -> Self {
        self.changed(|s| {
            s.metrics_readout = Some(Arc::new(MetricsReadout::new(
                source,
                s.ports.items.clone(),
                s.ports.clock.clone(),
                paddock_core::metrics::global().cloudwatch_metrics(),
                s.settings.metrics_cache,
            )));
        })
    }

    /// The same state with the configured sign-in providers (`Auth__Providers__*`) and the
    /// password hashing threads (`Auth__HashingThreads`), whose dummy hash is computed now.
    #[must_use]
    pub fn with_identity_providers(self) -> Self {
        self.changed(|s| {
            s.providers = providers::from_configs(&s.settings.auth.providers);
            s.passwords = Some(Arc::new(PasswordHasher::start(
                s.settings.auth.hashing_thread_count(),
                s.settings.auth.hashing_wait,
            )));
        })
    }

    /// The password hasher, in the functions that sign in with passwords.
    pub fn passwords(&self) -> Result<&PasswordHasher, PasswordError> {
        self.passwords.as_deref().ok_or_else(|| {
            PasswordError::Failed("password hashing was not started in this function".into())
        })
    }

    /// The access-token signer and checker; its keys are read from the secrets port once and
    /// again after `Secrets__RefreshSeconds`, so a key rotation reaches warm instances.
    pub async fn access_tokens(&self) -> Result<Arc<AccessTokens>, SigningKeyError> {
        self.access_tokens
            .get(
                self.ports.secrets.as_ref(),
                &self.settings.jwt,
                self.settings.secrets_refresh,
            )
            .await
    }

    /// The domain's door for credentials, over this process's store, keys and limits.
    pub fn door(&self) -> Door<'_> {
        Door {
            ports: &self.ports,
            keys: &self.access_tokens,
            jwt: &self.settings.jwt,
            keys_refresh: self.settings.secrets_refresh,
            token_requests_per_minute: self.settings.token_requests_per_minute,
            app_requests_per_minute: self.settings.app_requests_per_minute,
            resource: Resource::RestApi,
        }
    }

    /// The claims of `token` if it is a valid, unexpired access token of the current keys
    /// (`Err` inside: why not), as the door checks them.
    pub async fn verify_access_token(
        &self,
        token: &str,
    ) -> Result<Result<Arc<Claims>, &'static str>, SigningKeyError> {
        self.door().verify_access_token(token).await
    }

    /// The configured public base URL, else the local server's address. A request's handler
    /// takes [`crate::http::public_url::PublicUrl`] instead, which in Lambda knows the domain
    /// API Gateway received the request on.
    pub fn public_url(&self) -> String {
        self.settings
            .auth
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.settings.address))
    }
}
