//! Access tokens: HS256 JWTs with the spec's claims plus `iat` and `sid` (the refresh-token
//! family). One algorithm is pinned; `none`, other algorithms and unknown key ids are refused.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use time::OffsetDateTime;

use super::users::User;
use super::verified_tokens::VerifiedTokens;
use crate::config::JwtSettings;

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
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

/// Signs and checks access tokens with one key.
pub struct AccessTokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    kid: String,
    validation: Validation,
    settings: JwtSettings,
    verified: VerifiedTokens,
}

impl AccessTokens {
    /// Tokens signed with `secret` (the `jwtSigningKey` secret) under `settings`.
    pub fn new(secret: &str, settings: &JwtSettings) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[&settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Expiry is judged by the service's clock port (below), so tests can move time.
        validation.validate_exp = false;
        validation.leeway = 0;
        Self {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            kid: super::sha256_hex(secret)[..16].to_owned(),
            validation,
            settings: settings.clone(),
            verified: VerifiedTokens::default(),
        }
    }

    /// Lifetime of a new token in seconds.
    pub fn lifetime_secs(&self) -> i64 {
        i64::from(self.settings.expiry_minutes) * 60
    }

    /// A new token for `user` in family `sid`; returns it with its claims.
    pub fn issue(&self, user: &User, sid: &str, now: OffsetDateTime) -> (String, Claims) {
        let iat = now.unix_timestamp();
        let claims = Claims {
            sub: user.id.clone(),
            email: user.email.clone(),
            display_name: user.display_name.clone(),
            avatar_url: user.avatar_url.clone(),
            jti: uuid::Uuid::new_v4().to_string(),
            iss: self.settings.issuer.clone(),
            aud: self.settings.audience.clone(),
            exp: iat + self.lifetime_secs(),
            iat,
            sid: sid.to_owned(),
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        let token = jsonwebtoken::encode(&header, &claims, &self.encoding)
            .expect("HS256 signing cannot fail");
        (token, claims)
    }

    /// The claims of a valid, unexpired token signed by this key.
    pub fn verify(&self, token: &str, now: OffsetDateTime) -> Result<Arc<Claims>, &'static str> {
        let now = now.unix_timestamp();
        let claims = match self.verified.get(token) {
            Some(claims) => claims,
            None => {
                let claims = Arc::new(self.decode(token)?);
                self.verified.insert(token, claims.clone(), now);
                claims
            }
        };
        if claims.exp <= now {
            return Err("token expired");
        }
        Ok(claims)
    }

    /// Full verification: signature, pinned algorithm, key id, issuer and audience.
    fn decode(&self, token: &str) -> Result<Claims, &'static str> {
        // The validation pins HS256 (so `none` and every other algorithm fail); the key id is
        // checked on the decoded header, so one parse serves both checks.
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| "invalid token")?;
        if data.header.kid.as_deref() != Some(self.kid.as_str()) {
            return Err("token not signed by this service");
        }
        Ok(data.claims)
    }
}
