//! The central directory, walked record by record (never held whole), and each entry's local
//! header beside it: the names as readers read them, the kind of file each entry makes,
//! agreement between the two headers (a streaming extractor reads only the local one), and
//! that the entries account for every byte before the directory: a streaming extractor reads
//! local headers one after the other, so bytes that no listed entry covers could hold entries
//! that a directory reader never sees.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use super::end_record::EndRecord;
use super::names::{self, Paths};
use super::{ZipProblem, le16, le32, le64};

const CENTRAL_SIGNATURE: &[u8; 4] = b"PK\x01\x02";
const LOCAL_SIGNATURE: &[u8; 4] = b"PK\x03\x04";
const CENTRAL_FIXED_LEN: usize = 46;
const LOCAL_FIXED_LEN: usize = 30;
const DESCRIPTOR_SIGNATURE: &[u8; 4] = b"PK\x07\x08";
const ZIP64_FIELD: u16 = 0x0001;
const UNICODE_PATH_FIELD: u16 = 0x7075;
const FLAG_ENCRYPTED: u16 = 0x0001;
/// The CRC and sizes follow the data in a data descriptor (the local header may hold zeros).
const FLAG_DESCRIPTOR: u16 = 0x0008;
const FLAG_STRONG_ENCRYPTION: u16 = 0x0040;
const FLAG_UTF8: u16 = 0x0800;
/// The local headers' values are masked (central directory encryption).
const FLAG_MASKED_HEADERS: u16 = 0x2000;
/// The flags that change what an extractor does with an entry, so both headers must agree on
/// them: encryption, the data descriptor and the name's encoding. (The others tune the
/// compressor and say nothing a reader acts on.)
const FLAGS_THAT_MATTER: u16 =
    FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_STRONG_ENCRYPTION | FLAG_UTF8 | FLAG_MASKED_HEADERS;
const METHOD_STORED: u16 = 0;
/// The AES method (WinZip): encrypted whatever the flags say.
const METHOD_AES: u16 = 99;

/// What the check needs of an entry after the walk.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The name as readers show it, for messages.
    pub name: String,
    /// The name's bytes, to match the entry the ZIP reader opens.
    pub raw_name: Vec<u8>,
    /// Whether its data is encrypted.
    pub encrypted: bool,
    /// Whether streaming extractors find the end of its data by searching for a data
    /// descriptor's signature (stored data whose local header gives no size), so the data
    /// must not hold one.
    pub ends_at_a_signature: bool,
}

/// Where an entry's local header is, and what it must repeat.
struct Local {
    offset: u64,
    raw_name: Vec<u8>,
    utf8: bool,
    readings: Vec<String>,
    flags: u16,
    method: u16,
    crc: u32,
    compressed: u64,
    uncompressed: u64,
}

/// Where the bytes of entry `index` start and end in the archive, its data descriptor
/// included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Span {
    start: u64,
    end: u64,
    index: usize,
}

fn damaged(name: &str, why: impl Into<String>) -> ZipProblem {
    ZipProblem::Damaged(name.to_owned(), why.into())
}

/// The extra fields of a header, as (id, data).
fn fields(extra: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let mut out = Vec::new();
    let mut rest = extra;
    while !rest.is_empty() {
        if rest.len() < 4 {
            return None;
        }
        let (id, len) = (le16(rest, 0), usize::from(le16(rest, 2)));
        let data = rest.get(4..4 + len)?;
        out.push((id, data));
        rest = &rest[4 + len..];
    }
    Some(out)
}

/// The Unicode Path field of an entry, checked against its name: readers use it only when its
/// CRC matches the name, so one that does not is refused rather than guessed about.
fn unicode_path<'a>(
    fields: &[(u16, &'a [u8])],
    raw_name: &[u8],
) -> Result<Option<&'a [u8]>, String> {
    let Some((_, data)) = fields.iter().find(|(id, _)| *id == UNICODE_PATH_FIELD) else {
        return Ok(None);
    };
    if data.len() < 5 || le32(data, 1) != crc32fast::hash(raw_name) {
        return Err("its Unicode Path field does not belong to its name".into());
    }
    Ok(Some(&data[5..]))
}

