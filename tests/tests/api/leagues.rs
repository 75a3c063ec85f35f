//! Leagues through the API: made, joined by invite code, rotated, handed on and left; bad
//! input named by field and rule; another driver's league answered as nothing; on both
//! backends and through the functions.

use std::sync::Arc;

use paddock_core::ports::ManualClock;
use paddock_tests::TestApp;
use reqwest::Method;
use serde_json::{Value, json};

/// Makes a league; answers its data.
async fn create(app: &TestApp, token: &str, name: &str) -> Value {
    let body = json!({"name": name, "description": "One track a week"});
    let (status, made) = app
        .call(Method::POST, "/v1/leagues", token, Some(body))
        .await;
    assert_eq!(status, 201, "{made}");
    made["data"].clone()
}

async fn join(app: &TestApp, token: &str, code: &str) -> (u16, Value) {
    app.call(
        Method::POST,
        "/v1/leagues/join",
        token,
        Some(json!({"code": code})),
    )
    .await
}

/// A minute on: members who join one after another are told apart by when they joined.
fn a_minute_later(clock: &ManualClock) {
    clock.advance(time::Duration::minutes(1));
}

async fn a_league_is_made_joined_handed_on_and_closed(app: TestApp, clock: Arc<ManualClock>) {
    let (ana, ana_id) = app.driver("Ana").await;
    let (bo, bo_id) = app.driver("Bo").await;
    let (cy, cy_id) = app.driver("Cy").await;
    let league = create(&app, &ana, "  Tuesday Hotlaps ").await;
    assert_eq!(league["name"], "Tuesday Hotlaps", "trimmed: {league}");
    assert_eq!(
        (&league["role"], &league["memberCount"]),
        (&json!("owner"), &json!(1))
    );
    assert_eq!(league["ownerId"], ana_id.as_str());
    let id = league["id"].as_str().unwrap().to_owned();
    let code = league["inviteCode"].as_str().unwrap().to_owned();

    a_minute_later(&clock);
    let (status, joined) = join(&app, &bo, &code).await;
    assert_eq!(status, 201, "{joined}");
    assert_eq!(joined["data"]["role"], "member");
    assert_eq!(joined["data"]["memberCount"], 2);
    assert!(joined["data"].get("inviteCode").is_none(), "{joined}");
    // The same join again changes nothing.
    let (status, again) = join(&app, &bo, &code).await;
    assert_eq!(
        (status, &again["data"]["memberCount"]),
        (200, &json!(2)),
        "{again}"
    );
    a_minute_later(&clock);
    let (status, _) = join(&app, &cy, &format!(" {code} ")).await;
    assert_eq!(status, 201);

    let (status, mine) = app.call(Method::GET, "/v1/leagues", &bo, None).await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["data"]["items"].as_array().unwrap().len(), 1);
    assert_eq!(mine["data"]["items"][0]["id"], id.as_str());
    let path = format!("/v1/leagues/{id}/members");
    let (status, members) = app.call(Method::GET, &path, &cy, None).await;
    assert_eq!(status, 200, "{members}");
    let order: Vec<&str> = members["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["userId"].as_str().unwrap())
        .collect();
    assert_eq!(order, [&ana_id, &bo_id, &cy_id]);
    assert_eq!(members["data"]["items"][0]["role"], "owner");

    // Ana hands it to Cy, then leaves: Cy keeps it.
    let path = format!("/v1/leagues/{id}/owner");
    let body = json!({"UserId": cy_id});
    let (status, handed) = app.call(Method::POST, &path, &ana, Some(body)).await;
    assert_eq!(status, 200, "{handed}");
    assert_eq!(
        (&handed["data"]["role"], &handed["data"]["ownerId"]),
        (&json!("member"), &json!(cy_id))
    );
    let leave = format!("/v1/leagues/{id}/leave");
    let (status, left) = app.call(Method::POST, &leave, &ana, None).await;
    assert_eq!(
        (status, &left["data"]["outcome"]),
        (200, &json!("member")),
        "{left}"
    );
    // Cy removes Bo, then leaves alone: the league closes and its code names nothing.
    let path = format!("/v1/leagues/{id}/members/{bo_id}");
    let (status, body) = app.delete_auth(&path, &cy).await;
    assert_eq!(status, 204, "{body}");
    let (status, _) = app
        .call(Method::GET, &format!("/v1/leagues/{id}"), &bo, None)
        .await;
    assert_eq!(status, 404);
    let (status, left) = app.call(Method::POST, &leave, &cy, None).await;
    assert_eq!(
        (status, &left["data"]["outcome"]),
        (200, &json!("closed")),
        "{left}"
    );
    let (status, gone) = join(&app, &bo, &code).await;
    assert_eq!(status, 404, "{gone}");
}

