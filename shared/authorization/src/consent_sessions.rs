//! The consent page's sign-in: a short-lived cookie value that names the driver who signed in
//! on the page, signed with the sign-in keys under a type and audience of its own, so it is
//! neither a sign-in's token nor an app's.

use serde::{Deserialize, Serialize};

use paddock_identity::identity::access_tokens::AccessTokens;
use paddock_kernel::ids::UserId;

/// How long a driver stays signed in on the consent pages.
pub const LIFETIME_SECS: i64 = 600;
/// The header type of the value.
const TYP: &str = "consent+jwt";
/// Its audience.
const AUDIENCE: &str = "paddock-consent";

#[derive(Debug, Serialize, Deserialize)]
struct SessionClaims {
    iss: String,
    sub: UserId,
    aud: String,
    exp: i64,
    iat: i64,
}

/// A new session value for `user`, issued by `issuer` at `now` (Unix seconds).
pub fn issue(keys: &AccessTokens, issuer: &str, user: &UserId, now: i64) -> String {
    let claims = SessionClaims {
        iss: issuer.to_owned(),
        sub: user.clone(),
        aud: AUDIENCE.to_owned(),
        exp: now + LIFETIME_SECS,
        iat: now,
    };
    keys.sign(TYP, &claims)
}

/// The driver a session value of `issuer` names, if it is valid and unexpired at `now`.
pub fn signed_in(keys: &AccessTokens, issuer: &str, value: &str, now: i64) -> Option<UserId> {
    let claims: SessionClaims = keys.decode_as(value, TYP).ok()?;
    (claims.aud == AUDIENCE && claims.iss == issuer && claims.exp > now).then_some(claims.sub)
}
