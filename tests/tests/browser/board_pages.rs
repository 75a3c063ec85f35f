//! The public board pages in headless Chromium (chromedriver and axe-core from npm, both set up
//! by `tests/run.sh`): each page shows the rows of a board written through the API, the car
//! selector and the next-page link work by clicking (no script on the page), a name holding
//! markup, bidi or zero-width characters shows as text with nothing run, every page passes
//! axe-core with no serious or critical violation, and each page is photographed at desktop
//! and phone widths (which it fits without scrolling sideways) under the test's output directory (`target/tmp/board_pages/`), the
//! spread of lap times with a driver marked by `?driver=` among them. The pictures (the
//! spread, the track's map, a driver's progress and both link previews) are shown on both
//! backends.

use fantoccini::{Client, Locator};
use paddock_core::ports::items::Query;
use paddock_core::tables::Table;
use paddock_tests::browser::{click_through, env, open_browser};
use paddock_tests::{Backend, TestApp, envelope, session_body, spawn_app};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Gives `user`'s board rows a name the profile rules would refuse (as rows written before
/// those rules, or by a bug, might hold).
async fn rename_rows(app: &TestApp, track: &str, user: &str, name: &str) {
    let page = app
        .ports
        .items
        .query(Query::partition(
            Table::Leaderboards,
            format!("BOARD#{track}"),
        ))
        .await
        .unwrap();
    for mut item in page.items {
        if item.get("userId") == Some(&json!(user)) {
            item.insert("displayName".into(), json!(name));
            app.ports
                .items
                .put(Table::Leaderboards, item, None)
                .await
                .unwrap();
        }
    }
}

/// The texts of the cells of `column` (1-based) of the page's table, row by row (the page is
/// loaded: every navigation here waits for its page, as [`click_through`] does).
pub(super) async fn column(client: &Client, column: usize) -> Vec<String> {
    texts(client, &format!("tbody tr td:nth-child({column})")).await
}

/// The texts of the elements `css` finds on the open page, in page order.
pub(super) async fn texts(client: &Client, css: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.unwrap() {
        texts.push(element.text().await.unwrap());
    }
    texts
}

/// Runs axe-core on the open page; panics on a serious or critical violation.
pub(super) async fn accessible(client: &Client, page: &str) {
    let source = std::fs::read_to_string(env("PADDOCK_TEST_AXE_JS")).expect("axe-core");
    client
        .execute(&source, vec![])
        .await
        .expect("axe-core loads");
    let found = client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document).then(r => done(r.violations.map(v =>
                 ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html)}))));",
            vec![],
        )
        .await
        .expect("axe-core runs");
    let grave: Vec<&Value> = found
        .as_array()
        .expect("violations")
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect();
    assert!(grave.is_empty(), "{page}: {grave:#?}");
}

