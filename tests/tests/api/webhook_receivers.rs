//! One driver's receiver cannot slow another's deliveries or be used against a host: a slow
//! receiver does not hold another driver's delivery, a failing host is tried once per
//! back-off window across every driver's subscriptions, and the delivery history says the
//! same of every failure without an answer; on both backends and through the functions.

use std::time::{Duration, Instant};

use paddock_tests::webhook_receiver::Receiver;
use paddock_tests::{TestApp, envelope, session_body};
use reqwest::Method;
use serde_json::{Value, json};

/// Makes a subscription to `url` for `types`; answers its id.
async fn subscribe(app: &TestApp, token: &str, url: &str, types: &[&str]) -> String {
    let (status, made, _) = app
        .send_auth(
            Method::POST,
            "/v1/webhooks",
            token,
            Some(json!({"url": url, "eventTypes": types})),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    made["data"]["id"].as_str().unwrap().to_owned()
}

/// Uploads a session of one lap.
async fn upload(app: &TestApp, token: &str, csid: &str, lap_ms: i64) {
    let body = session_body(csid, "2026-11-01T10:00:00Z", &[(lap_ms, true, 0.95)], 0);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert!(status == 201 || status == 200, "{res}");
}

/// The attempts of a subscription's history, newest first.
async fn history(app: &TestApp, token: &str, id: &str) -> Vec<Value> {
    let (status, body, _) = app
        .send_auth(
            Method::GET,
            &format!("/v1/webhooks/{id}/deliveries"),
            token,
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["data"]["items"].as_array().unwrap().clone()
}

/// From now to the arrival of the `n`th delivery at `receiver` (at most a minute).
async fn delay_of_delivery(receiver: &Receiver, n: usize, since: Instant) -> Duration {
    receiver
        .wait_for(Duration::from_secs(60), "the delivery", |all| {
            all.len() >= n
        })
        .await;
    receiver.all()[n - 1].at.saturating_duration_since(since)
}

/// Driver A's receiver answers after longer than the deadline, at each of A's ten
/// subscriptions; driver B's upload a moment later still reaches B's receiver within a
/// bound (before, A's deliveries went one after another, 5 s each, ahead of it).
async fn a_slow_receiver_does_not_hold_another_drivers_delivery(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let (bo, _) = app.driver("Bo").await;
    let slow = Receiver::start().await;
    let fast = Receiver::start().await;
    for _ in 0..10 {
        subscribe(&app, &ana, &slow.url, &["session.uploaded"]).await;
    }
    subscribe(&app, &bo, &fast.url, &["session.uploaded"]).await;

    // B alone.
    let started = Instant::now();
    upload(&app, &bo, "bo-1", 95_000).await;
    let alone = delay_of_delivery(&fast, 1, started).await;

    // A's receiver now answers after 8 s (the deadline is 5 s); B uploads while A's
    // deliveries are under way.
    slow.set_delay(Duration::from_secs(8));
    upload(&app, &ana, "ana-1", 96_000).await;
    slow.wait_for(Duration::from_secs(30), "A's delivery", |all| {
        !all.is_empty()
    })
    .await;
    let started = Instant::now();
    upload(&app, &bo, "bo-2", 94_000).await;
    let beside = delay_of_delivery(&fast, 2, started).await;
    println!(
        "driver B's delivery delay: alone {} ms, beside driver A's slow receiver {} ms",
        alone.as_millis(),
        beside.as_millis()
    );
    assert!(
        beside < Duration::from_secs(15),
        "B's delivery waited {beside:?} behind A's slow receiver"
    );
}

/// Two drivers' subscriptions (two each) to one failing host: the host gets one attempt per
/// back-off window, not one per event and subscription; once it answers again, every event
/// arrives.
async fn a_failing_host_is_tried_once_per_window_across_drivers(app: TestApp) {
    let receiver = Receiver::start().await;
    let types = ["session.uploaded", "achievement.unlocked"];
    let mut drivers = Vec::new();
    for name in ["Cy", "Dee"] {
        let (token, _) = app.driver(name).await;
        subscribe(&app, &token, &receiver.url, &types).await;
        subscribe(&app, &token, &receiver.url, &types).await;
        drivers.push(token);
    }
    receiver.set_failing(true);
    let started = Instant::now();
    for (i, token) in drivers.iter().enumerate() {
        upload(&app, token, &format!("failing-{i}"), 95_000).await;
    }
    // Each upload is at least a session and an achievement: 4+ events, 8+ deliveries.
    let window = Duration::from_secs(12);
    tokio::time::sleep(window.saturating_sub(started.elapsed())).await;
    let tried = receiver.all();
    let events: std::collections::BTreeSet<String> = tried
        .iter()
        .map(|r| r.headers["webhook-id"].clone())
        .collect();
    println!(
        "a failing host got {} requests in its first {} s for 2 drivers x 2 subscriptions \
         (events among them: {}); without a host back-off each event and subscription is \
         tried at once and 5 s later",
        tried.len(),
        window.as_secs(),
        events.len()
    );
    assert!(
        !tried.is_empty() && tried.len() <= 5,
        "{} requests to a failing host within {window:?}: {tried:#?}",
        tried.len()
    );

    // Back up: the next window's attempt is taken, the record is cleared, and every event
    // reaches every subscription.
    receiver.set_failing(false);
    receiver
        .wait_for(
            Duration::from_secs(120),
            "every event at every subscription",
            |all| {
                let taken: Vec<_> = all.iter().filter(|r| r.taken).collect();
                let sessions = taken
                    .iter()
                    .filter(|r| r.event_type() == "session.uploaded")
                    .count();
                // Two subscriptions per driver, one upload each.
                sessions >= 4
            },
        )
        .await;
    println!(
        "the host answered again: all delivered {} s after the uploads, {} requests in all",
        started.elapsed().as_secs(),
        receiver.all().len()
    );
}

/// A refused connection and a receiver that never answers in time read the same in the
/// history: no status, one text, one duration.
async fn no_answer_reads_the_same_whatever_the_cause(app: TestApp) {
    let (token, _) = app.driver("Eve").await;
    let slow = Receiver::start().await;
    let closed = Receiver::start().await;
    let slow_id = subscribe(&app, &token, &slow.url, &["session.uploaded"]).await;
    let closed_id = subscribe(&app, &token, &closed.url, &["session.uploaded"]).await;
    slow.set_delay(Duration::from_secs(8));
    closed.stop();
    upload(&app, &token, "eve-1", 95_000).await;
    let until = Instant::now() + Duration::from_secs(40);
    let (timed_out, refused) = loop {
        let (a, b) = (
            history(&app, &token, &slow_id).await,
            history(&app, &token, &closed_id).await,
        );
        if !a.is_empty() && !b.is_empty() {
            break (a[a.len() - 1].clone(), b[b.len() - 1].clone());
        }
        assert!(Instant::now() < until, "no attempts: {a:?} {b:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("timed out: {timed_out}\nrefused: {refused}");
    for attempt in [&timed_out, &refused] {
        assert_eq!(attempt["succeeded"], false, "{attempt}");
        assert_eq!(attempt["status"], Value::Null, "{attempt}");
        assert_eq!(attempt["error"], "no answer from the receiver", "{attempt}");
    }
    assert_eq!(timed_out["durationMs"], refused["durationMs"]);
}

paddock_tests::on_both_backends!(
    plain: [
        a_slow_receiver_does_not_hold_another_drivers_delivery,
        a_failing_host_is_tried_once_per_window_across_drivers,
        no_answer_reads_the_same_whatever_the_cause,
    ],
);
