//! Competition events through the API: a league's owner makes one, a member's lap driven in
//! its window counts for it through the ordinary submission, in the same answer; laps driven
//! outside the window, by non-members or after the close do not; the standings rank exactly;
//! a league's event is nothing to a non-member; bad plans are refused naming the field and the
//! rule. On both backends, and (the real-clock scenarios) through the functions.

use std::sync::Arc;

use futures::StreamExt;

use paddock_core::ports::{Clock, ManualClock};
use paddock_tests::{TestApp, envelope, session_body};
use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub(super) const CAR: &str = "Ferrari 296 GT3";

pub(super) fn text(t: OffsetDateTime) -> String {
    t.replace_nanosecond(0).unwrap().format(&Rfc3339).unwrap()
}

/// A league of `owner` with `members` joined; answers its id.
pub(super) async fn league_with(app: &TestApp, owner: &str, members: &[&str]) -> String {
    let body = json!({"name": "Thursday Hotlaps"});
    let (status, made) = app
        .call(Method::POST, "/v1/leagues", owner, Some(body))
        .await;
    assert_eq!(status, 201, "{made}");
    let code = made["data"]["inviteCode"].as_str().unwrap().to_owned();
    for member in members {
        let body = json!({"code": code});
        let (status, joined) = app
            .call(Method::POST, "/v1/leagues/join", member, Some(body))
            .await;
        assert_eq!(status, 201, "{joined}");
    }
    made["data"]["id"].as_str().unwrap().to_owned()
}

