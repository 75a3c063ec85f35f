//! Identity: email and password, access tokens, rotating refresh tokens, exchange codes,
//! rate limits and the sign-in start — in local mode and against DynamoDB Local.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use paddock_core::hashing::s256;
use paddock_core::identity::exchange_codes;
use paddock_tests::{Backend, TestApp, envelope};
use serde_json::{Value, json};
use time::Duration;

async fn register_and_login(app: TestApp) {
    let data = app
        .register("  Ana@Example.com ", "correct horse battery")
        .await;
    assert_eq!(data["tokenType"], "Bearer");
    assert_eq!(data["expiresIn"], 3600);
    assert_eq!(data["user"]["email"], "Ana@Example.com");
    assert_eq!(data["user"]["displayName"], "Test Driver");
    assert!(data["user"]["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        URL_SAFE_NO_PAD
            .decode(data["refreshToken"].as_str().unwrap())
            .unwrap()
            .len(),
        32
    );

    let res = app.post_json("/v1/auth/register", &json!({"Email": "ana@EXAMPLE.com", "Password": "another password", "DisplayName": "Copy"})).await;
    let (status, body) = envelope(res).await;
    assert_eq!(
        status, 409,
        "one account per email, case-insensitively: {body}"
    );

    let res = app
        .post_json(
            "/v1/auth/register",
            &json!({"email": "nope", "password": "short"}),
        )
        .await;
    let (status, body) = envelope(res).await;
    assert_eq!(status, 400);
    let msg = body["error"].as_str().unwrap();
    assert!(
        msg.contains("email:") && msg.contains("password:") && msg.contains("displayName:"),
        "{msg}"
    );

    let res = app
        .post_json(
            "/v1/auth/login/email",
            &json!({"email": "ANA@example.com", "password": "correct horse battery"}),
        )
        .await;
    assert_eq!(res.headers()["cache-control"], "no-store");
    let (status, body) = envelope(res).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["user"]["id"], data["user"]["id"]);

    let wrong = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": "ana@example.com", "password": "wrong password"}),
        )
        .await,
    )
    .await;
    let unknown = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": "ghost@example.com", "password": "wrong password"}),
        )
        .await,
    )
    .await;
    assert_eq!((wrong.0, unknown.0), (401, 401));
    assert_eq!(
        wrong.1["error"], unknown.1["error"],
        "the answer does not tell whether the account exists"
    );
}

async fn eleventh_login_attempt_is_limited(app: TestApp) {
    app.register("rate@example.com", "correct horse battery")
        .await;
    for i in 0..10 {
        let res = app
            .post_json(
                "/v1/auth/login/email",
                &json!({"email": "rate@example.com", "password": format!("wrong {i} password")}),
            )
            .await;
        assert_eq!(res.status(), 401, "attempt {}", i + 1);
    }
    let res = app
        .post_json(
            "/v1/auth/login/email",
            &json!({"email": "rate@example.com", "password": "correct horse battery"}),
        )
        .await;
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry_after));
    assert_eq!(envelope(res).await.0, 429);
    // Another account from the same address is still allowed.
    app.register("other@example.com", "correct horse battery")
        .await;
    let res = app
        .post_json(
            "/v1/auth/login/email",
            &json!({"email": "other@example.com", "password": "correct horse battery"}),
        )
        .await;
    assert_eq!(res.status(), 200);
}

async fn refresh(app: &TestApp, token: &str) -> (u16, Value) {
    envelope(
        app.post_json("/v1/auth/refresh", &json!({"refreshToken": token}))
            .await,
    )
    .await
}

