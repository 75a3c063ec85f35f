//! Configuration from environment variables in .NET style (`Section__Key`).
//!
//! Every key, with its default and bounds, is listed in [`keys`], which declares the typed
//! settings structs and which docs/configuration.md shows. The values come in layers: the
//! list's defaults under the variables that are set, each value read into its field by
//! [`figment`]; a bad value fails start-up with a message naming the key and the rule.

use figment::Figment;
use figment::providers::Serialized;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use paddock_kernel::ids::UserId;
use paddock_kernel::queues::QueueName;

pub mod keys;
mod providers;

pub use keys::{AiSettings, AuthSettings, JwtSettings, PageSettings, Settings, SharepackSettings};
pub use providers::{ProviderConfig, ProviderKind, secure_provider_url};
// The key list's rules live here, the providers' among them: the providers module reads the
// list's key names, so the list names its rule through this module, not the sibling's path.
use providers::read as read_providers;

/// Which adapter set backs the ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite file, blob directory and SQLite queue under the data directory.
    Embedded,
    /// DynamoDB, S3, SQS and Secrets Manager (or their emulators).
    Aws,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line (the default in Lambda).
    Json,
}

/// Which LLM API the AI coach speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AiProvider {
    /// Anthropic's Messages API (the default).
    Anthropic,
    /// Any OpenAI Chat Completions-compatible endpoint (a model on the driver's own machine).
    OpenAi,
}

impl AiProvider {
    /// The model and base URL of a provider when `Ai__Model` and `Ai__BaseUrl` are unset.
    pub fn defaults(self) -> (&'static str, &'static str) {
        match self {
            Self::Anthropic => ("claude-sonnet-4-5", "https://api.anthropic.com"),
            Self::OpenAi => ("gpt-4o-mini", "https://api.openai.com/v1"),
        }
    }
}

/// The SQS URLs of one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueUrls {
    /// The queue.
    pub url: Option<String>,
    /// Its dead-letter queue (consumers move poison events there).
    pub dead_letter_url: Option<String>,
}

/// A configuration value that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("configuration key {key}: {reason}")]
pub struct ConfigError {
    /// The configuration key at fault.
    pub key: &'static str,
    /// Why its value could not be used.
    pub reason: String,
}

fn bad(key: &'static str, reason: &str) -> ConfigError {
    ConfigError {
        key,
        reason: reason.into(),
    }
}

impl Settings {
    /// Defaults for the embedded backend with data in `data_dir`, listening on `address`.
    pub fn embedded(data_dir: impl Into<PathBuf>, address: SocketAddr) -> Self {
        Self {
            address,
            data_dir: data_dir.into(),
            ..Self::default()
        }
    }

    /// Reads every key from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }

    /// Reads every key from `vars` (the environment, or a map in tests).
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Self, ConfigError> {
        Self::read(&Source::new(vars))
    }
}

/// The layers a value is read from: the defaults of [`keys`], then the variables set (a value
/// of spaces only counts as unset).
pub(crate) struct Source {
    /// The variables set. The defaults layer is the list itself: a key's value is its variable
    /// or else its default, looked up when the key is read. Merging the two layers with
    /// figment serialised both whole (the defaults and the process's environment) for a
    /// Lambda function's start, then took one entry per key.
    vars: HashMap<String, String>,
}

impl Source {
    pub(crate) fn new(vars: &HashMap<String, String>) -> Self {
        let vars = vars
            .iter()
            .map(|(name, value)| (name.clone(), value.trim().to_owned()))
            .filter(|(_, value)| !value.is_empty())
            .collect();
        Self { vars }
    }

    /// A variable the list names by pattern (`Queue__Feed__Url`, a provider's field).
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    /// The key's value as `T`, within the key's bounds when it has some; an unset key
    /// without a default is `None` for an `Option`, and required otherwise.
    fn value<T: DeserializeOwned>(&self, key: &keys::Key) -> Result<T, ConfigError> {
        let Some(text) = self.var(key.name).or_else(|| key.default_text()) else {
            let unset = serde::de::value::UnitDeserializer::<serde::de::value::Error>::new();
            return T::deserialize(unset).map_err(|_| bad(key.name, "is required"));
        };
        if key.bounds.is_some() {
            key.whole_number(&text)?;
        }
        Figment::from(Serialized::default(key.name, &text))
            .extract_inner_lossy(key.name)
            .map_err(|e| bad(key.name, &format!("{text:?} is not valid: {}", e.kind)))
    }
}

impl AuthSettings {
    /// `Auth__HashingThreads`, or the cores when it is unset. Counted here, by the functions
    /// that hash passwords, rather than when the settings are read: finding the cores reads
    /// the process's cgroup files, which every other function's start would pay for nothing.
    pub fn hashing_thread_count(&self) -> usize {
        self.hashing_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
    }
}

// The rules of keys whose values are more than a number or a text, named in the list.

/// A whole number of `MS` milliseconds (1000 for seconds, 60,000 for minutes).
fn per<const MS: u64>(n: u64) -> Result<Duration, String> {
    Ok(Duration::from_millis(n * MS))
}

fn megabytes(n: u64) -> Result<u64, String> {
    Ok(n << 20)
}

