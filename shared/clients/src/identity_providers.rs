//! Identity providers: a generic OpenID Connect provider (issuer discovery, ID token checked
//! against the provider's JWKS) and presets for Google (OIDC), Microsoft and Discord (OAuth2 +
//! user-info). The provider's code is exchanged with the `oauth2` crate; who signed in is
//! handed to `paddock_core::identity::provider_accounts` as a [`ProviderIdentity`].

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AuthUrl, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, ExtraTokenFields, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, OnceCell};

pub use paddock_core::config::{ProviderConfig, ProviderKind};
pub use paddock_core::identity::provider_accounts::ProviderIdentity;

/// The endpoints of a provider.
#[derive(Debug, Clone)]
struct Endpoints {
    issuer: Option<String>,
    authorize: String,
    token: String,
    userinfo: Option<String>,
    jwks: Option<String>,
    /// The algorithms an ID token of this provider may be signed with.
    id_token_algorithms: Vec<Algorithm>,
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    userinfo_endpoint: Option<String>,
    jwks_uri: Option<String>,
    id_token_signing_alg_values_supported: Option<Vec<String>>,
}

/// The signature algorithms an ID token may have, whatever the provider lists: asymmetric
/// ones only, so no `none`, and no HMAC, whose key would be the client secret (or a key the
/// JWKS hands to anyone).
const ASYMMETRIC_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The algorithms to accept for a provider's ID tokens: those its discovery lists in
/// `id_token_signing_alg_values_supported` that are asymmetric, or RS256 (the default OpenID
/// Connect gives every provider) when it lists none.
fn id_token_algorithms(listed: Option<&[String]>) -> Result<Vec<Algorithm>, ProviderError> {
    let Some(listed) = listed.filter(|l| !l.is_empty()) else {
        return Ok(vec![Algorithm::RS256]);
    };
    let accepted: Vec<Algorithm> = ASYMMETRIC_ALGORITHMS
        .into_iter()
        .filter(|alg| {
            listed
                .iter()
                .any(|name| name.parse::<Algorithm>().ok() == Some(*alg))
        })
        .collect();
    if accepted.is_empty() {
        return Err(ProviderError::Rejected(format!(
            "discovery's id_token_signing_alg_values_supported ({}) names no asymmetric algorithm",
            listed.join(", ")
        )));
    }
    Ok(accepted)
}

impl Discovery {
    /// Refuses endpoints that are not `https` (plain `http` only on a loopback host).
    fn check_endpoints(&self) -> Result<(), ProviderError> {
        let endpoints = [
            ("authorization_endpoint", Some(&self.authorization_endpoint)),
            ("token_endpoint", Some(&self.token_endpoint)),
            ("userinfo_endpoint", self.userinfo_endpoint.as_ref()),
            ("jwks_uri", self.jwks_uri.as_ref()),
        ];
        for (name, url) in endpoints {
            if let Some(url) = url {
                paddock_core::config::secure_provider_url(url).map_err(|rule| {
                    ProviderError::Rejected(format!("discovery's {name} {url:?} {rule}"))
                })?;
            }
        }
        Ok(())
    }
}

/// The `id_token` of an OIDC token response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdTokenField {
    /// The OpenID Connect ID token, when the provider sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}
impl ExtraTokenFields for IdTokenField {}

type TokenResponseWithId = StandardTokenResponse<IdTokenField, BasicTokenType>;
type OAuthClient = Client<
    BasicErrorResponse,
    TokenResponseWithId,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// A provider ready for sign-ins: configuration, discovered endpoints and cached keys.
pub struct Provider {
    config: ProviderConfig,
    endpoints: OnceCell<Endpoints>,
    jwks: Mutex<Option<JwkSet>>,
    /// Built on first use, with every provider of the process (see [`from_configs`]).
    http: Arc<std::sync::OnceLock<reqwest::Client>>,
}

