//! ZIP validation before a pack becomes visible: a real archive, bounded entries, safe names,
//! nothing encrypted, and every entry inflated as a stream with its CRC checked (that is what
//! "intact" means) under caps on total size and compression ratio, so a bomb is refused
//! without ever being inflated in memory.

use std::io::{Read, Seek};

use crate::config::SharepackSettings;

/// Entries smaller than this may compress at any ratio (small text files often do).
const RATIO_FREE_BYTES: u64 = 1024 * 1024;

/// What a valid pack holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZipSummary {
    /// Entries, directories included.
    pub entries: usize,
    /// Bytes once inflated.
    pub uncompressed_bytes: u64,
}

/// Why a pack was refused; the message names the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZipProblem {
    /// Not a ZIP archive at all (or its directory is unreadable).
    #[error("not a ZIP archive")]
    NotAZip,
    /// Too many entries.
    #[error("the archive has {0} entries; at most {1}")]
    TooManyEntries(usize, usize),
    /// An entry's name is unsafe to extract.
    #[error(
        "entry {0:?}: the name must be a relative path without '..', backslashes, drive letters or NUL"
    )]
    UnsafeName(String),
    /// An entry is encrypted.
    #[error("entry {0:?}: encrypted entries are not accepted")]
    Encrypted(String),
    /// An entry is damaged (bad CRC, truncated, unsupported method).
    #[error("entry {0:?}: damaged ({1})")]
    Damaged(String, String),
    /// The archive inflates past the cap.
    #[error("the archive inflates to more than {0} bytes")]
    TooLarge(u64),
    /// An entry compresses suspiciously well.
    #[error("entry {0:?}: compression ratio over {1}:1")]
    Bomb(String, u64),
}

/// Whether a raw entry name is a safe relative path.
fn safe_name(raw: &[u8]) -> bool {
    let Ok(name) = std::str::from_utf8(raw) else {
        // Legacy code-page names: judged on their bytes alone.
        return !raw.is_empty() && !raw.contains(&0) && !raw.contains(&b'\\') && raw[0] != b'/';
    };
    let drive =
        name.len() >= 2 && name.as_bytes()[1] == b':' && name.as_bytes()[0].is_ascii_alphabetic();
    !name.is_empty()
        && !name.contains('\0')
        && !name.contains('\\')
        && !name.starts_with('/')
        && !drive
        && name.split('/').all(|segment| segment != "..")
}

/// Checks the archive read from `reader` against `limits`.
pub fn check<R: Read + Seek>(
    reader: R,
    limits: &SharepackSettings,
) -> Result<ZipSummary, ZipProblem> {
    let mut archive = zip::ZipArchive::new(reader).map_err(|_| ZipProblem::NotAZip)?;
    if archive.len() > limits.max_entries {
        return Err(ZipProblem::TooManyEntries(
            archive.len(),
            limits.max_entries,
        ));
    }
    let mut total = 0u64;
    let mut buffer = vec![0u8; 64 * 1024];
    for i in 0..archive.len() {
        let (name, encrypted, compressed) = {
            let raw = archive
                .by_index_raw(i)
                .map_err(|e| ZipProblem::Damaged(format!("#{i}"), e.to_string()))?;
            let name = String::from_utf8_lossy(raw.name_raw()).into_owned();
            if !safe_name(raw.name_raw()) {
                return Err(ZipProblem::UnsafeName(name));
            }
            (name, raw.encrypted(), raw.compressed_size())
        };
        if encrypted {
            return Err(ZipProblem::Encrypted(name));
        }
        let mut entry = archive
            .by_index(i)
            .map_err(|e| ZipProblem::Damaged(name.clone(), e.to_string()))?;
        // Count what actually comes out, not what the headers claim.
        let mut inflated = 0u64;
        loop {
            let n = entry
                .read(&mut buffer)
                .map_err(|e| ZipProblem::Damaged(name.clone(), e.to_string()))?;
            if n == 0 {
                break;
            }
            inflated += n as u64;
            total += n as u64;
            if total > limits.max_uncompressed_bytes {
                return Err(ZipProblem::TooLarge(limits.max_uncompressed_bytes));
            }
            if inflated > RATIO_FREE_BYTES
                && inflated > compressed.max(1).saturating_mul(limits.max_ratio)
            {
                return Err(ZipProblem::Bomb(name, limits.max_ratio));
            }
        }
    }
    Ok(ZipSummary {
        entries: archive.len(),
        uncompressed_bytes: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_safe_relative_paths() {
        for good in ["setup.json", "laps/ref lap.json", "a/b/c..d", "notes/"] {
            assert!(safe_name(good.as_bytes()), "{good}");
        }
        for bad in [
            "",
            "../evil",
            "a/../../evil",
            "/etc/passwd",
            "C:/x",
            "c:x",
            "a\\b",
            "a\0b",
        ] {
            assert!(!safe_name(bad.as_bytes()), "{bad}");
        }
    }
}
