//! Exact ranks without reading the board, on both backends: every page of the track's board
//! and of each car's board, every driver's place (`/me`), the page around a driver and every
//! submission's answer are compared with a brute-force ranking of what was submitted,
//! including equal times on the same and on different days, a driver improving past most of
//! the board, slower and equal submissions, account deletion, and a 50-way race.

use futures::future::join_all;
use paddock_core::ports::ManualClock;
use paddock_tests::{TestApp, envelope, session_body};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const CARS: [&str; 3] = ["Porsche 992 GT3 R", "Ferrari 296 GT3", "BMW M4 GT3"];

/// A driver of the test and their sign-in.
struct Driver {
    token: String,
    refresh: String,
    user_id: String,
}

/// Registers a driver.
async fn register(app: &TestApp, name: &str) -> Driver {
    let email = format!(
        "{}-{}@example.com",
        name.to_lowercase(),
        uuid::Uuid::new_v4()
    );
    let body = json!({"email": email, "password": "correct horse battery", "displayName": name});
    let (status, res) = envelope(app.post_json("/v1/auth/register", &body).await).await;
    assert_eq!(status, 201, "{res}");
    let d = &res["data"];
    Driver {
        token: d["accessToken"].as_str().unwrap().to_owned(),
        refresh: d["refreshToken"].as_str().unwrap().to_owned(),
        user_id: d["user"]["id"].as_str().unwrap().to_owned(),
    }
}

/// Moves the clock `days` on (less than the refresh tokens' 30); the drivers' access tokens
/// have expired meanwhile, so each refreshes its sign-in.
async fn days_later(app: &TestApp, clock: &ManualClock, drivers: &mut [Driver], days: i64) {
    clock.advance(time::Duration::days(days));
    for d in drivers {
        let body = json!({"refreshToken": d.refresh});
        let (status, res) = envelope(app.post_json("/v1/auth/refresh", &body).await).await;
        assert_eq!(status, 200, "{res}");
        d.token = res["data"]["accessToken"].as_str().unwrap().to_owned();
        d.refresh = res["data"]["refreshToken"].as_str().unwrap().to_owned();
    }
}

/// What the boards must show: each driver's best (lap, order of submission) on the track's
/// board and on each car's board.
#[derive(Default)]
struct Model {
    track: HashMap<String, (i64, u64)>,
    cars: HashMap<String, HashMap<String, (i64, u64)>>,
    submissions: u64,
}

impl Model {
    /// Records a submission; answers the driver's expected rank on the track's board after it.
    fn submit(&mut self, user: &str, ms: i64, car: &str) -> u64 {
        self.submissions += 1;
        let at = (ms, self.submissions);
        let better = |e: Option<&(i64, u64)>| e.is_none_or(|e| ms < e.0);
        if better(self.track.get(user)) {
            self.track.insert(user.to_owned(), at);
        }
        let board = self.cars.entry(car.to_lowercase()).or_default();
        if better(board.get(user)) {
            board.insert(user.to_owned(), at);
        }
        rank_of(&self.track, user)
    }

    fn remove(&mut self, user: &str) {
        self.track.remove(user);
        for board in self.cars.values_mut() {
            board.remove(user);
        }
    }
}

/// The board in rank order: (user, lap).
fn ranking(board: &HashMap<String, (i64, u64)>) -> Vec<(String, i64)> {
    let mut rows: Vec<_> = board.iter().collect();
    rows.sort_by_key(|(_, at)| **at);
    rows.into_iter()
        .map(|(u, (ms, _))| (u.clone(), *ms))
        .collect()
}

fn rank_of(board: &HashMap<String, (i64, u64)>, user: &str) -> u64 {
    ranking(board).iter().position(|(u, _)| u == user).unwrap() as u64 + 1
}

async fn submit_lap(
    app: &TestApp,
    clock: &ManualClock,
    driver: &Driver,
    csid: &str,
    ms: i64,
    car: &str,
) -> Value {
    submit_lap_at(app, clock, driver, csid, ms, car, "Spa-Francorchamps").await
}

