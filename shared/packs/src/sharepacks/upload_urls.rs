//! Upload URLs of the local mode: the blob directory has no presigned URLs of its own, so the
//! server hands out a URL to itself, signed with an HMAC over the pack, the length and an
//! expiry. The client code is the same as for S3's presigned PUT.

use hmac::{Hmac, Mac};
use paddock_kernel::ids::SharePackId;
use sha2::Sha256;

/// The secret the signatures are made with (generated in the data directory).
pub const KEY_SECRET: &str = "uploadUrlKey";

fn mac(key: &[u8], id: &SharePackId, expires: i64, length: u64) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("PUT\n{id}\n{expires}\n{length}").as_bytes());
    mac
}

/// The signature of an upload of `length` bytes to pack `id` until `expires` (Unix seconds).
pub fn sign(key: &[u8], id: &SharePackId, expires: i64, length: u64) -> String {
    paddock_kernel::hashing::hex(&mac(key, id, expires, length).finalize().into_bytes())
}

/// Whether `signature` is ours for these values and has not expired at `now`; compared in
/// constant time.
pub fn verify(
    key: &[u8],
    id: &SharePackId,
    expires: i64,
    length: u64,
    signature: &str,
    now: i64,
) -> bool {
    let Some(bytes) = decode_hex(signature) else {
        return false;
    };
    now < expires && mac(key, id, expires, length).verify_slice(&bytes).is_ok()
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_bind_pack_length_and_expiry() {
        let key = b"k";
        let (p1, p2) = (&SharePackId::new(), &SharePackId::new());
        let sig = sign(key, p1, 1000, 42);
        assert!(verify(key, p1, 1000, 42, &sig, 999));
        assert!(!verify(key, p1, 1000, 42, &sig, 1000), "expired");
        assert!(!verify(key, p2, 1000, 42, &sig, 999));
        assert!(!verify(key, p1, 1001, 42, &sig, 999));
        assert!(!verify(key, p1, 1000, 43, &sig, 999));
        assert!(!verify(b"other", p1, 1000, 42, &sig, 999));
        assert!(!verify(key, p1, 1000, 42, "zz", 999));
    }
}
