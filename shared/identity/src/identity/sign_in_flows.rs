//! Browser sign-in flows in progress, kept in the item store (never in process memory).
//!
//! Key (table `tokens`): `FLOW#<sha256 hex of state>` / `FLOW`:
//! `{provider, redirectUri, codeChallenge, pkceVerifier, nonce, ttl}`; 10 minutes, consumed once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Key, StoreError, TTL, item};
use paddock_kernel::tables::Table;

/// How long a sign-in may take.
pub const LIFETIME_SECS: i64 = 10 * 60;

/// A flow started by `GET /v1/auth/login/{provider}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInFlow {
    /// The provider the flow started with.
    pub provider: String,
    /// The desktop client's loopback listener.
    pub redirect_uri: String,
    /// The desktop client's PKCE challenge (S256), checked at `/v1/auth/exchange`.
    pub code_challenge: String,
    /// Our own PKCE verifier towards the provider.
    pub pkce_verifier: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
}

fn flow_key(state: &str) -> Key {
    Key::new(
        format!("FLOW#{}", paddock_kernel::hashing::sha256_hex(state)),
        "FLOW",
    )
}

/// Stores `flow` under `state`.
pub async fn save(ports: &Ports, state: &str, flow: &SignInFlow) -> Result<(), StoreError> {
    let mut attrs = serde_json::to_value(flow).expect("a flow serialises");
    attrs[TTL] = Value::from(ports.clock.unix() + LIFETIME_SECS);
    ports
        .items
        .put(
            Table::Tokens,
            item(&flow_key(state), attrs),
            Some(Condition::NotExists),
        )
        .await
}

/// Takes the flow of `state` (a conditional delete: a state works once).
pub async fn take(ports: &Ports, state: &str) -> Result<Option<SignInFlow>, StoreError> {
    match ports
        .items
        .delete(Table::Tokens, &flow_key(state), Some(Condition::Exists))
        .await
    {
        Ok(Some(item)) => Ok(serde_json::from_value(Value::Object(item)).ok()),
        Ok(None) => Ok(None),
        Err(e) if e.is_condition_failed_at(0) => Ok(None),
        Err(e) => Err(e),
    }
}
