//! What the webhooks consumer needs of an HTTP client (`paddock-clients` provides it): one
//! POST to a checked address, no redirects followed, a bounded answer, a short deadline.

use std::time::Duration;

use async_trait::async_trait;

use super::address::{Policy, Refused, WebhookUrl};

/// How long a delivery may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// The most of an answer's body read (the rest is dropped; the history keeps less).
pub const MAX_ANSWER_BYTES: usize = 4096;

/// One signed webhook request.
#[derive(Debug, Clone)]
pub struct WebhookRequest {
    /// Where to.
    pub url: WebhookUrl,
    /// Headers besides `content-type: application/json`.
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body.
    pub body: String,
}

impl WebhookRequest {
    /// A request of `body` to `url` as Standard Webhooks signs it: `webhook-id`,
    /// `webhook-timestamp` and a `webhook-signature` by each of `secrets`.
    pub fn signed(url: WebhookUrl, id: &str, timestamp: i64, secrets: &[&str], body: &str) -> Self {
        Self {
            url,
            headers: vec![
                ("webhook-id", id.to_owned()),
                ("webhook-timestamp", timestamp.to_string()),
                (
                    "webhook-signature",
                    super::signing::signature_header(secrets, id, timestamp, body),
                ),
                ("user-agent", "Paddock-Webhooks/1".to_owned()),
            ],
            body: body.to_owned(),
        }
    }
}

/// The receiver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The start of the body (at most [`MAX_ANSWER_BYTES`]).
    pub body: String,
}

/// Why a delivery got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryFailure {
    /// The URL or an address it resolves to breaks a rule.
    #[error(transparent)]
    Refused(Refused),
    /// No answer within [`TIMEOUT`].
    #[error("no answer within {} s", TIMEOUT.as_secs())]
    Timeout,
    /// The connection failed (refused, reset, TLS).
    #[error("connection failed: {0}")]
    Connection(String),
}

/// Sends webhook requests.
#[async_trait]
pub trait WebhookClient: Send + Sync {
    /// The address rules this client connects under.
    fn policy(&self) -> Policy;
    /// Posts `request` to an address its host resolves to, after every such address passed
    /// the rules; never follows a redirect (a 3xx is an answer, and not a success).
    async fn post(&self, request: WebhookRequest) -> Result<WebhookAnswer, DeliveryFailure>;
}

/// The client of a process that was given none: every delivery fails (and is tried again
/// later, by a process that has one). Events of drivers without subscriptions pass as
/// everywhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwired;

#[async_trait]
impl WebhookClient for Unwired {
    fn policy(&self) -> Policy {
        Policy::default()
    }

    async fn post(&self, _: WebhookRequest) -> Result<WebhookAnswer, DeliveryFailure> {
        Err(DeliveryFailure::Connection(
            "no webhook client is wired in this process".into(),
        ))
    }
}
