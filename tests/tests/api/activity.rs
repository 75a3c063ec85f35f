//! Activity: the feed and achievements, fed by their own queues, on both adapter sets; the
//! feed's rules; exactly-once processing under redelivery and concurrent delivery; poison and
//! failing events; the consumers' Lambda handlers.

use paddock_core::activity::{achievements, feed};
use paddock_core::events::{Event, EventKind, LeaderboardSubmitted, SessionUploaded};
use paddock_core::ids::UserId;
use paddock_core::outbox;
use paddock_core::ports::items::{Key, Query, item};
use paddock_core::ports::{Clock, ManualClock};
use paddock_core::queues::QueueName;
use paddock_core::tables::Table;
use paddock_core::workers::{self, RetryPolicy};
use paddock_tests::{Backend, TestApp, TestPorts, envelope, ports, session_body};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Polls the caller's feed until it holds `n` entries; answers them.
async fn feed_of(app: &TestApp, token: &str, n: usize) -> Vec<Value> {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (status, body) = envelope(app.get_auth("/v1/feed?limit=100", token).await).await;
        assert_eq!(status, 200, "{body}");
        last = body["data"]["items"].clone();
        if last.as_array().map_or(0, Vec::len) >= n {
            return last.as_array().unwrap().clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the feed did not reach {n} entries: {last}");
}

async fn upload(app: &TestApp, token: &str, csid: &str, laps: &[(i64, bool, f64)]) -> String {
    let body = session_body(csid, "2026-11-01T10:00:00Z", laps, 0);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert_eq!(status, 201, "{res}");
    res["data"]["sessionId"].as_str().unwrap().to_owned()
}

async fn my_achievements(app: &TestApp, token: &str) -> Vec<Value> {
    let (status, body) = envelope(app.get_auth("/v1/achievements", token).await).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["items"].as_array().unwrap().clone()
}

fn find<'a>(items: &'a [Value], id: &str) -> &'a Value {
    items
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

async fn an_upload_reaches_the_feed_and_unlocks_the_first_session(app: TestApp) {
    let (token, _) = app.driver("Feeder").await;
    upload(
        &app,
        &token,
        "a1",
        &[
            (138_456, true, 0.95),
            (139_000, true, 0.9),
            (141_000, false, 0.5),
        ],
    )
    .await;
    let entries = feed_of(&app, &token, 2).await;
    let session = entries
        .iter()
        .find(|e| e["kind"] == "session")
        .expect("a session entry");
    // Dated by the session's RecordedAt, not by when it was processed.
    assert_eq!(session["date"], "2026-11-01T10:00:00.000Z");
    assert_eq!(session["title"], "Drove 3 laps at Spa-Francorchamps (GP)");
    assert_eq!(
        session["subtitle"],
        "Porsche 992 GT3 R · best lap 2:18.456 · practice"
    );
    let unlocked = entries
        .iter()
        .find(|e| e["kind"] == "achievement")
        .expect("an unlock entry");
    assert_eq!(
        unlocked["title"],
        "Achievement unlocked: First synced session"
    );

    let mine = my_achievements(&app, &token).await;
    let first = find(&mine, "first-session");
    assert!(first["unlockedAt"].is_string(), "{first}");
    assert!(first["progress"].is_null());
    assert_eq!(
        find(&mine, "laps-100")["progress"],
        json!({"current": 3, "target": 100})
    );
    assert_eq!(
        find(&mine, "valid-laps-500")["progress"],
        json!({"current": 2, "target": 500})
    );
    assert!(
        find(&mine, "top-10")["progress"].is_null(),
        "rank achievements have no count"
    );

    let (status, catalog) = envelope(app.get_auth("/v1/achievements/catalog", &token).await).await;
    assert_eq!(status, 200);
    let catalog = catalog["data"]["items"].as_array().unwrap().clone();
    assert!(catalog.len() >= 15);
    let night = find(&catalog, "night");
    assert_eq!(
        (night["hidden"].as_bool(), night["title"].as_str()),
        (Some(true), Some("Hidden achievement"))
    );
    assert_eq!(
        find(&catalog, "first-session")["title"],
        "First synced session"
    );
    for path in ["/v1/feed", "/v1/achievements", "/v1/achievements/catalog"] {
        assert_eq!(app.get(path).await.status(), 401, "{path}");
    }
}