/// Why a Unix file mode (the high half of the external attributes, which 7-Zip and Info-ZIP
/// write on every system) makes something other than a plain file or folder.
fn mode_problem(external_attributes: u32) -> Option<&'static str> {
    let mode = external_attributes >> 16;
    match mode & 0o170_000 {
        0 | 0o100_000 | 0o040_000 => {}
        0o120_000 => return Some("symbolic links are not accepted"),
        _ => {
            return Some(
                "only plain files and folders are accepted (not devices, pipes or sockets)",
            );
        }
    }
    (mode & 0o6000 != 0).then_some("set-user-ID and set-group-ID bits are not accepted")
}

/// The readings of a name, or the rule it breaks, as a refusal naming the entry.
fn checked_readings(
    raw_name: &[u8],
    utf8: bool,
    fields: &[(u16, &[u8])],
) -> Result<Vec<String>, ZipProblem> {
    let shown = names::shown(raw_name, utf8);
    let refuse = |rule: String| ZipProblem::UnsafeName(shown.clone(), rule);
    let path = unicode_path(fields, raw_name).map_err(refuse)?;
    let readings = names::readings(raw_name, utf8, path).map_err(refuse)?;
    for reading in &readings {
        if let Some(rule) = names::broken_rule(reading) {
            let rule = if reading == &shown {
                rule
            } else {
                format!("read as {reading:?}, {rule}")
            };
            return Err(ZipProblem::UnsafeName(shown, rule));
        }
    }
    Ok(readings)
}

/// Walks the directory that `end` describes: every entry's names, kind and local header, and
/// that the entries cover every byte before the directory once each.
pub(super) fn walk<R: Read + Seek>(
    reader: &mut R,
    end: &EndRecord,
) -> Result<Vec<Entry>, ZipProblem> {
    let io = |e: std::io::Error| damaged("the directory", e.to_string());
    let count = usize::try_from(end.entries).map_err(|_| ZipProblem::NotAZip)?;
    let mut entries = Vec::with_capacity(count);
    let mut locals = Vec::with_capacity(count);
    let mut paths = Paths::default();
    {
        reader
            .seek(SeekFrom::Start(end.directory_offset))
            .map_err(io)?;
        let mut directory = BufReader::with_capacity(
            64 * 1024,
            reader
                .by_ref()
                .take(end.directory_end - end.directory_offset),
        );
        let mut fixed = [0u8; CENTRAL_FIXED_LEN];
        for index in 0..count {
            directory
                .read_exact(&mut fixed)
                .map_err(|_| damaged(&format!("#{index}"), "the directory ends early"))?;
            if &fixed[..4] != CENTRAL_SIGNATURE {
                return Err(damaged(
                    &format!("#{index}"),
                    "not a central directory record",
                ));
            }
            let flags = le16(&fixed, 8);
            let method = le16(&fixed, 10);
            let (name_len, extra_len) =
                (usize::from(le16(&fixed, 28)), usize::from(le16(&fixed, 30)));
            let comment_len = u64::from(le16(&fixed, 32));
            let external = le32(&fixed, 38);
            let mut raw_name = vec![0u8; name_len];
            let mut extra = vec![0u8; extra_len];
            directory
                .read_exact(&mut raw_name)
                .and_then(|()| directory.read_exact(&mut extra))
                .and_then(|()| {
                    std::io::copy(
                        &mut directory.by_ref().take(comment_len),
                        &mut std::io::sink(),
                    )
                    .and_then(|n| {
                        if n == comment_len {
                            Ok(())
                        } else {
                            Err(std::io::ErrorKind::UnexpectedEof.into())
                        }
                    })
                })
                .map_err(|_| damaged(&format!("#{index}"), "the directory ends early"))?;
            let utf8 = flags & FLAG_UTF8 != 0;
            let shown = names::shown(&raw_name, utf8);
            let fields =
                fields(&extra).ok_or_else(|| damaged(&shown, "a truncated extra field"))?;
            let readings = checked_readings(&raw_name, utf8, &fields)?;
            if let Some(rule) = mode_problem(external) {
                return Err(ZipProblem::NotPlainFile(shown, rule));
            }
            if let Err(other) = paths.add(index, &readings) {
                let other: &Entry = &entries[other];
                return Err(ZipProblem::SamePath(shown, other.name.clone()));
            }
            // Sizes and the offset move to the zip64 field when they do not fit, in this order.
            let mut wide = [
                u64::from(le32(&fixed, 24)),
                u64::from(le32(&fixed, 20)),
                u64::from(le32(&fixed, 42)),
            ];
            if let Some((_, zip64)) = fields.iter().find(|(id, _)| *id == ZIP64_FIELD) {
                widen(&mut wide, zip64)
                    .ok_or_else(|| damaged(&shown, "a truncated zip64 field"))?;
            }
            let [uncompressed, compressed, offset] = wide;
            locals.push(Local {
                offset,
                raw_name: raw_name.clone(),
                utf8,
                readings,
                flags,
                method,
                crc: le32(&fixed, 16),
                compressed,
                uncompressed,
            });
            entries.push(Entry {
                name: shown,
                raw_name,
                encrypted: flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS)
                    != 0
                    || method == METHOD_AES,
                ends_at_a_signature: false,
            });
        }
        // Readers that go by the directory's bytes rather than its count would see more.
        if directory.fill_buf().is_ok_and(|rest| !rest.is_empty()) {
            return Err(ZipProblem::Malformed(
                "its directory holds more than its end record declares".into(),
            ));
        }
    }
    if let Some(first) = locals.iter().map(|l| l.offset).min()
        && first != 0
    {
        return Err(ZipProblem::StrayData(format!(
            "{first} bytes come before its first entry"
        )));
    }
    if locals.is_empty() && end.directory_end != 0 {
        return Err(ZipProblem::StrayData(
            "an empty archive with bytes before its end record".into(),
        ));
    }
    let mut spans = Vec::with_capacity(locals.len());
    for (index, (local, entry)) in locals.iter().zip(entries.iter_mut()).enumerate() {
        if entry.encrypted {
            // Its local header may be masked; it is refused whatever that says.
            return Err(ZipProblem::Encrypted(entry.name.clone()));
        }
        let read = check_local(reader, local, entry, end)?;
        entry.ends_at_a_signature = read.ends_at_a_signature;
        spans.push(Span {
            start: local.offset,
            end: read.end,
            index,
        });
    }
    check_tiling(&mut spans, &entries, end.directory_offset)?;
    Ok(entries)
}

