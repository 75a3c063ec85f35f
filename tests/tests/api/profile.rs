//! Profile and data control on both backends: profile reads and changes with validation, a
//! new name on the boards, the export holding one of every kind of driver data, the registry
//! covering everything stored about a driver, account deletion (at once: every token, refresh
//! and login refused, the email free again; then the job: nothing of the driver left in any
//! table or the blob store), racing deletes, and a job interrupted and resumed.

use base64::Engine;
use paddock_core::config::AiProvider;
use paddock_core::driver_data::DriverData;
use paddock_core::driver_data::deletion::{self, JobOutcome};
use paddock_core::identity::users;
use paddock_core::ids::UserId;
use paddock_core::outbox;
use paddock_core::ports::{Clock, Ports};
use paddock_core::queues::QueueName;
use paddock_core::tables::Table;
use paddock_core::workers;
use paddock_tests::document_server::Served;
use paddock_tests::fake_llm::FakeLlm;
use paddock_tests::oauth_flow;
use paddock_tests::{
    Backend, TestApp, envelope, every_blob, every_item, on_both_backends, ports, session_body,
    spawn_with, unique,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

const PASSWORD: &str = "correct horse battery";

async fn patch(app: &TestApp, path: &str, token: &str, body: Value) -> (u16, Value) {
    app.call(reqwest::Method::PATCH, path, token, Some(body))
        .await
}

async fn register(app: &TestApp, email: &str, name: &str) -> Value {
    let (status, body) = envelope(
        app.post_json(
            "/v1/auth/register",
            &json!({"email": email, "password": PASSWORD, "displayName": name}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["data"].clone()
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("claims")
}

async fn profile_reads_changes_and_refusals(app: TestApp) {
    let email = format!("{}@example.com", unique("ana"));
    let signed_in = register(&app, &email, "Ana").await;
    let token = signed_in["accessToken"].as_str().unwrap();
    let id = signed_in["user"]["id"].as_str().unwrap();

    let (status, body) = app
        .call(reqwest::Method::GET, "/v1/profile", token, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"],
        json!({"id": id, "displayName": "Ana", "avatarUrl": null, "email": email})
    );
    let (_, me) = app
        .call(reqwest::Method::GET, "/v1/profile/me", token, None)
        .await;
    assert!(me["data"]["createdAt"].as_str().is_some(), "{me}");
    assert_eq!(me["data"]["email"], email);

    // PascalCase, trimmed; an avatar set, then cleared with null.
    let (status, body) = patch(
        &app,
        "/v1/profile",
        token,
        json!({"DisplayName": "  Ana Speed  ", "AvatarUrl": "https://img.example.com/a.png"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["displayName"], "Ana Speed");
    assert_eq!(body["data"]["avatarUrl"], "https://img.example.com/a.png");
    let (status, body) = patch(&app, "/v1/profile/me", token, json!({"avatarUrl": null})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["avatarUrl"], Value::Null);
    assert_eq!(body["data"]["displayName"], "Ana Speed");
    assert!(body["data"]["createdAt"].is_string());

    // Each problem named; nothing changed.
    for (change, expected) in [
        (
            json!({"displayName": "x".repeat(65)}),
            "displayName: must be 1 to 64 characters",
        ),
        (json!({"displayName": "   "}), "displayName: must be 1 to"),
        (
            json!({"displayName": "a\u{7}b"}),
            "displayName: must not contain control",
        ),
        (
            json!({"displayName": "a\u{202e}b"}),
            "displayName: must not contain invisible",
        ),
        (json!({"displayName": 7}), "displayName: must be a string"),
        (
            json!({"avatarUrl": "http://img.example.com/a.png"}),
            "avatarUrl: must be an https URL",
        ),
        (
            json!({"avatarUrl": format!("https://a.io/{}", "x".repeat(2048))}),
            "avatarUrl: must be at most 2048",
        ),
        (
            json!({"avatarUrl": 3}),
            "avatarUrl: must be an https URL or null",
        ),
        (json!({}), "body: must give displayName, avatarUrl or both"),
    ] {
        let (status, body) = patch(&app, "/v1/profile", token, change.clone()).await;
        assert_eq!(status, 400, "{change}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(expected), "{change}: {error}");
    }
    let both = json!({"displayName": "", "avatarUrl": "ftp://x"});
    let (_, body) = patch(&app, "/v1/profile", token, both).await;
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("displayName:") && error.contains("avatarUrl:"),
        "{error}"
    );
    let malformed = app
        .client
        .patch(format!("{}/v1/profile", app.address))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body("{\"displayName\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(malformed).await.0, 400);
    let (_, body) = app
        .call(reqwest::Method::GET, "/v1/profile", token, None)
        .await;
    assert_eq!(body["data"]["displayName"], "Ana Speed");
    let (status, _) = app
        .call(reqwest::Method::GET, "/v1/profile", "not-a-token", None)
        .await;
    assert_eq!(status, 401);

    // New access tokens carry the new name.
    let (status, refreshed) = envelope(
        app.post_json(
            "/v1/auth/refresh",
            &json!({"refreshToken": signed_in["refreshToken"]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{refreshed}");
    let fresh = refreshed["data"]["accessToken"].as_str().unwrap();
    assert_eq!(claims(fresh)["display_name"], "Ana Speed");
}

/// A 30-lap session body with `points` track points.
fn session(csid: &str, points: usize) -> Value {
    let laps: Vec<(i64, bool, f64)> = (0..30).map(|i| (92_000 + i * 37, true, 0.9)).collect();
    session_body(csid, "2026-11-01T10:00:00Z", &laps, points)
}

/// Uploads a session and submits its best lap; answers (session id, track id).
/// Registration and a profile change hold a display name to one rule: a name registration
/// takes can be saved again, and the next character is refused by both with the same words.
async fn one_display_name_rule_for_registration_and_profile(app: TestApp) {
    let longest = format!(
        "{} Ü",
        "x".repeat(paddock_core::identity::profiles::DISPLAY_NAME_MAX - 2)
    );
    let email = format!("{}@example.com", unique("long"));
    let signed_in = register(&app, &email, &longest).await;
    assert_eq!(signed_in["user"]["displayName"], longest.as_str());
    let token = signed_in["accessToken"].as_str().unwrap();
    let (status, body) = patch(
        &app,
        "/v1/profile/me",
        token,
        json!({"displayName": longest}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["displayName"], longest.as_str());

    let too_long = format!("{longest}x");
    let (status, registered) = envelope(
        app.post_json(
            "/v1/auth/register",
            &json!({"email": format!("{}@example.com", unique("longer")), "password": PASSWORD,
                    "displayName": too_long}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400, "{registered}");
    let (status, patched) = patch(
        &app,
        "/v1/profile/me",
        token,
        json!({"displayName": too_long}),
    )
    .await;
    assert_eq!(status, 400, "{patched}");
    let rule = "displayName: must be 1 to 64 characters";
    for error in [&registered["error"], &patched["error"]] {
        assert!(error.as_str().unwrap().contains(rule), "{error}");
    }
}

async fn ranked_session(app: &TestApp, token: &str, csid: &str) -> (String, String) {
    let (status, body) = app
        .call(
            reqwest::Method::POST,
            "/v1/sessions",
            token,
            Some(session(csid, 200)),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let session_id = body["data"]["sessionId"].as_str().unwrap().to_owned();
    let track_id = body["data"]["trackId"].as_str().unwrap().to_owned();
    let submit = json!({"SessionId": session_id, "LapTimeMs": 92_000, "QualityScore": 0.9});
    let (status, body) = app
        .call(
            reqwest::Method::POST,
            "/v1/leaderboards/submit",
            token,
            Some(submit),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    (session_id, track_id)
}

async fn board_names(app: &TestApp, track_id: &str) -> Vec<String> {
    let (_, body) = envelope(
        app.get(&format!("/v1/leaderboards?trackId={track_id}"))
            .await,
    )
    .await;
    body["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["displayName"].as_str().unwrap().to_owned())
        .collect()
}

async fn a_new_name_reaches_the_board(app: TestApp) {
    let email = format!("{}@example.com", unique("bo"));
    let signed_in = register(&app, &email, "Bo").await;
    let token = signed_in["accessToken"].as_str().unwrap();
    let (_, track) = ranked_session(&app, token, "bo-1").await;
    assert_eq!(board_names(&app, &track).await, ["Bo"]);
    let (status, _) = patch(
        &app,
        "/v1/profile",
        token,
        json!({"displayName": "Bo Fast", "avatarUrl": "https://img.example.com/bo.png"}),
    )
    .await;
    assert_eq!(status, 200);
    for _ in 0..100 {
        if board_names(&app, &track).await == ["Bo Fast"] {
            let (_, body) =
                envelope(app.get(&format!("/v1/leaderboards?trackId={track}")).await).await;
            assert_eq!(
                body["data"]["entries"][0]["avatarUrl"],
                "https://img.example.com/bo.png"
            );
            // A later submission with the token issued before the rename keeps the new name.
            let (status, _) = app
                .call(
                    reqwest::Method::POST,
                    "/v1/sessions",
                    token,
                    Some(session("bo-2", 0)),
                )
                .await;
            assert_eq!(status, 201);
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the board still shows {:?}",
        board_names(&app, &track).await
    );
}

fn a_pack() -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("setup.json", zip::write::SimpleFileOptions::default())
        .unwrap();
    w.write_all(br#"{"wing": 7}"#).unwrap();
    w.finish().unwrap().into_inner()
}

/// What a driver with one of every kind of data has: ids to look for, and the driver's
/// tokens.
struct Seeded {
    user_id: String,
    email: String,
    token: String,
    refresh: String,
    session_id: String,
    track_id: String,
    pack_id: String,
    /// A personal access token of the driver (`sessions:read`), used once.
    personal_token: String,
    /// The signing secret of the driver's webhook subscription.
    webhook_secret: String,
    /// Another driver's access token from the driver's own app.
    app_token_of_another: String,
}

/// Writes one of every kind of driver data through the API (and an exchange code, whose
/// only way in is a provider's browser sign-in, through its domain function).
async fn seed(app: &TestApp, backend_llm: &FakeLlm) -> Seeded {
    let _ = backend_llm;
    let email = format!("{}@Example.com", unique("Cleo"));
    let registered = register(app, &email, "Cleo").await;
    // A login remembers the address; a refresh makes a chain of two tokens.
    let (status, login) = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": email, "password": PASSWORD}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{login}");
    let (status, refreshed) = envelope(
        app.post_json(
            "/v1/auth/refresh",
            &json!({"refreshToken": login["data"]["refreshToken"]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let token = refreshed["data"]["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let refresh = refreshed["data"]["refreshToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let user_id = registered["user"]["id"].as_str().unwrap().to_owned();

    let (session_id, track_id) = ranked_session(app, &token, "cleo-1").await;
    let (status, _) = app
        .call(
            reqwest::Method::POST,
            "/v1/feed",
            &token,
            Some(json!({"title": "Quali tomorrow", "subtitle": "wish me luck"})),
        )
        .await;
    assert_eq!(status, 201);
    let upload = app
        .client
        .post(format!(
            "{}/v1/sharepacks?name=setups&description=spa",
            app.address
        ))
        .bearer_auth(&token)
        .header("content-type", "application/zip")
        .header("idempotency-key", "cleo-setups-1")
        .body(a_pack())
        .send()
        .await
        .unwrap();
    let (status, pack) = envelope(upload).await;
    assert_eq!(status, 201, "{pack}");
    let pack_id = pack["data"]["id"].as_str().unwrap().to_owned();
    let insight = json!({"GameId": "acc", "TrackName": "Spa-Francorchamps", "RefLapMs": 138_456, "CurLapMs": 139_102});
    let (status, body) = app
        .call(
            reqwest::Method::POST,
            "/v1/ai/insights",
            &token,
            Some(insight),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    paddock_core::identity::exchange_codes::issue(
        &app.ports,
        &user_id.parse::<UserId>().unwrap(),
        "challenge",
    )
    .await
    .unwrap();
    // The feed consumer writes the session's, the submission's and the first unlock's
    // entries; the achievement consumer the statistics.
    for _ in 0..150 {
        let (_, feed) = app
            .call(reqwest::Method::GET, "/v1/feed?limit=100", &token, None)
            .await;
        let kinds: BTreeSet<String> = feed["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_owned())
            .collect();
        if ["session", "leaderboard", "achievement", "post"]
            .iter()
            .all(|k| kinds.contains(*k))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.wait_for_map(&token, &track_id, 1).await;
    let (status, made) = app
        .call(
            reqwest::Method::POST,
            "/v1/tokens",
            &token,
            Some(json!({"name": "spreadsheet", "scopes": ["sessions:read"]})),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let personal_token = made["data"]["token"].as_str().unwrap().to_owned();
    let (status, _) = app
        .call(reqwest::Method::GET, "/v1/sessions", &personal_token, None)
        .await;
    assert_eq!(status, 200);
    // A webhook subscription (its receiver confirms it; it wants only board.passed, which no
    // one sends the driver here).
    let receiver = paddock_tests::webhook_receiver::Receiver::start().await;
    let (status, hook) = app
        .call(
            reqwest::Method::POST,
            "/v1/webhooks",
            &token,
            Some(json!({"url": receiver.url, "eventTypes": ["board.passed"]})),
        )
        .await;
    assert_eq!(status, 201, "{hook}");
    let webhook_secret = hook["data"]["secret"].as_str().unwrap().to_owned();
    // A league of the driver's own.
    let body = Some(json!({"name": "Cleo's Cup"}));
    let (status, league) = app
        .call(reqwest::Method::POST, "/v1/leagues", &token, body)
        .await;
    assert_eq!(status, 201, "{league}");
    // An app of her own, which she also lets act for her (a grant, and a code exchanged).
    let client = oauth_flow::register_app(app, &token, "https://bot.example.com/cb", false).await;
    let pkce = oauth_flow::Pkce::new();
    let query = oauth_flow::authorize_query(&client, &pkce, "profile:read", &[]);
    let approved = oauth_flow::Browser::new(app)
        .consent(&query, &email, PASSWORD)
        .await;
    let (status, tokens) = oauth_flow::exchange_code(app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    // Another driver lets her app act for him: the deletion ends his grant with the app.
    let (_, _, dan_email) = oauth_flow::driver_with_password(app, "Dan").await;
    let pkce = oauth_flow::Pkce::new();
    let query = oauth_flow::authorize_query(&client, &pkce, "profile:read", &[]);
    let approved = oauth_flow::Browser::new(app)
        .consent(&query, &dan_email, PASSWORD)
        .await;
    let (status, dans) = oauth_flow::exchange_code(app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{dans}");
    // A client known by its metadata document acts for her too: a grant with no app's rows.
    let server = paddock_tests::document_server::DocumentServer::start().await;
    let id = server.url("/pit-wall.json");
    let document = json!({"client_id": id, "redirect_uris": ["http://127.0.0.1/callback"]});
    server.serve("/pit-wall.json", Served::json(&document));
    let (pkce, browser) = (oauth_flow::Pkce::new(), oauth_flow::Browser::new(app));
    let client = oauth_flow::RegisteredApp {
        client_id: id,
        secret: None,
        redirect_uri: "http://127.0.0.1/callback".into(),
    };
    let query = oauth_flow::authorize_query(&client, &pkce, "profile:read", &[]);
    let approved = browser.consent(&query, &email, PASSWORD).await;
    let (status, tokens) = oauth_flow::exchange_code(app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    Seeded {
        user_id,
        email,
        token,
        refresh,
        session_id,
        track_id,
        pack_id,
        personal_token,
        webhook_secret,
        app_token_of_another: dans["access_token"].as_str().unwrap().to_owned(),
    }
}

/// Everything stored that names the driver: items holding any of `needles`, and blobs whose
/// key or bytes hold one.
async fn traces(
    app: &TestApp,
    needles: &[&str],
) -> (Vec<(Table, paddock_core::ports::items::Item)>, Vec<String>) {
    let items = every_item(&app.settings)
        .await
        .into_iter()
        .filter(|(_, item)| {
            let text = Value::Object(item.clone()).to_string();
            needles.iter().any(|n| text.contains(n))
        })
        .collect();
    let blobs = every_blob(&app.ports)
        .await
        .into_iter()
        .filter(|(key, bytes)| {
            let text = String::from_utf8_lossy(bytes);
            needles.iter().any(|n| key.contains(n) || text.contains(n))
        })
        .map(|(key, _)| key)
        .collect();
    (items, blobs)
}

/// What is still stored of the driver once the relay has had time to send the driver's last
/// events on (they are in the outbox until then, as the registry's pending events).
async fn left_behind(
    app: &TestApp,
    needles: &[&str],
) -> (Vec<(Table, paddock_core::ports::items::Item)>, Vec<String>) {
    for _ in 0..50 {
        let (items, blobs) = traces(app, needles).await;
        if items.is_empty() && blobs.is_empty() {
            return (items, blobs);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    traces(app, needles).await
}

async fn coached_app(backend: Backend, fake: &FakeLlm) -> TestApp {
    let mut t = ports(backend).await;
    t.settings.ai.provider = AiProvider::OpenAi;
    t.settings.ai.model = "test-model".into();
    t.settings.ai.base_url = format!("{}/v1", fake.url);
    t.settings.ai.base_url_configured = true;
    spawn_with(t.settings, t.ports, t.dir).await
}

async fn export_covers_every_kind_and_deletion_leaves_nothing(backend: Backend) {
    let fake = FakeLlm::start().await;
    let app = coached_app(backend, &fake).await;
    export_and_deletion(app, &fake, backend).await;
}

/// The export and the deletion of a driver with data of every kind; `backend` is the one
/// `app` runs on (AWS hands the export out by a presigned URL).
async fn export_and_deletion(app: TestApp, fake: &FakeLlm, backend: Backend) {
    let cleo = seed(&app, fake).await;
    let driver = paddock_core::driver_data::Driver {
        id: cleo.user_id.parse::<UserId>().unwrap(),
        email: Some(cleo.email.to_lowercase()),
        account: Some(
            paddock_core::hashing::sha256_hex(&cleo.email.to_lowercase())[..32].to_owned(),
        ),
    };

    // The registry covers everything stored about the driver, and each kind was written.
    let needles = [
        cleo.user_id.as_str(),
        cleo.session_id.as_str(),
        cleo.pack_id.as_str(),
    ];
    let (items, blobs) = traces(&app, &needles).await;
    let mut found: BTreeMap<&str, usize> = BTreeMap::new();
    for (table, item) in &items {
        let kind = DriverData::covering(&driver, *table, item).unwrap_or_else(|| {
            panic!(
                "no kind of driver data covers {table:?} item {}",
                Value::Object(item.clone())
            )
        });
        *found.entry(kind.name()).or_default() += 1;
    }
    for key in &blobs {
        let kind = DriverData::covering_blob(key)
            .unwrap_or_else(|| panic!("no kind of driver data covers blob {key}"));
        *found.entry(kind.name()).or_default() += 1;
    }
    // Signing in from an address is counted under the account's name, not the id.
    let known = every_item(&app.settings)
        .await
        .into_iter()
        .filter(|(t, i)| DriverData::covering(&driver, *t, i) == Some(DriverData::SignInAddresses))
        .count();
    *found.entry("signInAddresses").or_default() += known;
    for kind in DriverData::ALL {
        // Provider links need a provider's browser sign-in (tests/tests/browser/sign_in.rs);
        // the outbox is empty once the relay has run.
        // Exports are stored (in AWS) once asked for, below.
        if matches!(
            kind,
            DriverData::ProviderLinks | DriverData::PendingEvents | DriverData::Exports
        ) {
            continue;
        }
        assert!(
            found.contains_key(kind.name()),
            "nothing of kind {} was written: {found:?}",
            kind.name()
        );
    }

    // The export holds one of every exported kind, as written. Locally it is streamed; in
    // AWS it is stored under exports/ and handed out by a presigned URL.
    let response = app
        .client
        .get(format!("{}/v1/profile/me/export", app.address))
        .bearer_auth(&cleo.token)
        .send()
        .await
        .unwrap();
    let response = if backend == Backend::Aws {
        assert_eq!(response.status(), 302);
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        assert!(location.contains("paddock-export-20"), "{location}");
        let stored = app
            .ports
            .blobs
            .list(&format!("exports/{}/", cleo.user_id))
            .await
            .unwrap();
        assert_eq!(stored.len(), 1, "{stored:?}");
        reqwest::get(location).await.unwrap()
    } else {
        let disposition = response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            disposition.starts_with("attachment; filename=\"paddock-export-20"),
            "{disposition}"
        );
        assert!(disposition.ends_with(".json\""), "{disposition}");
        response
    };
    assert_eq!(response.status(), 200);
    let export: Value = response.json().await.expect("the export is JSON");
    assert_eq!(export["format"], 1);
    assert_eq!(export["complete"], true);
    assert_eq!(export["userId"], cleo.user_id);
    assert_eq!(export["profile"]["displayName"], "Cleo");
    let text = export.to_string();
    let token_hash = paddock_core::hashing::sha256_hex(&cleo.personal_token);
    for secret in [
        "passwordHash",
        "$argon2",
        &cleo.refresh,
        "codeChallenge",
        &cleo.personal_token,
        &token_hash,
        &cleo.webhook_secret,
    ] {
        assert!(!text.contains(secret), "the export holds {secret}");
    }
    for kind in DriverData::ALL {
        if kind == DriverData::Profile {
            continue;
        }
        if !paddock_core::driver_data::export::exported(kind) {
            assert!(
                export.get(kind.name()).is_none(),
                "{} is not exported",
                kind.name()
            );
            continue;
        }
        let list = export[kind.name()]
            .as_array()
            .unwrap_or_else(|| panic!("{} missing", kind.name()));
        if kind != DriverData::ProviderLinks {
            assert!(!list.is_empty(), "export has no {}", kind.name());
        }
    }
    assert_eq!(export["sessions"][0]["id"], cleo.session_id);
    assert_eq!(export["sessions"][0]["laps"].as_array().unwrap().len(), 30);
    assert_eq!(export["trackPoints"][0]["sessionId"], cleo.session_id);
    assert_eq!(export["leaderboardEntries"][0]["trackId"], cleo.track_id);
    assert_eq!(export["leaderboardEntries"][0]["lapTimeMs"], 92_000);
    assert_eq!(export["lapHistory"][0]["sessionId"], cleo.session_id);
    assert_eq!(export["lapHistory"][0]["lapTimeMs"], 92_000);
    assert_eq!(export["sharePacks"][0]["id"], cleo.pack_id);
    assert_eq!(export["emailSignIn"][0]["hasPassword"], true);
    assert_eq!(export["signIns"].as_array().unwrap().len(), 2);
    assert_eq!(export["accessTokens"][0]["name"], "spreadsheet");
    let hook_url = export["webhooks"][0]["url"].as_str().unwrap();
    assert!(
        hook_url.starts_with("http://127.0.0.1:") && hook_url.ends_with("/hook"),
        "{hook_url}"
    );
    assert_eq!(export["webhooks"][0]["eventTypes"], json!(["board.passed"]));
    assert_eq!(
        export["accessTokens"][0]["scopes"],
        json!(["sessions:read"])
    );
    assert!(
        export["feed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["title"] == "Quali tomorrow")
    );
    assert!(
        export["usageCounters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["scope"] == "ai")
    );

    // Deleted: at once every sign-in is refused and the email is free.
    let (status, deleted) = app
        .call(reqwest::Method::DELETE, "/v1/profile/me", &cleo.token, None)
        .await;
    assert_eq!(status, 202, "{deleted}");
    assert!(deleted["data"]["jobId"].is_string());
    // The same request sent again (its answer lost) is answered the same ticket, though the
    // deletion revoked the sign-in it carries.
    let (status, again) = app
        .call(reqwest::Method::DELETE, "/v1/profile/me", &cleo.token, None)
        .await;
    assert_eq!((status, &again["data"]), (202, &deleted["data"]), "{again}");
    for (method, path) in [
        ("GET", "/v1/profile"),
        ("GET", "/v1/profile/me"),
        ("GET", "/v1/profile/me/export"),
        ("GET", "/v1/sessions"),
        ("GET", "/v1/feed"),
        ("GET", "/v1/achievements"),
        ("GET", "/v1/tracks"),
        ("GET", "/v1/sharepacks"),
        ("GET", "/v1/auth/validate"),
        ("POST", "/v1/feed"),
        ("POST", "/v1/sessions"),
        ("POST", "/v1/leaderboards/submit"),
        ("POST", "/v1/ai/chat"),
        ("PATCH", "/v1/profile"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let body = (method != reqwest::Method::GET && method != reqwest::Method::DELETE)
            .then(|| json!({}));
        let (status, _) = app.call(method.clone(), path, &cleo.token, body).await;
        assert_eq!(
            status, 401,
            "{method} {path} with the deleted driver's token"
        );
    }
    let (status, body) = app
        .call(
            reqwest::Method::GET,
            "/v1/sessions",
            &cleo.personal_token,
            None,
        )
        .await;
    assert_eq!(
        status, 401,
        "the deleted driver's personal access token: {body}"
    );
    let (status, _) = envelope(
        app.post_json("/v1/auth/refresh", &json!({"refreshToken": cleo.refresh}))
            .await,
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": cleo.email, "password": PASSWORD}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 401);

    // The job runs through the outbox and the accounts consumer; then nothing is left.
    let user = cleo.user_id.parse::<UserId>().unwrap();
    wait_until_gone(&app.ports, &user).await;
    assert!(board_names(&app, &cleo.track_id).await.is_empty());
    let (items, blobs) = left_behind(&app, &needles).await;
    assert!(items.is_empty(), "left behind: {items:?}");
    assert!(blobs.is_empty(), "left behind: {blobs:?}");
    // Her app went with her, and with it another driver's grant to it.
    let (status, _) = app
        .call(
            reqwest::Method::GET,
            "/v1/profile/me",
            &cleo.app_token_of_another,
            None,
        )
        .await;
    assert_eq!(status, 401);
    // (The failed login above, made after the deletion, is counted like any unknown email's,
    // so that counter may outlive the job.)
    let counters = every_item(&app.settings)
        .await
        .into_iter()
        .filter(|(t, i)| DriverData::covering(&driver, *t, i).is_some())
        .filter(|(_, i)| {
            !i["pk"]
                .as_str()
                .unwrap_or_default()
                .starts_with("RL#login-failures#")
        })
        .count();
    assert_eq!(
        counters, 0,
        "sign-in counters of the deleted account are left"
    );
    // The shared aggregate stays: the track and its map.
    let (status, _) = envelope(
        app.get(&format!("/v1/leaderboards?trackId={}", cleo.track_id))
            .await,
    )
    .await;
    assert_eq!(status, 200);

    // The same email registers as a new account.
    let again = register(&app, &cleo.email, "Cleo again").await;
    assert_ne!(again["user"]["id"], cleo.user_id);
    let (status, _) = app
        .call(
            reqwest::Method::GET,
            "/v1/profile",
            again["accessToken"].as_str().unwrap(),
            None,
        )
        .await;
    assert_eq!(status, 200);
}

async fn wait_until_gone(ports: &Ports, user: &UserId) {
    for _ in 0..300 {
        if users::get_stored(ports, user).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the deletion job of {user} did not finish");
}

async fn racing_deletes_run_one_job(app: TestApp) {
    let (token, id) = app.driver("Dee").await;
    for i in 0..3 {
        let (status, _) = app
            .call(
                reqwest::Method::POST,
                "/v1/sessions",
                &token,
                Some(session(&format!("dee-{i}"), 0)),
            )
            .await;
        assert_eq!(status, 201);
    }
    let (a, b) = tokio::join!(
        app.call(reqwest::Method::DELETE, "/v1/profile/me", &token, None),
        app.call(reqwest::Method::DELETE, "/v1/profile/me", &token, None),
    );
    let accepted: Vec<&Value> = [&a, &b]
        .into_iter()
        .filter(|(s, _)| *s == 202)
        .map(|(_, b)| &b["data"]["jobId"])
        .collect();
    assert!(!accepted.is_empty(), "{a:?} {b:?}");
    for (status, _) in [&a, &b] {
        assert!(*status == 202 || *status == 401, "{a:?} {b:?}");
    }
    assert!(
        accepted.windows(2).all(|w| w[0] == w[1]),
        "one job: {accepted:?}"
    );
    wait_until_gone(&app.ports, &id.parse::<UserId>().unwrap()).await;
    let (items, _) = left_behind(&app, &[id.as_str()]).await;
    assert!(items.is_empty(), "{items:?}");
}

/// A job stopped after a few batches (as a crash would) and resumed by a new worker deletes
/// everything exactly once.
async fn an_interrupted_deletion_resumes(backend: Backend) {
    let t = ports(backend).await;
    let user = UserId::new();
    let profile = users::User::new(None, "Eve".into(), None, t.clock.now());
    let profile = users::User {
        id: user.clone(),
        ..profile
    };
    t.ports
        .items
        .transact(vec![profile.create_op()])
        .await
        .unwrap();
    let sessions = 70;
    for i in 0..sessions {
        let upload = paddock_tests::checked_upload(&session(&format!("eve-{i}"), 0), t.clock.now());
        paddock_core::sessions::create(&t.ports, &user, upload)
            .await
            .unwrap();
    }
    for i in 0..120 {
        let post =
            paddock_core::activity::feed::FeedPost::parse(Some(format!("post {i}")), None).unwrap();
        paddock_core::activity::feed::post(&t.ports, &user, post, None)
            .await
            .unwrap();
    }
    // Sessions and their idempotency records, posts, the profile.
    let written = (2 * sessions + 120 + 1) as u64;
    outbox::relay_pending(&t.ports).await.unwrap();

    deletion::start(&t.ports, &user).await.unwrap();
    let first = deletion::run(&t.ports, &user, Some(3)).await.unwrap();
    let JobOutcome::Interrupted(before) = first else {
        panic!("{first:?}")
    };
    assert!(before > 0);

    // A new worker takes the event from the queue and finishes the job.
    outbox::relay_pending(&t.ports).await.unwrap();
    let queue = t.ports.queues.get(QueueName::Accounts);
    let mut after = 0;
    for message in queue.receive(10, Duration::from_secs(2)).await.unwrap() {
        let event: paddock_core::events::Event = serde_json::from_str(&message.body).unwrap();
        if !matches!(
            event.kind,
            paddock_core::events::EventKind::AccountDeleted(_)
        ) {
            continue;
        }
        match deletion::run(&t.ports, &user, None).await.unwrap() {
            JobOutcome::Finished(n) => after += n,
            other => panic!("{other:?}"),
        }
        // Delivered again: nothing left, nothing fails.
        let processor = workers::processor(QueueName::Accounts);
        workers::handle_body(&message.body, &t.ports, &processor)
            .await
            .unwrap();
        assert_eq!(
            deletion::run(&t.ports, &user, None).await.unwrap(),
            JobOutcome::NothingLeft
        );
    }
    assert_eq!(before + after, written, "every item deleted exactly once");
    let left: Vec<_> = every_item(&t.settings)
        .await
        .into_iter()
        .filter(|(_, item)| {
            Value::Object(item.clone())
                .to_string()
                .contains(user.as_str())
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

on_both_backends!(
    plain: [profile_reads_changes_and_refusals, one_display_name_rule_for_registration_and_profile, a_new_name_reaches_the_board, racing_deletes_run_one_job],
    ports: [export_covers_every_kind_and_deletion_leaves_nothing, an_interrupted_deletion_resumes],
);

/// Export and deletion through the profile, accounts and outbox-relay functions behind the
/// local API, the coach on the stand-in language model as above.
#[tokio::test(flavor = "multi_thread")]
async fn functions_export_covers_every_kind_and_deletion_leaves_nothing() {
    let fake = FakeLlm::start().await;
    let base_url = format!("{}/v1", fake.url);
    let app = paddock_tests::spawn_functions_with(&[
        ("Ai__Provider", "openai"),
        ("Ai__Model", "test-model"),
        ("Ai__BaseUrl", &base_url),
    ])
    .await;
    export_and_deletion(app, &fake, Backend::Aws).await;
}
