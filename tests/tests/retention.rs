//! The retention sweep on both adapter sets: it removes each kind of expired item, leaves
//! live ones, counts each removal once when two sweeps run at once; and the local server runs
//! it on its timer.

use paddock::ports::Clock;
use paddock::ports::items::{Key, TTL, item};
use paddock::retention::{self, SweepReport};
use paddock::tables::Table;
use paddock_tests::{Backend, ports, spawn_configured};
use serde_json::json;
use std::time::Duration;

/// One expired and one live item of each kind: (table, partition key, sort key, kind).
const KINDS: [(Table, &str, &str, &str); 9] = [
    (
        Table::Activity,
        "FEED#u1",
        "2026-01-01T00:00:00.000Z#e",
        "feed_entries",
    ),
    (
        Table::Activity,
        "PROCESSED#feed#e",
        "MARKER",
        "processed_markers",
    ),
    (Table::Tokens, "CODE#c", "CODE", "exchange_codes"),
    (Table::Tokens, "FLOW#f", "FLOW", "sign_in_flows"),
    (Table::Tokens, "FAMILY#f", "STATE", "refresh_tokens"),
    (Table::Limits, "RL#login#a", "1", "rate_limits"),
    (Table::Tracks, "JOBS", "j", "track_jobs"),
    (Table::Outbox, "OUTBOX#03", "e", "outbox_events"),
    (Table::Users, "USER#u1", "PROFILE", "users_other"),
];

async fn the_sweep_removes_each_expired_kind_once(backend: Backend) {
    let t = ports(backend).await;
    let now = t.clock.unix();
    for (i, (table, pk, sk, _)) in KINDS.iter().enumerate() {
        let expired = item(
            &Key::new(*pk, format!("{sk}-old")),
            json!({TTL: now - 1 - i as i64}),
        );
        t.ports.items.put(*table, expired, None).await.unwrap();
        let live = item(
            &Key::new(*pk, format!("{sk}-live")),
            json!({TTL: now + 3600}),
        );
        t.ports.items.put(*table, live, None).await.unwrap();
    }
    // An item without an expiry is never touched (the user's profile, here).
    let profile = item(
        &Key::new("USER#u1", "PROFILE"),
        json!({"displayName": "Kept"}),
    );
    t.ports
        .items
        .put(Table::Users, profile, None)
        .await
        .unwrap();

    // Two sweeps at once remove each item once between them.
    let (a, b) = tokio::join!(retention::sweep(&t.ports), retention::sweep(&t.ports));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut both = SweepReport::default();
    for report in [&a, &b] {
        for (kind, n) in &report.removed {
            *both.removed.entry(kind).or_default() += n;
        }
    }
    for (table, pk, sk, kind) in KINDS {
        assert_eq!(both.of(kind), 1, "{kind}: {both:?}");
        let old = Key::new(pk, format!("{sk}-old"));
        let live = Key::new(pk, format!("{sk}-live"));
        assert!(t.ports.items.get(table, &old).await.unwrap().is_none());
        assert!(
            t.ports.items.get(table, &live).await.unwrap().is_some(),
            "{kind} live item kept"
        );
    }
    assert_eq!(both.total(), KINDS.len() as u64);
    let kept = t
        .ports
        .items
        .get(Table::Users, &Key::new("USER#u1", "PROFILE"))
        .await
        .unwrap();
    assert!(kept.is_some());

    // Idempotent: a sweep with nothing expired removes nothing.
    assert_eq!(retention::sweep(&t.ports).await.unwrap().total(), 0);
    // Once the live items expire, they go too.
    t.clock.advance(time::Duration::hours(2));
    assert_eq!(
        retention::sweep(&t.ports).await.unwrap().total(),
        KINDS.len() as u64
    );
}

async fn the_local_server_sweeps_on_its_timer(backend: Backend) {
    let (app, clock) = spawn_configured(backend, |s| {
        s.retention_first_run = Duration::from_millis(300);
        s.retention_interval = Duration::from_secs(60);
    })
    .await;
    let key = Key::new("CODE#timer", "CODE");
    let code = item(&key, json!({TTL: clock.unix() - 10}));
    app.ports
        .items
        .put(Table::Tokens, code, None)
        .await
        .unwrap();
    let mut swept = false;
    for _ in 0..100 {
        if app
            .ports
            .items
            .scan_expired(Table::Tokens, None, 10)
            .await
            .unwrap()
            .keys
            .is_empty()
        {
            swept = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(swept, "the first sweep ran");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("paddock_retention_deleted_total{kind=\"exchange_codes\"}"),
        "{metrics}"
    );
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [the_sweep_removes_each_expired_kind_once, the_local_server_sweeps_on_its_timer],
);

#[tokio::test]
async fn the_retention_lambda_answers_its_counts() {
    let t = ports(Backend::Embedded).await;
    let code = item(
        &Key::new("CODE#l", "CODE"),
        json!({TTL: t.clock.unix() - 1}),
    );
    t.ports.items.put(Table::Tokens, code, None).await.unwrap();
    let removed = paddock::lambda::handle_retention(&t.ports).await.unwrap();
    assert_eq!(removed.get("exchange_codes"), Some(&1));
}