/// Uploads a session of one lap on `track_name` in `car` and submits the lap; answers the
/// submission's data.
async fn submit_lap_at(
    app: &TestApp,
    clock: &ManualClock,
    driver: &Driver,
    csid: &str,
    ms: i64,
    car: &str,
    track_name: &str,
) -> Value {
    let mut body = session_body(csid, "2026-11-01T10:00:00Z", &[(ms, true, 0.95)], 0);
    body["TrackName"] = json!(track_name);
    body["VehicleName"] = json!(car);
    let (status, res) = envelope(
        app.post_json_auth("/v1/sessions", &body, &driver.token)
            .await,
    )
    .await;
    assert!(status == 201 || status == 200, "{res}");
    let session = res["data"]["sessionId"].as_str().unwrap().to_owned();
    let body = json!({"SessionId": session, "LapTimeMs": ms, "QualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &body, &driver.token)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{res}");
    clock.advance(time::Duration::milliseconds(7));
    res["data"].clone()
}

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> (u16, Value) {
    let res = match token {
        Some(t) => app.get_auth(path, t).await,
        None => app.get(path).await,
    };
    envelope(res).await
}

/// Every page of a board, following the cursors: (rank, user, lap) and the total.
async fn read_board(app: &TestApp, query: &str, limit: usize) -> (Vec<(u64, String, i64)>, u64) {
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/leaderboards?{query}&limit={limit}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let (status, page) = get(app, &path, None).await;
        assert_eq!(status, 200, "{path}: {page}");
        let d = &page["data"];
        let total = d["totalEntries"].as_u64().unwrap();
        for e in d["entries"].as_array().unwrap() {
            rows.push((
                e["rank"].as_u64().unwrap(),
                e["userId"].as_str().unwrap().to_owned(),
                e["lapTimeMs"].as_i64().unwrap(),
            ));
        }
        match d["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (rows, total),
        }
        assert!(rows.len() < 10_000, "paging does not end");
    }
}

fn expected(board: &HashMap<String, (i64, u64)>) -> Vec<(u64, String, i64)> {
    ranking(board)
        .into_iter()
        .zip(1..)
        .map(|((u, ms), rank)| (rank, u, ms))
        .collect()
}

/// The index of `driver` in `order`, checking the answer was 200; `None` (the answer 404)
/// for a driver not on the board.
fn place_of(
    order: &[(String, i64)],
    driver: &Driver,
    status: u16,
    answer: &Value,
) -> Option<usize> {
    let at = order.iter().position(|(u, _)| *u == driver.user_id);
    assert_eq!(status, if at.is_some() { 200 } else { 404 }, "{answer}");
    at
}