async fn refresh_rotation_replay_and_revocation(app: TestApp) {
    let first = app
        .register("rot@example.com", "correct horse battery")
        .await;
    let (r0, a0) = (
        first["refreshToken"].as_str().unwrap(),
        first["accessToken"].as_str().unwrap(),
    );
    // active → revoked, with a new token issued (rotation)
    let (status, body) = refresh(&app, r0).await;
    assert_eq!(status, 200, "{body}");
    let r1 = body["data"]["refreshToken"].as_str().unwrap().to_owned();
    let a1 = body["data"]["accessToken"].as_str().unwrap().to_owned();
    assert_ne!(r1, r0);
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", &a1).await)
            .await
            .0,
        200
    );
    // revoked → stays revoked: 401, and the replay revokes the whole family
    assert_eq!(refresh(&app, r0).await.0, 401);
    assert_eq!(
        refresh(&app, &r1).await.0,
        401,
        "the family's newest token is revoked too"
    );
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", &a1).await)
            .await
            .0,
        401,
        "and its access tokens"
    );
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", a0).await)
            .await
            .0,
        401
    );
    // A new sign-in is a new family, unaffected.
    let login = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": "rot@example.com", "password": "correct horse battery"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        refresh(&app, login.1["data"]["refreshToken"].as_str().unwrap())
            .await
            .0,
        200
    );
    assert_eq!(refresh(&app, "not-a-token").await.0, 401);
    let (status, body) = envelope(app.post_json("/v1/auth/refresh", &json!({})).await).await;
    assert_eq!(status, 400, "{body}");
}

async fn concurrent_refreshes_have_one_winner(app: TestApp) {
    let first = app
        .register("race@example.com", "correct horse battery")
        .await;
    let token = first["refreshToken"].as_str().unwrap().to_owned();
    let attempts = (0..8).map(|_| {
        let (client, url, token) = (
            app.client.clone(),
            format!("{}/v1/auth/refresh", app.address),
            token.clone(),
        );
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"refreshToken": token}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    });
    let statuses: Vec<u16> = futures::future::join_all(attempts)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 401).count(),
        7,
        "{statuses:?}"
    );
}

async fn logout_revokes_and_validate_answers_401(app: TestApp) {
    let data = app
        .register("out@example.com", "correct horse battery")
        .await;
    let (refresh_token, access) = (
        data["refreshToken"].as_str().unwrap(),
        data["accessToken"].as_str().unwrap(),
    );
    let (status, body) = envelope(app.get_auth("/v1/auth/validate", access).await).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["valid"], true);
    assert_eq!(body["data"]["userId"], data["user"]["id"]);
    let (status, _) = envelope(
        app.post_json("/v1/auth/logout", &json!({"refreshToken": refresh_token}))
            .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", access).await)
            .await
            .0,
        401,
        "right after logout"
    );
    assert_eq!(
        refresh(&app, refresh_token).await.0,
        401,
        "active → revoked by logout"
    );

    // Logout with the bearer token alone.
    let data = app
        .register("out2@example.com", "correct horse battery")
        .await;
    let access = data["accessToken"].as_str().unwrap();
    let res = app
        .client
        .post(format!("{}/v1/auth/logout", app.address))
        .bearer_auth(access)
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 200);
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", access).await)
            .await
            .0,
        401
    );
    assert_eq!(
        envelope(app.post_json("/v1/auth/logout", &json!({})).await)
            .await
            .0,
        401
    );
}

fn forge(header: Value, claims: Value, key: &[u8]) -> String {
    use jsonwebtoken::{EncodingKey, Header};
    let mut h: Header = serde_json::from_value(header).unwrap();
    h.typ = Some("JWT".into());
    jsonwebtoken::encode(&h, &claims, &EncodingKey::from_secret(key)).unwrap()
}

