//! Personal access tokens on both backends and through the functions: made, shown once and
//! listed without their value; used within their scopes and refused outside them and on the
//! routes no token may use (token management, password, export, deletion, sign-in checks);
//! refused when malformed, forged (a bad checksum), unknown, revoked or expired; revoked by a
//! password change and by the account's deletion, and listed in the export; answers carrying
//! the `RateLimit-*` headers and a 429 past the per-token limit; a retried creation making two
//! tokens and a retried revocation doing no harm.

use paddock_core::identity::personal_tokens;
use paddock_tests::{TestApp, envelope, on_both_backends, session_body, unique};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const PASSWORD: &str = "correct horse battery";

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let (status, body, _) = send_with_headers(app, method, path, token, body).await;
    (status, body)
}

async fn send_with_headers(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value, reqwest::header::HeaderMap) {
    app.send_auth(method, path, token, body).await
}

/// A registered driver: (email, access token, user id).
async fn driver(app: &TestApp, name: &str) -> (String, String, String) {
    let email = format!("{}@example.com", unique(name));
    let (status, body) = envelope(
        app.post_json(
            "/v1/auth/register",
            &json!({"email": email, "password": PASSWORD, "displayName": name}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let data = &body["data"];
    (
        email,
        data["accessToken"].as_str().unwrap().to_owned(),
        data["user"]["id"].as_str().unwrap().to_owned(),
    )
}

/// Makes a token with `scopes`; answers the creation's `data`.
async fn make_token(app: &TestApp, jwt: &str, name: &str, scopes: &[&str]) -> Value {
    let (status, body) = send(
        app,
        reqwest::Method::POST,
        "/v1/tokens",
        jwt,
        Some(json!({"name": name, "scopes": scopes})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["data"].clone()
}

async fn listed(app: &TestApp, jwt: &str) -> Vec<Value> {
    let (status, body) = send(app, reqwest::Method::GET, "/v1/tokens", jwt, None).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["items"].as_array().unwrap().clone()
}

fn error(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

async fn tokens_are_shown_once_and_revoked_at_once(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Ada").await;
    let made = make_token(&app, &jwt, "spreadsheet", &["sessions:read"]).await;
    let token = made["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("pdk_"), "{token}");
    assert_eq!(token.len(), personal_tokens::TOKEN_LEN);
    assert_eq!(made["name"], "spreadsheet");
    assert_eq!(made["scopes"], json!(["sessions:read"]));
    assert_eq!(made["prefix"], &token[..8]);
    assert!(made["lastUsedAt"].is_null());
    let id = made["id"].as_str().unwrap().to_owned();

    // The list shows it without its value or hash.
    let list = listed(&app, &jwt).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], id);
    assert!(list[0].get("token").is_none(), "{}", list[0]);
    let text = Value::Array(list.clone()).to_string();
    assert!(!text.contains(&token));
    assert!(!text.contains(&paddock_core::hashing::sha256_hex(&token)));

    // A lost answer retried makes a second token, shown once too.
    let again = make_token(&app, &jwt, "spreadsheet", &["sessions:read"]).await;
    assert_ne!(again["token"], made["token"]);
    assert_ne!(again["id"], made["id"]);
    assert_eq!(listed(&app, &jwt).await.len(), 2);

    let (status, body) = send(&app, reqwest::Method::GET, "/v1/sessions", &token, None).await;
    assert_eq!(status, 200, "{body}");

    // Revoked: refused on its next request; revoking again is harmless.
    for _ in 0..2 {
        let response = app
            .client
            .delete(format!("{}/v1/tokens/{id}", app.address))
            .bearer_auth(&jwt)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204);
    }
    let (status, body) = send(&app, reqwest::Method::GET, "/v1/sessions", &token, None).await;
    assert_eq!(status, 401);
    assert_eq!(error(&body), "personal access token has been revoked");
    let list = listed(&app, &jwt).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], again["id"]);
    let (status, body) = send(
        &app,
        reqwest::Method::DELETE,
        "/v1/tokens/0190aaaa-0000-7000-8000-000000000000",
        &jwt,
        None,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    // Another driver cannot revoke it.
    let (_, other, _) = driver(&app, "Bea").await;
    let other_id = again["id"].as_str().unwrap();
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        &format!("/v1/tokens/{other_id}"),
        &other,
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = send(
        &app,
        reqwest::Method::GET,
        "/v1/sessions",
        again["token"].as_str().unwrap(),
        None,
    )
    .await;
    assert_eq!(status, 200);
}

async fn a_token_opens_its_scopes_only(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Cleo").await;
    let writer = make_token(
        &app,
        &jwt,
        "uploader",
        &[
            "sessions:write",
            "sessions:read",
            "boards:submit",
            "boards:read",
        ],
    )
    .await;
    let writer = writer["token"].as_str().unwrap();
    let laps: Vec<(i64, bool, f64)> = (0..30).map(|i| (92_000 + i * 37, true, 0.9)).collect();
    let (status, body) = send(
        &app,
        reqwest::Method::POST,
        "/v1/sessions",
        writer,
        Some(session_body(
            &unique("csid"),
            "2026-01-05T10:00:00Z",
            &laps,
            0,
        )),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let session_id = body["data"]["sessionId"].as_str().unwrap().to_owned();
    let track_id = body["data"]["trackId"].as_str().unwrap().to_owned();
    let submit = json!({"SessionId": session_id, "LapTimeMs": 92_000, "QualityScore": 0.9});
    let (status, body) = send(
        &app,
        reqwest::Method::POST,
        "/v1/leaderboards/submit",
        writer,
        Some(submit),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, standing) = send(
        &app,
        reqwest::Method::GET,
        &format!("/v1/leaderboards/me?trackId={track_id}"),
        writer,
        None,
    )
    .await;
    assert_eq!(status, 200, "{standing}");
    assert_eq!(standing["data"]["rank"], 1, "{standing}");
    let (status, around, headers) = send_with_headers(
        &app,
        reqwest::Method::GET,
        &format!("/v1/leaderboards?trackId={track_id}&around=me"),
        writer,
        None,
    )
    .await;
    assert_eq!(status, 200, "{around}");
    assert!(headers.contains_key("ratelimit-remaining"), "{headers:?}");
    let (status, listed_sessions) =
        send(&app, reqwest::Method::GET, "/v1/sessions", writer, None).await;
    assert_eq!(status, 200);
    assert_eq!(listed_sessions["data"]["items"][0]["id"], session_id);
    let (status, _) = send(
        &app,
        reqwest::Method::GET,
        &format!("/v1/sessions/{session_id}"),
        writer,
        None,
    )
    .await;
    assert_eq!(status, 200);

    let reader = make_token(&app, &jwt, "bot", &["profile:read", "activity:read"]).await;
    let reader = reader["token"].as_str().unwrap();
    let (status, profile) = send(&app, reqwest::Method::GET, "/v1/profile", reader, None).await;
    assert_eq!(status, 200, "{profile}");
    assert_eq!(profile["data"]["displayName"], "Cleo");
    let (status, _) = send(&app, reqwest::Method::GET, "/v1/achievements", reader, None).await;
    assert_eq!(status, 200);

    // Outside its scopes: 403 naming the scope the route needs.
    for (method, path, scope) in [
        ("GET", "/v1/sessions", "sessions:read"),
        ("POST", "/v1/sessions", "sessions:write"),
        ("GET", "/v1/sharepacks", "sharepacks"),
        ("POST", "/v1/leaderboards/submit", "boards:submit"),
        (
            "GET",
            "/v1/leaderboards/me?trackId=0190aaaa-0000-7000-8000-0000000000aa",
            "boards:read",
        ),
        ("GET", "/v1/tracks", "sessions:read"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let body = (method == reqwest::Method::POST).then(|| json!({}));
        let (status, answer) = send(&app, method.clone(), path, reader, body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(
            error(&answer).contains(&format!("`{scope}`")),
            "{method} {path}: {answer}"
        );
    }
    // The tracks are open to a board tool's token as well as a sessions reader's.
    let board_bot = make_token(&app, &jwt, "board bot", &["boards:read"]).await;
    let board_bot = board_bot["token"].as_str().unwrap();
    let (status, tracks) = send(&app, reqwest::Method::GET, "/v1/tracks", board_bot, None).await;
    assert_eq!(status, 200, "{tracks}");
    let (status, answer) = send(&app, reqwest::Method::GET, "/v1/sessions", board_bot, None).await;
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = send(
        &app,
        reqwest::Method::GET,
        "/v1/leaderboards?trackId=0190aaaa-0000-7000-8000-0000000000aa&around=me",
        reader,
        None,
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    assert!(error(&answer).contains("`boards:read`"), "{answer}");

    // Routes no token may use, whatever its scopes.
    let all = make_token(
        &app,
        &jwt,
        "everything",
        &[
            "sessions:read",
            "sessions:write",
            "boards:read",
            "boards:submit",
            "profile:read",
            "activity:read",
            "sharepacks",
        ],
    )
    .await;
    let all = all["token"].as_str().unwrap();
    for (method, path, body) in [
        (
            "POST",
            "/v1/tokens",
            Some(json!({"name": "more", "scopes": ["sessions:read"]})),
        ),
        ("GET", "/v1/tokens", None),
        (
            "DELETE",
            "/v1/tokens/0190aaaa-0000-7000-8000-000000000000",
            None,
        ),
        (
            "POST",
            "/v1/auth/password",
            Some(json!({"currentPassword": PASSWORD, "newPassword": "a brand new password"})),
        ),
        ("GET", "/v1/profile/me/export", None),
        ("DELETE", "/v1/profile/me", None),
        (
            "PATCH",
            "/v1/profile",
            Some(json!({"displayName": "Taken"})),
        ),
        ("GET", "/v1/auth/validate", None),
        ("POST", "/v1/feed", Some(json!({"title": "hi"}))),
        ("POST", "/v1/ai/chat", Some(json!({}))),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let (status, answer) = send(&app, method.clone(), path, all, body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(
            error(&answer).contains("personal access tokens cannot be used on this route"),
            "{method} {path}: {answer}"
        );
    }
    // Nothing of the account changed: same name, same password, still there.
    let (status, profile) = send(&app, reqwest::Method::GET, "/v1/profile", &jwt, None).await;
    assert_eq!(status, 200);
    assert_eq!(profile["data"]["displayName"], "Cleo");
    assert_eq!(listed(&app, &jwt).await.len(), 4);
}

async fn bad_requests_name_the_rule_and_make_nothing(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Dana").await;
    for (body, rule) in [
        (
            json!({"name": "x", "scopes": ["sessions:delete"]}),
            "scopes: unknown scope `sessions:delete`",
        ),
        (
            json!({"name": "x", "scopes": ["sessions:read"], "expiresInDays": 366}),
            "expiresInDays: must be between 1 and 365",
        ),
        (
            json!({"name": "x", "scopes": ["sessions:read"], "expiresInDays": 0}),
            "expiresInDays: must be between 1 and 365",
        ),
        (
            json!({"name": "x", "scopes": ["sessions:read"], "expiresInDays": "soon"}),
            "expiresInDays",
        ),
        (json!({"scopes": ["sessions:read"]}), "name: is required"),
        (json!({"name": "x"}), "scopes: is required"),
        (
            json!({"name": "x", "scopes": []}),
            "scopes: at least one scope",
        ),
        (
            json!({"name": " ", "scopes": ["sessions:read"]}),
            "name: must be",
        ),
    ] {
        let (status, answer) = send(
            &app,
            reqwest::Method::POST,
            "/v1/tokens",
            &jwt,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(error(&answer).contains(rule), "{body}: {answer}");
    }
    assert!(listed(&app, &jwt).await.is_empty());

    // At most 20 live tokens; revoking one makes room.
    let mut first = None;
    for i in 0..personal_tokens::MAX_LIVE_TOKENS {
        let made = make_token(&app, &jwt, &format!("tool {i}"), &["profile:read"]).await;
        first.get_or_insert(made["id"].as_str().unwrap().to_owned());
    }
    let (status, answer) = send(
        &app,
        reqwest::Method::POST,
        "/v1/tokens",
        &jwt,
        Some(json!({"name": "one more", "scopes": ["profile:read"]})),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    assert!(error(&answer).contains("at most 20"), "{answer}");
    let first = first.unwrap();
    let response = app
        .client
        .delete(format!("{}/v1/tokens/{first}", app.address))
        .bearer_auth(&jwt)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    make_token(&app, &jwt, "one more", &["profile:read"]).await;
}

async fn malformed_forged_and_unknown_tokens_are_refused(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Eve").await;
    let made = make_token(&app, &jwt, "bot", &["profile:read"]).await;
    let token = made["token"].as_str().unwrap();
    let mut forged = token.as_bytes().to_vec();
    forged[12] = if forged[12] == b'a' { b'b' } else { b'a' };
    let forged = String::from_utf8(forged).unwrap();
    let unknown = personal_tokens::generate();
    for (presented, rule) in [
        ("pdk_short".to_owned(), "malformed personal access token"),
        (format!("{token}x"), "malformed personal access token"),
        (forged, "personal access token checksum does not match"),
        (unknown, "unknown personal access token"),
    ] {
        let (status, answer) =
            send(&app, reqwest::Method::GET, "/v1/profile", &presented, None).await;
        assert_eq!(status, 401, "{presented}: {answer}");
        assert_eq!(error(&answer), rule);
    }
    // The sign-in and the real token still work.
    let (status, _) = send(&app, reqwest::Method::GET, "/v1/profile", &jwt, None).await;
    assert_eq!(status, 200);
    let (status, _) = send(&app, reqwest::Method::GET, "/v1/profile", token, None).await;
    assert_eq!(status, 200);
    // On a public route too, a token of no form of ours is refused rather than ignored; one of
    // a known form (an expired sign-in's, say) is left to the route, which reads without it.
    let board = "/v1/leaderboards?gameId=acc&trackName=Monza&trackLayout=";
    for (presented, rule) in [
        ("pdk_short", "malformed personal access token"),
        ("not-a-token", "invalid token"),
    ] {
        let (status, answer) = send(&app, reqwest::Method::GET, board, presented, None).await;
        assert_eq!(
            (status, error(&answer)),
            (401, rule),
            "{presented}: {answer}"
        );
    }
    let (status, answer) = send(&app, reqwest::Method::GET, board, "aaa.bbb.ccc", None).await;
    assert_eq!(status, 200, "{answer}");
}

async fn a_password_change_revokes_every_token(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Fay").await;
    let first = make_token(&app, &jwt, "bot", &["profile:read"]).await;
    let second = make_token(&app, &jwt, "sheet", &["sessions:read"]).await;
    let (status, body) = send(
        &app,
        reqwest::Method::POST,
        "/v1/auth/password",
        &jwt,
        Some(json!({"currentPassword": PASSWORD, "newPassword": "a brand new password"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for (token, path) in [(&first, "/v1/profile"), (&second, "/v1/sessions")] {
        let (status, answer) = send(
            &app,
            reqwest::Method::GET,
            path,
            token["token"].as_str().unwrap(),
            None,
        )
        .await;
        assert_eq!(status, 401, "{answer}");
        assert_eq!(error(&answer), "personal access token has been revoked");
    }
    assert!(listed(&app, &jwt).await.is_empty());
}

async fn deletion_revokes_tokens_and_the_export_lists_them(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Gil").await;
    let made = make_token(&app, &jwt, "league page", &["boards:read"]).await;
    let token = made["token"].as_str().unwrap();
    let (status, _) = send(
        &app,
        reqwest::Method::GET,
        "/v1/leaderboards/me?trackId=0190aaaa-0000-7000-8000-0000000000aa",
        token,
        None,
    )
    .await;
    assert_eq!(status, 404, "used once: no entry on that board");
    let response = app
        .client
        .get(format!("{}/v1/profile/me/export", app.address))
        .bearer_auth(&jwt)
        .send()
        .await
        .unwrap();
    let response = if response.status() == 302 {
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        reqwest::get(location).await.unwrap()
    } else {
        response
    };
    assert_eq!(response.status(), 200);
    let export: Value = response.json().await.unwrap();
    let tokens = export["accessTokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["id"], made["id"]);
    assert_eq!(tokens[0]["name"], "league page");
    assert_eq!(tokens[0]["scopes"], json!(["boards:read"]));
    assert!(tokens[0].get("lastUsedAt").is_some(), "{}", tokens[0]);
    let text = export.to_string();
    assert!(!text.contains(token));
    assert!(!text.contains(&paddock_core::hashing::sha256_hex(token)));

    let (status, body) = send(&app, reqwest::Method::DELETE, "/v1/profile/me", &jwt, None).await;
    assert_eq!(status, 202, "{body}");
    let (status, answer) = send(
        &app,
        reqwest::Method::GET,
        "/v1/leaderboards/me?trackId=0190aaaa-0000-7000-8000-0000000000aa",
        token,
        None,
    )
    .await;
    assert_eq!(status, 401, "{answer}");
}

async fn answers_carry_rate_limit_headers_and_429_past_the_limit(app: TestApp) {
    let (_, jwt, _) = driver(&app, "Hal").await;
    let made = make_token(&app, &jwt, "bot", &["profile:read"]).await;
    let token = made["token"].as_str().unwrap();
    let header = |headers: &reqwest::header::HeaderMap, name: &str| -> u64 {
        headers[name].to_str().unwrap().parse().unwrap()
    };
    let (status, _, headers) =
        send_with_headers(&app, reqwest::Method::GET, "/v1/profile", token, None).await;
    assert_eq!(status, 200);
    let limit = header(&headers, "ratelimit-limit");
    assert_eq!(limit, 120, "the default Limits__TokenRequestsPerMinute");
    assert_eq!(header(&headers, "ratelimit-remaining"), limit - 1);
    assert!((1..=60).contains(&header(&headers, "ratelimit-reset")));
    // A sign-in's answers carry none.
    let (_, _, headers) =
        send_with_headers(&app, reqwest::Method::GET, "/v1/profile", &jwt, None).await;
    assert!(headers.get("ratelimit-limit").is_none());

    // Use up the minute (bounded: the limit's requests and one more).
    let mut refused = None;
    for _ in 0..limit {
        let (status, body, headers) =
            send_with_headers(&app, reqwest::Method::GET, "/v1/profile", token, None).await;
        if status == 429 {
            refused = Some((body, headers));
            break;
        }
        assert_eq!(status, 200, "{body}");
    }
    let (body, headers) = refused.expect("a 429 within the limit's requests");
    assert!(
        error(&body).contains("Limits__TokenRequestsPerMinute"),
        "{body}"
    );
    assert_eq!(header(&headers, "ratelimit-remaining"), 0);
    assert_eq!(header(&headers, "ratelimit-limit"), limit);
    assert!((1..=60).contains(&header(&headers, "retry-after")));
    // Another token of the same driver has its own budget; the sign-in is not limited by it.
    let other = make_token(&app, &jwt, "other", &["profile:read"]).await;
    let (status, _) = send(
        &app,
        reqwest::Method::GET,
        "/v1/profile",
        other["token"].as_str().unwrap(),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = send(&app, reqwest::Method::GET, "/v1/profile", &jwt, None).await;
    assert_eq!(status, 200);
}

async fn tokens_expire_and_record_their_last_use(
    app: TestApp,
    clock: Arc<paddock_core::ports::ManualClock>,
) {
    let (email, jwt, _) = driver(&app, "Ivy").await;
    let (status, made) = send(
        &app,
        reqwest::Method::POST,
        "/v1/tokens",
        &jwt,
        Some(json!({"name": "day pass", "scopes": ["profile:read"], "expiresInDays": 1})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let token = made["data"]["token"].as_str().unwrap();
    let default = make_token(&app, &jwt, "default", &["profile:read"]).await;
    let created = time::OffsetDateTime::parse(
        default["createdAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let expires = time::OffsetDateTime::parse(
        default["expiresAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(expires - created, time::Duration::days(90));

    let (status, _) = send(&app, reqwest::Method::GET, "/v1/profile", token, None).await;
    assert_eq!(status, 200);
    // The last use is written off the answer's path: wait for it.
    let mut last_used = Value::Null;
    for _ in 0..100 {
        let list = listed(&app, &jwt).await;
        let entry = list.iter().find(|t| t["id"] == made["data"]["id"]).unwrap();
        if entry["lastUsedAt"].is_string() {
            last_used = entry["lastUsedAt"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(last_used.is_string(), "lastUsedAt was not recorded");

    clock.advance(time::Duration::seconds(24 * 3600 + 1));
    let (status, answer) = send(&app, reqwest::Method::GET, "/v1/profile", token, None).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(error(&answer), "personal access token expired");
    // The sign-in's access token expired too: sign in again to list.
    let (status, login) = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": email, "password": PASSWORD}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{login}");
    let jwt = login["data"]["accessToken"].as_str().unwrap();
    let list = listed(&app, jwt).await;
    assert_eq!(list.len(), 1, "an expired token is no longer listed");
    assert_eq!(list[0]["id"], default["id"]);
}

/// The guides name every scope a token may carry (in the API guide's list and in tokens.md).
#[test]
fn the_guides_name_every_scope() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    for page in ["api-guide.md", "tokens.md"] {
        let text = std::fs::read_to_string(docs.join(page)).unwrap();
        for scope in paddock_core::identity::personal_tokens::Scope::ALL {
            let named = format!("`{}`", scope.name());
            assert!(text.contains(&named), "{page} does not name {named}");
        }
    }
}

/// The overrides tokens.md gives a Python client generator are the ones the tests' client is
/// generated with.
#[test]
fn the_guide_configures_a_client_generator_as_the_tests_do() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = std::fs::read_to_string(root.join("docs/tokens.md")).unwrap();
    let used = std::fs::read_to_string(root.join("tests/clients/python-client.yaml")).unwrap();
    let overrides: Vec<&str> = used
        .lines()
        .skip_while(|l| !l.starts_with("content_type_overrides:"))
        .take_while(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(overrides.len() > 1, "{used}");
    assert!(
        guide.contains(&overrides.join("\n")),
        "tokens.md lacks {overrides:?}"
    );
}

on_both_backends!(
    plain: [
        tokens_are_shown_once_and_revoked_at_once,
        a_token_opens_its_scopes_only,
        bad_requests_name_the_rule_and_make_nothing,
        malformed_forged_and_unknown_tokens_are_refused,
        a_password_change_revokes_every_token,
        deletion_revokes_tokens_and_the_export_lists_them,
        answers_carry_rate_limit_headers_and_429_past_the_limit,
    ],
    clocked: [tokens_expire_and_record_their_last_use],
);
