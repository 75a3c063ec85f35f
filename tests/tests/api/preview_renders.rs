//! The link previews (`/boards/{trackId}/preview.png`, `/drivers/{userId}/preview.png`) are
//! drawn once and kept in the leaderboard cache like the pages, on both backends: asked
//! again, or with any other query string, they are not drawn again; a new best on the track
//! (or the driver's) draws them anew. Drawings are counted by the server's
//! `paddock_previews_rendered_total`, so the scenarios of this file take turns (the counter
//! is the process's).

use std::time::{Duration, Instant};

use paddock_tests::{Backend, TestApp};
use tokio::sync::Mutex;

/// Held by each scenario: the render counter is shared by the servers of this process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// How many previews of `kind` (`board`, `driver`) the server has drawn, from its `/metrics`.
async fn drawn(app: &TestApp, kind: &str) -> u64 {
    let text = app.scrape_metrics().await.text().await.unwrap();
    let series = format!("paddock_previews_rendered_total{{preview=\"{kind}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// GET `path`: status, ETag and bytes of the picture.
async fn preview(app: &TestApp, path: &str) -> (u16, String, Vec<u8>) {
    let res = app.get(path).await;
    let status = res.status().as_u16();
    let etag = res
        .headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    if status == 200 {
        assert_eq!(res.headers()["content-type"], "image/png");
        assert!(
            res.headers()["cache-control"]
                .to_str()
                .unwrap()
                .starts_with("public, max-age=")
        );
    }
    (status, etag, res.bytes().await.unwrap().to_vec())
}

/// The local server over fresh ports of `backend`, with a cache lifetime longer than the
/// scenario, so that only what the scenario does drops a preview.
async fn server(backend: Backend, cache: Duration) -> TestApp {
    paddock_tests::spawn_configured(backend, |s| {
        s.auth.public_url = Some("https://paddock.example".to_owned());
        s.leaderboard_cache = cache;
    })
    .await
    .0
}

async fn a_board_preview_is_drawn_once_until_a_new_best(backend: Backend) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = server(backend, Duration::from_secs(600)).await;
    let (ana, _) = app.driver("Ana").await;
    let (ben, _) = app.driver("Ben").await;
    let track = app.submitted_lap(&ana, 90_000, "BMW M4 GT3").await;
    app.submitted_lap(&ben, 91_000, "BMW M4 GT3").await;
    let path = format!("/boards/{track}/preview.png");

    let before = drawn(&app, "board").await;
    let (status, etag, png) = preview(&app, &path).await;
    assert_eq!(status, 200);
    assert_eq!(drawn(&app, "board").await, before + 1);
    // Asked again, with junk query strings (at once), and conditionally: the same picture,
    // not drawn again.
    let junk = [
        "",
        "?utm_source=chat&fbclid=abc",
        "?x=1",
        "?car=",
        "?CAR=BMW+M4+GT3",
        "?driver=00000000-0000-0000-0000-000000000000",
    ];
    let paths: Vec<String> = junk.iter().map(|query| format!("{path}{query}")).collect();
    let again = futures::future::join_all(paths.iter().map(|p| preview(&app, p))).await;
    for (query, (status, tag, bytes)) in junk.iter().zip(again) {
        assert_eq!(status, 200, "{query}");
        assert_eq!(tag, etag, "{query}");
        assert!(bytes == png, "{query}: the same bytes");
    }
    let held = app
        .client
        .get(format!("{}{path}?ref=1", app.address))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), 304);
    assert_eq!(drawn(&app, "board").await, before + 1, "drawn once");

    // A car's board is another picture, drawn once too.
    let car = format!("{path}?car=BMW+M4+GT3");
    let (status, car_etag, _) = preview(&app, &car).await;
    assert_eq!(status, 200);
    assert_eq!(preview(&app, &format!("{car}&utm=1")).await.1, car_etag);
    assert_eq!(drawn(&app, "board").await, before + 2);

    // A new best on the track draws both anew, once.
    app.submitted_lap(&ben, 89_500, "BMW M4 GT3").await;
    let (status, new_etag, new_png) = preview(&app, &path).await;
    assert_eq!(status, 200);
    assert_ne!(new_etag, etag, "the preview shows the new best");
    assert!(new_png != png);
    assert_eq!(preview(&app, &format!("{path}?z=2")).await.1, new_etag);
    assert_ne!(preview(&app, &car).await.1, car_etag);
    assert_eq!(drawn(&app, "board").await, before + 4);

    // A board nobody raced is 404, each time, and draws nothing.
    let nobody = format!("/boards/{}/preview.png", uuid::Uuid::new_v4());
    for _ in 0..2 {
        assert_eq!(preview(&app, &nobody).await.0, 404);
    }
    assert_eq!(drawn(&app, "board").await, before + 4);
}

