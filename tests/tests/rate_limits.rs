//! Rate limits tried as an attacker would: a burst straddling a minute boundary, a
//! concurrent flood against the last places, many IPv6 addresses of one network, and an
//! account locked on purpose by failures from elsewhere — on both backends.

use paddock::identity::rate_limits::{self, Limit, LimitError};
use paddock::ports::ManualClock;
use paddock_tests::lambda_events::HttpRequest;
use paddock_tests::{Backend, TestApp, envelope, ports, session_body, spawn_configured};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;

const PASSWORD: &str = "correct horse battery";
const LAPS: &[(i64, bool, f64)] = &[(92_000, true, 0.9), (91_500, true, 0.95)];

/// Moves `clock` to the next instant whose seconds within the minute are `second`.
fn move_to_second(clock: &ManualClock, second: i64) {
    use paddock::ports::Clock;
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
    let state = paddock::state::AppState::new(t.ports.clone(), t.settings.clone())
        .with_identity_providers();
    let router = paddock::routes::group_router(paddock::routes::auth::routes(), state);
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

paddock_tests::on_both_backends!(
    plain: [],
    clocked: [thirty_uploads_at_59_then_the_31st_at_00_is_refused],
    ports: [
        fifty_concurrent_hits_against_a_limit_of_30_admit_exactly_30,
        fifty_concurrent_uploads_against_a_limit_of_30_store_exactly_30,
        two_addresses_of_one_64_share_a_budget,
        the_owner_signs_in_after_50_failures_from_elsewhere,
    ]
);
