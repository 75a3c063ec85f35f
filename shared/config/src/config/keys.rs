//! Every configuration key, in one list: the typed field it fills, its name, default, bounds
//! and meaning.
//!
//! A new key is one entry here: the field of its settings struct (documented by the key's
//! meaning), read through the layers of [`super::Source`] with the default and bounds stated
//! beside it. `docs/configuration.md` shows this list, rendered by its tests: one fails when
//! the page differs from the list, or when a stated default is not what an unset key gives.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{AiProvider, Backend, ConfigError, LogFormat, ProviderConfig, QueueUrls, Source, bad};
use paddock_kernel::ids::UserId;
use paddock_kernel::queues::QueueName;

/// What a key holds when it is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// A whole number.
    Number(u64),
    /// A text value, read as if it had been set.
    Text(&'static str),
    /// Worked out at start from something else; the text says from what.
    Derived(&'static str),
    /// Nothing: the feature it configures is off, or the key is required where it is used.
    Unset,
}

/// One configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The environment variable, `Section__Key` (`<name>` marks a part the operator chooses,
    /// `<Queue>` each queue's section).
    pub name: &'static str,
    /// What the key holds when unset.
    pub default: DefaultValue,
    /// The smallest and largest whole number allowed, for numeric keys.
    pub bounds: Option<(u64, u64)>,
    /// What the key does, in one line.
    pub meaning: &'static str,
}

impl Key {
    /// The default as text, as the defaults layer holds it (`None` without a stated value).
    pub fn default_text(&self) -> Option<String> {
        match self.default {
            DefaultValue::Number(n) => Some(n.to_string()),
            DefaultValue::Text(t) => Some(t.to_owned()),
            DefaultValue::Derived(_) | DefaultValue::Unset => None,
        }
    }

    /// `value` read as a whole number within the key's bounds; the error names the key and
    /// the rule.
    pub fn whole_number(&self, value: &str) -> Result<u64, ConfigError> {
        let (min, max) = self.bounds.unwrap_or((0, u64::MAX));
        match value.parse() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            Ok(n) => Err(bad(self.name, &format!("{n} is outside {min}..={max}"))),
            Err(_) => Err(bad(self.name, &format!("{value:?} is not a whole number"))),
        }
    }
}

