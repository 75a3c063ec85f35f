//! Rate limits tried as an attacker would: a burst straddling a minute boundary, a
//! concurrent flood against the last places, many IPv6 addresses of one network, an
//! account locked on purpose by failures from elsewhere, and floods of feed posts and data
//! exports — on both backends.

use paddock_core::ports::ManualClock;
use paddock_core::rate_limits::{self, Limit, LimitError};
use paddock_tests::lambda_events::HttpRequest;
use paddock_tests::{Backend, TestApp, envelope, ports, session_body, spawn_configured};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;

const PASSWORD: &str = "correct horse battery";
const LAPS: &[(i64, bool, f64)] = &[(92_000, true, 0.9), (91_500, true, 0.95)];

/// Moves `clock` to the next instant whose seconds within the minute are `second`.
fn move_to_second(clock: &ManualClock, second: i64) {
    use paddock_core::ports::Clock;
    let now = clock.now();
    let into_minute = i64::from(now.second()) * 1000 + i64::from(now.millisecond());
    let target = second * 1000;
    let wait = (target - into_minute).rem_euclid(60_000);
    clock.advance(time::Duration::milliseconds(wait));
}

async fn thirty_uploads_at_59_then_the_31st_at_00_is_refused(
    app: TestApp,
    clock: Arc<ManualClock>,
) {
    let (token, _) = app.driver("Burst").await;
    let upload = async |n: usize| {
        let body = session_body(&format!("c{n}"), "2026-11-01T10:00:00Z", LAPS, 0);
        app.post_json_auth("/v1/sessions", &body, &token).await
    };
    move_to_second(&clock, 59);
    for n in 0..30 {
        let (status, body) = envelope(upload(n).await).await;
        assert_eq!(status, 201, "upload {n} at :59: {body}");
    }
    // A calendar minute would start afresh here; the trailing minute still holds 30.
    clock.advance(time::Duration::seconds(1));
    let res = upload(30).await;
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let (status, body) = envelope(res).await;
    assert_eq!(status, 429, "the 31st within a minute, at :00: {body}");
    // Exact: the first of the 30 leaves the window 59 s from now, not a moment before.
    assert_eq!(retry_after, 59);
    clock.advance(time::Duration::seconds(58));
    let res = upload(30).await;
    assert_eq!(res.headers()["retry-after"], "1");
    assert_eq!(envelope(res).await.0, 429, "one second early");
    clock.advance(time::Duration::seconds(1));
    let (status, body) = envelope(upload(30).await).await;
    assert_eq!(status, 201, "a full minute after the first: {body}");
}

async fn fifty_concurrent_hits_against_a_limit_of_30_admit_exactly_30(backend: Backend) {
    let t = ports(backend).await;
    let hits: Vec<_> = (0..50)
        .map(|_| {
            let ports = t.ports.clone();
            tokio::spawn(async move {
                rate_limits::hit(&ports, "upload", "flood", 60, &[Limit::new("n", 30)]).await
            })
        })
        .collect();
    let (mut admitted, mut refused) = (0, 0);
    for hit in hits {
        match hit.await.unwrap() {
            Ok(()) => admitted += 1,
            Err(LimitError::Limited(limited)) => {
                assert!((1..=60).contains(&limited.retry_after_secs));
                refused += 1;
            }
            Err(LimitError::Store(e)) => panic!("store failed: {e}"),
        }
    }
    assert_eq!((admitted, refused), (30, 20));
    // And the window stays full afterwards.
    assert!(
        rate_limits::hit(&t.ports, "upload", "flood", 60, &[Limit::new("n", 30)])
            .await
            .is_err()
    );
}

