//! Configuration from environment variables in .NET style (`Section__Key`).
//!
//! Every key, with its default and bounds, is listed in [`keys`], which docs/configuration.md
//! shows; a bad value fails start-up with a message naming the key.

use secrecy::SecretString;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use paddock_kernel::queues::QueueName;

pub mod keys;

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

/// Token settings (`Jwt__*`).
#[derive(Debug, Clone)]
pub struct JwtSettings {
    /// The `iss` every token carries and must carry.
    pub issuer: String,
    /// The `aud` every token carries and must carry.
    pub audience: String,
    /// Lifetime of a new access token, in minutes.
    pub expiry_minutes: u32,
}

/// Which LLM API the AI coach speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AiProvider {
    /// Anthropic's Messages API (the default).
    Anthropic,
    /// Any OpenAI Chat Completions-compatible endpoint (a model on the driver's own machine).
    OpenAi,
}

/// AI coaching settings (`Ai__*`).
#[derive(Debug, Clone)]
pub struct AiSettings {
    /// `Ai__Provider`: `anthropic` (default) or `openai`.
    pub provider: AiProvider,
    /// `Ai__Model`: the one model of this deployment (default `claude-sonnet-4-5` for
    /// Anthropic, `gpt-4o-mini` for OpenAI).
    pub model: String,
    /// `Ai__BaseUrl`: the API's base URL (default `https://api.anthropic.com`, or
    /// `https://api.openai.com/v1`).
    pub base_url: String,
    /// Whether `Ai__BaseUrl` was given (an OpenAI-compatible server of one's own needs no key).
    pub base_url_configured: bool,
    /// `Ai__TimeoutSeconds`: the upstream deadline, under API Gateway's 29 s (default 25).
    pub timeout: Duration,
    /// `Ai__RequestsPerHour`: coaching requests per driver an hour (default 30).
    pub requests_per_hour: u32,
    /// `Ai__TokensPerDay`: input plus output tokens per driver a day (default 200,000).
    pub tokens_per_day: u64,
    /// `Ai__ServiceTokensPerDay`: input plus output tokens of every driver together a day
    /// (default 5,000,000), so the spend does not grow with the number of accounts.
    pub service_tokens_per_day: u64,
}

impl AiSettings {
    fn defaults(provider: AiProvider) -> Self {
        let (model, base_url) = match provider {
            AiProvider::Anthropic => ("claude-sonnet-4-5", "https://api.anthropic.com"),
            AiProvider::OpenAi => ("gpt-4o-mini", "https://api.openai.com/v1"),
        };
        Self {
            provider,
            model: model.into(),
            base_url: base_url.into(),
            base_url_configured: false,
            timeout: Duration::from_secs(keys::AI_TIMEOUT_SECONDS.default_number()),
            requests_per_hour: keys::AI_REQUESTS_PER_HOUR.default_number() as u32,
            tokens_per_day: keys::AI_TOKENS_PER_DAY.default_number(),
            service_tokens_per_day: keys::AI_SERVICE_TOKENS_PER_DAY.default_number(),
        }
    }
}

/// Share-pack settings (`Sharepacks__*`).
#[derive(Debug, Clone)]
pub struct SharepackSettings {
    /// `Sharepacks__MaxDirectBytes`: largest pack sent in the request itself (default 4 MiB;
    /// a Lambda request carries at most 6 MB, base64-encoded).
    pub max_direct_bytes: u64,
    /// `Sharepacks__MaxBytes`: largest pack through an upload URL (default 100 MiB).
    pub max_bytes: u64,
    /// `Sharepacks__MaxEntries`: most entries in a pack (default 2,000).
    pub max_entries: usize,
    /// `Sharepacks__MaxUncompressedBytes`: most bytes a pack may inflate to (default 512 MiB).
    pub max_uncompressed_bytes: u64,
    /// `Sharepacks__MaxRatio`: the highest compression ratio of an entry over 1 MiB (default 200).
    pub max_ratio: u64,
    /// `Sharepacks__MaxPerUser`: packs per driver (default 100).
    pub max_per_user: u32,
    /// `Sharepacks__MaxBytesPerUser`: bytes of packs per driver (default 1 GiB).
    pub max_bytes_per_user: u64,
    /// `Sharepacks__UploadsPerMinute`: uploads started per driver a minute (default 10).
    pub uploads_per_minute: u32,
}

impl Default for SharepackSettings {
    fn default() -> Self {
        Self {
            max_direct_bytes: keys::SHAREPACKS_MAX_DIRECT_BYTES.default_number(),
            max_bytes: keys::SHAREPACKS_MAX_BYTES.default_number(),
            max_entries: keys::SHAREPACKS_MAX_ENTRIES.default_number() as usize,
            max_uncompressed_bytes: keys::SHAREPACKS_MAX_UNCOMPRESSED_BYTES.default_number(),
            max_ratio: keys::SHAREPACKS_MAX_RATIO.default_number(),
            max_per_user: keys::SHAREPACKS_MAX_PER_USER.default_number() as u32,
            max_bytes_per_user: keys::SHAREPACKS_MAX_BYTES_PER_USER.default_number(),
            uploads_per_minute: keys::SHAREPACKS_UPLOADS_PER_MINUTE.default_number() as u32,
        }
    }
}