/// Compares every board, every driver's place and the page around some drivers with the
/// model.
async fn check(app: &TestApp, track: &str, model: &Model, drivers: &[Driver]) {
    let (rows, total) = read_board(app, &format!("trackId={track}"), 4).await;
    assert_eq!(rows, expected(&model.track), "the track's board");
    assert_eq!(total, model.track.len() as u64);
    for (car, board) in &model.cars {
        // Names match in any case.
        let query = format!("trackId={track}&vehicleName={}", car.to_uppercase());
        let (rows, total) = read_board(app, &query, 3).await;
        assert_eq!(rows, expected(board), "the board of {car}");
        assert_eq!(total, board.len() as u64);
    }
    let (_, vehicles) = get(
        app,
        &format!("/v1/leaderboards/vehicles?trackId={track}"),
        None,
    )
    .await;
    let listed: Vec<(String, u64)> = vehicles["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["vehicleName"].as_str().unwrap().to_lowercase(),
                v["totalEntries"].as_u64().unwrap(),
            )
        })
        .collect();
    // Listed from three drivers on, most drivers first (then by name).
    let mut cars: Vec<(String, u64)> = model
        .cars
        .iter()
        .filter(|(_, b)| b.len() >= 3)
        .map(|(c, b)| (c.clone(), b.len() as u64))
        .collect();
    cars.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(listed, cars, "the listed cars, their counts and order");

    let order = ranking(&model.track);
    for driver in drivers {
        let path = format!("/v1/leaderboards/me?trackId={track}");
        let (status, me) = get(app, &path, Some(&driver.token)).await;
        let Some(at) = place_of(&order, driver, status, &me) else {
            continue;
        };
        let d = &me["data"];
        let n = order.len() as f64;
        assert_eq!(d["rank"], at + 1);
        assert_eq!(d["totalEntries"], order.len());
        assert_eq!(d["entry"]["lapTimeMs"], order[at].1);
        assert_eq!(d["gapToFirstMs"], order[at].1 - order[0].1);
        let ahead = (at > 0).then(|| order[at].1 - order[at - 1].1);
        assert_eq!(d["gapToAheadMs"], json!(ahead));
        let percentile = ((n - at as f64) * 1000.0 / n).round() / 10.0;
        assert_eq!(d["percentile"].as_f64().unwrap(), percentile);
    }
    for driver in drivers.iter().step_by(7) {
        let path = format!("/v1/leaderboards?trackId={track}&around=me&limit=5");
        let (status, page) = get(app, &path, Some(&driver.token)).await;
        let Some(at) = place_of(&order, driver, status, &page) else {
            continue;
        };
        let got: Vec<(u64, String)> = page["data"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["rank"].as_u64().unwrap(),
                    e["userId"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let start = at.saturating_sub(2).min(order.len().saturating_sub(5));
        let want: Vec<(u64, String)> = order
            .iter()
            .enumerate()
            .skip(start)
            .take(5)
            .map(|(i, (u, _))| (i as u64 + 1, u.clone()))
            .collect();
        assert_eq!(got, want, "the page around {}", driver.user_id);
        assert!(got.iter().any(|(_, u)| *u == driver.user_id));
    }
}

async fn ranks_are_exact(app: TestApp, clock: Arc<ManualClock>) {
    let mut drivers = Vec::new();
    for i in 0..24 {
        drivers.push(register(&app, &format!("R{i}")).await);
    }
    let mut model = Model::default();
    let mut track = String::new();
    // Lap times with many equal ones; a new day every eight drivers, the third eight more than
    // a month after the first, so equal times fall on the same day, on other days of one
    // 32-day period of the tie counts, and in other periods.
    for i in 0..drivers.len() {
        if i == 8 {
            days_later(&app, &clock, &mut drivers, 1).await;
        }
        if i == 16 {
            days_later(&app, &clock, &mut drivers, 17).await;
            days_later(&app, &clock, &mut drivers, 17).await;
        }
        let d = &drivers[i];
        let ms = 90_000 + (i as i64 * 37 % 7) - 3;
        let car = CARS[i % 3];
        let answer = submit_lap(&app, &clock, d, &format!("a{i}"), ms, car).await;
        assert_eq!(
            answer["rank"],
            model.submit(&d.user_id, ms, car),
            "{answer}"
        );
        assert_eq!(answer["improved"], true);
        track = answer["trackId"].as_str().unwrap().to_owned();
    }
    check(&app, &track, &model, &drivers).await;

    // A driver improving past nearly everyone, in another car; a slower lap; an equal lap; a
    // driver's best in a second car that is slower than their overall best.
    days_later(&app, &clock, &mut drivers, 1).await;
    let steps = [
        (20, 89_990, CARS[1]),
        (5, 95_000, CARS[2]),
        (6, 90_000 + (6 * 37 % 7) - 3, CARS[0]),
        (3, 91_000, CARS[1]),
        (11, 89_997, CARS[2]),
    ];
    for (n, (i, ms, car)) in steps.into_iter().enumerate() {
        let d = &drivers[i];
        let answer = submit_lap(&app, &clock, d, &format!("b{n}"), ms, car).await;
        let before = model.track.get(&d.user_id).copied();
        assert_eq!(
            answer["rank"],
            model.submit(&d.user_id, ms, car),
            "{answer}"
        );
        assert_eq!(answer["improved"], json!(before.is_none_or(|b| ms < b.0)));
    }
    check(&app, &track, &model, &drivers).await;

    // A deleted driver leaves every board, and the counts with them.
    let gone = &drivers[9];
    let res = app
        .client
        .delete(format!("{}/v1/profile/me", app.address))
        .bearer_auth(&gone.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    model.remove(&gone.user_id);
    let want = model.track.len() as u64;
    for _ in 0..300 {
        let (_, page) = get(&app, &format!("/v1/leaderboards?trackId={track}"), None).await;
        if page["data"]["totalEntries"] == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let still: Vec<Driver> = drivers
        .into_iter()
        .filter(|d| d.user_id != model_gone(&model, d))
        .collect();
    check(&app, &track, &model, &still).await;
}

/// The user id of a driver no longer on any board ("" for one still there).
fn model_gone(model: &Model, d: &Driver) -> String {
    if model.track.contains_key(&d.user_id) {
        String::new()
    } else {
        d.user_id.clone()
    }
}

async fn a_fifty_way_race_leaves_the_fastest_and_exact_counts(
    app: TestApp,
    clock: Arc<ManualClock>,
) {
    let (token, user_id) = app.driver("Racer").await;
    let laps: Vec<(i64, bool, f64)> = (0..50).map(|i| (95_000 - i * 10, true, 0.9)).collect();
    let body = session_body("race", "2026-11-01T10:00:00Z", &laps, 0);
    let (_, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    let session = res["data"]["sessionId"].as_str().unwrap().to_owned();
    let track = res["data"]["trackId"].as_str().unwrap().to_owned();
    // Two other drivers, one on each side of the racer's laps.
    for (name, ms) in [("Quick", 90_000), ("Slow", 99_000)] {
        let d = register(&app, name).await;
        submit_lap(&app, &clock, &d, name, ms, CARS[0]).await;
    }
    let answers = join_all(laps.iter().map(|(ms, _, _)| {
        let body = json!({"SessionId": session, "LapTimeMs": ms, "QualityScore": 0.9});
        let (app, token) = (&app, &token);
        async move {
            // As the desktop client does: a 503 ("please retry", the store's own retries of
            // fifty conflicting transactions spent on a loaded emulator) is sent again.
            let mut attempt = 0;
            loop {
                let answer = envelope(
                    app.post_json_auth("/v1/leaderboards/submit", &body, token)
                        .await,
                )
                .await;
                attempt += 1;
                if answer.0 != 503 || attempt == 5 {
                    break answer;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100 * attempt)).await;
            }
        }
    }))
    .await;
    for (status, res) in &answers {
        assert_eq!(*status, 200, "{res}");
        assert_eq!(res["data"]["rank"], 2, "{res}");
    }
    let (rows, total) = read_board(&app, &format!("trackId={track}"), 100).await;
    assert_eq!(total, 3);
    assert_eq!(rows.len(), 3);
    assert_eq!((rows[1].1.as_str(), rows[1].2), (user_id.as_str(), 94_510));
    let (car_rows, car_total) = read_board(
        &app,
        &format!("trackId={track}&vehicleName=porsche%20992%20gt3%20r"),
        100,
    )
    .await;
    assert_eq!(car_total, 3);
    assert_eq!(car_rows, rows);
    let (_, me) = get(
        &app,
        &format!("/v1/leaderboards/me?trackId={track}"),
        Some(&token),
    )
    .await;
    assert_eq!(me["data"]["rank"], 2);
    assert_eq!(me["data"]["gapToFirstMs"], 4_510);
}

async fn the_callers_place_needs_a_token_and_an_entry(app: TestApp, clock: Arc<ManualClock>) {
    let d = register(&app, "Solo").await;
    let answer = submit_lap(&app, &clock, &d, "solo", 91_000, CARS[0]).await;
    let track = answer["trackId"].as_str().unwrap().to_owned();
    let (status, me) = get(
        &app,
        &format!("/v1/leaderboards/me?trackId={track}"),
        Some(&d.token),
    )
    .await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["data"]["rank"], 1);
    assert_eq!(me["data"]["percentile"], 100.0);
    assert_eq!(me["data"]["gapToAheadMs"], Value::Null);
    assert_eq!(me["data"]["gapToFirstMs"], 0);
    let res = app
        .get_auth(&format!("/v1/leaderboards/me?trackId={track}"), &d.token)
        .await;
    assert_eq!(res.headers()["cache-control"], "private, no-store");

    let (other, _) = app.driver("Nobody").await;
    for (path, token, status, field) in [
        (
            format!("/v1/leaderboards/me?trackId={track}"),
            None,
            401,
            None,
        ),
        (
            format!("/v1/leaderboards?trackId={track}&around=me"),
            None,
            401,
            None,
        ),
        (
            format!("/v1/leaderboards/me?trackId={track}"),
            Some(other.as_str()),
            404,
            None,
        ),
        (
            format!("/v1/leaderboards?trackId={track}&around=me"),
            Some(other.as_str()),
            404,
            None,
        ),
        (
            "/v1/leaderboards/me".to_owned(),
            Some(other.as_str()),
            400,
            Some("trackId"),
        ),
        (
            "/v1/leaderboards/me?trackId=x".to_owned(),
            Some(other.as_str()),
            400,
            Some("trackId"),
        ),
        (
            format!("/v1/leaderboards?trackId={track}&around=you"),
            Some(other.as_str()),
            400,
            Some("around"),
        ),
        (
            format!(
                "/v1/leaderboards?trackId={track}&vehicleName={}",
                "x".repeat(129)
            ),
            None,
            400,
            Some("vehicleName"),
        ),
        (
            "/v1/leaderboards/vehicles".to_owned(),
            None,
            400,
            Some("trackId"),
        ),
    ] {
        let (got, res) = get(&app, &path, token).await;
        assert_eq!(got, status, "{path}: {res}");
        if let Some(field) = field {
            assert!(res["error"].to_string().contains(field), "{path}: {res}");
        }
    }
    // A cursor is a position in the rank order: one made of anything else is refused.
    let forged = paddock_core::ports::items::encode_cursor("rank:5");
    let (status, res) = get(
        &app,
        &format!("/v1/leaderboards?trackId={track}&cursor={forged}"),
        None,
    )
    .await;
    assert_eq!(status, 400, "{res}");
    let (status, res) = get(
        &app,
        &format!("/v1/leaderboards?trackId={track}&around=me&cursor={forged}"),
        Some(&d.token),
    )
    .await;
    assert_eq!(status, 400, "{res}");
}

/// Every row of a board with its car: (rank, user, lap, car).
async fn rows_with_cars(app: &TestApp, track: &str) -> Vec<(u64, String, i64, String)> {
    let (_, page) = get(
        app,
        &format!("/v1/leaderboards?trackId={track}&limit=100"),
        None,
    )
    .await;
    page["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["rank"].as_u64().unwrap(),
                e["userId"].as_str().unwrap().to_owned(),
                e["lapTimeMs"].as_i64().unwrap(),
                e["vehicleName"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn boards_of_the_older_layout_are_counted_by_the_backfill(
    app: TestApp,
    clock: Arc<ManualClock>,
) {
    let mut drivers = Vec::new();
    for i in 0..12 {
        drivers.push(register(&app, &format!("Old{i}")).await);
    }
    let mut tracks = Vec::new();
    for (t, name) in ["Spa-Francorchamps", "Monza"].into_iter().enumerate() {
        let mut track = String::new();
        for (i, d) in drivers.iter().enumerate().skip(t * 3) {
            let ms = 100_000 + (i as i64 * 53 % 5) * 250;
            let csid = format!("{name}{i}");
            let answer = submit_lap_at(&app, &clock, d, &csid, ms, CARS[i % 3], name).await;
            track = answer["trackId"].as_str().unwrap().to_owned();
        }
        tracks.push(track);
    }
    let mut before = Vec::new();
    for track in &tracks {
        before.push(rows_with_cars(&app, track).await);
    }
    paddock_tests::downgrade_boards(&app).await;

    // Cut short after every page and resumed until done; then run again, changing nothing.
    let mut runs = 0;
    let mut counted = 0;
    loop {
        runs += 1;
        let report = paddock_core::leaderboards::backfill(&app.ports, Duration::ZERO)
            .await
            .unwrap();
        counted += report.counted;
        if report.done {
            break;
        }
        assert!(runs < 100, "the backfill does not finish");
    }
    assert!(runs >= 2, "resumed at least once");
    assert_eq!(counted, 12 + 9, "each entry counted once");
    let again = paddock_core::leaderboards::backfill(&app.ports, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!((again.counted, again.done), (0, true));

    for (track, rows) in tracks.iter().zip(&before) {
        // (The backfill drops the cached pages of each board it finishes.)
        assert_eq!(
            &rows_with_cars(&app, track).await,
            rows,
            "the board is the same"
        );
        let (_, total) = read_board(&app, &format!("trackId={track}"), 5).await;
        assert_eq!(total, rows.len() as u64);
        // Each car's board holds the bests set in it, ranked among themselves.
        for car in CARS {
            let want: Vec<(u64, String, i64)> = rows
                .iter()
                .filter(|r| r.3 == car)
                .zip(1..)
                .map(|(r, rank)| (rank, r.1.clone(), r.2))
                .collect();
            let query = format!("trackId={track}&vehicleName={car}");
            let (got, total) = read_board(&app, &query, 2).await;
            assert_eq!(got, want, "{car}");
            assert_eq!(total, want.len() as u64);
        }
        for d in &drivers {
            let (status, me) = get(
                &app,
                &format!("/v1/leaderboards/me?trackId={track}"),
                Some(&d.token),
            )
            .await;
            match rows.iter().find(|r| r.1 == d.user_id) {
                Some(r) => assert_eq!((status, me["data"]["rank"].as_u64()), (200, Some(r.0))),
                None => assert_eq!(status, 404),
            }
            // The driver's page finds the track through the track index the backfill wrote.
            let page = app
                .get(&format!("/drivers/{}", d.user_id))
                .await
                .text()
                .await
                .unwrap();
            let on_board = rows.iter().any(|r| r.1 == d.user_id);
            assert_eq!(
                page.contains(&format!("/boards/{track}")),
                on_board,
                "{page}"
            );
        }
        // Every car three drivers or more raced is listed again.
        let (_, cars) = get(
            &app,
            &format!("/v1/leaderboards/vehicles?trackId={track}"),
            None,
        )
        .await;
        let listed = cars["data"]["items"].as_array().unwrap().len();
        let raced = CARS
            .iter()
            .filter(|car| rows.iter().filter(|r| r.3 == **car).count() >= 3)
            .count();
        assert_eq!(listed, raced, "{cars}");
        assert!(listed > 0);
    }
}

/// The bench's loader of the older layout (`BulkBoard::older_layout`) writes what the backfill
/// upgrades: after the backfill its board, its cars' boards and its car listing read as the
/// same entries loaded in the current layout.
async fn a_board_loaded_in_the_older_layout_reads_as_the_current_one_after_the_backfill(
    app: TestApp,
    _clock: Arc<ManualClock>,
) {
    use paddock_core::leaderboards::bulk::{BulkBoard, BulkEntry};
    use paddock_core::ports::items::Key;
    use paddock_core::tracks::{TrackKey, count_session_op};
    let older = TrackKey::new("acc", "Older Ring", "GP");
    let current = TrackKey::new("acc", "Current Ring", "GP");
    let table = paddock_core::tables::Table::Leaderboards;
    // The server's own start-up backfill ends first (else it may count some of the board).
    let started = std::time::Instant::now();
    loop {
        let key = Key::new("LAYOUT", "INDEXES");
        let progress = app.ports.items.get(table, &key).await.unwrap();
        if progress.is_some_and(|p| p["done"] == true) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no start-up backfill"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let at = time::OffsetDateTime::from_unix_timestamp(1_790_000_000).unwrap();
    let entries: Vec<BulkEntry> = (0..40_usize)
        .map(|i| BulkEntry {
            user_id: format!("00000000-0000-4000-8000-{i:012}").parse().unwrap(),
            display_name: format!("Bulk {i}"),
            // Equal times among them, ranked by submission.
            lap_time_ms: 100_000 + (i as i64 * 37 % 11) * 100,
            vehicle_name: CARS[i % 3].to_owned(),
            session_id: format!("00000000-0000-4000-9000-{i:012}").parse().unwrap(),
            submitted_at: at + time::Duration::minutes(i as i64 % 7),
        })
        .collect();
    for (key, mut board) in [
        (&older, BulkBoard::older_layout(&older.id())),
        (&current, BulkBoard::new(&current.id())),
    ] {
        let track = vec![count_session_op(key)];
        app.ports.items.transact(track).await.unwrap();
        board.add(&app.ports, &entries).await.unwrap();
        board.finish(&app.ports).await.unwrap();
    }
    // An older deployment has no progress items (the server's start may have written them).
    for sk in ["COUNTS", "INDEXES"] {
        let key = Key::new("LAYOUT", sk);
        app.ports.items.delete(table, &key, None).await.unwrap();
    }
    let mut counted = 0;
    for _ in 0..100 {
        let report = paddock_core::leaderboards::backfill(&app.ports, Duration::from_secs(5))
            .await
            .unwrap();
        counted += report.counted;
        if report.done {
            break;
        }
    }
    // The local server's maintenance tick may run a step of the backfill meanwhile and count
    // some of them itself: the reads below (totals included) show each was counted once.
    assert!(counted <= 40, "{counted} counted for 40 entries");
    let (older, current) = (older.id().to_string(), current.id().to_string());
    let rows = rows_with_cars(&app, &current).await;
    assert_eq!(rows.len(), 40);
    assert_eq!(rows_with_cars(&app, &older).await, rows);
    let read = |track: &str, car: Option<&str>| {
        let query = match car {
            Some(car) => format!("trackId={track}&vehicleName={car}"),
            None => format!("trackId={track}"),
        };
        let app = &app;
        async move { read_board(app, &query, 7).await }
    };
    assert_eq!(read(&older, None).await, read(&current, None).await);
    for car in CARS {
        let board = read(&current, Some(car)).await;
        assert!(board.1 > 0, "{car}");
        assert_eq!(read(&older, Some(car)).await, board, "{car}");
    }
    let cars = |track: String| {
        let app = &app;
        async move {
            let path = format!("/v1/leaderboards/vehicles?trackId={track}");
            get(app, &path, None).await.1["data"]["items"].clone()
        }
    };
    assert_eq!(cars(older).await, cars(current).await);
}

paddock_tests::on_both_backends!(
    plain: [],
    clocked: [
        boards_of_the_older_layout_are_counted_by_the_backfill,
        a_board_loaded_in_the_older_layout_reads_as_the_current_one_after_the_backfill,
        ranks_are_exact,
        a_fifty_way_race_leaves_the_fastest_and_exact_counts,
        the_callers_place_needs_a_token_and_an_entry,
    ]
);