fn boolean(v: String) -> Result<bool, String> {
    v.parse().map_err(|_| format!("{v:?} is not true or false"))
}

fn socket_address(v: String) -> Result<SocketAddr, String> {
    v.parse()
        .map_err(|_| format!("{v:?} is not a socket address such as 127.0.0.1:8080"))
}

fn backend(v: String) -> Result<Backend, String> {
    match v.to_ascii_lowercase().as_str() {
        "embedded" | "local" | "sqlite" => Ok(Backend::Embedded),
        "aws" | "dynamodb" => Ok(Backend::Aws),
        _ => Err("must be `embedded` or `aws`".into()),
    }
}

fn log_format(v: String) -> Result<LogFormat, String> {
    match v.to_ascii_lowercase().as_str() {
        "json" => Ok(LogFormat::Json),
        "pretty" | "text" => Ok(LogFormat::Pretty),
        _ => Err("must be `json` or `pretty`".into()),
    }
}

/// CloudWatch: 1 to 255 characters of letters, digits and `.-_/#:`, not starting with a colon.
fn metrics_namespace(v: String) -> Result<String, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_/#: ".contains(c);
    if v.len() > 255 || v.starts_with(':') || !v.chars().all(allowed) {
        return Err(
            "must be at most 255 letters, digits, spaces and .-_/#: (not starting with :)".into(),
        );
    }
    Ok(v)
}

fn ai_provider(v: String) -> Result<AiProvider, String> {
    match v.to_ascii_lowercase().as_str() {
        "anthropic" => Ok(AiProvider::Anthropic),
        "openai" => Ok(AiProvider::OpenAi),
        p => Err(format!("{p:?} is not anthropic or openai")),
    }
}

/// A key whose default depends on another: empty until [`ai_defaults`] fills it.
fn or_empty(v: Option<String>) -> Result<String, String> {
    Ok(v.unwrap_or_default())
}

fn not_yet(_: &Source) -> Result<bool, ConfigError> {
    Ok(false)
}

/// The provider's model and URL where none is set; a URL set must be http(s) with a host.
fn ai_defaults(mut ai: AiSettings) -> Result<AiSettings, ConfigError> {
    let (model, base_url) = ai.provider.defaults();
    if ai.model.is_empty() {
        ai.model = model.into();
    }
    if ai.base_url.is_empty() {
        ai.base_url = base_url.into();
    } else {
        let url = url::Url::parse(&ai.base_url).ok().filter(|u| {
            matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
        });
        if url.is_none() {
            let reason = format!("{:?} is not an http(s) URL", ai.base_url);
            return Err(bad(keys::AI_BASE_URL.name, &reason));
        }
        ai.base_url = ai.base_url.trim_end_matches('/').to_owned();
        ai.base_url_configured = true;
    }
    Ok(ai)
}

fn without_trailing_slash(v: Option<String>) -> Result<Option<String>, String> {
    Ok(v.map(|u| u.trim_end_matches('/').to_owned()))
}

/// `Events__Operators`: user ids, comma-separated.
fn user_ids(v: Option<String>) -> Result<Vec<UserId>, String> {
    let text = v.unwrap_or_default();
    let ids = text.split(',').map(str::trim).filter(|id| !id.is_empty());
    ids.map(|id| id.parse().map_err(|_| format!("{id:?} is not a user id")))
        .collect()
}

/// `Pages__AvatarHosts`: host names only (no scheme, port, path or IP address), so the
/// pages' image policy can name each one.
fn avatar_hosts(v: String) -> Result<Vec<String>, String> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let label = |l: &str| {
        let edges = !l.starts_with('-') && !l.ends_with('-');
        (1..=63).contains(&l.len())
            && edges
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let mut hosts = Vec::new();
    for host in v
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
    {
        let labels: Vec<&str> = host.split('.').collect();
        // A last label of digits only would make an IPv4 address of the name.
        let numeric = labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
        if labels.len() < 2 || !labels.iter().all(|l| label(l)) || numeric || host.len() > 253 {
            return Err(format!(
                "{host:?} is not a host name (such as cdn.discordapp.com)"
            ));
        }
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    Ok(hosts)
}

/// `Queue__<Queue>__Url` and `__DeadLetterUrl` of every queue that has one.
fn queue_urls(source: &Source) -> Result<BTreeMap<QueueName, QueueUrls>, ConfigError> {
    let mut all = BTreeMap::new();
    for queue in QueueName::ALL {
        let var = |key: keys::Key| source.var(&key.name.replace("<Queue>", queue.config_section()));
        let urls = QueueUrls {
            url: var(keys::QUEUE_URL),
            dead_letter_url: var(keys::QUEUE_DEAD_LETTER_URL),
        };
        if urls.url.is_some() || urls.dead_letter_url.is_some() {
            all.insert(queue, urls);
        }
    }
    Ok(all)
}

/// The AWS backend needs a bucket unless it creates one (queue URLs are checked by the
/// functions that use them, see the wiring).
fn bucket_when_aws(s: Settings) -> Result<Settings, ConfigError> {
    if s.backend == Backend::Aws && s.bucket.is_none() && !s.create_resources {
        return Err(bad(
            keys::BLOBS_BUCKET.name,
            "is required when Store__Backend=aws",
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests;
