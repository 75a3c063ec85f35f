//! Every configuration key, in one list: its name, default, bounds and meaning.
//!
//! The parser takes each key's default and bounds from here, and `docs/configuration.md`
//! renders this list, so neither can drift from the other: a test fails when a documented
//! default is not what an unset key gives, or when the page differs from the list.

use super::ConfigError;
use crate::queues::QueueName;

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
    /// The default as a whole number (0 for a key without a numeric default: the list's test
    /// holds every key the parser reads as a number to a numeric default).
    pub const fn default_number(&self) -> u64 {
        match self.default {
            DefaultValue::Number(n) => n,
            _ => 0,
        }
    }

    /// The default as text (empty for a key without a text default: the list's test holds
    /// every key the parser reads as text to one).
    pub const fn default_text(&self) -> &'static str {
        match self.default {
            DefaultValue::Text(t) => t,
            _ => "",
        }
    }

    /// `value` read as a whole number within the key's bounds; the error names the key and
    /// the rule.
    pub fn whole_number(&self, value: &str) -> Result<u64, ConfigError> {
        let n: u64 = value.parse().map_err(|_| ConfigError {
            key: self.name,
            reason: format!("{value:?} is not a whole number"),
        })?;
        let (min, max) = self.bounds.unwrap_or((0, u64::MAX));
        if !(min..=max).contains(&n) {
            return Err(ConfigError {
                key: self.name,
                reason: format!("{n} is outside {min}..={max}"),
            });
        }
        Ok(n)
    }
}

/// Declares each key as a constant and lists them all, in order, in [`ALL`].
macro_rules! keys {
    ($($id:ident { name: $name:literal, $($field:tt)* })*) => {
        $(
            #[doc = concat!("`", $name, "`.")]
            pub const $id: Key = Key { name: $name, $($field)* };
        )*
        /// Every key, in the order the documentation lists them.
        pub const ALL: &[Key] = &[$($id),*];
    };
}

