//! Response headers that keep browsers and caches from misusing an answer: no content-type
//! sniffing on any answer, and no storing of answers to authenticated requests.

use http::{HeaderMap, HeaderValue, header};

/// The policy of the SVG track map: nothing loads or runs in it (its drawing uses
/// presentation attributes only, so no inline style is needed either), and no page frames it.
pub const SVG_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; sandbox";

/// Sets the headers every answer gets: `X-Content-Type-Options: nosniff` (a browser never runs
/// an uploaded or echoed body as a script or style whatever it looks like), and on answers to
/// requests that carry credentials `Cache-Control: no-store` unless the handler chose its own
/// policy (the public leaderboards, the same for every caller, do): a shared or browser cache
/// must never keep one driver's data for the next. Called by the request middleware, so the
/// headers cost no layer of their own.
pub(crate) fn apply(authenticated: bool, headers: &mut HeaderMap) {
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if authenticated && !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}
