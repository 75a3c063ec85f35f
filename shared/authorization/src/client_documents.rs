//! Clients identified by a Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document,
//! as MCP's authorization spec uses it): the `client_id` is an https URL, and the JSON document
//! found there says the client's name and redirect URIs. Such a client needs no registration,
//! so an AI client can ask any driver for consent at once; it has no owner, counts against no
//! driver's apps, and is public (PKCE alone: its document may not name a secret or another
//! authentication method).
//!
//! The document is fetched under the webhook address rules (`webhook_address`: https, every
//! resolved address public; plain http to loopback only under the same local-test setting),
//! through a [`DocumentFetcher`] that follows no redirect and gives up past
//! [`MAX_DOCUMENT_BYTES`] or [`FETCH_TIMEOUT`]. A valid document is kept in the process for its
//! `Cache-Control: max-age` (at most [`MAX_TTL_SECS`], [`DEFAULT_TTL_SECS`] without one); a
//! refusal is not kept, so a corrected document is read on the next request.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use url::Url;
use webhook_address::{Policy, Refused, WebhookUrl};

use crate::redirect_uris;

/// The largest document read, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// How long a fetch may take, from the connection to the document's last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest client id URL accepted, in bytes (it is part of a grant's sort key).
pub const MAX_CLIENT_ID_BYTES: usize = 512;
/// How long a document without `max-age` is kept.
pub const DEFAULT_TTL_SECS: i64 = 300;
/// The longest a document is kept, whatever its `max-age`.
pub const MAX_TTL_SECS: i64 = 3600;
/// The most documents kept in one process.
pub const MAX_CACHED: usize = 1000;
/// The most redirect URIs a document may list.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest client name shown, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Whether `client_id` names a metadata document (a URL) rather than a registered app.
pub fn is_document_client(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// What a fetch answered.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The HTTP status.
    pub status: u16,
    /// The body, at most [`MAX_DOCUMENT_BYTES`].
    pub body: Vec<u8>,
    /// The `Cache-Control` header, if any.
    pub cache_control: Option<String>,
}

/// Why a fetch got no document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchFailure {
    /// The URL or an address it resolves to breaks an address rule.
    #[error("was not fetched: its URL {}", refused_words(.0))]
    Refused(Refused),
    /// No complete answer within [`FETCH_TIMEOUT`].
    #[error("did not answer within {} seconds", FETCH_TIMEOUT.as_secs())]
    Timeout,
    /// The document is larger than [`MAX_DOCUMENT_BYTES`].
    #[error("is larger than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge,
    /// No connection, or it broke (the cause in words, for the logs: the page does not say
    /// which failure it was, so it cannot be used to scan ports).
    #[error("could not be reached")]
    Connection(String),
}

/// An address rule and the address that broke it, in words.
fn refused_words(refused: &Refused) -> String {
    let address = refused.address.map(|a| format!(" ({a})"));
    format!("{}{}", refused.rule.describe(), address.unwrap_or_default())
}

/// Fetches a document (`GET` with `Accept: application/json`) under the address rules.
#[async_trait::async_trait]
pub trait DocumentFetcher: Send + Sync {
    /// The address rules it connects under.
    fn policy(&self) -> Policy;
    /// Fetches `url`, refusing any address the rules forbid, any redirect (answered as its
    /// status), a body past [`MAX_DOCUMENT_BYTES`] and an answer past [`FETCH_TIMEOUT`].
    async fn get(&self, url: &WebhookUrl) -> Result<Fetched, FetchFailure>;
}

/// A fetcher for a process not given one: no document can be read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwired;

#[async_trait::async_trait]
impl DocumentFetcher for Unwired {
    fn policy(&self) -> Policy {
        Policy::default()
    }

    async fn get(&self, _: &WebhookUrl) -> Result<Fetched, FetchFailure> {
        Err(FetchFailure::Connection(
            "this function reads no documents".into(),
        ))
    }
}

