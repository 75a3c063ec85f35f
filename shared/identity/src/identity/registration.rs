//! A new account signed in at once: the account, its email claim and its first refresh-token
//! family in one transaction (one round trip; no account without its tokens, or the reverse).

use super::refresh_tokens::{self, Issued};
use super::users::{self, RegisterError, User};
use paddock_kernel::ports::Ports;

/// [`users::register`] and the account's first sign-in (a new refresh-token family) in the
/// same transaction: the account and its tokens are made together, in one round trip.
pub async fn register_signed_in(
    ports: &Ports,
    user: &User,
    normalized_email: &str,
    password_hash: String,
) -> Result<Issued, RegisterError> {
    let (issued, sign_in) = refresh_tokens::new_family_ops(ports, &user.id);
    users::register_with(ports, user, normalized_email, password_hash, sign_in).await?;
    Ok(issued)
}