/// Replaces each of `values` that is the 32-bit marker with the next 64-bit value of the zip64
/// field `zip64`, in order (the field holds only the values that did not fit); `None` when
/// the field is too short.
fn widen(values: &mut [u64], zip64: &[u8]) -> Option<()> {
    let mut at = 0;
    for value in values {
        if *value == u64::from(u32::MAX) {
            *value = le64(zip64.get(at..at + 8)?, 0);
            at += 8;
        }
    }
    Some(())
}

/// The entries, in the order of their local headers, must cover the archive up to the
/// directory exactly: the first at byte 0 (checked before), each ending where the next starts,
/// the last where the directory starts.
fn check_tiling(
    spans: &mut [Span],
    entries: &[Entry],
    directory_offset: u64,
) -> Result<(), ZipProblem> {
    spans.sort_unstable();
    let name = |span: &Span| format!("entry {:?}", entries[span.index].name);
    for (i, span) in spans.iter().enumerate() {
        let (next, next_start) = match spans.get(i + 1) {
            Some(next) => (name(next), next.start),
            None => ("the directory".to_owned(), directory_offset),
        };
        if span.end < next_start {
            return Err(ZipProblem::Unaccounted {
                from: span.end,
                to: next_start,
                after: name(span),
                before: next,
            });
        }
        if span.end > next_start {
            return Err(ZipProblem::Overlap {
                entry: entries[span.index].name.clone(),
                end: span.end,
                next,
                start: next_start,
            });
        }
    }
    Ok(())
}

/// What reading an entry's local header (and data descriptor) found.
struct LocalRead {
    /// Where the entry's bytes end: after its data, or its data descriptor.
    end: u64,
    /// See [`Entry::ends_at_a_signature`].
    ends_at_a_signature: bool,
}