/// Why a client id's document is not accepted; each says what is wrong, for the page the
/// driver sees and the app's developer reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    /// The client id is not a URL a document may be at.
    #[error("client_id: {0}")]
    Url(String),
    /// The document could not be read.
    #[error("client_id: the client's metadata document {0}")]
    Fetch(FetchFailure),
    /// The document's URL answered another status than 200.
    #[error("client_id: the client's metadata document answered HTTP {0}, not 200")]
    Status(u16),
    /// The document breaks a rule: the field and the rule.
    #[error("client_id: the client's metadata document: {field} {rule}")]
    Invalid {
        /// The field, as the document names it.
        field: String,
        /// The rule it breaks.
        rule: String,
    },
}

fn invalid(field: impl Into<String>, rule: impl Into<String>) -> DocumentError {
    DocumentError::Invalid {
        field: field.into(),
        rule: rule.into(),
    }
}

/// A client id checked as a document's URL: https (or http to loopback under the local-test
/// setting), with a path, no fragment, no user part, no `.` or `..` segment.
pub fn document_url(client_id: &str, policy: Policy) -> Result<WebhookUrl, DocumentError> {
    let refuse = |rule: &str| Err(DocumentError::Url(rule.to_owned()));
    if client_id.len() > MAX_CLIENT_ID_BYTES {
        return refuse(&format!(
            "a client id URL must be at most {MAX_CLIENT_ID_BYTES} bytes"
        ));
    }
    let url = WebhookUrl::parse(client_id, policy)
        .map_err(|r| DocumentError::Url(format!("a client id URL {}", refused_words(&r))))?;
    let Ok(parsed) = Url::parse(client_id) else {
        return refuse("must be an absolute URL");
    };
    if parsed.fragment().is_some() || client_id.contains('#') {
        return refuse("a client id URL must not have a fragment");
    }
    if parsed.path() == "/" || parsed.path().is_empty() {
        return refuse(
            "a client id URL must have a path (the document's, e.g. /oauth/client.json)",
        );
    }
    // The parser removes dot segments; the client id as sent must not have had any.
    let after_host = client_id
        .split_once("://")
        .map_or("", |(_, rest)| rest.split_once('/').map_or("", |(_, p)| p));
    let path = after_host.split(['?', '#']).next().unwrap_or_default();
    if path.split('/').any(|s| s == "." || s == "..") {
        return refuse("a client id URL must not have `.` or `..` path segments");
    }
    Ok(url)
}

/// A client's metadata document, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientDocument {
    /// The client id: the document's URL, as the client sends it.
    pub client_id: String,
    /// The name the document gives (`client_name`), or the URL's host without one.
    pub name: String,
    /// The host of the document's URL, which is what identifies the client.
    pub host: String,
    /// Where codes may be sent.
    pub redirect_uris: Vec<String>,
}

impl ClientDocument {
    /// Whether `presented` is one of the document's redirect URIs (byte for byte, a loopback
    /// URI's port aside, as for registered apps).
    pub fn redirects_to(&self, presented: &str) -> bool {
        (self.redirect_uris.iter()).any(|listed| redirect_uris::matches(listed, presented))
    }
}

/// Checks the document found at `client_id`.
pub fn parse(client_id: &str, host: &str, body: &[u8]) -> Result<ClientDocument, DocumentError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| invalid("the document", "must be JSON (application/json)"))?;
    let Some(fields) = value.as_object() else {
        return Err(invalid("the document", "must be a JSON object"));
    };
    if fields.get("client_id").and_then(Value::as_str) != Some(client_id) {
        return Err(invalid(
            "client_id",
            "must be the document's URL exactly, as the client sends it",
        ));
    }
    for secret in ["client_secret", "client_secret_expires_at"] {
        if fields.contains_key(secret) {
            return Err(invalid(
                secret,
                "must not be given: a client identified by its document has no secret",
            ));
        }
    }
    match fields.get("token_endpoint_auth_method") {
        None => {}
        Some(Value::String(method)) if method == "none" => {}
        Some(_) => {
            return Err(invalid(
                "token_endpoint_auth_method",
                "must be `none`: a client identified by its document is public (PKCE alone)",
            ));
        }
    }
    listing("grant_types", fields, "authorization_code")?;
    listing("response_types", fields, "code")?;
    let name = match fields.get("client_name") {
        None => host.to_owned(),
        Some(Value::String(name)) => hidden_characters::shown_text(name, 1, MAX_NAME_CHARS)
            .map_err(|rule| invalid("client_name", rule))?,
        Some(_) => return Err(invalid("client_name", "must be a string")),
    };
    let uris = fields
        .get("redirect_uris")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("redirect_uris", "is required: a list of URIs"))?;
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return Err(invalid(
            "redirect_uris",
            format!("must hold 1 to {MAX_REDIRECT_URIS} URIs"),
        ));
    }
    let mut redirect_uris = Vec::new();
    for (i, uri) in uris.iter().enumerate() {
        let field = format!("redirect_uris[{i}]");
        let uri = uri
            .as_str()
            .ok_or_else(|| invalid(&field, "must be a string"))?;
        redirect_uris::check(uri).map_err(|rule| invalid(&field, rule))?;
        redirect_uris.push(uri.to_owned());
    }
    Ok(ClientDocument {
        client_id: client_id.to_owned(),
        name,
        host: host.to_owned(),
        redirect_uris,
    })
}