/// Sign-in settings (`Auth__*`).
#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// `Auth__PublicUrl`: the service's public base URL, for provider callbacks (default
    /// `http://<Server__Address>`; in Lambda the domain API Gateway received the request on).
    pub public_url: Option<String>,
    /// `Auth__LoginAttemptsPerAccount`: login attempts per (client address, account) a window (10).
    pub login_attempts_per_account: u32,
    /// `Auth__AttemptsPerAddress`: registrations and logins per client address a window (100).
    pub attempts_per_address: u32,
    /// `Auth__ProviderStartsPerAddress`: provider sign-in starts per client address a window (10).
    pub provider_starts_per_address: u32,
    /// `Auth__RateWindowSeconds`: the rate-limit window (300).
    pub rate_window_secs: i64,
    /// `Auth__FailedLoginsPerAccount`: failed logins per account a failure window, from any
    /// address (50); over it, addresses the account never signed in from are slowed to
    /// `guarded_attempts_per_address` each, never shut out.
    pub failed_logins_per_account: u32,
    /// `Auth__GuardedAttemptsPerAddress`: attempts per (client address, account) a failure
    /// window while the account is over its failure limit (3).
    pub guarded_attempts_per_address: u32,
    /// `Auth__FailedLoginWindowSeconds`: the window of that limit (3600).
    pub failed_login_window_secs: i64,
    /// `Auth__HashingThreads`: password hashes computed at once (default: the cores).
    pub hashing_threads: usize,
    /// `Auth__HashingWaitMillis`: how long a sign-in waits for a free hashing thread before
    /// it is answered 503 (2000).
    pub hashing_wait: Duration,
    /// `Auth__Providers__<name>__Kind|ClientId|ClientSecret|Issuer|Scopes|TrustEmailVerified`.
    pub providers: Vec<ProviderConfig>,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            public_url: None,
            login_attempts_per_account: keys::AUTH_LOGIN_ATTEMPTS_PER_ACCOUNT.default_number()
                as u32,
            attempts_per_address: keys::AUTH_ATTEMPTS_PER_ADDRESS.default_number() as u32,
            provider_starts_per_address: keys::AUTH_PROVIDER_STARTS_PER_ADDRESS.default_number()
                as u32,
            rate_window_secs: keys::AUTH_RATE_WINDOW_SECONDS.default_number() as i64,
            failed_logins_per_account: keys::AUTH_FAILED_LOGINS_PER_ACCOUNT.default_number() as u32,
            guarded_attempts_per_address: keys::AUTH_GUARDED_ATTEMPTS_PER_ADDRESS.default_number()
                as u32,
            failed_login_window_secs: keys::AUTH_FAILED_LOGIN_WINDOW_SECONDS.default_number()
                as i64,
            hashing_threads: std::thread::available_parallelism().map_or(1, usize::from),
            hashing_wait: Duration::from_millis(keys::AUTH_HASHING_WAIT_MILLIS.default_number()),
            providers: Vec::new(),
        }
    }
}

/// Public board page settings (`Pages__*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSettings {
    /// `Pages__AvatarHosts`: the hosts whose avatars the public pages show (comma-separated
    /// host names, lower case; `none` for no avatars). Any other avatar is shown as the
    /// driver's initial, so a driver cannot make a page fetch from a host of their choosing.
    /// Default: the avatar hosts of the sign-in providers whose pictures load without a
    /// token ([`DEFAULT_AVATAR_HOSTS`]).
    pub avatar_hosts: Vec<String>,
}

/// Where Google (`lh3.googleusercontent.com`) and Discord (`cdn.discordapp.com`) serve the
/// pictures sign-in gives. Microsoft's picture (`graph.microsoft.com/.../photo/$value`) needs
/// the driver's access token, so no visitor's browser could load it.
pub const DEFAULT_AVATAR_HOSTS: [&str; 2] = ["lh3.googleusercontent.com", "cdn.discordapp.com"];

impl Default for PageSettings {
    fn default() -> Self {
        Self {
            avatar_hosts: DEFAULT_AVATAR_HOSTS.map(str::to_owned).to_vec(),
        }
    }
}

/// `Pages__AvatarHosts`: host names only (no scheme, port, path or IP address), so the
/// pages' image policy can name each one.
fn avatar_hosts(v: &str) -> Result<Vec<String>, ConfigError> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut hosts = Vec::new();
    for host in v.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let host = host.to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        let labels: Vec<&str> = host.split('.').collect();
        // A last label of digits only would make an IPv4 address of the name.
        let named = labels.len() >= 2
            && labels.iter().all(|l| label_ok(l))
            && labels
                .last()
                .is_some_and(|l| !l.bytes().all(|b| b.is_ascii_digit()));
        if !named || host.len() > 253 {
            return Err(bad(
                keys::PAGES_AVATAR_HOSTS.name,
                &format!("{host:?} is not a host name (such as cdn.discordapp.com)"),
            ));
        }
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    Ok(hosts)
}

/// Every setting of the service.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `Server__Address`: where the local server listens (default 127.0.0.1:8080).
    pub address: SocketAddr,
    /// `Server__HeaderReadTimeoutSeconds`: how long the local server waits for a request's
    /// headers before it closes the connection (default 10).
    pub header_read_timeout: Duration,
    /// `Data__Dir`: the embedded backend's directory (default ./data).
    pub data_dir: PathBuf,
    /// `Store__Backend`: `embedded` (default) or `aws`.
    pub backend: Backend,
    /// `Store__TablePrefix`: physical table name prefix (default `paddock-`).
    pub table_prefix: String,
    /// `Store__CreateResources`: create tables, bucket and queues at start (emulators only).
    pub create_resources: bool,
    /// `Blobs__Bucket`: S3 bucket of the AWS backend.
    pub bucket: Option<String>,
    /// `Queue__<TrackMaps|Achievements|Feed>__Url` and `__DeadLetterUrl`: the SQS queues of
    /// the AWS backend (a function needs only the queues it uses).
    pub queue_urls: BTreeMap<QueueName, QueueUrls>,
    /// `Queue__VisibilitySeconds`: how long a received event stays hidden (default 60).
    pub visibility: Duration,
    /// `Queue__MaxReceives`: deliveries before an event is dead-lettered (default 5).
    pub max_receives: u32,
    /// `Secrets__Id`: Secrets Manager secret (JSON) of the AWS backend.
    pub secret_id: Option<String>,
    /// `Secrets__RefreshSeconds`: how long secrets are kept before they are read again, so a
    /// rotated signing key reaches warm Lambda instances (default 300; 0: read once).
    pub secrets_refresh: Duration,
    /// `Jwt__Issuer`, `Jwt__Audience`, `Jwt__ExpiryMinutes`.
    pub jwt: JwtSettings,
    /// `Http__MaxBodyBytes`: largest request body (default 1 MiB).
    pub max_body_bytes: usize,
    /// `Http__TimeoutSeconds`: request deadline, answered with 504 (default 25).
    pub request_timeout: Duration,
    /// `Log__Format`: `pretty` or `json` (default pretty locally, json in Lambda).
    pub log_format: LogFormat,
    /// `Metrics__Namespace`: the CloudWatch namespace of the metric lines a Lambda function
    /// writes (default `Paddock`; the template sets `Paddock/<stack name>`).
    pub metrics_namespace: String,
    /// `Metrics__CacheSeconds`: how long `GET /metrics` of a Lambda function keeps what it
    /// read from CloudWatch (default 60).
    pub metrics_cache: Duration,
    /// Sign-in settings.
    pub auth: AuthSettings,
    /// `Limits__UploadsPerMinute`: session uploads per user a minute (default 30).
    pub uploads_per_minute: u32,
    /// `Limits__FeedPostsPerMinute`: feed posts per driver a minute (default 10).
    pub feed_posts_per_minute: u32,
    /// `Limits__ExportsPerHour`: data exports per driver an hour (default 6).
    pub exports_per_hour: u32,
    /// `Limits__WebhookChecksPerHour`: requests a driver has the service send to webhook
    /// receivers on demand (verifications and tests) an hour (default 20).
    pub webhook_checks_per_hour: u32,
    /// `Limits__NewBoardsPerDay`: leaderboard submissions per driver a day that put the driver
    /// on a board they were not on (a track's or a car's; default 50).
    pub new_boards_per_day: u32,
    /// `Limits__TokenRequestsPerMinute`: requests a minute of one personal access token
    /// (default 120), counted on requests made with the token.
    pub token_requests_per_minute: u32,
    /// `Webhooks__AllowLoopbackHttp`: webhooks may use `http` to loopback (local tests only).
    pub webhooks_allow_loopback_http: bool,
    /// `Leaderboards__CacheSeconds`: how long a process serves a leaderboard from memory
    /// (default 5; 0 turns the cache off). Also the `Cache-Control` max-age.
    pub leaderboard_cache: Duration,
    /// `Leaderboards__CacheMegabytes`: the page bodies a process keeps in its leaderboard
    /// cache at most (default 32).
    pub leaderboard_cache_bytes: u64,
    /// `Retention__FirstRunSeconds`: the local server's first retention sweep after start
    /// (default 120).
    pub retention_first_run: Duration,
    /// `Retention__IntervalMinutes`: time between local retention sweeps (default 60).
    pub retention_interval: Duration,
    /// AI coaching settings.
    pub ai: AiSettings,
    /// Share-pack settings.
    pub sharepacks: SharepackSettings,
    /// Public board page settings.
    pub pages: PageSettings,
}