keys! {
    SERVER_ADDRESS {
        name: "Server__Address",
        default: DefaultValue::Text("127.0.0.1:8080"),
        bounds: None,
        meaning: "where the local server listens",
    }
    SERVER_HEADER_READ_TIMEOUT_SECONDS {
        name: "Server__HeaderReadTimeoutSeconds",
        default: DefaultValue::Number(10),
        bounds: Some((1, 300)),
        meaning: "local server: a connection whose request headers have not all arrived this long after it started waiting for them is closed",
    }
    DATA_DIR {
        name: "Data__Dir",
        default: DefaultValue::Text("./data"),
        bounds: None,
        meaning: "embedded backend: SQLite file `paddock.db`, `blobs/`, `secrets.json` (directories created 0700, files 0600; narrowed at start where an earlier version left them readable); used by one server process at a time (it caches point reads of what it wrote): `paddock.lock` is locked at start, and a second process over the same directory refuses to start, naming it",
    }
    STORE_BACKEND {
        name: "Store__Backend",
        default: DefaultValue::Text("embedded"),
        bounds: None,
        meaning: "`embedded` or `aws` (DynamoDB, S3, SQS, Secrets Manager)",
    }
    STORE_TABLE_PREFIX {
        name: "Store__TablePrefix",
        default: DefaultValue::Text("paddock-"),
        bounds: None,
        meaning: "physical DynamoDB table name = prefix + logical name",
    }
    STORE_CREATE_RESOURCES {
        name: "Store__CreateResources",
        default: DefaultValue::Text("false"),
        bounds: None,
        meaning: "with `aws`: create tables, bucket and queues at start (for emulators)",
    }
    BLOBS_BUCKET {
        name: "Blobs__Bucket",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "S3 bucket (required with `aws` unless created)",
    }
    QUEUE_URL {
        name: "Queue__<Queue>__Url",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "with `aws`: the SQS queue of each consumer (created as `paddock-<name>` with `Store__CreateResources`); a function needs only the queues it uses (the outbox relay all of them)",
    }
    QUEUE_DEAD_LETTER_URL {
        name: "Queue__<Queue>__DeadLetterUrl",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "each queue's dead-letter queue; poison events are moved there at once",
    }
    QUEUE_VISIBILITY_SECONDS {
        name: "Queue__VisibilitySeconds",
        default: DefaultValue::Number(60),
        bounds: Some((1, 43_200)),
        meaning: "how long a received event stays hidden before redelivery",
    }
    QUEUE_MAX_RECEIVES {
        name: "Queue__MaxReceives",
        default: DefaultValue::Number(5),
        bounds: Some((1, 1000)),
        meaning: "deliveries before an event is dead-lettered (local consumers; the SQS redrive policy in AWS)",
    }
    AI_PROVIDER {
        name: "Ai__Provider",
        default: DefaultValue::Text("anthropic"),
        bounds: None,
        meaning: "the AI coach's API: `anthropic` (Messages API) or `openai` (any Chat Completions-compatible server)",
    }
    AI_MODEL {
        name: "Ai__Model",
        default: DefaultValue::Derived("`claude-sonnet-4-5` (`gpt-4o-mini` with `openai`)"),
        bounds: None,
        meaning: "the one model of this deployment",
    }
    AI_BASE_URL {
        name: "Ai__BaseUrl",
        default: DefaultValue::Derived("`https://api.anthropic.com` (`https://api.openai.com/v1` with `openai`)"),
        bounds: None,
        meaning: "the API's base URL; with `openai`, setting it (e.g. `http://127.0.0.1:8081/v1`) makes the key optional",
    }
    AI_TIMEOUT_SECONDS {
        name: "Ai__TimeoutSeconds",
        default: DefaultValue::Number(25),
        bounds: Some((1, 28)),
        meaning: "upstream deadline (under API Gateway's 29 s); slower answers 504",
    }
    AI_REQUESTS_PER_HOUR {
        name: "Ai__RequestsPerHour",
        default: DefaultValue::Number(30),
        bounds: Some((1, 1_000_000)),
        meaning: "coaching requests per driver per hour; the next answers 429",
    }
    AI_TOKENS_PER_DAY {
        name: "Ai__TokensPerDay",
        default: DefaultValue::Number(200_000),
        bounds: Some((1, 1_000_000_000)),
        meaning: "input plus output tokens per driver per UTC day, as the provider counts them; a call reserves the most it can cost first (see [api-guide.md](api-guide.md#ai-coach)), and one that does not fit in what is left answers 429",
    }
    AI_SERVICE_TOKENS_PER_DAY {
        name: "Ai__ServiceTokensPerDay",
        default: DefaultValue::Number(5_000_000),
        bounds: Some((1, 1_000_000_000_000)),
        meaning: "input plus output tokens of every driver together per UTC day, so the spend does not grow with the number of accounts; reserved as for `Ai__TokensPerDay`: a call that does not fit answers 429 with `Retry-After` until the day ends",
    }
    SECRETS_PROVIDER_API_KEYS {
        name: "Secrets__anthropicApiKey, Secrets__openaiApiKey",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "local mode: the provider's API key (in AWS: the same names in the Secrets Manager secret)",
    }
    SHAREPACKS_MAX_DIRECT_BYTES {
        name: "Sharepacks__MaxDirectBytes",
        default: DefaultValue::Number(4 * 1024 * 1024),
        bounds: Some((1, 6_000_000)),
        meaning: "largest pack sent in the request itself (a Lambda request carries at most 6 MB, base64-encoded); larger answers 413 naming the upload-URL flow",
    }
    SHAREPACKS_MAX_BYTES {
        name: "Sharepacks__MaxBytes",
        default: DefaultValue::Number(100 * 1024 * 1024),
        bounds: Some((1, 5_000_000_000)),
        meaning: "largest pack through an upload URL",
    }
    SHAREPACKS_MAX_ENTRIES {
        name: "Sharepacks__MaxEntries",
        default: DefaultValue::Number(2_000),
        bounds: Some((1, 65_535)),
        meaning: "most entries in a pack, those of the ZIPs inside it included, read from each archive's end record before its directory is parsed (whose size may then be at most 2 KiB per entry left)",
    }
    SHAREPACKS_MAX_UNCOMPRESSED_BYTES {
        name: "Sharepacks__MaxUncompressedBytes",
        default: DefaultValue::Number(512 * 1024 * 1024),
        bounds: Some((1, 100_000_000_000)),
        meaning: "most bytes a pack may inflate to",
    }
    SHAREPACKS_MAX_RATIO {
        name: "Sharepacks__MaxRatio",
        default: DefaultValue::Number(200),
        bounds: Some((2, 100_000)),
        meaning: "highest compression ratio of an entry past its first MiB",
    }
    SHAREPACKS_MAX_PER_USER {
        name: "Sharepacks__MaxPerUser",
        default: DefaultValue::Number(100),
        bounds: Some((1, 1_000_000)),
        meaning: "packs per driver (the next answers 429)",
    }
    SHAREPACKS_MAX_BYTES_PER_USER {
        name: "Sharepacks__MaxBytesPerUser",
        default: DefaultValue::Number(1024 * 1024 * 1024),
        bounds: Some((1, 1_000_000_000_000)),
        meaning: "bytes of packs per driver (past it 413)",
    }
    SHAREPACKS_UPLOADS_PER_MINUTE {
        name: "Sharepacks__UploadsPerMinute",
        default: DefaultValue::Number(10),
        bounds: Some((1, 1_000_000)),
        meaning: "upload attempts per driver per minute, refused ones and repeats answered from a kept refusal included (the next answers 429)",
    }
    RETENTION_FIRST_RUN_SECONDS {
        name: "Retention__FirstRunSeconds",
        default: DefaultValue::Number(120),
        bounds: Some((0, 86_400)),
        meaning: "local server, embedded backend: the first retention sweep, this long after start",
    }
    RETENTION_INTERVAL_MINUTES {
        name: "Retention__IntervalMinutes",
        default: DefaultValue::Number(60),
        bounds: Some((1, 10_080)),
        meaning: "local server, embedded backend: time between retention sweeps (AWS: DynamoDB's TTL, see [events-and-retention.md](events-and-retention.md#retention))",
    }
    SECRETS_ID {
        name: "Secrets__Id",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "Secrets Manager secret (a JSON object of named values)",
    }
    SECRETS_NAMED {
        name: "Secrets__<name>",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "local mode: a secret value, e.g. `Secrets__jwtSigningKey`",
    }
    SECRETS_REFRESH_SECONDS {
        name: "Secrets__RefreshSeconds",
        default: DefaultValue::Number(300),
        bounds: Some((0, 86_400)),
        meaning: "secrets (signing keys) are read again after this long, so a rotation reaches warm instances; `0`: read once",
    }
    JWT_ISSUER {
        name: "Jwt__Issuer",
        default: DefaultValue::Text("paddock"),
        bounds: None,
        meaning: "access-token issuer (checked exactly)",
    }
    JWT_AUDIENCE {
        name: "Jwt__Audience",
        default: DefaultValue::Text("paddock-desktop"),
        bounds: None,
        meaning: "access-token audience (checked exactly)",
    }
    JWT_EXPIRY_MINUTES {
        name: "Jwt__ExpiryMinutes",
        default: DefaultValue::Number(60),
        bounds: Some((1, 24 * 60)),
        meaning: "access-token lifetime",
    }
    HTTP_MAX_BODY_BYTES {
        name: "Http__MaxBodyBytes",
        default: DefaultValue::Number(1024 * 1024),
        bounds: Some((1024, 512 * 1024 * 1024)),
        meaning: "largest request body; larger answers 413",
    }
    HTTP_TIMEOUT_SECONDS {
        name: "Http__TimeoutSeconds",
        default: DefaultValue::Number(25),
        bounds: Some((1, 900)),
        meaning: "request deadline; slower answers 504",
    }
    LOG_FORMAT {
        name: "Log__Format",
        default: DefaultValue::Text("pretty"),
        bounds: None,
        meaning: "log line format, `pretty` or `json` (a Lambda function's default); the local server writes its log from a writer thread (a request never waits for the terminal), a Lambda function each line before it answers",
    }
    METRICS_NAMESPACE {
        name: "Metrics__Namespace",
        default: DefaultValue::Text("Paddock"),
        bounds: None,
        meaning: "Lambda: the CloudWatch namespace of the metric lines (the template sets `Paddock/<stack>`; see [operating.md](operating.md#metrics))",
    }
    METRICS_CACHE_SECONDS {
        name: "Metrics__CacheSeconds",
        default: DefaultValue::Number(60),
        bounds: Some((1, 3600)),
        meaning: "Lambda: `GET /metrics` reads CloudWatch at most once per this many seconds (each read is billed per metric series; concurrent scrapes share one read; see [operating.md](operating.md#metrics))",
    }
    AUTH_PUBLIC_URL {
        name: "Auth__PublicUrl",
        default: DefaultValue::Derived("`http://<Server__Address>` (Lambda: `https://<the domain API Gateway received the request on>`)"),
        bounds: None,
        meaning: "public base URL; provider callbacks go to `<it>/v1/auth/callback/<name>` (see [operating.md](operating.md#public-url))",
    }
    AUTH_LOGIN_ATTEMPTS_PER_ACCOUNT {
        name: "Auth__LoginAttemptsPerAccount",
        default: DefaultValue::Number(10),
        bounds: Some((1, 100_000)),
        meaning: "login attempts per (client address, account) per window; the next answers 429",
    }
    AUTH_ATTEMPTS_PER_ADDRESS {
        name: "Auth__AttemptsPerAddress",
        default: DefaultValue::Number(100),
        bounds: Some((1, 1_000_000)),
        meaning: "registrations and logins per client address per window",
    }
    AUTH_PROVIDER_STARTS_PER_ADDRESS {
        name: "Auth__ProviderStartsPerAddress",
        default: DefaultValue::Number(10),
        bounds: Some((1, 1_000_000)),
        meaning: "provider sign-in starts per client address per window",
    }
    AUTH_RATE_WINDOW_SECONDS {
        name: "Auth__RateWindowSeconds",
        default: DefaultValue::Number(300),
        bounds: Some((1, 86_400)),
        meaning: "the rate-limit window",
    }
    AUTH_FAILED_LOGINS_PER_ACCOUNT {
        name: "Auth__FailedLoginsPerAccount",
        default: DefaultValue::Number(50),
        bounds: Some((1, 1_000_000)),
        meaning: "failed logins per account per failure window from any address; past it an address the account never signed in from is slowed to `Auth__GuardedAttemptsPerAddress` attempts (429 after them), and the right password still signs in",
    }
    AUTH_GUARDED_ATTEMPTS_PER_ADDRESS {
        name: "Auth__GuardedAttemptsPerAddress",
        default: DefaultValue::Number(3),
        bounds: Some((1, 1_000)),
        meaning: "attempts per (client address, account) per failure window while the account is over its failure limit",
    }
    AUTH_FAILED_LOGIN_WINDOW_SECONDS {
        name: "Auth__FailedLoginWindowSeconds",
        default: DefaultValue::Number(3600),
        bounds: Some((1, 7 * 86_400)),
        meaning: "the window of that limit",
    }
    AUTH_HASHING_THREADS {
        name: "Auth__HashingThreads",
        default: DefaultValue::Derived("the cores"),
        bounds: Some((1, 256)),
        meaning: "password hashes computed at once, each thread with one 19 MiB block, allocated at its first hash and kept",
    }
    AUTH_HASHING_WAIT_MILLIS {
        name: "Auth__HashingWaitMillis",
        default: DefaultValue::Number(2000),
        bounds: Some((1, 60_000)),
        meaning: "how long a sign-in waits for a free hashing thread before it is answered 503 with `Retry-After`",
    }
    AUTH_PROVIDER_KIND {
        name: "Auth__Providers__<name>__Kind",
        default: DefaultValue::Derived("`<name>`"),
        bounds: None,
        meaning: "`oidc`, `google`, `microsoft` or `discord`; `<name>` is the path segment in `/v1/auth/login/<name>`",
    }
    AUTH_PROVIDER_CLIENT_ID {
        name: "Auth__Providers__<name>__ClientId",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "the OAuth client id (required per provider)",
    }
    AUTH_PROVIDER_CLIENT_SECRET {
        name: "Auth__Providers__<name>__ClientSecret",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "the client secret (or the secret `<name>ClientSecret` from the secrets port)",
    }
    AUTH_PROVIDER_ISSUER {
        name: "Auth__Providers__<name>__Issuer",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "issuer URL for `oidc` (discovered from `/.well-known/openid-configuration`); `https` only (plain `http` only on a loopback host), else start-up stops naming the key; the endpoints the discovery names must follow the same rule, and ID tokens are accepted only signed with an asymmetric algorithm its `id_token_signing_alg_values_supported` lists (RS256 when it lists none), else sign-in fails",
    }
    AUTH_PROVIDER_SCOPES {
        name: "Auth__Providers__<name>__Scopes",
        default: DefaultValue::Derived("`openid email profile` (`identify email` for Discord)"),
        bounds: None,
        meaning: "requested scopes",
    }
    AUTH_PROVIDER_TRUST_EMAIL_VERIFIED {
        name: "Auth__Providers__<name>__TrustEmailVerified",
        default: DefaultValue::Derived("`true` for `google`, `discord`, `microsoft`; `false` for `oidc`"),
        bounds: None,
        meaning: "whether the provider's verified email may claim an account (Microsoft also needs the token's `xms_edov: true`)",
    }
    AUTH_PROVIDERS_JSON {
        name: "Auth__ProvidersJson",
        default: DefaultValue::Unset,
        bounds: None,
        meaning: "every provider as one JSON object, e.g. `{\"google\":{\"clientId\":\"...\"},\"corp\":{\"kind\":\"oidc\",\"clientId\":\"...\",\"issuer\":\"https://...\"}}`, members `kind`, `clientId`, `issuer`, `scopes` (a string or a list) and `trustEmailVerified` with the meanings and defaults of the `Auth__Providers__<name>__*` keys and the same checks (an error names `Auth__ProvidersJson` and the member); `clientSecret` is refused here (the secret `<name>ClientSecret`); a provider set both ways stops start-up. In AWS the template's `AuthProviders` parameter",
    }
    LIMITS_UPLOADS_PER_MINUTE {
        name: "Limits__UploadsPerMinute",
        default: DefaultValue::Number(30),
        bounds: Some((1, 1_000_000)),
        meaning: "session uploads per user per minute; the next answers 429",
    }
    LIMITS_FEED_POSTS_PER_MINUTE {
        name: "Limits__FeedPostsPerMinute",
        default: DefaultValue::Number(10),
        bounds: Some((1, 1_000_000)),
        meaning: "feed posts (`POST /v1/feed`) per driver per minute; the next answers 429",
    }
    LIMITS_EXPORTS_PER_HOUR {
        name: "Limits__ExportsPerHour",
        default: DefaultValue::Number(6),
        bounds: Some((1, 1_000_000)),
        meaning: "data exports (`GET /v1/profile/me/export`) per driver per hour; the next answers 429",
    }
    LIMITS_WEBHOOK_CHECKS_PER_HOUR {
        name: "Limits__WebhookChecksPerHour",
        default: DefaultValue::Number(20),
        bounds: Some((1, 1_000_000)),
        meaning: "requests per driver per hour that the service sends to webhook receivers on the driver's demand: the verification of a new subscription, a changed URL or a resumed one, and `POST /v1/webhooks/{id}/test`; the next answers 429",
    }
    LIMITS_TOKEN_REQUESTS_PER_MINUTE {
        name: "Limits__TokenRequestsPerMinute",
        default: DefaultValue::Number(120),
        bounds: Some((1, 1_000_000)),
        meaning: "requests per personal access token in any 60 seconds; answers to token requests carry `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, and the next answers 429 with `Retry-After`",
    }
    WEBHOOKS_ALLOW_LOOPBACK_HTTP {
        name: "Webhooks__AllowLoopbackHttp",
        default: DefaultValue::Text("false"),
        bounds: None,
        meaning: "local tests only, never in AWS: `true` lets webhook subscriptions use `http` and loopback addresses (127.0.0.0/8, ::1); every other address rule stays",
    }
    LIMITS_NEW_BOARDS_PER_DAY {
        name: "Limits__NewBoardsPerDay",
        default: DefaultValue::Number(50),
        bounds: Some((1, 1_000_000)),
        meaning: "leaderboard submissions per driver per day that put the driver on a board they were not on (a new track, or a new car on a track); the next answers 429 with nothing written, while better laps on the driver's boards still count",
    }
    LEADERBOARDS_CACHE_SECONDS {
        name: "Leaderboards__CacheSeconds",
        default: DefaultValue::Number(5),
        bounds: Some((0, 3600)),
        meaning: "how long a process serves a leaderboard page from memory (`0`: off); also the `Cache-Control` max-age",
    }
    LEADERBOARDS_CACHE_MEGABYTES {
        name: "Leaderboards__CacheMegabytes",
        default: DefaultValue::Number(32),
        bounds: Some((1, 4096)),
        meaning: "most page bytes a process keeps in its leaderboard cache (least used go first)",
    }
    PAGES_AVATAR_HOSTS {
        name: "Pages__AvatarHosts",
        default: DefaultValue::Text("lh3.googleusercontent.com,cdn.discordapp.com"),
        bounds: None,
        meaning: "the hosts whose avatars the public board pages show, comma-separated host names (`none`: no avatars); any other avatar shows as the driver's initial, and the pages' `img-src` names these hosts only. The default is where Google and Discord serve sign-in pictures (Microsoft's needs the driver's token, so no visitor could load it)",
    }
    RUST_LOG {
        name: "RUST_LOG",
        default: DefaultValue::Text("info"),
        bounds: None,
        meaning: "log filter",
    }
}

