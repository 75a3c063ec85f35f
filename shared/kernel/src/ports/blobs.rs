//! Blob store port: whole objects by key (share-pack ZIPs, track points, track maps).

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use std::path::Path;
use std::time::Duration;

/// An object's bytes as a stream of chunks, and its length.
pub struct BlobStream {
    /// The object's length in bytes.
    pub length: u64,
    /// Its bytes, chunk by chunk.
    pub body: BoxStream<'static, Result<Bytes, std::io::Error>>,
}

/// An object taken for checking by [`BlobStore::take_to_file`]: its bytes are in a local
/// file, and later writes to its key change neither them nor what
/// [`BlobStore::publish_taken`] publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Its length in bytes.
    pub length: u64,
    /// Where the store holds the taken version meanwhile, when it holds one (S3: a
    /// server-side copy under a key no upload URL writes); a directory holds nothing, it moved
    /// the file itself out.
    pub held_at: Option<String>,
    /// The tag of the held version (S3's ETag) that publishing is pinned to.
    pub tag: Option<String>,
}

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The key is not a valid blob key.
    #[error("invalid blob key {0:?}")]
    InvalidKey(String),
    /// The backend could not be reached or failed.
    #[error("blob store unavailable: {0}")]
    Unavailable(String),
}

/// Checks a blob key: 1-512 characters of `[A-Za-z0-9._=-]` in `/`-separated segments, no empty,
/// `.` or `..` segment. Both adapters enforce the same rule so keys behave alike everywhere.
pub fn check_key(key: &str) -> Result<(), BlobError> {
    let ok = !key.is_empty()
        && key.len() <= 512
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'='))
        });
    if ok {
        Ok(())
    } else {
        Err(BlobError::InvalidKey(key.to_owned()))
    }
}

/// A store of immutable-by-convention objects addressed by key.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Stores `bytes` under `key`, replacing any previous object atomically.
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<(), BlobError>;
    /// The object under `key`, or `None`.
    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError>;
    /// Removes `key`; removing a missing key succeeds.
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
    /// Every key starting with `prefix`, sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError>;
    /// A time-limited URL a client can download `key` from directly, where the backend has one;
    /// with `download_name`, the download is offered as an attachment of that file name.
    async fn presigned_get(
        &self,
        key: &str,
        ttl: Duration,
        download_name: Option<&str>,
    ) -> Result<Option<String>, BlobError>;
    /// A time-limited URL a client can PUT exactly `length` bytes to, where the backend has
    /// one (S3); `None` for a directory (the API then offers a signed URL of its own).
    async fn presigned_put(
        &self,
        key: &str,
        ttl: Duration,
        length: u64,
    ) -> Result<Option<String>, BlobError>;
    /// Stores the file at `path` under `key`, streaming it (never whole in memory).
    async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<(), BlobError>;
    /// Takes the object under `key` to check it, out of reach of later writes to `key`: a
    /// directory moves the object's file itself to `path`; S3 copies it server-side to `hold`
    /// (a key no client can write), removes `key` and streams the copy into `path`. `path`
    /// must not exist: it is created exclusively. `None` when there is no object.
    async fn take_to_file(
        &self,
        key: &str,
        hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError>;
    /// Publishes under `to` exactly the bytes that were taken (and checked): a directory moves
    /// the file at `path` itself into place; S3 copies the held version on condition that it
    /// is still the one taken (its ETag), then removes it. False when the held object is gone
    /// or changed.
    async fn publish_taken(&self, taken: &Taken, path: &Path, to: &str) -> Result<bool, BlobError>;
    /// The object under `key` as a stream, or `None`.
    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError>;
}
