//! The authorization request (`/oauth/authorize`): checked as RFC 6749 §4.1 with OAuth 2.1's
//! rules (authorization code only, PKCE with S256 required, `state` required), RFC 8707's
//! `resource` and RFC 9207's `iss` in every answer sent back to the app.
//!
//! Until the app and its redirect URI are known to match, nothing is sent to that URI: the
//! refusal is shown to the driver instead (§4.1.2.1). After, every refusal goes back to the
//! app with its RFC code. The app is a registered one (`pdc_...`) or a client known by its
//! metadata document's URL ([`client_documents`]); a document that cannot be read or breaks
//! a rule is shown to the driver like an unknown app.

use std::sync::Arc;

use url::Url;

use crate::apps::{self, App};
use crate::client_documents::{self, ClientDocument, ClientDocuments};
use crate::codes::{self, CodeGrant};
use crate::errors::ErrorCode;
use crate::grants;
use paddock_identity::identity::app_tokens::Resource;
use paddock_identity::identity::personal_tokens::Scope;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::StoreError;

/// The longest `state` accepted.
pub const MAX_STATE_CHARS: usize = 512;

/// The client an authorization request comes from.
#[derive(Debug, Clone)]
pub enum RequestingClient {
    /// An app a driver registered.
    Registered(App),
    /// A client known by its metadata document's URL: no owner, public.
    Document(Arc<ClientDocument>),
}

impl RequestingClient {
    /// Its client id.
    pub fn client_id(&self) -> &str {
        match self {
            Self::Registered(app) => &app.client_id,
            Self::Document(document) => &document.client_id,
        }
    }

    /// Its name, as drivers read it on the consent page.
    pub fn name(&self) -> &str {
        match self {
            Self::Registered(app) => &app.name,
            Self::Document(document) => &document.name,
        }
    }

    /// Whether `presented` is one of its redirect URIs.
    pub fn redirects_to(&self, presented: &str) -> bool {
        match self {
            Self::Registered(app) => app.redirects_to(presented),
            Self::Document(document) => document.redirects_to(presented),
        }
    }
}

/// A checked authorization request.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The app asking.
    pub client: RequestingClient,
    /// Where the answer goes (one the app registered).
    pub redirect_uri: String,
    /// The app's `state`, sent back unchanged.
    pub state: String,
    /// The PKCE challenge (S256).
    pub code_challenge: String,
    /// The scopes asked for.
    pub scopes: Vec<Scope>,
    /// The resource the tokens are for.
    pub resource: Resource,
}

/// Why an authorization request is not shown for consent.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Shown to the driver: the app or its redirect URI is unknown, so nothing is sent back.
    #[error("{0}")]
    Page(String),
    /// Sent back to the app: this URL (its redirect URI with `error`, `state` and `iss`).
    #[error("redirect to {0}")]
    Redirect(String),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The query parameters an authorization request may have; each at most once.
pub const PARAMETERS: [&str; 8] = [
    "response_type",
    "client_id",
    "redirect_uri",
    "state",
    "code_challenge",
    "code_challenge_method",
    "scope",
    "resource",
];

