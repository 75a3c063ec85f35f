//! At most [`PER_HOST`] deliveries in flight to one receiver host from this process, so the
//! subscriptions of a batch that share a host (one driver's ten, or many drivers' on a
//! popular service) take turns there, and a host that stops answering holds two of them,
//! not all: the ones waiting find its back-off recorded and leave the batch
//! ([`super::host_backoff`]).
//!
//! A limiter of work in flight, not state: Lambda runs one batch per instance at a time, and
//! locally one consumer task runs them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Deliveries in flight to one host at once.
pub const PER_HOST: usize = 2;

/// The hosts with deliveries in flight or waiting, each with its slots.
#[derive(Debug, Default)]
pub struct HostSlots {
    hosts: Mutex<HashMap<String, Weak<Semaphore>>>,
}

impl HostSlots {
    /// A slot for one delivery to `host`, once one is free.
    pub async fn take(&self, host: &str) -> OwnedSemaphorePermit {
        let slots = {
            let mut hosts = self.hosts.lock().expect("host slots lock");
            // A host nobody waits on any more holds no slots: its entry goes.
            hosts.retain(|_, slots| slots.strong_count() > 0);
            if let Some(slots) = hosts.get(host).and_then(Weak::upgrade) {
                slots
            } else {
                let slots = Arc::new(Semaphore::new(PER_HOST));
                hosts.insert(host.to_owned(), Arc::downgrade(&slots));
                slots
            }
        };
        slots
            .acquire_owned()
            .await
            .expect("the semaphore of a host is never closed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_host_takes_turns_and_others_do_not_wait() {
        let slots = HostSlots::default();
        let a1 = slots.take("a:443").await;
        let _a2 = slots.take("a:443").await;
        let third = tokio::time::timeout(std::time::Duration::from_millis(50), slots.take("a:443"));
        assert!(third.await.is_err(), "a third slot of one host");
        let _b = tokio::time::timeout(std::time::Duration::from_millis(50), slots.take("b:443"))
            .await
            .expect("another host's slot");
        drop(a1);
        let _a3 = slots.take("a:443").await;
    }
}
