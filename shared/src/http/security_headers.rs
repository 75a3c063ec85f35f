//! Response headers that keep browsers and caches from misusing an answer: no content-type
//! sniffing on any answer, and no storing of answers to authenticated requests.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;

/// `X-Content-Type-Options: nosniff` on every answer: a browser never runs an uploaded or
/// echoed body as a script or style whatever it looks like.
pub(crate) fn nosniff() -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    )
}

/// The policy of the SVG track map: nothing loads or runs in it (its drawing uses
/// presentation attributes only, so no inline style is needed either), and no page frames it.
pub const SVG_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; sandbox";

/// `Cache-Control: no-store` on answers to requests that carry credentials, unless the
/// handler chose its own policy (the public leaderboards, the same for every caller, do):
/// a shared or browser cache must never keep one driver's data for the next.
pub(crate) async fn no_store_when_authenticated(req: Request, next: Next) -> Response {
    let authenticated = req.headers().contains_key(header::AUTHORIZATION);
    let mut response = next.run(req).await;
    if authenticated && !response.headers().contains_key(header::CACHE_CONTROL) {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
