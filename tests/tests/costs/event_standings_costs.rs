//! What an event's standings cost as its field grows: the items read, store calls and steps
//! of `GET /v1/events/{id}/standings` (the first page, `around=me` in the middle of the field,
//! and the page after it) with 100 and 10,000 entrants, through the service's routes over a
//! counted store (both backends), with the p50 of each (21 reads). The figures are printed
//! (`RUST_TEST_NOCAPTURE=1 ./tests/run.sh --test costs event_standings_costs::`); asserted is
//! that the items read and the store calls do not grow with the field: exact ranks at the
//! cost of a page, as the boards have. (Steps are printed only: the embedded store runs its
//! calls one at a time, so its steps follow the timing of the moment.)

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use http::Request;
use http_body_util::BodyExt;
use paddock_core::ids::{EventId, SessionId, TrackId, UserId};
use paddock_core::leaderboards::board::BoardId;
use paddock_core::leaderboards::bulk::{BulkBoard, BulkEntry};
use paddock_tests::counted_routes::{self, CountedRoutes};
use paddock_tests::counting_items::Counted;
use paddock_tests::{Backend, envelope, session_body};
use reqwest::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;
use time::format_description::well_known::Rfc3339;
use tower::ServiceExt;

/// Reads of each request measured.
const READS: usize = 21;

/// A signed-in GET of `path` through the counted routes: its data, what it read, how long.
async fn read(c: &CountedRoutes, token: &str, path: &str) -> (Value, Counted, Duration) {
    let mut request = Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 7], 50_000))));
    let began = Instant::now();
    let (response, counted) = c.counting.cost_of(c.router.clone().oneshot(request)).await;
    let took = began.elapsed();
    let response = response.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    (body["data"].clone(), counted, took)
}

/// What one request costs: the counts of its last read and the p50 of [`READS`].
async fn measured(c: &CountedRoutes, token: &str, path: &str) -> (Value, Counted, Duration) {
    let mut took = Vec::new();
    let mut last = None;
    for _ in 0..READS {
        let (data, counted, t) = read(c, token, path).await;
        took.push(t);
        last = Some((data, counted));
    }
    took.sort();
    let (data, counted) = last.unwrap();
    (data, counted, took[READS / 2])
}

/// A league event of `owner` on a new track of `n` entrants, written in bulk, the owner among
/// them in the middle; answers the event's id.
async fn field_of(c: &CountedRoutes, token: &str, owner: &str, league: &str, n: usize) -> EventId {
    let app = &c.app;
    let mut body = session_body(
        &paddock_tests::unique("s"),
        "2026-11-01T10:00:00Z",
        &[(95_000, true, 0.95)],
        0,
    );
    body["TrackName"] = json!(format!("Field of {n}"));
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, token).await).await;
    assert_eq!(status, 201, "{res}");
    let track: TrackId = res["data"]["trackId"].as_str().unwrap().parse().unwrap();
    let now = app.ports.clock.now();
    let text = |t: time::OffsetDateTime| t.replace_nanosecond(0).unwrap().format(&Rfc3339).unwrap();
    let plan = json!({
        "name": format!("Field of {n}"), "trackId": track,
        "opensAt": text(now), "closesAt": text(now + time::Duration::days(1)),
    });
    let path = format!("/v1/leagues/{league}/events");
    let (status, made) = app.call(Method::POST, &path, token, Some(plan)).await;
    assert_eq!(status, 201, "{made}");
    let event: EventId = made["data"]["id"].as_str().unwrap().parse().unwrap();
    let owner: UserId = owner.parse().unwrap();
    let entries: Vec<BulkEntry> = (0..n)
        .map(|i| BulkEntry {
            user_id: if i == n / 2 {
                owner.clone()
            } else {
                UserId::new()
            },
            display_name: format!("Entrant {i}"),
            lap_time_ms: 120_000 + 7 * i as i64,
            vehicle_name: "BMW M4 GT3".to_owned(),
            session_id: SessionId::recorded_at(1_790_000_000, 0),
            submitted_at: now,
        })
        .collect();
    let mut bulk = BulkBoard::only(&track, vec![BoardId::event(&track, &event)]);
    for chunk in entries.chunks(5_000) {
        bulk.add(&app.ports, chunk).await.unwrap();
    }
    bulk.finish(&app.ports).await.unwrap();
    event
}

async fn standings_cost_a_page_at_any_size(backend: Backend) {
    let c = counted_routes::spawn(backend, |_| {}).await;
    let (token, owner) = c.app.driver("Owner").await;
    let (status, league) = c
        .app
        .call(
            Method::POST,
            "/v1/leagues",
            &token,
            Some(json!({"name": "Fields"})),
        )
        .await;
    assert_eq!(status, 201, "{league}");
    let league = league["data"]["id"].as_str().unwrap().to_owned();
    let mut rows = Vec::new();
    for n in [100, 10_000] {
        let written = Instant::now();
        let event = field_of(&c, &token, &owner, &league, n).await;
        println!(
            "{backend:?}: {n} entrants written in {:?}",
            written.elapsed()
        );
        let base = format!("/v1/events/{event}/standings?limit=25");
        let (first, first_cost, first_p50) = measured(&c, &token, &base).await;
        assert_eq!(first["totalEntries"], n, "{first}");
        let (around, around_cost, around_p50) =
            measured(&c, &token, &format!("{base}&around=me")).await;
        let mine = &around["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["userId"] == owner.as_str())
            .expect("the owner's row")["rank"];
        assert_eq!(mine, &json!(n / 2 + 1), "{around}");
        let cursor = around["nextCursor"]
            .as_str()
            .expect("a page after")
            .to_owned();
        let (next, next_cost, next_p50) =
            measured(&c, &token, &format!("{base}&cursor={cursor}")).await;
        let first_rank = next["entries"][0]["rank"].as_u64().unwrap();
        assert!(first_rank > (n / 2) as u64, "{next}");
        rows.push((
            n,
            [
                (first_cost, first_p50),
                (around_cost, around_p50),
                (next_cost, next_p50),
            ],
        ));
    }
    let names = ["first page", "around=me", "the page after"];
    for (n, costs) in &rows {
        for (name, (cost, p50)) in names.iter().zip(costs) {
            println!(
                "{backend:?}: standings of {n} entrants, {name}: {} items read in {} calls, {} steps, p50 {p50:?}",
                cost.items_read, cost.calls, cost.steps
            );
        }
    }
    let (small, large) = (&rows[0].1, &rows[1].1);
    for ((name, (a, _)), (b, _)) in names.iter().zip(small).zip(large) {
        assert!(
            b.items_read <= a.items_read + 2 && b.calls <= a.calls,
            "{name} grew with the field: {a:?} at 100, {b:?} at 10,000"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn standings_cost_a_page_at_any_size_embedded() {
    standings_cost_a_page_at_any_size(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn standings_cost_a_page_at_any_size_on_dynamodb_local() {
    standings_cost_a_page_at_any_size(Backend::Aws).await;
}
