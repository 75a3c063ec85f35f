//! Security headers on every answer, as a browser or a shared cache would read them, through
//! the local server and through a Lambda function's router, on both backends:
//! `X-Content-Type-Options: nosniff` everywhere (errors and 404s too), a content security
//! policy on the SVG track map, and `Cache-Control: no-store` on authenticated answers while
//! the public leaderboard keeps its own caching.

use paddock_tests::lambda_events::{HttpAnswer, HttpRequest};
use paddock_tests::{TestApp, envelope, session_body};
use serde_json::json;

const LAPS: &[(i64, bool, f64)] = &[(100_000, true, 0.9), (99_000, true, 0.9)];

fn header<'a>(res: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    res.headers().get(name).map(|v| v.to_str().unwrap())
}

async fn every_answer_carries_its_security_headers(app: TestApp) {
    let (token, _) = app.driver("Hedda").await;
    let body = session_body("h-1", "2026-11-01T10:00:00Z", LAPS, 800);
    let (status, created) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    assert_eq!(status, 201, "{created}");
    let track_id = created["data"]["trackId"].as_str().unwrap().to_owned();
    let session_id = created["data"]["sessionId"].as_str().unwrap().to_owned();

    // Authenticated JSON: never stored by a browser or a proxy.
    for path in [
        "/v1/profile/me".to_owned(),
        "/v1/sessions".to_owned(),
        format!("/v1/sessions/{session_id}"),
        "/v1/feed".to_owned(),
    ] {
        let res = app.get_auth(&path, &token).await;
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(header(&res, "cache-control"), Some("no-store"), "{path}");
        assert_eq!(
            header(&res, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
    // An authenticated error too (it may name the caller's data).
    let res = app
        .get_auth("/v1/sessions/00000000-0000-8000-8000-000000000000", &token)
        .await;
    assert_eq!(res.status(), 404);
    assert_eq!(header(&res, "cache-control"), Some("no-store"));
    assert_eq!(header(&res, "x-content-type-options"), Some("nosniff"));

    // The SVG map: nothing in it loads or runs, and no page frames it.
    app.wait_for_map(&token, &track_id, 1).await;
    let res = app
        .get_auth(&format!("/v1/tracks/{track_id}/map?format=svg"), &token)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "content-type"), Some("image/svg+xml"));
    assert_eq!(
        header(&res, "content-security-policy"),
        Some("default-src 'none'; frame-ancestors 'none'; sandbox")
    );
    assert_eq!(header(&res, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&res, "cache-control"), Some("no-store"));
    let svg = res.text().await.unwrap();
    // The policy allows no inline style: the drawing must not need any.
    assert!(!svg.contains("style"), "{svg}");

    // The public leaderboard keeps its shared caching, with or without a token.
    let submit = json!({"SessionId": session_id, "LapTimeMs": 99_000, "QualityScore": 0.9});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &submit, &token)
            .await,
    )
    .await;
    assert!(status == 200 || status == 201, "{res}");
    let path = format!("/v1/leaderboards?trackId={track_id}");
    for res in [app.get(&path).await, app.get_auth(&path, &token).await] {
        assert_eq!(res.status(), 200);
        assert_eq!(header(&res, "cache-control"), Some("public, max-age=5"));
        assert_eq!(header(&res, "x-content-type-options"), Some("nosniff"));
    }

    // The public board page loads images (avatars) only from the allowed hosts: by default
    // those of the sign-in providers whose pictures load without a token.
    let res = app.get(&format!("/boards/{track_id}")).await;
    assert_eq!(res.status(), 200);
    let csp = header(&res, "content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("; img-src https://lh3.googleusercontent.com https://cdn.discordapp.com;"),
        "{csp}"
    );

    // Unauthenticated answers: nosniff, and no caching policy forced on them.
    for path in ["/health/live", "/no/such/endpoint", "/v1/profile/me"] {
        let res = app.get(path).await;
        assert_eq!(
            header(&res, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(header(&res, "cache-control"), None, "{path}");
    }

    // A Lambda function's router has the same layers.
    let state = paddock_api::state::AppState::new(app.ports.clone(), app.settings.clone());
    let router = paddock_api::routes::Group::Profile.router(state);
    let answer = through_lambda(
        &router,
        &HttpRequest::new("GET", "/v1/profile/me").bearer(&token),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("cache-control"), Some("no-store"));
    assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));
    let answer = through_lambda(&router, &HttpRequest::new("GET", "/v1/profile/me")).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));
}

/// Sends `request` through `router` as API Gateway and `lambda_http` would.
async fn through_lambda(router: &axum::Router, request: &HttpRequest) -> HttpAnswer {
    use tower::Service;
    let event: lambda_http::request::LambdaRequest =
        serde_json::from_value(request.api_gateway_event()).unwrap();
    let mut adapter = lambda_http::Adapter::from(router.clone());
    let answer = adapter
        .call(lambda_runtime::LambdaEvent::new(
            event,
            lambda_runtime::Context::default(),
        ))
        .await
        .unwrap();
    HttpAnswer::from_api_gateway(&serde_json::to_value(answer).unwrap()).unwrap()
}

paddock_tests::on_both_backends!(plain: [every_answer_carries_its_security_headers]);
