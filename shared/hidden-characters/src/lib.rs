//! Characters that change how the text around them is shown without being seen themselves.
//!
//! One rule for every text another person reads: display names, feed posts, share-pack and
//! league names and the game, track and car names of an upload refuse them at input, and the
//! public pages neutralise any an older record still holds. A crate of its own, with no
//! dependencies, so that the ZIP checker (entry names) and Paddock's domain share the one list.

#![warn(missing_docs)]

/// Whether `c` is a bidirectional control (which can reverse text on screen) or a zero-width
/// or otherwise invisible character (which makes two names that look the same differ).
/// Variation selectors and tag characters stay allowed: emoji need them (❤️, subdivision
/// flags).
pub fn is_invisible_or_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// The rule a text holding such a character breaks, as a field's error names it.
pub const RULE: &str =
    "must not contain invisible or text-direction characters (such as U+200B or U+202E)";

/// A text another person reads (a pack's or a league's name, a feed post): at most `max`
/// characters as sent, at least `min` after trimming, no control, invisible or text-direction
/// characters. Answers it trimmed, or the rule it breaks as a field's error names it.
pub fn shown_text(raw: &str, min: usize, max: usize) -> Result<String, String> {
    let text = raw.trim();
    if text.chars().count() < min {
        return Err("must not be empty".into());
    }
    if raw.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    if text.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    if text.chars().any(is_invisible_or_bidi) {
        return Err(RULE.into());
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_and_zero_width_characters_are_hidden_but_emoji_parts_are_not() {
        for c in [
            '\u{202E}', '\u{2066}', '\u{200B}', '\u{FEFF}', '\u{3164}', '\u{00AD}',
        ] {
            assert!(is_invisible_or_bidi(c), "{:04X}", c as u32);
        }
        for c in ['a', 'ë', '\u{FE0F}', '\u{E0067}', '🏁', ' '] {
            assert!(!is_invisible_or_bidi(c), "{:04X}", c as u32);
        }
    }

    #[test]
    fn shown_text_is_trimmed_and_bounded_as_sent() {
        assert_eq!(shown_text("  Monza  ", 1, 9).as_deref(), Ok("Monza"));
        assert_eq!(shown_text("   ", 1, 9), Err("must not be empty".into()));
        assert_eq!(shown_text("", 0, 9).as_deref(), Ok(""));
        // Counted in characters, before trimming.
        assert!(shown_text("ëëëë", 1, 4).is_ok());
        assert!(shown_text(" ëëëë", 1, 4).unwrap_err().contains("at most 4"));
        assert!(shown_text("a\u{7}b", 1, 9).unwrap_err().contains("control"));
        assert_eq!(shown_text("a\u{202E}b", 1, 9), Err(RULE.into()));
    }
}