/// Checks the request's query `pairs` as the server at `issuer` serves it; a client known by
/// its document's URL is read through `documents`.
pub async fn check(
    ports: &Ports,
    documents: &ClientDocuments,
    issuer: &str,
    pairs: &[(String, String)],
) -> Result<AuthorizationRequest, Refusal> {
    let count = |name: &str| pairs.iter().filter(|(k, _)| k == name).count();
    let value = |name: &str| {
        (pairs.iter())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let page = |text: &str| Err(Refusal::Page(text.to_owned()));
    if count("client_id") > 1 || count("redirect_uri") > 1 {
        return page("client_id and redirect_uri may each be given once");
    }
    let Some(client_id) = value("client_id") else {
        return page("client_id: is required");
    };
    let client = if client_documents::is_document_client(client_id) {
        match documents.document(client_id, ports.clock.unix()).await {
            Ok(document) => RequestingClient::Document(document),
            Err(refused) => return page(&refused.to_string()),
        }
    } else {
        let Some(app) = apps::find(ports, client_id).await? else {
            return page("client_id: no app is registered with this id");
        };
        RequestingClient::Registered(app)
    };
    let Some(redirect_uri) = value("redirect_uri") else {
        return page("redirect_uri: is required");
    };
    if !client.redirects_to(redirect_uri) {
        return page(match client {
            RequestingClient::Registered(_) => {
                "redirect_uri: is not one of the app's registered redirect URIs"
            }
            RequestingClient::Document(_) => {
                "redirect_uri: is not one of the redirect URIs of the client's metadata document"
            }
        });
    }
    let state = value("state").map(str::to_owned);
    let back = |code: ErrorCode, description: String| {
        Refusal::Redirect(answer_url(
            redirect_uri,
            issuer,
            &[
                ("error", code.as_str()),
                ("error_description", &description),
            ],
            state.as_deref(),
        ))
    };
    let invalid = |description: &str| back(ErrorCode::InvalidRequest, description.to_owned());
    if let Some(repeated) = PARAMETERS.iter().find(|p| count(p) > 1) {
        return Err(invalid(&format!("{repeated}: may be given once")));
    }
    match value("response_type") {
        None => return Err(invalid("response_type: is required (code)")),
        Some("code") => {}
        Some(_) => {
            let why = "response_type: only `code` is supported".into();
            return Err(back(ErrorCode::UnsupportedResponseType, why));
        }
    }
    let Some(state) = state.clone() else {
        return Err(invalid("state: is required"));
    };
    if state.chars().count() > MAX_STATE_CHARS {
        return Err(invalid("state: must be at most 512 characters"));
    }
    let Some(challenge) = value("code_challenge") else {
        return Err(invalid("code_challenge: is required (PKCE with S256)"));
    };
    let base64url = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    if challenge.len() != 43 || !challenge.bytes().all(base64url) {
        return Err(invalid(
            "code_challenge: must be the 43-character base64url SHA-256 of the verifier",
        ));
    }
    if value("code_challenge_method") != Some("S256") {
        return Err(invalid("code_challenge_method: must be S256"));
    }
    let Some(scope) = value("scope") else {
        return Err(back(ErrorCode::InvalidScope, "scope: is required".into()));
    };
    let mut scopes = Vec::new();
    for name in scope.split(' ').filter(|s| !s.is_empty()) {
        let Some(parsed) = Scope::parse(name) else {
            let why = format!("scope: unknown scope `{name}`");
            return Err(back(ErrorCode::InvalidScope, why));
        };
        if !scopes.contains(&parsed) {
            scopes.push(parsed);
        }
    }
    if scopes.is_empty() {
        return Err(back(ErrorCode::InvalidScope, "scope: is required".into()));
    }
    scopes.sort();
    let resource = match value("resource") {
        None => Resource::RestApi,
        Some(uri) => Resource::named(issuer, uri).ok_or_else(|| {
            let why = format!(
                "resource: this server serves {} and {}",
                Resource::RestApi.uri(issuer),
                Resource::Mcp.uri(issuer)
            );
            back(ErrorCode::InvalidTarget, why)
        })?,
    };
    Ok(AuthorizationRequest {
        client,
        redirect_uri: redirect_uri.to_owned(),
        state,
        code_challenge: challenge.to_owned(),
        scopes,
        resource,
    })
}

/// `redirect_uri` with `pairs`, `state` (when the app sent one) and `iss` added to its query.
fn answer_url(
    redirect_uri: &str,
    issuer: &str,
    pairs: &[(&str, &str)],
    state: Option<&str>,
) -> String {
    let Ok(mut url) = Url::parse(redirect_uri) else {
        return redirect_uri.to_owned();
    };
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in pairs {
            query.append_pair(k, v);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", issuer);
    }
    url.into()
}

impl AuthorizationRequest {
    /// Whether `user` already approved these scopes for this app (the page is skipped).
    pub async fn already_approved(&self, ports: &Ports, user: &UserId) -> Result<bool, StoreError> {
        let grant = grants::live(ports, user, self.client.client_id()).await?;
        Ok(grant.is_some_and(|g| g.covers(&self.scopes)))
    }

    /// `user` approves: the grant is recorded and a code issued; answers the URL that takes
    /// it back to the app.
    pub async fn approve(
        &self,
        ports: &Ports,
        issuer: &str,
        user: &UserId,
    ) -> Result<String, StoreError> {
        let app = grants::Approved {
            client_id: self.client.client_id(),
            name: self.client.name(),
        };
        let grant = grants::approve(ports, user, app, &self.scopes).await?;
        let code = codes::issue(
            ports,
            &CodeGrant {
                client_id: self.client.client_id().to_owned(),
                user_id: user.clone(),
                family_id: grant.family_id,
                redirect_uri: self.redirect_uri.clone(),
                scopes: self.scopes.clone(),
                resource: self.resource,
            },
            &self.code_challenge,
        )
        .await?;
        Ok(answer_url(
            &self.redirect_uri,
            issuer,
            &[("code", &code)],
            Some(&self.state),
        ))
    }

    /// `user` denies: the URL that tells the app so.
    pub fn deny(&self, issuer: &str) -> String {
        let why = [
            ("error", ErrorCode::AccessDenied.as_str()),
            ("error_description", "the driver denied the request"),
        ];
        answer_url(&self.redirect_uri, issuer, &why, Some(&self.state))
    }
}
