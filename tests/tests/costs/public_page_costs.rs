//! What a public page costs as one driver grows it: the items read and bytes answered by a
//! driver's page with 30 and 60 tracks and with 1, 30 and 60 sessions on a track (its
//! progress chart and link preview), and by a track's page and car list with 35 and 70
//! cars made up by one driver; and the daily limit on the boards a driver opens. The local
//! server on both backends, its page cache off (each view is a miss). The figures are printed
//! (`RUST_TEST_NOCAPTURE=1 ./tests/run.sh --test costs public_page_costs::`); asserted is that they do
//! not grow.

use axum::body::Body;
use axum::extract::ConnectInfo;
use futures::StreamExt;
use http::Request;
use http_body_util::BodyExt;
use paddock_tests::counted_routes::{self, CountedRoutes as Viewed};
use paddock_tests::counting_items::Counted;
use paddock_tests::{Backend, TestApp, envelope, session_body};
use serde_json::json;
use std::net::SocketAddr;
use tower::ServiceExt;

/// A server with room for many boards a day, and beside it its routes over a counted store
/// with the page cache off ([`counted_routes`]).
async fn counted_app(backend: Backend, new_boards_per_day: u32) -> Viewed {
    counted_routes::spawn(backend, |s| {
        s.new_boards_per_day = new_boards_per_day;
        s.uploads_per_minute = 1_000_000;
    })
    .await
}

/// Uploads a one-lap session of `ms` on `track` in `car` and submits the lap; answers the
/// submission's status and the track id.
async fn race(app: &TestApp, token: &str, track: &str, car: &str, ms: i64) -> (u16, String) {
    let mut body = session_body(
        &paddock_tests::unique("s"),
        "2026-11-01T10:00:00Z",
        &[(ms, true, 0.95)],
        0,
    );
    body["TrackName"] = json!(track);
    body["VehicleName"] = json!(car);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert!(status == 201 || status == 200, "{res}");
    let session = res["data"]["sessionId"].as_str().unwrap().to_owned();
    let track_id = res["data"]["trackId"].as_str().unwrap().to_owned();
    let submit = json!({"sessionId": session, "lapTimeMs": ms, "qualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &submit, token)
            .await,
    )
    .await;
    assert!(status == 200 || status == 429, "{res}");
    (status, track_id)
}

/// Races every `(track, car)` of `boards`, eight at a time.
async fn race_all(app: &TestApp, token: &str, boards: Vec<(String, String)>) {
    futures::stream::iter(boards)
        .map(|(track, car)| async move {
            let (status, _) = race(app, token, &track, &car, 95_000).await;
            assert_eq!(status, 200);
        })
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
}

/// A view of `path` through the counted routes: what it read and how many bytes it answered.
async fn view(c: &Viewed, path: &str) -> (Counted, usize) {
    let mut request = Request::builder().uri(path).body(Body::empty()).unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 7], 50_000))));
    let (response, counted) = c.counting.cost_of(c.router.clone().oneshot(request)).await;
    let response = response.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (counted, bytes.len())
}

async fn a_drivers_page_costs_a_page(backend: Backend) {
    let c = counted_app(backend, 1_000).await;
    let app = &c.app;
    let (token, user) = app.driver("Collector").await;
    let mut figures = Vec::new();
    let mut raced = 0;
    // Both past a page (25 tracks), the second twice the first.
    for tracks in [30, 60] {
        let boards = (raced..tracks)
            .map(|i| (format!("Track {i:04}"), "Porsche 992 GT3 R".to_owned()))
            .collect();
        race_all(app, &token, boards).await;
        raced = tracks;
        figures.push((tracks, view(&c, &format!("/drivers/{user}")).await));
    }
    for (tracks, (counted, bytes)) in &figures {
        println!(
            "{backend:?}: /drivers/{{id}} of a driver on {tracks} tracks: {} items read in {} calls, {bytes} bytes",
            counted.items_read, counted.calls
        );
    }
    let (a, b) = (&figures[0].1, &figures[1].1);
    assert_eq!(
        a.0.items_read, b.0.items_read,
        "items read grew with the tracks"
    );
    assert!(b.1 <= a.1 + 64, "the page grew: {} -> {} bytes", a.1, b.1);
    // The next page goes on where the first stopped.
    let html = app
        .get(&format!("/drivers/{user}"))
        .await
        .text()
        .await
        .unwrap();
    let next = html
        .split("rel=\"next\"")
        .next()
        .and_then(|before| before.rsplit("href=\"").next())
        .map(|href| href.split('"').next().unwrap().replace("&amp;", "&"))
        .expect("a next-page link");
    let second = app.get(&next).await;
    assert_eq!(second.status(), 200);
    let second = second.text().await.unwrap();
    assert!(second.contains("Track 00"), "{second}");
}

