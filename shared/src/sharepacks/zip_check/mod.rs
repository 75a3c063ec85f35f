//! ZIP validation before a pack becomes visible, in the order that keeps a check's memory
//! bounded whatever the archive declares:
//!
//! 1. the end record ([`end_record`]): entries and directory size are refused over the limits
//!    before any of the directory is read, and bytes before or after the archive are refused;
//! 2. the directory, walked record by record ([`directory`]): every name as readers read it
//!    ([`names`]), plain files and folders only, no two entries on one path, local headers
//!    that agree with the directory;
//! 3. every entry inflated as a stream with its CRC checked (that is what "intact" means),
//!    under caps on total size and compression ratio, so a bomb is refused without ever being
//!    inflated in memory. An entry that is itself a ZIP is spooled to an unnamed temporary
//!    file and checked by the same rules, one level deep (drivers share Office documents and
//!    other ZIP-based files; an archive inside those is refused).

mod directory;
mod end_record;
mod names;

use std::io::{Read, Seek, SeekFrom, Write};

use crate::config::SharepackSettings;

/// Entries smaller than this may compress at any ratio (small text files often do).
const RATIO_FREE_BYTES: u64 = 1024 * 1024;
/// Directory bytes allowed per entry allowed: a record is 46 bytes, a name at most 1 KiB.
const DIRECTORY_BYTES_PER_ENTRY: u64 = 2048;
/// The largest ZIP inside a pack that is checked (it is spooled to disk to be read).
const NESTED_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How deep archives may nest: a ZIP in the pack, nothing inside that.
const MAX_DEPTH: u8 = 1;

const LOCAL_SIGNATURE: &[u8; 4] = b"PK\x03\x04";
const END_SIGNATURE: &[u8; 4] = b"PK\x05\x06";
/// The end record and the longest comment: where readers look for an archive's end.
const TAIL_BYTES: usize = 22 + u16::MAX as usize;

/// What a valid pack holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZipSummary {
    /// Entries, directories included.
    pub entries: usize,
    /// Bytes once inflated (nested archives' entries counted again).
    pub uncompressed_bytes: u64,
}

/// Why a pack was refused; the message names the entry and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZipProblem {
    /// Not a ZIP archive at all (no end record).
    #[error("not a ZIP archive")]
    NotAZip,
    /// The end record declares too many entries.
    #[error("the archive declares {0} entries; at most {1}")]
    TooManyEntries(u64, usize),
    /// The directory is larger than the entries allowed can need.
    #[error("the archive's directory is {0} bytes; at most {1}")]
    DirectoryTooLarge(u64, u64),
    /// Bytes before, between or after the archive's parts.
    #[error("data outside the archive: {0}")]
    StrayData(String),
    /// A structure readers would read differently.
    #[error("not a well-formed ZIP archive: {0}")]
    Malformed(String),
    /// An entry's name is unsafe to extract: the entry and the rule.
    #[error("entry {0:?}: {1}")]
    UnsafeName(String, String),
    /// An entry is a link, a device or another special file.
    #[error("entry {0:?}: {1}")]
    NotPlainFile(String, &'static str),
    /// Two entries land on the same path (or a file where a folder is needed).
    #[error(
        "entry {0:?}: clashes with entry {1:?} (the same path ignoring case, as Windows and macOS compare them, or a file where a folder is needed)"
    )]
    SamePath(String, String),
    /// A ZIP inside the pack breaks a rule.
    #[error("entry {0:?} is a ZIP archive, and in it: {1}")]
    Nested(String, Box<ZipProblem>),
    /// A ZIP inside a ZIP inside the pack.
    #[error("entry {0:?}: archives inside archives inside a pack are not accepted")]
    NestedTooDeep(String),
    /// A ZIP inside the pack too large to check.
    #[error("entry {0:?}: a ZIP archive inside a pack may be at most {1} bytes")]
    NestedTooLarge(String, u64),
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

impl ZipProblem {
    /// The innermost problem (for a nested archive, what was wrong inside it).
    pub fn innermost(&self) -> &Self {
        match self {
            Self::Nested(_, inner) => inner.innermost(),
            other => other,
        }
    }
}

pub(crate) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

pub(crate) fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

/// Checks the archive read from `reader` against `limits`.
pub fn check<R: Read + Seek>(
    reader: R,
    limits: &SharepackSettings,
) -> Result<ZipSummary, ZipProblem> {
    let mut inflated = 0;
    let entries = check_archive(reader, limits, 0, &mut inflated)?;
    Ok(ZipSummary {
        entries,
        uncompressed_bytes: inflated,
    })
}

