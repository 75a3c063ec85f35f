//! The central directory, walked record by record (never held whole), and each entry's local
//! header beside it: the names as readers read them, the kind of file each entry makes, and
//! agreement between the two headers (a streaming extractor reads only the local one).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use super::end_record::EndRecord;
use super::names::{self, Paths};
use super::{ZipProblem, le16, le32, le64};

const CENTRAL_SIGNATURE: &[u8; 4] = b"PK\x01\x02";
const LOCAL_SIGNATURE: &[u8; 4] = b"PK\x03\x04";
const CENTRAL_FIXED_LEN: usize = 46;
const LOCAL_FIXED_LEN: usize = 30;
const ZIP64_FIELD: u16 = 0x0001;
const UNICODE_PATH_FIELD: u16 = 0x7075;
const FLAG_ENCRYPTED: u16 = 0x0001;
const FLAG_STRONG_ENCRYPTION: u16 = 0x0040;
const FLAG_UTF8: u16 = 0x0800;
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
}

/// Where an entry's local header is, and what it must repeat.
struct Local {
    offset: u64,
    raw_name: Vec<u8>,
    utf8: bool,
    readings: Vec<String>,
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

/// Walks the directory that `end` describes: every entry's names, kind and local header.
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
            let mut offset = u64::from(le32(&fixed, 42));
            if let Some((_, zip64)) = fields.iter().find(|(id, _)| *id == ZIP64_FIELD) {
                let mut at = 0;
                for (value, wide) in [
                    (le32(&fixed, 24), false),
                    (le32(&fixed, 20), false),
                    (le32(&fixed, 42), true),
                ] {
                    if value == u32::MAX {
                        let v = zip64
                            .get(at..at + 8)
                            .map(|b| le64(b, 0))
                            .ok_or_else(|| damaged(&shown, "a truncated zip64 field"))?;
                        if wide {
                            offset = v;
                        }
                        at += 8;
                    }
                }
            }
            locals.push(Local {
                offset,
                raw_name: raw_name.clone(),
                utf8,
                readings,
            });
            entries.push(Entry {
                name: shown,
                raw_name,
                encrypted: flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION) != 0
                    || method == METHOD_AES,
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
    for (local, entry) in locals.iter().zip(&entries) {
        check_local(reader, local, entry, end)?;
    }
    Ok(entries)
}

/// The local header of `entry`: where the directory says, with the same name, flag and
/// readings (a streaming extractor trusts it alone).
fn check_local<R: Read + Seek>(
    reader: &mut R,
    local: &Local,
    entry: &Entry,
    end: &EndRecord,
) -> Result<(), ZipProblem> {
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
    Ok(())
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
