//! Structured logging set-up.
//!
//! The local server formats each line on the request's thread and appends it to the buffer of
//! a writer thread ([`crate::log_writer`]), which writes each batch in one go: a request never
//! waits for the terminal or pipe its log goes to. The buffer is bounded and never drops a
//! line; a writer that falls behind slows the requests instead. A Lambda function writes each
//! line before it answers ([`init_blocking`]): the runtime freezes or ends the instance after
//! the answer, and a line still queued then would be late or lost.

use std::io::Write;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

use crate::log_writer::{self, QueuedWriterGuard};
use paddock_core::config::LogFormat;

/// Keeps the log writer thread running; dropping it writes out what is still queued.
#[must_use = "the log writer stops when its guard is dropped"]
pub struct LogGuard {
    _writer: QueuedWriterGuard,
}

impl std::fmt::Debug for LogGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogGuard")
    }
}

/// Installs the global subscriber writing to standard output from a writer thread (`RUST_LOG`
/// filters, default `info`). Safe to call twice: the first subscriber stays. Fails when the
/// writer thread cannot be started.
pub fn init(format: LogFormat) -> std::io::Result<LogGuard> {
    init_to(format, std::io::stdout())
}

/// As [`init`], writing to `out` (the bench logs to a file).
pub fn init_to(format: LogFormat, out: impl Write + Send + 'static) -> std::io::Result<LogGuard> {
    let (writer, guard) = log_writer::queued(out)?;
    install(format, writer);
    Ok(LogGuard { _writer: guard })
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
/// A `Dispatch` rather than a boxed subscriber: every log call then reaches the subscriber
/// through one pointer, as with a subscriber installed directly.
pub fn subscriber<W>(format: LogFormat, writer: W) -> tracing::Dispatch
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(writer);
    match format {
        LogFormat::Json => tracing::Dispatch::new(
            builder
                .fmt_fields(crate::log_line::JsonFields)
                .event_format(crate::log_line::JsonLine)
                .finish(),
        ),
        LogFormat::Pretty => tracing::Dispatch::new(
            builder
                .fmt_fields(crate::log_text::TextFields)
                .event_format(crate::log_line::TextLine)
                .finish(),
        ),
    }
}
