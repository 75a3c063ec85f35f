//! The public board pages over HTTP, on both backends: the rows of a board written through the
//! API, the car boards and paging, escaping, the headers (policy, validators), the error
//! pages, and a deleted driver gone. (The browser test renders them in Chromium.)

use futures::future::join_all;
use paddock_tests::{Backend, TestApp, envelope, session_body};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;

/// GET `path` with `If-None-Match: tag`: the status.
async fn page_if_none_match(app: &TestApp, path: &str, tag: &str) -> u16 {
    app.client
        .get(format!("{}{path}", app.address))
        .header("if-none-match", tag)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// GET `path`: status, headers, body.
async fn page(app: &TestApp, path: &str) -> (u16, HeaderMap, String) {
    let res = app.get(path).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no {name} header"))
}

/// The ranks of a page's board rows, in order.
fn ranks(html: &str) -> Vec<usize> {
    html.split("<tr><td class=\"num\">")
        .skip(1)
        .filter_map(|row| row.split('<').next()?.parse().ok())
        .collect()
}

async fn a_board_page_shows_the_board(app: TestApp) {
    let (ana, track) = app
        .driver_with_lap("Ana", 90_000, "Porsche 992 GT3 R")
        .await;
    let (ben, _) = app.driver_with_lap("Ben", 91_500, "Ferrari 296 GT3").await;
    let (eve, _) = app
        .driver_with_lap(
            "<script>document.title='pwned'</script>",
            92_250,
            "porsche 992 gt3 r",
        )
        .await;

    let (status, headers, html) = page(&app, &format!("/boards/{track}")).await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(header(&headers, "content-type"), "text/html; charset=utf-8");
    let csp = header(&headers, "content-security-policy");
    assert!(
        csp.starts_with("default-src 'none'; style-src 'sha256-"),
        "{csp}"
    );
    assert!(
        !csp.contains("unsafe") && !csp.contains("script-src"),
        "{csp}"
    );
    assert_eq!(header(&headers, "x-content-type-options"), "nosniff");
    assert_eq!(header(&headers, "referrer-policy"), "same-origin");
    assert!(header(&headers, "cache-control").starts_with("public, max-age="));
    let etag = header(&headers, "etag").to_owned();

    assert_eq!(ranks(&html), vec![1, 2, 3], "{html}");
    let (a, b, e) = (
        html.find(&format!("/drivers/{ana}")).unwrap(),
        html.find(&format!("/drivers/{ben}")).unwrap(),
        html.find(&format!("/drivers/{eve}")).unwrap(),
    );
    assert!(a < b && b < e, "rows in rank order");
    for text in [
        "1:30.000",
        "1:31.500",
        "+1.500",
        "+2.250",
        "Ferrari 296 GT3",
        "2026-",
    ] {
        assert!(html.contains(text), "{text} missing");
    }
    assert!(html.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"));
    assert!(!html.contains("<script"), "no script on the page");
    assert!(html.contains("<title>Spa-Francorchamps (GP) · ACC · Paddock leaderboard</title>"));
    assert!(html.contains(r#"<meta property="og:description" content="1. Ana 1:30.000 · 2. Ben 1:31.500 · 3. &lt;script&gt;"#), "{html}");

    // The client's copy is still good, its tag compared weakly (a proxy may weaken it).
    let path = format!("/boards/{track}");
    assert_eq!(
        page_if_none_match(&app, &path, &format!("W/{etag}")).await,
        304
    );
    assert_eq!(page_if_none_match(&app, &path, "W/\"other\"").await, 200);
    // The client's copy is still good: 304, no body.
    let res = app
        .client
        .get(format!("{}/boards/{track}", app.address))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 304);
    assert_eq!(res.headers()["etag"], HeaderValue::from_str(&etag).unwrap());

    // One car's board: its drivers, ranked among themselves; the car matched in any case.
    let (status, _, html) = page(
        &app,
        &format!("/boards/{track}?car=PORSCHE%20992%20GT3%20R"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(ranks(&html), vec![1, 2]);
    assert!(
        html.contains(&format!("/drivers/{eve}")) && !html.contains(&format!("/drivers/{ben}"))
    );
    assert!(html.contains("+2.250"), "gaps are to the car board's first");
    assert!(
        html.contains(r#"<option value="Porsche 992 GT3 R" selected>"#),
        "{html}"
    );
    // The title names the car as stored, not as the query spelt it.
    assert!(
        html.contains(
            "<title>Spa-Francorchamps (GP) · ACC · Porsche 992 GT3 R · Paddock leaderboard</title>"
        ),
        "{html}"
    );
    assert!(!html.contains("PORSCHE"), "{html}");

    // The tracks page lists the board, and finds it by name.
    let (status, _, html) = page(&app, "/boards?q=spa").await;
    assert_eq!(status, 200);
    assert!(
        html.contains(&format!("/boards/{track}")) && html.contains("<td class=\"num\">3</td>")
    );
    let (_, _, html) = page(&app, "/boards?q=monza").await;
    assert!(!html.contains(&format!("/boards/{track}")) && html.contains("No boards here."));

    // A driver's page: the best on each board, with its rank.
    let (status, _, html) = page(&app, &format!("/drivers/{ben}")).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<bdi>Ben</bdi>") && html.contains("2 of 3") && html.contains("1:31.500")
    );
    assert!(html.contains(&format!("/boards/{track}")));
}

async fn boards_page_by_cursor(app: TestApp) {
    let laps = join_all((0..27).map(|i| {
        let app = &app;
        async move {
            app.driver_with_lap(&format!("Driver_{i:02}"), 95_000 + 100 * i, "BMW M4 GT3")
                .await
        }
    }))
    .await;
    let track = &laps[0].1;
    let (_, _, first) = page(&app, &format!("/boards/{track}")).await;
    assert_eq!(ranks(&first), (1..=25).collect::<Vec<_>>());
    assert!(first.contains("27 drivers"));
    let next = first
        .split("rel=\"next\"")
        .next()
        .and_then(|s| s.rsplit("href=\"").next())
        .and_then(|s| s.split('"').next())
        .expect("a next-page link")
        .replace("&amp;", "&");
    assert!(
        next.starts_with(&format!("/boards/{track}?cursor=")),
        "{next}"
    );
    let (status, _, second) = page(&app, &next).await;
    assert_eq!(status, 200);
    assert_eq!(ranks(&second), vec![26, 27]);
    assert!(second.contains("Driver_26") && second.contains("First page"));
    assert!(!second.contains("rel=\"next\""));
}

async fn bad_addresses_get_pages_that_say_why(app: TestApp) {
    let unknown = uuid::Uuid::new_v4();
    for (path, status, says) in [
        (
            format!("/boards/{unknown}"),
            404,
            "Nobody has raced this track yet.",
        ),
        (
            "/boards/not-a-track".to_owned(),
            404,
            "There is no board at this address.",
        ),
        (
            format!("/drivers/{unknown}"),
            404,
            "There is no driver at this address.",
        ),
        (
            format!("/boards/{unknown}?cursor=nonsense"),
            400,
            "cursor: is not a cursor this page linked to",
        ),
        (
            format!("/boards/{unknown}?car={}", "x".repeat(129)),
            400,
            "car: must be at most 128 characters",
        ),
        ("/boards?q=a&q=b".to_owned(), 400, "q: may be given once"),
        (
            "/boards?cursor=nonsense".to_owned(),
            400,
            "cursor: is not a cursor this page linked to",
        ),
    ] {
        let (got, headers, html) = page(&app, &path).await;
        assert_eq!(got, status, "{path}: {html}");
        assert_eq!(
            header(&headers, "content-type"),
            "text/html; charset=utf-8",
            "{path}"
        );
        assert!(header(&headers, "content-security-policy").starts_with("default-src 'none'"));
        assert!(html.contains(says), "{path}: {html}");
    }
}

/// A link cannot make a page say what it likes: a car nobody raced on the track has no page,
/// and the 404 does not repeat the query.
async fn a_car_without_laps_has_no_page_and_is_not_echoed(app: TestApp) {
    let (_, track) = app
        .driver_with_lap("Ana", 90_000, "Porsche 992 GT3 R")
        .await;
    let claim = "Paddock says: this driver cheats";
    let (status, _, html) = page(
        &app,
        &format!("/boards/{track}?car=Paddock%20says%3A%20this%20driver%20cheats"),
    )
    .await;
    assert_eq!(status, 404, "{html}");
    assert!(!html.contains(claim) && !html.contains("cheats"), "{html}");
    assert!(
        html.contains("Nobody has raced this car on this track yet."),
        "{html}"
    );
    // A real car with no laps on this track has no page here either.
    let (status, _, html) = page(&app, &format!("/boards/{track}?car=Ferrari%20296%20GT3")).await;
    assert_eq!(status, 404, "{html}");
    assert!(!html.contains("Ferrari"), "{html}");
}

async fn a_deleted_driver_is_gone(app: TestApp) {
    let (token, _) = app.driver("Gone").await;
    let (_, track) = app.driver_with_lap("Stays", 93_000, "Audi R8 LMS").await;
    let mut body = session_body("gone-1", "2026-11-01T10:00:00Z", &[(92_000, true, 0.95)], 0);
    body["VehicleName"] = json!("Audi R8 LMS");
    let (_, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    let submit =
        json!({"sessionId": res["data"]["sessionId"], "lapTimeMs": 92_000, "qualityScore": 0.95});
    let (status, _) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &submit, &token)
            .await,
    )
    .await;
    assert_eq!(status, 200);
    let (_, me) = envelope(app.get_auth("/v1/profile/me", &token).await).await;
    let gone = me["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(page(&app, &format!("/drivers/{gone}")).await.0, 200);

    let res = app
        .client
        .delete(format!("{}/v1/profile/me", app.address))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    // This process forgets the driver's page at once; another (a Lambda function of its own)
    // within the cache lifetime.
    let mut status = 0;
    for _ in 0..80 {
        status = page(&app, &format!("/drivers/{gone}")).await.0;
        if status == 404 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, 404, "the deleted driver's page stayed");
    // The deletion job takes the board row away (this server's cache forgets it at once).
    for _ in 0..150 {
        let (_, _, html) = page(&app, &format!("/boards/{track}")).await;
        if !html.contains(&format!("/drivers/{gone}")) {
            assert_eq!(ranks(&html), vec![1]);
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the deleted driver's row stayed on the board page");
}

/// With a public address and an avatar allow-list configured: error pages name no address
/// of their own, and avatars show (and may load) from the listed hosts only.
async fn pages_name_and_load_only_what_they_should(backend: Backend) {
    let (app, _) = paddock_tests::spawn_configured(backend, |s| {
        s.auth.public_url = Some("https://paddock.example".to_owned());
        s.pages.avatar_hosts = vec!["cdn.discordapp.com".to_owned()];
    })
    .await;
    let avatars = [
        ("Listed", "https://cdn.discordapp.com/avatars/1/a.png", true),
        ("Tracker", "https://tracker.example.com/pixel.png", false),
        ("Address", "https://203.0.113.7/pixel.png", false),
        ("Port", "https://cdn.discordapp.com:8443/pixel.png", false),
    ];
    let mut track = String::new();
    let mut drivers = Vec::new();
    for (i, (name, avatar, _)) in avatars.iter().enumerate() {
        let (token, user) = app.driver(name).await;
        let res = app
            .client
            .patch(format!("{}/v1/profile/me", app.address))
            .bearer_auth(&token)
            .json(&json!({"avatarUrl": avatar}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{avatar}");
        track = app
            .submitted_lap(&token, 90_000 + 100 * i as i64, "BMW M4 GT3")
            .await;
        drivers.push(user);
    }

    let (status, headers, html) = page(&app, &format!("/boards/{track}")).await;
    assert_eq!(status, 200, "{html}");
    let csp = header(&headers, "content-security-policy");
    assert!(
        csp.contains("; img-src https://cdn.discordapp.com;"),
        "{csp}"
    );
    for (name, avatar, shown) in avatars {
        assert_eq!(html.contains(avatar), shown, "{name}: {html}");
    }
    assert_eq!(html.matches("<img").count(), 1, "{html}");
    assert!(html.contains(&format!(
        r#"<link rel="canonical" href="https://paddock.example/boards/{track}">"#
    )));
    for (user, (name, avatar, shown)) in drivers.iter().zip(avatars) {
        let (status, _, html) = page(&app, &format!("/drivers/{user}")).await;
        assert_eq!(status, 200, "{html}");
        assert_eq!(html.contains(avatar), shown, "{name}: {html}");
    }

    // Error pages: no canonical link and no og:url, whatever the address asked for.
    let unknown = uuid::Uuid::new_v4();
    for (path, status) in [
        (format!("/boards/{unknown}"), 404),
        ("/boards/not-a-track".to_owned(), 404),
        (format!("/drivers/{unknown}"), 404),
        (format!("/boards/{track}?car=Nobody%27s%20car"), 404),
        (format!("/boards/{track}?cursor=nonsense"), 400),
        ("/boards?q=a&q=b".to_owned(), 400),
    ] {
        let (got, _, html) = page(&app, &path).await;
        assert_eq!(got, status, "{path}: {html}");
        assert!(
            !html.contains("canonical") && !html.contains("og:url"),
            "{path}: {html}"
        );
        assert!(!html.contains("paddock.example"), "{path}: {html}");
    }
}

/// The histogram's bars of a page: (from ms, to ms, drivers, marked), read back from the SVG.
fn bars(html: &str) -> Vec<(i64, i64, u64, bool)> {
    html.split("<rect class=\"bar")
        .skip(1)
        .map(|rect| {
            let rect = rect.split('>').next().unwrap();
            let attr = |name: &str| -> i64 {
                let start = rect.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                rect[start..].split('"').next().unwrap().parse().unwrap()
            };
            (
                attr("data-from-ms"),
                attr("data-to-ms"),
                attr("data-drivers").unsigned_abs(),
                rect.starts_with(" marked\""),
            )
        })
        .collect()
}

async fn the_spread_is_the_boards_laps_counted(app: TestApp) {
    // A field by the second around 1:30, a better lap that moves a driver's count, and one
    // slow driver that widens the bars; two cars.
    let laps: Vec<(String, i64, &str)> = (0..24)
        .map(|i| {
            let ms = 88_000 + (i * 7_919) % 9_000;
            let car = if i % 3 == 0 {
                "Audi R8 LMS"
            } else {
                "BMW M4 GT3"
            };
            (format!("D{i:02}"), ms, car)
        })
        .chain([("Slow".to_owned(), 171_250, "BMW M4 GT3")])
        .collect();
    let written = join_all(laps.iter().map(|(name, ms, car)| {
        let app = &app;
        async move {
            let (token, user) = app.driver(name).await;
            let track = app.submitted_lap(&token, *ms + 2_000, car).await;
            app.submitted_lap(&token, *ms, car).await;
            (user, track)
        }
    }))
    .await;
    let track = written[0].1.clone();
    let marked_user = &written[5].0;
    let marked_ms = laps[5].1;
    for car in [None, Some("BMW M4 GT3")] {
        let field: Vec<i64> = laps
            .iter()
            .filter(|(_, _, c)| car.is_none_or(|car| car == *c))
            .map(|(_, ms, _)| *ms)
            .collect();
        let path = match car {
            Some(car) => format!(
                "/boards/{track}?car={}&driver={marked_user}",
                car.replace(' ', "+")
            ),
            None => format!("/boards/{track}?driver={marked_user}"),
        };
        let (status, _, html) = page(&app, &path).await;
        assert_eq!(status, 200, "{html}");
        let bars = bars(&html);
        assert!(!bars.is_empty() && bars.len() <= 40, "{bars:?}");
        let width = bars[0].1 - bars[0].0;
        for (from, to, drivers, marked) in &bars {
            assert_eq!(to - from, width, "bars of one width: {bars:?}");
            let counted = field
                .iter()
                .filter(|ms| *from <= **ms && **ms < *to)
                .count() as u64;
            assert_eq!(*drivers, counted, "{path}: bar {from}..{to}");
            let holds_marked = *from <= marked_ms && marked_ms < *to;
            let marks = holds_marked && (car.is_none() || laps[5].2 == car.unwrap());
            assert_eq!(*marked, marks, "{path}: bar {from}..{to} marked");
        }
        assert_eq!(
            bars.iter().map(|b| b.2).sum::<u64>(),
            field.len() as u64,
            "{path}: every driver in a bar"
        );
        let faster = field.iter().filter(|ms| **ms < marked_ms).count() + 1;
        if car.is_none() {
            assert!(
                html.contains(&format!("rank {faster} of {}", field.len())),
                "{html}"
            );
        }
        assert!(html.contains("Drivers by lap time"), "a text equivalent");
        assert!(
            !html.contains("<figure class=\"track-map\">"),
            "no map without track points"
        );
    }
}

async fn the_board_shows_the_tracks_map_once_built(app: TestApp) {
    let (token, _) = app.driver("Mapper").await;
    let body = session_body(
        "mapped",
        "2026-11-01T10:00:00Z",
        &[(95_000, true, 0.95)],
        500,
    );
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    assert_eq!(status, 201, "{res}");
    let track = res["data"]["trackId"].as_str().unwrap().to_owned();
    let submit =
        json!({"sessionId": res["data"]["sessionId"], "lapTimeMs": 95_000, "qualityScore": 0.95});
    let (status, res) = envelope(
        app.post_json_auth("/v1/leaderboards/submit", &submit, &token)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{res}");
    app.wait_for_map(&token, &track, 1).await;
    let api_svg = app
        .get_auth(&format!("/v1/tracks/{track}/map?format=svg"), &token)
        .await
        .text()
        .await
        .unwrap();
    let path = api_svg
        .split("<path d=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let (status, _, html) = page(&app, &format!("/boards/{track}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("<figure class=\"track-map\">"), "{html}");
    assert!(
        html.contains(&format!("<path d=\"{path}\"")),
        "the API's line"
    );
    assert!(
        html.contains("role=\"img\" aria-label=\"Map of Spa-Francorchamps"),
        "{html}"
    );
}

/// The path of the page's `og:image` (named under the tests' public URL).
fn og_image(html: &str) -> String {
    html.split("<meta property=\"og:image\" content=\"https://paddock.example")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("an og:image: {html}"))
        .to_owned()
}

/// Fetches the link preview at `path`, checks it is a bounded 1200×630 PNG cached like the
/// pages (and answered 304 to its `ETag`), keeps it as `name`; answers its size.
async fn fetched_preview(app: &TestApp, path: &str, name: &str) -> usize {
    let res = app.get(path).await;
    assert_eq!(res.status(), 200, "{path}");
    let headers = res.headers().clone();
    assert_eq!(header(&headers, "content-type"), "image/png");
    assert!(header(&headers, "cache-control").starts_with("public, max-age="));
    let etag = header(&headers, "etag").to_owned();
    let png = res.bytes().await.unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(&png[16..24], &[0, 0, 4, 176, 0, 0, 2, 118], "1200 x 630");
    assert!(png.len() < 256 * 1024, "{} bytes", png.len());
    keep(name, &png);
    assert_eq!(page_if_none_match(app, path, &etag).await, 304);
    png.len()
}

/// Keeps `bytes` as a test artefact (`target/tmp/board_pages/<name>`).
fn keep(name: &str, bytes: &[u8]) {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("board_pages");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

async fn a_shared_board_link_previews_a_small_picture(backend: Backend) {
    let (app, _) = paddock_tests::spawn_configured(backend, |s| {
        s.auth.public_url = Some("https://paddock.example".to_owned());
    })
    .await;
    let mut track = String::new();
    for (i, name) in ["Ana", "Ben", "Eve", "Fay"].iter().enumerate() {
        track = app
            .driver_with_lap(name, 90_000 + 731 * i as i64, "BMW M4 GT3")
            .await
            .1;
    }
    for query in ["", "?car=BMW+M4+GT3"] {
        let (status, _, html) = page(&app, &format!("/boards/{track}{query}")).await;
        assert_eq!(status, 200, "{html}");
        let image = og_image(&html).replace("&amp;", "&");
        assert!(html.contains("summary_large_image"), "{html}");
        let bytes = fetched_preview(&app, &image, "board-preview.png").await;
        println!("{backend:?}: og:image of {image}: {bytes} bytes");
    }
    let (status, _, _) = page(
        &app,
        &format!("/boards/{}/preview.png", uuid::Uuid::new_v4()),
    )
    .await;
    assert_eq!(status, 404);
}

/// Uploads a session driven at `at` with a lap of `ms` in `car`, and submits that lap unless
/// `submit` is false: the track id.
async fn session_at(app: &TestApp, token: &str, at: &str, ms: i64, submit: bool) -> String {
    let mut body = session_body(&paddock_tests::unique("s"), at, &[(ms, true, 0.95)], 0);
    body["VehicleName"] = json!("BMW M4 GT3");
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert_eq!(status, 201, "{res}");
    let session = res["data"]["sessionId"].as_str().unwrap().to_owned();
    if submit {
        let submit = json!({"sessionId": session, "lapTimeMs": ms, "qualityScore": 0.95});
        // Sent twice, as a client whose answer was lost would: one point all the same.
        for _ in 0..2 {
            let (status, res) = envelope(
                app.post_json_auth("/v1/leaderboards/submit", &submit, token)
                    .await,
            )
            .await;
            assert_eq!(status, 200, "{res}");
        }
    }
    res["data"]["trackId"].as_str().unwrap().to_owned()
}

/// The progress chart's dots: (session time, lap ms, set a new best).
fn progress_dots(html: &str) -> Vec<(String, i64, bool)> {
    html.split("<circle class=\"lap")
        .skip(1)
        .map(|dot| {
            let attr = |name: &str| {
                dot.split(&format!("{name}=\""))
                    .nth(1)
                    .and_then(|v| v.split('"').next())
                    .unwrap_or_else(|| panic!("{name} in {dot}"))
                    .to_owned()
            };
            let new_best = dot.starts_with(" new-best\"");
            (
                attr("data-at"),
                attr("data-lap-ms").parse().unwrap(),
                new_best,
            )
        })
        .collect()
}

async fn a_driver_page_draws_progress_from_submitted_laps_only(backend: Backend) {
    let (app, _) = paddock_tests::spawn_configured(backend, |s| {
        s.auth.public_url = Some("https://paddock.example".to_owned());
    })
    .await;
    let (token, user) = app.driver("Progress").await;
    // Sent out of order: the chart goes by when each session was driven. The private session
    // (not submitted) is faster than all and must show nowhere.
    let track = session_at(&app, &token, "2026-10-03T18:00:00Z", 91_200, true).await;
    session_at(&app, &token, "2026-10-01T18:00:00Z", 92_000, true).await;
    session_at(&app, &token, "2026-10-02T18:00:00+02:00", 90_900, true).await;
    session_at(&app, &token, "2026-10-04T18:00:00Z", 85_000, false).await;
    session_at(&app, &token, "2026-10-05T18:00:00Z", 90_400, true).await;
    // Another driver's laps on the same track are theirs alone.
    let (other, other_user) = app.driver("Other").await;
    session_at(&app, &other, "2026-10-02T12:00:00Z", 89_000, true).await;

    let (status, _, html) = page(&app, &format!("/drivers/{user}")).await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(
        progress_dots(&html),
        [
            ("2026-10-01T18:00:00Z".to_owned(), 92_000, true),
            ("2026-10-02T16:00:00Z".to_owned(), 90_900, true),
            ("2026-10-03T18:00:00Z".to_owned(), 91_200, false),
            ("2026-10-05T18:00:00Z".to_owned(), 90_400, true),
        ],
        "{html}"
    );
    assert!(
        !html.contains("1:25.000"),
        "a session not submitted stays private"
    );
    assert!(!html.contains("1:29.000"), "another driver's lap");
    assert!(
        html.contains("4 sessions from 2026-10-01 to 2026-10-05; the best went from 1:32.000 to 1:30.400, 1.600 s faster."),
        "a text equivalent: {html}"
    );
    assert!(
        html.contains("<tr><td>2026-10-03</td><td>1:31.200</td><td>1:30.900</td></tr>"),
        "the hidden table: {html}"
    );
    assert!(html.contains(&format!("/boards/{track}")));

    // The link preview.
    let image = og_image(&html);
    assert_eq!(image, format!("/drivers/{user}/preview.png"));
    let bytes = fetched_preview(&app, &image, "driver-preview.png").await;
    println!("{backend:?}: og:image of a driver page: {bytes} bytes");
    for path in [
        format!("/drivers/{}/preview.png", uuid::Uuid::new_v4()),
        "/drivers/not-an-id/preview.png".to_owned(),
    ] {
        assert_eq!(page(&app, &path).await.0, 404, "{path}");
    }
    // A driver with one session has no chart: one point is no progress.
    let (status, _, html) = page(&app, &format!("/drivers/{other_user}")).await;
    assert_eq!(status, 200);
    assert!(progress_dots(&html).is_empty(), "{html}");
}

paddock_tests::on_both_backends!(
    plain: [
        the_board_shows_the_tracks_map_once_built,
        a_board_page_shows_the_board,
        the_spread_is_the_boards_laps_counted,
        boards_page_by_cursor,
        bad_addresses_get_pages_that_say_why,
        a_car_without_laps_has_no_page_and_is_not_echoed,
        a_deleted_driver_is_gone,
    ],
    ports: [
        pages_name_and_load_only_what_they_should,
        a_shared_board_link_previews_a_small_picture,
        a_driver_page_draws_progress_from_submitted_laps_only
    ]
);
