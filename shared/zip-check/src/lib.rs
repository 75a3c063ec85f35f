//! A ZIP archive checker: whether an archive is safe to hand to people who will extract it
//! with whatever tool they have. It knows nothing of where the archive comes from; the caps
//! it holds an archive to are a [`Limits`]. The archive checked is called the pack below and
//! in the messages of [`ZipProblem`], the archives inside it nested archives.
//!
//! The checks run in the order that keeps a check's memory bounded whatever the archive
//! declares:
//!
//! 1. the end record ([`end_record`]): entries and directory size are refused over the limits
//!    before any of the directory is read, and bytes before or after the archive are refused;
//!    the entry cap holds for the pack as a whole, so each archive inside it spends from what
//!    the pack and the archives before it left;
//! 2. the directory, walked record by record ([`directory`]): every name as readers read it
//!    ([`names`]), plain files and folders only, no two entries on one path (Unicode-normalized,
//!    case-folded), local headers and data descriptors that agree with the directory, and
//!    entries that account for every byte before the directory (a streaming extractor reads
//!    local headers one after another, so unlisted bytes could hold entries only it sees);
//! 3. every entry inflated as a stream with its CRC and size checked (that is what "intact"
//!    means), its compressed data read to its last byte (a deflate stream that ends early
//!    leaves bytes a streaming extractor reads as what follows),
//!    under caps on total size and compression ratio, so a bomb is refused without ever being
//!    inflated in memory. An entry that is itself a ZIP is spooled to an unnamed temporary
//!    file and checked by the same rules, one level deep (people share Office documents and
//!    other ZIP-based files; an archive inside those is refused).

#![warn(missing_docs)]

mod directory;
mod end_record;
mod names;
#[cfg(test)]
mod no_panic_tests;
#[cfg(test)]
mod tiling_tests;

use std::io::{Read, Seek, SeekFrom, Write};

/// The caps an archive is held to, together with the archives inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entries, those of the archives inside counted too.
    pub max_entries: usize,
    /// Most bytes the archive may inflate to (nested archives' entries counted again).
    pub max_uncompressed_bytes: u64,
    /// The highest compression ratio of an entry that inflates past 1 MiB.
    pub max_ratio: u64,
}

impl Default for Limits {
    /// 2,000 entries, 512 MiB inflated, a ratio of 200:1.
    fn default() -> Self {
        Self {
            max_entries: 2_000,
            max_uncompressed_bytes: 512 * 1024 * 1024,
            max_ratio: 200,
        }
    }
}

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
    /// An archive inside the pack brings the entries of the pack and the archives in it past
    /// the cap (which counts them all together).
    #[error(
        "with its entries the pack and the archives in it hold at least {0} entries; at most {1} in all"
    )]
    TooManyEntriesInAll(u64, usize),
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
        "entry {0:?}: clashes with entry {1:?} (the same path once Unicode-normalized and case-folded, as Windows and macOS compare them, or a file where a folder is needed)"
    )]
    SamePath(String, String),
    /// Bytes before the directory that no listed entry covers: a streaming extractor reads
    /// whatever local headers they hold, a directory reader never sees them.
    #[error("bytes at offset {from}..{to} belong to no entry (after {after}, before {before})")]
    Unaccounted {
        /// Where the bytes start.
        from: u64,
        /// Where they end.
        to: u64,
        /// What comes before them (an entry).
        after: String,
        /// What comes after them (an entry, or the directory).
        before: String,
    },
    /// An entry's bytes run into the next entry or the directory.
    #[error(
        "entry {entry:?}: its bytes run to offset {end}, past the start of {next} at offset {start} (entries must not overlap)"
    )]
    Overlap {
        /// The entry.
        entry: String,
        /// Where its local header, data and data descriptor end.
        end: u64,
        /// What it runs into (an entry, or the directory).
        next: String,
        /// Where that starts.
        start: u64,
    },
    /// An entry's local header says something else than the directory (a streaming
    /// extractor reads only the local header).
    #[error("entry {entry:?}: its local header says {what} {local}, the directory {directory}")]
    HeadersDisagree {
        /// The entry.
        entry: String,
        /// What differs: method, flags, CRC-32 or a size.
        what: &'static str,
        /// The local header's value.
        local: String,
        /// The directory's value.
        directory: String,
    },
    /// An entry's data descriptor is missing or says something else than the directory.
    #[error("entry {0:?}: its data descriptor {1}")]
    Descriptor(String, String),
    /// Bytes inside an entry's compressed data that its decompressor never reads (a
    /// streaming extractor reads on from where the data ends, not where the directory says).
    #[error("entry {0:?}: {1}")]
    HiddenInData(String, String),
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
pub fn check<R: Read + Seek>(reader: R, limits: &Limits) -> Result<ZipSummary, ZipProblem> {
    let mut spent = Spent::default();
    let entries = check_archive(reader, limits, 0, &mut spent)?;
    Ok(ZipSummary {
        entries,
        uncompressed_bytes: spent.inflated,
    })
}