/// Checks one archive (the pack, or a ZIP in it at `depth` 1); answers its entry count and
/// adds what it inflates to `inflated`.
fn check_archive<R: Read + Seek>(
    mut reader: R,
    limits: &SharepackSettings,
    depth: u8,
    inflated: &mut u64,
) -> Result<usize, ZipProblem> {
    let end = end_record::read(&mut reader)?;
    if end.entries > limits.max_entries as u64 {
        return Err(ZipProblem::TooManyEntries(end.entries, limits.max_entries));
    }
    let directory_max = (limits.max_entries as u64).saturating_mul(DIRECTORY_BYTES_PER_ENTRY);
    let directory_size = end.directory_end - end.directory_offset;
    if directory_size > directory_max {
        return Err(ZipProblem::DirectoryTooLarge(directory_size, directory_max));
    }
    let entries = directory::walk(&mut reader, &end)?;
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| ZipProblem::Damaged("the archive".into(), e.to_string()))?;
    let mut archive = zip::ZipArchive::new(reader).map_err(|_| ZipProblem::NotAZip)?;
    if archive.len() != entries.len()
        || archive.offset() != 0
        || archive.central_directory_start() != end.directory_offset
    {
        return Err(ZipProblem::Malformed(
            "readers would disagree about its directory".into(),
        ));
    }
    let mut buffer = vec![0u8; 64 * 1024];
    for (i, expected) in entries.iter().enumerate() {
        let name = &expected.name;
        if expected.encrypted {
            return Err(ZipProblem::Encrypted(name.clone()));
        }
        let compressed = {
            let raw = archive
                .by_index_raw(i)
                .map_err(|e| ZipProblem::Damaged(name.clone(), e.to_string()))?;
            if raw.name_raw() != expected.raw_name.as_slice() || raw.encrypted() {
                return Err(ZipProblem::Malformed(format!(
                    "readers would disagree about entry {name:?}"
                )));
            }
            raw.compressed_size()
        };
        let mut entry = archive
            .by_index(i)
            .map_err(|e| ZipProblem::Damaged(name.clone(), e.to_string()))?;
        let mut seen = Contents::default();
        let mut spool: Option<std::fs::File> = None;
        // Count what actually comes out, not what the headers claim.
        let mut out = 0u64;
        loop {
            let n = entry
                .read(&mut buffer)
                .map_err(|e| ZipProblem::Damaged(name.clone(), e.to_string()))?;
            if n == 0 {
                break;
            }
            let chunk = &buffer[..n];
            out += n as u64;
            *inflated += n as u64;
            if *inflated > limits.max_uncompressed_bytes {
                return Err(ZipProblem::TooLarge(limits.max_uncompressed_bytes));
            }
            if out > RATIO_FREE_BYTES && out > compressed.max(1).saturating_mul(limits.max_ratio) {
                return Err(ZipProblem::Bomb(name.clone(), limits.max_ratio));
            }
            let earlier = seen.head.clone();
            if seen.push(chunk) && spool.is_none() {
                if depth >= MAX_DEPTH {
                    return Err(ZipProblem::NestedTooDeep(name.clone()));
                }
                let mut file = tempfile::tempfile().map_err(|e| spooling(name, &e))?;
                file.write_all(&earlier).map_err(|e| spooling(name, &e))?;
                spool = Some(file);
            }
            if let Some(file) = spool.as_mut() {
                if out > NESTED_MAX_BYTES {
                    return Err(ZipProblem::NestedTooLarge(name.clone(), NESTED_MAX_BYTES));
                }
                file.write_all(chunk).map_err(|e| spooling(name, &e))?;
            }
        }
        if let Some(file) = spool {
            check_archive(file, limits, depth + 1, inflated)
                .map_err(|inner| ZipProblem::Nested(name.clone(), Box::new(inner)))?;
        } else if seen.ends_like_an_archive() {
            // A ZIP with bytes in front (a self-extractor, or a disguise): archive tools
            // open it, and it cannot be checked as one.
            return Err(ZipProblem::Nested(
                name.clone(),
                Box::new(ZipProblem::StrayData(
                    "bytes come before the archive".into(),
                )),
            ));
        }
    }
    Ok(entries.len())
}