async fn an_owner_leaving_hands_the_league_to_the_longest_standing_member(
    app: TestApp,
    clock: Arc<ManualClock>,
) {
    let (ana, _) = app.driver("Ana").await;
    let (bo, bo_id) = app.driver("Bo").await;
    let (cy, _) = app.driver("Cy").await;
    let league = create(&app, &ana, "Sunday Cup").await;
    let id = league["id"].as_str().unwrap();
    let code = league["inviteCode"].as_str().unwrap();
    a_minute_later(&clock);
    assert_eq!(join(&app, &bo, code).await.0, 201);
    a_minute_later(&clock);
    assert_eq!(join(&app, &cy, code).await.0, 201);
    let leave = format!("/v1/leagues/{id}/leave");
    let (status, left) = app.call(Method::POST, &leave, &ana, None).await;
    assert_eq!(status, 200, "{left}");
    assert_eq!(left["data"]["outcome"], "handedOn");
    assert_eq!(left["data"]["newOwnerId"], bo_id.as_str());
    let (status, seen) = app
        .call(Method::GET, &format!("/v1/leagues/{id}"), &bo, None)
        .await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(
        (&seen["data"]["role"], &seen["data"]["memberCount"]),
        (&json!("owner"), &json!(2))
    );
    assert_eq!(
        seen["data"]["inviteCode"], code,
        "the new owner sees the code"
    );
}

async fn a_rotated_code_stops_working(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let (bo, _) = app.driver("Bo").await;
    let (cy, _) = app.driver("Cy").await;
    let league = create(&app, &ana, "Rotating").await;
    let id = league["id"].as_str().unwrap();
    let old = league["inviteCode"].as_str().unwrap();
    assert_eq!(join(&app, &bo, old).await.0, 201);
    let path = format!("/v1/leagues/{id}/invite-code");
    let (status, rotated) = app.call(Method::POST, &path, &ana, None).await;
    assert_eq!(status, 200, "{rotated}");
    let new = rotated["data"]["inviteCode"].as_str().unwrap();
    assert_ne!(new, old);
    let (status, refused) = join(&app, &cy, old).await;
    assert_eq!(status, 404, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().starts_with("code: "),
        "{refused}"
    );
    assert_eq!(join(&app, &cy, new).await.0, 201);
    // A member may not rotate it.
    let (status, body) = app.call(Method::POST, &path, &bo, None).await;
    assert_eq!(status, 403, "{body}");
}

async fn another_drivers_league_is_not_found(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let (bo, bo_id) = app.driver("Bo").await;
    let (eve, eve_id) = app.driver("Eve").await;
    let league = create(&app, &ana, "Private").await;
    let id = league["id"].as_str().unwrap();
    assert_eq!(
        join(&app, &bo, league["inviteCode"].as_str().unwrap())
            .await
            .0,
        201
    );
    for (method, path) in [
        (Method::GET, format!("/v1/leagues/{id}")),
        (Method::GET, format!("/v1/leagues/{id}/members")),
        (Method::POST, format!("/v1/leagues/{id}/invite-code")),
        (Method::POST, format!("/v1/leagues/{id}/leave")),
        (Method::DELETE, format!("/v1/leagues/{id}/members/{bo_id}")),
    ] {
        let (status, body) = app.call(method.clone(), &path, &eve, None).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert_eq!(body["error"], "league not found", "{body}");
    }
    let (status, list) = app.call(Method::GET, "/v1/leagues", &eve, None).await;
    assert_eq!(
        (status, list["data"]["items"].as_array().unwrap().len()),
        (200, 0)
    );
    // A member is told what only the owner may do.
    let path = format!("/v1/leagues/{id}/owner");
    let body = Some(json!({"userId": bo_id}));
    let (status, refused) = app.call(Method::POST, &path, &bo, body).await;
    assert_eq!(status, 403, "{refused}");
    // The owner cannot hand it to, or remove, someone outside it.
    let body = Some(json!({"userId": eve_id}));
    let (status, refused) = app.call(Method::POST, &path, &ana, body).await;
    assert_eq!(status, 404, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().starts_with("userId: "),
        "{refused}"
    );
    let path = format!("/v1/leagues/{id}/members/{eve_id}");
    assert_eq!(app.delete_auth(&path, &ana).await.0, 404);
    // Without a sign-in: 401.
    let response = app.get(&format!("/v1/leagues/{id}")).await;
    assert_eq!(response.status(), 401);
}