async fn fifty_concurrent_uploads_against_a_limit_of_30_store_exactly_30(backend: Backend) {
    let (app, _) = spawn_configured(backend, |_| {}).await;
    let (token, _) = app.driver("Flood").await;
    let app = Arc::new(app);
    let uploads: Vec<_> = (0..50)
        .map(|n| {
            let (app, token) = (app.clone(), token.clone());
            tokio::spawn(async move {
                let body = session_body(&format!("f{n}"), "2026-11-01T10:00:00Z", LAPS, 0);
                envelope(app.post_json_auth("/v1/sessions", &body, &token).await)
                    .await
                    .0
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for upload in uploads {
        statuses.push(upload.await.unwrap());
    }
    let created = statuses.iter().filter(|&&s| s == 201).count();
    let limited = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!((created, limited), (30, 20), "{statuses:?}");
    let (_, list) = envelope(app.get_auth("/v1/sessions?limit=100", &token).await).await;
    assert_eq!(list["data"]["items"].as_array().unwrap().len(), 30);
}

/// Sends `request` from `source_ip` through the sign-in function as API Gateway would.
async fn from_address(router: &axum::Router, source_ip: &str, request: &HttpRequest) -> u16 {
    use tower::Service;
    let mut event = request.api_gateway_event();
    event["requestContext"]["http"]["sourceIp"] = json!(source_ip);
    let request: lambda_http::request::LambdaRequest = serde_json::from_value(event).unwrap();
    let mut adapter = lambda_http::Adapter::from(router.clone());
    let answer = adapter
        .call(lambda_runtime::LambdaEvent::new(
            request,
            lambda_runtime::Context::default(),
        ))
        .await
        .unwrap();
    let answer = serde_json::to_value(answer).unwrap();
    answer["statusCode"].as_u64().unwrap() as u16
}

async fn two_addresses_of_one_64_share_a_budget(backend: Backend) {
    let mut t = ports(backend).await;
    t.settings.auth.attempts_per_address = 3;
    let state = paddock_api::state::AppState::new(t.ports.clone(), t.settings.clone())
        .with_identity_providers();
    let router = paddock_api::routes::Group::Auth.router(state);
    let login = |n: usize| {
        HttpRequest::new("POST", "/v1/auth/login/email").json(
            &json!({"email": format!("someone{n}@example.com"), "password": "wrong password"}),
        )
    };
    for n in 0..3 {
        assert_eq!(
            from_address(&router, "2001:db8:7:1::a", &login(n)).await,
            401
        );
    }
    assert_eq!(
        from_address(&router, "2001:db8:7:1:ffff:1:2:3", &login(3)).await,
        429,
        "another address of the same /64 shares its budget"
    );
    assert_eq!(
        from_address(&router, "2001:db8:7:2::a", &login(4)).await,
        401,
        "the next /64 has its own"
    );
    // IPv4 stays exact, and an IPv4-mapped IPv6 address is its IPv4 address.
    for n in 0..3 {
        assert_eq!(from_address(&router, "192.0.2.1", &login(n)).await, 401);
    }
    assert_eq!(
        from_address(&router, "::ffff:192.0.2.1", &login(5)).await,
        429
    );
    assert_eq!(from_address(&router, "192.0.2.2", &login(5)).await, 401);
}

/// A client whose requests come from `127.0.<hi>.<lo>` (all of 127/8 is loopback).
async fn login_from(app: &TestApp, hi: u8, lo: u8, email: &str, password: &str) -> (u16, Value) {
    let client = reqwest::Client::builder()
        .local_address(IpAddr::from([127, 0, hi, lo]))
        .build()
        .unwrap();
    envelope(
        client
            .post(format!("{}/v1/auth/login/email", app.address))
            .json(&json!({"email": email, "password": password}))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn the_owner_signs_in_after_50_failures_from_elsewhere(backend: Backend) {
    let (app, _) = spawn_configured(backend, |_| {}).await;
    let email = "owner@example.com";
    app.register(email, PASSWORD).await;
    // 50 failures, each from another address: the account's failure limit is full.
    for n in 0..50u8 {
        let (status, _) = login_from(&app, 1, n + 1, email, "a wrong guess").await;
        assert_eq!(status, 401, "guess {n}");
    }
    // The attacker goes on from fresh addresses: each is slowed to 3 attempts an hour.
    for n in 0..3u8 {
        let (status, _) = login_from(&app, 2, 1, email, "another guess").await;
        assert_eq!(status, 401, "guarded attempt {n}");
    }
    let (status, body) = login_from(&app, 2, 1, email, "yet another").await;
    assert_eq!(status, 429, "{body}");
    // The owner, from an address never seen, with the right password: signed in.
    let (status, body) = login_from(&app, 3, 1, email, PASSWORD).await;
    assert_eq!(status, 200, "{body}");
    // Even after a typo or two.
    assert_eq!(login_from(&app, 3, 2, email, "typo").await.0, 401);
    assert_eq!(login_from(&app, 3, 2, email, PASSWORD).await.0, 200);
}

/// The `Retry-After` seconds of a 429, with its envelope.
async fn limited(res: reqwest::Response) -> (u16, u64, Value) {
    let retry_after = res
        .headers()
        .get("retry-after")
        .map_or(0, |v| v.to_str().unwrap().parse().unwrap());
    let (status, body) = envelope(res).await;
    (status, retry_after, body)
}

async fn a_feed_flood_is_cut_at_the_limit_per_minute(app: TestApp, clock: Arc<ManualClock>) {
    let (token, _) = app.driver("Poster").await;
    let post = async |n: usize| {
        app.post_json_auth("/v1/feed", &json!({"title": format!("post {n}")}), &token)
            .await
    };
    // The default: 10 a minute. 30 sent in a second, as the review did.
    let mut statuses = Vec::new();
    for n in 0..30 {
        statuses.push(limited(post(n).await).await);
    }
    let created = statuses.iter().filter(|(s, _, _)| *s == 201).count();
    assert_eq!(created, 10, "{statuses:?}");
    let (status, retry_after, body) = &statuses[10];
    assert_eq!(*status, 429, "{body}");
    assert_eq!(*retry_after, 60);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("at most 10 per 60 seconds, retry in 60 seconds"),
        "{body}"
    );
    // Refused posts are not stored; the minute after, posting works again.
    let (_, feed) = envelope(app.get_auth("/v1/feed?limit=100", &token).await).await;
    let posts = feed["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["title"].as_str().is_some_and(|t| t.starts_with("post ")))
        .count();
    assert_eq!(posts, 10);
    clock.advance(time::Duration::seconds(60));
    assert_eq!(limited(post(99).await).await.0, 201);
    // Another driver has a budget of their own.
    let (other, _) = app.driver("Bystander").await;
    let (status, body) = envelope(
        app.post_json_auth("/v1/feed", &json!({"title": "hello"}), &other)
            .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

async fn exports_are_limited_per_hour(backend: Backend) {
    let (app, clock) = spawn_configured(backend, |s| {
        s.exports_per_hour = 2;
        // One token for the whole hour the test spans.
        s.jwt.expiry_minutes = 24 * 60;
    })
    .await;
    let (token, _) = app.driver("Exporter").await;
    let export = async || app.get_auth("/v1/profile/me/export", &token).await;
    for n in 0..2 {
        let res = export().await;
        // The document itself locally, a presigned URL to it in AWS.
        assert!(
            [200, 302].contains(&res.status().as_u16()),
            "export {n}: {}",
            res.status()
        );
        let _ = res.bytes().await;
    }
    clock.advance(time::Duration::seconds(600));
    let (status, retry_after, body) = limited(export().await).await;
    assert_eq!(status, 429, "{body}");
    // The first export leaves the hour 50 minutes from now.
    assert_eq!(retry_after, 3000);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .ends_with("at most 2 per 3600 seconds, retry in 3000 seconds"),
        "{body}"
    );
    clock.advance(time::Duration::seconds(3000));
    let res = export().await;
    assert!(
        [200, 302].contains(&res.status().as_u16()),
        "{}",
        res.status()
    );
}

paddock_tests::on_both_backends!(
    plain: [],
    clocked: [
        thirty_uploads_at_59_then_the_31st_at_00_is_refused,
        a_feed_flood_is_cut_at_the_limit_per_minute,
    ],
    ports: [
        fifty_concurrent_hits_against_a_limit_of_30_admit_exactly_30,
        fifty_concurrent_uploads_against_a_limit_of_30_store_exactly_30,
        two_addresses_of_one_64_share_a_budget,
        the_owner_signs_in_after_50_failures_from_elsewhere,
        exports_are_limited_per_hour,
    ]
);
