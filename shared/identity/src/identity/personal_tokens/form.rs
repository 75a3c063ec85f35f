//! A token's form: `pdk_` + 43 base62 characters of randomness (256 bits) + 6 base62
//! characters of the CRC32 of those 43, made and checked without reading the store.

use super::TokenRefused;

/// What every token starts with.
pub const PREFIX: &str = "pdk_";
/// Random base62 characters of a token (43 × log2(62) ≥ 256 bits).
const RANDOM_CHARS: usize = 43;
/// Base62 characters of the checksum (62^6 > 2^32).
const CHECKSUM_CHARS: usize = 6;
/// The length of a whole token.
pub const TOKEN_LEN: usize = PREFIX.len() + RANDOM_CHARS + CHECKSUM_CHARS;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The base62 characters of the CRC32 of `random`, most significant first.
fn checksum(random: &str) -> [u8; CHECKSUM_CHARS] {
    let mut n = crc32fast::hash(random.as_bytes());
    let mut out = [b'0'; CHECKSUM_CHARS];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    out
}

/// A new token value: the prefix, 256 random bits in base62, and the checksum.
pub fn generate() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let random: String = (0..RANDOM_CHARS)
        .map(|_| char::from(BASE62[rng.random_range(0..62)]))
        .collect();
    let sum = checksum(&random);
    let mut token = String::with_capacity(TOKEN_LEN);
    token.push_str(PREFIX);
    token.push_str(&random);
    token.push_str(std::str::from_utf8(&sum).expect("base62 is ASCII"));
    token
}

/// Whether a bearer value is meant as a personal access token (checked before any JWT work).
pub fn is_personal_token(bearer: &str) -> bool {
    bearer.starts_with(PREFIX)
}

/// Checks a token's form and checksum without reading the store.
pub fn check_form(token: &str) -> Result<(), TokenRefused> {
    let rest = token.strip_prefix(PREFIX).ok_or(TokenRefused::Malformed)?;
    if token.len() != TOKEN_LEN || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(TokenRefused::Malformed);
    }
    let (random, sum) = rest.split_at(RANDOM_CHARS);
    if checksum(random) != sum.as_bytes() {
        return Err(TokenRefused::BadChecksum);
    }
    Ok(())
}
