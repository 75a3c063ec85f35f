//! The JSON log line: one object per line, the event's fields at the top, the innermost span's
//! fields under `span`, strings escaped, whatever the values hold.

use paddock::config::LogFormat;
use paddock_tests::captured_log::CapturedLog;
use serde_json::Value;

#[test]
fn each_line_is_one_json_object_with_its_fields_and_span() {
    let out = CapturedLog::default();
    let guard =
        paddock::telemetry::init_to(LogFormat::Json, out.clone()).expect("the log writer starts");
    let awkward = "quote \" backslash \\ newline \n tab \t bell \u{7} accent é";
    tracing::info!(
        request_id = "r-1",
        status = 200_u16,
        latency_ms = 1.5,
        ok = true,
        negative = -3_i64,
        "request"
    );
    tracing::error_span!("event", event_id = "e-9", consumer = "feed").in_scope(|| {
        tracing::warn!(error = %awkward, nan = f64::NAN, "handling failed");
    });
    // Dropping the guard writes out what is queued.
    drop(guard);

    let text = out.text();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");

    let access = &lines[0];
    assert_eq!(access["level"], "INFO");
    assert_eq!(access["message"], "request");
    assert_eq!(access["request_id"], "r-1");
    assert_eq!(access["status"], 200);
    assert_eq!(access["latency_ms"], 1.5);
    assert_eq!(access["ok"], true);
    assert_eq!(access["negative"], -3);
    assert!(access.get("span").is_none(), "{access}");
    let stamp = access["timestamp"].as_str().unwrap();
    assert!(
        time::OffsetDateTime::parse(stamp, &time::format_description::well_known::Rfc3339).is_ok(),
        "{stamp}"
    );

    let failure = &lines[1];
    assert_eq!(failure["level"], "WARN");
    assert_eq!(failure["error"], awkward);
    assert_eq!(failure["nan"], Value::Null);
    assert_eq!(failure["span"]["name"], "event");
    assert_eq!(failure["span"]["event_id"], "e-9");
    assert_eq!(failure["span"]["consumer"], "feed");
}

/// Serves one request through the service layers to a handler that logs a line, then logs a
/// line in a span and one outside both, all to a subscriber of `format`; answers what it wrote.
async fn lines_of_a_request(format: LogFormat) -> String {
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    let out = CapturedLog::default();
    let _default = tracing::dispatcher::set_default(&paddock::telemetry::subscriber(
        format,
        std::sync::Mutex::new(out.clone()),
    ));
    let routes = Router::new().route(
        "/laps/{id}",
        get(|| async {
            tracing::warn!(lap = 7_u64, "inside the handler");
            "ok"
        }),
    );
    let app = paddock::http::with_service_layers(routes, 1024, std::time::Duration::from_secs(5));
    let request = http::Request::get("/laps/abc")
        .header("x-request-id", "req-ctx-1")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    tracing::error_span!("event", event_id = "e-3").in_scope(|| tracing::warn!("in a span"));
    tracing::warn!("outside any request");
    out.text()
}

#[tokio::test(flavor = "current_thread")]
async fn lines_logged_while_a_request_is_answered_name_the_request() {
    let text = lines_of_a_request(LogFormat::Json).await;
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let by_message = |m: &str| {
        lines
            .iter()
            .find(|l| l["message"] == m)
            .unwrap_or_else(|| panic!("no line {m:?} in {text}"))
    };

    let inside = by_message("inside the handler");
    assert_eq!(inside["lap"], 7);
    assert_eq!(inside["span"]["name"], "request", "{inside}");
    assert_eq!(inside["span"]["request_id"], "req-ctx-1");
    assert_eq!(inside["span"]["method"], "GET");
    assert_eq!(
        inside["span"]["route"], "/laps/{id}",
        "the template, not the path"
    );

    let access = by_message("request");
    assert_eq!(access["request_id"], "req-ctx-1");
    assert_eq!(access["route"], "/laps/{id}");
    assert_eq!(access["status"], 200);
    assert!(access.get("span").is_none(), "named once: {access}");

    assert_eq!(by_message("in a span")["span"]["event_id"], "e-3");
    assert!(by_message("outside any request").get("span").is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn text_lines_name_the_request_and_spans_too() {
    // Colours are on (the local server's terminal); the test reads the text between them.
    let coloured = lines_of_a_request(LogFormat::Pretty).await;
    let mut text = String::new();
    let mut rest = coloured.as_str();
    while let Some(at) = rest.find('\x1b') {
        text.push_str(&rest[..at]);
        rest = rest[at..].split_once('m').map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    let line = |m: &str| {
        text.lines()
            .find(|l| l.contains(m))
            .unwrap_or_else(|| panic!("no line {m:?} in {text}"))
    };
    let inside = line("inside the handler");
    assert!(inside.contains(" WARN "), "{inside}");
    assert!(
        inside.contains(
            "request{request_id=req-ctx-1 method=GET route=/laps/{id}}: inside the handler lap=7"
        ),
        "{inside}"
    );
    let access = line("request_id=\"req-ctx-1\" method=\"GET\"");
    assert!(access.contains("status=200"), "{access}");
    assert!(!access.contains("request{"), "{access}");
    assert!(
        line("in a span").contains("event{event_id=\"e-3\"}: in a span"),
        "{text}"
    );
    assert!(!line("outside any request").contains('{'), "{text}");
}
