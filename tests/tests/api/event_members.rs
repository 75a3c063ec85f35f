//! A league's members and its events through the API: an event that opens is told to every
//! member once (webhooks and feed), and drivers joining while an event is made, or leaving and
//! joining again, find their laps counting exactly while they are members. On both backends
//! and through the functions.

use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::events::{CAR, drive, event_of, feed_titles, league_with, raced_track, text};
use paddock_tests::TestApp;

/// A league's event that opens is told to its members once: to their webhooks that ask for
/// `event.started` and in their feeds.
async fn members_hear_an_event_open(app: TestApp) {
    let receiver = paddock_tests::webhook_receiver::Receiver::start().await;
    let (ana, _) = app.driver("Ana").await;
    let (bo, _) = app.driver("Bo").await;
    let hook = json!({"url": receiver.url, "eventTypes": ["event.started"]});
    let (status, made) = app
        .call(Method::POST, "/v1/webhooks", &bo, Some(hook))
        .await;
    assert_eq!(status, 201, "{made}");
    let league = league_with(&app, &ana, &[&bo]).await;
    let now = OffsetDateTime::now_utc();
    let track = raced_track(&app, &ana, now).await;
    // Opened a minute ago (the tick's clock may be a little behind this one).
    let opens = now - time::Duration::minutes(1);
    let closes = now + time::Duration::hours(1);
    let event = event_of(&app, &ana, &league, &track, opens, closes).await;
    for _ in 0..2 {
        paddock_core::maintenance::tick(&app.ports)
            .await
            .events
            .unwrap();
    }
    receiver
        .wait_for(std::time::Duration::from_secs(20), "event.started", |all| {
            !all.is_empty()
        })
        .await;
    let opened = feed_titles(&app, &bo, "Spa week is open", 1).await;
    assert_eq!(opened, ["Spa week is open"]);
    let told: Vec<Value> = receiver
        .all()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap())
        .collect();
    assert_eq!(told.len(), 1, "once: {told:?}");
    assert_eq!(told[0]["type"], "event.started");
    let data = &told[0]["data"];
    assert_eq!(
        (&data["eventId"], &data["leagueId"], &data["closesAt"]),
        (&event["id"], &json!(league), &event["closesAt"]),
        "{data}"
    );
    assert_eq!(data["car"], CAR, "{data}");
}

/// Drivers joining a league while its owner makes an event, and one leaving and joining
/// again: every member's lap counts for it, whoever committed first, and a lap driven while
/// out of the league does not.
async fn joining_and_leaving_around_an_event(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let league = league_with(&app, &ana, &[]).await;
    let (_, code) = app
        .call(Method::GET, &format!("/v1/leagues/{league}"), &ana, None)
        .await;
    let code = code["data"]["inviteCode"].as_str().unwrap().to_owned();
    let now = OffsetDateTime::now_utc();
    let track = raced_track(&app, &ana, now).await;
    let joiners = futures::future::join_all((0..6).map(|n| {
        let app = &app;
        async move { app.driver(&format!("Joiner{n}")).await }
    }))
    .await;
    let joins = futures::future::join_all(joiners.iter().map(|(token, _)| {
        let (app, code) = (&app, &code);
        async move {
            let body = json!({"code": code});
            let (status, joined) = app
                .call(Method::POST, "/v1/leagues/join", token, Some(body))
                .await;
            assert_eq!(status, 201, "{joined}");
        }
    }));
    let opens = now - time::Duration::minutes(1);
    let closes = now + time::Duration::hours(1);
    let (event, _) = tokio::join!(event_of(&app, &ana, &league, &track, opens, closes), joins);
    let id = event["id"].as_str().unwrap();
    let inside = text(now - time::Duration::seconds(10));
    let laps = futures::future::join_all(joiners.iter().enumerate().map(|(n, (token, _))| {
        let (app, inside) = (&app, &inside);
        async move { drive(app, token, inside, 140_000 + 100 * n as i64, CAR).await }
    }))
    .await;
    for (status, lap) in &laps {
        assert_eq!(*status, 200, "{lap}");
        assert_eq!(
            lap["events"][0]["eventId"], id,
            "every member counts: {lap}"
        );
    }
    // Out of the league, a lap does not count; back in, it does.
    let (leaver, _) = &joiners[0];
    let path = format!("/v1/leagues/{league}/leave");
    let (status, left) = app.call(Method::POST, &path, leaver, None).await;
    assert_eq!(status, 200, "{left}");
    let (_, out) = drive(&app, leaver, &inside, 130_000, CAR).await;
    assert!(out.get("events").is_none(), "{out}");
    let body = json!({"code": code});
    let (status, _) = app
        .call(Method::POST, "/v1/leagues/join", leaver, Some(body))
        .await;
    assert_eq!(status, 201);
    let (_, back) = drive(&app, leaver, &inside, 129_000, CAR).await;
    assert_eq!(back["events"][0]["rank"], 1, "{back}");
}

paddock_tests::on_both_backends!(
    plain: [members_hear_an_event_open, joining_and_leaving_around_an_event],
);
