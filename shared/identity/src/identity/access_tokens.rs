//! Access tokens: HS256 JWTs with the spec's claims plus `iat` and `sid` (the refresh-token
//! family). One algorithm is pinned; `none`, other algorithms and unknown key ids are refused.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use std::collections::HashMap;
use std::sync::Arc;
use time::OffsetDateTime;

pub use super::claims::Claims;
use super::users::User;
use super::verified_tokens::VerifiedTokens;
use paddock_config::config::JwtSettings;

/// The key id of a signing secret: the first 16 hex digits of its SHA-256, so a token names
/// the key that signed it without revealing anything about the key.
pub fn key_id(secret: &str) -> String {
    paddock_kernel::hashing::sha256_hex(secret)[..16].to_owned()
}

/// Why a token is refused when its key id names none of the keys this process has read.
pub const UNKNOWN_KEY: &str = "token not signed by this service";

/// Signs with the current key and checks tokens signed by the current or a previous key,
/// chosen by the token's `kid`.
///
/// Rotation: make the new key `jwtSigningKey` and move the old one into
/// `jwtPreviousSigningKeys`; tokens signed before the rotation stay valid until they expire,
/// after which the old key can be dropped.
pub struct AccessTokens {
    encoding: EncodingKey,
    kid: String,
    decoding: HashMap<String, DecodingKey>,
    validation: Validation,
    settings: JwtSettings,
    verified: VerifiedTokens,
}

impl AccessTokens {
    /// Tokens signed with `current` (the `jwtSigningKey` secret) and checked against it and
    /// `previous` keys, under `settings`.
    pub fn new(current: &str, previous: &[String], settings: &JwtSettings) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[&settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Expiry is judged by the service's clock port (below), so tests can move time.
        validation.validate_exp = false;
        validation.leeway = 0;
        let decoding = std::iter::once(current)
            .chain(previous.iter().map(String::as_str))
            .map(|secret| (key_id(secret), DecodingKey::from_secret(secret.as_bytes())))
            .collect();
        Self {
            encoding: EncodingKey::from_secret(current.as_bytes()),
            kid: key_id(current),
            decoding,
            validation,
            settings: settings.clone(),
            verified: VerifiedTokens::default(),
        }
    }

    /// Whether these are the tokens of exactly `current` and `previous` keys.
    pub fn uses_keys(&self, current: &str, previous: &[String]) -> bool {
        self.kid == key_id(current)
            && self.decoding.len() == previous.len() + 1
            && previous
                .iter()
                .all(|k| self.decoding.contains_key(&key_id(k)))
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

    /// The claims of a valid token signed by these keys, unexpired at `now` (Unix seconds).
    pub fn verify(&self, token: &str, now: i64) -> Result<Arc<Claims>, &'static str> {
        let claims = if let Some(claims) = self.verified.get(token) {
            claims
        } else {
            let claims = Arc::new(self.decode(token)?);
            self.verified.insert(token, claims.clone(), now);
            claims
        };
        if claims.exp <= now {
            return Err("token expired");
        }
        Ok(claims)
    }

    /// `claims` signed with the current key under header type `typ` (for tokens of other
    /// kinds than a sign-in's, such as an app's access token).
    pub fn sign<T: serde::Serialize>(&self, typ: &str, claims: &T) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        header.typ = Some(typ.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("HS256 signing cannot fail")
    }

    /// The claims of a token of header type `typ` signed by these keys (key by `kid`,
    /// signature, pinned algorithm); the caller checks issuer, audience and expiry.
    pub fn decode_as<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        typ: &str,
    ) -> Result<T, &'static str> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| "invalid token")?;
        if header.typ.as_deref() != Some(typ) {
            return Err("invalid token");
        }
        let key = header
            .kid
            .as_deref()
            .and_then(|kid| self.decoding.get(kid))
            .ok_or(UNKNOWN_KEY)?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data =
            jsonwebtoken::decode::<T>(token, key, &validation).map_err(|_| "invalid token")?;
        Ok(data.claims)
    }

    /// Full verification: key by `kid`, signature, pinned algorithm, issuer and audience.
    fn decode(&self, token: &str) -> Result<Claims, &'static str> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| "invalid token")?;
        let key = header
            .kid
            .as_deref()
            .and_then(|kid| self.decoding.get(kid))
            .ok_or(UNKNOWN_KEY)?;
        // The validation pins HS256, so `none` and every other algorithm fail.
        let data = jsonwebtoken::decode::<Claims>(token, key, &self.validation)
            .map_err(|_| "invalid token")?;
        Ok(data.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> JwtSettings {
        JwtSettings {
            issuer: "paddock".into(),
            audience: "paddock-desktop".into(),
            expiry_minutes: 60,
        }
    }

    fn user() -> User {
        User::new(None, "Driver".into(), None, OffsetDateTime::now_utc())
    }

    const OLD: &str = "an old signing key of at least thirty-two chars";
    const NEW: &str = "the new signing key of at least thirty-two chars";

    #[test]
    fn tokens_of_a_previous_key_stay_valid_after_a_rotation() {
        let now = OffsetDateTime::now_utc();
        let before = AccessTokens::new(OLD, &[], &settings());
        let (old_token, _) = before.issue(&user(), "family", now);
        let after = AccessTokens::new(NEW, &[OLD.to_owned()], &settings());
        assert!(
            after.verify(&old_token, now.unix_timestamp()).is_ok(),
            "kid names the old key"
        );
        let (new_token, _) = after.issue(&user(), "family", now);
        assert!(after.verify(&new_token, now.unix_timestamp()).is_ok());
        assert!(
            before.verify(&new_token, now.unix_timestamp()).is_err(),
            "a process without the new key refuses its tokens"
        );
        assert!(after.uses_keys(NEW, &[OLD.to_owned()]));
        assert!(!after.uses_keys(NEW, &[]));
        assert!(!after.uses_keys(OLD, &[NEW.to_owned()]));
        // Once the old key is dropped, its tokens are refused.
        let later = AccessTokens::new(NEW, &[], &settings());
        assert_eq!(
            later.verify(&old_token, now.unix_timestamp()).unwrap_err(),
            "token not signed by this service"
        );
    }
}
