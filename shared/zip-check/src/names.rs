//! Entry names as the extractors of those who receive the pack will see them, and the rules
//! they must keep so that extracting a pack on Windows, macOS or Linux writes only inside the
//! chosen folder, only plain files, each once.
//!
//! A name is read the ways readers read it: as UTF-8 when the entry's UTF-8 flag is set, else
//! as code page 437 (the ZIP standard's default) and, when the bytes are also valid UTF-8, as
//! UTF-8 too (tools that write UTF-8 without the flag exist, and readers guess); an Info-ZIP
//! Unicode Path field is another reading. Every reading must keep every rule. The structural
//! characters (`/ \ . :` and the other ASCII) are the same in every ASCII-based code page.

use std::collections::HashMap;
use std::hash::BuildHasher;

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;

use hidden_characters::is_invisible_or_bidi;

/// The longest entry name accepted, in bytes (Windows paths hold 260 characters by default).
pub(super) const MAX_NAME_BYTES: usize = 1024;

/// Code page 437, bytes 0x80 to 0xFF (the lower half is ASCII).
const CP437_HIGH: [char; 128] = [
    'Ç', 'ü', 'é', 'â', 'ä', 'à', 'å', 'ç', 'ê', 'ë', 'è', 'ï', 'î', 'ì', 'Ä', 'Å', 'É', 'æ', 'Æ',
    'ô', 'ö', 'ò', 'û', 'ù', 'ÿ', 'Ö', 'Ü', '¢', '£', '¥', '₧', 'ƒ', 'á', 'í', 'ó', 'ú', 'ñ', 'Ñ',
    'ª', 'º', '¿', '⌐', '¬', '½', '¼', '¡', '«', '»', '░', '▒', '▓', '│', '┤', '╡', '╢', '╖', '╕',
    '╣', '║', '╗', '╝', '╜', '╛', '┐', '└', '┴', '┬', '├', '─', '┼', '╞', '╟', '╚', '╔', '╩', '╦',
    '╠', '═', '╬', '╧', '╨', '╤', '╥', '╙', '╘', '╒', '╓', '╫', '╪', '┘', '┌', '█', '▄', '▌', '▐',
    '▀', 'α', 'ß', 'Γ', 'π', 'Σ', 'σ', 'µ', 'τ', 'Φ', 'Θ', 'Ω', 'δ', '∞', 'φ', 'ε', '∩', '≡', '±',
    '≥', '≤', '⌠', '⌡', '÷', '≈', '°', '∙', '·', '√', 'ⁿ', '²', '■', '\u{a0}',
];

/// `raw` decoded as code page 437.
pub(super) fn cp437(raw: &[u8]) -> String {
    raw.iter()
        .map(|&b| {
            if b < 0x80 {
                char::from(b)
            } else {
                CP437_HIGH[usize::from(b - 0x80)]
            }
        })
        .collect()
}

/// The name of an entry for messages: what readers show (UTF-8, else code page 437).
pub(super) fn shown(raw: &[u8], utf8_flag: bool) -> String {
    match std::str::from_utf8(raw) {
        Ok(name) if utf8_flag => name.to_owned(),
        _ => cp437(raw),
    }
}

/// Every way readers read the name `raw` (with the entry's UTF-8 flag and its Unicode Path
/// field, if any), or the rule the name breaks.
pub(super) fn readings(
    raw: &[u8],
    utf8_flag: bool,
    unicode_path: Option<&[u8]>,
) -> Result<Vec<String>, String> {
    let mut readings = Vec::with_capacity(3);
    match std::str::from_utf8(raw) {
        Ok(name) => readings.push(name.to_owned()),
        Err(_) if utf8_flag => {
            return Err("the name is marked UTF-8 but is not valid UTF-8".into());
        }
        Err(_) => {}
    }
    if !utf8_flag {
        let legacy = cp437(raw);
        if !readings.contains(&legacy) {
            readings.push(legacy);
        }
    }
    if let Some(path) = unicode_path {
        let path = std::str::from_utf8(path)
            .map_err(|_| "its Unicode Path field is not valid UTF-8".to_owned())?;
        if !readings.iter().any(|r| r == path) {
            readings.push(path.to_owned());
        }
    }
    Ok(readings)
}

/// Windows device names: a path segment whose part before the first dot (trailing spaces
/// dropped) is one of these opens the device, whatever the extension (`aux.txt`, `con .log`).
fn is_device_name(segment: &str) -> bool {
    let base = segment.split('.').next().unwrap_or_default().trim_end();
    let upper = base.to_ascii_uppercase();
    if matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) {
        return true;
    }
    let mut chars = base.chars();
    let prefix: String = chars.by_ref().take(3).collect();
    let rest: Vec<char> = chars.collect();
    (prefix.eq_ignore_ascii_case("COM") || prefix.eq_ignore_ascii_case("LPT"))
        && rest.len() == 1
        && (rest[0].is_ascii_digit() || matches!(rest[0], '¹' | '²' | '³'))
}

