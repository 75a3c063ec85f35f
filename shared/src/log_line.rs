//! The JSON log line, written straight into the line's buffer.
//!
//! `tracing-subscriber`'s own JSON format gathers each line's fields into a map of JSON values,
//! formats a span's fields as JSON text when the span is made and decodes that text again for
//! every line logged in the span. Every request logs a line and makes a span, so that work is
//! on the hot path: measured by the bench (`--only health`), it was most of what the line cost.
//! This format writes the same members (`timestamp`, `level`, the event's fields at the top,
//! `span` with the innermost span's name and fields) with no intermediate values.

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Writes `s` as a JSON string.
fn json_str(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    w.write_char('"')?;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => {
                w.write_str(&s[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
                continue;
            }
            _ => continue,
        };
        w.write_str(&s[start..i])?;
        w.write_str(esc)?;
        start = i + c.len_utf8();
    }
    w.write_str(&s[start..])?;
    w.write_char('"')
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
            self.result = self.key(field).and_then(|()| write!(self.w, "{value}"));
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.result.is_ok() {
            self.result = self.key(field).and_then(|()| write!(self.w, "{value}"));
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
                    write!(self.w, "{value}")
                } else {
                    self.w.write_str("null")
                }
            });
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            let text = format!("{value:?}");
            self.result = self.key(field).and_then(|()| json_str(self.w, &text));
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
/// fields.
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
        let now = time::OffsetDateTime::now_utc();
        write!(
            writer,
            "{{\"timestamp\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z\",\"level\":\"{}\",",
            now.year(),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second(),
            now.microsecond(),
            event.metadata().level()
        )?;
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
        }
        writer.write_str("}\n")
    }
}
