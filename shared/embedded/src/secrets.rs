//! Local secrets: environment variables first, then values kept in the data directory.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use serde_json::{Map, Value};
use std::path::PathBuf;
use tokio::sync::Mutex;

use paddock_core::ports::secrets::{SecretError, SecretSource};

/// Secrets for the local mode.
///
/// `get("jwtSigningKey")` reads the environment variable `Secrets__jwtSigningKey`; failing that,
/// `secrets.json` in the data directory. Names listed as generated are created there on first
/// use (32 random bytes, base64url) and kept, so a restart keeps its keys.
pub struct LocalSecrets {
    file: PathBuf,
    generated: Vec<String>,
    lock: Mutex<()>,
}

impl LocalSecrets {
    /// Secrets kept in `data_dir/secrets.json`, generating `generated` names when missing.
    pub fn new(data_dir: impl Into<PathBuf>, generated: &[&str]) -> Self {
        let file = data_dir.into().join("secrets.json");
        // A file an earlier version left readable is narrowed to 0600; if that fails the
        // secrets are still read (the file is the operator's), and the warning says why.
        if let Err(e) = super::private_fs::restrict(&file) {
            tracing::warn!(file = %file.display(), error = %e, "could not make the secrets file private");
        }
        Self {
            file,
            generated: generated
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            lock: Mutex::new(()),
        }
    }

    fn read_file(&self) -> Result<Map<String, Value>, SecretError> {
        match std::fs::read(&self.file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| SecretError::Malformed {
                name: self.file.display().to_string(),
                reason: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
            Err(e) => Err(SecretError::Unavailable(e.to_string())),
        }
    }

    fn write_file(&self, map: &Map<String, Value>) -> Result<(), SecretError> {
        let unavailable = |e: std::io::Error| SecretError::Unavailable(e.to_string());
        if let Some(dir) = self.file.parent() {
            super::private_fs::create_dir_all(dir).map_err(unavailable)?;
        }
        let tmp = self.file.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(map).expect("a map serialises");
        write_private(&tmp, &text).map_err(unavailable)?;
        std::fs::rename(&tmp, &self.file).map_err(unavailable)
    }
}

#[cfg(unix)]
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // A file left over from an interrupted write keeps its mode on open: set it.
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[async_trait]
impl SecretSource for LocalSecrets {
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        if let Ok(value) = std::env::var(format!("Secrets__{name}"))
            && !value.is_empty()
        {
            return Ok(Some(value));
        }
        let _guard = self.lock.lock().await;
        let mut map = self.read_file()?;
        if let Some(v) = map.get(name).and_then(Value::as_str) {
            return Ok(Some(v.to_owned()));
        }
        if !self.generated.iter().any(|g| g == name) {
            return Ok(None);
        }
        let mut raw = [0u8; 32];
        rand::rng().fill_bytes(&mut raw);
        let value = URL_SAFE_NO_PAD.encode(raw);
        map.insert(name.to_owned(), Value::String(value.clone()));
        self.write_file(&map)?;
        Ok(Some(value))
    }
}
