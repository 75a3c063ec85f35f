//! Identity hardening, tried as an attacker would: password changes, guessing one account
//! from many addresses, oversized passwords, bodies sent past a rate limit, hashing floods,
//! signing-key rotation and names that pose as someone else — on both backends.

use paddock_tests::{Backend, TestApp, envelope, spawn_configured};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::time::Duration;

const PASSWORD: &str = "correct horse battery";

async fn login(app: &TestApp, email: &str, password: &str) -> (u16, Value) {
    envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": email, "password": password}),
        )
        .await,
    )
    .await
}

/// A client whose requests come from `127.0.0.<n>` (all of 127/8 is loopback).
fn client_from(n: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::from([127, 0, 0, n]))
        .build()
        .unwrap()
}

async fn login_from(app: &TestApp, n: u8, email: &str, password: &str) -> u16 {
    client_from(n)
        .post(format!("{}/v1/auth/login/email", app.address))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn set_password(app: &TestApp, token: &str, body: Value) -> (u16, Value) {
    envelope(app.post_json_auth("/v1/auth/password", &body, token).await).await
}

async fn password_change_needs_the_current_password_and_signs_out_the_rest(backend: Backend) {
    let (app, _) = spawn_configured(backend, |_| {}).await;
    let first = app.register("owner@example.com", PASSWORD).await;
    let token = first["accessToken"].as_str().unwrap();
    // A second device's sign-in, which the change must sign out.
    let (status, other) = login(&app, "owner@example.com", PASSWORD).await;
    assert_eq!(status, 200);
    let other_access = other["data"]["accessToken"].as_str().unwrap();
    let other_refresh = other["data"]["refreshToken"].as_str().unwrap();

    let (status, body) =
        set_password(&app, token, json!({"newPassword": "a new passphrase"})).await;
    assert_eq!(status, 403, "the account's password must be proven: {body}");
    assert!(body["error"].as_str().unwrap().contains("currentPassword"));
    let (status, body) = set_password(
        &app,
        token,
        json!({"CurrentPassword": "not the password", "NewPassword": "a new passphrase"}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = set_password(
        &app,
        token,
        json!({"currentPassword": PASSWORD, "newPassword": "short"}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("newPassword"),
        "{body}"
    );
    let (status, body) = envelope(
        app.post_json(
            "/v1/auth/password",
            &json!({"newPassword": "a new passphrase"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 401, "a token is required: {body}");

    let (status, body) = set_password(
        &app,
        token,
        json!({"currentPassword": PASSWORD, "newPassword": "a new passphrase"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["passwordSet"], true);
    assert_eq!(body["data"]["revokedSessions"], 1);

    assert_eq!(login(&app, "owner@example.com", PASSWORD).await.0, 401);
    assert_eq!(
        login(&app, "owner@example.com", "a new passphrase").await.0,
        200
    );
    let validate = |t: String| {
        let app = &app;
        async move {
            envelope(app.get_auth("/v1/auth/validate", &t).await)
                .await
                .0
        }
    };
    assert_eq!(
        validate(token.to_owned()).await,
        200,
        "the caller stays signed in"
    );
    assert_eq!(
        validate(other_access.to_owned()).await,
        401,
        "the other device is out"
    );
    let (status, _) = envelope(
        app.post_json("/v1/auth/refresh", &json!({"refreshToken": other_refresh}))
            .await,
    )
    .await;
    assert_eq!(status, 401);
}

async fn guessing_one_account_from_many_addresses_is_limited_but_not_its_owner(backend: Backend) {
    let (app, _) = spawn_configured(backend, |s| s.auth.failed_logins_per_account = 5).await;
    app.register("target@example.com", PASSWORD).await;
    // The owner signs in from 127.0.0.1 once: that address is known from now on.
    assert_eq!(
        login_from(&app, 1, "target@example.com", PASSWORD).await,
        200
    );
    // Five wrong guesses, each from another address (so no per-address limit applies).
    for n in 10..15 {
        assert_eq!(
            login_from(&app, n, "target@example.com", "guess guess").await,
            401
        );
    }
    // Over the account's failure limit, a new address is slowed to a few attempts of its
    // own (3 a failure window), not shut out.
    for _ in 0..3 {
        assert_eq!(
            login_from(&app, 20, "target@example.com", "guess guess").await,
            401
        );
    }
    assert_eq!(
        login_from(&app, 20, "target@example.com", "guess guess").await,
        429,
        "the fourth attempt from that address is refused"
    );
    assert_eq!(
        login_from(&app, 21, "target@example.com", PASSWORD).await,
        200,
        "the right password from an address never seen still signs in"
    );
    assert_eq!(
        login_from(&app, 1, "target@example.com", PASSWORD).await,
        200,
        "the owner's known address is not locked out"
    );
    // Other accounts are unaffected.
    app.register("bystander@example.com", PASSWORD).await;
    assert_eq!(
        login_from(&app, 21, "bystander@example.com", PASSWORD).await,
        200
    );
}

async fn login_caps_the_password_length(backend: Backend) {
    let (app, _) = spawn_configured(backend, |_| {}).await;
    let (status, body) = login(&app, "anyone@example.com", &"p".repeat(10_000)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("password: must be at most 256"),
        "{body}"
    );
}

async fn an_address_over_its_cap_is_refused_before_its_body_is_read(backend: Backend) {
    let (app, _) = spawn_configured(backend, |s| s.auth.attempts_per_address = 3).await;
    for i in 0..3 {
        let (status, _) = login(&app, &format!("u{i}@example.com"), "wrong password").await;
        assert_eq!(status, 401);
    }
    for path in ["/v1/auth/login/email", "/v1/auth/register"] {
        let res = app.post_raw(path, "application/json", "{not json").await;
        assert!(res.headers().contains_key("retry-after"));
        let (status, body) = envelope(res).await;
        assert_eq!(status, 429, "{path}: limited before parsing: {body}");
    }
}

/// Registration answers 409 for an email that has an account (a driver must learn why the
/// address cannot be used): that tells a prober which emails are registered, as many times as
/// the address's budget allows and no more.
async fn probing_emails_through_registration_is_bounded_per_address(backend: Backend) {
    let (app, _) = spawn_configured(backend, |s| s.auth.attempts_per_address = 5).await;
    app.register("known@example.com", PASSWORD).await;
    let prober = client_from(9);
    let probe = async |email: &str| {
        let res = prober
            .post(format!("{}/v1/auth/register", app.address))
            .json(&json!({"email": email, "password": "probe password", "displayName": "Probe"}))
            .send()
            .await
            .unwrap();
        let retry_after = res.headers().contains_key("retry-after");
        let (status, body) = envelope(res).await;
        (status, retry_after, body)
    };
    let (status, _, body) = probe("known@example.com").await;
    assert_eq!(status, 409, "{body}");
    for n in 0..4 {
        let (status, _, body) = probe(&format!("unknown{n}@example.com")).await;
        assert_eq!(status, 201, "{body}");
    }
    // The sixth probe from that address learns nothing, known email or not.
    for email in ["known@example.com", "another@example.com"] {
        let (status, retry_after, body) = probe(email).await;
        assert_eq!(status, 429, "{email}: {body}");
        assert!(retry_after);
    }
    // Another address has a budget of its own (addresses of one IPv6 /64 share one:
    // `rate_limits.rs`).
    let (status, body) = envelope(
        client_from(10)
            .post(format!("{}/v1/auth/register", app.address))
            .json(&json!({"email": "known@example.com", "password": "probe password", "displayName": "Probe"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 409, "{body}");
}

async fn a_hashing_flood_is_answered_503_and_loses_nothing(backend: Backend) {
    let (app, _) = spawn_configured(backend, |s| {
        s.auth.hashing_threads = Some(1);
        s.auth.hashing_wait = Duration::from_millis(1);
    })
    .await;
    // Password changes reach the hasher after reads only, so concurrent ones arrive at once
    // (sign-ins first queue on the store's writes).
    let mut drivers = Vec::new();
    for i in 0..12 {
        let email = format!("flood{i}@example.com");
        let token = app.register(&email, PASSWORD).await["accessToken"]
            .as_str()
            .unwrap()
            .to_owned();
        drivers.push((email, token));
    }
    let change = json!({"currentPassword": PASSWORD, "newPassword": "the flood passphrase"});
    let attempts: Vec<_> = drivers
        .iter()
        .map(|(email, token)| {
            let (client, url) = (
                app.client.clone(),
                format!("{}/v1/auth/password", app.address),
            );
            let (email, token, change) = (email.clone(), token.clone(), change.clone());
            tokio::spawn(async move {
                let res = client
                    .post(url)
                    .bearer_auth(&token)
                    .json(&change)
                    .send()
                    .await
                    .unwrap();
                let retry_after = res.headers().get("retry-after").cloned();
                (email, token, envelope(res).await.0, retry_after)
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for attempt in attempts {
        outcomes.push(attempt.await.unwrap());
    }
    let mut busy = 0;
    for (email, token, status, retry_after) in outcomes {
        match status {
            200 => assert_eq!(login(&app, &email, "the flood passphrase").await.0, 200),
            503 => {
                busy += 1;
                assert!(retry_after.is_some(), "503 says when to retry");
                // Nothing half-done: the old password still works, and a retry succeeds.
                assert_eq!(login(&app, &email, PASSWORD).await.0, 200);
                assert_eq!(set_password(&app, &token, change.clone()).await.0, 200);
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(
        busy > 0,
        "one hashing thread with no wait must turn some away"
    );
}

async fn a_rotated_signing_key_keeps_earlier_tokens_valid_until_dropped(backend: Backend) {
    let (app, _) = spawn_configured(backend, |s| s.secrets_refresh = Duration::from_secs(1)).await;
    let old = app.register("rotate@example.com", PASSWORD).await;
    let old_token = old["accessToken"].as_str().unwrap().to_owned();
    let file = app.dir.path().join("secrets.json");
    let secrets: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let old_key = secrets["jwtSigningKey"].as_str().unwrap().to_owned();
    let new_key = "a freshly rotated signing key, longer than 32 characters";
    let write = |previous: &str| {
        let text = json!({"jwtSigningKey": new_key, "jwtPreviousSigningKeys": previous});
        std::fs::write(&file, serde_json::to_vec(&text).unwrap()).unwrap();
    };
    let kid = |token: &str| -> String {
        use base64::Engine;
        let header = token.split('.').next().unwrap();
        let header: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(header)
                .unwrap(),
        )
        .unwrap();
        header["kid"].as_str().unwrap().to_owned()
    };
    let validate = async |t: &str| envelope(app.get_auth("/v1/auth/validate", t).await).await.0;

    write(&old_key);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, body) = login(&app, "rotate@example.com", PASSWORD).await;
    assert_eq!(status, 200);
    let new_token = body["data"]["accessToken"].as_str().unwrap().to_owned();
    assert_ne!(
        kid(&new_token),
        kid(&old_token),
        "new tokens name the new key"
    );
    assert_eq!(validate(&new_token).await, 200);
    assert_eq!(
        validate(&old_token).await,
        200,
        "the previous key still verifies"
    );

    write("");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        validate(&old_token).await,
        401,
        "the dropped key's tokens are refused"
    );
    assert_eq!(validate(&new_token).await, 200);
}

/// Two instances of the service over one secret: one reads a rotated key and signs with it;
/// the other, which read the keys a moment before the rotation, accepts that token once its
/// bound has passed instead of refusing it until its own refresh (300 s).
async fn a_rotation_read_by_one_instance_signs_no_one_out_at_another(backend: Backend) {
    let (app, _) = spawn_configured(backend, |_| {}).await;
    let registered = app.register("rotation@example.com", PASSWORD).await;
    let user: paddock_core::identity::users::User =
        serde_json::from_value(registered["user"].clone()).unwrap();
    let file = app.dir.path().join("secrets.json");
    let secrets: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let old_key = secrets["jwtSigningKey"].as_str().unwrap().to_owned();
    let rotated = json!({"jwtSigningKey": "the key after the rotation, longer than 32 characters",
                         "jwtPreviousSigningKeys": old_key});
    std::fs::write(&file, serde_json::to_vec(&rotated).unwrap()).unwrap();

    // The second instance starts after the rotation and signs with the new key.
    let other = paddock_api::state::AppState::new(app.ports.clone(), app.settings.clone());
    let signer = other.access_tokens().await.unwrap();
    let signed_in = registered["accessToken"].as_str().unwrap();
    let payload = signed_in.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
            .unwrap(),
    )
    .unwrap();
    let (token, _) = signer.issue(
        &user,
        claims["sid"].as_str().unwrap(),
        app.ports.clock.now(),
    );
    // The first instance read the keys when the driver registered; within the bound it does
    // not read them again for an unknown key.
    tokio::time::sleep(paddock_api::state::UNKNOWN_KEY_REREAD).await;
    let res = app.get_auth("/v1/sessions", &token).await;
    let (status, body) = envelope(res).await;
    assert_eq!(
        status, 200,
        "the first instance refused the second's token: {body}"
    );
}

async fn names_that_pose_as_someone_else_are_refused(backend: Backend) {
    let (app, _) = spawn_configured(backend, |_| {}).await;
    for name in ["Max\u{200B}", "\u{202E}xaM", "Ma\u{200D}x"] {
        let res = app
            .post_json(
                "/v1/auth/register",
                &json!({"email": "pose@example.com", "password": PASSWORD, "displayName": name}),
            )
            .await;
        let (status, body) = envelope(res).await;
        assert_eq!(status, 400, "{name:?}: {body}");
        assert!(body["error"].as_str().unwrap().contains("displayName"));
    }
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [
        password_change_needs_the_current_password_and_signs_out_the_rest,
        guessing_one_account_from_many_addresses_is_limited_but_not_its_owner,
        login_caps_the_password_length,
        an_address_over_its_cap_is_refused_before_its_body_is_read,
        probing_emails_through_registration_is_bounded_per_address,
        a_hashing_flood_is_answered_503_and_loses_nothing,
        a_rotated_signing_key_keeps_earlier_tokens_valid_until_dropped,
        a_rotation_read_by_one_instance_signs_no_one_out_at_another,
        names_that_pose_as_someone_else_are_refused,
    ]
);

/// An OpenID Connect provider on loopback whose discovery names `token_endpoint`; answers its
/// issuer.
async fn discovery_naming(token_endpoint: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let document = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": token_endpoint.replace("{issuer}", &issuer),
        "jwks_uri": format!("{issuer}/jwks"),
        "id_token_signing_alg_values_supported": ["RS256", "HS256", "none"],
    });
    let routes = axum::Router::new().route(
        "/.well-known/openid-configuration",
        axum::routing::get(move || async move { axum::Json(document) }),
    );
    tokio::spawn(async move { axum::serve(listener, routes).await });
    issuer
}

/// A provider's discovery naming an endpoint in plain http off loopback (where a code, the
/// client secret or the tokens would travel in clear) is refused, and no driver is sent to it.
#[tokio::test(flavor = "multi_thread")]
async fn discovered_endpoints_in_clear_are_refused() {
    for (token_endpoint, expected) in [("{issuer}/token", 303), ("http://idp.example/token", 400)] {
        let issuer = discovery_naming(token_endpoint).await;
        let (app, _) = spawn_configured(Backend::Embedded, |s| {
            s.auth.providers = vec![paddock_core::config::ProviderConfig {
                name: "corp".into(),
                kind: paddock_core::config::ProviderKind::Oidc,
                client_id: "paddock".into(),
                client_secret: Some("client-secret".into()),
                issuer: Some(issuer.clone()),
                scopes: vec!["openid".into()],
                trust_email_verified: false,
            }];
        })
        .await;
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        let res = app
            .get(&format!(
                "/v1/auth/login/corp?redirect_uri=http://127.0.0.1:5000/callback&code_challenge={challenge}"
            ))
            .await;
        assert_eq!(res.status().as_u16(), expected, "{token_endpoint}");
        if expected == 303 {
            let to = res.headers()["location"].to_str().unwrap();
            assert!(to.starts_with(&format!("{issuer}/auth?")), "{to}");
        }
    }
}