/// Where the provider is asked to send the browser back.
pub fn callback_url(public_url: &str, provider: &str) -> String {
    format!(
        "{}/v1/auth/callback/{provider}",
        public_url.trim_end_matches('/')
    )
}

/// The HTTP client for provider calls: rustls on ring, no redirects, bounded time.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .expect("HTTP client configuration is valid")
}

/// Why a provider step failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider could not be reached or answered badly.
    #[error("provider unreachable or misbehaving: {0}")]
    Upstream(String),
    /// The provider's answer was refused.
    #[error("provider answer rejected: {0}")]
    Rejected(String),
}

fn upstream(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Upstream(e.to_string())
}

impl Provider {
    /// A provider from its configuration (endpoints are discovered on first use).
    pub fn new(config: ProviderConfig, http: reqwest::Client) -> Self {
        Self::sharing(config, Arc::new(std::sync::OnceLock::from(http)))
    }

    /// A provider whose HTTP client is `http`'s, built by the first provider that calls out.
    fn sharing(config: ProviderConfig, http: Arc<std::sync::OnceLock<reqwest::Client>>) -> Self {
        Self {
            config,
            endpoints: OnceCell::new(),
            jwks: Mutex::new(None),
            http,
        }
    }

    fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(http_client)
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    async fn endpoints(&self) -> Result<&Endpoints, ProviderError> {
        self.endpoints
            .get_or_try_init(|| async {
                let issuer = match self.config.kind {
                    ProviderKind::Oidc => self.config.issuer.clone(),
                    ProviderKind::Google => Some("https://accounts.google.com".to_owned()),
                    ProviderKind::Microsoft => {
                        return Ok(Endpoints {
                            issuer: None,
                            authorize:
                                "https://login.microsoftonline.com/common/oauth2/v2.0/authorize"
                                    .into(),
                            token: "https://login.microsoftonline.com/common/oauth2/v2.0/token"
                                .into(),
                            userinfo: Some("https://graph.microsoft.com/oidc/userinfo".into()),
                            jwks: None,
                            id_token_algorithms: Vec::new(),
                        });
                    }
                    ProviderKind::Discord => {
                        return Ok(Endpoints {
                            issuer: None,
                            authorize: "https://discord.com/oauth2/authorize".into(),
                            token: "https://discord.com/api/oauth2/token".into(),
                            userinfo: Some("https://discord.com/api/users/@me".into()),
                            jwks: None,
                            id_token_algorithms: Vec::new(),
                        });
                    }
                };
                let issuer =
                    issuer.ok_or_else(|| ProviderError::Rejected("no issuer configured".into()))?;
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    issuer.trim_end_matches('/')
                );
                let doc: Discovery = self.get_json(&url, None).await?;
                if doc.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
                    return Err(ProviderError::Rejected(format!(
                        "discovery names issuer {} instead of {issuer}",
                        doc.issuer
                    )));
                }
                doc.check_endpoints()?;
                let id_token_algorithms =
                    id_token_algorithms(doc.id_token_signing_alg_values_supported.as_deref())?;
                Ok(Endpoints {
                    issuer: Some(doc.issuer),
                    authorize: doc.authorization_endpoint,
                    token: doc.token_endpoint,
                    userinfo: doc.userinfo_endpoint,
                    jwks: doc.jwks_uri,
                    id_token_algorithms,
                })
            })
            .await
    }

    /// GETs a JSON document from the provider.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        bearer: Option<&str>,
    ) -> Result<T, ProviderError> {
        let mut request = self.http().get(url);
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        request
            .send()
            .await
            .map_err(upstream)?
            .error_for_status()
            .map_err(upstream)?
            .json()
            .await
            .map_err(upstream)
    }

    async fn oauth_client(
        &self,
        redirect: &str,
        secret: Option<SecretString>,
    ) -> Result<OAuthClient, ProviderError> {
        let e = self.endpoints().await?;
        let mut client = Client::new(ClientId::new(self.config.client_id.clone()))
            .set_auth_uri(AuthUrl::new(e.authorize.clone()).map_err(upstream)?)
            .set_token_uri(TokenUrl::new(e.token.clone()).map_err(upstream)?)
            .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(upstream)?);
        if let Some(secret) = secret {
            client = client.set_client_secret(ClientSecret::new(secret.expose_secret().to_owned()));
        }
        Ok(client)
    }

    /// The provider URL to send the browser to, with our state, nonce and PKCE challenge.
    pub async fn authorize_url(
        &self,
        redirect: &str,
        state: &str,
        nonce: &str,
        pkce_challenge: PkceCodeChallenge,
    ) -> Result<String, ProviderError> {
        let client = self.oauth_client(redirect, None).await?;
        let state = state.to_owned();
        let mut request = client
            .authorize_url(move || CsrfToken::new(state))
            .add_scopes(self.config.scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(pkce_challenge);
        if self.endpoints().await?.jwks.is_some() {
            request = request.add_extra_param("nonce", nonce);
        }
        Ok(request.url().0.to_string())
    }

    /// Exchanges the provider's code and reads who signed in.
    pub async fn identify(
        &self,
        redirect: &str,
        secret: Option<SecretString>,
        code: &str,
        pkce_verifier: &str,
        nonce: &str,
    ) -> Result<ProviderIdentity, ProviderError> {
        let client = self.oauth_client(redirect, secret).await?;
        let http = self.http().clone();
        let send = move |req: oauth2::HttpRequest| {
            let http = http.clone();
            async move { send_oauth_request(&http, req).await }
        };
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&send)
            .await
            .map_err(|e| ProviderError::Rejected(format!("code exchange failed: {e}")))?;
        if let (Some(id_token), Some(_)) = (
            tokens.extra_fields().id_token.as_deref(),
            self.endpoints().await?.jwks.as_ref(),
        ) {
            return self.check_id_token(id_token, nonce).await;
        }
        self.userinfo(tokens.access_token().secret()).await
    }

    async fn check_id_token(
        &self,
        id_token: &str,
        nonce: &str,
    ) -> Result<ProviderIdentity, ProviderError> {
        let header = jsonwebtoken::decode_header(id_token)
            .map_err(|e| ProviderError::Rejected(format!("id_token: {e}")))?;
        // Pinned before any key is looked up: the token's header never picks the algorithm.
        let accepted = &self.endpoints().await?.id_token_algorithms;
        if !accepted.contains(&header.alg) {
            return Err(ProviderError::Rejected(format!(
                "id_token signed with {:?}; this provider's ID tokens are accepted with {accepted:?}",
                header.alg
            )));
        }
        let kid = header.kid.clone().unwrap_or_default();
        let key = match self.key_for(&kid, false).await? {
            Some(k) => k,
            // Keys rotate: refetch once for an unknown key id.
            None => self.key_for(&kid, true).await?.ok_or_else(|| {
                ProviderError::Rejected("id_token signed with an unknown key".into())
            })?,
        };
        let issuer = self.endpoints().await?.issuer.clone().unwrap_or_default();
        // One algorithm, the token's (checked above): the key must be of its family.
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[&self.config.client_id]);
        validation.leeway = 60;
        let claims = jsonwebtoken::decode::<BTreeMap<String, Value>>(id_token, &key, &validation)
            .map_err(|e| ProviderError::Rejected(format!("id_token: {e}")))?
            .claims;
        if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err(ProviderError::Rejected(
                "id_token nonce does not match this sign-in".into(),
            ));
        }
        identity_from_claims(&claims, self.config.kind)
            .map(|id| self.trusted(id))
            .ok_or_else(|| ProviderError::Rejected("id_token without a subject".into()))
    }

    /// Keeps `email_verified` only when this provider is trusted to assert it.
    fn trusted(&self, mut identity: ProviderIdentity) -> ProviderIdentity {
        identity.email_verified &= self.config.trust_email_verified;
        identity
    }

    async fn key_for(
        &self,
        kid: &str,
        refresh: bool,
    ) -> Result<Option<DecodingKey>, ProviderError> {
        let mut cached = self.jwks.lock().await;
        if refresh || cached.is_none() {
            let url = self
                .endpoints()
                .await?
                .jwks
                .clone()
                .ok_or_else(|| ProviderError::Rejected("no jwks_uri".into()))?;
            let set: JwkSet = self.get_json(&url, None).await?;
            *cached = Some(set);
        }
        let set = cached.as_ref().expect("just filled");
        let jwk = if kid.is_empty() && set.keys.len() == 1 {
            set.keys.first()
        } else {
            set.find(kid)
        };
        jwk.map(|j| {
            DecodingKey::from_jwk(j)
                .map_err(|e| ProviderError::Rejected(format!("unusable JWK: {e}")))
        })
        .transpose()
    }

    async fn userinfo(&self, access_token: &str) -> Result<ProviderIdentity, ProviderError> {
        let url = self
            .endpoints()
            .await?
            .userinfo
            .clone()
            .ok_or_else(|| ProviderError::Rejected("no user-info endpoint".into()))?;
        let info: BTreeMap<String, Value> = self.get_json(&url, Some(access_token)).await?;
        let identity = match self.config.kind {
            ProviderKind::Discord => discord_identity(&info),
            kind => identity_from_claims(&info, kind),
        };
        identity
            .map(|id| self.trusted(id))
            .ok_or_else(|| ProviderError::Rejected("user-info without a subject".into()))
    }
}