/// Uploads a session of one lap of `ms` driven at `recorded_at` and submits the lap; answers
/// the submission's status and data.
pub(super) async fn drive(
    app: &TestApp,
    token: &str,
    recorded_at: &str,
    ms: i64,
    car: &str,
) -> (u16, Value) {
    let mut body = session_body(
        &uuid::Uuid::new_v4().to_string(),
        recorded_at,
        &[(ms, true, 0.95)],
        0,
    );
    body["VehicleName"] = json!(car);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert!(status == 201 || status == 200, "{res}");
    let session = res["data"]["sessionId"].as_str().unwrap().to_owned();
    let body = json!({"sessionId": session, "lapTimeMs": ms, "qualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &body, token)
            .await,
    )
    .await;
    (status, res["data"].clone())
}

/// A track `token`'s driver raced an hour before `now` (so the track and the car exist);
/// answers its id.
pub(super) async fn raced_track(app: &TestApp, token: &str, now: OffsetDateTime) -> String {
    let earlier = text(now - time::Duration::hours(1));
    let (status, first) = drive(app, token, &earlier, 140_000, CAR).await;
    assert_eq!(status, 200, "{first}");
    first["trackId"].as_str().unwrap().to_owned()
}

/// Makes an event of `league` on `track` open from `opens` to `closes`; answers its data.
pub(super) async fn event_of(
    app: &TestApp,
    owner: &str,
    league: &str,
    track: &str,
    opens: OffsetDateTime,
    closes: OffsetDateTime,
) -> Value {
    let body = json!({
        "name": "Spa week", "trackId": track, "car": CAR.to_uppercase(),
        "opensAt": text(opens), "closesAt": text(closes),
    });
    let path = format!("/v1/leagues/{league}/events");
    let (status, made) = app.call(Method::POST, &path, owner, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    made["data"].clone()
}

/// The standings of `event` as `token` reads them: (user id, lap) fastest first.
async fn standings(app: &TestApp, token: &str, event: &str) -> Vec<(String, i64)> {
    let path = format!("/v1/events/{event}/standings?limit=100");
    let (status, page) = app.call(Method::GET, &path, token, None).await;
    assert_eq!(status, 200, "{page}");
    page["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["userId"].as_str().unwrap().to_owned(),
                e["lapTimeMs"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn a_members_lap_in_the_window_counts_in_the_same_answer(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let (bo, bo_id) = app.driver("Bo").await;
    let (cy, cy_id) = app.driver("Cy").await;
    let (dee, _) = app.driver("Dee").await;
    let league = league_with(&app, &ana, &[&bo, &cy]).await;
    let now = OffsetDateTime::now_utc();
    let earlier = text(now - time::Duration::hours(2));
    // The track and the car exist once someone has raced them.
    let (status, first) = drive(&app, &ana, &earlier, 140_000, CAR).await;
    assert_eq!(status, 200, "{first}");
    assert!(first.get("events").is_none(), "no event yet: {first}");
    let track = first["trackId"].as_str().unwrap().to_owned();
    let event = event_of(
        &app,
        &ana,
        &league,
        &track,
        now - time::Duration::minutes(1),
        now + time::Duration::hours(1),
    )
    .await;
    assert_eq!(
        (&event["state"], &event["car"]),
        (&json!("open"), &json!(CAR)),
        "{event}"
    );
    let id = event["id"].as_str().unwrap().to_owned();

    let inside = text(now - time::Duration::seconds(20));
    let (status, bo_lap) = drive(&app, &bo, &inside, 139_000, CAR).await;
    assert_eq!(status, 200, "{bo_lap}");
    assert_eq!(
        bo_lap["events"],
        json!([{"eventId": id, "improved": true, "bestMs": 139_000, "rank": 1}]),
        "{bo_lap}"
    );
    let (_, cy_lap) = drive(&app, &cy, &inside, 138_500, CAR).await;
    assert_eq!(cy_lap["events"][0]["rank"], 1, "{cy_lap}");
    // A slower lap of Bo's leaves his entry; a faster one replaces it.
    let (_, slower) = drive(&app, &bo, &inside, 139_500, CAR).await;
    assert_eq!(
        slower["events"],
        json!([{"eventId": id, "improved": false, "bestMs": 139_000, "rank": 2}]),
        "{slower}"
    );
    // Outside the window, in another car, or by a non-member: the boards only.
    let (_, before) = drive(&app, &cy, &earlier, 130_000, CAR).await;
    assert!(
        before.get("events").is_none(),
        "driven before the window: {before}"
    );
    let (_, other_car) = drive(&app, &bo, &inside, 131_000, "BMW M4 GT3").await;
    assert!(
        other_car.get("events").is_none(),
        "another car: {other_car}"
    );
    let (status, outsider) = drive(&app, &dee, &inside, 129_000, CAR).await;
    assert_eq!(status, 200, "{outsider}");
    assert!(outsider.get("events").is_none(), "not a member: {outsider}");

    assert_eq!(
        standings(&app, &ana, &id).await,
        [(cy_id.clone(), 138_500), (bo_id.clone(), 139_000)]
    );
    let path = format!("/v1/events/{id}/standings?around=me");
    let (status, mine) = app.call(Method::GET, &path, &bo, None).await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["data"]["entries"][1]["rank"], 2, "{mine}");
    assert_eq!(mine["data"]["totalEntries"], 2);
    let (status, _) = app.call(Method::GET, &path, &ana, None).await;
    assert_eq!(status, 404, "Ana has no entry");
    // A league's event is nothing to anyone outside it.
    for path in [
        format!("/v1/events/{id}"),
        format!("/v1/events/{id}/standings"),
        format!("/v1/leagues/{league}/events"),
    ] {
        let (status, hidden) = app.call(Method::GET, &path, &dee, None).await;
        assert_eq!(status, 404, "{path}: {hidden}");
    }
    let (status, listed) = app
        .call(
            Method::GET,
            &format!("/v1/leagues/{league}/events"),
            &cy,
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"]["items"][0]["id"], id.as_str());
    // A second event of the league: one lap counts for both (one membership check).
    let second = event_of(
        &app,
        &ana,
        &league,
        &track,
        now - time::Duration::minutes(1),
        now + time::Duration::hours(2),
    )
    .await;
    let second = second["id"].as_str().unwrap().to_owned();
    let (status, both) = drive(&app, &cy, &inside, 138_000, CAR).await;
    assert_eq!(status, 200, "{both}");
    let counted: Vec<(&str, u64)> = both["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["eventId"].as_str().unwrap(), e["rank"].as_u64().unwrap()))
        .collect();
    assert_eq!(counted, [(id.as_str(), 1), (second.as_str(), 1)], "{both}");
    let (status, public) = app.call(Method::GET, "/v1/events", &dee, None).await;
    assert_eq!(status, 200, "{public}");
    assert!(
        public["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["id"] != id.as_str()),
        "{public}"
    );
}

async fn bad_plans_are_refused_naming_the_field_and_the_rule(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let (bo, _) = app.driver("Bo").await;
    let league = league_with(&app, &ana, &[&bo]).await;
    let now = OffsetDateTime::now_utc();
    let track = raced_track(&app, &ana, now).await;
    let path = format!("/v1/leagues/{league}/events");
    let opens = text(now + time::Duration::hours(1));
    let closes = text(now + time::Duration::hours(2));
    for (body, rule) in [
        (
            json!({"trackId": track, "opensAt": opens, "closesAt": closes}),
            "name: is required",
        ),
        (
            json!({"name": "x", "trackId": track, "opensAt": closes, "closesAt": opens}),
            "closesAt: must be after opensAt",
        ),
        (
            json!({"name": "x", "trackId": track, "opensAt": text(now - time::Duration::days(2)), "closesAt": text(now - time::Duration::days(1))}),
            "opensAt: must not lie in the past",
        ),
        (
            json!({"name": "x", "trackId": track, "opensAt": opens, "closesAt": text(now + time::Duration::days(40))}),
            "closesAt: must be at most 31 days after opensAt",
        ),
        (
            json!({"name": "x", "trackId": uuid::Uuid::new_v4(), "opensAt": opens, "closesAt": closes}),
            "trackId: no track has this id",
        ),
        (
            json!({"name": "x", "trackId": track, "car": "Mazda MX-5", "opensAt": opens, "closesAt": closes}),
            "car: nobody has raced this car",
        ),
        (
            json!({"name": "x", "trackId": track, "opensAt": opens, "closesAt": closes, "minQuality": 0.5}),
            "minQuality: must be a number from 0.8 to 1",
        ),
        (
            json!({"name": "x", "trackId": track, "opensAt": opens, "closesAt": closes, "recurrence": {"everyDays": 7, "rounds": 60}}),
            "recurrence.rounds: must be a whole number from 2 to 52",
        ),
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
    let body = json!({"name": "Mine", "trackId": track, "opensAt": opens, "closesAt": closes});
    let (status, refused) = app.call(Method::POST, &path, &bo, Some(body.clone())).await;
    assert_eq!(status, 403, "a member, not the owner: {refused}");
    let (stranger, _) = app.driver("Cy").await;
    let (status, _) = app.call(Method::POST, &path, &stranger, Some(body)).await;
    assert_eq!(status, 404, "not in the league");
    let (status, _) = app
        .call(Method::GET, "/v1/events/not-an-id", &ana, None)
        .await;
    assert_eq!(status, 404);
}

/// Laps submitted after the close never reach the standings, however they were driven.
async fn the_close_freezes_the_standings(app: TestApp, clock: Arc<ManualClock>) {
    let (ana, _) = app.driver("Ana").await;
    let mut drivers = Vec::new();
    for n in 0..8 {
        drivers.push(app.driver(&format!("D{n}")).await);
    }
    let tokens: Vec<&str> = drivers.iter().map(|(t, _)| t.as_str()).collect();
    let league = league_with(&app, &ana, &tokens).await;
    let now = clock.now();
    let track = raced_track(&app, &ana, now).await;
    let event = event_of(
        &app,
        &ana,
        &league,
        &track,
        now,
        now + time::Duration::minutes(30),
    )
    .await;
    let id = event["id"].as_str().unwrap().to_owned();
    let inside = text(now + time::Duration::minutes(1));
    clock.advance(time::Duration::minutes(2));
    let mut oracle = Vec::new();
    for (n, (token, user)) in drivers.iter().enumerate().take(4) {
        let ms = 135_000 + 100 * n as i64;
        let (_, lap) = drive(&app, token, &inside, ms, CAR).await;
        assert_eq!(lap["events"][0]["rank"], 1 + n as u64, "{lap}");
        oracle.push((user.clone(), ms));
    }
    clock.advance(time::Duration::minutes(30));
    // Driven inside the window, submitted after its close: the boards only.
    for (token, _) in &drivers {
        let (status, late) = drive(&app, token, &inside, 120_000, CAR).await;
        assert_eq!(status, 200, "{late}");
        assert!(late.get("events").is_none(), "{late}");
    }
    let (status, finished) = app
        .call(Method::GET, &format!("/v1/events/{id}"), &ana, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(finished["data"]["state"], "finished", "{finished}");
    assert_eq!(standings(&app, &ana, &id).await, oracle);

    // Ticks racing each other close it and tell each entrant their final position once.
    let ticks =
        futures::future::join_all((0..3).map(|_| paddock_core::maintenance::tick(&app.ports)))
            .await;
    let told: usize = ticks.iter().map(|t| t.events.as_ref().unwrap().told).sum();
    assert!(told <= oracle.len(), "{ticks:?}");
    let started: usize = ticks
        .iter()
        .map(|t| t.events.as_ref().unwrap().told_started)
        .sum();
    assert!(started <= drivers.len() + 1, "{ticks:?}");
    for (n, (token, _)) in drivers.iter().enumerate().take(4) {
        let results = finishes_in_feed(&app, token, 1).await;
        assert_eq!(results, [format!("Finished P{} of 4 in Spa week", n + 1)]);
    }
    // The close took the event's copies off the members' league rows.
    for (_, user) in &drivers {
        let rows = paddock_core::ports::items::Query::partition(
            paddock_core::tables::Table::Competitions,
            format!("DRIVER#{user}"),
        );
        let rows = app.ports.items.query(rows).await.unwrap().items;
        assert!(!rows.is_empty());
        let copies = rows
            .iter()
            .flat_map(|r| r.keys())
            .filter(|k| k.starts_with("live_"));
        assert_eq!(copies.count(), 0, "{rows:?}");
    }
    // Every member, entrant or not, was told once that it opened.
    for token in tokens.iter().chain([&ana.as_str()]) {
        let opened = feed_titles(&app, token, "Spa week is open", 1).await;
        assert_eq!(opened, ["Spa week is open"]);
    }
    paddock_core::maintenance::tick(&app.ports)
        .await
        .events
        .unwrap();
    let (_, unlocked) = app
        .call(Method::GET, "/v1/achievements", drivers[0].0.as_str(), None)
        .await;
    let ids = unlocked.to_string();
    assert!(
        ids.contains("\"podium\"") && ids.contains("\"first-event\""),
        "{unlocked}"
    );
    // Only entrants are told: the others' feeds hold their own laps alone.
    let (_, feed) = app
        .call(
            Method::GET,
            "/v1/feed?limit=100",
            drivers[5].0.as_str(),
            None,
        )
        .await;
    assert!(!feed.to_string().contains("Finished P"), "{feed}");
}

/// The titles of the event results in the feed of `token`, once it holds `n` of them.
async fn finishes_in_feed(app: &TestApp, token: &str, n: usize) -> Vec<String> {
    feed_titles(app, token, "Finished P", n).await
}

/// The titles in the feed of `token` that start with `start`, once it holds `n` of them (and
/// a moment more, for one that must not come).
pub(super) async fn feed_titles(app: &TestApp, token: &str, start: &str, n: usize) -> Vec<String> {
    let mut last = Vec::new();
    // The feed consumer may be behind a burst of events: up to a minute.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let (status, feed) = app
            .call(Method::GET, "/v1/feed?limit=100", token, None)
            .await;
        assert_eq!(status, 200, "{feed}");
        last = feed["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["title"].as_str())
            .filter(|t| t.starts_with(start))
            .map(str::to_owned)
            .collect();
        if last.len() >= n {
            // A moment more, for a second one that must not come.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let (_, feed) = app
                .call(Method::GET, "/v1/feed?limit=100", token, None)
                .await;
            return feed["data"]["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["title"].as_str())
                .filter(|t| t.starts_with(start))
                .map(str::to_owned)
                .collect();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the feed did not reach {n} event results: {last:?}");
}

const PASSWORD: &str = "correct horse battery";

/// A new sign-in of the driver registered with `email`; answers its access token.
async fn sign_in(app: &TestApp, email: &str) -> String {
    let body = json!({"email": email, "password": PASSWORD});
    let (status, signed) = envelope(app.post_json("/v1/auth/login/email", &body).await).await;
    assert_eq!(status, 200, "{signed}");
    signed["data"]["accessToken"].as_str().unwrap().to_owned()
}

/// The rounds `path` lists and their states, as `token` reads them.
async fn rounds(app: &TestApp, path: &str, token: &str) -> Vec<(u64, String)> {
    let (status, listed) = app.call(Method::GET, path, token, None).await;
    assert_eq!(status, 200, "{listed}");
    listed["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let round = e["series"]["round"].as_u64().unwrap();
            (round, e["state"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The tick opens a series' round and makes its next one once (ticks racing each other
/// included), closes each round after its window, and stops at the last round.
async fn a_series_runs_its_rounds_through_the_tick(app: TestApp, clock: Arc<ManualClock>) {
    // Signed in again once an hour has passed: sign-ins last an hour.
    let ana_email = format!("{}@example.com", paddock_tests::unique("ana"));
    let ana = app.register(&ana_email, PASSWORD).await["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let bo_email = format!("{}@example.com", paddock_tests::unique("bo"));
    let bo_signed = app.register(&bo_email, PASSWORD).await;
    let bo = bo_signed["accessToken"].as_str().unwrap().to_owned();
    let bo_id = bo_signed["user"]["id"].as_str().unwrap().to_owned();
    let league = league_with(&app, &ana, &[&bo]).await;
    let now = clock.now();
    let track = raced_track(&app, &ana, now).await;
    let body = json!({
        "name": "Daily Spa", "trackId": track,
        "opensAt": text(now + time::Duration::minutes(30)),
        "closesAt": text(now + time::Duration::minutes(90)),
        "recurrence": {"everyDays": 1, "rounds": 2},
    });
    let path = format!("/v1/leagues/{league}/events");
    let (status, made) = app.call(Method::POST, &path, &ana, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    let round_1 = made["data"]["id"].as_str().unwrap().to_owned();
    let series = json!({"seriesId": round_1, "round": 1, "rounds": 2, "everyDays": 1});
    assert_eq!(made["data"]["series"], series);
    let tick = || async {
        paddock_core::maintenance::tick(&app.ports)
            .await
            .events
            .unwrap()
    };
    tick().await;
    let upcoming = || "upcoming".to_owned();
    assert_eq!(
        rounds(&app, &path, &ana).await,
        [(1, upcoming())],
        "nothing due"
    );

    clock.advance(time::Duration::minutes(31));
    let ticks = futures::future::join_all((0..4).map(|_| tick())).await;
    let made: usize = ticks.iter().map(|t| t.rounds_made).sum();
    let opened: usize = ticks.iter().map(|t| t.opened).sum();
    // (The local server's own tick may have been first.)
    assert!(made <= 1 && opened <= 1, "{ticks:?}");
    let open = (1, "open".to_owned());
    assert_eq!(
        rounds(&app, &path, &ana).await,
        [open, (2, upcoming())],
        "one next round"
    );
    let (_, lap) = drive(&app, &bo, &text(clock.now()), 139_000, CAR).await;
    assert_eq!(lap["events"][0]["eventId"], round_1.as_str(), "{lap}");

    clock.advance(time::Duration::minutes(60));
    let ana = sign_in(&app, &ana_email).await;
    tick().await;
    let finished = (1, "finished".to_owned());
    assert_eq!(
        rounds(&app, &path, &ana).await,
        [(2, upcoming()), finished.clone()]
    );
    assert_eq!(
        standings(&app, &ana, &round_1).await,
        [(bo_id.clone(), 139_000)]
    );

    clock.advance(time::Duration::hours(23));
    let ana = sign_in(&app, &ana_email).await;
    tick().await;
    tick().await;
    let last = [(2, "open".to_owned()), finished];
    assert_eq!(
        rounds(&app, &path, &ana).await,
        last,
        "the last round makes no other"
    );

    // Round 2: Ana first, Bo second; once it has closed the season table counts both rounds.
    let bo = sign_in(&app, &bo_email).await;
    let (_, lap) = drive(&app, &ana, &text(clock.now()), 138_000, CAR).await;
    let round_2 = lap["events"][0]["eventId"].as_str().unwrap().to_owned();
    drive(&app, &bo, &text(clock.now()), 138_500, CAR).await;
    let path = format!("/v1/events/{round_2}/season");
    let (status, provisional) = app.call(Method::GET, &path, &bo, None).await;
    assert_eq!(status, 200, "{provisional}");
    assert_eq!(
        provisional["data"]["counted"],
        json!([round_1]),
        "{provisional}"
    );
    clock.advance(time::Duration::minutes(61));
    let (ana, bo) = (
        sign_in(&app, &ana_email).await,
        sign_in(&app, &bo_email).await,
    );
    tick().await;
    let (status, table) = app.call(Method::GET, &path, &bo, None).await;
    assert_eq!(status, 200, "{table}");
    let lines: Vec<(u64, &str, u64, Value)> = table["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let who = e["userId"].as_str().unwrap();
            (
                e["rank"].as_u64().unwrap(),
                who,
                e["points"].as_u64().unwrap(),
                e["finishes"].clone(),
            )
        })
        .collect();
    assert_eq!(lines[0], (1, bo_id.as_str(), 43, json!([1, 2])), "{table}");
    assert_eq!(
        (lines[1].0, lines[1].2, &lines[1].3),
        (2, 25, &json!([null, 1])),
        "{table}"
    );
    assert_eq!(
        table["data"]["counted"],
        json!([round_1, round_2]),
        "{table}"
    );
    assert_eq!(table["data"]["rounds"], 2);
    let (status, single) = app
        .call(
            Method::GET,
            &format!("/v1/events/{round_1}/season"),
            &ana,
            None,
        )
        .await;
    assert_eq!(
        (status, &single["data"]["counted"]),
        (200, &table["data"]["counted"]),
        "any round names the series"
    );
}

/// Only the drivers `Events__Operators` names make public events; anyone's lap counts for one.
async fn the_operator_makes_public_events_and_anyone_enters(app: TestApp, clock: Arc<ManualClock>) {
    let (op, op_id) = app.driver("Op").await;
    let (bo, bo_id) = app.driver("Bo").await;
    let now = clock.now();
    let track = raced_track(&app, &op, now).await;
    let body = json!({
        "name": "Open week", "trackId": track,
        "opensAt": text(now), "closesAt": text(now + time::Duration::days(7)),
    });
    let (status, refused) = app
        .call(Method::POST, "/v1/events", &bo, Some(body.clone()))
        .await;
    assert_eq!(status, 403, "{refused}");
    // The same store served with the operator named.
    let mut settings = app.settings.clone();
    settings.event_operators = vec![op_id.parse().unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let operated = paddock_tests::spawn_with(settings, app.ports.clone(), dir).await;
    let (status, made) = operated
        .call(Method::POST, "/v1/events", &op, Some(body))
        .await;
    assert_eq!(status, 201, "{made}");
    let id = made["data"]["id"].as_str().unwrap().to_owned();
    assert!(made["data"].get("leagueId").is_none(), "{made}");
    let (status, public) = app.call(Method::GET, "/v1/events", &bo, None).await;
    assert_eq!(status, 200, "{public}");
    assert_eq!(public["data"]["items"][0]["id"], id.as_str(), "{public}");
    clock.advance(time::Duration::minutes(1));
    let (_, lap) = drive(&app, &bo, &text(clock.now()), 139_000, CAR).await;
    assert_eq!(lap["events"][0]["eventId"], id.as_str(), "{lap}");
    assert_eq!(standings(&app, &op, &id).await, [(bo_id, 139_000)]);
}

/// A personal access token with `leagues` runs a league and makes its events; one with
/// `events:read` reads them and nothing more.
async fn tokens_read_events_and_run_leagues_by_scope(app: TestApp) {
    let (ana, _) = app.driver("Ana").await;
    let token = |scopes: Value| {
        let body = json!({"name": "league bot", "scopes": scopes});
        let app = &app;
        let ana = ana.clone();
        async move {
            let (status, made) = app.call(Method::POST, "/v1/tokens", &ana, Some(body)).await;
            assert_eq!(status, 201, "{made}");
            made["data"]["token"].as_str().unwrap().to_owned()
        }
    };
    let (runner, reader) = (
        token(json!(["leagues"])).await,
        token(json!(["events:read"])).await,
    );
    let league = league_with(&app, &runner, &[]).await;
    let now = OffsetDateTime::now_utc();
    let track = raced_track(&app, &ana, now).await;
    let opens = now + time::Duration::hours(1);
    let event = event_of(
        &app,
        &runner,
        &league,
        &track,
        opens,
        opens + time::Duration::hours(1),
    )
    .await;
    let id = event["id"].as_str().unwrap();
    let (status, read) = app
        .call(Method::GET, &format!("/v1/events/{id}"), &reader, None)
        .await;
    assert_eq!((status, &read["data"]["id"]), (200, &event["id"]), "{read}");
    let path = format!("/v1/leagues/{league}/events");
    let body = json!({"name": "x", "trackId": track, "opensAt": text(opens), "closesAt": text(opens + time::Duration::hours(1))});
    let (status, refused) = app.call(Method::POST, &path, &reader, Some(body)).await;
    assert_eq!(status, 403, "events:read makes nothing: {refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("`leagues`"),
        "{refused}"
    );
    let (status, refused) = app
        .call(Method::GET, &format!("/v1/events/{id}"), &runner, None)
        .await;
    assert_eq!(status, 403, "leagues reads no event: {refused}");
}

/// 50 drivers submit laps before, inside and after a public event's window (and laps driven
/// before it, submitted inside it), and 50 more race its close in the last second: the
/// standings are an oracle's sort of exactly the laps committed before the close (every lap
/// driven and submitted inside the window, and those racing the close whose answers listed the
/// event: each racing lap is in or out whole). The close changes nothing, and each entrant is
/// told their final position once.
async fn fifty_inside_and_fifty_racing_the_close(app: TestApp, clock: Arc<ManualClock>) {
    let (op, op_id) = app.driver("Op").await;
    let now = clock.now();
    let track = raced_track(&app, &op, now).await;
    // The same store served with the operator named, and room for 100 registrations.
    let mut settings = app.settings.clone();
    settings.event_operators = vec![op_id.parse().unwrap()];
    settings.auth.attempts_per_address = 1_000;
    let dir = tempfile::tempdir().unwrap();
    let site = paddock_tests::spawn_with(settings, app.ports.clone(), dir).await;
    let site = &site;
    let drivers = futures::future::join_all(
        (0..100).map(|n| async move { site.driver(&format!("Driver{n:03}")).await }),
    )
    .await;
    let (steady, racing) = drivers.split_at(50);
    let opens = now + time::Duration::minutes(5);
    let closes = opens + time::Duration::minutes(15);
    let body = json!({
        "name": "Close race", "trackId": track,
        "opensAt": text(opens), "closesAt": text(closes),
    });
    let (status, made) = site.call(Method::POST, "/v1/events", &op, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    let id = made["data"]["id"].as_str().unwrap().to_owned();
    // Answers whether the submission of a lap of `ms` driven at `at` counted for the event.
    let counted = |token: String, at: String, ms: i64| async move {
        let (status, lap) = drive(site, &token, &at, ms, CAR).await;
        assert_eq!(status, 200, "{lap}");
        lap.get("events").is_some()
    };
    let all = |drivers: &[(String, String)], at: String, ms: fn(usize) -> i64| {
        futures::future::join_all(
            drivers
                .iter()
                .enumerate()
                .map(|(n, (token, _))| counted(token.clone(), at.clone(), ms(n))),
        )
    };

    // Before the window: nothing counts.
    let before = all(steady, text(clock.now()), |n| 110_000 + n as i64).await;
    assert!(before.iter().all(|c| !c), "before the window");
    clock.advance(time::Duration::minutes(5) + time::Duration::seconds(1));
    // Inside: a lap driven before the window does not count; one driven inside does.
    let early = all(steady, text(opens - time::Duration::minutes(1)), |n| {
        111_000 + n as i64
    })
    .await;
    assert!(early.iter().all(|c| !c), "driven before the window");
    let inside = all(steady, text(clock.now()), |n| 130_000 + 98 * n as i64).await;
    assert!(inside.iter().all(|c| *c), "driven and submitted inside");
    let mut oracle: Vec<(String, i64)> = steady
        .iter()
        .enumerate()
        .map(|(n, (_, user))| (user.clone(), 130_000 + 98 * n as i64))
        .collect();

    // The last second: 50 laps race the close.
    clock.advance(time::Duration::minutes(15) - time::Duration::seconds(2));
    let racing_ms = |n: usize| 129_001 + 62 * n as i64;
    let driven = text(clock.now() - time::Duration::minutes(1));
    let close = async {
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        clock.advance(time::Duration::seconds(2));
    };
    let (raced, ()) = tokio::join!(all(racing, driven, racing_ms), close);
    let (ins, outs) = (
        raced.iter().filter(|c| **c).count(),
        raced.iter().filter(|c| !**c).count(),
    );
    println!("racing the close: {ins} in, {outs} out");
    oracle.extend(
        racing
            .iter()
            .zip(&raced)
            .enumerate()
            .filter(|(_, (_, counted))| **counted)
            .map(|(n, ((_, user), _))| (user.clone(), racing_ms(n))),
    );
    oracle.sort_by_key(|(_, ms)| *ms);

    // After the close: nothing counts, however fast.
    let after = all(steady, text(clock.now()), |n| 100_000 + n as i64).await;
    assert!(after.iter().all(|c| !c), "after the close");
    assert_eq!(standings(&app, &op, &id).await, oracle);
    paddock_core::maintenance::tick(&app.ports)
        .await
        .events
        .unwrap();
    assert_eq!(
        standings(&app, &op, &id).await,
        oracle,
        "the close changed nothing"
    );

    // Each entrant told once, with their place.
    let entrants = oracle.len();
    let tokens: std::collections::HashMap<&str, &str> = drivers
        .iter()
        .map(|(token, user)| (user.as_str(), token.as_str()))
        .collect();
    // A few feeds at a time: a hundred pollers would slow the consumer they wait for.
    let told: Vec<_> = futures::stream::iter(oracle.iter().enumerate().map(|(n, (user, _))| {
        let token = tokens[user.as_str()];
        async move {
            let results = finishes_in_feed(site, token, 1).await;
            (
                results,
                format!("Finished P{} of {entrants} in Close race", n + 1),
            )
        }
    }))
    .buffer_unordered(8)
    .collect()
    .await;
    for (results, want) in told {
        assert_eq!(results, [want]);
    }
}

/// A lap that passes an entrant inside an event tells them (`board.passed` with the event's
/// id), besides the track's board.
async fn an_entrant_passed_in_an_event_hears_of_it(app: TestApp) {
    let receiver = paddock_tests::webhook_receiver::Receiver::start().await;
    let (ana, _) = app.driver("Ana").await;
    let (bo, _) = app.driver("Bo").await;
    let (cy, cy_id) = app.driver("Cy").await;
    let hook = json!({"url": receiver.url, "eventTypes": ["board.passed"]});
    let (status, made) = app
        .call(Method::POST, "/v1/webhooks", &bo, Some(hook))
        .await;
    assert_eq!(status, 201, "{made}");
    let league = league_with(&app, &ana, &[&bo, &cy]).await;
    let now = OffsetDateTime::now_utc();
    let track = raced_track(&app, &ana, now).await;
    let opens = now - time::Duration::minutes(1);
    let event = event_of(
        &app,
        &ana,
        &league,
        &track,
        opens,
        now + time::Duration::hours(1),
    )
    .await;
    let inside = text(now - time::Duration::seconds(20));
    drive(&app, &bo, &inside, 139_000, CAR).await;
    let (_, passing) = drive(&app, &cy, &inside, 138_000, CAR).await;
    assert_eq!(passing["events"][0]["rank"], 1, "{passing}");
    receiver
        .wait_for(
            std::time::Duration::from_secs(20),
            "three board.passed: the track's, the car's and the event's",
            |all| all.len() >= 3,
        )
        .await;
    let told: Vec<Value> = receiver
        .all()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap()["data"].clone())
        .collect();
    let in_event = told
        .iter()
        .find(|d| d.get("eventId").is_some())
        .expect("the event's");
    assert_eq!(in_event["eventId"], event["id"], "{told:?}");
    assert_eq!(
        (&in_event["previousRank"], &in_event["newRank"]),
        (&json!(1), &json!(2))
    );
    assert_eq!(in_event["passedBy"]["userId"], cy_id.as_str());
    assert!(
        told.iter()
            .any(|d| d.get("eventId").is_none() && d["vehicleName"].is_null()),
        "the track's: {told:?}"
    );
    assert!(
        told.iter().any(|d| d["vehicleName"] == CAR.to_lowercase()),
        "the car's: {told:?}"
    );
}

paddock_tests::on_both_backends!(
    plain: [
        a_members_lap_in_the_window_counts_in_the_same_answer,
        bad_plans_are_refused_naming_the_field_and_the_rule,
        tokens_read_events_and_run_leagues_by_scope,
        an_entrant_passed_in_an_event_hears_of_it,
    ],
    clocked: [
        the_close_freezes_the_standings,
        a_series_runs_its_rounds_through_the_tick,
        the_operator_makes_public_events_and_anyone_enters,
        fifty_inside_and_fifty_racing_the_close,
    ],
);
