//! The JSON log line, written straight into the line's buffer.
//!
//! `tracing-subscriber`'s own JSON format gathers each line's fields into a map of JSON values,
//! formats a span's fields as JSON text when the span is made and decodes that text again for
//! every line logged in the span. Every request logs a line and makes a span, so that work is
//! on the hot path, where it was most of what the line cost (docs/perf.md).
//! This format writes the same members (`timestamp`, `level`, the event's fields at the top,
//! `span` with the innermost span's name and fields) with no intermediate values.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::log_text::escape_text;
use paddock_api::request_context;
use paddock_core::ports::clock::{DATE_TIME_LEN, date_time_digits, digits};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Writes `s` as a JSON string.
fn json_str(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    w.write_char('"')?;
    escape_into(w, s)?;
    w.write_char('"')
}

/// Writes `s` with JSON's escapes, in runs: the bytes that need one are ASCII, so every run
/// between them is whole UTF-8.
fn escape_into(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    let needs_escape = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
    // Most values (ids, routes, messages) need no escape: one scan, one write.
    if !s.as_bytes().iter().any(needs_escape) {
        return w.write_str(s);
    }
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => {
                w.write_str(&s[start..i])?;
                write!(w, "\\u{b:04x}")?;
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        w.write_str(&s[start..i])?;
        w.write_str(escaped)?;
        start = i + 1;
    }
    w.write_str(&s[start..])
}

/// Escapes whatever is written through it (a `Debug` or `Display` value, piece by piece,
/// with no string of its own).
struct Escaping<'a, W: fmt::Write>(&'a mut W);

impl<W: fmt::Write> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape_into(self.0, s)
    }
}

/// Writes the fields it visits as JSON members, comma-separated.
struct Fields<'a, W: fmt::Write> {
    w: &'a mut W,
    first: bool,
    result: fmt::Result,
}

impl<W: fmt::Write> Fields<'_, W> {
    /// Writes the separator and the member name of `field`.
    fn key(&mut self, field: &Field) -> fmt::Result {
        if !self.first {
            self.w.write_char(',')?;
        }
        self.first = false;
        json_str(self.w, field.name())?;
        self.w.write_char(':')
    }
}

impl<W: fmt::Write> Visit for Fields<'_, W> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_ok() {
            self.result = self.key(field).and_then(|()| json_str(self.w, value));
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.result.is_ok() {
            self.result = self
                .key(field)
                .and_then(|()| self.w.write_str(itoa::Buffer::new().format(value)));
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.result.is_ok() {
            self.result = self
                .key(field)
                .and_then(|()| self.w.write_str(itoa::Buffer::new().format(value)));
        }
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.result.is_ok() {
            self.result = self.key(field).and_then(|()| write!(self.w, "{value}"));
        }
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        if self.result.is_ok() {
            self.result = self.key(field).and_then(|()| {
                if value.is_finite() {
                    self.w.write_str(ryu::Buffer::new().format_finite(value))
                } else {
                    self.w.write_str("null")
                }
            });
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            self.result = self.key(field).and_then(|()| {
                self.w.write_char('"')?;
                fmt::Write::write_fmt(&mut Escaping(&mut *self.w), format_args!("{value:?}"))?;
                self.w.write_char('"')
            });
        }
    }
}

/// Formats a span's fields as the inside of a JSON object (`"a":1,"b":"x"`), once, when
/// the span is made; [`JsonLine`] copies that text into each line logged in the span.
pub(crate) struct JsonFields;

impl<'w> FormatFields<'w> for JsonFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        mut writer: Writer<'w>,
        fields: R,
    ) -> fmt::Result {
        let mut v = Fields {
            w: &mut writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut v);
        v.result
    }
}

/// One JSON object per line: `timestamp` (RFC 3339, UTC, microseconds), `level`, the event's
/// fields (`message` among them) and, logged inside a span, `span` with the span's name and
/// fields; logged while a request is answered (and in no span of its own), `span` names the
/// request (`"name":"request"`, `request_id`, `method`, `route`: see [`paddock_api::request_context`]).
pub(crate) struct JsonLine;

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // The line is built in a buffer of this thread and handed to `writer` whole: the
        // writer is a `dyn fmt::Write`, and the pieces of a line are some forty small writes.
        thread_local! {
            static LINE: RefCell<String> = const { RefCell::new(String::new()) };
        }
        LINE.with(|line| {
            if let Ok(mut line) = line.try_borrow_mut() {
                line.clear();
                json_line(ctx, &mut line, event)?;
                return writer.write_str(&line);
            }
            // A value's `Debug` that logs while its line is being written.
            let mut line = String::new();
            json_line(ctx, &mut line, event)?;
            writer.write_str(&line)
        })
    }
}

