//! Hostile archives, written byte by byte as an attacker's tool would: each is refused naming
//! the entry, and what streaming readers would extract is what the check sees.

use super::*;

/// One entry of a hand-made archive: the raw bytes of its name and everything extractors
/// look at, as a hostile tool could write them.
#[derive(Clone)]
pub(super) struct Raw {
    name: Vec<u8>,
    data: Vec<u8>,
    utf8: bool,
    /// Version made by (high byte: the host system, 3 = Unix).
    made_by: u16,
    external: u32,
    central_extra: Vec<u8>,
    /// The local header's name, when it differs from the directory's.
    local_name: Option<Vec<u8>>,
    /// The local header's method, CRC, compressed and uncompressed sizes, when they differ
    /// from the directory's (stored, the data's CRC and length).
    local_values: Option<(u16, u32, u32, u32)>,
    /// Bytes written after the entry's data that the directory does not list.
    unlisted_after: Vec<u8>,
    /// Listed at this offset but not written: its bytes lie inside another entry's.
    listed_at: Option<u32>,
}

impl Raw {
    pub(super) fn file(name: impl AsRef<[u8]>, data: &[u8]) -> Self {
        Self {
            name: name.as_ref().to_vec(),
            data: data.to_vec(),
            utf8: false,
            made_by: 20,
            external: 0,
            central_extra: Vec::new(),
            local_name: None,
            local_values: None,
            unlisted_after: Vec::new(),
            listed_at: None,
        }
    }

    fn utf8(mut self) -> Self {
        self.utf8 = true;
        self
    }

    /// A Unix file mode (type and permissions), as Info-ZIP writes it.
    fn unix_mode(mut self, mode: u32) -> Self {
        self.made_by = 0x031e;
        self.external = mode << 16;
        self
    }

    /// An Info-ZIP Unicode Path field naming the entry `path` for the readers that use it.
    fn unicode_path(mut self, path: &str) -> Self {
        let mut field = 0x7075u16.to_le_bytes().to_vec();
        field.extend_from_slice(&u16::try_from(5 + path.len()).unwrap().to_le_bytes());
        field.push(1);
        field.extend_from_slice(&crc32fast::hash(&self.name).to_le_bytes());
        field.extend_from_slice(path.as_bytes());
        self.central_extra = field;
        self
    }
}

/// A local header (name, method, flags, CRC, compressed and uncompressed sizes).
pub(super) fn local_header(name: &[u8], method: u16, flags: u16, values: [u32; 3]) -> Vec<u8> {
    let mut out = b"PK\x03\x04".to_vec();
    for v in [20u16, flags, method, 0, 0x21] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(name);
    out
}

