//! Standard Webhooks signatures: a secret `whsec_<base64 of the key>`, and per message the
//! headers `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`
//! (`v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, several separated by
//! spaces while a rotated secret is still valid).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// What every secret starts with.
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes of a secret's key.
const KEY_BYTES: usize = 32;

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    let mut key = [0u8; KEY_BYTES];
    rand::rng().fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The key of a secret, if it is one.
fn key_of(secret: &str) -> Option<Vec<u8>> {
    STANDARD
        .decode(secret.strip_prefix(SECRET_PREFIX)?)
        .ok()
        .filter(|k| !k.is_empty())
}

/// One `v1,<signature>` of `body` under `secret`; `None` for a string that is not a secret.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    let key = key_of(secret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The `webhook-signature` header's value: one signature per secret, space separated.
pub fn signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .filter_map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification's reference libraries.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, id, 1614265330, body).unwrap(),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn secrets_are_fresh_and_well_formed() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(SECRET_PREFIX));
        assert_eq!(key_of(&a).unwrap().len(), KEY_BYTES);
        assert_eq!(sign("not a secret", "i", 1, "b"), None);
        let header = signature_header(&[&a, &b], "i", 1, "b");
        assert_eq!(header.split(' ').count(), 2);
    }
}