async fn access_tokens_are_checked_strictly(
    app: TestApp,
    clock: std::sync::Arc<paddock_core::ports::ManualClock>,
) {
    let data = app
        .register("jwt@example.com", "correct horse battery")
        .await;
    let access = data["accessToken"].as_str().unwrap();
    let parts: Vec<&str> = access.split('.').collect();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    for claim in [
        "sub",
        "email",
        "display_name",
        "avatar_url",
        "jti",
        "iss",
        "aud",
        "exp",
        "iat",
        "sid",
    ] {
        assert!(
            claims.get(claim).is_some(),
            "claim {claim} missing: {claims}"
        );
    }
    assert_eq!(claims["iss"], "paddock");
    assert_eq!(claims["aud"], "paddock-desktop");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );

    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
        parts[1]
    );
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(
            claims
                .to_string()
                .replace("paddock-desktop", "other")
                .as_bytes()
        ),
        parts[2]
    );
    let wrong_key = forge(
        header.clone(),
        claims.clone(),
        b"an attacker's key of sufficient length!!",
    );
    let mut other_kid = header.clone();
    other_kid["kid"] = json!("unknown");
    let unknown_kid = forge(
        other_kid,
        claims.clone(),
        b"whatever key of sufficient length here!!",
    );
    // The genuine token is verified first, so the forgeries that reuse its signature meet a
    // process that has already accepted that signature once.
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", access).await)
            .await
            .0,
        200
    );
    for (name, token) in [
        ("none", unsigned),
        ("tampered", tampered),
        ("wrong key", wrong_key),
        ("unknown kid", unknown_kid),
        ("garbage", "a.b.c".into()),
    ] {
        assert_eq!(
            envelope(app.get_auth("/v1/auth/validate", &token).await)
                .await
                .0,
            401,
            "{name}"
        );
    }
    let res = app
        .client
        .get(format!("{}/v1/auth/validate", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 401, "no token");
    let res = app
        .client
        .get(format!("{}/v1/auth/validate", app.address))
        .header("authorization", format!("Basic {access}"))
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 401, "wrong scheme");

    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", access).await)
            .await
            .0,
        200
    );
    clock.advance(Duration::minutes(61));
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", access).await)
            .await
            .0,
        401,
        "expired after 60 minutes"
    );
}

async fn exchange_codes_are_single_use(
    app: TestApp,
    clock: std::sync::Arc<paddock_core::ports::ManualClock>,
) {
    let data = app
        .register("code@example.com", "correct horse battery")
        .await;
    let user_id = &data["user"]["id"]
        .as_str()
        .unwrap()
        .parse::<paddock_core::ids::UserId>()
        .unwrap();
    let verifier = "v".repeat(43) + "-._~abc";
    let code = exchange_codes::issue(&app.ports, user_id, &s256(&verifier))
        .await
        .unwrap();
    // issued → deleted
    let (status, body) = app.exchange(&code, &verifier).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["user"]["id"], user_id.as_str());
    let access = body["data"]["accessToken"].as_str().unwrap();
    assert_eq!(
        envelope(app.get_auth("/v1/auth/validate", access).await)
            .await
            .0,
        200
    );
    // deleted → stays deleted: 400
    let (status, _) = app.exchange(&code, &verifier).await;
    assert_eq!(status, 400);
    // A wrong verifier is refused and uses the code up.
    let code = exchange_codes::issue(&app.ports, user_id, &s256(&verifier))
        .await
        .unwrap();
    let wrong = "w".repeat(50);
    assert_eq!(app.exchange(&code, &wrong).await.0, 400);
    assert_eq!(app.exchange(&code, &verifier).await.0, 400);
    // issued → expired after about 5 minutes
    let code = exchange_codes::issue(&app.ports, user_id, &s256(&verifier))
        .await
        .unwrap();
    clock.advance(Duration::seconds(301));
    assert_eq!(app.exchange(&code, &verifier).await.0, 400);
    assert_eq!(
        envelope(
            app.post_json("/v1/auth/exchange", &json!({"code": "x"}))
                .await
        )
        .await
        .0,
        400
    );
}

