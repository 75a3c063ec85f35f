//! Identity: accounts, passwords, access tokens, rotating refresh tokens, one-time exchange
//! codes and the desktop sign-in flow with identity providers.

pub mod access_tokens;
pub mod app_tokens;
pub mod authentication;
pub mod capped_lists;
pub mod claims;
pub mod exchange_codes;
pub mod fields;
pub mod password_changes;
pub mod password_sign_in;
pub mod passwords;
pub mod personal_tokens;
pub mod profiles;
pub mod provider_accounts;
pub mod refresh_tokens;
pub mod registration;
pub mod sign_in_flows;
pub mod signing_keys;
pub mod users;
pub mod verified_tokens;

use paddock_kernel::hashing::sha256_hex;

// `leaderboards::submit` still names the limiter by its former place.

/// The name of an account in its sign-in rate limits and known addresses: part of its
/// normalised email's hash, so the limits table holds no addresses.
pub fn account_subject(normalized_email: &str) -> String {
    sha256_hex(normalized_email)[..32].to_owned()
}