async fn send_oauth_request(
    http: &reqwest::Client,
    req: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, reqwest::Error> {
    let (parts, body) = req.into_parts();
    let response = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let mut builder = http::Response::builder().status(response.status());
    for (k, v) in response.headers() {
        builder = builder.header(k, v);
    }
    let bytes = response.bytes().await?;
    Ok(builder
        .body(bytes.to_vec())
        .expect("a response rebuilt from a valid one"))
}

fn text(claims: &BTreeMap<String, Value>, key: &str) -> Option<String> {
    claims
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn claim_is_true(claims: &BTreeMap<String, Value>, key: &str) -> bool {
    matches!(claims.get(key), Some(Value::Bool(true)))
        || claims.get(key).and_then(Value::as_str) == Some("true")
}

fn identity_from_claims(
    claims: &BTreeMap<String, Value>,
    kind: ProviderKind,
) -> Option<ProviderIdentity> {
    // Entra ID lets a tenant set any `email`; only `xms_edov` says the domain owner verified it.
    let email_verified = match kind {
        ProviderKind::Microsoft => claim_is_true(claims, "xms_edov"),
        _ => claim_is_true(claims, "email_verified"),
    };
    Some(ProviderIdentity {
        subject: text(claims, "sub")?,
        email: text(claims, "email"),
        email_verified,
        name: text(claims, "name").or_else(|| text(claims, "preferred_username")),
        picture: text(claims, "picture"),
    })
}

fn discord_identity(info: &BTreeMap<String, Value>) -> Option<ProviderIdentity> {
    let id = text(info, "id")?;
    let picture =
        text(info, "avatar").map(|a| format!("https://cdn.discordapp.com/avatars/{id}/{a}.png"));
    Some(ProviderIdentity {
        email: text(info, "email"),
        email_verified: info
            .get("verified")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        name: text(info, "global_name").or_else(|| text(info, "username")),
        picture,
        subject: id,
    })
}

/// The configured providers by name.
pub type Providers = Arc<BTreeMap<String, Arc<Provider>>>;

/// Builds the providers from their configurations.
pub fn from_configs(configs: &[ProviderConfig]) -> Providers {
    // The client is built at the first provider call, not here: building it reads the
    // system's root certificates, which would hold up a Lambda function's init. The crypto
    // provider is the process's from now on (cheap, and other clients rely on it).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = Arc::new(std::sync::OnceLock::new());
    Arc::new(
        configs
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    Arc::new(Provider::sharing(c.clone(), http.clone())),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
