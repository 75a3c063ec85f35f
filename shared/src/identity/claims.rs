//! The claims of an access token: what every authenticated request knows of its caller.

use serde::{Deserialize, Serialize};

use crate::ids::UserId;

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: UserId,
    pub email: Option<String>,
    pub display_name: String,
    pub avatar_url: Option<String>,
    pub jti: String,
    pub iss: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub sid: String,
}
