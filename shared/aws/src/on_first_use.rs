//! An SDK client built when an invocation first needs it, not during a function's init.
//!
//! Kept because building a client parses its service's endpoint rules, a cost every cold start
//! paid for each service it might use (docs/perf.md). Most invocations of a function touch
//! fewer services than it is wired with (the activity function reads a track map from S3 only
//! for one endpoint), so a client is built at its first call; the DynamoDB client, which every
//! function uses at once, is still built at init.

use std::sync::LazyLock;

/// A client of type `C`, built by a function at the first [`OnFirstUse::get`] (std's
/// `LazyLock` around a boxed builder, so that the wrapped type does not name the closure).
pub struct OnFirstUse<C>(LazyLock<C, Box<dyn FnOnce() -> C + Send>>);

impl<C> OnFirstUse<C> {
    /// A client `build` makes when it is first asked for.
    pub fn new(build: impl FnOnce() -> C + Send + 'static) -> Self {
        Self(LazyLock::new(Box::new(build)))
    }

    /// A client that is built already.
    pub fn built(client: C) -> Self
    where
        C: Send + 'static,
    {
        Self::new(move || client)
    }

    /// The client, built now if this is the first call.
    pub fn get(&self) -> &C {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::OnFirstUse;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_client_is_built_once_at_the_first_use() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counted = builds.clone();
        let client = OnFirstUse::new(move || counted.fetch_add(1, Ordering::SeqCst) + 100);
        assert_eq!(
            builds.load(Ordering::SeqCst),
            0,
            "nothing is built up front"
        );
        assert_eq!(*client.get(), 100);
        assert_eq!(*client.get(), 100);
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert_eq!(*OnFirstUse::built(7).get(), 7);
    }
}
