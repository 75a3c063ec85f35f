//! The claims of an access token: what every authenticated request knows of its caller.

use serde::{Deserialize, Serialize};

use paddock_kernel::ids::UserId;

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: UserId,
    /// The account email, if any.
    pub email: Option<String>,
    /// Shown on leaderboards and the feed.
    pub display_name: String,
    /// Profile image URL (https), if any.
    pub avatar_url: Option<String>,
    /// A unique id of this token.
    pub jti: String,
    /// Issuer (`Jwt__Issuer`).
    pub iss: String,
    /// Audience (`Jwt__Audience`).
    pub aud: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Issue time, Unix seconds.
    pub iat: i64,
    /// The refresh-token family (sign-in) the token belongs to.
    pub sid: String,
}
