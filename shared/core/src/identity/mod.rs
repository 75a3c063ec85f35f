//! Identity: accounts, passwords, access tokens, rotating refresh tokens, rate limits,
//! one-time exchange codes and the desktop sign-in flow with identity providers.

pub mod access_tokens;
pub mod claims;
pub mod exchange_codes;
pub mod fields;
pub mod password_changes;
pub mod passwords;
pub mod personal_tokens;
pub mod profiles;
pub mod provider_accounts;
pub mod rate_limits;
pub mod refresh_tokens;
pub mod sign_in_flows;
pub mod signing_keys;
pub mod users;
pub mod verified_tokens;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// `n` random bytes from the OS generator, base64url without padding.
pub fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Hex SHA-256 of a secret value: what the store keeps instead of the value.
pub fn sha256_hex(value: &str) -> String {
    hex(&Sha256::digest(value.as_bytes()))
}

/// The name of an account in its sign-in rate limits and known addresses: part of its
/// normalised email's hash, so the limits table holds no addresses.
pub fn account_subject(normalized_email: &str) -> String {
    sha256_hex(normalized_email)[..32].to_owned()
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// base64url(SHA-256(value)): the PKCE S256 transform.
pub fn s256(value: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(value.as_bytes()))
}