fn spooling(name: &str, e: &std::io::Error) -> ZipProblem {
    ZipProblem::Damaged(
        name.to_owned(),
        format!("could not be spooled to be checked: {e}"),
    )
}

/// The start and the end of an entry's bytes, to tell a ZIP inside the pack: readers know one
/// by a local header at its start or an end record at its end.
#[derive(Debug, Default)]
struct Contents {
    /// Up to the first four bytes.
    head: Vec<u8>,
    /// The last [`TAIL_BYTES`] bytes.
    tail: Vec<u8>,
}

impl Contents {
    /// Adds `chunk`; whether the bytes start like a ZIP (known once four bytes came).
    fn push(&mut self, chunk: &[u8]) -> bool {
        if self.head.len() < 4 {
            let take = (4 - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        if chunk.len() >= TAIL_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&chunk[chunk.len() - TAIL_BYTES..]);
        } else {
            self.tail.extend_from_slice(chunk);
            let excess = self.tail.len().saturating_sub(TAIL_BYTES);
            self.tail.drain(..excess);
        }
        self.head.as_slice() == LOCAL_SIGNATURE || self.head.as_slice() == END_SIGNATURE
    }

    /// Whether the bytes end with an end record whose comment reaches the end exactly, as
    /// readers find an archive's end.
    fn ends_like_an_archive(&self) -> bool {
        let t = &self.tail;
        t.len() >= 22
            && (0..=t.len() - 22).rev().any(|i| {
                &t[i..i + 4] == END_SIGNATURE && i + 22 + usize::from(le16(t, i + 20)) == t.len()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use zip::write::SimpleFileOptions;

    fn limits() -> SharepackSettings {
        SharepackSettings::default()
    }

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in entries {
            w.start_file(*name, SimpleFileOptions::default()).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn a_plain_pack_passes() {
        let bytes = zip_of(&[
            ("setup.json", b"{}"),
            ("laps/", b""),
            ("laps/a.json", b"[]"),
        ]);
        let summary = check(Cursor::new(bytes), &limits()).unwrap();
        assert_eq!(summary.entries, 3);
        assert_eq!(summary.uncompressed_bytes, 4);
        let empty = zip_of(&[]);
        assert_eq!(check(Cursor::new(empty), &limits()).unwrap().entries, 0);
    }

    #[test]
    fn counts_and_directory_size_are_refused_from_the_end_record() {
        let limits = SharepackSettings {
            max_entries: 2,
            ..limits()
        };
        let three = zip_of(&[("a", b""), ("b", b""), ("c", b"")]);
        assert_eq!(
            check(Cursor::new(three), &limits),
            Err(ZipProblem::TooManyEntries(3, 2))
        );
        let long = "n".repeat(3000);
        let wide = zip_of(&[(long.as_str(), b""), (&format!("{long}2"), b"")]);
        assert!(matches!(
            check(Cursor::new(wide), &limits),
            Err(ZipProblem::DirectoryTooLarge(_, 4096))
        ));
    }

    #[test]
    fn nested_archives_are_checked_one_level_deep() {
        let inner = zip_of(&[("notes.txt", b"fine")]);
        let outer = zip_of(&[("team.zip", &inner)]);
        assert_eq!(check(Cursor::new(outer), &limits()).unwrap().entries, 1);
        let evil = zip_of(&[("../../evil.txt", b"x")]);
        let outer = zip_of(&[("team.zip", &evil)]);
        let e = check(Cursor::new(outer), &limits()).unwrap_err();
        assert!(matches!(e.innermost(), ZipProblem::UnsafeName(n, _) if n == "../../evil.txt"));
        assert!(
            e.to_string()
                .starts_with("entry \"team.zip\" is a ZIP archive"),
            "{e}"
        );
        let deeper = zip_of(&[("a.zip", &zip_of(&[("b.zip", &inner)]))]);
        let e = check(Cursor::new(deeper), &limits()).unwrap_err();
        assert!(
            matches!(e.innermost(), ZipProblem::NestedTooDeep(n) if n == "b.zip"),
            "{e}"
        );
        let mut disguised = b"#!/bin/sh\nexit 0\n".to_vec();
        disguised.extend_from_slice(&evil);
        let e = check(Cursor::new(zip_of(&[("run.sh", &disguised)])), &limits()).unwrap_err();
        assert!(matches!(e.innermost(), ZipProblem::StrayData(_)), "{e}");
    }
}
