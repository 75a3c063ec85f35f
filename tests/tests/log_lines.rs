//! The JSON log line: one object per line, the event's fields at the top, the innermost span's
//! fields under `span`, strings escaped, whatever the values hold.

use paddock::config::LogFormat;
use paddock_tests::captured_log::CapturedLog;
use serde_json::Value;

#[test]
fn each_line_is_one_json_object_with_its_fields_and_span() {
    let out = CapturedLog::default();
    let guard = paddock::telemetry::init_to(LogFormat::Json, out.clone());
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
