//! Leaderboards: submission rules, one entry per (track, user), ranking, paging, the cache
//! and its HTTP validators, in local mode and against DynamoDB Local.

use futures::future::join_all;
use paddock_core::ports::ManualClock;
use paddock_tests::{TestApp, envelope, session_body};
use serde_json::{Value, json};
use std::sync::Arc;

/// Uploads a session of `laps` for `token`; answers (session id, track id).
async fn session(
    app: &TestApp,
    token: &str,
    csid: &str,
    laps: &[(i64, bool, f64)],
) -> (String, String) {
    let body = session_body(csid, "2026-11-01T10:00:00Z", laps, 0);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert!(status == 201 || status == 200, "{res}");
    (
        res["data"]["sessionId"].as_str().unwrap().to_owned(),
        res["data"]["trackId"].as_str().unwrap().to_owned(),
    )
}

async fn submit(
    app: &TestApp,
    token: &str,
    session_id: &str,
    ms: i64,
    quality: f64,
) -> (u16, Value) {
    let body = json!({"SessionId": session_id, "LapTimeMs": ms, "QualityScore": quality});
    envelope(
        app.post_json_auth("/v1/leaderboards/submit", &body, token)
            .await,
    )
    .await
}

async fn board(app: &TestApp, query: &str) -> (u16, Value) {
    envelope(app.get(&format!("/v1/leaderboards?{query}")).await).await
}

/// The board of `track` asked for with `If-None-Match: etag`.
async fn board_if_none_match(app: &TestApp, track: &str, etag: &str) -> reqwest::Response {
    app.client
        .get(format!("{}/v1/leaderboards?trackId={track}", app.address))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap()
}

fn tick(clock: &ManualClock) {
    clock.advance(time::Duration::milliseconds(7));
}

