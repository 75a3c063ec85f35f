//! The JSON log line, written straight into the line's buffer.
//!
//! `tracing-subscriber`'s own JSON format gathers each line's fields into a map of JSON values,
//! formats a span's fields as JSON text when the span is made and decodes that text again for
//! every line logged in the span. Every request logs a line and makes a span, so that work is
//! on the hot path: measured by the bench (`--only health`), it was most of what the line cost.
//! This format writes the same members (`timestamp`, `level`, the event's fields at the top,
//! `span` with the innermost span's name and fields) with no intermediate values.

use std::fmt;

use crate::request_context;
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
/// request (`"name":"request"`, `request_id`, `method`, `route`: see [`crate::request_context`]).
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
        writer.write_str("{\"timestamp\":\"")?;
        writer.write_str(timestamp(&mut [0; TIMESTAMP_LEN]))?;
        writer.write_str("\",\"level\":\"")?;
        writer.write_str(event.metadata().level().as_str())?;
        writer.write_str("\",")?;
        let mut v = Fields {
            w: &mut writer,
            first: true,
            result: Ok(()),
        };
        event.record(&mut v);
        v.result?;
        if let Some(span) = ctx.lookup_current() {
            let ext = span.extensions();
            if let Some(fields) = ext.get::<FormattedFields<N>>() {
                write!(writer, ",\"span\":{{\"name\":\"{}\"", span.name())?;
                if !fields.is_empty() {
                    writer.write_char(',')?;
                    writer.write_str(fields)?;
                }
                writer.write_char('}')?;
            }
        } else if let Some(written) = request_context::with_current(|request| {
            writer.write_str(",\"span\":{\"name\":\"request\",\"request_id\":")?;
            json_str(&mut writer, &request.request_id)?;
            writer.write_str(",\"method\":")?;
            json_str(&mut writer, request.method.as_str())?;
            writer.write_str(",\"route\":")?;
            json_str(&mut writer, request.route.as_str())?;
            writer.write_char('}')
        }) {
            written?;
        }
        writer.write_str("}\n")
    }
}

/// The length of `2026-11-25T20:37:54.123456Z`.
const TIMESTAMP_LEN: usize = 27;

/// Now, as RFC 3339 in UTC with microseconds, written digit by digit into `buf` (the
/// formatting machinery costs more than the line's other members together).
fn timestamp(buf: &mut [u8; TIMESTAMP_LEN]) -> &str {
    let now = time::OffsetDateTime::now_utc();
    let (year, month, day) = now.to_calendar_date();
    let (hour, minute, second, micro) = now.to_hms_micro();
    let mut at = 0;
    let mut digits = |value: u32, width: usize, then: u8| {
        let mut v = value;
        for slot in buf[at..at + width].iter_mut().rev() {
            *slot = b'0' + (v % 10) as u8;
            v /= 10;
        }
        buf[at + width] = then;
        at += width + 1;
    };
    // Years before 1 or after 9999 do not occur on a running clock; they would print wrapped.
    digits(year.clamp(0, 9999).unsigned_abs(), 4, b'-');
    digits(u32::from(u8::from(month)), 2, b'-');
    digits(u32::from(day), 2, b'T');
    digits(u32::from(hour), 2, b':');
    digits(u32::from(minute), 2, b':');
    digits(u32::from(second), 2, b'.');
    digits(micro, 6, b'Z');
    std::str::from_utf8(buf).unwrap_or("1970-01-01T00:00:00.000000Z")
}

/// The text line (`Log__Format=pretty`): time, level, the spans (or the request being answered)
/// and the event's fields, as `tracing-subscriber`'s compact format writes them.
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
            write!(
                writer,
                "request{{request_id={} method={} route={}}}: ",
                request.request_id,
                request.method,
                request.route.as_str()
            )
        }) {
            written?;
        }
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