/// The SQS URLs of one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueUrls {
    /// The queue.
    pub url: Option<String>,
    /// Its dead-letter queue (consumers move poison events there).
    pub dead_letter_url: Option<String>,
}

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Any OpenID Connect provider, found by issuer discovery.
    Oidc,
    /// Google (OpenID Connect).
    Google,
    /// Microsoft personal and work accounts (OAuth2 + OIDC user-info).
    Microsoft,
    /// Discord (OAuth2 + user-info).
    Discord,
}

impl ProviderKind {
    /// Parses a configured kind.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "oidc" | "openid" => Some(Self::Oidc),
            "google" => Some(Self::Google),
            "microsoft" => Some(Self::Microsoft),
            "discord" => Some(Self::Discord),
            _ => None,
        }
    }
}

/// A configured provider (`Auth__Providers__<name>__*`).
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The path segment, e.g. `google` in `/v1/auth/login/google`.
    pub name: String,
    /// How the provider is spoken to.
    pub kind: ProviderKind,
    /// The OAuth client id registered with the provider.
    pub client_id: String,
    /// From `...__ClientSecret`, or the secret named `<name>ClientSecret`; never printed.
    pub client_secret: Option<SecretString>,
    /// The issuer (required for `oidc`).
    pub issuer: Option<String>,
    /// The scopes asked for at sign-in.
    pub scopes: Vec<String>,
    /// `...__TrustEmailVerified`: whether the provider's word that an email is verified is
    /// believed, which lets its sign-in claim an account by that email. On by default for
    /// Google and Discord (its `verified` flag) and for Microsoft, where it also needs the
    /// token's `xms_edov: true` (Entra's `email` is set by the tenant); off by default for
    /// generic OIDC, whose tenants may assert any email.
    pub trust_email_verified: bool,
}

impl ProviderKind {
    /// Whether this kind's `email_verified` is trusted unless configured otherwise.
    pub fn trusts_email_verified_by_default(self) -> bool {
        !matches!(self, Self::Oidc)
    }
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

impl Settings {
    /// Defaults for the embedded backend with data in `data_dir`, listening on `address`.
    pub fn embedded(data_dir: impl Into<PathBuf>, address: SocketAddr) -> Self {
        Self {
            address,
            header_read_timeout: Duration::from_secs(
                keys::SERVER_HEADER_READ_TIMEOUT_SECONDS.default_number(),
            ),
            data_dir: data_dir.into(),
            backend: Backend::Embedded,
            table_prefix: keys::STORE_TABLE_PREFIX.default_text().into(),
            create_resources: false,
            bucket: None,
            queue_urls: BTreeMap::new(),
            visibility: Duration::from_secs(keys::QUEUE_VISIBILITY_SECONDS.default_number()),
            max_receives: keys::QUEUE_MAX_RECEIVES.default_number() as u32,
            secret_id: None,
            secrets_refresh: Duration::from_secs(keys::SECRETS_REFRESH_SECONDS.default_number()),
            jwt: JwtSettings {
                issuer: keys::JWT_ISSUER.default_text().into(),
                audience: keys::JWT_AUDIENCE.default_text().into(),
                expiry_minutes: keys::JWT_EXPIRY_MINUTES.default_number() as u32,
            },
            max_body_bytes: keys::HTTP_MAX_BODY_BYTES.default_number() as usize,
            request_timeout: Duration::from_secs(keys::HTTP_TIMEOUT_SECONDS.default_number()),
            log_format: LogFormat::Pretty,
            metrics_namespace: keys::METRICS_NAMESPACE.default_text().into(),
            metrics_cache: Duration::from_secs(keys::METRICS_CACHE_SECONDS.default_number()),
            auth: AuthSettings::default(),
            uploads_per_minute: keys::LIMITS_UPLOADS_PER_MINUTE.default_number() as u32,
            feed_posts_per_minute: keys::LIMITS_FEED_POSTS_PER_MINUTE.default_number() as u32,
            exports_per_hour: keys::LIMITS_EXPORTS_PER_HOUR.default_number() as u32,
            webhook_checks_per_hour: keys::LIMITS_WEBHOOK_CHECKS_PER_HOUR.default_number() as u32,
            new_boards_per_day: keys::LIMITS_NEW_BOARDS_PER_DAY.default_number() as u32,
            webhooks_allow_loopback_http: false,
            token_requests_per_minute: keys::LIMITS_TOKEN_REQUESTS_PER_MINUTE.default_number()
                as u32,
            leaderboard_cache: Duration::from_secs(
                keys::LEADERBOARDS_CACHE_SECONDS.default_number(),
            ),
            leaderboard_cache_bytes: keys::LEADERBOARDS_CACHE_MEGABYTES.default_number() << 20,
            retention_first_run: Duration::from_secs(
                keys::RETENTION_FIRST_RUN_SECONDS.default_number(),
            ),
            retention_interval: Duration::from_secs(
                60 * keys::RETENTION_INTERVAL_MINUTES.default_number(),
            ),
            ai: AiSettings::defaults(AiProvider::Anthropic),
            sharepacks: SharepackSettings::default(),
            pages: PageSettings::default(),
        }
    }