/// The rule that one reading of a name breaks, if any.
pub(super) fn broken_rule(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(format!("the name is longer than {MAX_NAME_BYTES} bytes"));
    }
    if name.chars().any(char::is_control) {
        return Some("the name holds control characters (NUL included)".into());
    }
    if name.chars().any(is_invisible_or_bidi) {
        return Some("the name holds invisible or text-direction characters".into());
    }
    if name.contains('\\') {
        return Some("backslashes are path separators on Windows; use '/'".into());
    }
    if name.starts_with('/') {
        return Some("absolute paths are not accepted".into());
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Some("drive letters are not accepted".into());
    }
    if name.contains(':') {
        return Some("':' would name an NTFS alternate data stream".into());
    }
    if let Some(c) = name.chars().find(|c| "<>\"|?*".contains(*c)) {
        return Some(format!("{c:?} is not allowed in Windows file names"));
    }
    let path = name.strip_suffix('/').unwrap_or(name);
    for segment in path.split('/') {
        let trimmed = segment.trim_end_matches(['.', ' ']);
        if segment.is_empty() {
            return Some("empty path segments ('//') are not accepted".into());
        }
        if segment == ".." || (trimmed.is_empty() && segment.starts_with("..")) {
            return Some(format!(
                "the segment {segment:?} leads to the parent folder ('..' segments are not accepted; Windows drops trailing dots and spaces)"
            ));
        }
        if trimmed.is_empty() {
            return Some(format!("the segment {segment:?} is not a name"));
        }
        if trimmed.len() != segment.len() {
            return Some(format!(
                "the segment {segment:?} ends with a dot or a space, which Windows drops"
            ));
        }
        if is_device_name(segment) {
            return Some(format!("{segment:?} is a Windows device name"));
        }
    }
    None
}

/// A path as file systems compare them, or stricter: Unicode-normalized (macOS treats `é`
/// composed and decomposed as one name) and case-folded (Windows and macOS ignore case).
/// Full Unicode case folding, not lowering: lowering leaves a long s (`ſ`), a Kelvin sign or
/// a final sigma as they are, where folding makes them `s`, `k` and `σ`, as a case-insensitive
/// file system may. Done as Unicode's canonical caseless match does it (decomposed, folded,
/// normalized again, since folding can decompose), answered in NFC.
fn comparable(path: &str) -> String {
    path.nfd().default_case_fold().nfc().collect()
}

/// The paths extracted so far, compared as Windows and macOS compare them (Unicode-normalized,
/// case-folded), to find two entries that would land on the same file, or a file where a
/// folder is needed.
/// Paths are kept as keyed 64-bit hashes, so the memory of a check grows with the entries and
/// the depth of their paths, never with the length of their names.
#[derive(Debug, Default)]
pub(super) struct Paths {
    hasher: std::hash::RandomState,
    /// Every entry's path (without a trailing `/`): the entry's index and whether it is a
    /// folder.
    entries: HashMap<u64, (usize, bool)>,
    /// Every folder the entries need (the prefixes of their paths): the first entry needing it.
    folders: HashMap<u64, usize>,
}

