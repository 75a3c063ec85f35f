//! Structured logging set-up: `tracing-subscriber`'s JSON format (or its text format with
//! escaped fields, [`crate::log_text`]), written by `tracing-appender`'s writer thread in the
//! local server and straight to standard output in a Lambda function.
//!
//! The local server's writer never drops a line: a writer that falls behind slows the requests
//! instead, and the lines queued while it writes go out together. A Lambda function writes each line before it answers ([`init_blocking`]): the
//! runtime freezes or ends the instance after the answer, and a line still queued then would be
//! late or lost.

use std::io::Write;

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

use paddock_core::config::LogFormat;

/// Keeps the log writer thread running; dropping it writes out what is still queued.
#[must_use = "the log writer stops when its guard is dropped"]
pub struct LogGuard {
    _writer: WorkerGuard,
}

impl std::fmt::Debug for LogGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogGuard")
    }
}

/// Installs the global subscriber writing to standard output from a writer thread (`RUST_LOG`
/// filters, default `info`). Safe to call twice: the first subscriber stays.
pub fn init(format: LogFormat) -> LogGuard {
    init_to(format, std::io::stdout())
}

/// As [`init`], writing to `out` (the bench logs to a file).
pub fn init_to(format: LogFormat, out: impl Write + Send + 'static) -> LogGuard {
    // Not lossy: a full queue (128,000 lines) holds the logging thread back rather than
    // dropping its line. The writer thread flushes whenever it has emptied the queue, so
    // through a `BufWriter` the lines queued meanwhile go out in one write call.
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("log-writer")
        .finish(std::io::BufWriter::with_capacity(64 * 1024, out));
    install(format, writer);
    LogGuard { _writer: guard }
}

/// Installs the global subscriber writing each line to standard output before the call that
/// logged it goes on (Lambda functions). Safe to call twice.
pub fn init_blocking(format: LogFormat) {
    install(format, std::io::stdout);
}

/// As [`init_blocking`], writing to `out` (the bench compares the two writers).
pub fn init_blocking_to(format: LogFormat, out: std::fs::File) {
    install(format, std::sync::Mutex::new(out));
}

fn install<W>(format: LogFormat, writer: W)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    // `try_init` also sends the `log` crate's records (some dependencies use it) to the log.
    let _ = subscriber(format, writer).try_init();
}

/// The subscriber the service installs, writing lines of `format` to `writer` (`RUST_LOG`
/// filters, default `info`); tests make it the default of one thread to read its lines back.
///
/// JSON lines hold `timestamp`, `level`, the event's fields (`message` among them) at the top
/// and, logged inside a span, `span` with the innermost span's `name` and fields (a request's
/// `request_id`, `method` and `route`; a queued event's `event_id`, `consumer`, ...).
pub fn subscriber<W>(format: LogFormat, writer: W) -> tracing::Dispatch
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = log_filter(std::env::var("RUST_LOG").ok().as_deref());
    let builder = tracing_subscriber::fmt()
        .with_target(false)
        .with_writer(writer);
    match format {
        LogFormat::Json => tracing::Dispatch::new(
            filter.with_subscriber(
                builder
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .finish(),
            ),
        ),
        LogFormat::Pretty => tracing::Dispatch::new(
            filter.with_subscriber(builder.fmt_fields(crate::log_text::TextFields).finish()),
        ),
    }
}

/// `RUST_LOG` as levels by target (`warn`, `info,paddock_boards=debug`); `info` when it is
/// unset or not of that form. Span and field filters are not read: the filter needs no
/// regular expressions, whose engine would be a tenth of a Lambda function's code.
fn log_filter(spec: Option<&str>) -> Targets {
    spec.filter(|s| !s.trim().is_empty())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;
    use tracing::level_filters::LevelFilter;

    #[test]
    fn the_log_filter_reads_levels_by_target_and_falls_back_to_info() {
        let f = log_filter(Some("warn,paddock_boards=debug"));
        assert!(f.would_enable("paddock_boards::board", &Level::DEBUG));
        assert!(!f.would_enable("paddock_api", &Level::INFO));
        assert!(f.would_enable("paddock_api", &Level::WARN));
        for unusable in [None, Some("[span{x=1}]=nope"), Some("")] {
            let f = log_filter(unusable);
            assert_eq!(f.default_level(), Some(LevelFilter::INFO), "{unusable:?}");
        }
    }
}
