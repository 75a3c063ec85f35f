//! Session sync and tracks: idempotent uploads, validation, reads, track maps and their
//! processing jobs, in local mode and against DynamoDB Local (S3 on moto_server).

use futures::future::join_all;
use paddock_core::ids::{JobId, SessionId, TrackId, UserId};
use paddock_core::ports::{Clock, ManualClock};
use paddock_core::tracks::jobs::{self, Stuck};
use paddock_tests::{Backend, TestApp, envelope, session_body};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const LAPS: &[(i64, bool, f64)] = &[
    (92_000, true, 0.9),
    (91_500, true, 0.95),
    (95_000, false, 0.5),
];

async fn upload(app: &TestApp, token: &str, body: &Value) -> (u16, Value) {
    envelope(app.post_json_auth("/v1/sessions", body, token).await).await
}

/// Posts `body` as it is, with `content_type`, to `/v1/sessions`.
async fn raw_upload(
    app: &TestApp,
    token: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let res = app
        .client
        .post(format!("{}/v1/sessions", app.address))
        .bearer_auth(token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    envelope(res).await
}

/// The answer to a 3 MiB upload. The server answers 413 from the declared length without
/// reading the body and closes the connection, so the client, still writing, may find it
/// closed before it reads the answer: such a send is made again, up to five times.
async fn too_large_upload(app: &TestApp, token: &str) -> u16 {
    for _ in 0..5 {
        let sent = app
            .client
            .post(format!("{}/v1/sessions", app.address))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(vec![b' '; 3 * 1024 * 1024])
            .send()
            .await;
        match sent {
            Ok(res) => return res.status().as_u16(),
            Err(e) if e.is_request() => continue,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the connection closed before any answer, five times");
}

async fn upload_is_idempotent_and_reads_back(app: TestApp) {
    let (token, _) = app.driver("Ana").await;
    let body = session_body("client-1", "2026-11-01T10:00:00.250Z", LAPS, 0);
    let (status, first) = upload(&app, &token, &body).await;
    assert_eq!(status, 201, "{first}");
    let receipt = &first["data"];
    assert_eq!(receipt["lapCount"], 3);
    assert_eq!(receipt["duplicate"], false);
    let id = receipt["sessionId"].as_str().unwrap().to_owned();

    let (status, again) = upload(&app, &token, &body).await;
    assert_eq!(status, 200, "a repeat answers 200: {again}");
    assert_eq!(again["data"]["sessionId"], id.as_str());
    assert_eq!(again["data"]["trackId"], receipt["trackId"]);
    assert_eq!(again["data"]["duplicate"], true);

    // Two more sessions, recorded earlier and later, uploaded in another order.
    let (s, _) = upload(
        &app,
        &token,
        &session_body("client-0", "2026-10-01T09:00:00Z", LAPS, 0),
    )
    .await;
    assert_eq!(s, 201);
    let (s, newest) = upload(
        &app,
        &token,
        &session_body("client-2", "2026-11-05T18:30:00+02:00", LAPS, 0),
    )
    .await;
    assert_eq!(s, 201);

    let (status, page) = envelope(app.get_auth("/v1/sessions?limit=2", &token).await).await;
    assert_eq!(status, 200, "{page}");
    let items = page["data"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[0]["id"], newest["data"]["sessionId"],
        "newest RecordedAt first"
    );
    assert_eq!(
        items[0]["recordedAt"], "2026-11-05T16:30:00Z",
        "the client's time, in UTC"
    );
    assert_eq!(items[1]["id"], id.as_str());
    let cursor = page["data"]["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let (_, rest) = envelope(
        app.get_auth(&format!("/v1/sessions?limit=2&cursor={cursor}"), &token)
            .await,
    )
    .await;
    let rest = rest["data"]["items"].as_array().unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["recordedAt"], "2026-10-01T09:00:00Z");

    let (status, detail) =
        envelope(app.get_auth(&format!("/v1/sessions/{id}"), &token).await).await;
    assert_eq!(status, 200, "{detail}");
    let d = &detail["data"];
    assert_eq!(d["recordedAt"], "2026-11-01T10:00:00.25Z");
    assert_eq!(d["trackName"], "Spa-Francorchamps");
    assert_eq!(d["vehicleName"], "Porsche 992 GT3 R");
    assert_eq!(d["bestLapMs"], 91_500);
    assert_eq!(d["weatherSummary"], "dry, 22C");
    assert_eq!(d["sessionPhase"], "practice");
    let laps = d["laps"].as_array().unwrap();
    assert_eq!(laps.len(), 3);
    assert_eq!(laps[1]["lapTimeMs"], 91_500);
    assert_eq!(laps[1]["qualityCombined"], 0.95);
    assert_eq!(laps[2]["isValid"], false);
    assert_eq!(laps[2]["countsForSessionTiming"], false);

    // Another driver sees none of it, and the same ClientSessionId is theirs to use.
    let (other, _) = app.driver("Ben").await;
    let (status, body) = envelope(app.get_auth(&format!("/v1/sessions/{id}"), &other).await).await;
    assert_eq!(status, 404, "{body}");
    let (_, list) = envelope(app.get_auth("/v1/sessions", &other).await).await;
    assert_eq!(list["data"]["items"], json!([]));
    let (status, theirs) = upload(
        &app,
        &other,
        &session_body("client-1", "2026-11-01T10:00:00Z", LAPS, 0),
    )
    .await;
    assert_eq!(status, 201);
    assert_ne!(theirs["data"]["sessionId"], id.as_str());
    assert_eq!(
        theirs["data"]["trackId"], receipt["trackId"],
        "one canonical track"
    );

    let (status, _) = envelope(app.get_auth("/v1/sessions/not-a-uuid", &token).await).await;
    assert_eq!(status, 404);
    let (status, body) = envelope(app.get_auth("/v1/sessions?limit=101", &token).await).await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("limit"), "{body}");
    let (status, _) = envelope(app.get_auth("/v1/sessions?cursor=%%%", &token).await).await;
    assert_eq!(status, 400);
    let (status, _) = envelope(app.get("/v1/sessions").await).await;
    assert_eq!(status, 401);
}

async fn bad_uploads_name_every_problem_and_write_nothing(app: TestApp) {
    let (token, _) = app.driver("Cai").await;
    let mut body = session_body("bad-1", "2026-11-01T10:00:00Z", LAPS, 3);
    body["GameId"] = json!(42);
    body.as_object_mut().unwrap().remove("TrackName");
    body["Laps"][0]["LapTimeMs"] = json!(-5);
    body["Laps"][1]["QualityCombined"] = json!(1.5);
    body["Laps"][2]["IsValid"] = json!("yes");
    body["TrackPoints"][1]["X"] = json!("far");
    body["RecordedAt"] = json!("yesterday");
    let (status, res) = upload(&app, &token, &body).await;
    assert_eq!(status, 400);
    let msg = res["error"].as_str().unwrap();
    for expected in [
        "gameId: must be a string",
        "trackName: is required",
        "laps[0].lapTimeMs: must be between 1",
        "laps[1].qualityCombined: must be between 0 and 1",
        "laps[2].isValid: must be true or false",
        "trackPoints[1].x: must be a number",
        "recordedAt: must be an RFC 3339",
    ] {
        assert!(msg.contains(expected), "missing {expected:?} in {msg}");
    }

    let mut future = session_body("bad-2", "2099-01-01T00:00:00Z", LAPS, 0);
    future["Laps"][1]["LapIndex"] = json!(0);
    let (status, res) = upload(&app, &token, &future).await;
    assert_eq!(status, 400);
    let msg = res["error"].as_str().unwrap();
    assert!(
        msg.contains("recordedAt: must be after 2000-01-01 and not in the future"),
        "{msg}"
    );
    assert!(msg.contains("laps[1].lapIndex: must be unique"), "{msg}");

    let many: Vec<(i64, bool, f64)> = (0..1001).map(|i| (90_000 + i, true, 0.9)).collect();
    let (status, res) = upload(
        &app,
        &token,
        &session_body("bad-3", "2026-11-01T10:00:00Z", &many, 0),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .contains("laps: must hold 1 to 1000"),
        "{res}"
    );
    let (status, _) = upload(
        &app,
        &token,
        &session_body("bad-4", "2026-11-01T10:00:00Z", &[], 0),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = upload(&app, &token, &json!([1, 2])).await;
    assert_eq!(status, 400);
    let (status, res) = raw_upload(&app, &token, "application/json", "{\"GameId\": ").await;
    assert_eq!(status, 400);
    assert!(
        res["error"].as_str().unwrap().contains("malformed JSON"),
        "{res}"
    );
    let (status, _) = raw_upload(&app, &token, "text/plain", "{}").await;
    assert_eq!(status, 415);
    assert_eq!(too_large_upload(&app, &token).await, 413);

    let (_, list) = envelope(app.get_auth("/v1/sessions", &token).await).await;
    assert_eq!(list["data"]["items"], json!([]), "nothing was written");
    let (_, tracks) = envelope(app.get_auth("/v1/tracks", &token).await).await;
    assert_eq!(tracks["data"]["items"], json!([]));
}

/// The names the public pages show refuse what would hide or reorder text there: a track
/// named `Spa\u{200B}` would pose as Spa, a car with U+202E would read backwards.
async fn names_with_hidden_characters_are_refused_naming_the_field(app: TestApp) {
    let (token, _) = app.driver("Dee").await;
    let mut body = session_body("hidden-1", "2026-11-01T10:00:00Z", LAPS, 0);
    body["GameId"] = json!("acc\u{2066}");
    body["TrackName"] = json!("Spa-Francorchamps\u{200B}");
    body["TrackLayout"] = json!("\u{FEFF}GP");
    body["VehicleName"] = json!("Porsche \u{202E}R 3TG");
    let (status, res) = upload(&app, &token, &body).await;
    assert_eq!(status, 400, "{res}");
    let msg = res["error"].as_str().unwrap();
    for field in ["gameId", "trackName", "trackLayout", "vehicleName"] {
        let expected = format!(
            "{field}: must not contain invisible or text-direction characters (such as U+200B or U+202E)"
        );
        assert!(msg.contains(&expected), "missing {expected:?} in {msg}");
    }
    // Emoji with their variation selectors are not hidden characters.
    let mut fine = session_body("hidden-2", "2026-11-01T10:00:00Z", LAPS, 0);
    fine["VehicleName"] = json!("Mazda MX-5 \u{2764}\u{FE0F}");
    let (status, res) = upload(&app, &token, &fine).await;
    assert_eq!(status, 201, "{res}");
    let (_, tracks) = envelope(app.get_auth("/v1/tracks", &token).await).await;
    assert_eq!(
        tracks["data"]["items"].as_array().unwrap().len(),
        1,
        "{tracks}"
    );
}

async fn sector_times_are_checked_stored_and_shown(app: TestApp) {
    let (token, _) = app.driver("Eve").await;
    let laps = &[
        (92_000, true, 0.9),
        (91_500, true, 0.95),
        (95_000, false, 0.5),
        (93_000, true, 0.9),
    ];
    let mut bad = session_body("sectors-bad", "2026-11-01T10:00:00Z", laps, 0);
    bad["Laps"][0]["SectorTimesMs"] = json!([]);
    bad["Laps"][1]["SectorTimesMs"] = json!([30_000, -2, "fast", 90_000_000]);
    bad["Laps"][2]["SectorTimesMs"] = json!(vec![3_000; 33]);
    bad["Laps"][3]["SectorTimesMs"] = json!("30000,31000");
    bad["Laps"][3]["LapTimeMs"] = json!(0);
    let (status, res) = upload(&app, &token, &bad).await;
    assert_eq!(status, 400, "{res}");
    let msg = res["error"].as_str().unwrap();
    for expected in [
        "laps[0].sectorTimesMs: must hold 1 to 32 entries",
        "laps[1].sectorTimesMs[1]: must be between 1 and 86400000",
        "laps[1].sectorTimesMs[2]: must be a whole number",
        "laps[1].sectorTimesMs[3]: must be between 1 and 86400000",
        "laps[2].sectorTimesMs: must hold 1 to 32 entries",
        "laps[3].sectorTimesMs: must be a list",
        // Every problem of one lap, not only its first.
        "laps[3].lapTimeMs: must be between 1",
    ] {
        assert!(msg.contains(expected), "missing {expected:?} in {msg}");
    }
    assert!(!msg.contains("laps[1].sectorTimesMs[0]"), "{msg}");

    // Stored with the lap, shown only on the laps that have them; null means none.
    let mut body = session_body("sectors-ok", "2026-11-01T10:00:00Z", laps, 0);
    body["Laps"][0]["SectorTimesMs"] = json!([30_000, 31_000, 31_000]);
    body["Laps"][1]["SectorTimesMs"] = Value::Null;
    let (status, res) = upload(&app, &token, &body).await;
    assert_eq!(status, 201, "{res}");
    let id = res["data"]["sessionId"].as_str().unwrap();
    let (_, detail) = envelope(app.get_auth(&format!("/v1/sessions/{id}"), &token).await).await;
    let stored = detail["data"]["laps"].as_array().unwrap();
    assert_eq!(stored[0]["sectorTimesMs"], json!([30_000, 31_000, 31_000]));
    for lap in &stored[1..] {
        assert!(lap.get("sectorTimesMs").is_none(), "{lap}");
    }
}

/// Field names are read in camelCase or PascalCase at every depth; a field given in both
/// spellings is read from its camelCase key.
async fn camel_case_and_pascal_case_uploads_read_alike(app: TestApp) {
    let (token, _) = app.driver("Gil").await;
    let body = json!({
        "gameId": "acc", "TrackName": "Monza", "trackLayout": "", "VehicleName": "BMW M4 GT3",
        "recordedAt": "2026-11-01T10:00:00Z", "BestLapMs": 101_000, "weatherSummary": "wet",
        "SessionPhase": "race", "clientSessionId": "mixed-1",
        "GameId": 42, "ClientSessionId": "ignored",
        "laps": [{
            "lapIndex": 0, "LapTimeMs": -1, "lapTimeMs": 101_000, "IsValid": true,
            "countsForSessionTiming": true, "QualityCombined": 0.9, "qualityCoherence": 0.9,
            "QualityStability": 0.9, "qualityCompleteness": 1.0, "NumPenalties": 0,
            "numPitstops": 0, "InPitsAtLapEnd": false, "sectorTimesMs": [50_000, 51_000],
        }],
        "TrackPoints": [{"x": 0.0, "Y": 0.0, "Distance": 0.0}, {"X": 5.0, "y": 0.0, "distance": 5.0}],
    });
    let (status, res) = upload(&app, &token, &body).await;
    assert_eq!(status, 201, "{res}");
    let id = res["data"]["sessionId"].as_str().unwrap();
    let (_, detail) = envelope(app.get_auth(&format!("/v1/sessions/{id}"), &token).await).await;
    let d = &detail["data"];
    assert_eq!(d["gameId"], "acc");
    assert_eq!(d["clientSessionId"], "mixed-1");
    assert_eq!(d["hasTrackPoints"], true);
    assert_eq!(d["laps"][0]["lapTimeMs"], 101_000);
    assert_eq!(d["laps"][0]["sectorTimesMs"], json!([50_000, 51_000]));
}

async fn concurrent_duplicate_uploads_make_one_session(app: TestApp) {
    let (token, _) = app.driver("Dee").await;
    let body = session_body("same-client-id", "2026-11-02T12:00:00Z", LAPS, 200);
    let answers = join_all((0..8).map(|_| upload(&app, &token, &body))).await;
    let created = answers.iter().filter(|(s, _)| *s == 201).count();
    assert_eq!(created, 1, "{answers:?}");
    let ids: std::collections::HashSet<_> = answers
        .iter()
        .map(|(s, b)| {
            assert!(*s == 200 || *s == 201, "{b}");
            b["data"]["sessionId"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 1, "every answer names the one session");
    let (_, list) = envelope(app.get_auth("/v1/sessions", &token).await).await;
    assert_eq!(list["data"]["items"].as_array().unwrap().len(), 1);
    let (_, tracks) = envelope(app.get_auth("/v1/tracks", &token).await).await;
    assert_eq!(tracks["data"]["items"][0]["sessionCount"], 1);
    // The losers' track points were removed again: only the winner's blob is left.
    let blobs = app.ports.blobs.list("tracks/").await.unwrap();
    let points: Vec<_> = blobs.iter().filter(|k| k.contains("/points/")).collect();
    assert_eq!(points.len(), 1, "{blobs:?}");
}

async fn thirty_first_upload_in_a_minute_is_limited(app: TestApp, clock: Arc<ManualClock>) {
    let (token, _) = app.driver("Eve").await;
    for i in 0..30 {
        let (status, body) = upload(
            &app,
            &token,
            &session_body(&format!("c{i}"), "2026-11-01T10:00:00Z", LAPS, 0),
        )
        .await;
        assert!(status == 201, "upload {i}: {body}");
    }
    let res = app
        .post_json_auth(
            "/v1/sessions",
            &session_body("c30", "2026-11-01T10:00:00Z", LAPS, 0),
            &token,
        )
        .await;
    assert!(res.headers().contains_key("retry-after"));
    let (status, _) = envelope(res).await;
    assert_eq!(status, 429);
    clock.advance(time::Duration::seconds(61));
    let (status, _) = upload(
        &app,
        &token,
        &session_body("c30", "2026-11-01T10:00:00Z", LAPS, 0),
    )
    .await;
    assert_eq!(
        status, 201,
        "a minute later, the first uploads have left the window"
    );
}

async fn track_points_become_a_merged_map(app: TestApp) {
    let (token, _) = app.driver("Fay").await;
    let (status, first) = upload(
        &app,
        &token,
        &session_body("map-1", "2026-11-01T10:00:00Z", LAPS, 800),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let track_id = first["data"]["trackId"].as_str().unwrap().to_owned();
    // The points are a blob, not items.
    let blobs = app
        .ports
        .blobs
        .list(&format!("tracks/{track_id}/points/"))
        .await
        .unwrap();
    assert_eq!(blobs.len(), 1, "{blobs:?}");

    let map = app.wait_for_map(&token, &track_id, 1).await;
    let points = map["points"].as_array().unwrap();
    assert!(
        points.len() > 150,
        "about 1 km at 5 m spacing: {}",
        points.len()
    );
    let radius = 1000.0 / std::f64::consts::TAU;
    for p in points {
        let (x, y) = (p["x"].as_f64().unwrap(), p["y"].as_f64().unwrap());
        assert!(
            ((x * x + y * y).sqrt() - radius).abs() < 1.0,
            "on the circle: {p}"
        );
    }
    let distances: Vec<f64> = points
        .iter()
        .map(|p| p["distance"].as_f64().unwrap())
        .collect();
    assert!(
        distances.windows(2).all(|w| w[0] < w[1]),
        "ordered by distance"
    );

    let (_, tracks) = envelope(app.get_auth("/v1/tracks", &token).await).await;
    let track = &tracks["data"]["items"][0];
    assert_eq!(track["id"], track_id.as_str());
    assert_eq!(track["hasMap"], true);
    assert_eq!(track["sessionCount"], 1);
    assert_eq!(track["gameId"], "acc");
    assert_eq!(track["layout"], "GP");
    assert_eq!(track["lastSessionAt"], "2026-11-01T10:00:00Z");

    // A second session with a differently spelled key merges into the same map.
    let mut second = session_body("map-2", "2026-11-03T10:00:00Z", LAPS, 500);
    second["TrackName"] = json!("spa-francorchamps ");
    second["TrackLayout"] = json!("gp");
    let (status, two) = upload(&app, &token, &second).await;
    assert_eq!(status, 201);
    assert_eq!(two["data"]["trackId"], track_id.as_str());
    app.wait_for_map(&token, &track_id, 2).await;
    let (_, tracks) = envelope(app.get_auth("/v1/tracks", &token).await).await;
    assert_eq!(tracks["data"]["items"][0]["sessionCount"], 2);
    assert_eq!(
        tracks["data"]["items"][0]["lastSessionAt"],
        "2026-11-03T10:00:00Z"
    );

    let res = app
        .get_auth(&format!("/v1/tracks/{track_id}/map?format=svg"), &token)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/svg+xml");
    let svg = res.text().await.unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("<path d=\"M"),
        "{svg}"
    );
    let (status, _) = envelope(
        app.get_auth(&format!("/v1/tracks/{track_id}/map?format=png"), &token)
            .await,
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = envelope(
        app.get_auth(
            "/v1/tracks/00000000-0000-8000-8000-000000000000/map",
            &token,
        )
        .await,
    )
    .await;
    assert_eq!(status, 404);

    // A session without points on a new track: counted, but no map.
    let mut plain = session_body("map-3", "2026-11-04T10:00:00Z", LAPS, 0);
    plain["TrackName"] = json!("Monza");
    let (_, monza) = upload(&app, &token, &plain).await;
    let monza_id = monza["data"]["trackId"].as_str().unwrap();
    let (status, _) = envelope(
        app.get_auth(&format!("/v1/tracks/{monza_id}/map"), &token)
            .await,
    )
    .await;
    assert_eq!(status, 404);
    let (_, tracks) = envelope(app.get_auth("/v1/tracks", &token).await).await;
    let monza = tracks["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Monza")
        .cloned()
        .unwrap();
    assert_eq!(monza["hasMap"], false);
}

/// Job transitions at the store level: claims are exclusive, stuck jobs return to pending,
/// failures are bounded and carry a reason.
async fn track_job_transitions(backend: Backend) {
    let t = paddock_tests::ports(backend).await;
    let ports = &t.ports;
    let now = t.clock.now();
    let (job_a, job_b) = (JobId::new(), JobId::new());
    let (track, session, user) = (
        "7a2c0000-0000-8000-8000-000000000001"
            .parse::<TrackId>()
            .unwrap(),
        "0190a0b2-0000-7000-8000-000000000001"
            .parse::<SessionId>()
            .unwrap(),
        UserId::new(),
    );
    let create = |id: &JobId| {
        jobs::create_op(
            id,
            &track,
            &session,
            &user,
            "tracks/track-1/points/none.json",
            now,
        )
    };
    ports
        .items
        .transact(vec![create(&job_a), create(&job_b)])
        .await
        .unwrap();
    assert_eq!(
        jobs::status(ports, &job_a).await.unwrap().unwrap().status,
        "pending"
    );

    // Two workers claim at once: exactly one gets it.
    let (one, two) = tokio::join!(jobs::claim(ports, &job_a), jobs::claim(ports, &job_a));
    let claims = [one.unwrap(), two.unwrap()];
    assert_eq!(
        claims.iter().filter(|c| c.is_some()).count(),
        1,
        "{claims:?}"
    );
    assert_eq!(
        jobs::status(ports, &job_a).await.unwrap().unwrap().status,
        "processing"
    );
    assert!(jobs::claim(ports, &job_a).await.unwrap().is_none(), "held");

    // Service start: a job left in processing goes back to pending.
    assert_eq!(
        jobs::reset_stuck(ports, Stuck::LeaseExpired).await.unwrap(),
        0,
        "lease still running"
    );
    assert_eq!(jobs::reset_stuck(ports, Stuck::All).await.unwrap(), 1);
    let status = jobs::status(ports, &job_a).await.unwrap().unwrap();
    assert_eq!(status.status, "pending");
    assert_eq!(status.attempts, 1);

    // An expired lease (AWS maintenance) is reset too, and can be taken over directly.
    let held = jobs::claim(ports, &job_a).await.unwrap().unwrap();
    assert_eq!(held.attempt, 2);
    t.clock
        .advance(time::Duration::seconds(jobs::LEASE.as_secs() as i64 + 1));
    let taken_over = jobs::claim(ports, &job_a)
        .await
        .unwrap()
        .expect("lease over");
    assert_eq!(taken_over.attempt, 3);
    jobs::complete(ports, &held).await.unwrap(); // the old holder is fenced off
    assert_eq!(
        jobs::status(ports, &job_a).await.unwrap().unwrap().status,
        "processing"
    );
    t.clock
        .advance(time::Duration::seconds(jobs::LEASE.as_secs() as i64 + 1));
    assert_eq!(
        jobs::reset_stuck(ports, Stuck::LeaseExpired).await.unwrap(),
        1
    );

    // Attempts are bounded: the third failing attempt marks the job failed with its reason.
    let job = jobs::claim(ports, &job_a).await.unwrap().unwrap();
    assert_eq!(job.attempt, 4);
    assert!(!jobs::release(ports, &job, "storage down").await.unwrap());
    let status = jobs::status(ports, &job_a).await.unwrap().unwrap();
    assert_eq!(status.status, "failed");
    assert!(status.reason.unwrap().contains("storage down"));
    assert!(
        jobs::claim(ports, &job_a).await.unwrap().is_none(),
        "failed is final"
    );

    // The worker step: points that are missing fail the job with a reason, at once.
    paddock_core::tracks::maps::process_job(ports, &job_b)
        .await
        .unwrap();
    let status = jobs::status(ports, &job_b).await.unwrap().unwrap();
    assert_eq!(status.status, "failed");
    assert!(status.reason.unwrap().contains("missing"));
}

/// A job left in processing by a stopped server is picked up again when the server starts.
async fn stuck_jobs_resume_when_the_server_starts(backend: Backend) {
    let t = paddock_tests::ports(backend).await;
    let points: Vec<_> = (0..100)
        .map(|i| paddock_core::sessions::upload::TrackPoint {
            x: f64::from(i),
            y: 0.0,
            distance: f64::from(i),
        })
        .collect();
    let track = paddock_core::tracks::TrackKey::new("acc", "Imola", "");
    let (job_s, session) = (
        JobId::new(),
        "0190a0b2-0000-7000-8000-000000000001"
            .parse::<SessionId>()
            .unwrap(),
    );
    let key = paddock_core::tracks::maps::points_key(&track.id(), &session);
    t.ports
        .blobs
        .put(
            &key,
            paddock_core::tracks::maps::encode_points(&points),
            "application/json",
        )
        .await
        .unwrap();
    let now = t.clock.now();
    t.ports
        .items
        .transact(vec![
            paddock_core::tracks::count_session_op(&track),
            jobs::create_op(&job_s, &track.id(), &session, &UserId::new(), &key, now),
        ])
        .await
        .unwrap();
    jobs::claim(&t.ports, &job_s)
        .await
        .unwrap()
        .expect("claimed");
    // The server that claimed it stops here; a new one starts over the same store.
    let ports = t.ports.clone();
    let _app = paddock_tests::spawn_with(t.settings, t.ports, t.dir).await;
    for _ in 0..100 {
        if jobs::status(&ports, &job_s).await.unwrap().unwrap().status == "done" {
            let track = paddock_core::tracks::get(&ports, &track.id())
                .await
                .unwrap()
                .unwrap();
            assert!(track.has_map);
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the stuck job was not processed after the restart");
}

paddock_tests::on_both_backends!(
    plain: [
        upload_is_idempotent_and_reads_back,
        bad_uploads_name_every_problem_and_write_nothing,
        names_with_hidden_characters_are_refused_naming_the_field,
        sector_times_are_checked_stored_and_shown,
        camel_case_and_pascal_case_uploads_read_alike,
        concurrent_duplicate_uploads_make_one_session,
        track_points_become_a_merged_map,
    ],
    clocked: [thirty_first_upload_in_a_minute_is_limited],
    ports: [track_job_transitions, stuck_jobs_resume_when_the_server_starts]
);
