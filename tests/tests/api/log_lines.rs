//! The JSON log line: one object per line, the event's fields at the top, the innermost span's
//! fields under `span`, strings escaped, whatever the values hold.

use paddock_core::config::LogFormat;
use paddock_tests::captured_log::CapturedLog;
use serde_json::Value;

#[test]
fn each_line_is_one_json_object_with_its_fields_and_span() {
    // The subscriber it installs is the process's: no other test may log into it.
    if !paddock_tests::own_process::alone(
        "log_lines::each_line_is_one_json_object_with_its_fields_and_span",
    ) {
        return;
    }
    let out = CapturedLog::default();
    let guard = paddock_runtime::telemetry::init_to(LogFormat::Json, out.clone());
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

/// Serves one request (with a client's `x-request-id` of `client_id`) through the service
/// layers to a handler that logs a line, then logs a line in a span and one outside both, all to
/// a subscriber of `format`; answers what it wrote and the request id the answer carried.
async fn lines_of_a_request(format: LogFormat, client_id: &str) -> (String, String) {
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    let out = CapturedLog::default();
    let _default = tracing::dispatcher::set_default(&paddock_runtime::telemetry::subscriber(
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
    let app =
        paddock_api::http::with_service_layers(routes, 1024, std::time::Duration::from_secs(5));
    let request = http::Request::get("/laps/abc")
        .header("x-request-id", client_id)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    tracing::error_span!("event", event_id = "e-3").in_scope(|| tracing::warn!("in a span"));
    tracing::warn!("outside any request");
    (out.text(), id)
}

#[tokio::test(flavor = "current_thread")]
async fn lines_logged_while_a_request_is_answered_name_the_request() {
    let (text, id) = lines_of_a_request(LogFormat::Json, "req-ctx-1").await;
    assert_ne!(id, "req-ctx-1", "the service's own id");
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
    assert_eq!(inside["span"]["request_id"], id.as_str());
    assert_eq!(inside["span"]["method"], "GET");
    assert_eq!(
        inside["span"]["route"], "/laps/{id}",
        "the template, not the path"
    );

    let access = by_message("request");
    assert_eq!(access["request_id"], id.as_str());
    assert_eq!(
        access["client_request_id"], "req-ctx-1",
        "beside it, as sent"
    );
    assert_eq!(access["route"], "/laps/{id}");
    assert_eq!(access["status"], 200);
    assert!(access.get("span").is_none(), "named once: {access}");

    assert_eq!(by_message("in a span")["span"]["event_id"], "e-3");
    assert!(by_message("outside any request").get("span").is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn text_lines_name_the_request_and_spans_too() {
    // Colours are on (the local server's terminal); the test reads the text between them.
    let (coloured, id) = lines_of_a_request(LogFormat::Pretty, "req-ctx-1").await;
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
        inside.contains(&format!(
            "request{{request_id={id} method=GET route=/laps/{{id}}}}: inside the handler lap=7"
        )),
        "{inside}"
    );
    let access = line(&format!("request_id=\"{id}\" method=\"GET\""));
    assert!(access.contains("status=200"), "{access}");
    assert!(
        access.contains("client_request_id=\"req-ctx-1\""),
        "{access}"
    );
    assert!(!access.contains("request{"), "{access}");
    assert!(
        line("in a span").contains("event{event_id=\"e-3\"}: in a span"),
        "{text}"
    );
    assert!(!line("outside any request").contains('{'), "{text}");
}

/// A client's request id is logged beside the service's only when it is 1 to 64 of
/// `A-Z a-z 0-9 . _ -`; any other is dropped, never cut or cleaned into something else.
#[tokio::test(flavor = "current_thread")]
async fn a_clients_request_id_is_logged_only_when_short_and_plain() {
    let plain = "Client_1.retry-2";
    let longest = "a".repeat(64);
    for (sent, logged) in [
        (plain, Some(plain)),
        (longest.as_str(), Some(longest.as_str())),
        (&*"a".repeat(65), None),
        ("two words", None),
        ("a/b", None),
        ("tab\tid", None),
        ("pilote-é", None),
    ] {
        let (text, id) = lines_of_a_request(LogFormat::Json, sent).await;
        let access: Value = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|l| l["message"] == "request")
            .unwrap();
        assert_eq!(access["request_id"], id.as_str());
        assert_eq!(
            access.get("client_request_id").and_then(Value::as_str),
            logged,
            "{sent:?}: {access}"
        );
    }
}

/// The text format escapes what would end a line, or rework how it reads, in every value and
/// message, however the value is given: a provider's error text cannot forge a line.
#[test]
fn no_value_starts_a_line_of_its_own_in_the_text_format() {
    let out = CapturedLog::default();
    let dispatch = paddock_runtime::telemetry::subscriber(
        LogFormat::Pretty,
        std::sync::Mutex::new(out.clone()),
    );
    let forged = "no\n2026-01-01T00:00:00.000000Z  INFO request status=200\r\u{1b}[2K\u{85}\u{2028}\u{202e}\u{7}";
    let error = std::io::Error::other(forged);
    tracing::dispatcher::with_default(&dispatch, || {
        tracing::warn!(error = %forged, "as Display");
        tracing::warn!(detail = forged, "as a string");
        tracing::warn!(detail = ?forged, "as Debug");
        tracing::warn!(error = &error as &dyn std::error::Error, "as an error");
        tracing::warn!("in the message: {forged}");
        tracing::error_span!("event", event_id = %forged).in_scope(|| tracing::warn!("in a span"));
    });

    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "one line per event: {text}");
    for line in lines {
        // The formatter's own colours are the only escapes written raw.
        let mut plain = String::new();
        let mut rest = line;
        while let Some(at) = rest.find("\x1b[") {
            plain.push_str(&rest[..at]);
            rest = rest[at..].split_once('m').map_or("", |(_, after)| after);
        }
        plain.push_str(rest);
        assert!(
            plain.starts_with("20") && plain.contains(" WARN "),
            "{line:?}"
        );
        let raw = plain.chars().find(|&c| {
            c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}')
        });
        assert_eq!(raw, None, "{line:?}");
        assert!(plain.contains("no\\n2026-01-01"), "{line:?}");
        assert!(
            plain.contains("\\r\\u{1b}[2K\\u{85}\\u{2028}\\u{202e}"),
            "{line:?}"
        );
    }
    assert!(
        text.contains("detail=\"no\\n2026"),
        "strings stay quoted: {text}"
    );
}
