//! Retrying a conditional write that lost to a concurrent one: each attempt reads what it
//! needs afresh and writes under a condition on what it read; when another writer got there
//! first, the attempt is made again after a short, growing, randomised wait.

use std::future::Future;
use std::time::Duration;

use crate::ports::items::StoreError;

/// The first wait's upper bound; each later one doubles, up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(2);
/// The longest wait between two attempts.
// A store round trip is a few ms: waits from 2 ms doubling to 40 ms, each a random fraction
// of its bound, part contenders within a few rounds and keep 20 attempts under a second.
const MAX_WAIT: Duration = Duration::from_millis(40);

/// Whether `e` says a concurrent write got there first: a condition on what was read no
/// longer held, or the transaction collided with another.
pub fn is_conflict(e: &StoreError) -> bool {
    matches!(e, StoreError::ConditionFailed { .. } | StoreError::Conflict)
}

/// Runs `attempt` until it succeeds, fails with an error `conflict` does not accept, or has
/// been made `attempts` times (at least once); answers the last outcome, so a write that kept
/// losing answers its last conflict. Between two attempts it waits a random time up to a
/// bound that starts at 2 ms and doubles up to 40 ms.
pub async fn retry_on_conflict<T, E, F, Fut>(
    attempts: u32,
    conflict: impl Fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut made = 0;
    loop {
        made += 1;
        match attempt().await {
            Err(e) if conflict(&e) && made < attempts => {
                tokio::time::sleep(wait_before(made)).await;
            }
            outcome => return outcome,
        }
    }
}

/// The wait after `made` attempts lost: uniform up to the bound for that round.
fn wait_before(made: u32) -> Duration {
    let bound = wait_bound(made);
    let micros = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
    Duration::from_micros(rand::random_range(0..=micros))
}

/// The upper bound of the wait after `made` (at least 1) lost attempts.
fn wait_bound(made: u32) -> Duration {
    let doublings = made.saturating_sub(1).min(16);
    FIRST_WAIT.saturating_mul(1 << doublings).min(MAX_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Counts the attempts and answers `outcomes` in turn (the last one from then on).
    async fn run(
        attempts: u32,
        outcomes: &[Result<u32, StoreError>],
    ) -> (Result<u32, StoreError>, u32) {
        let made = AtomicU32::new(0);
        let result = retry_on_conflict(attempts, is_conflict, || {
            let n = made.fetch_add(1, Ordering::SeqCst) as usize;
            let outcome = outcomes[n.min(outcomes.len() - 1)].clone();
            async move { outcome }
        })
        .await;
        (result, made.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_conflict_is_tried_again_until_an_attempt_succeeds() {
        let outcomes = [
            Err(StoreError::Conflict),
            Err(StoreError::ConditionFailed { index: 1 }),
            Ok(7),
        ];
        let (result, made) = run(5, &outcomes).await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(made, 3);
    }

    #[tokio::test]
    async fn another_error_ends_it_at_once() {
        let outcomes = [
            Err(StoreError::Conflict),
            Err(StoreError::Invalid("bad key".into())),
            Ok(7),
        ];
        let (result, made) = run(5, &outcomes).await;
        assert!(matches!(result, Err(StoreError::Invalid(m)) if m == "bad key"));
        assert_eq!(made, 2);
    }

    #[tokio::test]
    async fn it_stops_at_the_bound_with_the_last_conflict() {
        let outcomes = [
            Err(StoreError::Conflict),
            Err(StoreError::Conflict),
            Err(StoreError::ConditionFailed { index: 2 }),
        ];
        let (result, made) = run(3, &outcomes).await;
        assert!(matches!(
            result,
            Err(StoreError::ConditionFailed { index: 2 })
        ));
        assert_eq!(made, 3);
    }

    #[tokio::test]
    async fn a_success_at_first_makes_one_attempt() {
        let (result, made) = run(5, &[Ok(1)]).await;
        assert_eq!(result.unwrap(), 1);
        assert_eq!(made, 1);
    }

    #[tokio::test]
    async fn the_caller_says_what_counts_as_a_conflict() {
        let made = AtomicU32::new(0);
        let result: Result<(), StoreError> = retry_on_conflict(
            4,
            |e| matches!(e, StoreError::Conflict),
            || {
                made.fetch_add(1, Ordering::SeqCst);
                async { Err(StoreError::ConditionFailed { index: 0 }) }
            },
        )
        .await;
        assert!(matches!(
            result,
            Err(StoreError::ConditionFailed { index: 0 })
        ));
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_wait_grows_from_2_ms_and_stops_at_40() {
        let bounds: Vec<u64> = (1..=8).map(|n| wait_bound(n).as_millis() as u64).collect();
        assert_eq!(bounds, [2, 4, 8, 16, 32, 40, 40, 40]);
        assert_eq!(wait_bound(u32::MAX), MAX_WAIT);
        for made in 1..=8 {
            assert!(wait_before(made) <= wait_bound(made));
        }
    }

    #[tokio::test]
    async fn zero_attempts_still_makes_one() {
        let (result, made) = run(0, &[Err(StoreError::Conflict)]).await;
        assert!(matches!(result, Err(StoreError::Conflict)));
        assert_eq!(made, 1);
    }
}
