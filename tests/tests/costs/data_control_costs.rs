//! What the export and the deletion of a driver with a long history cost: a driver with
//! `PADDOCK_COST_SESSIONS` sessions (default 100; 300 for the figures in `docs/perf.md`) of 30
//! laps, plus a feed post each. The
//! export is written into a sink (time, bytes and the process's peak resident memory above
//! its size before); the deletion job's time, and on DynamoDB Local its write units against
//! the items it removed. Printed (`RUST_TEST_NOCAPTURE=1 ./tests/run.sh --test
//! costs data_control_costs::`), not asserted: these machines are noisy. What is asserted: the export
//! is whole and the deletion leaves nothing.

use paddock_core::driver_data::deletion::{self, JobOutcome};
use paddock_core::driver_data::{Driver, export};
use paddock_core::identity::users;
use paddock_core::ids::UserId;
use paddock_core::ports::Clock;
use paddock_tests::{Backend, TestPorts, every_item, ports, session_body};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::AsyncWriteExt;

fn sessions() -> usize {
    std::env::var("PADDOCK_COST_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

/// Resident memory of this process, from `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
fn status_bytes(field: &str) -> u64 {
    paddock_tests::process_memory::status_bytes(field).unwrap_or(0)
}

/// Counts what is written, keeping nothing.
struct CountingSink(u64);

impl tokio::io::AsyncWrite for CountingSink {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.0 += buf.len() as u64;
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

async fn seed(t: &TestPorts, user: &UserId, count: usize) {
    let profile = users::User {
        id: user.clone(),
        ..users::User::new(
            Some("costs@example.com".into()),
            "Costs".into(),
            None,
            t.clock.now(),
        )
    };
    t.ports
        .items
        .transact(vec![profile.create_op()])
        .await
        .unwrap();
    let laps: Vec<(i64, bool, f64)> = (0..30).map(|i| (92_000 + i * 37, true, 0.9)).collect();
    let uploads = futures::stream::iter(0..count).map(|i| {
        let body = session_body(&format!("c-{i}"), "2026-11-01T10:00:00Z", &laps, 0);
        let upload = paddock_tests::checked_upload(&body, t.clock.now());
        let (ports, user) = (t.ports.clone(), user.clone());
        async move {
            paddock_core::sessions::create(&ports, &user, upload)
                .await
                .unwrap();
            let post =
                paddock_core::activity::feed::FeedPost::parse(Some(format!("post {i}")), None)
                    .unwrap();
            paddock_core::activity::feed::post(&ports, &user, post, None)
                .await
                .unwrap();
        }
    });
    use futures::StreamExt;
    uploads.buffer_unordered(8).collect::<Vec<_>>().await;
}

async fn export_and_delete(backend: Backend) {
    let mut t = ports(backend).await;
    let store = match backend {
        Backend::Aws => {
            let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
            let store = Arc::new(paddock_aws::DynamoItemStore::new(
                client,
                t.settings.table_prefix.clone(),
                t.clock.clone(),
            ));
            t.ports.items = store.clone();
            Some(store)
        }
        Backend::Embedded => None,
    };
    let user = UserId::new();
    let count = sessions();
    let seeding = Instant::now();
    seed(&t, &user, count).await;
    let seeded = seeding.elapsed();

    let profile = users::get_stored(&t.ports, &user).await.unwrap().unwrap();
    let driver = Driver::of(&profile.user);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let before = status_bytes("VmRSS:");
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let started = Instant::now();
    let mut sink = CountingSink(0);
    let counts = export::write(&t.ports, &driver, &profile, &mut sink)
        .await
        .unwrap();
    sink.flush().await.unwrap();
    let exported = started.elapsed();
    let peak = if reset { status_bytes("VmHWM:") } else { 0 };
    let of = |name: &str| {
        counts
            .iter()
            .find(|(k, _)| *k == name)
            .map_or(0, |(_, n)| *n)
    };
    assert_eq!(of("sessions"), count as u64);
    assert_eq!(of("feed"), count as u64);

    let units_before = store.as_ref().map_or(0.0, |s| s.consumed().write_units);
    deletion::start(&t.ports, &user).await.unwrap();
    let started = Instant::now();
    let outcome = deletion::run(&t.ports, &user, None).await.unwrap();
    let deleting = started.elapsed();
    let JobOutcome::Finished(items) = outcome else {
        panic!("{outcome:?}")
    };
    // The uploads' and the deletion's events leave the outbox when relayed.
    paddock_core::outbox::relay_pending(&t.ports).await.unwrap();
    // Sessions, their idempotency records, posts, the profile.
    assert_eq!(items, 3 * count as u64 + 1);
    let left = every_item(&t.settings)
        .await
        .into_iter()
        .filter(|(_, i)| {
            serde_json::Value::Object(i.clone())
                .to_string()
                .contains(user.as_str())
        })
        .count();
    assert_eq!(left, 0);
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "{backend:?}: seeded {count} sessions of 30 laps and {count} posts in {:.1} s; \
         export {:.1} MB in {:.2} s ({:.1} MB/s), peak resident {:.1} MB, {:.1} MB above the {:.1} MB before{}",
        seeded.as_secs_f64(),
        mb(sink.0),
        exported.as_secs_f64(),
        mb(sink.0) / exported.as_secs_f64(),
        mb(peak),
        mb(peak.saturating_sub(before)),
        mb(before),
        if reset {
            ""
        } else {
            " (peak not measurable here)"
        },
    );
    match &store {
        Some(store) => {
            let units = store.consumed().write_units - units_before;
            println!(
                "{backend:?}: deletion of {items} items in {:.2} s: {units} write units on DynamoDB Local, {:.2} per item",
                deleting.as_secs_f64(),
                units / items as f64
            );
        }
        None => println!(
            "{backend:?}: deletion of {items} items in {:.2} s",
            deleting.as_secs_f64()
        ),
    }
}

mod embedded {
    #[tokio::test(flavor = "multi_thread")]
    async fn export_and_delete_a_long_history() {
        // The export's peak memory is this process's: no other test may run beside it.
        if paddock_tests::own_process::alone(
            "data_control_costs::embedded::export_and_delete_a_long_history",
        ) {
            super::export_and_delete(super::Backend::Embedded).await;
        }
    }
}

mod dynamodb_local {
    #[tokio::test(flavor = "multi_thread")]
    async fn export_and_delete_a_long_history() {
        // The export's peak memory is this process's: no other test may run beside it.
        if paddock_tests::own_process::alone(
            "data_control_costs::dynamodb_local::export_and_delete_a_long_history",
        ) {
            super::export_and_delete(super::Backend::Aws).await;
        }
    }
}