/// What the archives of one pack checked so far took of its caps: the caps hold for the pack
/// with everything inside it, not for each archive.
#[derive(Debug, Default)]
struct Spent {
    /// Bytes inflated.
    inflated: u64,
    /// Entries declared (the pack's and those of the archives in it).
    entries: u64,
}

/// Checks one archive (the pack, or a ZIP in it at `depth` 1); answers its entry count and
/// adds its entries and what it inflates to `spent`.
fn check_archive<R: Read + Seek>(
    mut reader: R,
    limits: &Limits,
    depth: u8,
    spent: &mut Spent,
) -> Result<usize, ZipProblem> {
    let end = end_record::read(&mut reader)?;
    let max = limits.max_entries as u64;
    let left = max.saturating_sub(spent.entries);
    if end.entries > left {
        return Err(match depth {
            0 => ZipProblem::TooManyEntries(end.entries, limits.max_entries),
            _ => ZipProblem::TooManyEntriesInAll(
                spent.entries.saturating_add(end.entries),
                limits.max_entries,
            ),
        });
    }
    spent.entries += end.entries;
    // What the entries left to this archive can need (all of them, for the pack itself).
    let directory_max = left.saturating_mul(DIRECTORY_BYTES_PER_ENTRY);
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
        let raw = archive
            .by_index_raw(i)
            .map_err(|e| ZipProblem::Damaged(name.clone(), e.to_string()))?;
        if raw.name_raw() != expected.raw_name.as_slice() || raw.encrypted() {
            return Err(ZipProblem::Malformed(format!(
                "readers would disagree about entry {name:?}"
            )));
        }
        let (compressed, declared, crc) = (raw.compressed_size(), raw.size(), raw.crc32());
        let mut entry = Data::new(raw)
            .ok_or_else(|| ZipProblem::Damaged(name.clone(), "an unsupported method".into()))?;
        let mut seen = Contents::default();
        let mut spool: Option<std::fs::File> = None;
        let mut hasher = crc32fast::Hasher::new();
        let mut signature = SignatureSearch::default();
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
            hasher.update(chunk);
            if expected.ends_at_a_signature && signature.found_in(chunk) {
                return Err(ZipProblem::HiddenInData(
                    name.clone(),
                    "its data holds a data descriptor's signature, where streaming extractors end it (its local header gives no size)".into(),
                ));
            }
            out += n as u64;
            spent.inflated += n as u64;
            if spent.inflated > limits.max_uncompressed_bytes {
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
        let unread = entry.left_unread(compressed);
        if unread > 0 {
            return Err(ZipProblem::HiddenInData(
                name.clone(),
                format!(
                    "its compressed data ends {unread} bytes before its size says (streaming extractors read those bytes as what follows it)"
                ),
            ));
        }
        let computed = hasher.finalize();
        if computed != crc {
            return Err(ZipProblem::Damaged(
                name.clone(),
                format!("its CRC-32 is {computed:#010x}, its headers say {crc:#010x}"),
            ));
        }
        if out != declared {
            return Err(ZipProblem::Damaged(
                name.clone(),
                format!("it holds {out} bytes, its headers say {declared}"),
            ));
        }
        if let Some(file) = spool {
            check_archive(file, limits, depth + 1, spent)
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

/// An entry's data as it comes out: stored bytes as they are, deflated ones inflated (the
/// methods extractors commonly support; others are refused).
enum Data<R: Read> {
    Stored(R),
    Deflated(flate2::bufread::DeflateDecoder<std::io::BufReader<R>>),
}

impl<'a, R: Read> Data<zip::read::ZipFile<'a, R>> {
    /// The reader of a raw (still compressed) entry; `None` for a method not supported.
    fn new(raw: zip::read::ZipFile<'a, R>) -> Option<Self> {
        match raw.compression() {
            zip::CompressionMethod::Stored => Some(Self::Stored(raw)),
            zip::CompressionMethod::Deflated => Some(Self::Deflated(
                flate2::bufread::DeflateDecoder::new(std::io::BufReader::new(raw)),
            )),
            _ => None,
        }
    }
}

impl<R: Read> Data<R> {
    /// How many of the `compressed` bytes the decompressor left unread once its stream ended
    /// (stored data is read to its size).
    fn left_unread(&self, compressed: u64) -> u64 {
        match self {
            Self::Stored(_) => 0,
            Self::Deflated(d) => compressed.saturating_sub(d.total_in()),
        }
    }
}

impl<R: Read> Read for Data<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Stored(r) => r.read(buf),
            Self::Deflated(d) => d.read(buf),
        }
    }
}