/// A driver's own post is stored (in one transaction with the check that the account is not
/// deleted) and heads the feed.
async fn a_post_reaches_the_feed_once_its_account_is_checked(app: TestApp) {
    let (token, _) = app.driver("Poster").await;
    let (status, created) = envelope(
        app.post_json_auth(
            "/v1/feed",
            &json!({"title": "Wet practice tonight"}),
            &token,
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (status, feed) = envelope(app.get_auth("/v1/feed", &token).await).await;
    assert_eq!(status, 200);
    assert_eq!(
        feed["data"]["items"][0]["title"], "Wet practice tonight",
        "{feed}"
    );
}

/// A session without a valid lap is stored and counted like any other (its lap spread is
/// simply unknown).
async fn a_session_without_valid_laps_is_counted_too(app: TestApp) {
    let (token, _) = app.driver("Offtrack").await;
    upload(
        &app,
        &token,
        "v1",
        &[(91_000, false, 0.4), (92_000, false, 0.3)],
    )
    .await;
    let entries = feed_of(&app, &token, 2).await;
    assert!(
        entries
            .iter()
            .any(|e| e["title"] == "Drove 2 laps at Spa-Francorchamps (GP)")
    );
    let mine = my_achievements(&app, &token).await;
    assert_eq!(find(&mine, "valid-laps-500")["progress"]["current"], 0);
    assert_eq!(find(&mine, "laps-100")["progress"]["current"], 2);
}

async fn a_submission_reaches_the_feed_with_its_time_and_rank(app: TestApp) {
    let (token, _) = app.driver("Quick").await;
    let session_id = upload(&app, &token, "b1", &[(138_456, true, 0.95)]).await;
    let body = json!({"SessionId": session_id, "LapTimeMs": 138_456, "QualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &body, &token)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["rank"], 1);
    // Session, submission, and the unlocks: first session, on the board, top ten, fastest.
    let entries = feed_of(&app, &token, 6).await;
    let submitted = entries
        .iter()
        .find(|e| e["kind"] == "leaderboard")
        .expect("a submission entry");
    assert_eq!(
        submitted["title"],
        "Set a leaderboard time at Spa-Francorchamps (GP)"
    );
    assert_eq!(submitted["subtitle"], "2:18.456 · P1 · Porsche 992 GT3 R");
    let mine = my_achievements(&app, &token).await;
    for id in ["first-session", "first-submission", "top-10", "fastest"] {
        assert!(find(&mine, id)["unlockedAt"].is_string(), "{id} unlocked");
    }
    // Unlocked ones come first, and a hidden one unlocked shows its title.
    assert_eq!(find(&mine, "fastest")["title"], "Fastest on a track");
    // Newest first.
    let dates: Vec<&str> = entries
        .iter()
        .map(|e| e["date"].as_str().unwrap())
        .collect();
    let mut sorted = dates.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(dates, sorted);
}

/// Signs `email` in again (tokens expire as the test clock moves on).
async fn login(app: &TestApp, email: &str) -> String {
    let body = json!({"email": email, "password": "correct horse battery"});
    let (status, res) = envelope(app.post_json("/v1/auth/login/email", &body).await).await;
    assert_eq!(status, 200, "{res}");
    res["data"]["accessToken"].as_str().unwrap().to_owned()
}

async fn posts_paging_and_the_ninety_day_rule(app: TestApp, clock: Arc<ManualClock>) {
    let email = format!("{}@example.com", paddock_tests::unique("poster"));
    let body =
        json!({"email": email, "password": "correct horse battery", "displayName": "Poster"});
    let (status, res) = envelope(app.post_json("/v1/auth/register", &body).await).await;
    assert_eq!(status, 201, "{res}");
    let token = res["data"]["accessToken"].as_str().unwrap().to_owned();
    let (other, _) = app.driver("Other").await;
    let post = |body: Value| {
        let app = &app;
        let token = token.clone();
        async move { envelope(app.post_json_auth("/v1/feed", &body, &token).await).await }
    };
    let (status, created) =
        post(json!({"Title": "  Wet practice tonight  ", "subtitle": "Anyone?"})).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["kind"], "post");
    assert_eq!(created["data"]["title"], "Wet practice tonight");
    assert_eq!(created["data"]["subtitle"], "Anyone?");

    for (body, message) in [
        (json!({"subtitle": "x"}), "title: is required"),
        (json!({"title": "   "}), "title: must not be empty"),
        (
            json!({"title": "x".repeat(101)}),
            "title: must be at most 100 characters",
        ),
        (
            json!({"title": "a\u{0007}b"}),
            "title: must not contain control",
        ),
        (
            json!({"title": "ok", "subtitle": "x".repeat(281)}),
            "subtitle: must be at most 280 characters",
        ),
        (json!({"title": 5}), "title"),
    ] {
        let (status, res) = post(body.clone()).await;
        assert_eq!(status, 400, "{body}: {res}");
        assert!(
            res["error"].as_str().unwrap().contains(message),
            "{body}: {res}"
        );
    }
    let raw = app
        .client
        .post(format!("{}/v1/feed", app.address))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{\"title\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);

    for n in 0..4 {
        clock.advance(time::Duration::seconds(1));
        let (status, res) = post(json!({"title": format!("post {n}")})).await;
        assert_eq!(status, 201, "{res}");
    }
    let (status, first) = envelope(app.get_auth("/v1/feed?limit=2", &token).await).await;
    assert_eq!(status, 200);
    let titles: Vec<&str> = first["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["post 3", "post 2"]);
    let cursor = first["data"]["nextCursor"].as_str().unwrap().to_owned();
    let (_, second) = envelope(
        app.get_auth(&format!("/v1/feed?limit=2&cursor={cursor}"), &token)
            .await,
    )
    .await;
    let titles: Vec<&str> = second["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["post 1", "post 0"]);
    // Another driver's cursor, and a garbled one, are refused.
    let (status, res) = envelope(
        app.get_auth(&format!("/v1/feed?cursor={cursor}"), &other)
            .await,
    )
    .await;
    assert_eq!(status, 400, "{res}");
    assert!(
        res["error"].as_str().unwrap().starts_with("cursor"),
        "{res}"
    );
    let (status, _) = envelope(app.get_auth("/v1/feed?cursor=%21%21", &token).await).await;
    assert_eq!(status, 400);
    let (status, _) = envelope(app.get_auth("/v1/feed?limit=0", &token).await).await;
    assert_eq!(status, 400);
    // Another driver sees none of it.
    let (_, theirs) = envelope(app.get_auth("/v1/feed", &other).await).await;
    assert_eq!(theirs["data"]["items"], json!([]));

    // Past 90 days, entries are never returned.
    clock.advance(time::Duration::days(89));
    let token = login(&app, &email).await;
    let (_, still) = envelope(app.get_auth("/v1/feed?limit=100", &token).await).await;
    assert_eq!(still["data"]["items"].as_array().unwrap().len(), 5);
    clock.advance(time::Duration::days(2));
    let token = login(&app, &email).await;
    let (_, gone) = envelope(app.get_auth("/v1/feed?limit=100", &token).await).await;
    assert_eq!(gone["data"]["items"], json!([]));
}

/// Drivers of the events these tests make up: one, one whose events go through, one
/// whose statistics item does not read.
const U1: &str = "5e1f0000-0000-4000-8000-000000000001";
const FINE: &str = "5e1f0000-0000-4000-8000-000000000002";
const BROKEN: &str = "5e1f0000-0000-4000-8000-000000000003";
const U2: &str = "5e1f0000-0000-4000-8000-000000000012";
const U3: &str = "5e1f0000-0000-4000-8000-000000000013";
const U4: &str = "5e1f0000-0000-4000-8000-000000000014";
const U5: &str = "5e1f0000-0000-4000-8000-000000000015";
/// The session and track of those events.
const S1: &str = "0190a0b2-0000-7000-8000-000000000001";
const T1: &str = "7a2c0000-0000-8000-8000-000000000001";

fn driver(user: &str) -> UserId {
    user.parse().expect("a user id")
}

fn session_event(t: &TestPorts, user: &str) -> Event {
    Event::new(
        EventKind::SessionUploaded(SessionUploaded {
            session_id: S1.parse().unwrap(),
            track_id: T1.parse().unwrap(),
            game_id: "acc".into(),
            track_name: "Monza".into(),
            track_layout: String::new(),
            vehicle_name: "Ferrari 296 GT3".into(),
            recorded_at: "2026-11-01T10:00:00Z".into(),
            session_phase: "Qualifying".into(),
            best_lap_ms: 107_250,
            lap_count: 12,
            job_id: None,
            valid_lap_count: 12,
            driving_ms: 1_300_000,
            valid_lap_spread_ms: Some(400),
        }),
        Some(driver(user)),
        t.clock.now(),
    )
}

/// Unlock items and `achievement.unlocked` outbox events of `user`.
async fn unlock_records(t: &TestPorts, user: &str) -> (usize, usize) {
    let unlocks = t
        .ports
        .items
        .query(Query::partition(Table::Activity, format!("ACH#{user}")).begins_with("UNLOCKED#"))
        .await
        .unwrap()
        .items
        .len();
    let mut events = 0;
    for shard in 0..outbox::SHARDS {
        let page = t
            .ports
            .items
            .query(Query::partition(
                Table::Outbox,
                format!("OUTBOX#{shard:02}"),
            ))
            .await
            .unwrap();
        events += page
            .items
            .iter()
            .filter_map(Event::from_item)
            .filter(|e| {
                matches!(e.kind, EventKind::AchievementUnlocked(_))
                    && e.user_id.as_ref().is_some_and(|u| u.as_str() == user)
            })
            .count();
    }
    (unlocks, events)
}

async fn sessions_counted(t: &TestPorts, user: &str) -> Value {
    let mine = achievements::for_driver(&t.ports, &driver(user))
        .await
        .unwrap();
    let mine = serde_json::to_value(mine).unwrap();
    let mine = mine.as_array().unwrap();
    find(mine, "sessions-100")["progress"]["current"].clone()
}

async fn redelivered_and_concurrent_events_count_once(backend: Backend) {
    let t = ports(backend).await;
    let event = session_event(&t, U1);
    // Twice at once, then once more: one count, each unlock once, one feed entry.
    let (a, b) = tokio::join!(
        achievements::process(&t.ports, &event),
        achievements::process(&t.ports, &event)
    );
    a.unwrap();
    b.unwrap();
    achievements::process(&t.ports, &event).await.unwrap();
    let (f1, f2, f3) = tokio::join!(
        feed::process(&t.ports, &event),
        feed::process(&t.ports, &event),
        feed::process(&t.ports, &event)
    );
    for result in [f1, f2, f3] {
        result.unwrap();
    }
    assert_eq!(sessions_counted(&t, U1).await, 1);
    // First session, quali mode, spotless and metronome.
    assert_eq!(unlock_records(&t, U1).await, (4, 4));
    let (entries, _) = feed::list(&t.ports, &driver(U1), 100, None).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].id, event.id.to_string());

    // The same event delivered twice through the queue to two consumer tasks at once.
    let second = session_event(&t, U2);
    let body = serde_json::to_string(&second).unwrap();
    let queue = t.ports.queues.get(QueueName::Achievements).clone();
    queue
        .send(vec![body.clone(), body.clone(), body])
        .await
        .unwrap();
    let (stop_tx, stop_rx) = watch::channel(false);
    let runners: Vec<_> = (0..2)
        .map(|_| {
            tokio::spawn(paddock_runtime::local_runner::run_consumer(
                QueueName::Achievements,
                t.ports.clone(),
                workers::processor(QueueName::Achievements),
                RetryPolicy::default(),
                stop_rx.clone(),
            ))
        })
        .collect();
    for _ in 0..100 {
        if queue.depth().await.unwrap() == Some(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_tx.send(true).unwrap();
    for r in runners {
        r.await.unwrap();
    }
    assert_eq!(queue.depth().await.unwrap(), Some(0));
    assert_eq!(sessions_counted(&t, U2).await, 1);
    assert_eq!(unlock_records(&t, U2).await, (4, 4));
}

/// Many distinct events of one driver at once: every one counted, no unlock twice.
async fn racing_events_of_one_driver_all_count(backend: Backend) {
    let t = ports(backend).await;
    let events: Vec<Event> = (0..10).map(|_| session_event(&t, U3)).collect();
    let results =
        futures::future::join_all(events.iter().map(|e| achievements::process(&t.ports, e))).await;
    for r in results {
        r.unwrap();
    }
    assert_eq!(sessions_counted(&t, U3).await, 10);
    // The four of the first session, "Hundred laps" at the ninth (12 laps each), "Regular"
    // at the tenth.
    assert_eq!(unlock_records(&t, U3).await, (6, 6));
}

async fn poison_and_failing_events_are_dead_lettered(backend: Backend) {
    let t = ports(backend).await;
    // Poison: unreadable, or an event without a driver.
    let mut orphan = session_event(&t, U4);
    orphan.user_id = None;
    let feed_queue = t.ports.queues.get(QueueName::Feed).clone();
    feed_queue
        .send(vec![
            "{\"kind\": \"session.uploaded\"".into(),
            serde_json::to_string(&orphan).unwrap(),
        ])
        .await
        .unwrap();
    // A failure: the driver's statistics item does not read, so every attempt fails.
    let broken = session_event(&t, U5);
    t.ports
        .items
        .put(
            Table::Activity,
            item(
                &Key::new(format!("ACH#{U5}"), "STATS"),
                json!({"sessions": "many", "version": 1}),
            ),
            None,
        )
        .await
        .unwrap();
    let achievements_queue = t.ports.queues.get(QueueName::Achievements).clone();
    achievements_queue
        .send(vec![serde_json::to_string(&broken).unwrap()])
        .await
        .unwrap();

    let policy = RetryPolicy {
        max_receives: 3,
        base_delay: Duration::from_millis(10),
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let runners: Vec<_> = [QueueName::Feed, QueueName::Achievements]
        .into_iter()
        .map(|q| {
            tokio::spawn(paddock_runtime::local_runner::run_consumer(
                q,
                t.ports.clone(),
                workers::processor(q),
                policy,
                stop_rx.clone(),
            ))
        })
        .collect();
    let mut dead = (Vec::new(), Vec::new());
    for _ in 0..100 {
        dead = (
            feed_queue.dead_letters(10).await.unwrap(),
            achievements_queue.dead_letters(10).await.unwrap(),
        );
        if dead.0.len() == 2 && dead.1.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_tx.send(true).unwrap();
    for r in runners {
        r.await.unwrap();
    }
    assert_eq!(
        dead.0.len(),
        2,
        "both poison bodies dead-lettered: {dead:?}"
    );
    assert_eq!(dead.1, vec![serde_json::to_string(&broken).unwrap()]);
    // Nothing half-applied: no unlock for the failing driver.
    assert_eq!(unlock_records(&t, U5).await, (0, 0));
}

paddock_tests::on_both_backends!(
    plain: [
        a_post_reaches_the_feed_once_its_account_is_checked,
        an_upload_reaches_the_feed_and_unlocks_the_first_session,
        a_session_without_valid_laps_is_counted_too,
        a_submission_reaches_the_feed_with_its_time_and_rank,
    ],
    clocked: [posts_paging_and_the_ninety_day_rule],
    ports: [
        redelivered_and_concurrent_events_count_once,
        racing_events_of_one_driver_all_count,
        poison_and_failing_events_are_dead_lettered,
    ],
);

/// The consumers' Lambda handlers report only the record that failed.
#[tokio::test]
async fn consumer_lambda_handlers_report_only_failed_records() {
    let t = ports(Backend::Embedded).await;
    t.ports
        .items
        .put(
            Table::Activity,
            item(
                &Key::new(format!("ACH#{BROKEN}"), "STATS"),
                json!({"sessions": "many"}),
            ),
            None,
        )
        .await
        .unwrap();
    let good = session_event(&t, FINE);
    let failing = session_event(&t, BROKEN);
    // A submission whose feed entry is larger than an item may be fails to write.
    let mut huge = LeaderboardSubmitted {
        track_id: T1.parse().unwrap(),
        session_id: S1.parse().unwrap(),
        lap_time_ms: 90_000,
        previous_best_ms: None,
        improved: true,
        rank: Some(2),
        game_id: "acc".into(),
        track_name: "Monza".into(),
        track_layout: String::new(),
        vehicle_name: String::new(),
        passing: None,
        car_passing: None,
        event_passing: Vec::new(),
    };
    huge.vehicle_name = "V".repeat(500 * 1024);
    let too_big = Event::new(
        EventKind::LeaderboardSubmitted(huge),
        Some(driver(FINE)),
        t.clock.now(),
    );
    let batch = |records: &[(&str, &Event)]| {
        let records: Vec<Value> = records
            .iter()
            .map(|(id, e)| json!({"messageId": id, "receiptHandle": format!("r-{id}"),
                "body": serde_json::to_string(e).unwrap(), "attributes": {"ApproximateReceiveCount": "1"}}))
            .collect();
        serde_json::from_value(json!({"Records": records})).expect("an SQS batch")
    };
    for (queue, failing) in [
        (QueueName::Achievements, &failing),
        (QueueName::Feed, &too_big),
    ] {
        let processor = workers::processor(queue);
        let answer = paddock_runtime::lambda::handle_worker_event(
            queue,
            batch(&[("good", &good), ("bad", failing)]),
            &t.ports,
            &processor,
        )
        .await;
        assert_eq!(
            serde_json::to_value(answer).unwrap(),
            json!({"batchItemFailures": [{"itemIdentifier": "bad"}]}),
            "{queue}"
        );
    }
    assert_eq!(sessions_counted(&t, FINE).await, 1);
    let (entries, _) = feed::list(&t.ports, &driver(FINE), 10, None).await.unwrap();
    assert_eq!(entries.len(), 1);
}
