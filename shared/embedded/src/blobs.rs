//! Blob store on a local directory: one file per key, written atomically.

use async_trait::async_trait;
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::private_fs;
use paddock_core::ports::blobs::{BlobError, BlobStore, BlobStream, Taken, check_key};

/// Blobs as files under a root directory.
#[derive(Debug, Clone)]
pub struct DirBlobStore {
    root: PathBuf,
}

impl DirBlobStore {
    /// A store rooted at `root` (created if missing).
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        private_fs::create_dir_all(root.as_ref())?;
        // Closing the root closes every blob an earlier version left readable beneath it.
        private_fs::restrict(root.as_ref())?;
        Ok(Self {
            root: root.as_ref().to_path_buf(),
        })
    }

    fn path(&self, key: &str) -> Result<PathBuf, BlobError> {
        check_key(key)?;
        Ok(self.root.join(key))
    }
}

fn io(e: std::io::Error) -> BlobError {
    BlobError::Unavailable(e.to_string())
}

#[async_trait]
impl BlobStore for DirBlobStore {
    async fn put(&self, key: &str, bytes: Bytes, _content_type: &str) -> Result<(), BlobError> {
        write_atomically(self.path(key)?, move |tmp| {
            use std::io::Write;
            tmp.write_all(&bytes)
        })
        .await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(b) => Ok(Some(Bytes::from(b))),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(io(e)),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        match tokio::fs::remove_file(self.path(key)?).await {
            Ok(()) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(io(e)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        let root = self.root.clone();
        let prefix = prefix.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut keys = Vec::new();
            let mut stack = vec![root.clone()];
            while let Some(dir) = stack.pop() {
                let entries = match std::fs::read_dir(&dir) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(io(e)),
                };
                for entry in entries {
                    let path = entry.map_err(io)?.path();
                    let name = path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default();
                    if name.starts_with(".tmp-") {
                        continue;
                    }
                    if path.is_dir() {
                        stack.push(path);
                    } else if let Ok(rel) = path.strip_prefix(&root) {
                        let key = rel.to_string_lossy().replace('\\', "/");
                        if key.starts_with(&prefix) {
                            keys.push(key);
                        }
                    }
                }
            }
            keys.sort();
            Ok(keys)
        })
        .await
        .map_err(|e| BlobError::Unavailable(e.to_string()))?
    }

    async fn presigned_get(
        &self,
        key: &str,
        _ttl: Duration,
        _download_name: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        check_key(key)?;
        // A directory has no URLs of its own; the API streams the bytes instead.
        Ok(None)
    }

    async fn presigned_put(
        &self,
        key: &str,
        _ttl: Duration,
        _length: u64,
    ) -> Result<Option<String>, BlobError> {
        check_key(key)?;
        Ok(None)
    }

    async fn put_file(&self, key: &str, path: &Path, _content_type: &str) -> Result<(), BlobError> {
        let source = path.to_owned();
        write_atomically(self.path(key)?, move |tmp| copy_from(&source, tmp)).await
    }

    async fn take_to_file(
        &self,
        key: &str,
        _hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError> {
        let source = self.path(key)?;
        let target = path.to_owned();
        tokio::task::spawn_blocking(move || -> Result<Option<Taken>, BlobError> {
            // A second name for the object's file (refused if `path` exists), then its first
            // name goes: a later upload renames a new file to the key, never writes this one.
            match std::fs::hard_link(&source, &target) {
                Ok(()) => {}
                Err(e) if missing(&e) => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
                    // Another file system: a copy from an open handle (one version, whatever
                    // replaces the name meanwhile).
                    let mut from = match std::fs::File::open(&source) {
                        Ok(f) => f,
                        Err(e) if missing(&e) => return Ok(None),
                        Err(e) => return Err(io(e)),
                    };
                    let mut to = private_fs::create_new(&target).map_err(io)?;
                    std::io::copy(&mut from, &mut to).map_err(io)?;
                    to.sync_all().map_err(io)?;
                }
                Err(e) => return Err(io(e)),
            }
            match std::fs::remove_file(&source) {
                Err(e) if !missing(&e) => return Err(io(e)),
                _ => {}
            }
            let length = std::fs::metadata(&target).map_err(io)?.len();
            Ok(Some(Taken {
                length,
                held_at: None,
                tag: None,
            }))
        })
        .await
        .map_err(|e| BlobError::Unavailable(e.to_string()))?
    }

    async fn publish_taken(
        &self,
        _taken: &Taken,
        path: &Path,
        to: &str,
    ) -> Result<bool, BlobError> {
        let target = self.path(to)?;
        if let Some(dir) = target.parent() {
            let dir = dir.to_owned();
            tokio::task::spawn_blocking(move || private_fs::create_dir_all(&dir))
                .await
                .map_err(|e| BlobError::Unavailable(e.to_string()))?
                .map_err(io)?;
        }
        // The checked file itself becomes the object.
        match tokio::fs::rename(path, &target).await {
            Ok(()) => Ok(true),
            Err(e) if missing(&e) => Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
                let source = path.to_owned();
                write_atomically(target, move |tmp| copy_from(&source, tmp)).await?;
                let _ = tokio::fs::remove_file(path).await;
                Ok(true)
            }
            Err(e) => Err(io(e)),
        }
    }

    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError> {
        let file = match tokio::fs::File::open(self.path(key)?).await {
            Ok(f) => f,
            Err(e) if missing(&e) => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let length = file.metadata().await.map_err(io)?.len();
        Ok(Some(BlobStream {
            length,
            body: Box::pin(tokio_util::io::ReaderStream::with_capacity(file, 64 * 1024)),
        }))
    }
}

/// Writes `target` through `write` into a new private file beside it, synced, then renamed
/// over it, so readers never see half an object; the partial file goes on failure.
async fn write_atomically(
    target: PathBuf,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()> + Send + 'static,
) -> Result<(), BlobError> {
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let dir = target.parent().expect("blob path has a parent");
        private_fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let result = private_fs::create_new(&tmp)
            .and_then(|mut file| {
                write(&mut file)?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, &target));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    })
    .await
    .map_err(|e| BlobError::Unavailable(e.to_string()))?
    .map_err(io)
}

/// Copies the file at `source` into `to` (not `std::fs::copy`, which would give the copy the
/// source's mode).
fn copy_from(source: &Path, to: &mut std::fs::File) -> std::io::Result<()> {
    std::io::copy(&mut std::fs::File::open(source)?, to).map(|_| ())
}

/// A missing object (or a missing directory on its path).
fn missing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}