impl Paths {
    /// Adds entry `index` under each of its `readings`; the index of an earlier entry it
    /// clashes with, if any.
    pub(super) fn add(&mut self, index: usize, readings: &[String]) -> Result<(), usize> {
        for reading in readings {
            let is_folder = reading.ends_with('/');
            let path = comparable(reading.trim_end_matches('/'));
            let key = self.hasher.hash_one(&path);
            if let Some(&(other, _)) = self.entries.get(&key)
                && other != index
            {
                return Err(other);
            }
            if !is_folder && let Some(&other) = self.folders.get(&key) {
                return Err(other);
            }
            for (slash, _) in path.match_indices('/') {
                let folder = self.hasher.hash_one(&path[..slash]);
                if let Some(&(other, false)) = self.entries.get(&folder) {
                    return Err(other);
                }
                self.folders.entry(folder).or_insert(index);
            }
            self.entries.insert(key, (index, is_folder));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_pass() {
        for good in [
            "setup.json",
            "laps/ref lap.json",
            "a/b/c..d",
            "notes/",
            "Kimi Räikkönen/setup.json",
            "..hidden",
            "console.txt",
            "com10.txt",
            "auxiliary/x",
        ] {
            assert_eq!(broken_rule(good), None, "{good}");
        }
    }

    #[test]
    fn unsafe_names_are_refused() {
        for bad in [
            "",
            "../evil",
            "a/../../evil",
            ".. /evil",
            "a/... /x",
            "a/../",
            "./x",
            "/etc/passwd",
            "C:/x",
            "c:x",
            "a\\b",
            "a\0b",
            "notes.txt:hidden",
            "CON",
            "con",
            "aux.txt",
            "dir/Nul.tar.gz",
            "LPT1",
            "com9.log",
            "COM¹",
            "CON .txt",
            "a//b",
            "trailing.",
            "trailing ",
            "what?.txt",
            "evil\u{202E}txt.exe",
            &"x".repeat(MAX_NAME_BYTES + 1),
        ] {
            assert!(broken_rule(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn legacy_names_are_read_as_code_page_437() {
        assert_eq!(cp437(b"../evil\xff.txt"), "../evil\u{a0}.txt");
        assert_eq!(cp437(b"caf\x82"), "café");
        let r = readings(b"../evil\xff.txt", false, None).unwrap();
        assert_eq!(r, vec!["../evil\u{a0}.txt".to_owned()]);
        assert!(broken_rule(&r[0]).is_some());
        // UTF-8 bytes without the flag: both readings are checked.
        let r = readings("é".as_bytes(), false, None).unwrap();
        assert_eq!(r, vec!["é".to_owned(), "├⌐".to_owned()]);
        assert!(
            readings(b"\xff", true, None).is_err(),
            "flagged but not UTF-8"
        );
        let r = readings(b"a.txt", false, Some(b"../evil.txt")).unwrap();
        assert!(r.iter().any(|n| broken_rule(n).is_some()));
    }

    #[test]
    fn clashing_paths_are_found_ignoring_case() {
        let mut p = Paths::default();
        p.add(0, &["Setup.json".into()]).unwrap();
        assert_eq!(p.add(1, &["setup.JSON".into()]), Err(0));
        p.add(2, &["laps/".into()]).unwrap();
        p.add(3, &["laps/a.json".into()]).unwrap();
        assert_eq!(p.add(4, &["LAPS/A.json".into()]), Err(3));
        assert_eq!(
            p.add(5, &["laps/a.json/x".into()]),
            Err(3),
            "a file as a folder"
        );
        assert_eq!(p.add(6, &["LAPS".into()]), Err(2), "a file over a folder");
        assert_eq!(p.add(7, &["laps/".into()]), Err(2), "a folder twice");
    }

    #[test]
    fn clashing_paths_are_found_once_case_folded() {
        let mut p = Paths::default();
        p.add(0, &["setup.json".into()]).unwrap();
        // A long s folds to s; lowering keeps it.
        assert_eq!(p.add(1, &["\u{17f}etup.json".into()]), Err(0));
        assert_eq!(p.add(2, &["SETUP.JSON".into()]), Err(0));
        // The Kelvin sign folds to k, a final sigma to sigma, sharp s to ss.
        p.add(3, &["kart/".into()]).unwrap();
        assert_eq!(p.add(4, &["\u{212a}art".into()]), Err(3));
        p.add(5, &["\u{3c3}\u{3c3}.txt".into()]).unwrap();
        assert_eq!(p.add(6, &["\u{3c3}\u{3c2}.txt".into()]), Err(5));
        p.add(7, &["stra\u{df}e.txt".into()]).unwrap();
        assert_eq!(p.add(8, &["STRASSE.txt".into()]), Err(7));
        // A folded character inside a folder's name clashes too.
        p.add(9, &["la\u{17f}t/a.json".into()]).unwrap();
        assert_eq!(p.add(10, &["LAST".into()]), Err(9), "a file over a folder");
        p.add(11, &["setups.json".into()]).unwrap();
    }

    #[test]
    fn clashing_paths_are_found_once_normalized() {
        let (composed, decomposed) = ("caf\u{e9}.txt", "cafe\u{301}.txt");
        let mut p = Paths::default();
        p.add(0, &[composed.into()]).unwrap();
        assert_eq!(p.add(1, &[decomposed.into()]), Err(0));
        assert_eq!(
            p.add(2, &["CAFE\u{301}.TXT".into()]),
            Err(0),
            "and in upper case"
        );
        p.add(3, &["r\u{e9}sum\u{e9}/".into()]).unwrap();
        assert_eq!(
            p.add(4, &["Re\u{301}sume\u{301}".into()]),
            Err(3),
            "a file over a folder spelled otherwise"
        );
        p.add(5, &["cafe.txt".into()]).unwrap();
    }
}
