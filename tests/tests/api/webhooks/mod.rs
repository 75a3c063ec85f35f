//! Webhooks: subscriptions and their rules, signed delivery to a receiver on loopback (the
//! signatures checked by the Standard Webhooks reference library), retries through a failing
//! receiver, secret rotation, the address rules, `board.passed`, and the account's export and
//! deletion; on both backends and through the functions.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_core::ports::ManualClock;
use paddock_tests::webhook_receiver::{Received, Receiver};
use paddock_tests::{Backend, TestApp, envelope, session_body};
use reqwest::Method;
use serde_json::{Value, json};

mod delivery;
use delivery::*;

fn event_type(r: &Received) -> String {
    r.event_type()
}

/// For each message, the indexes of `secrets` it verifies under, by the reference library.
fn verify(secrets: &[&str], messages: &[Received]) -> Vec<Vec<usize>> {
    let tools = std::env::var_os("PADDOCK_TOOLS_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/paddock-tools"),
        PathBuf::from,
    );
    let python = tools.join("venv/bin/python");
    let script = paddock_tests::binaries::workspace_root().join("tests/webhooks/verify.py");
    let job = json!({
        "secrets": secrets,
        "messages": messages.iter().map(|m| json!({"headers": m.headers, "body": m.body})).collect::<Vec<_>>(),
    });
    let mut child = std::process::Command::new(&python)
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{python:?}: {e} (tests/run.sh installs standardwebhooks into the venv)")
        });
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "verify.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// DELETE `path`; answers the status (a 204 has no envelope).
async fn delete(app: &TestApp, path: &str, token: &str) -> u16 {
    app.client
        .delete(format!("{}{path}", app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Makes a subscription; answers (id, secret).
async fn subscribe(app: &TestApp, token: &str, url: &str, types: &[&str]) -> (String, String) {
    let (status, made) = app
        .call(
            Method::POST,
            "/v1/webhooks",
            token,
            Some(json!({"url": url, "eventTypes": types, "description": "test receiver"})),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    (
        made["data"]["id"].as_str().unwrap().to_owned(),
        made["data"]["secret"].as_str().unwrap().to_owned(),
    )
}

/// Uploads a session of one lap; answers its id.
async fn upload(app: &TestApp, token: &str, csid: &str, lap_ms: i64) -> String {
    upload_in(app, token, csid, lap_ms, "Porsche 992 GT3 R").await
}

/// As [`upload`], the lap driven in `car`.
async fn upload_in(app: &TestApp, token: &str, csid: &str, lap_ms: i64, car: &str) -> String {
    let mut body = session_body(csid, "2026-11-01T10:00:00Z", &[(lap_ms, true, 0.95)], 0);
    body["VehicleName"] = json!(car);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert!(status == 201 || status == 200, "{res}");
    res["data"]["sessionId"].as_str().unwrap().to_owned()
}

async fn submit(app: &TestApp, token: &str, session: &str, lap_ms: i64) -> Value {
    let body = json!({"SessionId": session, "LapTimeMs": lap_ms, "QualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &body, token)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{res}");
    res
}

fn error_of(body: &Value) -> String {
    body["error"].as_str().unwrap_or_default().to_owned()
}

async fn subscriptions_follow_their_rules(app: TestApp) {
    let (token, _) = app.driver("Hana").await;
    let receiver = Receiver::start().await;
    let (id, secret) = subscribe(
        &app,
        &token,
        &receiver.url,
        &["board.passed", "leaderboard.best"],
    )
    .await;
    assert!(secret.starts_with("whsec_"), "{secret}");

    // Listed and read without the secret; the types in documented order.
    let (status, list) = app.call(Method::GET, "/v1/webhooks", &token, None).await;
    assert_eq!(status, 200);
    assert_eq!(list["data"]["items"].as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains(&secret));
    let (status, one) = app
        .call(Method::GET, &format!("/v1/webhooks/{id}"), &token, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        one["data"]["eventTypes"],
        json!(["leaderboard.best", "board.passed"])
    );
    assert_eq!(one["data"]["enabled"], true);

    // Changed: paused, other types; a bad field changes nothing.
    let (status, changed) = app
        .call(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &token,
            Some(json!({"enabled": false, "eventTypes": ["session.uploaded"]})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["data"]["enabled"], false);
    assert_eq!(changed["data"]["eventTypes"], json!(["session.uploaded"]));
    let (status, bad) = app
        .call(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &token,
            Some(json!({"eventTypes": ["lap.done"]})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        error_of(&bad).contains("eventTypes") && error_of(&bad).contains("lap.done"),
        "{bad}"
    );

    // Bad input names the field and the rule.
    for (body, field, rule) in [
        (
            json!({"eventTypes": ["board.passed"]}),
            "url",
            "is required",
        ),
        (json!({"url": receiver.url}), "eventTypes", "is required"),
        (
            json!({"url": receiver.url, "eventTypes": []}),
            "eventTypes",
            "at least one",
        ),
        (
            json!({"url": receiver.url, "eventTypes": ["nope"]}),
            "eventTypes",
            "is not one of",
        ),
        (
            json!({"url": "not a url", "eventTypes": ["board.passed"]}),
            "url",
            "absolute URL",
        ),
        (
            json!({"url": "ftp://example.com/x", "eventTypes": ["board.passed"]}),
            "url",
            "https",
        ),
        (
            json!({"url": receiver.url, "eventTypes": ["board.passed"], "description": "a\u{7}b"}),
            "description",
            "control",
        ),
    ] {
        let (status, refused) = app
            .call(Method::POST, "/v1/webhooks", &token, Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{body}: {refused}");
        let error = error_of(&refused);
        assert!(
            error.contains(field) && error.contains(rule),
            "{body}: {error}"
        );
    }

    // Rotation with a malformed grace period is refused.
    for grace in [json!(-1), json!(73), json!("24")] {
        let (status, refused) = app
            .call(
                Method::POST,
                &format!("/v1/webhooks/{id}/rotate-secret"),
                &token,
                Some(json!({"graceHours": grace})),
            )
            .await;
        assert_eq!(status, 400, "{grace}: {refused}");
        assert!(error_of(&refused).contains("graceHours"), "{refused}");
    }

    // At most ten per driver.
    for _ in 1..10 {
        subscribe(&app, &token, &receiver.url, &["board.passed"]).await;
    }
    let (status, refused) = app
        .call(
            Method::POST,
            "/v1/webhooks",
            &token,
            Some(json!({"url": receiver.url, "eventTypes": ["board.passed"]})),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert!(error_of(&refused).contains("at most 10"), "{refused}");

    // Another driver sees none of them.
    let (other, _) = app.driver("Ivo").await;
    let (status, _) = app
        .call(Method::GET, &format!("/v1/webhooks/{id}"), &other, None)
        .await;
    assert_eq!(status, 404);
    let status = delete(&app, &format!("/v1/webhooks/{id}"), &other).await;
    assert_eq!(status, 404);

    // A personal access token needs the `webhooks` scope.
    let token_with = |scopes: Value| {
        let (app, token) = (&app, &token);
        async move {
            let (status, made) = app
                .call(
                    Method::POST,
                    "/v1/tokens",
                    token,
                    Some(json!({"name": "bot", "scopes": scopes})),
                )
                .await;
            assert_eq!(status, 201, "{made}");
            made["data"]["token"].as_str().unwrap().to_owned()
        }
    };
    let reader = token_with(json!(["sessions:read"])).await;
    let (status, refused) = app.call(Method::GET, "/v1/webhooks", &reader, None).await;
    assert_eq!(status, 403);
    assert!(error_of(&refused).contains("`webhooks`"), "{refused}");
    let hooks = token_with(json!(["webhooks"])).await;
    let (status, list) = app.call(Method::GET, "/v1/webhooks", &hooks, None).await;
    assert_eq!(status, 200);
    assert_eq!(list["data"]["items"].as_array().unwrap().len(), 10);

    // Deleted: gone, and deleting again is a 404.
    let status = delete(&app, &format!("/v1/webhooks/{id}"), &hooks).await;
    assert_eq!(status, 204);
    let (status, _) = app
        .call(Method::GET, &format!("/v1/webhooks/{id}"), &token, None)
        .await;
    assert_eq!(status, 404);
    let status = delete(&app, &format!("/v1/webhooks/{id}"), &token).await;
    assert_eq!(status, 404);
}

async fn addresses_that_are_not_public_are_refused_naming_the_rule(app: TestApp) {
    let (token, _) = app.driver("Jun").await;
    for (url, rule) in [
        ("https://10.0.0.8/hook", "private address (10.0.0.8)"),
        ("https://192.168.1.1/hook", "private address"),
        ("https://172.20.0.1/hook", "private address"),
        ("https://[fd12::1]/hook", "private address"),
        (
            "https://100.64.1.1/hook",
            "shared (carrier-grade NAT) address",
        ),
        (
            "https://169.254.169.254/latest/meta-data",
            "cloud metadata address",
        ),
        ("https://[fd00:ec2::254]/", "cloud metadata address"),
        (
            "https://[::ffff:169.254.169.254]/",
            "cloud metadata address",
        ),
        ("https://[64:ff9b::a9fe:a9fe]/", "cloud metadata address"),
        ("https://[::ffff:10.0.0.1]/", "private address"),
        ("https://169.254.10.10/", "link-local address"),
        ("https://[fe80::1]/", "link-local address"),
        ("https://224.0.0.1/", "multicast or broadcast address"),
        ("https://[ff02::1]/", "multicast or broadcast address"),
        ("https://0.0.0.0/", "unspecified address"),
        ("https://[::]/", "unspecified address"),
        ("https://192.0.2.10/", "reserved or non-public address"),
        (
            "https://user:secret@example.com/hook",
            "must not contain a user name or password",
        ),
        // Plain http reaches loopback only, and only under the local-test setting.
        ("http://8.8.8.8/hook", "must use https (8.8.8.8)"),
        ("https://no-such-host.invalid/hook", "does not resolve"),
    ] {
        let (status, refused) = app
            .call(
                Method::POST,
                "/v1/webhooks",
                &token,
                Some(json!({"url": url, "eventTypes": ["board.passed"]})),
            )
            .await;
        assert_eq!(status, 400, "{url}: {refused}");
        let error = error_of(&refused);
        assert!(
            error.starts_with("url: ") && error.contains(rule),
            "{url}: {error}"
        );
    }
    let (status, list) = app.call(Method::GET, "/v1/webhooks", &token, None).await;
    assert_eq!(status, 200);
    assert_eq!(list["data"]["items"], json!([]));
}

/// Without the local-test setting, loopback and plain http are refused like any other
/// non-public address.
async fn loopback_needs_the_local_test_setting(backend: Backend) {
    let (app, _) = paddock_tests::spawn_configured(backend, |s| {
        s.webhooks_allow_loopback_http = false;
    })
    .await;
    let (token, _) = app.driver("Kai").await;
    let receiver = Receiver::start().await;
    let https_loopback = receiver.url.replace("http://", "https://");
    for (url, rule) in [
        (receiver.url.as_str(), "must use https"),
        (https_loopback.as_str(), "loopback address (127.0.0.1)"),
        ("https://localhost/hook", "loopback address"),
        ("https://[::1]/hook", "loopback address (::1)"),
        ("https://[::ffff:127.0.0.1]/hook", "loopback address"),
    ] {
        let (status, refused) = app
            .call(
                Method::POST,
                "/v1/webhooks",
                &token,
                Some(json!({"url": url, "eventTypes": ["board.passed"]})),
            )
            .await;
        assert_eq!(status, 400, "{url}: {refused}");
        assert!(error_of(&refused).contains(rule), "{url}: {refused}");
    }
}

/// A new best's event handled again after the window's marker is gone (a late redelivery)
/// tells the passed driver nothing more: the consumer's processed-event marker stops it.
async fn a_redelivered_new_best_tells_nobody_twice(backend: Backend) {
    let (app, _) = paddock_tests::spawn_on(backend).await;
    let receiver = Receiver::start().await;
    let (ana, ana_id) = app.driver("Ana").await;
    let (cy, cy_id) = app.driver("Cy").await;
    subscribe(&app, &ana, &receiver.url, &["board.passed"]).await;
    let s = upload(&app, &ana, "ana-1", 90_000).await;
    submit(&app, &ana, &s, 90_000).await;
    // In another car: Cy passes Ana on the track's board only.
    let cy_session = upload_in(&app, &cy, "cy-1", 89_000, "BMW M4 GT3").await;
    submit(&app, &cy, &cy_session, 89_000).await;
    receiver
        .wait_for(Duration::from_secs(20), "board.passed", |all| {
            !all.is_empty()
        })
        .await;

    // The submission's event as the queue would bring it again (the clock stands still, so
    // in the same window): its id from the consumer's marker, where the lap landed from Cy's
    // rank row on the track's board.
    let (marker_pk, _) = keys_of(&app, |pk, _| pk.starts_with("PROCESSED#webhooks#"))
        .await
        .expect("the consumer's marker");
    let id = marker_pk.trim_start_matches("PROCESSED#webhooks#");
    let (board, rank_key) = keys_of(&app, |pk, sk| {
        pk.starts_with("BOARD#")
            && !pk.contains("#CAR#")
            && sk.starts_with("RANK#")
            && sk.ends_with(&cy_id)
    })
    .await
    .expect("Cy's rank row");
    let event = json!({
        "id": id,
        "userId": cy_id,
        "occurredAt": paddock_core::ports::clock::rfc3339(app.ports.clock.now()),
        "kind": "leaderboard.submit",
        "payload": {
            "trackId": board.trim_start_matches("BOARD#"), "sessionId": cy_session,
            "lapTimeMs": 89_000, "previousBestMs": null, "improved": true, "rank": 1,
            "gameId": "acc", "trackName": "Spa-Francorchamps", "trackLayout": "",
            "vehicleName": "",
            "passing": {"rankKey": rank_key, "untilKey": "RANK#~", "displayName": "Cy"},
        },
    })
    .to_string();
    let hook = format!("HOOK#{ana_id}");
    let is_window_marker = |pk: &str, sk: &str| pk == hook && sk.starts_with("PASSED#");
    let (pk, sk) = keys_of(&app, is_window_marker)
        .await
        .expect("Ana's window marker");
    app.ports
        .items
        .delete(
            paddock_core::tables::Table::Activity,
            &paddock_core::ports::items::Key::new(pk, sk),
            None,
        )
        .await
        .unwrap();
    let processor = paddock_core::workers::processor(paddock_core::queues::QueueName::Webhooks);
    paddock_core::workers::handle_body(&event, &app.ports, &processor)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(receiver.all().len(), 1, "{:#?}", receiver.all());
    assert!(
        keys_of(&app, is_window_marker).await.is_none(),
        "a redelivery wrote a marker"
    );

    // Without the consumer's marker the same event tells Ana again (what the marker prevents).
    app.ports
        .items
        .delete(
            paddock_core::tables::Table::Activity,
            &paddock_core::ports::items::Key::new(marker_pk.clone(), "MARKER"),
            None,
        )
        .await
        .unwrap();
    paddock_core::workers::handle_body(&event, &app.ports, &processor)
        .await
        .unwrap();
    receiver
        .wait_for(Duration::from_secs(20), "a second board.passed", |all| {
            all.len() == 2
        })
        .await;
}

/// A subscription whose deliveries all fail for three days is turned off, and a feed entry
/// tells the driver; turning it back on clears the failure.
async fn a_subscription_failing_for_days_is_disabled_and_the_driver_told(
    app: TestApp,
    clock: Arc<ManualClock>,
) {
    let email = format!("{}@example.com", paddock_tests::unique("ola"));
    let password = "correct horse battery";
    let registered = app.register(&email, password).await;
    let token = registered["accessToken"].as_str().unwrap().to_owned();
    let receiver = Receiver::start().await;
    receiver.set_failing(true);
    let (id, _) = subscribe(&app, &token, &receiver.url, &["session.uploaded"]).await;
    upload(&app, &token, "ola-1", 96_000).await;
    receiver
        .wait_for(Duration::from_secs(20), "a failed attempt", |all| {
            !all.is_empty()
        })
        .await;
    // The failure state is written after the attempt's answer.
    subscription_when(
        &app,
        &token,
        &id,
        Duration::from_secs(10),
        "a failure recorded",
        |one| one["data"]["failingSince"].is_string(),
    )
    .await;

    // Three days later the next attempt fails too: the subscription is turned off.
    clock.advance(time::Duration::days(3) + time::Duration::minutes(1));
    let (status, signed_in) = envelope(
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": email, "password": password}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{signed_in}");
    let token = signed_in["data"]["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let until = Instant::now() + Duration::from_secs(30);
    let disabled = loop {
        let (_, one) = app
            .call(Method::GET, &format!("/v1/webhooks/{id}"), &token, None)
            .await;
        if one["data"]["enabled"] == false {
            break one;
        }
        assert!(Instant::now() < until, "not disabled: {one}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let reason = disabled["data"]["disabledReason"].as_str().unwrap();
    assert!(reason.contains("for 3 days"), "{reason}");
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, feed) = app.call(Method::GET, "/v1/feed", &token, None).await;
        let told = feed["data"]["items"].as_array().unwrap().iter().any(|e| {
            e["kind"] == "webhook" && e["subtitle"].as_str().unwrap().contains(&receiver.url)
        });
        if told {
            break;
        }
        assert!(Instant::now() < until, "no feed entry: {feed}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Turned back on: the failure state is cleared.
    let (status, resumed) = app
        .call(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &token,
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["data"]["disabledReason"], Value::Null);
    assert_eq!(resumed["data"]["failingSince"], Value::Null);
}

/// A receiver on loopback that takes every post with 204 and confirms nothing: any server
/// that accepts posts, aimed at by a driver who does not run it.
async fn accepting_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(|| async { axum::http::StatusCode::NO_CONTENT }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/hook")
}

/// A port on loopback where nothing listens.
async fn closed_port_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}/hook")
}

async fn a_receiver_confirms_before_anything_is_sent_and_checks_are_limited(app: TestApp) {
    let (token, _) = app.driver("Vera").await;
    let create = |url: String| {
        let (app, token) = (&app, &token);
        async move {
            app.call(
                Method::POST,
                "/v1/webhooks",
                token,
                Some(json!({"url": url, "eventTypes": ["session.uploaded"]})),
            )
            .await
        }
    };
    // A server that takes posts but never saw the challenge, and a closed port: both refused
    // with 422 naming the url and the rule, and nothing is kept.
    let (status, refused) = create(accepting_server().await).await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        error_of(&refused).starts_with("url:") && error_of(&refused).contains("data.challenge"),
        "{refused}"
    );
    let (status, refused) = create(closed_port_url().await).await;
    assert_eq!(status, 422, "{refused}");
    assert!(error_of(&refused).contains("did not answer"), "{refused}");
    let (_, list) = app.call(Method::GET, "/v1/webhooks", &token, None).await;
    assert_eq!(list["data"]["items"], json!([]));

    // A receiver that echoes the challenge is subscribed.
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&app, &token, &receiver.url, &["session.uploaded"]).await;

    // A new URL must confirm too; the refused change leaves the subscription as it was.
    let (status, refused) = app
        .call(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &token,
            Some(json!({"url": accepting_server().await})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    let (_, one) = app
        .call(Method::GET, &format!("/v1/webhooks/{id}"), &token, None)
        .await;
    assert_eq!(one["data"]["url"], receiver.url.as_str());

    // Four checks so far (two refused creations, a creation, a refused change); tests count
    // as checks too, and the hour's twentieth is the last let through.
    let mut accepted = 0;
    let limited = loop {
        let res = app
            .client
            .post(format!("{}/v1/webhooks/{id}/test", app.address))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        if res.status() == 429 {
            break res;
        }
        assert_eq!(res.status(), 202);
        accepted += 1;
        assert!(accepted <= 16, "no limit on tests");
    };
    assert_eq!(accepted, 16);
    let retry_after: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry_after), "{retry_after}");
    let (status, _) = create(receiver.url.clone()).await;
    assert_eq!(status, 429, "creations count against the same limit");
    receiver
        .wait_for(Duration::from_secs(30), "the 16 tests", |all| {
            all.len() == 16
        })
        .await;
}

async fn a_password_change_pauses_subscriptions_until_the_owner_resumes(app: TestApp) {
    let email = format!("{}@example.com", paddock_tests::unique("wren"));
    let registered = app.register(&email, "correct horse battery").await;
    let token = registered["accessToken"].as_str().unwrap().to_owned();
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&app, &token, &receiver.url, &["session.uploaded"]).await;

    let (status, changed) = app
        .call(
            Method::POST,
            "/v1/auth/password",
            &token,
            Some(json!({"currentPassword": "correct horse battery",
                    "newPassword": "a new battery staple"})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    let (_, paused) = app
        .call(Method::GET, &format!("/v1/webhooks/{id}"), &token, None)
        .await;
    assert_eq!(paused["data"]["enabled"], false, "{paused}");
    assert!(
        paused["data"]["disabledReason"]
            .as_str()
            .unwrap()
            .contains("password changed"),
        "{paused}"
    );
    upload(&app, &token, "wren-1", 95_000).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(receiver.all().is_empty(), "{:#?}", receiver.all());

    // Resumed by the owner: the receiver confirms again, and deliveries follow.
    let (status, resumed) = app
        .call(
            Method::PATCH,
            &format!("/v1/webhooks/{id}"),
            &token,
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["data"]["disabledReason"], Value::Null);
    upload(&app, &token, "wren-2", 94_000).await;
    receiver
        .wait_for(
            Duration::from_secs(20),
            "the upload after resuming",
            |all| all.len() == 1,
        )
        .await;
}

/// Sends 40 creations to `path` at once (the body of the i-th from `body`); answers how many
/// were made, after checking each was made or refused as a cap or a lost race is, and that
/// the list at `path` holds exactly those made.
async fn create_at_once(
    app: &TestApp,
    token: &str,
    path: &str,
    body: impl Fn(usize) -> Value,
) -> usize {
    let answers = futures::future::join_all(
        (0..40).map(|i| app.call(Method::POST, path, token, Some(body(i)))),
    )
    .await;
    for (status, answer) in &answers {
        assert!([201, 409, 503].contains(status), "{status}: {answer}");
    }
    let made = answers.iter().filter(|(status, _)| *status == 201).count();
    let (_, list) = app.call(Method::GET, path, token, None).await;
    assert_eq!(list["data"]["items"].as_array().unwrap().len(), made);
    made
}

/// Creations sent at once: the caps hold (10 subscriptions, 20 live personal access tokens).
async fn creations_sent_at_once_hold_the_caps(backend: paddock_tests::Backend) {
    let mut t = paddock_tests::ports(backend).await;
    t.settings.webhook_checks_per_hour = 1000;
    let app = paddock_tests::spawn_with(t.settings, t.ports, t.dir).await;
    let (token, _) = app.driver("Xan").await;
    let receiver = Receiver::start().await;
    let hooks = create_at_once(
        &app,
        &token,
        "/v1/webhooks",
        |_| json!({"url": receiver.url, "eventTypes": ["board.passed"]}),
    )
    .await;
    assert!((1..=10).contains(&hooks), "{hooks} subscriptions");
    let tokens = create_at_once(
        &app,
        &token,
        "/v1/tokens",
        |i| json!({"name": format!("bot {i}"), "scopes": ["sessions:read"]}),
    )
    .await;
    assert!((1..=20).contains(&tokens), "{tokens} tokens");
    println!("40 creations at once: {hooks} subscriptions made, {tokens} tokens made");
}

paddock_tests::on_both_backends!(
    plain: [
        subscriptions_follow_their_rules,
        addresses_that_are_not_public_are_refused_naming_the_rule,
        events_arrive_signed_and_once_through_a_failing_receiver,
        a_rotated_secret_signs_beside_the_old_during_its_grace,
        nothing_arrives_for_a_deleted_subscription_or_account,
        a_passed_driver_hears_of_it_once_per_window,
        a_receiver_confirms_before_anything_is_sent_and_checks_are_limited,
        a_password_change_pauses_subscriptions_until_the_owner_resumes,
    ],
    clocked: [a_subscription_failing_for_days_is_disabled_and_the_driver_told],
    ports: [
        loopback_needs_the_local_test_setting,
        a_redelivered_new_best_tells_nobody_twice,
        creations_sent_at_once_hold_the_caps,
    ],
);
