//! The `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers of answers to
//! requests made with a personal access token.
//!
//! A request whose bearer token has the personal-token prefix gets a [`RateLimitSlot`] in its
//! extensions; the token's check leaves the usage of its limit there, and this layer copies
//! it onto the answer (a 429 too). Every other request passes with one header look-up: no
//! slot, no allocation, the inner future as it is. (Rate-limit crates such as `tower_governor`
//! count in memory per process; our limits are counted in the item store, across instances.)

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderName, HeaderValue};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tower::{Layer, Service};

use super::auth_user::{RateLimitSlot, carries_personal_token};

/// Adds [`RateLimitHeaders`] around a service.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RateLimitHeadersLayer;

impl<S> Layer<S> for RateLimitHeadersLayer {
    type Service = RateLimitHeaders<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitHeaders { inner }
    }
}

/// Gives personal-token requests a rate-limit slot and their answers its headers.
#[derive(Debug, Clone)]
pub(crate) struct RateLimitHeaders<S> {
    inner: S,
}

impl<S> Service<Request> for RateLimitHeaders<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = RateLimitHeadersFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let slot = carries_personal_token(req.headers()).then(|| {
            let slot = RateLimitSlot::default();
            req.extensions_mut().insert(slot.clone());
            slot
        });
        RateLimitHeadersFuture {
            inner: self.inner.call(req),
            slot,
        }
    }
}

pin_project! {
    /// The answer of [`RateLimitHeaders`].
    pub(crate) struct RateLimitHeadersFuture<F> {
        #[pin]
        inner: F,
        slot: Option<RateLimitSlot>,
    }
}

impl<F, E> Future for RateLimitHeadersFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = match ready!(this.inner.poll(cx)) {
            Ok(response) => response,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if let Some(usage) = this.slot.take().and_then(|slot| slot.0.get().copied()) {
            let headers = response.headers_mut();
            for (name, value) in [
                ("ratelimit-limit", u64::from(usage.limit)),
                ("ratelimit-remaining", u64::from(usage.remaining)),
                ("ratelimit-reset", usage.reset_secs),
            ] {
                headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
            }
        }
        Poll::Ready(Ok(response))
    }
}