    /// Reads every key from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }

    /// Reads every key from `vars` (the environment, or a map in tests).
    pub fn from_vars(
        vars: &std::collections::HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let get = |k: &str| {
            vars.get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        // The stated default address is checked by the list's tests (it parses to this one).
        let mut s = Self::embedded(
            keys::DATA_DIR.default_text(),
            SocketAddr::from(([127, 0, 0, 1], 8080)),
        );
        if let Some(v) = get(keys::SERVER_ADDRESS.name) {
            s.address = parse(
                keys::SERVER_ADDRESS.name,
                &v,
                "a socket address such as 127.0.0.1:8080",
            )?;
        }
        if let Some(v) = get(keys::SERVER_HEADER_READ_TIMEOUT_SECONDS.name) {
            s.header_read_timeout =
                Duration::from_secs(keys::SERVER_HEADER_READ_TIMEOUT_SECONDS.whole_number(&v)?);
        }
        if let Some(v) = get(keys::DATA_DIR.name) {
            s.data_dir = v.into();
        }
        if let Some(v) = get(keys::STORE_BACKEND.name) {
            s.backend = match v.to_ascii_lowercase().as_str() {
                "embedded" | "local" | "sqlite" => Backend::Embedded,
                "aws" | "dynamodb" => Backend::Aws,
                _ => return Err(bad(keys::STORE_BACKEND.name, "must be `embedded` or `aws`")),
            };
        }
        if let Some(v) = get(keys::STORE_TABLE_PREFIX.name) {
            s.table_prefix = v;
        }
        if let Some(v) = get(keys::STORE_CREATE_RESOURCES.name) {
            s.create_resources = parse(keys::STORE_CREATE_RESOURCES.name, &v, "true or false")?;
        }
        s.bucket = get(keys::BLOBS_BUCKET.name);
        for queue in QueueName::ALL {
            let section = queue.config_section();
            let urls = QueueUrls {
                url: get(&keys::QUEUE_URL.name.replace("<Queue>", section)),
                dead_letter_url: get(&keys::QUEUE_DEAD_LETTER_URL.name.replace("<Queue>", section)),
            };
            if urls.url.is_some() || urls.dead_letter_url.is_some() {
                s.queue_urls.insert(queue, urls);
            }
        }
        s.ai = ai_settings(&get)?;
        let packs = &mut s.sharepacks;
        for (key, target) in [
            (
                keys::SHAREPACKS_MAX_DIRECT_BYTES,
                &mut packs.max_direct_bytes,
            ),
            (keys::SHAREPACKS_MAX_BYTES, &mut packs.max_bytes),
            (
                keys::SHAREPACKS_MAX_UNCOMPRESSED_BYTES,
                &mut packs.max_uncompressed_bytes,
            ),
            (keys::SHAREPACKS_MAX_RATIO, &mut packs.max_ratio),
            (
                keys::SHAREPACKS_MAX_BYTES_PER_USER,
                &mut packs.max_bytes_per_user,
            ),
        ] {
            if let Some(v) = get(key.name) {
                *target = key.whole_number(&v)?;
            }
        }
        if let Some(v) = get(keys::SHAREPACKS_MAX_ENTRIES.name) {
            packs.max_entries = keys::SHAREPACKS_MAX_ENTRIES.whole_number(&v)? as usize;
        }
        if let Some(v) = get(keys::SHAREPACKS_MAX_PER_USER.name) {
            packs.max_per_user = keys::SHAREPACKS_MAX_PER_USER.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::SHAREPACKS_UPLOADS_PER_MINUTE.name) {
            packs.uploads_per_minute = keys::SHAREPACKS_UPLOADS_PER_MINUTE.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::RETENTION_FIRST_RUN_SECONDS.name) {
            s.retention_first_run =
                Duration::from_secs(keys::RETENTION_FIRST_RUN_SECONDS.whole_number(&v)?);
        }
        if let Some(v) = get(keys::RETENTION_INTERVAL_MINUTES.name) {
            s.retention_interval =
                Duration::from_secs(60 * keys::RETENTION_INTERVAL_MINUTES.whole_number(&v)?);
        }
        if let Some(v) = get(keys::QUEUE_VISIBILITY_SECONDS.name) {
            s.visibility = Duration::from_secs(keys::QUEUE_VISIBILITY_SECONDS.whole_number(&v)?);
        }
        if let Some(v) = get(keys::QUEUE_MAX_RECEIVES.name) {
            s.max_receives = keys::QUEUE_MAX_RECEIVES.whole_number(&v)? as u32;
        }
        s.secret_id = get(keys::SECRETS_ID.name);
        if let Some(v) = get(keys::SECRETS_REFRESH_SECONDS.name) {
            s.secrets_refresh =
                Duration::from_secs(keys::SECRETS_REFRESH_SECONDS.whole_number(&v)?);
        }
        if let Some(v) = get(keys::JWT_ISSUER.name) {
            s.jwt.issuer = v;
        }
        if let Some(v) = get(keys::JWT_AUDIENCE.name) {
            s.jwt.audience = v;
        }
        if let Some(v) = get(keys::JWT_EXPIRY_MINUTES.name) {
            s.jwt.expiry_minutes = keys::JWT_EXPIRY_MINUTES.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::HTTP_MAX_BODY_BYTES.name) {
            s.max_body_bytes = keys::HTTP_MAX_BODY_BYTES.whole_number(&v)? as usize;
        }
        if let Some(v) = get(keys::HTTP_TIMEOUT_SECONDS.name) {
            s.request_timeout = Duration::from_secs(keys::HTTP_TIMEOUT_SECONDS.whole_number(&v)?);
        }
        if let Some(v) = get(keys::LOG_FORMAT.name) {
            s.log_format = match v.to_ascii_lowercase().as_str() {
                "json" => LogFormat::Json,
                "pretty" | "text" => LogFormat::Pretty,
                _ => return Err(bad(keys::LOG_FORMAT.name, "must be `json` or `pretty`")),
            };
        }
        if let Some(v) = get(keys::METRICS_NAMESPACE.name) {
            // CloudWatch: 1 to 255 characters of letters, digits and `.-_/#:`, not starting
            // with a colon.
            let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_/#: ".contains(c);
            if v.len() > 255 || v.starts_with(':') || !v.chars().all(allowed) {
                return Err(bad(
                    keys::METRICS_NAMESPACE.name,
                    "must be at most 255 letters, digits, spaces and .-_/#: (not starting with :)",
                ));
            }
            s.metrics_namespace = v;
        }
        if let Some(v) = get(keys::METRICS_CACHE_SECONDS.name) {
            s.metrics_cache = Duration::from_secs(keys::METRICS_CACHE_SECONDS.whole_number(&v)?);
        }
        let a = &mut s.auth;
        a.public_url = get(keys::AUTH_PUBLIC_URL.name).map(|u| u.trim_end_matches('/').to_owned());
        if let Some(v) = get(keys::AUTH_LOGIN_ATTEMPTS_PER_ACCOUNT.name) {
            a.login_attempts_per_account =
                keys::AUTH_LOGIN_ATTEMPTS_PER_ACCOUNT.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::AUTH_ATTEMPTS_PER_ADDRESS.name) {
            a.attempts_per_address = keys::AUTH_ATTEMPTS_PER_ADDRESS.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::AUTH_PROVIDER_STARTS_PER_ADDRESS.name) {
            a.provider_starts_per_address =
                keys::AUTH_PROVIDER_STARTS_PER_ADDRESS.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::AUTH_RATE_WINDOW_SECONDS.name) {
            a.rate_window_secs = keys::AUTH_RATE_WINDOW_SECONDS.whole_number(&v)? as i64;
        }
        if let Some(v) = get(keys::AUTH_FAILED_LOGINS_PER_ACCOUNT.name) {
            a.failed_logins_per_account =
                keys::AUTH_FAILED_LOGINS_PER_ACCOUNT.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::AUTH_GUARDED_ATTEMPTS_PER_ADDRESS.name) {
            a.guarded_attempts_per_address =
                keys::AUTH_GUARDED_ATTEMPTS_PER_ADDRESS.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::AUTH_FAILED_LOGIN_WINDOW_SECONDS.name) {
            a.failed_login_window_secs =
                keys::AUTH_FAILED_LOGIN_WINDOW_SECONDS.whole_number(&v)? as i64;
        }
        if let Some(v) = get(keys::AUTH_HASHING_THREADS.name) {
            a.hashing_threads = keys::AUTH_HASHING_THREADS.whole_number(&v)? as usize;
        }
        if let Some(v) = get(keys::AUTH_HASHING_WAIT_MILLIS.name) {
            a.hashing_wait =
                Duration::from_millis(keys::AUTH_HASHING_WAIT_MILLIS.whole_number(&v)?);
        }
        a.providers = providers(vars)?;
        if let Some(v) = get(keys::LIMITS_UPLOADS_PER_MINUTE.name) {
            s.uploads_per_minute = keys::LIMITS_UPLOADS_PER_MINUTE.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::LIMITS_FEED_POSTS_PER_MINUTE.name) {
            s.feed_posts_per_minute = keys::LIMITS_FEED_POSTS_PER_MINUTE.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::LIMITS_EXPORTS_PER_HOUR.name) {
            s.exports_per_hour = keys::LIMITS_EXPORTS_PER_HOUR.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::LIMITS_WEBHOOK_CHECKS_PER_HOUR.name) {
            s.webhook_checks_per_hour =
                keys::LIMITS_WEBHOOK_CHECKS_PER_HOUR.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::LIMITS_NEW_BOARDS_PER_DAY.name) {
            s.new_boards_per_day = keys::LIMITS_NEW_BOARDS_PER_DAY.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::WEBHOOKS_ALLOW_LOOPBACK_HTTP.name) {
            s.webhooks_allow_loopback_http =
                parse(keys::WEBHOOKS_ALLOW_LOOPBACK_HTTP.name, &v, "true or false")?;
        }
        if let Some(v) = get(keys::LIMITS_TOKEN_REQUESTS_PER_MINUTE.name) {
            s.token_requests_per_minute =
                keys::LIMITS_TOKEN_REQUESTS_PER_MINUTE.whole_number(&v)? as u32;
        }
        if let Some(v) = get(keys::LEADERBOARDS_CACHE_SECONDS.name) {
            s.leaderboard_cache =
                Duration::from_secs(keys::LEADERBOARDS_CACHE_SECONDS.whole_number(&v)?);
        }
        if let Some(v) = get(keys::LEADERBOARDS_CACHE_MEGABYTES.name) {
            s.leaderboard_cache_bytes = keys::LEADERBOARDS_CACHE_MEGABYTES.whole_number(&v)? << 20;
        }
        if let Some(v) = get(keys::PAGES_AVATAR_HOSTS.name) {
            s.pages.avatar_hosts = avatar_hosts(&v)?;
        }
        if s.backend == Backend::Aws {
            // Queue URLs are checked by the functions that use them (see the wiring).
            if s.bucket.is_none() && !s.create_resources {
                return Err(bad(
                    keys::BLOBS_BUCKET.name,
                    "is required when Store__Backend=aws",
                ));
            }
        }
        Ok(s)
    }
}

/// Where a provider's settings were read: its own `Auth__Providers__<name>__*` variables, or
/// its entry in the `Auth__ProvidersJson` object (one template parameter in AWS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProviderSource {
    Variables,
    Json,
}

impl ProviderSource {
    /// The configuration key an error about `field` names.
    fn key(self, field: &str) -> &'static str {
        match (self, field) {
            (Self::Json, _) => keys::AUTH_PROVIDERS_JSON.name,
            (Self::Variables, "Kind") => keys::AUTH_PROVIDER_KIND.name,
            (Self::Variables, "ClientId") => keys::AUTH_PROVIDER_CLIENT_ID.name,
            (Self::Variables, "Issuer") => keys::AUTH_PROVIDER_ISSUER.name,
            (Self::Variables, "TrustEmailVerified") => {
                keys::AUTH_PROVIDER_TRUST_EMAIL_VERIFIED.name
            }
            (Self::Variables, _) => "Auth__Providers",
        }
    }

