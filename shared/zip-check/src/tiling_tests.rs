//! Archives whose entries do not account for every byte before the directory, or whose local
//! headers and data descriptors say something else than the directory: each is written byte
//! by byte, as a hostile tool could, and refused naming the entry or the offset.

use std::io::{Cursor, Write};

use super::{Limits, ZipProblem, check};

const EVIL: &str = "../../evil.txt";

/// One listed entry of a hand-made archive, and how its local header may lie.
#[derive(Clone)]
struct Listed {
    name: &'static str,
    /// Its bytes as written (compressed when `method` is 8).
    data: Vec<u8>,
    method: u16,
    flags: u16,
    crc: u32,
    size: u32,
    /// The local header's CRC, compressed and uncompressed sizes, when they differ.
    local_values: Option<[u32; 3]>,
    local_method: Option<u16>,
    local_flags: Option<u16>,
    /// Bytes after the data (a data descriptor).
    after: Vec<u8>,
    /// Where the directory says its local header is, when it lies.
    offset: Option<u32>,
}

impl Listed {
    fn stored(name: &'static str, data: &[u8]) -> Self {
        Self {
            name,
            data: data.to_vec(),
            method: 0,
            flags: 0,
            crc: crc32fast::hash(data),
            size: u32::try_from(data.len()).unwrap(),
            local_values: None,
            local_method: None,
            local_flags: None,
            after: Vec::new(),
            offset: None,
        }
    }

    fn deflated(name: &'static str, data: &[u8]) -> Self {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        Self {
            data: encoder.finish().unwrap(),
            method: 8,
            ..Self::stored(name, data)
        }
    }

    /// With its CRC and sizes in a data descriptor (`signed`: with its signature), zeros in
    /// the local header.
    fn described(mut self, signed: bool) -> Self {
        self.flags |= 0x0008;
        self.local_values = Some([0, 0, 0]);
        if signed {
            self.after.extend_from_slice(b"PK\x07\x08");
        }
        let compressed = u32::try_from(self.data.len()).unwrap();
        for v in [self.crc, compressed, self.size] {
            self.after.extend_from_slice(&v.to_le_bytes());
        }
        self
    }
}

/// What a hand-made archive holds before its directory, in order.
#[derive(Clone)]
enum Part {
    Listed(Listed),
    /// Bytes the directory does not list.
    Unlisted(Vec<u8>),
}

fn local_header(name: &[u8], method: u16, flags: u16, values: [u32; 3], extra: &[u8]) -> Vec<u8> {
    let mut out = b"PK\x03\x04".to_vec();
    for v in [20u16, flags, method, 0, 0x21] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&u16::try_from(extra.len()).unwrap().to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(extra);
    out
}

/// A complete stored entry (local header and data) that no directory lists.
fn hidden_entry() -> Vec<u8> {
    let data = b"pwned";
    let size = u32::try_from(data.len()).unwrap();
    let mut out = local_header(
        EVIL.as_bytes(),
        0,
        0,
        [crc32fast::hash(data), size, size],
        &[],
    );
    out.extend_from_slice(data);
    out
}

