//! The public events' pages in headless Chromium: `/events` lists an open and a coming public
//! event, an event's page shows its standings fastest first with the time left written by the
//! server (no script on either page), both pass axe-core with no serious or critical violation,
//! and both are photographed at desktop and phone widths (`target/tmp/board_pages/events-*`,
//! `event-*`), which they fit; the event's link preview is a 1200×630 picture.

use fantoccini::Locator;
use paddock_core::ports::Clock;
use paddock_tests::browser::{click_through, open_browser};
use paddock_tests::{Backend, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::board_pages::{
    PUBLIC_URL, accessible, column, count, og_image, photograph, preview_size, submitted, texts,
};

fn text(t: OffsetDateTime) -> String {
    t.replace_nanosecond(0).unwrap().format(&Rfc3339).unwrap()
}

/// A public event made by the operator `op` on `track`; answers its id.
async fn public_event(
    site: &TestApp,
    op: &str,
    track: &str,
    name: &str,
    window: [OffsetDateTime; 2],
) -> String {
    let body = json!({
        "name": name, "trackId": track,
        "opensAt": text(window[0]), "closesAt": text(window[1]),
    });
    let (status, made): (u16, Value) = site.call(Method::POST, "/v1/events", op, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    made["data"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn event_pages_render_in_a_browser() {
    let (app, clock) = paddock_tests::spawn_configured(Backend::Embedded, |s| {
        s.auth.public_url = Some(PUBLIC_URL.to_owned());
    })
    .await;
    let (op, op_id) = app.driver("Op").await;
    let now = clock.now();
    let track = submitted(&app, &op, &text(now - time::Duration::hours(1)), 95_000, 0).await;
    let mut settings = app.settings.clone();
    settings.event_operators = vec![op_id.parse().unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let site = paddock_tests::spawn_with(settings, app.ports.clone(), dir).await;
    let closes = now + time::Duration::days(3) + time::Duration::hours(5);
    let id = public_event(&site, &op, &track, "Spa weekly hotlap", [now, closes]).await;
    let later = now + time::Duration::days(4);
    public_event(
        &site,
        &op,
        &track,
        "Spa endurance week",
        [later, later + time::Duration::days(7)],
    )
    .await;
    // Twelve entrants, each with one lap in the window.
    futures::future::join_all((0..12).map(|i| {
        let site = &site;
        async move {
            let (token, _) = site.driver(&format!("Racer_{i:02}")).await;
            submitted(site, &token, &text(now), 138_000 + 377 * i, 0).await;
        }
    }))
    .await;

    let client = open_browser().await;
    client
        .goto(&format!("{}/events", site.address))
        .await
        .unwrap();
    assert_eq!(client.title().await.unwrap(), "Events · Paddock");
    let headings = texts(&client, "main h2").await;
    assert_eq!(headings, ["Open now", "Coming up"]);
    assert_eq!(
        column(&client, 5).await,
        ["Closes in 3 days 5 h", "Opens in 4 days 0 h"]
    );
    assert_eq!(count(&client, "script").await, 0, "no script on the page");
    accessible(&client, "events").await;
    photograph(&client, "events").await;

    click_through(&client, Locator::Css(&format!("a[href='/events/{id}']"))).await;
    assert_eq!(
        client.title().await.unwrap(),
        "Spa weekly hotlap · Paddock event"
    );
    let ranks = column(&client, 1).await;
    assert_eq!(ranks, (1..=12).map(|r| r.to_string()).collect::<Vec<_>>());
    let names = column(&client, 2).await;
    assert!(
        names[0].ends_with("Racer_00") && names[11].ends_with("Racer_11"),
        "{names:?}"
    );
    assert_eq!(column(&client, 4).await[..2], ["—", "+0.377"]);
    let status = client.find(Locator::Css("main p strong")).await.unwrap();
    assert_eq!(status.text().await.unwrap(), "Open");
    assert_eq!(count(&client, "script").await, 0, "no script on the page");
    accessible(&client, "event").await;
    photograph(&client, "event").await;
    let image = og_image(&client).await;
    assert_eq!(image, format!("/events/{id}/preview.png"));
    assert_eq!(preview_size(&client, &site, &image).await, (1200, 630));
    client.close().await.unwrap();
}