/// A stored (uncompressed) archive of `entries`, written byte by byte.
pub(super) fn raw_zip(entries: &[Raw]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let offset = e.listed_at.unwrap_or(u32::try_from(out.len()).unwrap());
        let crc = crc32fast::hash(&e.data);
        let flags: u16 = if e.utf8 { 0x0800 } else { 0 };
        let size = u32::try_from(e.data.len()).unwrap();
        let local_name = e.local_name.as_ref().unwrap_or(&e.name);
        if e.listed_at.is_none() {
            let (method, local_crc, compressed, uncompressed) =
                e.local_values.unwrap_or((0, crc, size, size));
            out.extend_from_slice(&local_header(
                local_name,
                method,
                flags,
                [local_crc, compressed, uncompressed],
            ));
            out.extend_from_slice(&e.data);
            out.extend_from_slice(&e.unlisted_after);
        }
        central.extend_from_slice(b"PK\x01\x02");
        for v in [e.made_by, 20, flags, 0, 0, 0x21] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in [crc, size, size] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            u16::try_from(e.name.len()).unwrap(),
            u16::try_from(e.central_extra.len()).unwrap(),
            0,
            0,
            0,
        ] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        central.extend_from_slice(&e.external.to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(&e.name);
        central.extend_from_slice(&e.central_extra);
    }
    let directory_offset = u32::try_from(out.len()).unwrap();
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    let n = u16::try_from(entries.len()).unwrap();
    for v in [0u16, 0, n, n] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&u32::try_from(central.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A good pack with `prefix` in front of it, its offsets adjusted to match (as a writer
/// appending to a file would write them).
pub(super) fn zip_after(prefix: &[u8]) -> Vec<u8> {
    let mut cursor = std::io::Cursor::new(prefix.to_vec());
    cursor.set_position(prefix.len() as u64);
    let mut w = zip::ZipWriter::new(cursor);
    w.start_file("setup.json", SimpleFileOptions::default())
        .unwrap();
    w.write_all(b"{}").unwrap();
    w.finish().unwrap().into_inner()
}

/// A complete stored entry named `../../evil.txt` (local header and data), for a directory
/// not to list.
pub(super) fn evil_entry() -> Vec<u8> {
    let size = u32::try_from(b"pwned".len()).unwrap();
    let mut out = local_header(
        b"../../evil.txt",
        0,
        0,
        [crc32fast::hash(b"pwned"), size, size],
    );
    out.extend_from_slice(b"pwned");
    out
}

/// `data` deflated, as the `zip` crate writes it.
pub(super) fn deflated(data: &[u8]) -> Vec<u8> {
    let bytes = zip_of(&[("x", data.to_vec())]);
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut raw = archive.by_index_raw(0).unwrap();
    assert_eq!(raw.compression(), zip::CompressionMethod::Deflated);
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut raw, &mut out).unwrap();
    out
}

/// Packs whose bytes hold a `../../evil.txt` entry that the directory does not list: readers
/// that go by the directory never see it, streaming extractors (which read local headers one
/// after another) extract it. What each is, its bytes, and what the refusal must say.
pub(super) fn hidden_entry_packs() -> Vec<(&'static str, Vec<u8>, &'static str, &'static str)> {
    let mut first = Raw::file("setup.json", b"{}");
    first.unlisted_after = evil_entry();
    let mut last = Raw::file("notes.txt", b"brake at the 100 m board");
    last.unlisted_after = evil_entry();
    // A stored entry that holds the evil one, its local header claiming its first 4 bytes.
    let mut holder = b"abcd".to_vec();
    holder.extend_from_slice(&evil_entry());
    let mut short = Raw::file("notes.txt", &holder);
    short.local_values = Some((0, crc32fast::hash(b"abcd"), 4, 4));
    // Stored in the directory, deflated in its local header: a streaming extractor inflates
    // the stream and reads the evil entry after it.
    let stream = deflated(b"brake at the 100 m board");
    let mut holder = stream.clone();
    holder.extend_from_slice(&evil_entry());
    let mut inflated = Raw::file("notes.txt", &holder);
    inflated.local_values = Some((
        8,
        crc32fast::hash(b"brake at the 100 m board"),
        u32::try_from(stream.len()).unwrap(),
        24,
    ));
    // Two listed entries overlapping: "setup.json" starts inside "notes.txt" and runs over
    // the evil entry to the directory, so every byte is in some entry; a streaming extractor
    // reads "notes.txt", then the evil entry where "notes.txt" ends.
    let mut setup_data = b"{}".to_vec();
    setup_data.extend_from_slice(&evil_entry());
    let size = u32::try_from(setup_data.len()).unwrap();
    let mut notes_data = b"brake ".to_vec();
    notes_data.extend_from_slice(&local_header(
        b"setup.json",
        0,
        0,
        [crc32fast::hash(&setup_data), size, size],
    ));
    notes_data.extend_from_slice(b"{}");
    let mut notes = Raw::file("notes.txt", &notes_data);
    notes.unlisted_after = evil_entry();
    let mut setup = Raw::file("setup.json", &setup_data);
    setup.listed_at = Some(30 + 9 + 6);
    vec![
        (
            "an unlisted entry between two listed ones",
            raw_zip(&[first, Raw::file("notes.txt", b"x")]),
            "after entry \"setup.json\", before entry \"notes.txt\"",
            "belong to no entry",
        ),
        (
            "an unlisted entry before the directory",
            raw_zip(&[Raw::file("setup.json", b"{}"), last]),
            "after entry \"notes.txt\", before the directory",
            "belong to no entry",
        ),
        (
            "an entry hidden in a stored entry whose local header claims 4 bytes",
            raw_zip(&[short]),
            "entry \"notes.txt\"",
            "its local header says CRC-32",
        ),
        (
            "an entry hidden after a deflate stream in an entry stored in the directory",
            raw_zip(&[inflated]),
            "entry \"notes.txt\"",
            "its local header says method 8, the directory 0",
        ),
        (
            "two entries overlapping around a hidden one",
            raw_zip(&[notes, setup]),
            "entry \"notes.txt\"",
            "past the start of entry \"setup.json\" at offset 45 (entries must not overlap)",
        ),
    ]
}

/// The names a streaming extractor finds in `bytes` (local headers one after another, as
/// `ZipInputStream`, libarchive on a pipe or `unzipper` read them), and the names a directory
/// reader lists (as Python's `zipfile` or `unzip -l` do).
pub(super) fn names_seen(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut streamed = Vec::new();
    let mut reader = std::io::Cursor::new(bytes);
    while let Some(mut file) = zip::read::read_zipfile_from_stream(&mut reader).unwrap() {
        streamed.push(String::from_utf8_lossy(file.name_raw()).into_owned());
        // Extract it, as an extractor would (its CRC is checked at the end).
        std::io::copy(&mut file, &mut std::io::sink()).unwrap();
    }
    let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let listed = archive
        .file_names()
        .map(|name| name.unwrap().into_owned())
        .collect();
    (streamed, listed)
}

/// The attack is real: in each of these packs a streaming extractor writes `../../evil.txt`
/// and a directory reader does not see it (so a check that reads the directory only passes
/// it). `hostile_packs_are_refused_naming_the_entry` shows the service refuses them.
#[test]
pub(super) fn hidden_entries_are_extracted_by_streaming_readers_only() {
    for (what, bytes, _, _) in hidden_entry_packs() {
        let (streamed, listed) = names_seen(&bytes);
        assert!(
            streamed.iter().any(|n| n == "../../evil.txt"),
            "{what}: a streaming reader sees {streamed:?}"
        );
        assert!(
            !listed.iter().any(|n| n == "../../evil.txt"),
            "{what}: the directory lists {listed:?}"
        );
    }
}

/// Each kind of hostile pack: what it is, its bytes, and what the refusal must say (the
/// entry, then the rule).
pub(super) fn hostile_packs() -> Vec<(&'static str, Vec<u8>, &'static str, &'static str)> {
    let evil_inner = zip_of(&[("../../evil.txt", b"pwned".to_vec())]);
    let mut prepended = b"MZ\x90\x00 a self-extractor stub ".to_vec();
    prepended.extend_from_slice(&a_pack());
    let mut appended = a_pack();
    appended.extend_from_slice(b"trailing bytes");
    let mut renamed = Raw::file("notes.txt", b"x");
    renamed.local_name = Some(b"../evil.txt".to_vec());
    vec![
        (
            "a legacy (code page 437) name climbing out with '..'",
            raw_zip(&[Raw::file(b"../evil\xff.txt", b"x")]),
            "entry \"../evil",
            "leads to the parent folder",
        ),
        (
            "a legacy name climbing out deep inside",
            raw_zip(&[Raw::file(b"a/../../../../Users/Public/\xff\xfe.bat", b"x")]),
            "entry \"a/../../../../Users/Public/",
            "leads to the parent folder",
        ),
        (
            "a legacy name with a drive letter",
            raw_zip(&[Raw::file(b"C:/Windows/\xff.txt", b"x")]),
            "entry \"C:/Windows/",
            "drive letters",
        ),
        (
            "a name marked UTF-8 that is not",
            raw_zip(&[Raw::file(b"setup\xff.json", b"x").utf8()]),
            "entry \"setup",
            "not valid UTF-8",
        ),
        (
            "a symbolic link",
            raw_zip(&[Raw::file("link", b"../../../../etc/passwd").unix_mode(0o120_777)]),
            "entry \"link\"",
            "symbolic links",
        ),
        (
            "a device file",
            raw_zip(&[Raw::file("tty", b"").unix_mode(0o020_620)]),
            "entry \"tty\"",
            "devices",
        ),
        (
            "'..' with a trailing space",
            raw_zip(&[Raw::file(".. /evil.txt", b"x")]),
            "entry \".. /evil.txt\"",
            "leads to the parent folder",
        ),
        (
            "'..' with trailing dots",
            raw_zip(&[Raw::file("laps/..../evil.txt", b"x")]),
            "entry \"laps/..../evil.txt\"",
            "leads to the parent folder",
        ),
        (
            "an NTFS alternate data stream",
            raw_zip(&[Raw::file("notes.txt:hidden", b"x")]),
            "entry \"notes.txt:hidden\"",
            "alternate data stream",
        ),
        (
            "a Windows device name",
            raw_zip(&[Raw::file("CON", b"x")]),
            "entry \"CON\"",
            "Windows device name",
        ),
        (
            "a Windows device name with an extension",
            raw_zip(&[Raw::file("aux.txt", b"x")]),
            "entry \"aux.txt\"",
            "Windows device name",
        ),
        (
            "a device name as a folder, in lower case",
            raw_zip(&[Raw::file("laps/lpt1/a.json", b"x")]),
            "entry \"laps/lpt1/a.json\"",
            "Windows device name",
        ),
        (
            "the same name twice",
            raw_zip(&[
                Raw::file("setup.json", b"good"),
                Raw::file("setup.json", b"evil"),
            ]),
            "entry \"setup.json\"",
            "clashes with entry \"setup.json\"",
        ),
        (
            "two names that differ only in case",
            raw_zip(&[
                Raw::file("Setup.json", b"good"),
                Raw::file("setup.JSON", b"evil"),
            ]),
            "entry \"setup.JSON\"",
            "clashes with entry \"Setup.json\"",
        ),
        (
            "a nested ZIP holding a traversal name",
            zip_of(&[("team.zip", evil_inner)]),
            "entry \"team.zip\" is a ZIP archive, and in it: entry \"../../evil.txt\"",
            "leads to the parent folder",
        ),
        (
            "data prepended, offsets not adjusted",
            prepended,
            "data outside the archive",
            "data before the archive",
        ),
        (
            "data prepended, offsets adjusted",
            zip_after(b"#!/bin/sh\nexec something\n"),
            "data outside the archive",
            "bytes come before its first entry",
        ),
        (
            "data after the archive",
            appended,
            "data outside the archive",
            "follow the end of the archive",
        ),
        (
            "a local header naming another path than the directory",
            raw_zip(&[renamed]),
            "entry \"notes.txt\"",
            "local header names it differently",
        ),
        (
            "a Unicode Path field climbing out",
            raw_zip(&[Raw::file("readme.txt", b"x").unicode_path("../../evil.txt")]),
            "entry \"readme.txt\"",
            "read as \"../../evil.txt\"",
        ),
        (
            "a name that reverses its extension on screen",
            raw_zip(&[Raw::file("setup\u{202E}nosj.exe", b"x").utf8()]),
            "entry \"setup",
            "text-direction characters",
        ),
        (
            "one name composed and decomposed (NFC and NFD: one file on macOS)",
            raw_zip(&[
                Raw::file("caf\u{e9}.txt", b"good").utf8(),
                Raw::file("cafe\u{301}.txt", b"evil").utf8(),
            ]),
            // Messages show a combining mark escaped.
            "entry \"cafe\\u{301}.txt\"",
            "clashes with entry \"caf\u{e9}.txt\" (the same path once Unicode-normalized",
        ),
        (
            // Lower-casing keeps a long s; case folding makes it an s, as a file system that
            // ignores case may.
            "a long s beside an s",
            raw_zip(&[
                Raw::file("setup.json", b"good").utf8(),
                Raw::file("\u{17f}etup.json", b"evil").utf8(),
            ]),
            "entry \"\u{17f}etup.json\"",
            "clashes with entry \"setup.json\" (the same path once Unicode-normalized and case-folded",
        ),
        (
            "nested archives holding more entries together than a pack may",
            nested_entries(3, 900),
            "entry \"team-2.zip\" is a ZIP archive, and in it",
            "the pack and the archives in it hold at least 2703 entries; at most 2000 in all",
        ),
    ]
    .into_iter()
    .chain(hidden_entry_packs())
    .collect()
}

/// A pack of `archives` ZIPs of `entries` entries each: each under the entry cap, together
/// past it.
pub(super) fn nested_entries(archives: usize, entries: usize) -> Vec<u8> {
    let names: Vec<String> = (0..entries).map(|i| format!("lap-{i}.json")).collect();
    let inner = zip_of(
        &names
            .iter()
            .map(|n| (n.as_str(), b"{}".to_vec()))
            .collect::<Vec<_>>(),
    );
    let outer: Vec<(String, Vec<u8>)> = (0..archives)
        .map(|i| (format!("team-{i}.zip"), inner.clone()))
        .collect();
    zip_of(
        &outer
            .iter()
            .map(|(n, d)| (n.as_str(), d.clone()))
            .collect::<Vec<_>>(),
    )
}

/// Every hostile pack is refused with a 422 naming the entry and the rule, sent directly or
/// through an upload URL, and nothing of it is kept.
pub(super) async fn hostile_packs_are_refused_naming_the_entry(app: TestApp) {
    let (token, _) = app.driver("Mallory").await;
    for (what, bytes, entry, rule) in hostile_packs() {
        let (status, res) = upload(&app, &token, "hostile", bytes.clone()).await;
        assert_eq!(status, 422, "{what}: {res}");
        let message = res["error"].as_str().unwrap();
        assert!(message.contains(entry), "{what}: {message}");
        assert!(message.contains(rule), "{what}: {message}");
        // Through an upload URL: the same check at complete.
        let ticket = start(&app, &token, &bytes, &sha(&bytes)).await;
        assert_eq!(put(ticket["uploadUrl"].as_str().unwrap(), bytes).await, 200);
        let id = ticket["id"].as_str().unwrap();
        let (status, res) = envelope(
            app.post_json_auth(&format!("/v1/sharepacks/{id}/complete"), &json!({}), &token)
                .await,
        )
        .await;
        assert_eq!(status, 422, "{what} through a URL: {res}");
        let message = res["error"].as_str().unwrap();
        assert!(
            message.contains(entry) && message.contains(rule),
            "{what}: {message}"
        );
    }
    no_pack_objects(&app).await;
    let (_, mine) = envelope(app.get_auth("/v1/sharepacks", &token).await).await;
    assert_eq!(mine["data"]["items"], json!([]));
    // Names that hide or reverse text are refused as they are in display names.
    let (status, res) = upload(&app, &token, "Spa%E2%80%AEpihs", a_pack()).await;
    assert_eq!(status, 400, "{res}");
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .starts_with("name: must not contain invisible or text-direction"),
        "{res}"
    );
    let body = json!({"name": "Spa", "description": "fast\u{200B}lap", "sizeBytes": 10, "sha256": "0".repeat(64)});
    let (status, res) = envelope(
        app.post_json_auth("/v1/sharepacks/uploads", &body, &token)
            .await,
    )
    .await;
    assert_eq!(status, 400, "{res}");
    assert!(
        res["error"].as_str().unwrap().starts_with("description:"),
        "{res}"
    );
}