fn archive(parts: &[Part]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let mut count = 0u16;
    for part in parts {
        let e = match part {
            Part::Unlisted(bytes) => {
                out.extend_from_slice(bytes);
                continue;
            }
            Part::Listed(e) => e,
        };
        count += 1;
        let offset = e.offset.unwrap_or(u32::try_from(out.len()).unwrap());
        let compressed = u32::try_from(e.data.len()).unwrap();
        let values = [e.crc, compressed, e.size];
        out.extend_from_slice(&local_header(
            e.name.as_bytes(),
            e.local_method.unwrap_or(e.method),
            e.local_flags.unwrap_or(e.flags),
            e.local_values.unwrap_or(values),
            &[],
        ));
        out.extend_from_slice(&e.data);
        out.extend_from_slice(&e.after);
        central.extend_from_slice(b"PK\x01\x02");
        for v in [20u16, 20, e.flags, e.method, 0, 0x21] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in values {
            central.extend_from_slice(&v.to_le_bytes());
        }
        let name_len = u16::try_from(e.name.len()).unwrap();
        for v in [name_len, 0, 0, 0, 0] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        central.extend_from_slice(&0u32.to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(e.name.as_bytes());
    }
    let directory_offset = u32::try_from(out.len()).unwrap();
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    for v in [0u16, 0, count, count] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&u32::try_from(central.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn checked(parts: &[Part]) -> Result<usize, ZipProblem> {
    check(Cursor::new(archive(parts)), &Limits::default()).map(|s| s.entries)
}

fn listed(e: Listed) -> Part {
    Part::Listed(e)
}

/// Where the first entry's bytes end in `parts`' archive (its local header is 30 bytes).
fn end_of(e: &Listed) -> u64 {
    (30 + e.name.len() + e.data.len() + e.after.len()) as u64
}

#[test]
fn entries_that_tile_the_archive_pass() {
    let a = Listed::stored("setup.json", b"{}");
    let b = Listed::deflated("laps/a.json", &[b'x'; 4000]);
    assert_eq!(checked(&[listed(a.clone()), listed(b.clone())]), Ok(2));
    // Data descriptors, with and without their signature, stored and deflated.
    assert_eq!(
        checked(&[
            listed(a.clone().described(true)),
            listed(b.clone().described(false)),
            listed(Listed::deflated("c.txt", b"hello").described(true)),
        ]),
        Ok(3)
    );
    // A local header may repeat the values a descriptor gives.
    let mut repeated = b.described(true);
    repeated.local_values = None;
    assert_eq!(checked(&[listed(repeated)]), Ok(1));
}

#[test]
fn archives_written_by_the_zip_crate_pass() {
    use zip::write::SimpleFileOptions;
    fn write<W: Write + std::io::Seek>(w: &mut zip::ZipWriter<W>) {
        for (name, data, method) in [
            (
                "setup.json",
                b"{\"wing\": 7}".as_slice(),
                zip::CompressionMethod::Deflated,
            ),
            ("laps/", b"".as_slice(), zip::CompressionMethod::Stored),
            (
                "laps/ref.json",
                &[b'x'; 50_000],
                zip::CompressionMethod::Deflated,
            ),
            (
                "notes.txt",
                b"brake at the 100 m board",
                zip::CompressionMethod::Stored,
            ),
        ] {
            let options = SimpleFileOptions::default().compression_method(method);
            if name.ends_with('/') {
                w.add_directory(name, options).unwrap();
            } else {
                w.start_file(name, options).unwrap();
                w.write_all(data).unwrap();
            }
        }
    }
    let mut seeking = zip::ZipWriter::new(Cursor::new(Vec::new()));
    write(&mut seeking);
    let bytes = seeking.finish().unwrap().into_inner();
    assert_eq!(
        check(Cursor::new(bytes), &Limits::default()).map(|s| s.entries),
        Ok(4)
    );
    // Written to a stream: the sizes follow each entry's data in a data descriptor.
    let mut streaming = zip::ZipWriter::new_stream(Vec::new());
    write(&mut streaming);
    let bytes = streaming.finish().unwrap().into_inner();
    assert!(
        bytes.windows(4).any(|w| w == b"PK\x07\x08"),
        "the stream has data descriptors"
    );
    assert_eq!(
        check(Cursor::new(bytes), &Limits::default()).map(|s| s.entries),
        Ok(4)
    );
}

#[test]
fn bytes_between_entries_are_refused() {
    let a = Listed::stored("a.txt", b"first");
    let e = checked(&[
        listed(a.clone()),
        Part::Unlisted(hidden_entry()),
        listed(Listed::stored("b.txt", b"second")),
    ])
    .unwrap_err();
    let from = end_of(&a);
    let to = from + hidden_entry().len() as u64;
    assert_eq!(
        e,
        ZipProblem::Unaccounted {
            from,
            to,
            after: "entry \"a.txt\"".into(),
            before: "entry \"b.txt\"".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "bytes at offset {from}..{to} belong to no entry (after entry \"a.txt\", before entry \"b.txt\")"
        )
    );
}

#[test]
fn bytes_before_the_directory_are_refused() {
    let a = Listed::stored("a.txt", b"first");
    let e = checked(&[listed(a.clone()), Part::Unlisted(hidden_entry())]).unwrap_err();
    assert!(
        matches!(&e, ZipProblem::Unaccounted { from, before, .. }
            if *from == end_of(&a) && before == "the directory"),
        "{e}"
    );
    // Even a single byte.
    let e = checked(&[listed(a), Part::Unlisted(vec![0])]).unwrap_err();
    assert!(matches!(e, ZipProblem::Unaccounted { .. }), "{e}");
}

#[test]
fn an_entry_hidden_in_a_stored_entry_whose_local_header_claims_less_is_refused() {
    let mut data = b"abcd".to_vec();
    data.extend_from_slice(&hidden_entry());
    let mut cover = Listed::stored("notes.txt", &data);
    cover.local_values = Some([crc32fast::hash(b"abcd"), 4, 4]);
    let e = checked(&[listed(cover)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "entry \"notes.txt\": its local header says CRC-32 {:#010x}, the directory {:#010x}",
            crc32fast::hash(b"abcd"),
            crc32fast::hash(&data)
        )
    );
    // The same with the right CRC: the sizes are compared too.
    let mut cover = Listed::stored("notes.txt", &data);
    cover.local_values = Some([crc32fast::hash(&data), 4, 4]);
    let e = checked(&[listed(cover)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "entry \"notes.txt\": its local header says compressed size 4, the directory {}",
            data.len()
        )
    );
}

#[test]
fn overlapping_entries_are_refused() {
    // The second entry's local header lies inside the first entry's data: the same bytes
    // would be extracted twice (and an overlap can make a small archive inflate hugely).
    let inner = Listed::stored("b.txt", b"inner");
    let mut inner_bytes = local_header(b"b.txt", 0, 0, [inner.crc, inner.size, inner.size], &[]);
    inner_bytes.extend_from_slice(&inner.data);
    let outer = Listed::stored("a.txt", &inner_bytes);
    let start = 30 + "a.txt".len() as u32;
    let mut listed_inner = inner;
    listed_inner.offset = Some(start);
    // Write the outer entry and list the inner one without writing it again.
    let mut bytes = archive(&[listed(outer.clone()), listed(listed_inner)]);
    let written = end_of(&outer) as usize;
    let second = written..written + 30 + 5 + 5;
    bytes.drain(second.clone());
    // Fix the directory offset in the end record after removing those bytes.
    let end = bytes.len() - 22;
    let directory = u32::from_le_bytes(bytes[end + 16..end + 20].try_into().unwrap());
    let moved = directory - u32::try_from(second.len()).unwrap();
    bytes[end + 16..end + 20].copy_from_slice(&moved.to_le_bytes());
    let e = check(Cursor::new(bytes), &Limits::default()).unwrap_err();
    assert_eq!(
        e,
        ZipProblem::Overlap {
            entry: "a.txt".into(),
            end: end_of(&outer),
            next: "entry \"b.txt\"".into(),
            start: u64::from(start),
        }
    );
    assert!(e.to_string().contains("entries must not overlap"), "{e}");
}

#[test]
fn local_headers_must_repeat_method_flags_crc_and_sizes() {
    let base = Listed::deflated("setup.json", &[b'w'; 300]);
    let mut method = base.clone();
    method.local_method = Some(0);
    assert_eq!(
        checked(&[listed(method)]).unwrap_err().to_string(),
        "entry \"setup.json\": its local header says method 0, the directory 8"
    );
    let mut flags = base.clone();
    flags.local_flags = Some(0x0008);
    assert_eq!(
        checked(&[listed(flags)]).unwrap_err().to_string(),
        "entry \"setup.json\": its local header says flags 0x0008, the directory 0x0000"
    );
    // Flags readers do not act on (here the compression level) may differ.
    let mut level = base.clone();
    level.local_flags = Some(0x0002);
    assert_eq!(checked(&[listed(level)]), Ok(1));
    let compressed = u32::try_from(base.data.len()).unwrap();
    let mut size = base.clone();
    size.local_values = Some([base.crc, compressed, 299]);
    assert_eq!(
        checked(&[listed(size)]).unwrap_err().to_string(),
        "entry \"setup.json\": its local header says uncompressed size 299, the directory 300"
    );
    // Without the data-descriptor flag, zeros are not "unknown": they are wrong.
    let mut zeros = base;
    zeros.local_values = Some([0, 0, 0]);
    assert!(matches!(
        checked(&[listed(zeros)]),
        Err(ZipProblem::HeadersDisagree { what: "CRC-32", .. })
    ));
}

#[test]
fn data_descriptors_must_repeat_the_directory() {
    let good = Listed::deflated("lap.json", &[b'l'; 500]).described(true);
    assert_eq!(checked(&[listed(good.clone())]), Ok(1));
    let mut wrong_crc = good.clone();
    wrong_crc.after[4] ^= 0xff;
    let e = checked(&[listed(wrong_crc)]).unwrap_err();
    assert!(
        matches!(&e, ZipProblem::Descriptor(n, why) if n == "lap.json" && why.starts_with("says CRC-32")),
        "{e}"
    );
    let mut wrong_size = Listed::deflated("lap.json", &[b'l'; 500]).described(false);
    wrong_size.after[8] ^= 0x01;
    let e = checked(&[listed(wrong_size)]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("entry \"lap.json\": its data descriptor says uncompressed size"),
        "{e}"
    );
    // The flag without a descriptor: the next entry's header is read as one.
    let mut missing = good.clone();
    missing.after.clear();
    let e = checked(&[
        listed(missing),
        listed(Listed::stored("next.txt", b"0123456789")),
    ])
    .unwrap_err();
    assert!(matches!(e, ZipProblem::Descriptor(..)), "{e}");
    // A descriptor then stray bytes.
    let mut longer = good;
    longer.after.extend_from_slice(&hidden_entry());
    let e = checked(&[listed(longer)]).unwrap_err();
    assert!(matches!(e, ZipProblem::Unaccounted { .. }), "{e}");
    // At the very end, too short to be one.
    let mut short = Listed::stored("a.txt", b"abc").described(false);
    short.after.truncate(6);
    let e = checked(&[listed(short)]).unwrap_err();
    assert!(
        matches!(&e, ZipProblem::Descriptor(_, why) if why.starts_with("is missing")),
        "{e}"
    );
}

#[test]
fn a_deflate_stream_ending_before_its_compressed_size_is_refused() {
    // A streaming extractor inflates until the stream ends and reads the descriptor there:
    // whatever lies between that and the size the directory gives is read as more entries.
    let mut e = Listed::deflated("notes.txt", b"hello, team").described(true);
    let stream_len = e.data.len();
    e.data.extend_from_slice(&hidden_entry());
    let compressed = u32::try_from(e.data.len()).unwrap();
    e.after.clear();
    e.after.extend_from_slice(b"PK\x07\x08");
    for v in [e.crc, compressed, e.size] {
        e.after.extend_from_slice(&v.to_le_bytes());
    }
    let problem = checked(&[listed(e)]).unwrap_err();
    assert_eq!(
        problem,
        ZipProblem::HiddenInData(
            "notes.txt".into(),
            format!(
                "its compressed data ends {} bytes before its size says (streaming extractors read those bytes as what follows it)",
                compressed as usize - stream_len
            )
        )
    );
}

#[test]
fn stored_data_found_by_its_descriptor_must_not_hold_a_descriptor_signature() {
    // Stored data whose local header gives no size ends, for streaming extractors, at the
    // first descriptor signature in it.
    let mut data = b"abc".to_vec();
    data.extend_from_slice(b"PK\x07\x08");
    data.extend_from_slice(&hidden_entry());
    let e = checked(&[listed(Listed::stored("notes.txt", &data).described(true))]).unwrap_err();
    assert!(
        matches!(&e, ZipProblem::HiddenInData(n, why) if n == "notes.txt" && why.contains("signature")),
        "{e}"
    );
    // With its size in the local header, the signature is only data.
    let mut sized = Listed::stored("notes.txt", &data).described(true);
    sized.local_values = None;
    assert_eq!(checked(&[listed(sized)]), Ok(1));
}

#[test]
fn names_equal_once_normalized_are_duplicates() {
    let mut composed = Listed::stored("caf\u{e9}.txt", b"one");
    composed.flags = 0x0800;
    let mut decomposed = Listed::stored("cafe\u{301}.txt", b"two");
    decomposed.flags = 0x0800;
    let e = checked(&[listed(composed), listed(decomposed)]).unwrap_err();
    assert_eq!(
        e,
        ZipProblem::SamePath("cafe\u{301}.txt".into(), "caf\u{e9}.txt".into())
    );
    assert!(e.to_string().contains("Unicode-normalized"), "{e}");
}

#[test]
fn the_search_for_a_signature_spans_chunks() {
    let mut search = super::SignatureSearch::default();
    assert!(!search.found_in(b"abcP"));
    assert!(!search.found_in(b"K"));
    assert!(search.found_in(b"\x07\x08rest"));
    let mut search = super::SignatureSearch::default();
    assert!(!search.found_in(b"PK\x07"));
    assert!(!search.found_in(b"\x09PK\x07\x09"));
}