    /// How an error names the field: the JSON member, since that key holds every provider.
    fn field(self, field: &str) -> String {
        match self {
            Self::Variables => String::new(),
            Self::Json => {
                let mut member = field.to_owned();
                member[..1].make_ascii_lowercase();
                format!("{member}: ")
            }
        }
    }
}

/// Reads every provider: `Auth__Providers__<name>__<Field>` for every name present, and the
/// members of `Auth__ProvidersJson`. A name may be set one way only.
fn providers(
    vars: &std::collections::HashMap<String, String>,
) -> Result<Vec<ProviderConfig>, ConfigError> {
    let mut names: Vec<String> = vars
        .keys()
        .filter_map(|k| k.strip_prefix("Auth__Providers__"))
        .filter_map(|rest| rest.split_once("__").map(|(name, _)| name.to_owned()))
        .collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let field = |f: &str| {
            vars.get(&format!("Auth__Providers__{name}__{f}"))
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        out.push(provider(&name, ProviderSource::Variables, field)?);
    }
    let json = vars
        .get(keys::AUTH_PROVIDERS_JSON.name)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty());
    if let Some(json) = json {
        for (name, fields) in providers_json(json)? {
            let set = provider(&name, ProviderSource::Json, |f| fields.get(f).cloned())?;
            if out.iter().any(|p| p.name == set.name) {
                return Err(bad(
                    keys::AUTH_PROVIDERS_JSON.name,
                    &format!(
                        "provider {} is also set by Auth__Providers__{name}__* (set it one way)",
                        set.name
                    ),
                ));
            }
            out.push(set);
        }
    }
    Ok(out)
}

