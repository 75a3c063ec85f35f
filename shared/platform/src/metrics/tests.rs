use super::*;

/// The count of the `http_requests_total` series with `labels` in `text`.
fn requests(text: &str, labels: &str) -> Option<u64> {
    let prefix = format!("http_requests_total{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map(|v| v.parse().expect("a count"))
}

/// The series resolved once per (method, route, status) count each request in its own
/// series, as label lookups on every request did: a second status or method of a route
/// is a series of its own, and the latency histogram counts the same requests.
#[test]
fn request_series_are_resolved_once_and_kept_apart() {
    let m = Metrics::new();
    let ms = Duration::from_millis(1);
    for _ in 0..3 {
        m.observe_request("GET", "/health", 200, ms);
    }
    m.observe_request("GET", "/health", 503, ms);
    m.observe_request("POST", "/health", 200, ms);
    m.observe_request("BREW", "/health", 200, ms);
    m.observe_request("GET", "unmatched", 404, ms);
    let text = m.render();
    for (labels, count) in [
        (r#"method="GET",route="/health",status="200""#, 3),
        (r#"method="GET",route="/health",status="503""#, 1),
        (r#"method="POST",route="/health",status="200""#, 1),
        (r#"method="other",route="/health",status="200""#, 1),
        (r#"method="GET",route="unmatched",status="404""#, 1),
    ] {
        assert_eq!(requests(&text, labels), Some(count), "{labels}: {text}");
    }
    assert!(
        text.contains(
            r#"http_request_duration_seconds_count{method="GET",route="/health",status="200"} 3"#
        ),
        "{text}"
    );
}
