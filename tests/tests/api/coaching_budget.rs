//! The coach's daily token counters on a real store: holds and settlements sent twice (an
//! answer lost and the call sent again) count once, and a refusal of the service-wide counter
//! gives the driver's hold back.

use std::sync::Arc;

use paddock_core::coaching::budget::{BudgetError, Counter, SERVICE, reserve};
use paddock_core::config::Settings;
use paddock_core::ids::UserId;
use paddock_core::ports::{ManualClock, Ports};

/// Embedded ports in `dir`, on a manual clock.
fn ports(dir: &tempfile::TempDir) -> Ports {
    let settings = Settings::embedded(dir.path(), ([127, 0, 0, 1], 0).into());
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    paddock_runtime::wiring::embedded_ports(&settings, clock).unwrap()
}

async fn counted(ports: &Ports, counter: &Counter) -> u64 {
    counter.counted(ports).await.unwrap()
}

#[tokio::test]
async fn holds_and_settlements_sent_twice_count_once() {
    let dir = tempfile::tempdir().unwrap();
    let ports = ports(&dir);
    let counter = Counter::today(&ports, "u1", 1_000);
    assert!(counter.hold(&ports, "held_a", 600).await.unwrap());
    // The same hold again, as when its answer was lost and the call sent again.
    assert!(counter.hold(&ports, "held_a", 600).await.unwrap());
    assert_eq!(counted(&ports, &counter).await, 600);
    // Another call's 600 do not fit beside it; its 400 do.
    assert!(!counter.hold(&ports, "held_b", 600).await.unwrap());
    assert!(counter.hold(&ports, "held_b", 400).await.unwrap());
    assert!(!counter.hold(&ports, "held_c", 1).await.unwrap());
    assert_eq!(counted(&ports, &counter).await, 1_000);
    // Settled at 250, twice: the unused 350 are given back once.
    counter.settle(&ports, "held_a", 600, 250).await.unwrap();
    counter.settle(&ports, "held_a", 600, 250).await.unwrap();
    assert_eq!(counted(&ports, &counter).await, 650);
    // A call whose most alone is past the cap is refused without a write.
    let small = Counter::today(&ports, "u2", 100);
    assert!(!small.hold(&ports, "held_d", 101).await.unwrap());
    assert!(!small.is_stored(&ports).await.unwrap());
}

#[tokio::test]
async fn a_refusal_of_the_service_gives_the_drivers_hold_back() {
    let dir = tempfile::tempdir().unwrap();
    let ports = ports(&dir);
    let mut ai = Settings::embedded(dir.path(), ([127, 0, 0, 1], 0).into()).ai;
    ai.tokens_per_day = 1_000;
    ai.service_tokens_per_day = 1_500;
    let (one, two) = (UserId::new(), UserId::new());
    let first = reserve(&ports, &one, &ai, 900).await.unwrap();
    let refused = reserve(&ports, &two, &ai, 900).await.unwrap_err();
    assert!(matches!(refused, BudgetError::Service(_)), "{refused:?}");
    let driver = Counter::today(&ports, two.as_str(), 1_000);
    let service = Counter::today(&ports, SERVICE, 1_500);
    assert_eq!(counted(&ports, &driver).await, 0, "given back");
    assert_eq!(counted(&ports, &service).await, 900);
    first.settle(&ports, 300).await.unwrap();
    assert_eq!(counted(&ports, &service).await, 300);
    let refused = reserve(&ports, &one, &ai, 800).await.unwrap_err();
    assert!(matches!(refused, BudgetError::Driver(_)), "{refused:?}");
    assert_eq!(counted(&ports, &service).await, 300, "never touched");
}