async fn bad_input_is_refused_naming_the_field_and_the_rule(app: TestApp) {
    let (ana, ana_id) = app.driver("Ana").await;
    let cases = [
        (json!({}), "name: is required"),
        (json!({"name": "   "}), "name: must not be empty"),
        (
            json!({"name": "x".repeat(61)}),
            "name: must be at most 60 characters",
        ),
        (json!({"name": "Fast\u{202e}laps"}), "name: "),
        (
            json!({"name": "ok", "description": "a\u{0007}b"}),
            "description: must not contain control characters",
        ),
        (
            json!({"name": "ok", "description": "d".repeat(501)}),
            "description: must be at most 500",
        ),
    ];
    for (body, rule) in cases {
        let (status, refused) = app
            .call(Method::POST, "/v1/leagues", &ana, Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(refused["success"], false);
        assert!(
            refused["error"].as_str().unwrap().starts_with(rule),
            "{body}: {refused}"
        );
    }
    for (body, rule) in [
        (json!({}), "code: is required"),
        (json!({"code": "short"}), "code: must be an invite code"),
        (
            json!({"code": "a".repeat(21) + "!"}),
            "code: must be an invite code",
        ),
    ] {
        let (status, refused) = app
            .call(Method::POST, "/v1/leagues/join", &ana, Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(
            refused["error"].as_str().unwrap().starts_with(rule),
            "{body}: {refused}"
        );
    }
    let (status, refused) = join(&app, &ana, &"A".repeat(22)).await;
    assert_eq!(status, 404, "a well-formed code of no league: {refused}");
    let (status, _) = app
        .call(Method::GET, "/v1/leagues/not-an-id", &ana, None)
        .await;
    assert_eq!(status, 404);
    let league = create(&app, &ana, "Mine").await;
    let id = league["id"].as_str().unwrap();
    let path = format!("/v1/leagues/{id}/owner");
    for (body, rule) in [
        (json!({}), "userId: is required"),
        (json!({"userId": "u1"}), "userId: must be a user id"),
        (json!({"userId": ana_id}), "userId: is the owner already"),
    ] {
        let (status, refused) = app
            .call(Method::POST, &path, &ana, Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(
            refused["error"].as_str().unwrap().starts_with(rule),
            "{body}: {refused}"
        );
    }
    let path = format!("/v1/leagues/{id}/members/{ana_id}");
    let (status, refused) = app.delete_auth(&path, &ana).await;
    assert_eq!(status, 400, "{refused}");
    // Five leagues owned at most.
    for n in 0..4 {
        create(&app, &ana, &format!("League {n}")).await;
    }
    let body = Some(json!({"name": "Sixth"}));
    let (status, refused) = app.call(Method::POST, "/v1/leagues", &ana, body).await;
    assert_eq!(status, 409, "{refused}");
}

paddock_tests::on_both_backends!(
    plain: [
        a_rotated_code_stops_working,
        another_drivers_league_is_not_found,
        bad_input_is_refused_naming_the_field_and_the_rule,
    ],
    clocked: [
        a_league_is_made_joined_handed_on_and_closed,
        an_owner_leaving_hands_the_league_to_the_longest_standing_member,
    ],
);
