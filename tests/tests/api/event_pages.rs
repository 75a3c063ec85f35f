//! The public events' pages over HTTP, on both backends with the clock in hand: `/events`
//! lists the public events coming up, open and finished with the time left written by the
//! server; an event's page shows its standings, spread and link preview, and its final
//! standings once closed; a league's event has no public page; bad addresses get pages that
//! say why. (The browser test renders them in Chromium.)

use std::sync::Arc;

use paddock_core::ports::{Clock, ManualClock};
use paddock_tests::TestApp;
use reqwest::Method;
use serde_json::json;

use super::events::{CAR, drive, event_of, league_with, raced_track, text};

/// GET `path`: status, content type, body.
async fn page(app: &TestApp, path: &str) -> (u16, String, String) {
    let res = app.get(path).await;
    let status = res.status().as_u16();
    let kind = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, res.text().await.unwrap())
}

/// Whether `html` is a page with no script, answered as HTML.
fn no_script(kind: &str, html: &str) -> bool {
    kind == "text/html; charset=utf-8" && !html.contains("<script")
}

async fn public_events_have_pages_and_league_events_do_not(app: TestApp, clock: Arc<ManualClock>) {
    let (op, op_id) = app.driver("Op").await;
    let (bo, bo_id) = app.driver("Bo").await;
    let (cy, cy_id) = app.driver("Cy").await;
    let now = clock.now();
    let track = raced_track(&app, &op, now).await;
    // The same store served with the operator named and a public address.
    let mut settings = app.settings.clone();
    settings.event_operators = vec![op_id.parse().unwrap()];
    settings.auth.public_url = Some("https://paddock.example".to_owned());
    let dir = tempfile::tempdir().unwrap();
    let site = paddock_tests::spawn_with(settings, app.ports.clone(), dir).await;
    let opens = now + time::Duration::minutes(40);
    let closes = opens + time::Duration::days(7);
    let body = json!({
        "name": "Spa weekly <hotlap>", "trackId": track,
        "opensAt": text(opens), "closesAt": text(closes),
    });
    let (status, made) = site.call(Method::POST, "/v1/events", &op, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    let id = made["data"]["id"].as_str().unwrap().to_owned();
    let league = league_with(&site, &op, &[&bo]).await;
    let hidden = event_of(&site, &op, &league, &track, opens, closes).await;
    let hidden = hidden["id"].as_str().unwrap().to_owned();

    // Coming up: the time left is the server's, to the minute.
    let (status, kind, html) = page(&site, "/events").await;
    assert_eq!(status, 200, "{html}");
    assert!(no_script(&kind, &html), "{kind}: {html}");
    assert!(
        html.contains("Coming up") && html.contains("Opens in 40 min"),
        "{html}"
    );
    assert!(
        html.contains("Spa weekly &lt;hotlap&gt;"),
        "escaped: {html}"
    );
    assert!(html.contains(&format!("/events/{id}")), "{html}");
    assert!(
        !html.contains(&hidden),
        "a league's event is not listed: {html}"
    );
    let (status, _, html) = page(&site, &format!("/events/{id}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("Not open yet") && html.contains("No laps in this event yet"),
        "{html}"
    );
    assert!(
        !html.contains("og:image\""),
        "no picture without laps: {html}"
    );

    // Open: two entrants, fastest first, with the link preview.
    clock.advance(time::Duration::minutes(41));
    let driven = text(clock.now());
    let (_, lap) = drive(&site, &bo, &driven, 139_000, CAR).await;
    let entered = lap["events"].as_array().unwrap().iter();
    assert!(
        entered.clone().any(|e| e["eventId"] == id.as_str()),
        "{lap}"
    );
    assert!(
        entered.clone().any(|e| e["eventId"] == hidden.as_str()),
        "{lap}"
    );
    drive(&site, &cy, &driven, 138_500, CAR).await;
    let (status, kind, html) = page(&site, &format!("/events/{id}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(no_script(&kind, &html), "{html}");
    assert!(html.contains("Closes in 6 days 23 h"), "{html}");
    let (cy_at, bo_at) = (
        html.find(&format!("/drivers/{cy_id}")).expect("Cy's row"),
        html.find(&format!("/drivers/{bo_id}")).expect("Bo's row"),
    );
    assert!(cy_at < bo_at, "fastest first: {html}");
    assert!(
        html.contains("2 entrants") && html.contains("+0.500"),
        "{html}"
    );
    let image = format!("/events/{id}/preview.png");
    assert!(
        html.contains(&format!("content=\"https://paddock.example{image}\"")),
        "{html}"
    );
    let res = site.get(&image).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert!(res.bytes().await.unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));

    // A league's event has no public page, whether or not anyone is in it.
    for path in [
        format!("/events/{hidden}"),
        format!("/events/{hidden}/preview.png"),
    ] {
        let (status, kind, html) = page(&site, &path).await;
        assert_eq!(status, 404, "{path}: {html}");
        assert!(
            no_script(&kind, &html) && html.contains("No such event"),
            "{html}"
        );
    }
    let bad = [
        ("/events/not-an-id".to_owned(), 404, "No such event"),
        (
            format!("/events/{id}?cursor=nope"),
            400,
            "cursor: is not a cursor",
        ),
    ];
    for (path, want, says) in bad {
        let (status, _, html) = page(&site, &path).await;
        assert_eq!(status, want, "{path}: {html}");
        assert!(html.contains(says), "{path}: {html}");
    }

    // Closed: the final standings.
    clock.advance(time::Duration::days(7));
    paddock_core::maintenance::tick(&site.ports)
        .await
        .events
        .unwrap();
    let (status, _, html) = page(&site, &format!("/events/{id}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("Final standings") && html.contains("Finished "),
        "{html}"
    );
    assert!(
        html.contains("2:18.500") && !html.contains("2:10.000"),
        "{html}"
    );
    let (_, _, html) = page(&site, "/events").await;
    assert!(html.contains("Recently finished"), "{html}");
}

/// A league's event is nothing to the public pages: not listed, and its page and picture are
/// 404, as an unknown event's are.
async fn a_league_event_has_no_public_page(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let league = league_with(&app, &ana, &[]).await;
    let now = time::OffsetDateTime::now_utc();
    let track = raced_track(&app, &ana, now).await;
    let event = event_of(
        &app,
        &ana,
        &league,
        &track,
        now,
        now + time::Duration::hours(1),
    )
    .await;
    let id = event["id"].as_str().unwrap();
    let (_, lap) = drive(&app, &ana, &text(now), 139_000, CAR).await;
    assert_eq!(lap["events"][0]["eventId"], id, "{lap}");
    let (status, kind, html) = page(&app, "/events").await;
    assert_eq!(status, 200, "{html}");
    assert!(
        no_script(&kind, &html) && html.contains("No public events yet"),
        "{html}"
    );
    for path in [format!("/events/{id}"), format!("/events/{id}/preview.png")] {
        let (status, _, html) = page(&app, &path).await;
        assert_eq!(status, 404, "{path}: {html}");
    }
}

paddock_tests::on_both_backends!(
    plain: [a_league_event_has_no_public_page],
    clocked: [public_events_have_pages_and_league_events_do_not],
);
