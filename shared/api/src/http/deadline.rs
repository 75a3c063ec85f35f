//! The request deadline: a handler that has not answered `timeout` after the request reached
//! it is dropped, and the client gets a 504 (the envelope is added by [`super::observe`]).
//!
//! Most answers are ready at their first poll (a cached page, a token check, a health probe).
//! A timer armed for every request costs a timer-wheel entry, its registration and its removal
//! under the timer's lock, shared by every worker thread. This layer arms the timer only when
//! the handler first has to wait, for the time left of the request's deadline.

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::StatusCode;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// Adds [`Deadline`] around a service.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeadlineLayer {
    timeout: Duration,
}

impl DeadlineLayer {
    /// Requests get `timeout` to be answered.
    pub(crate) fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline {
            inner,
            timeout: self.timeout,
        }
    }
}

/// Answers 504 for a request `inner` has not answered within the timeout.
#[derive(Debug, Clone)]
pub(crate) struct Deadline<S> {
    inner: S,
    timeout: Duration,
}

impl<S> Service<Request> for Deadline<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = DeadlineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        DeadlineFuture {
            inner: self.inner.call(req),
            // Measured from here, not from the first wait: the deadline is the request's.
            deadline: Instant::now() + self.timeout,
            sleep: None,
        }
    }
}

pin_project! {
    /// The answer of [`Deadline`].
    pub(crate) struct DeadlineFuture<F> {
        #[pin]
        inner: F,
        deadline: Instant,
        // Armed at the first poll the answer is not ready.
        #[pin]
        sleep: Option<Sleep>,
    }
}

impl<F, E> Future for DeadlineFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(answer) = this.inner.poll(cx) {
            return Poll::Ready(answer);
        }
        if this.sleep.is_none() {
            this.sleep
                .set(Some(tokio::time::sleep_until(*this.deadline)));
        }
        match this.sleep.as_pin_mut().map(|sleep| sleep.poll(cx)) {
            Some(Poll::Ready(())) => {
                let mut late = Response::new(Body::empty());
                *late.status_mut() = StatusCode::GATEWAY_TIMEOUT;
                Poll::Ready(Ok(late))
            }
            _ => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::ServiceExt;

    fn after(
        wait: Duration,
    ) -> impl Fn(Request) -> Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>> + Clone
    {
        move |_req| {
            Box::pin(async move {
                tokio::time::sleep(wait).await;
                Ok(Response::new(Body::from("done")))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_ready_answer_passes_without_a_timer_and_a_late_one_is_cut_at_the_deadline() {
        let layer = DeadlineLayer::new(Duration::from_millis(300));
        let quick = layer.layer(tower::service_fn(|_req: Request| async {
            Ok::<_, Infallible>(Response::new(Body::from("now")))
        }));
        let mut quick = quick;
        let mut ready = std::pin::pin!(quick.call(Request::new(Body::empty())));
        let answer = futures::poll!(ready.as_mut());
        assert!(matches!(answer, Poll::Ready(Ok(ref r)) if r.status() == StatusCode::OK));
        // Answered at its first poll: no timer was armed for it.
        assert!(ready.as_mut().project().sleep.is_none());

        let mut waits = layer.layer(tower::service_fn(after(Duration::from_millis(10))));
        let mut waiting = std::pin::pin!(waits.call(Request::new(Body::empty())));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        assert!(waiting.as_mut().project().sleep.is_some());

        let started = Instant::now();
        let slow = layer.layer(tower::service_fn(after(Duration::from_secs(5))));
        let answer = slow.oneshot(Request::new(Body::empty())).await.unwrap();
        assert_eq!(answer.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(started.elapsed(), Duration::from_millis(300));

        let in_time = layer.layer(tower::service_fn(after(Duration::from_millis(200))));
        let answer = in_time.oneshot(Request::new(Body::empty())).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
    }
}