/// One provider's settings by field name (`Kind`, `ClientId`, ...).
type ProviderFields = BTreeMap<&'static str, String>;

/// The members of `Auth__ProvidersJson` as each provider's fields, spelled as the variables'
/// (`Kind`, `ClientId`, `Issuer`, `Scopes`, `TrustEmailVerified`): an object of objects, e.g.
/// `{"google":{"clientId":"..."},"corp":{"kind":"oidc","clientId":"...","issuer":"https://..."}}`.
/// Client secrets are refused here: this value is a template parameter, shown in the stack.
fn providers_json(text: &str) -> Result<Vec<(String, ProviderFields)>, ConfigError> {
    use serde_json::Value;
    let key = keys::AUTH_PROVIDERS_JSON.name;
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        bad(
            key,
            &format!("is not JSON ({e}); expected {{\"<name>\": {{\"clientId\": ...}}}}"),
        )
    })?;
    let Value::Object(providers) = doc else {
        return Err(bad(key, "must be a JSON object of providers by name"));
    };
    let mut out = Vec::new();
    for (name, settings) in providers {
        let Value::Object(settings) = settings else {
            return Err(bad(key, &format!("provider {name:?} must be an object")));
        };
        let mut fields = BTreeMap::new();
        for (member, value) in settings {
            let field = match member.as_str() {
                "kind" => "Kind",
                "clientId" => "ClientId",
                "issuer" => "Issuer",
                "scopes" => "Scopes",
                "trustEmailVerified" => "TrustEmailVerified",
                "clientSecret" => {
                    return Err(bad(
                        key,
                        &format!(
                            "provider {name}: clientSecret does not belong here (the value is \
                             visible in the stack); put it in the app secret as {name}ClientSecret"
                        ),
                    ));
                }
                other => {
                    return Err(bad(
                        key,
                        &format!(
                            "provider {name}: unknown member {other:?} (kind, clientId, issuer, \
                             scopes, trustEmailVerified)"
                        ),
                    ));
                }
            };
            let text = match (field, value) {
                (_, Value::String(s)) => s,
                ("TrustEmailVerified", Value::Bool(b)) => b.to_string(),
                ("Scopes", Value::Array(items)) => {
                    let words: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                    words
                        .ok_or_else(|| {
                            bad(key, &format!("provider {name}: scopes must be strings"))
                        })?
                        .join(" ")
                }
                (_, _) => {
                    return Err(bad(
                        key,
                        &format!("provider {name}: {member} must be a string"),
                    ));
                }
            };
            let text = text.trim().to_owned();
            if !text.is_empty() {
                fields.insert(field, text);
            }
        }
        out.push((name, fields));
    }
    Ok(out)
}

/// Checks one provider's fields, read by `field` (`Kind`, `ClientId`, ...), and applies the
/// defaults of its kind.
fn provider(
    name: &str,
    source: ProviderSource,
    field: impl Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ConfigError> {
    let slot = name.to_ascii_lowercase();
    if slot.is_empty() || !slot.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(bad(
            source.key("Name"),
            &format!("provider name {name:?} must be letters, digits and '-'"),
        ));
    }
    let kind_text = field("Kind").unwrap_or_else(|| slot.clone());
    let kind = ProviderKind::parse(&kind_text).ok_or_else(|| {
        bad(
            source.key("Kind"),
            &format!(
                "{}{kind_text:?} is not oidc, google, microsoft or discord",
                source.field("Kind")
            ),
        )
    })?;
    let client_id = field("ClientId").ok_or_else(|| {
        bad(
            source.key("ClientId"),
            &format!("{}missing for provider {slot}", source.field("ClientId")),
        )
    })?;
    let issuer = field("Issuer");
    if kind == ProviderKind::Oidc && issuer.is_none() {
        return Err(bad(
            source.key("Issuer"),
            &format!(
                "{}required for the oidc provider {slot}",
                source.field("Issuer")
            ),
        ));
    }
    if let Some(issuer) = &issuer {
        secure_provider_url(issuer).map_err(|reason| {
            bad(
                source.key("Issuer"),
                &format!(
                    "{}{issuer:?} of provider {slot} {reason}",
                    source.field("Issuer")
                ),
            )
        })?;
    }
    let default_scopes = match kind {
        ProviderKind::Discord => "identify email",
        _ => "openid email profile",
    };
    let scopes = field("Scopes")
        .unwrap_or_else(|| default_scopes.to_owned())
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let trust_email_verified = match field("TrustEmailVerified") {
        None => kind.trusts_email_verified_by_default(),
        Some(v) => v.parse().map_err(|_| {
            bad(
                source.key("TrustEmailVerified"),
                &format!(
                    "{}{v:?} of provider {slot} is not true or false",
                    source.field("TrustEmailVerified")
                ),
            )
        })?,
    };
    Ok(ProviderConfig {
        name: slot,
        kind,
        client_id,
        client_secret: field("ClientSecret").map(Into::into),
        issuer,
        scopes,
        trust_email_verified,
    })
}