/// The local header of `entry`: where the directory says, with the same name, readings,
/// method, flags, CRC and sizes (a streaming extractor trusts it alone), followed by a data
/// descriptor that repeats the directory when its flags announce one; where its bytes end.
fn check_local<R: Read + Seek>(
    reader: &mut R,
    local: &Local,
    entry: &Entry,
    end: &EndRecord,
) -> Result<LocalRead, ZipProblem> {
    let differs = || {
        ZipProblem::UnsafeName(
            entry.name.clone(),
            "its local header names it differently from the directory".into(),
        )
    };
    let mut fixed = [0u8; LOCAL_FIXED_LEN];
    if local.offset >= end.directory_offset
        || reader.seek(SeekFrom::Start(local.offset)).is_err()
        || reader.read_exact(&mut fixed).is_err()
        || &fixed[..4] != LOCAL_SIGNATURE
    {
        return Err(damaged(&entry.name, "its local header is missing"));
    }
    let (name_len, extra_len) = (usize::from(le16(&fixed, 26)), usize::from(le16(&fixed, 28)));
    if name_len != local.raw_name.len() || (le16(&fixed, 6) & FLAG_UTF8 != 0) != local.utf8 {
        return Err(differs());
    }
    let mut rest = vec![0u8; name_len + extra_len];
    reader
        .read_exact(&mut rest)
        .map_err(|_| damaged(&entry.name, "its local header is truncated"))?;
    let (name, extra) = rest.split_at(name_len);
    if name != local.raw_name.as_slice() {
        return Err(differs());
    }
    let fields = fields(extra).ok_or_else(|| damaged(&entry.name, "a truncated extra field"))?;
    let readings = checked_readings(name, local.utf8, &fields)?;
    if readings.iter().any(|r| !local.readings.contains(r)) {
        return Err(differs());
    }
    let disagree = |what: &'static str, here: String, there: String| ZipProblem::HeadersDisagree {
        entry: entry.name.clone(),
        what,
        local: here,
        directory: there,
    };
    let method = le16(&fixed, 8);
    if method != local.method {
        return Err(disagree(
            "method",
            method.to_string(),
            local.method.to_string(),
        ));
    }
    let flags = le16(&fixed, 6) & FLAGS_THAT_MATTER;
    if flags != local.flags & FLAGS_THAT_MATTER {
        return Err(disagree(
            "flags",
            format!("{flags:#06x}"),
            format!("{:#06x}", local.flags & FLAGS_THAT_MATTER),
        ));
    }
    // A local zip64 field holds the uncompressed size, then the compressed one.
    let zip64 = fields.iter().find(|(id, _)| *id == ZIP64_FIELD);
    let mut sizes = [u64::from(le32(&fixed, 22)), u64::from(le32(&fixed, 18))];
    if let Some((_, field)) = zip64 {
        widen(&mut sizes, field)
            .ok_or_else(|| damaged(&entry.name, "a truncated zip64 field in its local header"))?;
    }
    let [uncompressed, compressed] = sizes;
    let described = flags & FLAG_DESCRIPTOR != 0;
    let expected = Described {
        crc: local.crc,
        compressed: local.compressed,
        uncompressed: local.uncompressed,
    };
    // With a data descriptor the local header may leave any of them zero (they follow the
    // data); a value it does give must be the directory's, since readers trust it.
    let found = Described {
        crc: le32(&fixed, 14),
        compressed,
        uncompressed,
    };
    if let Some((what, here, there)) = found.difference(&expected, described) {
        return Err(disagree(what, here, there));
    }
    let data_start = local.offset + (LOCAL_FIXED_LEN + name_len + extra_len) as u64;
    let data_end = data_start
        .checked_add(local.compressed)
        .filter(|&e| e <= end.directory_offset)
        .ok_or_else(|| ZipProblem::Overlap {
            entry: entry.name.clone(),
            end: data_start.saturating_add(local.compressed),
            next: "the directory".into(),
            start: end.directory_offset,
        })?;
    if !described {
        return Ok(LocalRead {
            end: data_end,
            ends_at_a_signature: false,
        });
    }
    // Readers take 64-bit sizes in the descriptor when the local header has a zip64 field.
    let wide = zip64.is_some()
        || local.compressed >= u64::from(u32::MAX)
        || local.uncompressed >= u64::from(u32::MAX);
    let (descriptor, after) = read_descriptor(reader, data_end, wide, end.directory_offset)
        .map_err(|why| ZipProblem::Descriptor(entry.name.clone(), why))?;
    if let Some((what, here, there)) = descriptor.difference(&expected, false) {
        return Err(ZipProblem::Descriptor(
            entry.name.clone(),
            format!("says {what} {here}, the directory {there}"),
        ));
    }
    Ok(LocalRead {
        end: after,
        ends_at_a_signature: method == METHOD_STORED && compressed == 0,
    })
}