async fn sign_in_start_checks_its_inputs(app: TestApp) {
    let challenge = s256("some verifier that is long enough for pkce rules");
    let cases = [
        (format!("/v1/auth/login/google?redirect_uri=https://evil.example/callback&code_challenge={challenge}"), 400),
        (format!("/v1/auth/google?redirect_uri=https%3A%2F%2Fevil.example%2Fcallback&code_challenge={challenge}"), 400),
        ("/v1/auth/login/google?redirect_uri=http://127.0.0.1:5000/callback".into(), 400),
        (format!("/v1/auth/login/google?redirect_uri=http://127.0.0.1:5000/callback&code_challenge={challenge}&code_challenge_method=plain"), 400),
        ("/v1/auth/login/google?redirect_uri=http://127.0.0.1:5000/callback&code_challenge=short".into(), 400),
        (format!("/v1/auth/login/google?redirect_uri=http://127.0.0.1:5000/callback&code_challenge={challenge}"), 404),
        (format!("/v1/auth/google?redirect_uri=http://[::1]:5000/callback&code_challenge={challenge}"), 404),
    ];
    for (path, want) in cases {
        let (status, body) = envelope(app.get(&path).await).await;
        assert_eq!(status, want, "{path}: {body}");
    }
    let (_, body) = envelope(
        app.get("/v1/auth/login/google?redirect_uri=https://evil.example/callback")
            .await,
    )
    .await;
    let msg = body["error"].as_str().unwrap();
    assert!(
        msg.contains("redirect_uri") && msg.contains("code_challenge"),
        "{msg}"
    );
    let (status, _) = envelope(
        app.get("/v1/auth/callback/google?state=forged&code=x")
            .await,
    )
    .await;
    assert_eq!(status, 400, "a callback without the flow cookie is refused");
}

async fn no_raw_secret_is_readable_from_storage(app: TestApp, dump: impl AsyncFnOnce() -> String) {
    let data = app
        .register("secret@example.com", "correct horse battery")
        .await;
    let user_id = &data["user"]["id"]
        .as_str()
        .unwrap()
        .parse::<paddock_core::ids::UserId>()
        .unwrap();
    let (_, rotated) = refresh(&app, data["refreshToken"].as_str().unwrap()).await;
    let code = exchange_codes::issue(&app.ports, user_id, &s256(&"q".repeat(43)))
        .await
        .unwrap();
    let all = dump().await;
    assert!(all.contains(user_id.as_str()), "the dump sees the data");
    for secret in [
        data["refreshToken"].as_str().unwrap(),
        rotated["data"]["refreshToken"].as_str().unwrap(),
        code.as_str(),
        "correct horse battery",
    ] {
        assert!(!all.contains(secret), "{secret} readable from storage");
    }
}

/// The storage scan, on each backend's own storage: the SQLite files, or every DynamoDB table.
mod no_raw_secret_is_readable_from_storage {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn embedded() {
        let t = paddock_tests::ports(Backend::Embedded).await;
        let dir = t.dir.path().to_path_buf();
        let app = paddock_tests::spawn_with(t.settings, t.ports, t.dir).await;
        super::no_raw_secret_is_readable_from_storage(app, async move || {
            let mut all = String::new();
            for name in ["paddock.db", "paddock.db-wal"] {
                if let Ok(bytes) = std::fs::read(dir.join(name)) {
                    all.push_str(&String::from_utf8_lossy(&bytes));
                }
            }
            all
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn dynamodb_local() {
        let t = paddock_tests::ports(Backend::Aws).await;
        let prefix = t.settings.table_prefix.clone();
        let app = paddock_tests::spawn_with(t.settings, t.ports, t.dir).await;
        super::no_raw_secret_is_readable_from_storage(app, async move || {
            let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
            let mut all = String::new();
            for table in paddock_core::tables::Table::ALL {
                let mut pages = client
                    .scan()
                    .table_name(table.physical(&prefix))
                    .into_paginator()
                    .items()
                    .send();
                while let Some(item) = pages.next().await {
                    all.push_str(&format!("{:?}\n", item.unwrap()));
                }
            }
            all
        })
        .await;
    }
}

paddock_tests::on_both_backends!(
    plain: [
        register_and_login,
        eleventh_login_attempt_is_limited,
        refresh_rotation_replay_and_revocation,
        concurrent_refreshes_have_one_winner,
        logout_revokes_and_validate_answers_401,
        sign_in_start_checks_its_inputs,
    ],
    clocked: [access_tokens_are_checked_strictly, exchange_codes_are_single_use]
);