/// Refuses a provider URL (an issuer, or an endpoint its discovery names) the client secret,
/// codes and tokens would travel to or from in clear: `https` only, except a loopback host (a
/// provider on the same machine, as in tests).
pub fn secure_provider_url(url: &str) -> Result<(), &'static str> {
    let url = url::Url::parse(url).map_err(|_| "is not a URL")?;
    let host = url.host_str().ok_or("has no host")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err("must be an https URL (plain http only on a loopback host)"),
    }
}

fn bad(key: &'static str, reason: &str) -> ConfigError {
    ConfigError {
        key,
        reason: reason.into(),
    }
}

/// The `Ai__*` keys.
fn ai_settings(get: &impl Fn(&str) -> Option<String>) -> Result<AiSettings, ConfigError> {
    let provider = match get(keys::AI_PROVIDER.name)
        .as_deref()
        .map(str::to_ascii_lowercase)
    {
        None => AiProvider::Anthropic,
        Some(p) if p == "anthropic" => AiProvider::Anthropic,
        Some(p) if p == "openai" => AiProvider::OpenAi,
        Some(p) => {
            return Err(bad(
                keys::AI_PROVIDER.name,
                &format!("{p:?} is not anthropic or openai"),
            ));
        }
    };
    let mut ai = AiSettings::defaults(provider);
    if let Some(model) = get(keys::AI_MODEL.name) {
        ai.model = model;
    }
    if let Some(url) = get(keys::AI_BASE_URL.name) {
        let parsed = url::Url::parse(&url).ok().filter(|u| {
            matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
        });
        if parsed.is_none() {
            return Err(bad(
                keys::AI_BASE_URL.name,
                &format!("{url:?} is not an http(s) URL"),
            ));
        }
        ai.base_url = url.trim_end_matches('/').to_owned();
        ai.base_url_configured = true;
    }
    if let Some(v) = get(keys::AI_TIMEOUT_SECONDS.name) {
        ai.timeout = Duration::from_secs(keys::AI_TIMEOUT_SECONDS.whole_number(&v)?);
    }
    if let Some(v) = get(keys::AI_REQUESTS_PER_HOUR.name) {
        ai.requests_per_hour = keys::AI_REQUESTS_PER_HOUR.whole_number(&v)? as u32;
    }
    if let Some(v) = get(keys::AI_TOKENS_PER_DAY.name) {
        ai.tokens_per_day = keys::AI_TOKENS_PER_DAY.whole_number(&v)?;
    }
    if let Some(v) = get(keys::AI_SERVICE_TOKENS_PER_DAY.name) {
        ai.service_tokens_per_day = keys::AI_SERVICE_TOKENS_PER_DAY.whole_number(&v)?;
    }
    Ok(ai)
}