/// Declares the settings structs, each field with the key that fills it, the keys read by code
/// of their own, and the list of every key.
macro_rules! settings {
    ($(
        #[doc = $doc:literal] #[derive($($derive:ident),*)]
        pub struct $s:ident {
            $($field:ident: $ty:ty as $id:ident = $name:literal $dk:ident $(($dv:expr))?
                $(in $min:literal..=$max:literal)? $(=> $conv:path)?; $meaning:literal)*
        }
        $(also { $($(#[doc = $adoc:literal])* $afield:ident: $aty:ty = $aread:path,)* }
            $(then $finish:path;)?)?
    )*
    others { $($oid:ident = $oname:literal $odk:ident $(($odv:expr))?; $omeaning:literal)* }
    ) => {
        $(
            #[doc = $doc]
            #[derive($($derive),*)]
            pub struct $s {
                $(#[doc = concat!("`", $name, "`: ", $meaning, ".")] pub $field: $ty,)*
                $($($(#[doc = $adoc])* pub $afield: $aty,)*)?
            }

            impl $s {
                /// Reads the struct's keys from `source`'s layers.
                pub(crate) fn read(source: &Source) -> Result<Self, ConfigError> {
                    let s = Self {
                        $($field: {
                            let value = source.value(&$id);
                            $(let value = value.and_then(|v| $conv(v).map_err(|why| bad($id.name, &why)));)?
                            value?
                        },)*
                        $($($afield: $aread(source)?,)*)?
                    };
                    $($(let s = $finish(s)?;)?)?
                    Ok(s)
                }
            }

            impl Default for $s {
                /// What no variable set gives: the defaults of the list.
                fn default() -> Self {
                    Self::read(&Source::new(&Default::default())).expect("the list's defaults are valid")
                }
            }

            $(
                #[doc = concat!("`", $name, "`.")]
                pub const $id: Key = Key {
                    name: $name,
                    default: DefaultValue::$dk$(($dv))?,
                    bounds: <[(u64, u64)]>::first(&[$(($min, $max))?]).copied(),
                    meaning: $meaning,
                };
            )*
        )*

        $(
            #[doc = concat!("`", $oname, "`.")]
            pub const $oid: Key = Key {
                name: $oname,
                default: DefaultValue::$odk$(($odv))?,
                bounds: None,
                meaning: $omeaning,
            };
        )*

        /// Every key, in the order the documentation lists them.
        const ALL: &[Key] = &[$($($id,)*)* $($oid,)*];
    };
}

settings! {
    /// Every setting of the service.
    #[derive(Debug, Clone)]
    pub struct Settings {
        address: SocketAddr as SERVER_ADDRESS = "Server__Address" Text("127.0.0.1:8080") => super::socket_address;
            "where the local server listens"
        header_read_timeout: Duration as SERVER_HEADER_READ_TIMEOUT_SECONDS = "Server__HeaderReadTimeoutSeconds" Number(10) in 1..=300 => super::per::<1000>;
            "local server: a connection whose request headers have not all arrived this long after it started waiting for them is closed"
        data_dir: PathBuf as DATA_DIR = "Data__Dir" Text("./data");
            "embedded backend: SQLite file `paddock.db`, `blobs/`, `secrets.json` (directories created 0700, files 0600; narrowed at start where an earlier version left them readable); used by one server process at a time (it caches point reads of what it wrote): `paddock.lock` is locked at start, and a second process over the same directory refuses to start, naming it"
        backend: Backend as STORE_BACKEND = "Store__Backend" Text("embedded") => super::backend;
            "`embedded` or `aws` (DynamoDB, S3, SQS, Secrets Manager)"
        table_prefix: String as STORE_TABLE_PREFIX = "Store__TablePrefix" Text("paddock-");
            "physical DynamoDB table name = prefix + logical name"
        create_resources: bool as STORE_CREATE_RESOURCES = "Store__CreateResources" Text("false") => super::boolean;
            "with `aws`: create tables, bucket and queues at start (for emulators)"
        bucket: Option<String> as BLOBS_BUCKET = "Blobs__Bucket" Unset;
            "S3 bucket (required with `aws` unless created)"
        visibility: Duration as QUEUE_VISIBILITY_SECONDS = "Queue__VisibilitySeconds" Number(60) in 1..=43_200 => super::per::<1000>;
            "how long a received event stays hidden before redelivery"
        max_receives: u32 as QUEUE_MAX_RECEIVES = "Queue__MaxReceives" Number(5) in 1..=1000;
            "deliveries before an event is dead-lettered (local consumers; the SQS redrive policy in AWS)"
        secret_id: Option<String> as SECRETS_ID = "Secrets__Id" Unset;
            "Secrets Manager secret (a JSON object of named values)"
        secrets_refresh: Duration as SECRETS_REFRESH_SECONDS = "Secrets__RefreshSeconds" Number(300) in 0..=86_400 => super::per::<1000>;
            "secrets (signing keys) are read again after this long, so a rotation reaches warm instances; `0`: read once"
        max_body_bytes: usize as HTTP_MAX_BODY_BYTES = "Http__MaxBodyBytes" Number(1024 * 1024) in 1024..=536_870_912;
            "largest request body; larger answers 413"
        request_timeout: Duration as HTTP_TIMEOUT_SECONDS = "Http__TimeoutSeconds" Number(25) in 1..=900 => super::per::<1000>;
            "request deadline; slower answers 504"
        log_format: LogFormat as LOG_FORMAT = "Log__Format" Text("pretty") => super::log_format;
            "log line format, `pretty` or `json` (a Lambda function's default); the local server writes its log from a writer thread (a request never waits for the terminal), a Lambda function each line before it answers"
        metrics_namespace: String as METRICS_NAMESPACE = "Metrics__Namespace" Text("Paddock") => super::metrics_namespace;
            "Lambda: the CloudWatch namespace of the metric lines (the template sets `Paddock/<stack>`; see [operating.md](operating.md#metrics))"
        metrics_cache: Duration as METRICS_CACHE_SECONDS = "Metrics__CacheSeconds" Number(60) in 1..=3600 => super::per::<1000>;
            "Lambda: `GET /metrics` reads CloudWatch at most once per this many seconds (each read is billed per metric series; concurrent scrapes share one read; see [operating.md](operating.md#metrics))"
        uploads_per_minute: u32 as LIMITS_UPLOADS_PER_MINUTE = "Limits__UploadsPerMinute" Number(30) in 1..=1_000_000;
            "session uploads per user per minute; the next answers 429"
        feed_posts_per_minute: u32 as LIMITS_FEED_POSTS_PER_MINUTE = "Limits__FeedPostsPerMinute" Number(10) in 1..=1_000_000;
            "feed posts (`POST /v1/feed`) per driver per minute; the next answers 429"
        exports_per_hour: u32 as LIMITS_EXPORTS_PER_HOUR = "Limits__ExportsPerHour" Number(6) in 1..=1_000_000;
            "data exports (`GET /v1/profile/me/export`) per driver per hour; the next answers 429"
        webhook_checks_per_hour: u32 as LIMITS_WEBHOOK_CHECKS_PER_HOUR = "Limits__WebhookChecksPerHour" Number(20) in 1..=1_000_000;
            "requests per driver per hour that the service sends to webhook receivers on the driver's demand: the verification of a new subscription, a changed URL or a resumed one, and `POST /v1/webhooks/{id}/test`; the next answers 429"
        token_requests_per_minute: u32 as LIMITS_TOKEN_REQUESTS_PER_MINUTE = "Limits__TokenRequestsPerMinute" Number(120) in 1..=1_000_000;
            "requests per personal access token, and per driver's grant to an OAuth app, in any 60 seconds; answers to token requests carry `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, and the next answers 429 with `Retry-After`"
        app_requests_per_minute: u32 as LIMITS_APP_REQUESTS_PER_MINUTE = "Limits__AppRequestsPerMinute" Number(6000) in 1..=10_000_000;
            "requests per OAuth app in any 60 seconds, over all the drivers it acts for (each driver's grant also has `Limits__TokenRequestsPerMinute`); answered as for a personal access token"
        webhooks_allow_loopback_http: bool as WEBHOOKS_ALLOW_LOOPBACK_HTTP = "Webhooks__AllowLoopbackHttp" Text("false") => super::boolean;
            "local tests only, never in AWS: `true` lets webhook subscriptions, and OAuth clients' metadata documents (a `client_id` that is a URL), use `http` and loopback addresses (127.0.0.0/8, ::1); every other address rule stays"
        event_operators: Vec<UserId> as EVENTS_OPERATORS = "Events__Operators" Unset => super::user_ids;
            "the drivers (user ids, comma-separated) who make public competition events (`POST /v1/events`); nobody when unset"
        new_boards_per_day: u32 as LIMITS_NEW_BOARDS_PER_DAY = "Limits__NewBoardsPerDay" Number(50) in 1..=1_000_000;
            "leaderboard submissions per driver per day that put the driver on a board they were not on (a new track, or a new car on a track); the next answers 429 with nothing written, while better laps on the driver's boards still count"
        leaderboard_cache: Duration as LEADERBOARDS_CACHE_SECONDS = "Leaderboards__CacheSeconds" Number(5) in 0..=3600 => super::per::<1000>;
            "how long a process serves a leaderboard page from memory (`0`: off); also the `Cache-Control` max-age"
        leaderboard_cache_bytes: u64 as LEADERBOARDS_CACHE_MEGABYTES = "Leaderboards__CacheMegabytes" Number(32) in 1..=4096 => super::megabytes;
            "most page bytes a process keeps in its leaderboard cache (least used go first)"
        retention_first_run: Duration as RETENTION_FIRST_RUN_SECONDS = "Retention__FirstRunSeconds" Number(120) in 0..=86_400 => super::per::<1000>;
            "local server, embedded backend: the first retention sweep, this long after start"
        retention_interval: Duration as RETENTION_INTERVAL_MINUTES = "Retention__IntervalMinutes" Number(60) in 1..=10_080 => super::per::<60_000>;
            "local server, embedded backend: time between retention sweeps (AWS: DynamoDB's TTL, see [events-and-retention.md](events-and-retention.md#retention))"
    }
    also {
        /// `Queue__<Queue>__Url` and `__DeadLetterUrl`: the SQS queues of the AWS backend (a
        /// function needs only the queues it uses).
        queue_urls: BTreeMap<QueueName, QueueUrls> = super::queue_urls,
        /// Token settings.
        jwt: JwtSettings = JwtSettings::read,
        /// Sign-in settings.
        auth: AuthSettings = AuthSettings::read,
        /// AI coaching settings.
        ai: AiSettings = AiSettings::read,
        /// Share-pack settings.
        sharepacks: SharepackSettings = SharepackSettings::read,
        /// Public board page settings.
        pages: PageSettings = PageSettings::read,
    } then super::bucket_when_aws;
    /// Token settings (`Jwt__*`).
    #[derive(Debug, Clone)]
    pub struct JwtSettings {
        issuer: String as JWT_ISSUER = "Jwt__Issuer" Text("paddock");
            "access-token issuer (checked exactly)"
        audience: String as JWT_AUDIENCE = "Jwt__Audience" Text("paddock-desktop");
            "access-token audience (checked exactly)"
        expiry_minutes: u32 as JWT_EXPIRY_MINUTES = "Jwt__ExpiryMinutes" Number(60) in 1..=1440;
            "access-token lifetime"
    }
    /// AI coaching settings (`Ai__*`).
    #[derive(Debug, Clone)]
    pub struct AiSettings {
        provider: AiProvider as AI_PROVIDER = "Ai__Provider" Text("anthropic") => super::ai_provider;
            "the AI coach's API: `anthropic` (Messages API) or `openai` (any Chat Completions-compatible server)"
        model: String as AI_MODEL = "Ai__Model" Derived("`claude-sonnet-4-5` (`gpt-4o-mini` with `openai`)") => super::or_empty;
            "the one model of this deployment"
        base_url: String as AI_BASE_URL = "Ai__BaseUrl" Derived("`https://api.anthropic.com` (`https://api.openai.com/v1` with `openai`)") => super::or_empty;
            "the API's base URL; with `openai`, setting it (e.g. `http://127.0.0.1:8081/v1`) makes the key optional"
        timeout: Duration as AI_TIMEOUT_SECONDS = "Ai__TimeoutSeconds" Number(25) in 1..=28 => super::per::<1000>;
            "upstream deadline (under API Gateway's 29 s); slower answers 504"
        requests_per_hour: u32 as AI_REQUESTS_PER_HOUR = "Ai__RequestsPerHour" Number(30) in 1..=1_000_000;
            "coaching requests per driver per hour; the next answers 429"
        tokens_per_day: u64 as AI_TOKENS_PER_DAY = "Ai__TokensPerDay" Number(200_000) in 1..=1_000_000_000;
            "input plus output tokens per driver per UTC day, as the provider counts them; a call reserves the most it can cost first (see [api-guide.md](api-guide.md#ai-coach)), and one that does not fit in what is left answers 429"
        service_tokens_per_day: u64 as AI_SERVICE_TOKENS_PER_DAY = "Ai__ServiceTokensPerDay" Number(5_000_000) in 1..=1_000_000_000_000;
            "input plus output tokens of every driver together per UTC day, so the spend does not grow with the number of accounts; reserved as for `Ai__TokensPerDay`: a call that does not fit answers 429 with `Retry-After` until the day ends"
    }
    also {
        /// Whether `Ai__BaseUrl` was given (an OpenAI-compatible server of one's own needs no key).
        base_url_configured: bool = super::not_yet,
    } then super::ai_defaults;
    /// Share-pack settings (`Sharepacks__*`).
    #[derive(Debug, Clone)]
    pub struct SharepackSettings {
        max_direct_bytes: u64 as SHAREPACKS_MAX_DIRECT_BYTES = "Sharepacks__MaxDirectBytes" Number(4 * 1024 * 1024) in 1..=6_000_000;
            "largest pack sent in the request itself (a Lambda request carries at most 6 MB, base64-encoded); larger answers 413 naming the upload-URL flow"
        max_bytes: u64 as SHAREPACKS_MAX_BYTES = "Sharepacks__MaxBytes" Number(100 * 1024 * 1024) in 1..=5_000_000_000;
            "largest pack through an upload URL"
        max_entries: usize as SHAREPACKS_MAX_ENTRIES = "Sharepacks__MaxEntries" Number(2_000) in 1..=65_535;
            "most entries in a pack, those of the ZIPs inside it included, read from each archive's end record before its directory is parsed (whose size may then be at most 2 KiB per entry left)"
        max_uncompressed_bytes: u64 as SHAREPACKS_MAX_UNCOMPRESSED_BYTES = "Sharepacks__MaxUncompressedBytes" Number(512 * 1024 * 1024) in 1..=100_000_000_000;
            "most bytes a pack may inflate to"
        max_ratio: u64 as SHAREPACKS_MAX_RATIO = "Sharepacks__MaxRatio" Number(200) in 2..=100_000;
            "highest compression ratio of an entry past its first MiB"
        max_per_user: u32 as SHAREPACKS_MAX_PER_USER = "Sharepacks__MaxPerUser" Number(100) in 1..=1_000_000;
            "packs per driver (the next answers 429)"
        max_bytes_per_user: u64 as SHAREPACKS_MAX_BYTES_PER_USER = "Sharepacks__MaxBytesPerUser" Number(1024 * 1024 * 1024) in 1..=1_000_000_000_000;
            "bytes of packs per driver (past it 413)"
        uploads_per_minute: u32 as SHAREPACKS_UPLOADS_PER_MINUTE = "Sharepacks__UploadsPerMinute" Number(10) in 1..=1_000_000;
            "upload attempts per driver per minute, refused ones and repeats answered from a kept refusal included (the next answers 429)"
    }
    /// Sign-in settings (`Auth__*`).
    #[derive(Debug, Clone)]
    pub struct AuthSettings {
        public_url: Option<String> as AUTH_PUBLIC_URL = "Auth__PublicUrl" Derived("`http://<Server__Address>` (Lambda: `https://<the domain API Gateway received the request on>`)") => super::without_trailing_slash;
            "public base URL; provider callbacks go to `<it>/v1/auth/callback/<name>` (see [operating.md](operating.md#public-url))"
        login_attempts_per_account: u32 as AUTH_LOGIN_ATTEMPTS_PER_ACCOUNT = "Auth__LoginAttemptsPerAccount" Number(10) in 1..=100_000;
            "login attempts per (client address, account) per window; the next answers 429"
        attempts_per_address: u32 as AUTH_ATTEMPTS_PER_ADDRESS = "Auth__AttemptsPerAddress" Number(100) in 1..=1_000_000;
            "registrations and logins per client address per window"
        provider_starts_per_address: u32 as AUTH_PROVIDER_STARTS_PER_ADDRESS = "Auth__ProviderStartsPerAddress" Number(10) in 1..=1_000_000;
            "provider sign-in starts (the desktop's and the consent page's) and OAuth client metadata documents fetched, per client address per window"
        rate_window_secs: i64 as AUTH_RATE_WINDOW_SECONDS = "Auth__RateWindowSeconds" Number(300) in 1..=86_400;
            "the rate-limit window"
        failed_logins_per_account: u32 as AUTH_FAILED_LOGINS_PER_ACCOUNT = "Auth__FailedLoginsPerAccount" Number(50) in 1..=1_000_000;
            "failed logins per account per failure window from any address; past it an address the account never signed in from is slowed to `Auth__GuardedAttemptsPerAddress` attempts (429 after them), and the right password still signs in"
        guarded_attempts_per_address: u32 as AUTH_GUARDED_ATTEMPTS_PER_ADDRESS = "Auth__GuardedAttemptsPerAddress" Number(3) in 1..=1_000;
            "attempts per (client address, account) per failure window while the account is over its failure limit"
        failed_login_window_secs: i64 as AUTH_FAILED_LOGIN_WINDOW_SECONDS = "Auth__FailedLoginWindowSeconds" Number(3600) in 1..=604_800;
            "the window of that limit"
        hashing_threads: Option<usize> as AUTH_HASHING_THREADS = "Auth__HashingThreads" Derived("the cores") in 1..=256;
            "password hashes computed at once, each thread with one 19 MiB block, allocated at its first hash and kept"
        hashing_wait: Duration as AUTH_HASHING_WAIT_MILLIS = "Auth__HashingWaitMillis" Number(2000) in 1..=60_000 => super::per::<1>;
            "how long a sign-in waits for a free hashing thread before it is answered 503 with `Retry-After`"
    }
    also {
        /// `Auth__Providers__<name>__*` and `Auth__ProvidersJson`.
        providers: Vec<ProviderConfig> = super::read_providers,
    }
    /// Public board page settings (`Pages__*`).
    #[derive(Debug, Clone)]
    pub struct PageSettings {
        avatar_hosts: Vec<String> as PAGES_AVATAR_HOSTS = "Pages__AvatarHosts" Text("lh3.googleusercontent.com,cdn.discordapp.com") => super::avatar_hosts;
            "the hosts whose avatars the public board pages show, comma-separated host names (`none`: no avatars); any other avatar shows as the driver's initial, and the pages' `img-src` names these hosts only. The default is where Google and Discord serve sign-in pictures (Microsoft's needs the driver's token, so no visitor could load it)"
    }
    // Keys read by code of their own (a name with a part the operator chooses, a provider's
    // fields, secrets, the log filter).
    others {
    QUEUE_URL = "Queue__<Queue>__Url" Unset;
        "with `aws`: the SQS queue of each consumer (created as `paddock-<name>` with `Store__CreateResources`); a function needs only the queues it uses (the outbox relay all of them)"
    QUEUE_DEAD_LETTER_URL = "Queue__<Queue>__DeadLetterUrl" Unset;
        "each queue's dead-letter queue; poison events are moved there at once"
    SECRETS_PROVIDER_API_KEYS = "Secrets__anthropicApiKey, Secrets__openaiApiKey" Unset;
        "local mode: the provider's API key (in AWS: the same names in the Secrets Manager secret)"
    SECRETS_NAMED = "Secrets__<name>" Unset;
        "local mode: a secret value, e.g. `Secrets__jwtSigningKey`"
    AUTH_PROVIDER_KIND = "Auth__Providers__<name>__Kind" Derived("`<name>`");
        "`oidc`, `google`, `microsoft` or `discord`; `<name>` is the path segment in `/v1/auth/login/<name>`"
    AUTH_PROVIDER_CLIENT_ID = "Auth__Providers__<name>__ClientId" Unset;
        "the OAuth client id (required per provider)"
    AUTH_PROVIDER_CLIENT_SECRET = "Auth__Providers__<name>__ClientSecret" Unset;
        "the client secret (or the secret `<name>ClientSecret` from the secrets port)"
    AUTH_PROVIDER_ISSUER = "Auth__Providers__<name>__Issuer" Unset;
        "issuer URL for `oidc` (discovered from `/.well-known/openid-configuration`); `https` only (plain `http` only on a loopback host), else start-up stops naming the key; the endpoints the discovery names must follow the same rule, and ID tokens are accepted only signed with an asymmetric algorithm its `id_token_signing_alg_values_supported` lists (RS256 when it lists none), else sign-in fails"
    AUTH_PROVIDER_SCOPES = "Auth__Providers__<name>__Scopes" Derived("`openid email profile` (`identify email` for Discord)");
        "requested scopes"
    AUTH_PROVIDER_TRUST_EMAIL_VERIFIED = "Auth__Providers__<name>__TrustEmailVerified" Derived("`true` for `google`, `discord`, `microsoft`; `false` for `oidc`");
        "whether the provider's verified email may claim an account (Microsoft also needs the token's `xms_edov: true`)"
    AUTH_PROVIDERS_JSON = "Auth__ProvidersJson" Unset;
        "every provider as one JSON object, e.g. `{\"google\":{\"clientId\":\"...\"},\"corp\":{\"kind\":\"oidc\",\"clientId\":\"...\",\"issuer\":\"https://...\"}}`, members `kind`, `clientId`, `issuer`, `scopes` (a string or a list) and `trustEmailVerified` with the meanings and defaults of the `Auth__Providers__<name>__*` keys and the same checks (an error names `Auth__ProvidersJson` and the member); `clientSecret` is refused here (the secret `<name>ClientSecret`); a provider set both ways stops start-up. In AWS the template's `AuthProviders` parameter"
    RUST_LOG = "RUST_LOG" Text("info");
        "log levels by target, e.g. `warn` or `info,paddock_boards=debug` (span and field filters are not read; a value that is not of this form logs at `info`)"
    }
}

/// Every key, in the order the documentation lists them.
pub fn all() -> impl Iterator<Item = &'static Key> {
    ALL.iter()
}

#[cfg(test)]
mod tests;