async fn submission_rules(app: TestApp, clock: Arc<ManualClock>) {
    let (ana, ana_id) = app.driver("Ana").await;
    let laps = [
        (90_000, true, 0.8),
        (89_000, false, 0.95),
        (88_000, true, 0.79),
        (87_500, true, 0.99),
    ];
    let (sid, track) = session(&app, &ana, "s1", &laps).await;

    let (status, res) = submit(&app, &ana, &sid, 90_000, 0.79).await;
    assert_eq!(status, 422, "{res}");
    assert!(
        res["error"].as_str().unwrap().contains("qualityScore"),
        "{res}"
    );
    let (status, res) = submit(&app, &ana, &sid, 91_234, 0.9).await;
    assert_eq!(status, 422, "no lap of that time: {res}");
    let (status, res) = submit(&app, &ana, &sid, 89_000, 0.9).await;
    assert_eq!(status, 422, "the stored lap is invalid: {res}");
    assert!(res["error"].as_str().unwrap().contains("not valid"));
    let (status, res) = submit(&app, &ana, &sid, 88_000, 0.95).await;
    assert_eq!(
        status, 422,
        "the stored lap's quality is below 0.8 whatever the client says: {res}"
    );
    let (status, res) = submit(
        &app,
        &ana,
        "00000000-0000-7000-8000-000000000000",
        90_000,
        0.9,
    )
    .await;
    assert_eq!(status, 404, "{res}");
    let (status, res) = envelope(
        app.post_json_auth(
            "/v1/leaderboards/submit",
            &json!({"lapTimeMs": "fast", "qualityScore": 2}),
            &ana,
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    let msg = res["error"].as_str().unwrap();
    assert!(
        msg.contains("sessionId: is required")
            && msg.contains("lapTimeMs:")
            && msg.contains("qualityScore:"),
        "{msg}"
    );
    let (status, _) = envelope(
        app.post_json(
            "/v1/leaderboards/submit",
            &json!({"sessionId": sid, "lapTimeMs": 90_000, "qualityScore": 0.9}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 401, "a token is required");

    // 0.8 itself is accepted; the first entry is an improvement over nothing.
    let (status, res) = submit(&app, &ana, &sid, 90_000, 0.8).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(
        res["data"],
        json!({"improved": true, "lapTimeMs": 90_000, "previousBestMs": null, "rank": 1, "trackId": track})
    );
    tick(&clock);
    // Slower and equal laps leave the entry as it is.
    let (slow_sid, _) = session(
        &app,
        &ana,
        "s2",
        &[(95_000, true, 0.9), (90_000, true, 0.9)],
    )
    .await;
    let (status, res) = submit(&app, &ana, &slow_sid, 95_000, 0.9).await;
    assert_eq!(status, 200);
    assert_eq!(res["data"]["improved"], false);
    assert_eq!(res["data"]["previousBestMs"], 90_000);
    let (_, res) = submit(&app, &ana, &slow_sid, 90_000, 0.9).await;
    assert_eq!(res["data"]["improved"], false, "equal is not faster");
    tick(&clock);
    let (status, res) = submit(&app, &ana, &sid, 87_500, 0.99).await;
    assert_eq!(status, 200);
    assert_eq!(res["data"]["improved"], true);
    assert_eq!(res["data"]["previousBestMs"], 90_000);
    assert_eq!(res["data"]["rank"], 1);

    // Another driver cannot submit Ana's session.
    let (ben, _) = app.driver("Ben").await;
    let (status, _) = submit(&app, &ben, &sid, 87_500, 0.99).await;
    assert_eq!(status, 404);

    let (status, page) = board(&app, &format!("trackId={track}")).await;
    assert_eq!(status, 200, "{page}");
    let entries = page["data"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "one entry per (track, user)");
    assert_eq!(entries[0]["userId"], ana_id.as_str());
    assert_eq!(entries[0]["lapTimeMs"], 87_500);
    assert_eq!(entries[0]["lapTime"], "1:27.500");
    assert_eq!(entries[0]["displayName"], "Ana");
    assert_eq!(entries[0]["sessionId"], sid.as_str());
}

async fn boards_rank_page_and_filter(app: TestApp, clock: Arc<ManualClock>) {
    // Five drivers; two with equal times (the earlier submission ranks first).
    let times = [
        ("P1", 80_100),
        ("P2", 83_000),
        ("P3", 81_000),
        ("P4", 81_000),
        ("P5", 79_999),
    ];
    let mut ids = Vec::new();
    let mut track = String::new();
    for (i, (name, ms)) in times.iter().enumerate() {
        let (token, user_id) = app.driver(name).await;
        let mut body = session_body(
            &format!("{name}-s"),
            "2026-11-01T10:00:00Z",
            &[(*ms, true, 0.9)],
            0,
        );
        if i % 2 == 1 {
            body["VehicleName"] = json!("Ferrari 296 GT3");
        }
        let (_, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
        let sid = res["data"]["sessionId"].as_str().unwrap().to_owned();
        track = res["data"]["trackId"].as_str().unwrap().to_owned();
        let (status, res) = submit(&app, &token, &sid, *ms, 0.9).await;
        assert_eq!(status, 200, "{res}");
        ids.push(user_id);
        tick(&clock);
    }
    let (status, page) = board(
        &app,
        "gameId=acc&trackName=spa-francorchamps&trackLayout=gp&limit=2",
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let d = &page["data"];
    assert_eq!(d["totalEntries"], 5);
    assert_eq!(d["track"]["id"], track.as_str());
    assert_eq!(d["track"]["name"], "Spa-Francorchamps");
    let ranks: Vec<(i64, String)> = d["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["rank"].as_i64().unwrap(),
                e["lapTime"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(ranks, vec![(1, "1:19.999".into()), (2, "1:20.100".into())]);
    let cursor = d["nextCursor"].as_str().unwrap();
    let (_, page2) = board(&app, &format!("trackId={track}&limit=2&cursor={cursor}")).await;
    let e = page2["data"]["entries"].as_array().unwrap();
    assert_eq!(
        (e[0]["rank"].as_i64(), e[0]["userId"].as_str()),
        (Some(3), Some(ids[2].as_str())),
        "P3 submitted before P4"
    );
    assert_eq!(
        (e[1]["rank"].as_i64(), e[1]["userId"].as_str()),
        (Some(4), Some(ids[3].as_str()))
    );
    let cursor = page2["data"]["nextCursor"].as_str().unwrap();
    let (_, page3) = board(&app, &format!("trackId={track}&limit=2&cursor={cursor}")).await;
    assert_eq!(page3["data"]["entries"].as_array().unwrap().len(), 1);
    assert_eq!(page3["data"]["nextCursor"], Value::Null);

    let (_, ferrari) = board(
        &app,
        &format!("trackId={track}&vehicleName=ferrari%20296%20gt3"),
    )
    .await;
    let e = ferrari["data"]["entries"].as_array().unwrap();
    assert_eq!(ferrari["data"]["totalEntries"], 2);
    assert_eq!(e[0]["rank"], 1);
    assert_eq!(e[0]["userId"], ids[3].as_str());
    assert_eq!(e[1]["userId"], ids[1].as_str());

    // Unknown tracks: by id 404, by name an empty board.
    let (status, _) = board(&app, "trackId=00000000-0000-8000-8000-000000000000").await;
    assert_eq!(status, 404);
    let (status, empty) = board(&app, "gameId=acc&trackName=Nowhere").await;
    assert_eq!(status, 200);
    assert_eq!(empty["data"]["entries"], json!([]));
    assert_eq!(empty["data"]["totalEntries"], 0);
    for bad in [
        "",
        "trackId=nope",
        "gameId=acc",
        &format!("trackId={track}&limit=0"),
        &format!("trackId={track}&cursor=zzz"),
    ] {
        let (status, res) = board(&app, bad).await;
        assert_eq!(status, 400, "{bad}: {res}");
    }
}

async fn cache_headers_and_invalidation(app: TestApp, clock: Arc<ManualClock>) {
    let (token, _) = app.driver("Cara").await;
    let (sid, track) = session(
        &app,
        &token,
        "c1",
        &[(100_000, true, 0.9), (99_000, true, 0.9)],
    )
    .await;
    submit(&app, &token, &sid, 100_000, 0.9).await;
    let res = app.get(&format!("/v1/leaderboards?trackId={track}")).await;
    assert_eq!(res.headers()["cache-control"], "public, max-age=5");
    let etag = res.headers()["etag"].to_str().unwrap().to_owned();
    let (_, first) = envelope(res).await;
    assert_eq!(first["data"]["entries"][0]["lapTimeMs"], 100_000);

    let res = board_if_none_match(&app, &track, &etag).await;
    assert_eq!(res.status(), 304);
    assert_eq!(res.headers()["etag"].to_str().unwrap(), etag);
    // If-None-Match compares weakly (RFC 9110): a weakened tag is still the client's copy.
    let res = board_if_none_match(&app, &track, &format!("W/{etag}")).await;
    assert_eq!(res.status(), 304);
    let res = board_if_none_match(&app, &track, "W/\"other\", \"another\"").await;
    assert_eq!(res.status(), 200);

    // A submission in this process shows at once, with a new ETag.
    tick(&clock);
    let (_, res) = submit(&app, &token, &sid, 99_000, 0.9).await;
    assert_eq!(res["data"]["improved"], true);
    let res = board_if_none_match(&app, &track, &etag).await;
    assert_eq!(res.status(), 200);
    assert_ne!(res.headers()["etag"].to_str().unwrap(), etag);
    let (_, now) = envelope(res).await;
    assert_eq!(now["data"]["entries"][0]["lapTimeMs"], 99_000);
}

/// A cursor decodes to a store position only when it is exactly a rank row's sort key:
/// anything else is a 400 naming `cursor` (the API) or the 400 page, on both stores alike.
async fn forged_cursors_are_refused_naming_the_cursor(app: TestApp) {
    let (token, user) = app.driver("Fay").await;
    let (sid, track) = session(&app, &token, "f1", &[(90_000, true, 0.9)]).await;
    let (status, res) = submit(&app, &token, &sid, 90_000, 0.9).await;
    assert_eq!(status, 200, "{res}");
    let cursor = |key: &str| paddock_core::ports::items::encode_cursor(&format!("after:{key}"));
    let micros = "1700000000000001";
    for key in [
        // A signed lap time parses as a number, but sorts before the day it names.
        format!("RANK#+000000001#{micros}#{user}"),
        format!("RANK#-000000001#{micros}#{user}"),
        format!("RANK#0000090000#+{}#{user}", &micros[1..]),
        format!("RANK#0000090000#{micros}#u1"),
        format!("RANK#0000090000#{micros}#{user}#more"),
        format!("RANK#0000090000#{micros}#{}", user.to_uppercase()),
        format!("RANK#0000090000#{micros}#{user}\u{FFFF}"),
        "RANK#~".to_owned(),
    ] {
        let forged = cursor(&key);
        let (status, res) = board(&app, &format!("trackId={track}&cursor={forged}")).await;
        assert_eq!(status, 400, "{key}: {res}");
        assert_eq!(
            res["error"], "cursor: is not a cursor this list returned",
            "{key}"
        );
        let page = app.get(&format!("/boards/{track}?cursor={forged}")).await;
        assert_eq!(page.status(), 400, "{key}");
        let html = page.text().await.unwrap();
        assert!(
            html.contains("cursor: is not a cursor this page linked to"),
            "{key}: {html}"
        );
    }
    // The cursor a page gives still works.
    let (status, res) = board(
        &app,
        &format!(
            "trackId={track}&cursor={}",
            cursor(&format!("RANK#0000000001#{micros}#{user}"))
        ),
    )
    .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["entries"][0]["userId"], user.as_str());
}

/// `limit` is the most rows any page answers, `around=me` included.
async fn around_me_answers_at_most_limit_rows(app: TestApp, clock: Arc<ManualClock>) {
    let mut drivers = Vec::new();
    let mut track = String::new();
    for (i, name) in ["R1", "R2", "R3", "R4"].iter().enumerate() {
        let (token, user) = app.driver(name).await;
        let ms = 90_000 + 1_000 * i as i64;
        let (sid, t) = session(&app, &token, &format!("{name}-s"), &[(ms, true, 0.9)]).await;
        let (status, res) = submit(&app, &token, &sid, ms, 0.9).await;
        assert_eq!(status, 200, "{res}");
        track = t;
        drivers.push((token, user));
        tick(&clock);
    }
    let around = |i: usize, limit: usize| {
        let (app, track, token) = (&app, &track, drivers[i].0.clone());
        async move {
            let (status, res) = envelope(
                app.get_auth(
                    &format!("/v1/leaderboards?trackId={track}&around=me&limit={limit}"),
                    &token,
                )
                .await,
            )
            .await;
            assert_eq!(status, 200, "{res}");
            res["data"]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["rank"].as_u64().unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(around(1, 1).await, vec![2], "limit=1 is the caller alone");
    assert_eq!(around(0, 1).await, vec![1]);
    assert_eq!(around(3, 1).await, vec![4]);
    assert_eq!(around(1, 2).await, vec![2, 3]);
    assert_eq!(around(3, 2).await, vec![4], "nobody behind the last");
    assert_eq!(around(1, 3).await, vec![1, 2, 3]);
    assert_eq!(around(0, 3).await, vec![1, 2, 3]);
    assert_eq!(around(2, 100).await, vec![1, 2, 3, 4]);
}

async fn concurrent_submissions_end_at_the_fastest(app: TestApp) {
    let (token, user_id) = app.driver("Dana").await;
    let laps: Vec<(i64, bool, f64)> = (0..8).map(|i| (90_000 - i * 100, true, 0.9)).collect();
    let (sid, track) = session(&app, &token, "race", &laps).await;
    let answers = join_all(
        laps.iter()
            .rev()
            .map(|(ms, _, _)| submit(&app, &token, &sid, *ms, 0.9)),
    )
    .await;
    for (status, res) in &answers {
        assert_eq!(*status, 200, "{res}");
    }
    // Another driver's concurrent submissions on the same board.
    let (other, _) = app.driver("Eli").await;
    let (osid, _) = session(&app, &other, "race", &laps).await;
    join_all(
        laps.iter()
            .map(|(ms, _, _)| submit(&app, &other, &osid, *ms, 0.9)),
    )
    .await;

    let (_, page) = board(&app, &format!("trackId={track}")).await;
    let entries = page["data"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "one entry per driver: {page}");
    let mine = entries
        .iter()
        .find(|e| e["userId"] == user_id.as_str())
        .unwrap();
    assert_eq!(mine["lapTimeMs"], 89_300, "the fastest lap wins");
    assert_eq!(page["data"]["totalEntries"], 2);
}

/// A submission sent again (its answer lost) finds its own lap stored: the same rank, no
/// second event, so the feed tells of it once.
async fn a_submission_sent_again_is_told_once(app: TestApp) {
    let (token, _) = app.driver("Fay").await;
    let (sid, _) = session(&app, &token, "again", &[(95_000, true, 0.9)]).await;
    let (status, first) = submit(&app, &token, &sid, 95_000, 0.9).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["data"]["improved"], true);
    let (status, again) = submit(&app, &token, &sid, 95_000, 0.9).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["data"]["improved"], false);
    assert_eq!(again["data"]["rank"], first["data"]["rank"]);
    // The session's entry and the submission's, and nothing more once the consumers are done.
    let mut last = Value::Null;
    for _ in 0..40 {
        let (_, feed) = envelope(app.get_auth("/v1/feed?limit=100", &token).await).await;
        let items = feed["data"]["items"].clone();
        let boards = items.as_array().map_or(0, |f| {
            f.iter().filter(|e| e["kind"] == "leaderboard").count()
        });
        if boards > 0 && items == last {
            assert_eq!(boards, 1, "{items}");
            return;
        }
        last = items;
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("the feed did not settle: {last}");
}

/// The value of `paddock_implausible_laps_total` for `reason` (0 when not exported), once it
/// is at least `at_least`: through the functions, a count reaches `/metrics` when its metric
/// line has reached CloudWatch, so it is asked again for a while; the last value read is
/// answered either way.
async fn implausible_count(app: &TestApp, reason: &str, at_least: f64) -> f64 {
    let series = format!("paddock_implausible_laps_total{{reason=\"{reason}\"}} ");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = app.scrape_metrics().await.text().await.unwrap();
        let count = text
            .lines()
            .find_map(|line| line.strip_prefix(series.as_str()))
            .map_or(0.0, |value| value.trim().parse().unwrap());
        if count >= at_least || std::time::Instant::now() > deadline {
            return count;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

async fn implausibly_fast_laps_are_refused(app: TestApp) {
    let (token, _) = app.driver("Fay").await;
    let before = implausible_count(&app, "too_fast", 0.0).await;

    // No map of this track: the absolute floor.
    let (sid, _) = session(
        &app,
        &token,
        "fast-1",
        &[(1, true, 0.95), (90_000, true, 0.9)],
    )
    .await;
    let (status, res) = submit(&app, &token, &sid, 1, 0.95).await;
    assert_eq!(status, 422, "a 1 ms lap of good quality: {res}");
    let msg = res["error"].as_str().unwrap();
    assert!(
        msg.starts_with("lapTimeMs:") && msg.contains("not plausible"),
        "{msg}"
    );
    let (status, res) = submit(&app, &token, &sid, 90_000, 0.9).await;
    assert_eq!(status, 200, "{res}");

    // A track with a map of its 1 km circle: at 400 km/h a lap takes at least about 9 s, so
    // 8.5 s is refused although it is above the absolute floor.
    let mut body = session_body(
        "fast-2",
        "2026-11-01T10:00:00Z",
        &[(8_500, true, 0.95), (60_000, true, 0.9)],
        800,
    );
    body["TrackName"] = json!("Ring");
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    assert_eq!(status, 201, "{res}");
    let ring_sid = res["data"]["sessionId"].as_str().unwrap().to_owned();
    let ring = res["data"]["trackId"].as_str().unwrap().to_owned();
    app.wait_for_map(&token, &ring, 1).await;
    let (status, res) = submit(&app, &token, &ring_sid, 8_500, 0.95).await;
    assert_eq!(status, 422, "faster than 400 km/h over the map: {res}");
    let msg = res["error"].as_str().unwrap();
    assert!(
        msg.starts_with("lapTimeMs:") && msg.contains("map") && msg.contains("400 km/h"),
        "{msg}"
    );
    let (status, res) = submit(&app, &token, &ring_sid, 60_000, 0.9).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["trackId"], ring.as_str());

    let (_, page) = board(&app, &format!("trackId={ring}")).await;
    let entries = page["data"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0]["lapTimeMs"], 60_000,
        "the refused lap is not ranked"
    );
    // Tests in this process refuse laps concurrently: at least these two were counted.
    let after = implausible_count(&app, "too_fast", before + 2.0).await;
    assert!(after >= before + 2.0, "{before} -> {after}");
}

async fn sector_times_must_add_up_to_the_lap(app: TestApp) {
    let (token, _) = app.driver("Gus").await;
    let before = implausible_count(&app, "sectors_mismatch", 0.0).await;
    let mut body = session_body(
        "sectors-1",
        "2026-11-01T10:00:00Z",
        &[(90_000, true, 0.95), (91_000, true, 0.95)],
        0,
    );
    // 10 s short of the lap, and 20 ms over it (within 0.5 % of 91 s).
    body["Laps"][0]["SectorTimesMs"] = json!([30_000, 30_000, 20_000]);
    body["Laps"][1]["SectorTimesMs"] = json!([30_000, 30_500, 30_520]);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    assert_eq!(status, 201, "{res}");
    let sid = res["data"]["sessionId"].as_str().unwrap().to_owned();

    let (status, res) = submit(&app, &token, &sid, 90_000, 0.95).await;
    assert_eq!(status, 422, "{res}");
    let msg = res["error"].as_str().unwrap();
    assert!(
        msg.starts_with("sectorTimesMs:") && msg.contains("80000 ms"),
        "{msg}"
    );
    let (status, res) = submit(&app, &token, &sid, 91_000, 0.95).await;
    assert_eq!(status, 200, "sectors that add up: {res}");
    assert_eq!(res["data"]["improved"], true);
    let after = implausible_count(&app, "sectors_mismatch", before + 1.0).await;
    assert!(after > before, "{before} -> {after}");

    let text = app.scrape_metrics().await.text().await.unwrap();
    assert!(
        text.contains("# TYPE paddock_implausible_laps_total counter"),
        "{text}"
    );
}

paddock_tests::on_both_backends!(
    plain: [
        a_submission_sent_again_is_told_once,
        forged_cursors_are_refused_naming_the_cursor,
        concurrent_submissions_end_at_the_fastest,
        implausibly_fast_laps_are_refused,
        sector_times_must_add_up_to_the_lap,
    ],
    clocked: [
        submission_rules,
        boards_rank_page_and_filter,
        cache_headers_and_invalidation,
        around_me_answers_at_most_limit_rows,
    ]
);