/// Where the table of keys begins in `docs/configuration.md` (the line goes on with how to
/// regenerate it).
const TABLE_BEGINS: &str = "<!-- keys: begin";

/// Where the table of keys ends in `docs/configuration.md`.
const TABLE_ENDS: &str = "<!-- keys: end -->";

/// The command that rewrites the table in `docs/configuration.md` from [`ALL`].
pub const REGENERATE: &str = "PADDOCK_WRITE_DOCS=1 cargo test -p paddock-core --lib config";

/// The table of every key, as `docs/configuration.md` shows it (markers included).
pub fn table() -> String {
    let mut out = format!(
        "{TABLE_BEGINS}: generated from the list in config/keys.rs; after a change there run \
         {REGENERATE} -->\n\n| Key | Default | Bounds | Meaning |\n|---|---|---|---|\n"
    );
    for key in ALL {
        let names: Vec<String> = if key.name.contains("<Queue>") {
            QueueName::ALL
                .iter()
                .map(|q| key.name.replace("<Queue>", q.config_section()))
                .collect()
        } else {
            key.name.split(", ").map(str::to_owned).collect()
        };
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let default = match key.default {
            DefaultValue::Number(n) => format!("`{n}`"),
            DefaultValue::Text(t) => format!("`{t}`"),
            DefaultValue::Derived(t) => t.to_owned(),
            DefaultValue::Unset => "—".to_owned(),
        };
        let bounds = key
            .bounds
            .map_or_else(|| "—".to_owned(), |(min, max)| format!("`{min}..={max}`"));
        out.push_str(&format!(
            "| {} | {default} | {bounds} | {} |\n",
            names.join(", "),
            key.meaning
        ));
    }
    out.push('\n');
    out.push_str(TABLE_ENDS);
    out
}

/// `page` with its table of keys replaced by [`table`], or `None` when it has no markers.
pub fn with_table(page: &str) -> Option<String> {
    let begin = page.find(TABLE_BEGINS)?;
    let end = page[begin..].find(TABLE_ENDS)? + begin + TABLE_ENDS.len();
    Some(format!("{}{}{}", &page[..begin], table(), &page[end..]))
}

#[cfg(test)]
mod tests;