/// `field`, when given, must be a list holding `needed`.
fn listing(field: &str, fields: &Map<String, Value>, needed: &str) -> Result<(), DocumentError> {
    match fields.get(field) {
        None => Ok(()),
        Some(Value::Array(items)) if items.iter().any(|i| i.as_str() == Some(needed)) => Ok(()),
        Some(_) => Err(invalid(field, format!("must list `{needed}`"))),
    }
}

/// How long an answer with `cache_control` may be kept, in seconds (0: not at all).
pub fn kept_for(cache_control: Option<&str>) -> i64 {
    let Some(header) = cache_control else {
        return DEFAULT_TTL_SECS;
    };
    let mut max_age = None;
    for directive in header.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if directive == "no-store" || directive == "no-cache" {
            return 0;
        }
        if let Some(age) = directive.strip_prefix("max-age=") {
            max_age = Some(age.trim_matches('"').parse::<i64>().unwrap_or(0));
        }
    }
    max_age.map_or(DEFAULT_TTL_SECS, |age| age.clamp(0, MAX_TTL_SECS))
}

#[derive(Clone)]
struct Kept {
    document: Arc<ClientDocument>,
    until: i64,
}

/// The documents of the clients that identify themselves by URL: fetched through a
/// [`DocumentFetcher`] and kept in the process (bounded in entries and in time).
pub struct ClientDocuments {
    fetcher: Arc<dyn DocumentFetcher>,
    kept: quick_cache::sync::Cache<String, Kept>,
}

impl std::fmt::Debug for ClientDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientDocuments")
            .field("kept", &self.kept.len())
            .finish()
    }
}

impl ClientDocuments {
    /// Documents read through `fetcher`.
    pub fn new(fetcher: Arc<dyn DocumentFetcher>) -> Self {
        Self {
            fetcher,
            kept: quick_cache::sync::Cache::new(MAX_CACHED),
        }
    }

    /// Whether the document of `client_id` is kept at `now`: reading it fetches nothing.
    pub fn is_kept(&self, client_id: &str, now: i64) -> bool {
        self.kept
            .get(client_id)
            .is_some_and(|kept| kept.until > now)
    }

    /// The checked document of `client_id` at `now` (unix seconds): kept, or fetched.
    pub async fn document(
        &self,
        client_id: &str,
        now: i64,
    ) -> Result<Arc<ClientDocument>, DocumentError> {
        if let Some(kept) = self.kept.get(client_id)
            && kept.until > now
        {
            return Ok(kept.document);
        }
        let url = document_url(client_id, self.fetcher.policy())?;
        let fetched = self.fetcher.get(&url).await.map_err(DocumentError::Fetch)?;
        if fetched.status != 200 {
            return Err(DocumentError::Status(fetched.status));
        }
        let document = Arc::new(parse(client_id, &url.host(), &fetched.body)?);
        let ttl = kept_for(fetched.cache_control.as_deref());
        if ttl > 0 {
            let kept = Kept {
                document: document.clone(),
                until: now + ttl,
            };
            self.kept.insert(client_id.to_owned(), kept);
        } else {
            self.kept.remove(client_id);
        }
        Ok(document)
    }
}

#[cfg(test)]
mod tests;
