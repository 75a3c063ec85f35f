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

/// What `GET /metrics` showed before any update still shows: the metrics without labels and
/// the implausible-lap reasons at 0, each with its HELP and TYPE lines.
#[test]
fn fixed_series_are_exported_at_zero_from_the_start() {
    let text = Metrics::new().render();
    for line in [
        "# HELP paddock_outbox_relayed_total Outbox events delivered to the event queues.",
        "# TYPE paddock_outbox_relayed_total counter",
        "paddock_outbox_relayed_total 0",
        "paddock_sharepack_bytes_stored_total 0",
        "paddock_store_read_capacity_milliunits_total 0",
        "# TYPE paddock_implausible_laps_total counter",
        r#"paddock_implausible_laps_total{reason="too_fast"} 0"#,
        r#"paddock_implausible_laps_total{reason="sectors_mismatch"} 0"#,
        "# TYPE paddock_ai_upstream_duration_seconds histogram",
        r#"paddock_ai_upstream_duration_seconds_bucket{le="30"} 0"#,
        "paddock_ai_upstream_duration_seconds_count 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing: {text}");
    }
}

/// A histogram keeps the buckets of its definition, and a gauge the value last set.
#[test]
fn histograms_take_their_buckets_and_gauges_their_value() {
    let m = Metrics::new();
    m.observe_request("GET", "/health", 200, Duration::from_micros(300));
    m.observe_request("GET", "/health", 200, Duration::from_millis(30));
    m.queue_depth.with_label_values(&["feed"]).set(3);
    let text = m.render();
    let bucket = |le: &str| {
        format!(
            r#"http_request_duration_seconds_bucket{{method="GET",route="/health",status="200",le="{le}"}} "#
        )
    };
    let count = |le: &str| -> Option<u64> {
        let prefix = bucket(le);
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|v| v.parse().expect("a count"))
    };
    assert_eq!(count("0.0005"), Some(1), "{text}");
    assert_eq!(count("0.025"), Some(1), "{text}");
    assert_eq!(count("0.05"), Some(2), "{text}");
    assert_eq!(count("+Inf"), Some(2), "{text}");
    assert!(
        text.lines()
            .any(|l| l == r#"paddock_queue_depth{queue="feed"} 3"#),
        "{text}"
    );
}

/// The metrics that reach CloudWatch are the definitions marked so, with their help and
/// labels; the HTTP, queue-depth and store-read metrics are not among them.
#[test]
fn cloudwatch_takes_the_definitions_marked_for_it() {
    let listed = Metrics::new().cloudwatch_metrics();
    let names: Vec<&str> = listed.iter().map(|m| m.name).collect();
    assert_eq!(listed.len(), 22, "{names:?}");
    for local in [
        "http_requests_total",
        "http_request_duration_seconds",
        "paddock_queue_depth",
        "paddock_store_items_read_total",
        "paddock_store_read_capacity_milliunits_total",
    ] {
        assert!(!names.contains(&local), "{local}");
    }
    let latency = listed
        .iter()
        .find(|m| m.name == "paddock_ai_upstream_duration_seconds")
        .expect("listed");
    assert_eq!(latency.kind, CloudWatchKind::Histogram);
    assert_eq!(latency.help, "Language-model call latency in seconds.");
    let sign_ins = listed
        .iter()
        .find(|m| m.name == "paddock_sign_ins_total")
        .expect("listed");
    assert_eq!(
        (sign_ins.kind, sign_ins.labels.len()),
        (CloudWatchKind::Counter, 2)
    );
}