/// Looks for a data descriptor's signature across the chunks of an entry's data.
#[derive(Debug, Default)]
struct SignatureSearch {
    /// The last bytes of the previous chunk (at most three: a signature split across chunks).
    carry: Vec<u8>,
}

impl SignatureSearch {
    const SIGNATURE: &[u8; 4] = b"PK\x07\x08";

    /// Whether the signature ends in `chunk` (it may start in the previous one).
    fn found_in(&mut self, chunk: &[u8]) -> bool {
        let mut seam = std::mem::take(&mut self.carry);
        seam.extend_from_slice(&chunk[..chunk.len().min(3)]);
        let found = seam.windows(4).any(|w| w == Self::SIGNATURE)
            || chunk.windows(4).any(|w| w == Self::SIGNATURE);
        let tail = if chunk.len() >= 3 {
            &chunk[chunk.len() - 3..]
        } else {
            &seam[seam.len().saturating_sub(3)..]
        };
        self.carry = tail.to_vec();
        found
    }
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

    fn limits() -> Limits {
        Limits::default()
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
        let limits = Limits {
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
    fn the_entry_cap_counts_the_entries_of_nested_archives_too() {
        let limits = Limits {
            max_entries: 10,
            ..limits()
        };
        let names: Vec<String> = (0..4).map(|i| format!("f{i}")).collect();
        let four = zip_of(
            &names
                .iter()
                .map(|n| (n.as_str(), &b"x"[..]))
                .collect::<Vec<_>>(),
        );
        // Two archives of four: 2 + 4 + 4 entries, the cap exactly.
        let fits = zip_of(&[("a.zip", &four), ("b.zip", &four)]);
        assert_eq!(check(Cursor::new(fits), &limits).unwrap().entries, 2);
        // A third: 3 + 4 + 4 is past it at the second archive, though each holds four.
        let over = zip_of(&[("a.zip", &four), ("b.zip", &four), ("c.zip", &four)]);
        let e = check(Cursor::new(over), &limits).unwrap_err();
        assert_eq!(
            e,
            ZipProblem::Nested(
                "b.zip".into(),
                Box::new(ZipProblem::TooManyEntriesInAll(11, 10))
            ),
            "{e}"
        );
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
