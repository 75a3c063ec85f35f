//! The end of a ZIP archive: how many entries it declares and where its directory is, read
//! from the end-of-central-directory record (and its zip64 form) before anything else, so that
//! what an archive declares is refused before any of its directory is parsed.

use std::io::{Read, Seek, SeekFrom};

use super::{ZipProblem, le16, le32, le64};

const END_SIGNATURE: &[u8; 4] = b"PK\x05\x06";
const END_LEN: u64 = 22;
const LOCATOR_SIGNATURE: &[u8; 4] = b"PK\x06\x07";
const LOCATOR_LEN: u64 = 20;
const END64_SIGNATURE: &[u8; 4] = b"PK\x06\x06";
const END64_FIXED_LEN: usize = 56;

/// Where an archive's directory is and what it declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EndRecord {
    /// Entries the directory declares.
    pub entries: u64,
    /// Where the central directory starts.
    pub directory_offset: u64,
    /// Where the central directory must end: at the (zip64) end record that follows it.
    pub directory_end: u64,
}

fn io(e: std::io::Error) -> ZipProblem {
    ZipProblem::Damaged("the archive".into(), e.to_string())
}

/// The end record of the archive in `reader`. The record readers find is the last signature
/// in the final 64 KiB (the comment's most), searching backwards; it must end the file exactly
/// (nothing after the archive), and its directory must end where the record starts and begin
/// where its offsets say (nothing before the archive, nothing between).
pub(super) fn read<R: Read + Seek>(reader: &mut R) -> Result<EndRecord, ZipProblem> {
    let len = reader.seek(SeekFrom::End(0)).map_err(io)?;
    if len < END_LEN {
        return Err(ZipProblem::NotAZip);
    }
    let window_start = len.saturating_sub(END_LEN + u64::from(u16::MAX));
    let mut window = Vec::new();
    reader.seek(SeekFrom::Start(window_start)).map_err(io)?;
    reader
        .by_ref()
        .take(len - window_start)
        .read_to_end(&mut window)
        .map_err(io)?;
    let at = (0..=window.len() - END_LEN as usize)
        .rev()
        .find(|&i| &window[i..i + 4] == END_SIGNATURE)
        .ok_or(ZipProblem::NotAZip)?;
    let record = &window[at..];
    let position = window_start + at as u64;
    let comment = u64::from(le16(record, 20));
    match (position + END_LEN + comment).cmp(&len) {
        std::cmp::Ordering::Greater => return Err(ZipProblem::NotAZip),
        std::cmp::Ordering::Less => {
            return Err(ZipProblem::StrayData(format!(
                "{} bytes follow the end of the archive",
                len - position - END_LEN - comment
            )));
        }
        std::cmp::Ordering::Equal => {}
    }
    let (disk, directory_disk) = (le16(record, 4), le16(record, 6));
    let (on_disk, entries) = (le16(record, 8), le16(record, 10));
    let (size, offset) = (le32(record, 12), le32(record, 16));
    let zip64 = entries == u16::MAX
        || on_disk == u16::MAX
        || size == u32::MAX
        || offset == u32::MAX
        || disk == u16::MAX
        || directory_disk == u16::MAX;
    let mut end = EndRecord {
        entries: u64::from(entries),
        directory_offset: u64::from(offset),
        directory_end: position,
    };
    let mut directory_size = u64::from(size);
    let mut split = disk != 0 || directory_disk != 0 || on_disk != entries;
    if zip64 && let Some(locator) = position.checked_sub(LOCATOR_LEN) {
        let mut l = [0u8; LOCATOR_LEN as usize];
        reader.seek(SeekFrom::Start(locator)).map_err(io)?;
        reader.read_exact(&mut l).map_err(io)?;
        if &l[..4] == LOCATOR_SIGNATURE {
            let at = le64(&l, 8);
            split |= le32(&l, 4) != 0 || le32(&l, 16) > 1;
            let mut r = [0u8; END64_FIXED_LEN];
            let found = at
                .checked_add(END64_FIXED_LEN as u64)
                .is_some_and(|e| e <= locator)
                && reader.seek(SeekFrom::Start(at)).is_ok()
                && reader.read_exact(&mut r).is_ok()
                && &r[..4] == END64_SIGNATURE;
            // The zip64 record says where it is; one that is not there, or does not end
            // where the locator starts, has bytes before or after it that readers disagree on.
            if !found || le64(&r, 4).checked_add(12 + at) != Some(locator) {
                return Err(ZipProblem::StrayData(
                    "its zip64 end record is not where the archive says (data before the archive?)"
                        .into(),
                ));
            }
            split |= le32(&r, 16) != 0 || le32(&r, 20) != 0 || le64(&r, 24) != le64(&r, 32);
            end.entries = le64(&r, 32);
            directory_size = le64(&r, 40);
            end.directory_offset = le64(&r, 48);
            end.directory_end = at;
        }
    }
    if split {
        return Err(ZipProblem::Malformed("archives split across disks".into()));
    }
    if end.directory_offset.checked_add(directory_size) != Some(end.directory_end) {
        return Err(ZipProblem::StrayData(
            "its directory is not where its end record says (data before the archive?)".into(),
        ));
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    fn archive(names: &[&str]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for name in names {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(b"data").unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn the_record_gives_count_and_directory() {
        let bytes = archive(&["a", "b", "c"]);
        let end = read(&mut Cursor::new(&bytes)).unwrap();
        assert_eq!(end.entries, 3);
        assert_eq!(end.directory_end, bytes.len() as u64 - END_LEN);
        assert_eq!(&bytes[end.directory_offset as usize..][..4], b"PK\x01\x02");
    }

    #[test]
    fn data_around_the_archive_is_refused() {
        let bytes = archive(&["a"]);
        let mut before = b"MZ stub".to_vec();
        before.extend_from_slice(&bytes);
        assert!(matches!(
            read(&mut Cursor::new(&before)),
            Err(ZipProblem::StrayData(_))
        ));
        let mut after = bytes.clone();
        after.extend_from_slice(b"trailer");
        assert!(matches!(
            read(&mut Cursor::new(&after)),
            Err(ZipProblem::StrayData(_))
        ));
        assert_eq!(
            read(&mut Cursor::new(b"PK\x05\x06 too short")),
            Err(ZipProblem::NotAZip)
        );
        assert_eq!(
            read(&mut Cursor::new(vec![0u8; 100])),
            Err(ZipProblem::NotAZip)
        );
    }
}