/// A driver's page and link preview read the latest sessions of each track, however many
/// the driver submitted: one, 30 and 60 sessions on a track.
async fn a_drivers_progress_costs_the_same_however_many_laps(backend: Backend) {
    let c = counted_app(backend, 1_000).await;
    let app = &c.app;
    let (token, user) = app.driver("Regular").await;
    let mut figures = Vec::new();
    let mut raced = 0;
    for sessions in [1, 30, 60] {
        for i in raced..sessions {
            let (status, _) = race(app, &token, "Progress Ring", "BMW M4 GT3", 95_000 - i).await;
            assert_eq!(status, 200);
        }
        raced = sessions;
        let page = view(&c, &format!("/drivers/{user}")).await;
        let preview = view(&c, &format!("/drivers/{user}/preview.png")).await;
        figures.push((sessions, page, preview));
    }
    for (sessions, (page, bytes), (preview, png)) in &figures {
        println!(
            "{backend:?}: /drivers/{{id}} of a driver with {sessions} session(s) on a track: \
             {} items read in {} calls, {bytes} bytes; preview.png {} items, {png} bytes",
            page.items_read, page.calls, preview.items_read
        );
    }
    let (at_30, at_60) = (&figures[1], &figures[2]);
    assert_eq!(
        at_30.1.0.items_read, at_60.1.0.items_read,
        "the page's items grew with the sessions"
    );
    assert_eq!(at_30.1.0.calls, at_60.1.0.calls);
    assert_eq!(at_30.2.0.items_read, at_60.2.0.items_read);
    assert!(at_60.2.1 < 256 * 1024, "the preview is bounded");
    // One session reads its one row; the chart's rows are capped at 24.
    assert_eq!(
        at_60.1.0.items_read - figures[0].1.0.items_read,
        23,
        "24 rows against 1"
    );
}

async fn a_tracks_cars_cost_a_page(backend: Backend) {
    let c = counted_app(backend, 1_000).await;
    let app = &c.app;
    // Three drivers in one car: the car is listed.
    let mut track_id = String::new();
    for name in ["Ana", "Ben", "Eve"] {
        let (token, _) = app.driver(name).await;
        track_id = race(app, &token, "Spa-Francorchamps", "Ferrari 296 GT3", 92_000)
            .await
            .1;
    }
    let (token, _) = app.driver("Inventor").await;
    let mut figures = Vec::new();
    let mut made_up = 0;
    // Both past the cars a page shows (30), the second twice the first.
    for cars in [35, 70] {
        let boards = (made_up..cars)
            .map(|i| {
                (
                    "Spa-Francorchamps".to_owned(),
                    format!("{i:04}{}", "x".repeat(120)),
                )
            })
            .collect();
        race_all(app, &token, boards).await;
        made_up = cars;
        let page = view(&c, &format!("/boards/{track_id}")).await;
        let list = view(&c, &format!("/v1/leaderboards/vehicles?trackId={track_id}")).await;
        figures.push((cars, page, list));
    }
    for (cars, (page, page_bytes), (list, list_bytes)) in &figures {
        println!(
            "{backend:?}: a track with {cars} made-up cars: /boards/{{id}} {} items read, {page_bytes} bytes; \
             /v1/leaderboards/vehicles {} items read, {list_bytes} bytes",
            page.items_read, list.items_read
        );
    }
    let (small, large) = (&figures[0], &figures[1]);
    assert_eq!(
        small.1.0.items_read, large.1.0.items_read,
        "the page's reads grew"
    );
    assert_eq!(
        small.2.0.items_read, large.2.0.items_read,
        "the list's reads grew"
    );
    assert_eq!(small.1.1, large.1.1, "the page grew");
    let (_, list) = envelope(
        app.get(&format!("/v1/leaderboards/vehicles?trackId={track_id}"))
            .await,
    )
    .await;
    assert_eq!(
        list["data"]["items"],
        json!([{"vehicleName": "Ferrari 296 GT3", "totalEntries": 3}])
    );
    // A made-up car still has its own board.
    let car = format!("0007{}", "x".repeat(120));
    let res = app.get(&format!("/boards/{track_id}?car={car}")).await;
    assert_eq!(res.status(), 200);
}

async fn the_boards_a_driver_opens_are_limited_a_day(backend: Backend) {
    let c = counted_app(backend, 3).await;
    let app = &c.app;
    let (token, _) = app.driver("Opener").await;
    for i in 0..3 {
        let (status, _) = race(app, &token, &format!("Track {i}"), "Car", 95_000).await;
        assert_eq!(status, 200);
    }
    // A fourth new board is refused, with nothing written; a better lap on a board the driver
    // is on still counts.
    let (status, track) = race(app, &token, "Track 3", "Car", 95_000).await;
    assert_eq!(status, 429);
    let (_, board) = envelope(app.get(&format!("/v1/leaderboards?trackId={track}")).await).await;
    assert_eq!(board["data"]["totalEntries"], 0, "{board}");
    let (status, _) = race(app, &token, "Track 0", "Car", 94_000).await;
    assert_eq!(status, 200);
    let (status, _) = race(app, &token, "Track 0", "Another car", 93_000).await;
    assert_eq!(status, 429, "a new car's board is a new board too");
}

