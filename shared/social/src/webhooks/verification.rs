//! A receiver proves it wants a subscription's deliveries before any is sent to it, so a
//! driver cannot point the service at somebody else's server.
//!
//! When a subscription is made, its URL changed, or it is resumed after a pause, the service
//! posts one request signed with the subscription's secret, as every delivery is:
//! `{"type": "webhook.verification", "timestamp", "data": {"challenge": "<random>"}}`. The
//! receiver confirms by answering 2xx with the challenge anywhere in its body (for example
//! `{"challenge": "<the value>"}`). A server that merely accepts posts does not echo a value
//! it has never seen, so an answer without it is refused. Every such request counts against
//! the driver's receiver checks ([`ReceiverChecks`]), as `POST /v1/webhooks/{id}/test` does.

use time::OffsetDateTime;

use super::address::WebhookUrl;
use super::client::{WebhookClient, WebhookRequest};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::rate_limits::{self, Limit, LimitError};

/// The type of the verification request.
pub const EVENT_TYPE: &str = "webhook.verification";

/// Why a receiver is not confirmed. The texts do not tell one network failure from another,
/// so the answer cannot be used to probe which ports of a host are open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unconfirmed {
    /// No HTTP answer (refused, reset, timed out, TLS): all read the same.
    #[error(
        "url: the receiver did not answer the signed webhook.verification request; it must answer 2xx with the request's data.challenge in its body"
    )]
    NoAnswer,
    /// An answer that was not 2xx.
    #[error(
        "url: the receiver answered {0} to the signed webhook.verification request; it must answer 2xx with the request's data.challenge in its body"
    )]
    Status(u16),
    /// A 2xx answer without the challenge.
    #[error(
        "url: the receiver's answer to the signed webhook.verification request did not hold its data.challenge"
    )]
    NoChallenge,
}

/// How many requests a driver may have the service send to receivers on demand
/// (verifications and tests), per hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverChecks {
    /// Requests per driver per hour (`Limits__WebhookChecksPerHour`).
    pub per_hour: u32,
}

impl ReceiverChecks {
    /// Counts one request of `user` to a receiver; over the limit it is refused (429).
    pub async fn admit(self, ports: &Ports, user: &UserId) -> Result<(), LimitError> {
        let limits = [Limit::new("n", self.per_hour)];
        rate_limits::hit(ports, SCOPE, user.as_str(), 3600, &limits).await
    }
}

/// The rate-limit scope of receiver checks (`limits`: `RL#webhook-check#<user id>`).
pub const SCOPE: &str = "webhook-check";

/// Posts the signed verification request to `url` and checks the answer.
pub async fn confirm(
    client: &dyn WebhookClient,
    url: WebhookUrl,
    secret: &str,
    now: OffsetDateTime,
) -> Result<(), Unconfirmed> {
    let challenge = paddock_kernel::hashing::random_token(24);
    let body = serde_json::json!({
        "type": EVENT_TYPE,
        "timestamp": rfc3339(now),
        "data": { "challenge": challenge },
    })
    .to_string();
    let webhook_id = format!("verify_{}", uuid::Uuid::now_v7());
    let timestamp = now.unix_timestamp();
    let request = WebhookRequest::signed(url, &webhook_id, timestamp, &[secret], &body);
    match client.post(request).await {
        Ok(answer) if !(200..300).contains(&answer.status) => {
            Err(Unconfirmed::Status(answer.status))
        }
        Ok(answer) if answer.body.contains(&challenge) => Ok(()),
        Ok(_) => Err(Unconfirmed::NoChallenge),
        Err(e) => {
            tracing::info!(error = %e, "a webhook receiver did not answer its verification");
            Err(Unconfirmed::NoAnswer)
        }
    }
}
