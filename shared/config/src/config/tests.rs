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

#[test]
fn values_of_their_own_kind_keep_their_rules() {
    let s = settings(&[("Ai__Provider", "OpenAI")]).unwrap();
    assert_eq!(s.ai.provider, AiProvider::OpenAi);
    assert_eq!(
        (s.ai.model.as_str(), s.ai.base_url.as_str()),
        ("gpt-4o-mini", "https://api.openai.com/v1")
    );
    assert!(!s.ai.base_url_configured);
    let s = settings(&[
        ("Ai__Provider", "openai"),
        ("Ai__Model", " local-model "),
        ("Ai__BaseUrl", "http://127.0.0.1:8081/v1/"),
        ("Auth__PublicUrl", "https://paddock.example/"),
        ("Auth__HashingThreads", "3"),
        ("Auth__HashingWaitMillis", "250"),
        ("Store__Backend", "AWS"),
        ("Blobs__Bucket", "packs"),
        ("Log__Format", "JSON"),
        ("Leaderboards__CacheMegabytes", "2"),
        ("Webhooks__AllowLoopbackHttp", "true"),
        ("Secrets__Id", "   "),
    ])
    .unwrap();
    assert_eq!(
        (s.ai.model.as_str(), s.ai.base_url.as_str()),
        ("local-model", "http://127.0.0.1:8081/v1")
    );
    assert!(s.ai.base_url_configured);
    assert_eq!(
        s.auth.public_url.as_deref(),
        Some("https://paddock.example")
    );
    assert_eq!(s.auth.hashing_threads, Some(3));
    assert_eq!(s.auth.hashing_wait, Duration::from_millis(250));
    assert_eq!(
        (s.backend, s.bucket.as_deref()),
        (Backend::Aws, Some("packs"))
    );
    assert_eq!(s.log_format, LogFormat::Json);
    assert_eq!(s.leaderboard_cache_bytes, 2 << 20);
    assert!(s.webhooks_allow_loopback_http);
    assert_eq!(s.secret_id, None, "a value of spaces is unset");
    for (key, value, reason) in [
        (
            "Ai__Provider",
            "gemini",
            r#""gemini" is not anthropic or openai"#,
        ),
        (
            "Ai__BaseUrl",
            "ftp://models",
            r#""ftp://models" is not an http(s) URL"#,
        ),
        (
            "Store__CreateResources",
            "yes",
            r#""yes" is not true or false"#,
        ),
        ("Log__Format", "xml", "must be `json` or `pretty`"),
        (
            "Server__Address",
            "localhost",
            r#""localhost" is not a socket address such as 127.0.0.1:8080"#,
        ),
        (
            "Metrics__Namespace",
            ":Paddock",
            "must be at most 255 letters, digits, spaces and .-_/#: (not starting with :)",
        ),
    ] {
        let err = settings(&[(key, value)]).unwrap_err();
        assert_eq!((err.key, err.reason.as_str()), (key, reason));
    }
}

#[test]
fn event_operators_are_user_ids() {
    assert!(settings(&[]).unwrap().event_operators.is_empty());
    let a = "0190a0b2-3c4d-7e5f-9a0b-1c2d3e4f5a6b";
    let b = "0190a0b2-3c4d-7e5f-9a0b-1c2d3e4f5a6c";
    let s = settings(&[("Events__Operators", &format!(" {a}, {b} ,"))]).unwrap();
    let ids: Vec<String> = s.event_operators.iter().map(ToString::to_string).collect();
    assert_eq!(ids, [a, b]);
    let e = settings(&[("Events__Operators", "admin")]).unwrap_err();
    assert_eq!(e.key, "Events__Operators");
    assert!(e.reason.contains("\"admin\" is not a user id"), "{e}");
}
