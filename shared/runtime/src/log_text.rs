//! The fields of a text log line (`Log__Format=pretty`), with every character that could end
//! the line or rework how it reads escaped.
//!
//! `tracing-subscriber`'s own text fields write a value given by `Display` (`error = %e`) or a
//! message as it is: a newline in a provider's error text, a header or a stored name would start
//! a line of its own that reads as one the service wrote. Here every value and message is
//! escaped as it is written: line breaks (`\n`, `\r`, U+0085, U+2028, U+2029), the other C0 and
//! C1 controls and DEL (terminal escapes among them), and the bidirectional-text controls that
//! reorder what a terminal shows. Escapes are Rust's (`\n`, `\r`, `\t`, `\u{1b}`), so an escaped
//! line still reads as text; quoted string values also escape `"` and `\`, so a value cannot
//! close its quotes. Field names are the code's own.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// Whether `c` is escaped in a text line.
fn is_escaped(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f'..='\u{9f}'
        // Line and paragraph separators.
        | '\u{2028}' | '\u{2029}'
        // Bidirectional-text controls: marks, embeddings, overrides and isolates.
        | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Writes `s` with every escaped character (and, when `quoted`, `"` and `\`) replaced by its
/// escape.
pub(crate) fn escape_text(w: &mut impl fmt::Write, s: &str, quoted: bool) -> fmt::Result {
    let plain = |b: &u8| (0x20..0x7f).contains(b) && !(quoted && (*b == b'"' || *b == b'\\'));
    // Most values (ids, routes, numbers, messages) are printable ASCII: one scan, one write.
    if s.as_bytes().iter().all(plain) {
        return w.write_str(s);
    }
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let needs = is_escaped(c) || (quoted && (c == '"' || c == '\\'));
        if !needs {
            continue;
        }
        w.write_str(&s[start..i])?;
        match c {
            '\n' => w.write_str("\\n")?,
            '\r' => w.write_str("\\r")?,
            '\t' => w.write_str("\\t")?,
            '"' => w.write_str("\\\"")?,
            '\\' => w.write_str("\\\\")?,
            other => write!(w, "\\u{{{:x}}}", u32::from(other))?,
        }
        start = i + c.len_utf8();
    }
    w.write_str(&s[start..])
}

/// Escapes whatever is written through it (a `Debug` or `Display` value, piece by piece).
pub(crate) struct Escaping<'a, W: fmt::Write>(pub(crate) &'a mut W);

impl<W: fmt::Write> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape_text(self.0, s, false)
    }
}

/// Text fields: `name=value`, space-separated, the message first as it stands; strings quoted.
/// Every value escaped as the module says.
pub(crate) struct TextFields;

impl<'w> FormatFields<'w> for TextFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = TextVisitor {
            w: &mut writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct TextVisitor<'a, W: fmt::Write> {
    w: &'a mut W,
    first: bool,
    result: fmt::Result,
}

impl<W: fmt::Write> TextVisitor<'_, W> {
    /// Writes the separator and, but for the message, `name=`; false for a field not written.
    fn start(&mut self, field: &Field) -> Result<bool, fmt::Error> {
        let name = field.name();
        // The `log` crate's metadata, already in the line's own parts.
        if name.starts_with("log.") {
            return Ok(false);
        }
        if !self.first {
            self.w.write_char(' ')?;
        }
        self.first = false;
        if name != "message" {
            self.w.write_str(name.strip_prefix("r#").unwrap_or(name))?;
            self.w.write_char('=')?;
        }
        Ok(true)
    }
}

impl<W: fmt::Write> Visit for TextVisitor<'_, W> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        self.result = self.start(field).and_then(|written| {
            if !written {
                return Ok(());
            }
            if field.name() == "message" {
                return escape_text(self.w, value, false);
            }
            self.w.write_char('"')?;
            escape_text(self.w, value, true)?;
            self.w.write_char('"')
        });
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if self.result.is_err() {
            return;
        }
        self.result = self.start(field).and_then(|written| {
            if !written {
                return Ok(());
            }
            // The error and its causes, as one value.
            let mut escaped = Escaping(&mut *self.w);
            fmt::Write::write_fmt(&mut escaped, format_args!("{value}"))?;
            let mut source = value.source();
            while let Some(cause) = source {
                fmt::Write::write_fmt(&mut escaped, format_args!(": {cause}"))?;
                source = cause.source();
            }
            Ok(())
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        self.result = self.start(field).and_then(|written| {
            if !written {
                return Ok(());
            }
            fmt::Write::write_fmt(&mut Escaping(&mut *self.w), format_args!("{value:?}"))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(s: &str, quoted: bool) -> String {
        let mut out = String::new();
        escape_text(&mut out, s, quoted).unwrap();
        out
    }

    #[test]
    fn nothing_that_breaks_or_reorders_a_line_is_written_as_it_is() {
        assert_eq!(escaped("plain text é 1.5", false), "plain text é 1.5");
        assert_eq!(
            escaped("a\nb\r\nc\td\u{1b}[31m\u{7f}", false),
            "a\\nb\\r\\nc\\td\\u{1b}[31m\\u{7f}"
        );
        assert_eq!(
            escaped("\u{85}\u{9b}\u{2028}\u{2029}", false),
            "\\u{85}\\u{9b}\\u{2028}\\u{2029}"
        );
        assert_eq!(
            escaped("\u{202e}gnp.exe\u{2066}\u{200f}\u{61c}", false),
            "\\u{202e}gnp.exe\\u{2066}\\u{200f}\\u{61c}"
        );
        assert_eq!(escaped(r#"say "hi" \ bye"#, false), r#"say "hi" \ bye"#);
        assert_eq!(escaped(r#"say "hi" \ bye"#, true), r#"say \"hi\" \\ bye"#);
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let out = escaped(&c.to_string(), false);
            assert!(!out.chars().any(is_escaped), "{c:?} written as {out:?}");
        }
    }
}