/// Writes the JSON line of `event` into `line`.
fn json_line<S, N>(ctx: &FmtContext<'_, S, N>, line: &mut String, event: &Event<'_>) -> fmt::Result
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    line.push_str("{\"timestamp\":\"");
    line.push_str(timestamp(&mut [0; TIMESTAMP_LEN]));
    line.push_str("\",\"level\":\"");
    line.push_str(event.metadata().level().as_str());
    line.push_str("\",");
    let mut v = Fields {
        w: &mut *line,
        first: true,
        result: Ok(()),
    };
    event.record(&mut v);
    v.result?;
    if let Some(span) = ctx.lookup_current() {
        let ext = span.extensions();
        if let Some(fields) = ext.get::<FormattedFields<N>>() {
            line.push_str(",\"span\":{\"name\":");
            json_str(line, span.name())?;
            if !fields.is_empty() {
                line.push(',');
                line.push_str(fields);
            }
            line.push('}');
        }
    } else if let Some(written) = request_context::with_current(|request| -> fmt::Result {
        line.push_str(",\"span\":{\"name\":\"request\",\"request_id\":");
        json_str(line, &request.request_id)?;
        line.push_str(",\"method\":");
        json_str(line, request.method.as_str())?;
        line.push_str(",\"route\":");
        json_str(line, request.route.as_str())?;
        line.push('}');
        Ok(())
    }) {
        written?;
    }
    line.push_str("}\n");
    Ok(())
}

/// The length of `2026-11-25T20:37:54.123456Z`.
const TIMESTAMP_LEN: usize = 27;

/// Now, as RFC 3339 in UTC with microseconds, written into `buf`. The date and time to the
/// second are worked out once a second per thread and kept (the calendar arithmetic cost
/// more than the rest of the line's members together); each line writes its microseconds.
fn timestamp(buf: &mut [u8; TIMESTAMP_LEN]) -> &str {
    thread_local! {
        static SECOND: Cell<(u64, [u8; SECOND_LEN])> = const { Cell::new((u64::MAX, [0; SECOND_LEN])) };
    }
    // Before 1970 does not occur on a running clock; it would print as 1970.
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let unix = since_epoch.as_secs();
    let (cached, mut prefix) = SECOND.get();
    if cached != unix {
        prefix = second_prefix(unix);
        SECOND.set((unix, prefix));
    }
    buf[..SECOND_LEN].copy_from_slice(&prefix);
    digits(
        &mut buf[SECOND_LEN..SECOND_LEN + 6],
        since_epoch.subsec_micros(),
    );
    buf[SECOND_LEN + 6] = b'Z';
    std::str::from_utf8(buf).unwrap_or("1970-01-01T00:00:00.000000Z")
}

/// The length of `2026-11-25T20:37:54.`.
const SECOND_LEN: usize = DATE_TIME_LEN + 1;

/// `2026-11-25T20:37:54.` for the second `unix` seconds after the epoch, in UTC.
fn second_prefix(unix: u64) -> [u8; SECOND_LEN] {
    let at = i64::try_from(unix)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut out = [b'.'; SECOND_LEN];
    out[..DATE_TIME_LEN].copy_from_slice(&date_time_digits(&at));
    out
}

/// The text line (`Log__Format=pretty`): time, level, the spans (or the request being answered)
/// and the event's fields, as `tracing-subscriber`'s compact format writes them. The fields are
/// [`crate::log_text::TextFields`]' and the request's are escaped as they are, so no value
/// can end the line.
pub(crate) struct TextLine;

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let ansi = writer.has_ansi_escapes();
        let level = *event.metadata().level();
        let mut stamp = [0; TIMESTAMP_LEN];
        let stamp = timestamp(&mut stamp);
        if ansi {
            let colour = match level {
                tracing::Level::ERROR => "31",
                tracing::Level::WARN => "33",
                tracing::Level::INFO => "32",
                tracing::Level::DEBUG => "34",
                tracing::Level::TRACE => "35",
            };
            write!(
                writer,
                "\x1b[2m{stamp}\x1b[0m \x1b[{colour}m{level:>5}\x1b[0m "
            )?;
        } else {
            write!(writer, "{stamp} {level:>5} ")?;
        }
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                writer.write_str(span.name())?;
                let ext = span.extensions();
                if let Some(fields) = ext.get::<FormattedFields<N>>().filter(|f| !f.is_empty()) {
                    write!(writer, "{{{fields}}}")?;
                }
                writer.write_str(": ")?;
            }
        } else if let Some(written) = request_context::with_current(|request| {
            writer.write_str("request{request_id=")?;
            escape_text(&mut writer, &request.request_id, false)?;
            writer.write_str(" method=")?;
            escape_text(&mut writer, request.method.as_str(), false)?;
            writer.write_str(" route=")?;
            escape_text(&mut writer, request.route.as_str(), false)?;
            writer.write_str("}: ")
        }) {
            written?;
        }
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_prefix_is_the_calendar_date_and_time_in_utc() {
        assert_eq!(&second_prefix(0), b"1970-01-01T00:00:00.");
        // 2024-02-29T23:59:59Z, a leap day's last second.
        assert_eq!(&second_prefix(1_709_251_199), b"2024-02-29T23:59:59.");
        assert_eq!(&second_prefix(1_709_251_200), b"2024-03-01T00:00:00.");
    }

    #[test]
    fn a_timestamp_is_now_with_microseconds() {
        let before = time::OffsetDateTime::now_utc();
        let mut buf = [0; TIMESTAMP_LEN];
        let stamp = timestamp(&mut buf).to_owned();
        let after = time::OffsetDateTime::now_utc();
        let parsed =
            time::OffsetDateTime::parse(&stamp, &time::format_description::well_known::Rfc3339)
                .unwrap();
        let micros = |t: time::OffsetDateTime| t.unix_timestamp_nanos() / 1_000;
        assert!(
            micros(before) <= micros(parsed) && micros(parsed) <= micros(after),
            "{stamp}"
        );
        assert_eq!(stamp.len(), TIMESTAMP_LEN);
        assert!(stamp.ends_with('Z'));
    }
}
