//! argon2id password hashing (OWASP parameters: m=19 MiB, t=2, p=1) on the blocking pool.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::LazyLock;

use super::fields::Password;

fn argon2() -> Argon2<'static> {
    Argon2::new(
        Algorithm::Argon2id,
        Version::V0x13,
        Params::new(19 * 1024, 2, 1, None).expect("valid argon2 params"),
    )
}

/// A hash of a random password, verified when the account does not exist, so an unknown email
/// costs the same time as a wrong password.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::encode_b64(super::random_token(16).as_bytes()).expect("salt");
    argon2()
        .hash_password(super::random_token(24).as_bytes(), &salt)
        .expect("hash")
        .to_string()
});

/// The PHC string of `password` with a fresh salt.
pub async fn hash(password: Password) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut salt);
        let salt = SaltString::encode_b64(&salt).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
        Ok(argon2()
            .hash_password(password.expose().as_bytes(), &salt)
            .map_err(|e| anyhow::anyhow!("hash: {e}"))?
            .to_string())
    })
    .await?
}

/// Whether `password` matches `phc`; with no hash, verifies against a dummy and answers false.
pub async fn verify(password: String, phc: Option<String>) -> bool {
    let known = phc.is_some();
    tokio::task::spawn_blocking(move || {
        let phc = phc.unwrap_or_else(|| DUMMY_HASH.clone());
        let Ok(parsed) = PasswordHash::new(&phc) else {
            return false;
        };
        argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
            && known
    })
    .await
    .unwrap_or(false)
}

/// Computes the dummy hash ahead of the first login (it costs one hash).
pub fn warm_up() {
    LazyLock::force(&DUMMY_HASH);
}