/// Photographs the open page at desktop and phone widths, which it must fit.
pub(super) async fn photograph(client: &Client, name: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("board_pages");
    std::fs::create_dir_all(&dir).unwrap();
    for (width, height, label) in [(1280, 900, "desktop"), (390, 844, "phone")] {
        client.set_window_size(width, height).await.unwrap();
        // Wide tables scroll in their own box; the page itself never scrolls sideways.
        let overflow = client
            .execute(
                "const e = document.documentElement; return e.scrollWidth - e.clientWidth;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            overflow,
            json!(0),
            "{name} at {label} width scrolls sideways"
        );
        let png = client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(dir.join(format!("{name}-{label}.png")), png).unwrap();
    }
    client.set_window_size(1280, 900).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn board_pages_render_page_and_stay_inert_in_a_browser() {
    let app = spawn_app().await;
    let script = "<script>document.title='pwned'</script>";
    let (ana, track) = app
        .driver_with_lap("Ana", 90_000, "Porsche 992 GT3 R")
        .await;
    app.driver_with_lap(script, 90_500, "Ferrari 296 GT3").await;
    let (hidden, _) = app
        .driver_with_lap("Hidden", 90_700, "Ferrari 296 GT3")
        .await;
    rename_rows(&app, &track, &hidden, "evil\u{202E}gnp.exe\u{200B}").await;
    // A third driver in the Ferrari: the car selector lists cars from three drivers on.
    app.driver_with_lap("Fay", 91_900, "Ferrari 296 GT3").await;
    // 27 drivers in all: two pages of 25.
    futures::future::join_all((4..27).map(|i| {
        let app = &app;
        async move {
            app.driver_with_lap(&format!("Driver_{i:02}"), 91_000 + 10 * i, "BMW M4 GT3")
                .await
        }
    }))
    .await;

    let client = open_browser().await;
    let board = format!("{}/boards/{track}", app.address);
    client.goto(&board).await.unwrap();
    assert_eq!(
        client.title().await.unwrap(),
        "Spa-Francorchamps (GP) · ACC · Paddock leaderboard"
    );
    let ranks = column(&client, 1).await;
    assert_eq!(ranks, (1..=25).map(|r| r.to_string()).collect::<Vec<_>>());
    let names = column(&client, 2).await;
    assert!(names[0].ends_with("Ana"), "{:?}", names[0]);
    assert!(
        names[1].ends_with(script),
        "markup shows as text: {:?}",
        names[1]
    );
    assert!(
        names[2].ends_with("evil\u{FFFD}gnp.exe\u{FFFD}"),
        "{:?}",
        names[2]
    );
    assert_eq!(column(&client, 3).await[..2], ["1:30.000", "1:30.500"]);
    assert_eq!(column(&client, 4).await[..2], ["—", "+0.500"]);
    let scripts = client.find_all(Locator::Css("script")).await.unwrap();
    assert!(scripts.is_empty(), "no script element on the page");
    accessible(&client, "board").await;
    photograph(&client, "board").await;

    // The spread of the field, with a driver marked by a shared link: one bar holds them,
    // and the chart's numbers are text.
    client
        .goto(&format!("{board}?driver={hidden}"))
        .await
        .unwrap();
    let bars = client
        .find_all(Locator::Css("svg#spread rect.bar"))
        .await
        .unwrap();
    let mut drivers = 0;
    for bar in &bars {
        drivers += bar
            .attr("data-drivers")
            .await
            .unwrap()
            .and_then(|n| n.parse::<u64>().ok())
            .expect("a bar's drivers");
    }
    assert_eq!(drivers, 27, "every driver in a bar");
    let marked = client
        .find_all(Locator::Css("rect.bar.marked"))
        .await
        .unwrap();
    assert_eq!(marked.len(), 1, "one marked bar");
    let caption = client
        .find(Locator::Css("figure.chart figcaption"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(caption.contains("rank 3 of 27, top 12 %"), "{caption}");
    accessible(&client, "board with a marked driver").await;
    photograph(&client, "board-spread").await;

    // The car selector: choose Ferrari (a plain click: choosing leads nowhere), press Show.
    client
        .find(Locator::Css("select#car option[value='Ferrari 296 GT3']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click_through(&client, Locator::Css("form button")).await;
    let url = client.current_url().await.unwrap();
    assert!(
        url.query().unwrap().contains("car=Ferrari+296+GT3"),
        "{url}"
    );
    assert_eq!(column(&client, 1).await, ["1", "2", "3"]);
    assert_eq!(
        column(&client, 5).await,
        ["Ferrari 296 GT3", "Ferrari 296 GT3", "Ferrari 296 GT3"]
    );
    accessible(&client, "car board").await;
    photograph(&client, "car-board").await;

    // The next page of the whole board.
    client.goto(&board).await.unwrap();
    click_through(&client, Locator::Css("a[rel=next]")).await;
    assert_eq!(column(&client, 1).await, ["26", "27"]);
    accessible(&client, "second page").await;

    // From a row to the driver's page.
    client.goto(&board).await.unwrap();
    click_through(&client, Locator::Css(&format!("a[href='/drivers/{ana}']"))).await;
    assert_eq!(client.title().await.unwrap(), "Ana · Paddock driver");
    assert_eq!(column(&client, 2).await, ["1 of 27"]);
    accessible(&client, "driver").await;
    photograph(&client, "driver").await;

    // The tracks page, and its search.
    client
        .goto(&format!("{}/boards", app.address))
        .await
        .unwrap();
    assert_eq!(column(&client, 4).await, ["27"]);
    accessible(&client, "boards").await;
    photograph(&client, "boards").await;
    client
        .find(Locator::Css("input#q"))
        .await
        .unwrap()
        .send_keys("monza")
        .await
        .unwrap();
    click_through(&client, Locator::Css("form button")).await;
    assert!(column(&client, 1).await.is_empty());
    assert_ne!(client.title().await.unwrap(), "pwned");
    client.close().await.unwrap();
}

/// A session of the driver of `token` driven at `at` with a lap of `ms` and `points` track
/// points, submitted: the track id.
pub(super) async fn submitted(
    app: &TestApp,
    token: &str,
    at: &str,
    ms: i64,
    points: usize,
) -> String {
    let csid = paddock_tests::unique("s");
    let body = session_body(&csid, at, &[(ms, true, 0.95)], points);
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert_eq!(status, 201, "{res}");
    let submit =
        json!({"sessionId": res["data"]["sessionId"], "lapTimeMs": ms, "qualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &submit, token)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{res}");
    res["data"]["trackId"].as_str().unwrap().to_owned()
}

/// How many elements `css` finds on the open page.
pub(super) async fn count(client: &Client, css: &str) -> usize {
    client.find_all(Locator::Css(css)).await.unwrap().len()
}

/// The `og:image` of the open page, as a path of the app.
pub(super) async fn og_image(client: &Client) -> String {
    let content = client
        .find(Locator::Css("meta[property='og:image']"))
        .await
        .expect("an og:image")
        .attr("content")
        .await
        .unwrap()
        .expect("its address");
    content
        .strip_prefix(PUBLIC_URL)
        .unwrap_or_else(|| panic!("{content} under the public URL"))
        .to_owned()
}

/// Opens the link preview at `path` and answers its size as the browser decoded it.
pub(super) async fn preview_size(client: &Client, app: &TestApp, path: &str) -> (u64, u64) {
    client
        .goto(&format!("{}{path}", app.address))
        .await
        .unwrap();
    let size = client
        .execute(
            "const i = document.images[0]; return [i.naturalWidth, i.naturalHeight];",
            vec![],
        )
        .await
        .expect("the picture's size");
    let size: Vec<u64> = serde_json::from_value(size).expect("two numbers");
    (size[0], size[1])
}

/// The address the pages name as their own in these tests.
pub(super) const PUBLIC_URL: &str = "https://paddock.example";

async fn the_pictures_show_and_read_in_a_browser(backend: Backend) {
    let (app, _) = paddock_tests::spawn_configured(backend, |s| {
        s.auth.public_url = Some(PUBLIC_URL.to_owned());
    })
    .await;
    // A driver whose four sessions on the track draw a progress line (the first with track
    // points, which make the track's map), and a field around them.
    let (token, ana) = app.driver("Ana").await;
    let track = submitted(&app, &token, "2026-10-01T18:00:00Z", 92_400, 500).await;
    for (at, ms) in [
        ("2026-10-08T18:00:00Z", 91_300),
        ("2026-10-15T18:00:00Z", 91_800),
        ("2026-10-22T18:00:00Z", 90_600),
    ] {
        submitted(&app, &token, at, ms, 0).await;
    }
    futures::future::join_all((0..12).map(|i| {
        let app = &app;
        async move {
            app.driver_with_lap(&format!("Field_{i:02}"), 89_000 + 613 * i, "BMW M4 GT3")
                .await
        }
    }))
    .await;
    app.wait_for_map(&token, &track, 1).await;

    let client = open_browser().await;
    let board = format!("{}/boards/{track}?driver={ana}", app.address);
    client.goto(&board).await.unwrap();
    assert!(count(&client, "svg#spread rect.bar").await > 0);
    assert_eq!(count(&client, "svg#spread rect.bar.marked").await, 1);
    let map = client
        .find(Locator::Css("figure.track-map svg"))
        .await
        .expect("the track's map");
    let label = map.attr("aria-label").await.unwrap().unwrap_or_default();
    assert!(label.starts_with("Map of Spa-Francorchamps"), "{label}");
    let (_, _, width, height) = map.rectangle().await.unwrap();
    assert!(width > 50.0 && height > 50.0, "{width} x {height}");
    let image = og_image(&client).await;
    assert_eq!(image, format!("/boards/{track}/preview.png"));
    accessible(&client, "board with its pictures").await;
    photograph(&client, &format!("board-map-{backend:?}")).await;
    assert_eq!(preview_size(&client, &app, &image).await, (1200, 630));

    let driver = format!("{}/drivers/{ana}", app.address);
    client.goto(&driver).await.unwrap();
    assert_eq!(count(&client, "svg#progress-0 circle.lap").await, 4);
    assert_eq!(
        count(&client, "svg#progress-0 circle.lap.new-best").await,
        3
    );
    let caption = client
        .find(Locator::Css("figure.progress figcaption"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(caption.contains("best lap by session"), "{caption}");
    let description = client
        .find(Locator::Css("svg#progress-0 desc"))
        .await
        .unwrap()
        .html(true)
        .await
        .unwrap();
    assert!(
        description.contains("4 sessions from 2026-10-01 to 2026-10-22; the best went from 1:32.400 to 1:30.600, 1.800 s faster."),
        "{description}"
    );
    let image = og_image(&client).await;
    assert_eq!(image, format!("/drivers/{ana}/preview.png"));
    accessible(&client, "driver with progress").await;
    photograph(&client, &format!("driver-progress-{backend:?}")).await;
    assert_eq!(preview_size(&client, &app, &image).await, (1200, 630));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pictures_show_and_read_in_a_browser_embedded() {
    the_pictures_show_and_read_in_a_browser(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pictures_show_and_read_in_a_browser_on_dynamodb_local() {
    the_pictures_show_and_read_in_a_browser(Backend::Aws).await;
}