fn parse<T: std::str::FromStr>(key: &'static str, v: &str, want: &str) -> Result<T, ConfigError> {
    v.parse()
        .map_err(|_| bad(key, &format!("{v:?} is not {want}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_vars(&map)
    }

    #[test]
    fn defaults_are_the_embedded_backend_on_loopback() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.backend, Backend::Embedded);
        assert_eq!(s.address.to_string(), "127.0.0.1:8080");
        assert_eq!(s.jwt.expiry_minutes, 60);
    }

    #[test]
    fn printed_settings_hold_no_client_secret() {
        let s = settings(&[
            ("Auth__Providers__google__ClientId", "id"),
            ("Auth__Providers__google__ClientSecret", "very-secret-value"),
        ])
        .unwrap();
        assert!(s.auth.providers[0].trust_email_verified);
        let printed = format!("{s:?}");
        assert!(printed.contains("google"), "{printed}");
        assert!(!printed.contains("very-secret-value"), "{printed}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = settings(&[("Jwt__ExpiryMinutes", "0")]).unwrap_err();
        assert_eq!(err.key, "Jwt__ExpiryMinutes");
        let err = settings(&[("Store__Backend", "mongo")]).unwrap_err();
        assert_eq!(err.key, "Store__Backend");
        let err = settings(&[("Store__Backend", "aws")]).unwrap_err();
        assert_eq!(err.key, "Blobs__Bucket");
    }

    #[test]
    fn avatar_hosts_are_host_names() {
        let s = settings(&[]).unwrap();
        assert_eq!(
            s.pages.avatar_hosts,
            ["lh3.googleusercontent.com", "cdn.discordapp.com"]
        );
        let s = settings(&[("Pages__AvatarHosts", " CDN.example.com, a.b-c.org ,,")]).unwrap();
        assert_eq!(s.pages.avatar_hosts, ["cdn.example.com", "a.b-c.org"]);
        let s = settings(&[("Pages__AvatarHosts", "none")]).unwrap();
        assert!(s.pages.avatar_hosts.is_empty());
        for bad in [
            "https://cdn.example.com",
            "cdn.example.com:443",
            "10.0.0.1",
            "[::1]",
            "localhost",
            "cdn.example.com/avatars",
            "*.example.com",
            "-a.example.com",
            "a..example.com",
        ] {
            let err = settings(&[("Pages__AvatarHosts", bad)]).unwrap_err();
            assert_eq!(err.key, "Pages__AvatarHosts", "{bad}");
        }
    }

    #[test]
    fn oidc_issuers_must_be_https_except_on_loopback() {
        let with_issuer = |issuer: &str| {
            settings(&[
                ("Auth__Providers__corp__Kind", "oidc"),
                ("Auth__Providers__corp__ClientId", "id"),
                ("Auth__Providers__corp__Issuer", issuer),
            ])
        };
        let err = with_issuer("http://login.example.com").unwrap_err();
        assert_eq!(err.key, "Auth__Providers__<name>__Issuer");
        assert!(err.reason.contains("must be an https URL"), "{err}");
        assert!(err.reason.contains("corp"), "{err}");
        assert!(with_issuer("ftp://login.example.com").is_err());
        assert!(with_issuer("not a url").is_err());
        // A loopback name that is not loopback is still refused.
        assert!(with_issuer("http://127.0.0.1.example.com").is_err());
        for fine in [
            "https://login.example.com/tenant",
            "http://127.0.0.1:8089",
            "http://localhost:8089",
            "http://[::1]:8089",
        ] {
            assert!(with_issuer(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn providers_from_one_json_value_are_checked_as_the_variables_are() {
        let s = settings(&[(
            "Auth__ProvidersJson",
            r#"{"google": {"clientId": "g-id"},
                "corp": {"kind": "oidc", "clientId": "c-id", "issuer": "https://login.example.com",
                         "scopes": ["openid", "email"], "trustEmailVerified": true}}"#,
        )])
        .unwrap();
        let by_name = |n: &str| s.auth.providers.iter().find(|p| p.name == n).unwrap();
        let google = by_name("google");
        assert_eq!(google.kind, ProviderKind::Google);
        assert_eq!(google.client_id, "g-id");
        assert_eq!(google.scopes, ["openid", "email", "profile"]);
        assert!(google.trust_email_verified);
        let corp = by_name("corp");
        assert_eq!(corp.kind, ProviderKind::Oidc);
        assert_eq!(corp.issuer.as_deref(), Some("https://login.example.com"));
        assert_eq!(corp.scopes, ["openid", "email"]);
        assert!(corp.trust_email_verified);
        // Empty (the template's default) means no providers.
        assert!(
            settings(&[("Auth__ProvidersJson", "")])
                .unwrap()
                .auth
                .providers
                .is_empty()
        );

        let refused = |json: &str| {
            let err = settings(&[("Auth__ProvidersJson", json)]).unwrap_err();
            assert_eq!(err.key, "Auth__ProvidersJson", "{err}");
            err.reason
        };
        let reason = refused(r#"{"corp": {"kind": "oidc", "clientId": "id"}}"#);
        assert_eq!(reason, "issuer: required for the oidc provider corp");
        let reason = refused(
            r#"{"corp": {"kind": "oidc", "clientId": "id", "issuer": "http://login.example.com"}}"#,
        );
        assert!(reason.contains("must be an https URL"), "{reason}");
        assert_eq!(
            refused(r#"{"google": {}}"#),
            "clientId: missing for provider google"
        );
        assert_eq!(
            refused(r#"{"x": {"kind": "saml", "clientId": "id"}}"#),
            r#"kind: "saml" is not oidc, google, microsoft or discord"#
        );
        assert!(
            refused(r#"{"google": {"clientId": "id", "clientSecret": "s"}}"#)
                .contains("put it in the app secret as googleClientSecret")
        );
        assert!(refused(r#"{"google": {"clientID": "id"}}"#).contains("unknown member"));
        assert!(refused(r#"{"go ogle": {"clientId": "id"}}"#).contains("letters, digits"));
        assert!(refused(r#"["google"]"#).contains("JSON object"));
        assert!(refused("{google").contains("is not JSON"));
        assert!(
            refused(r#"{"google": {"clientId": "id", "trustEmailVerified": "yes"}}"#)
                .contains("not true or false")
        );
        // One provider set both ways is refused rather than one silently winning.
        let err = settings(&[
            ("Auth__Providers__google__ClientId", "a"),
            ("Auth__ProvidersJson", r#"{"google": {"clientId": "b"}}"#),
        ])
        .unwrap_err();
        assert_eq!(err.key, "Auth__ProvidersJson");
        assert!(err.reason.contains("set it one way"), "{err}");
    }

    #[test]
    fn deployment_wide_caps_are_configured() {
        let s = settings(&[
            ("Ai__ServiceTokensPerDay", "1000"),
            ("Limits__FeedPostsPerMinute", "3"),
            ("Limits__ExportsPerHour", "2"),
            ("Server__HeaderReadTimeoutSeconds", "4"),
        ])
        .unwrap();
        assert_eq!(s.ai.service_tokens_per_day, 1000);
        assert_eq!(s.feed_posts_per_minute, 3);
        assert_eq!(s.exports_per_hour, 2);
        assert_eq!(s.header_read_timeout, Duration::from_secs(4));
        for key in [
            "Ai__ServiceTokensPerDay",
            "Limits__FeedPostsPerMinute",
            "Limits__ExportsPerHour",
            "Server__HeaderReadTimeoutSeconds",
        ] {
            assert_eq!(settings(&[(key, "0")]).unwrap_err().key, key);
        }
    }

    #[test]
    fn queues_and_retention_are_configured_by_name() {
        let s = settings(&[
            ("Queue__Feed__Url", "https://sqs.example/feed"),
            ("Queue__Feed__DeadLetterUrl", "https://sqs.example/feed-dlq"),
            (
                "Queue__Achievements__Url",
                "https://sqs.example/achievements",
            ),
            ("Retention__FirstRunSeconds", "5"),
            ("Retention__IntervalMinutes", "15"),
        ])
        .unwrap();
        assert_eq!(
            s.queue_urls[&QueueName::Feed],
            QueueUrls {
                url: Some("https://sqs.example/feed".into()),
                dead_letter_url: Some("https://sqs.example/feed-dlq".into()),
            }
        );
        assert_eq!(s.queue_urls[&QueueName::Achievements].dead_letter_url, None);
        assert!(!s.queue_urls.contains_key(&QueueName::TrackMaps));
        assert_eq!(s.retention_first_run, Duration::from_secs(5));
        assert_eq!(s.retention_interval, Duration::from_secs(900));
        let err = settings(&[("Retention__IntervalMinutes", "0")]).unwrap_err();
        assert_eq!(err.key, "Retention__IntervalMinutes");
    }
}