/// The CRC and sizes of an entry, as one header or a data descriptor gives them.
struct Described {
    crc: u32,
    compressed: u64,
    uncompressed: u64,
}

impl Described {
    /// The first value that differs from `expected` (zeros allowed when `zero_allowed`): its
    /// name, this value and the expected one.
    fn difference(
        &self,
        expected: &Self,
        zero_allowed: bool,
    ) -> Option<(&'static str, String, String)> {
        let differs = |here: u64, there: u64| here != there && !(zero_allowed && here == 0);
        if differs(u64::from(self.crc), u64::from(expected.crc)) {
            return Some((
                "CRC-32",
                format!("{:#010x}", self.crc),
                format!("{:#010x}", expected.crc),
            ));
        }
        if differs(self.compressed, expected.compressed) {
            return Some((
                "compressed size",
                self.compressed.to_string(),
                expected.compressed.to_string(),
            ));
        }
        if differs(self.uncompressed, expected.uncompressed) {
            return Some((
                "uncompressed size",
                self.uncompressed.to_string(),
                expected.uncompressed.to_string(),
            ));
        }
        None
    }
}

/// The data descriptor at `at`, read as streaming extractors read it: an optional signature,
/// the CRC, then both sizes in 32 bits (64 when `wide`); what it says and where it ends, or
/// why it cannot be read before the directory at `limit`.
fn read_descriptor<R: Read + Seek>(
    reader: &mut R,
    at: u64,
    wide: bool,
    limit: u64,
) -> Result<(Described, u64), String> {
    let size_len: usize = if wide { 8 } else { 4 };
    let mut bytes = [0u8; 24];
    let available = usize::try_from((limit - at).min(24)).unwrap_or(24);
    let bytes = &mut bytes[..available];
    reader
        .seek(SeekFrom::Start(at))
        .and_then(|_| reader.read_exact(bytes))
        .map_err(|e| format!("cannot be read ({e})"))?;
    let skip = if bytes.starts_with(DESCRIPTOR_SIGNATURE) {
        4
    } else {
        0
    };
    let len = skip + 4 + 2 * size_len;
    if len > bytes.len() {
        return Err(format!(
            "is missing: {} bytes are left at offset {at}, before the directory, and it needs {len}",
            bytes.len()
        ));
    }
    let size = |from: usize| {
        if wide {
            le64(bytes, from)
        } else {
            u64::from(le32(bytes, from))
        }
    };
    let described = Described {
        crc: le32(bytes, skip),
        compressed: size(skip + 4),
        uncompressed: size(skip + 4 + size_len),
    };
    Ok((described, at + len as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_of_links_and_devices_are_refused() {
        let attrs = |mode: u32| mode << 16;
        assert_eq!(mode_problem(0), None, "no Unix mode");
        assert_eq!(mode_problem(0x20), None, "DOS attributes only");
        assert_eq!(mode_problem(attrs(0o100_644)), None);
        assert_eq!(mode_problem(attrs(0o040_755)), None);
        assert!(mode_problem(attrs(0o120_777)).unwrap().contains("symbolic"));
        assert!(mode_problem(attrs(0o020_644)).is_some(), "character device");
        assert!(mode_problem(attrs(0o010_644)).is_some(), "pipe");
        assert!(mode_problem(attrs(0o104_755)).is_some(), "set-user-ID");
    }
}
