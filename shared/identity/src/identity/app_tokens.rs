//! An app's access tokens: what a driver's consent lets an OAuth app do for them.
//!
//! A token reads `pda_` + a JWT (RFC 9068's `at+jwt` header type, HS256 with the sign-in keys)
//! whose claims name the driver (`sub`), the app (`client_id`), the grant (`gid`: the
//! refresh-token family of the driver's consent, so revoking the grant shuts out its access
//! tokens on their next request), the scopes and the audience: the resource the token was
//! asked for (RFC 8707), the REST API or the MCP endpoint, each refusing the other's tokens.
//! The prefix tells the token apart from a sign-in's before any work, as `pdk_` does for a
//! personal access token.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::access_tokens::AccessTokens;
use super::personal_tokens::Scope;
use paddock_kernel::ids::UserId;

/// What every app access token starts with.
pub const PREFIX: &str = "pda_";
/// The JWT header type of an app's access token (RFC 9068).
const TYP: &str = "at+jwt";
/// An app access token's lifetime: short, so that a revocation the grant check would miss
/// (none is known) could not outlive it by much.
pub const LIFETIME_SECS: i64 = 600;

/// A resource an app's token is bound to (RFC 8707 `resource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// The REST API under `/v1`.
    RestApi,
    /// The MCP endpoint.
    Mcp,
}

impl Resource {
    /// Every resource this server issues tokens for.
    pub const ALL: [Resource; 2] = [Resource::RestApi, Resource::Mcp];

    /// The resource's path under the issuer's URL.
    pub fn path(self) -> &'static str {
        match self {
            Resource::RestApi => "/v1",
            Resource::Mcp => "/mcp",
        }
    }

    /// The resource's identifier under `issuer` (the server's public URL).
    pub fn uri(self, issuer: &str) -> String {
        format!("{issuer}{}", self.path())
    }

    /// The resource `uri` names under `issuer`, if it is one of this server's.
    pub fn named(issuer: &str, uri: &str) -> Option<Resource> {
        let path = uri.strip_prefix(issuer)?;
        Self::ALL.into_iter().find(|r| r.path() == path)
    }
}

/// The claims of an app's access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppClaims {
    /// The server's public URL, the authorization server's issuer.
    pub iss: String,
    /// The driver the app acts for.
    pub sub: UserId,
    /// The resource the token is for ([`Resource::uri`]).
    pub aud: String,
    /// The app's client id.
    pub client_id: String,
    /// The grant: the refresh-token family of the driver's consent.
    pub gid: String,
    /// The scopes granted, space-separated (RFC 9068 `scope`).
    pub scope: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Issue time, Unix seconds.
    pub iat: i64,
    /// A unique id of this token.
    pub jti: String,
}

impl AppClaims {
    /// The scopes granted (unknown names, from a later version, are left out).
    pub fn scopes(&self) -> Vec<Scope> {
        self.scope.split(' ').filter_map(Scope::parse).collect()
    }
}

/// What a new app token is issued for.
#[derive(Debug, Clone)]
pub struct AppTokenRequest<'a> {
    /// The issuer (the server's public URL).
    pub issuer: &'a str,
    /// The driver.
    pub user_id: &'a UserId,
    /// The app.
    pub client_id: &'a str,
    /// The grant's family.
    pub grant_id: &'a str,
    /// The scopes granted.
    pub scopes: &'a [Scope],
    /// The resource it is bound to.
    pub resource: Resource,
}

/// Whether a bearer value is meant as an app's access token.
pub fn is_app_token(bearer: &str) -> bool {
    bearer.starts_with(PREFIX)
}

/// A new access token for `request`, signed by `keys`, and its claims.
pub fn issue(
    keys: &AccessTokens,
    request: &AppTokenRequest<'_>,
    now: OffsetDateTime,
) -> (String, AppClaims) {
    let iat = now.unix_timestamp();
    let scope: Vec<&str> = request.scopes.iter().map(|s| s.name()).collect();
    let claims = AppClaims {
        iss: request.issuer.to_owned(),
        sub: request.user_id.clone(),
        aud: request.resource.uri(request.issuer),
        client_id: request.client_id.to_owned(),
        gid: request.grant_id.to_owned(),
        scope: scope.join(" "),
        exp: iat + LIFETIME_SECS,
        iat,
        jti: uuid::Uuid::new_v4().to_string(),
    };
    (format!("{PREFIX}{}", keys.sign(TYP, &claims)), claims)
}

/// The claims of `token` if it is an unexpired app token of these keys for `resource`
/// (`Err`: why not).
pub fn verify(
    keys: &AccessTokens,
    token: &str,
    resource: Resource,
    now: i64,
) -> Result<AppClaims, &'static str> {
    let jwt = token.strip_prefix(PREFIX).ok_or("invalid token")?;
    let claims: AppClaims = keys.decode_as(jwt, TYP)?;
    if claims.exp <= now {
        return Err("token expired");
    }
    if Resource::named(&claims.iss, &claims.aud) != Some(resource) {
        return Err("token was issued for another resource (its audience is not this one)");
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_config::config::JwtSettings;

    const KEY: &str = "a signing key of at least thirty-two characters";

    fn keys() -> AccessTokens {
        let settings = JwtSettings {
            issuer: "paddock".into(),
            audience: "paddock-desktop".into(),
            expiry_minutes: 60,
        };
        AccessTokens::new(KEY, &[], &settings)
    }

    #[test]
    fn a_token_is_bound_to_its_resource_and_its_lifetime() {
        let keys = keys();
        let user = UserId::new();
        let now = OffsetDateTime::now_utc();
        let request = AppTokenRequest {
            issuer: "https://paddock.example",
            user_id: &user,
            client_id: "app",
            grant_id: "family",
            scopes: &[Scope::BoardsRead, Scope::ProfileRead],
            resource: Resource::RestApi,
        };
        let (token, claims) = issue(&keys, &request, now);
        assert!(is_app_token(&token));
        assert_eq!(claims.aud, "https://paddock.example/v1");
        let at = now.unix_timestamp();
        let read = verify(&keys, &token, Resource::RestApi, at).unwrap();
        assert_eq!(read.scopes(), [Scope::BoardsRead, Scope::ProfileRead]);
        assert!(verify(&keys, &token, Resource::Mcp, at).is_err());
        assert_eq!(
            verify(&keys, &token, Resource::RestApi, at + LIFETIME_SECS),
            Err("token expired")
        );
        // A sign-in's token, or one whose prefix is taken off, is not an app token.
        assert!(verify(&keys, &token[PREFIX.len()..], Resource::RestApi, at).is_err());
        let signed_in = keys.sign("JWT", &claims);
        assert!(
            verify(
                &keys,
                &format!("{PREFIX}{signed_in}"),
                Resource::RestApi,
                at
            )
            .is_err()
        );
    }
}