/// The count items of a field of `drivers` laps spread evenly over 80 to 120 s: the root and
/// the hundred-second items, as the board's counts hold them.
fn field_counts(drivers: u64) -> Vec<(String, serde_json::Map<String, serde_json::Value>)> {
    let mut items: std::collections::BTreeMap<String, serde_json::Map<String, serde_json::Value>> =
        Default::default();
    let mut add = |sk: String, attr: String, by: u64| {
        let n = items.entry(sk).or_default().entry(attr).or_insert(json!(0));
        *n = json!(n.as_u64().unwrap() + by);
    };
    for second in 80..120_u64 {
        let here = drivers / 40;
        add("COUNT#R".into(), format!("b{}", second / 100), here);
        add(
            format!("COUNT#H#{:05}", second / 100),
            format!("b{}", second % 100),
            here,
        );
    }
    add("COUNT#R".into(), "total".into(), drivers / 40 * 40);
    items.into_iter().collect()
}

async fn a_board_pages_pictures_cost_the_same_at_any_size(backend: Backend) {
    use paddock_core::leaderboards::board::BoardId;
    use paddock_core::leaderboards::bulk::{BulkBoard, BulkEntry};
    use paddock_core::leaderboards::spread::Spread;
    use paddock_core::ports::items::{Key, item};
    use paddock_core::tables::Table;
    use paddock_core::tracks::{TrackKey, count_session_op};

    let c = counted_app(backend, 1_000).await;
    let ports = c.app.ports.clone();
    let key = TrackKey::new("acc", "Monza", "GP");
    let track = key.id();
    ports
        .items
        .transact(vec![count_session_op(&key)])
        .await
        .unwrap();
    let mut bulk = BulkBoard::new(&track);
    let entries: Vec<BulkEntry> = (0..1_000_u64)
        .map(|i| BulkEntry {
            user_id: format!("00000000-0000-4000-8000-{i:012}").parse().unwrap(),
            display_name: format!("Driver {i}"),
            lap_time_ms: 80_000 + i64::try_from(i * 40).unwrap() + 7,
            vehicle_name: "BMW M4 GT3".into(),
            session_id: format!("00000000-0000-4000-9000-{i:012}").parse().unwrap(),
            submitted_at: time::OffsetDateTime::now_utc(),
        })
        .collect();
    for chunk in entries.chunks(100) {
        bulk.add(&ports, chunk).await.unwrap();
    }
    bulk.finish(&ports).await.unwrap();
    let board = BoardId::track(&track);
    let mut counted_ports = ports.clone();
    counted_ports.items = c.counting.clone();
    let marked = "00000000-0000-4000-8000-000000000500";
    let mut figures = Vec::new();
    for drivers in [1_000_u64, 1_000_000] {
        if drivers > 1_000 {
            // The counts of a million-driver field: what the spread reads (the rows past the
            // first page are never read by the page).
            for (sk, attrs) in field_counts(drivers) {
                let at = Key::new(format!("BOARD#{track}"), sk);
                ports
                    .items
                    .put(
                        Table::Leaderboards,
                        item(&at, serde_json::Value::Object(attrs)),
                        None,
                    )
                    .await
                    .unwrap();
            }
        }
        let (spread, alone) = c
            .counting
            .cost_of(Spread::read(&counted_ports, &board))
            .await;
        assert_eq!(spread.unwrap().total(), drivers);
        let (page, bytes) = view(&c, &format!("/boards/{track}")).await;
        let (marked_page, _) = view(&c, &format!("/boards/{track}?driver={marked}")).await;
        let (preview, png) = view(&c, &format!("/boards/{track}/preview.png")).await;
        figures.push((drivers, alone, page, bytes, marked_page, preview, png));
    }
    for (drivers, alone, page, bytes, marked, preview, png) in &figures {
        println!(
            "{backend:?}: /boards/{{id}} of {drivers} drivers: {} items read in {} calls ({} of them the spread's, \
             so {} without the pictures), {bytes} bytes; with ?driver= {} items; preview.png {} items, {png} bytes",
            page.items_read,
            page.calls,
            alone.items_read,
            page.items_read - alone.items_read,
            marked.items_read,
            preview.items_read
        );
    }
    let (small, large) = (&figures[0], &figures[1]);
    assert_eq!(
        small.2.items_read, large.2.items_read,
        "the page's reads grew"
    );
    assert_eq!(
        small.4.items_read, large.4.items_read,
        "the marked page's reads grew"
    );
    assert_eq!(
        small.5.items_read, large.5.items_read,
        "the preview's reads grew"
    );
}

paddock_tests::on_both_backends!(plain: [], ports: [
    a_board_pages_pictures_cost_the_same_at_any_size,
    a_drivers_page_costs_a_page,
    a_drivers_progress_costs_the_same_however_many_laps,
    a_tracks_cars_cost_a_page,
    the_boards_a_driver_opens_are_limited_a_day,
]);