async fn a_driver_preview_is_drawn_once_until_the_driver_changes(backend: Backend) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = server(backend, Duration::from_secs(600)).await;
    let (token, user) = app.driver("Cam").await;
    app.submitted_lap(&token, 92_000, "BMW M4 GT3").await;
    let path = format!("/drivers/{user}/preview.png");

    let before = drawn(&app, "driver").await;
    let (status, etag, png) = preview(&app, &path).await;
    assert_eq!(status, 200);
    for query in ["", "?cursor=abc", "?utm_source=x&y=z"] {
        let (status, tag, bytes) = preview(&app, &format!("{path}{query}")).await;
        assert_eq!((status, tag.as_str()), (200, etag.as_str()), "{query}");
        assert!(bytes == png, "{query}");
    }
    assert_eq!(drawn(&app, "driver").await, before + 1, "drawn once");

    // The driver's new best draws it anew.
    app.submitted_lap(&token, 91_000, "BMW M4 GT3").await;
    let (status, new_etag, _) = preview(&app, &path).await;
    assert_eq!(status, 200);
    assert_ne!(new_etag, etag);
    assert_eq!(preview(&app, &path).await.1, new_etag);
    assert_eq!(drawn(&app, "driver").await, before + 2);

    // Another driver's id, or none at all: 404 and nothing drawn.
    for missing in [
        format!("/drivers/{}/preview.png", uuid::Uuid::new_v4()),
        "/drivers/not-an-id/preview.png".to_owned(),
    ] {
        assert_eq!(preview(&app, &missing).await.0, 404, "{missing}");
    }
    assert_eq!(drawn(&app, "driver").await, before + 2);
}

/// CPU time of this process so far (user and system, all threads): the server runs in it.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// The CPU time of `n` requests for `path`, per request.
async fn cpu_per_request(app: &TestApp, path: &str, n: u32) -> Duration {
    let (cpu, wall) = (cpu_time(), Instant::now());
    for _ in 0..n {
        assert_eq!(preview(app, path).await.0, 200);
    }
    let per = (cpu_time() - cpu) / n;
    println!(
        "  {path}: {per:?} CPU and {:?} wall per request",
        wall.elapsed() / n
    );
    per
}

/// What a preview costs drawn (the cache off) and answered from the cache: printed, not
/// asserted (`docs/perf.md` has the figures of a release build).
async fn what_a_preview_costs_drawn_and_cached(backend: Backend) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let n = 40;
    for (name, cache) in [
        ("drawn every time (cache off)", Duration::ZERO),
        ("cached", Duration::from_secs(600)),
    ] {
        let app = server(backend, cache).await;
        let mut track = String::new();
        for (i, name) in ["Ana", "Ben", "Eve", "Fay"].iter().enumerate() {
            let (token, _) = app.driver(name).await;
            track = app
                .submitted_lap(&token, 90_000 + 731 * i as i64, "BMW M4 GT3")
                .await;
        }
        let path = format!("/boards/{track}/preview.png");
        preview(&app, &path).await;
        println!("{backend:?}, board preview {name}, {n} requests:");
        cpu_per_request(&app, &path, n).await;
    }
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [
        a_board_preview_is_drawn_once_until_a_new_best,
        a_driver_preview_is_drawn_once_until_the_driver_changes,
        what_a_preview_costs_drawn_and_cached,
    ]
);
