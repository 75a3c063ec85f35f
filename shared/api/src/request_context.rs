//! The request a task is answering, for the log lines written while it does.
//!
//! Every line logged while a request is handled names the request (its id, method and route).
//! A `tracing` span per request would do that, but it costs a registry entry, its fields
//! formatted into a string, a dispatch through the subscriber each time the request's future is
//! polled, and the entry's removal, about as much as the request's own log line
//! (docs/perf.md). The context is a task-local instead: set around the handler's future
//! (a thread-local swap at each poll) and read by the log formatters, which write it where they
//! would write the span (`"span":{"name":"request",...}` in JSON).
//!
//! Work a handler hands to another task (`tokio::spawn`, `spawn_blocking`) leaves the context
//! behind, as it would leave a span.

use std::future::Future;

tokio::task_local! {
    static CURRENT: RequestContext;
}

/// What the log lines of one request name.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The request id, the service's own for each request (also sent back as `x-request-id`).
    pub request_id: String,
    /// The request's method.
    pub method: http::Method,
    /// The matched route template (`/v1/sessions/{id}`), or `unmatched`; never the path, which
    /// may hold ids.
    pub route: RouteLabel,
}

/// A route template as the router holds it (shared, not copied per request).
#[derive(Debug, Clone)]
pub enum RouteLabel {
    /// The template the router matched.
    Matched(axum::extract::MatchedPath),
    /// No route matched (the answer is a 404 or 405).
    Unmatched,
}

impl RouteLabel {
    /// The label as logged and counted.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Matched(path) => path.as_str(),
            Self::Unmatched => "unmatched",
        }
    }
}

/// Runs `future` as the request `context` (every line it logs names the request), and answers
/// the context back with the future's output.
pub fn scope<F: Future>(
    context: RequestContext,
    future: F,
) -> tokio::task::futures::TaskLocalFuture<RequestContext, F> {
    CURRENT.scope(context, future)
}

/// Calls `f` with the request the current task is answering, if it is answering one.
pub fn with_current<R>(f: impl FnOnce(&RequestContext) -> R) -> Option<R> {
    CURRENT.try_with(f).ok()
}
