//! Share packs on both backends (embedded; DynamoDB Local and moto S3, following the presigned
//! URLs for real): direct, multipart and upload-URL uploads, sharing by id, byte-identical
//! downloads, owner-only deletes, every kind of bad ZIP, quotas, and the sweep of uploads that
//! were never completed; and the attacks: a pack swapped while `complete` checks it, and ZIPs
//! built to escape an extraction folder on another driver's machine.

use paddock_core::ports::blobs::{BlobError, BlobStream, Taken};
use paddock_core::ports::{Clock, ManualClock};
use paddock_tests::{Backend, TestApp, envelope, spawn_configured};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use zip::write::SimpleFileOptions;

fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, SimpleFileOptions::default()).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn stored_zip(name: &str, data: &[u8]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file(name, options).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap().into_inner()
}

fn sha(bytes: &[u8]) -> String {
    paddock_core::hashing::hex(&Sha256::digest(bytes))
}

fn a_pack() -> Vec<u8> {
    zip_of(&[
        (
            "setup/spa.json",
            br#"{"wing": 7, "tyres": "soft"}"#.to_vec(),
        ),
        ("laps/reference.json", vec![b'x'; 20_000]),
        ("notes.txt", b"brake at the 100 m board".to_vec()),
    ])
}

async fn upload(app: &TestApp, token: &str, name: &str, bytes: Vec<u8>) -> (u16, Value) {
    let res = app
        .client
        .post(format!(
            "{}/v1/sharepacks?name={name}&description=for%20the%20team",
            app.address
        ))
        .bearer_auth(token)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
        .unwrap();
    envelope(res).await
}

/// The ZIP at the download endpoint, following a redirect to presigned storage.
async fn download(
    app: &TestApp,
    token: &str,
    id: &str,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let res = app
        .client
        .get(format!("{}/v1/sharepacks/{id}/download", app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    if status == 302 {
        let location = res.headers()["location"].to_str().unwrap().to_owned();
        let got = reqwest::get(&location).await.unwrap();
        assert_eq!(got.status(), 200);
        let headers = got.headers().clone();
        return (302, headers, got.bytes().await.unwrap().to_vec());
    }
    let headers = res.headers().clone();
    (status, headers, res.bytes().await.unwrap().to_vec())
}

async fn no_pack_objects(app: &TestApp) {
    assert_eq!(
        app.ports.blobs.list("packs/").await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        app.ports.blobs.list("uploads/").await.unwrap(),
        Vec::<String>::new()
    );
}

/// One entry of a hand-made archive: the raw bytes of its name and everything extractors
/// look at, as a hostile tool could write them.
#[derive(Clone)]
struct Raw {
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
    fn file(name: impl AsRef<[u8]>, data: &[u8]) -> Self {
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
fn local_header(name: &[u8], method: u16, flags: u16, values: [u32; 3]) -> Vec<u8> {
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
fn raw_zip(entries: &[Raw]) -> Vec<u8> {
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
fn zip_after(prefix: &[u8]) -> Vec<u8> {
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
fn evil_entry() -> Vec<u8> {
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
fn deflated(data: &[u8]) -> Vec<u8> {
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
fn hidden_entry_packs() -> Vec<(&'static str, Vec<u8>, &'static str, &'static str)> {
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
fn names_seen(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
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
fn hidden_entries_are_extracted_by_streaming_readers_only() {
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
fn hostile_packs() -> Vec<(&'static str, Vec<u8>, &'static str, &'static str)> {
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
fn nested_entries(archives: usize, entries: usize) -> Vec<u8> {
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
async fn hostile_packs_are_refused_naming_the_entry(app: TestApp) {
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

/// Two ZIPs of the same length: a benign pack large enough that checking it takes a while,
/// and one whose entry climbs out of the extraction folder.
fn benign_and_evil() -> (Vec<u8>, bytes::Bytes) {
    let mut seed = 7u32;
    let laps: Vec<u8> = (0..6 * 1024 * 1024)
        .map(|_| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((seed >> 16) & 0x3f) as u8
        })
        .collect();
    let benign = zip_of(&[
        ("laps/reference.json", laps),
        ("notes.txt", b"brake at the 100 m board".to_vec()),
    ]);
    let evil = |pad: usize| {
        raw_zip(&[
            Raw::file("../../../evil.txt", b"pwned"),
            Raw::file("pad.bin", &vec![0u8; pad]),
        ])
    };
    let evil = evil(benign.len() - evil(0).len());
    assert_eq!(evil.len(), benign.len());
    (benign, bytes::Bytes::from(evil))
}

async fn complete_request(app: &TestApp, token: &str, id: &str) -> (u16, Value) {
    envelope(
        app.post_json_auth(&format!("/v1/sharepacks/{id}/complete"), &json!({}), token)
            .await,
    )
    .await
}

/// What `complete` answered, checked against what another driver then downloads: published,
/// the download is exactly the checked bytes; refused, nothing is published.
async fn published_as_checked(
    app: &TestApp,
    reader: &str,
    id: &str,
    answer: &(u16, Value),
    benign: &[u8],
) -> bool {
    let (status, body) = answer;
    match status {
        200 => {
            assert_eq!(body["data"]["sha256"], sha(benign), "{body}");
            let (_, meta) =
                envelope(app.get_auth(&format!("/v1/sharepacks/{id}"), reader).await).await;
            let (_, _, got) = download(app, reader, id).await;
            assert_eq!(sha(&got), meta["data"]["sha256"].as_str().unwrap());
            assert!(got == benign, "the download is what was checked");
            true
        }
        422 => {
            assert!(body["error"].as_str().unwrap().contains("sha256"), "{body}");
            assert_eq!(
                app.get_auth(&format!("/v1/sharepacks/{id}"), reader)
                    .await
                    .status(),
                404
            );
            false
        }
        other => panic!("complete answered {other}: {body}"),
    }
}

/// The swap during `complete`: a PUT of a different ZIP of the same length racing `complete`,
/// at several moments, and one sent once `complete` has closed the upload. The download is
/// always what was checked, or the pack is refused; locally the URL refuses every PUT once
/// `complete` started (S3's presigned URL takes it, and it is never read).
async fn a_pack_swapped_during_complete_is_never_published(app: TestApp) {
    let local = matches!(
        app.settings.backend,
        paddock_core::config::Backend::Embedded
    );
    let (owner, _) = app.driver("Racer").await;
    let (mate, _) = app.driver("Mate").await;
    let (benign, evil) = benign_and_evil();
    let mut outcomes = Vec::new();
    // The PUT starts `delay` ms after complete (before it, when negative).
    for delay in [-60i64, -20, -5, 0, 1, 3, 10, 30, 100, 300] {
        let ticket = start(&app, &owner, &benign, &sha(&benign)).await;
        let id = ticket["id"].as_str().unwrap().to_owned();
        let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
        assert_eq!(put(&url, benign.clone()).await, 200);
        let after =
            |ms: i64| tokio::time::sleep(std::time::Duration::from_millis(ms.max(0) as u64));
        let racer = async {
            after(delay).await;
            attacker_put(&url, evil.clone()).await
        };
        let completing = async {
            after(-delay).await;
            complete_request(&app, &owner, &id).await
        };
        let (answer, raced) = tokio::join!(completing, racer);
        let published = published_as_checked(&app, &mate, &id, &answer, &benign).await;
        // S3's stand-in (moto_server) now and then answers a PUT racing a read of the same key
        // with 500; either way the property under test is the published bytes, checked above.
        assert!(
            raced == 200
                || (local && matches!(raced, 409 | REFUSED_EARLY))
                || (!local && raced == 500),
            "the racing PUT answered {raced}"
        );
        outcomes.push((delay, published, raced));
    }
    println!("delay ms, published, racing PUT: {outcomes:?}");

    // A PUT once complete has closed the upload (and again after it answered).
    let ticket = start(&app, &owner, &benign, &sha(&benign)).await;
    let id = ticket["id"].as_str().unwrap().to_owned();
    let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    assert_eq!(put(&url, benign.clone()).await, 200);
    let completing = {
        let client = app.client.clone();
        let address = format!("{}/v1/sharepacks/{id}/complete", app.address);
        let owner = owner.clone();
        tokio::spawn(async move {
            let res = client
                .post(address)
                .bearer_auth(owner)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            envelope(res).await
        })
    };
    let started = std::time::Instant::now();
    loop {
        let state = paddock_core::sharepacks::packs::upload_state(&app.ports, &id)
            .await
            .unwrap();
        if state != paddock_core::sharepacks::packs::Upload::Open {
            break;
        }
        assert!(started.elapsed().as_secs() < 30, "complete never started");
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let late = attacker_put(&url, evil.clone()).await;
    let answer = completing.await.unwrap();
    let published = published_as_checked(&app, &mate, &id, &answer, &benign).await;
    let after = attacker_put(&url, evil.clone()).await;
    if local {
        assert!(
            matches!(late, 409 | REFUSED_EARLY),
            "the URL takes nothing once complete started: {late}"
        );
        assert!(matches!(after, 409 | REFUSED_EARLY), "{after}");
        assert!(published, "nothing disturbed the check");
    } else {
        assert_eq!(
            (late, after),
            (200, 200),
            "S3 takes the PUT; it is never read"
        );
    }
    if published {
        let (_, _, got) = download(&app, &mate, &id).await;
        assert!(got == benign, "still what was checked after the late PUTs");
    }
}

/// A blob store that looks at where `complete` stages a pack before handing over to the real
/// one: every staging path seen, with its directory's mode and whether the file existed.
struct StagingWitness {
    inner: Arc<dyn paddock_core::ports::BlobStore>,
    seen: std::sync::Mutex<Vec<(std::path::PathBuf, u32, bool)>>,
}

#[async_trait::async_trait]
impl paddock_core::ports::BlobStore for StagingWitness {
    async fn put(&self, key: &str, bytes: bytes::Bytes, ct: &str) -> Result<(), BlobError> {
        self.inner.put(key, bytes, ct).await
    }
    async fn get(&self, key: &str) -> Result<Option<bytes::Bytes>, BlobError> {
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        self.inner.list(prefix).await
    }
    async fn presigned_get(
        &self,
        key: &str,
        ttl: std::time::Duration,
        name: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_get(key, ttl, name).await
    }
    async fn presigned_put(
        &self,
        key: &str,
        ttl: std::time::Duration,
        length: u64,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_put(key, ttl, length).await
    }
    async fn put_file(&self, key: &str, path: &Path, ct: &str) -> Result<(), BlobError> {
        self.inner.put_file(key, path, ct).await
    }
    async fn take_to_file(
        &self,
        key: &str,
        hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = path.parent().unwrap();
        let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
        self.seen
            .lock()
            .unwrap()
            .push((path.to_owned(), mode, path.exists()));
        self.inner.take_to_file(key, hold, path).await
    }
    async fn publish_taken(&self, taken: &Taken, path: &Path, to: &str) -> Result<bool, BlobError> {
        self.inner.publish_taken(taken, path, to).await
    }
    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError> {
        self.inner.get_stream(key).await
    }
}

/// Staging files (finding: `/tmp/pack-<id>.zip`): a link planted at the old predictable path,
/// pointing at a file of the victim's, is never followed; `complete` stages in a fresh
/// directory only the server may enter (0700), at a name that holds no pack id, creating its
/// file exclusively, and leaves nothing behind.
async fn staging_is_private_and_unpredictable(backend: Backend) {
    let t = paddock_tests::ports(backend).await;
    let witness = Arc::new(StagingWitness {
        inner: t.ports.blobs.clone(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let mut ports = t.ports.clone();
    ports.blobs = witness.clone();
    let app = paddock_tests::spawn_with(t.settings, ports, t.dir).await;
    let (owner, _) = app.driver("Stager").await;
    let bytes = a_pack();
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let id = ticket["id"].as_str().unwrap().to_owned();
    assert_eq!(
        put(ticket["uploadUrl"].as_str().unwrap(), bytes.clone()).await,
        200
    );
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("victim.txt");
    std::fs::write(&victim, b"the victim's own file").unwrap();
    let planted = std::env::temp_dir().join(format!("pack-{id}.zip"));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let (status, done) = complete_request(&app, &owner, &id).await;
    std::fs::remove_file(&planted).unwrap();
    assert_eq!(status, 200, "{done}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"the victim's own file");
    let seen = witness.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (path, mode, existed) = &seen[0];
    assert_eq!(*mode, 0o700, "{path:?}");
    assert!(!existed, "{path:?}");
    assert!(!path.to_string_lossy().contains(&id), "{path:?}");
    assert!(
        !path.parent().unwrap().exists(),
        "the staging directory is removed"
    );
    let (_, _, got) = download(&app, &owner, &id).await;
    assert!(got == bytes);
}

async fn packs_are_shared_by_id_and_deleted_by_their_owner(app: TestApp) {
    let (owner, _) = app.driver("Packer").await;
    let (mate, _) = app.driver("Mate").await;
    let bytes = a_pack();
    let (status, created) = upload(&app, &owner, "Spa%20setups", bytes.clone()).await;
    assert_eq!(status, 201, "{created}");
    let pack = created["data"].clone();
    assert_eq!(pack["name"], "Spa setups");
    assert_eq!(pack["sizeBytes"], bytes.len());
    assert_eq!(pack["sha256"], sha(&bytes));
    assert_eq!(pack["entryCount"], 3);
    let id = pack["id"].as_str().unwrap().to_owned();

    let (_, mine) = envelope(app.get_auth("/v1/sharepacks", &owner).await).await;
    assert_eq!(mine["data"]["items"][0]["id"], id.as_str());
    let (_, theirs) = envelope(app.get_auth("/v1/sharepacks", &mate).await).await;
    assert_eq!(
        theirs["data"]["items"],
        json!([]),
        "a list is the caller's own"
    );

    let (status, meta) = envelope(app.get_auth(&format!("/v1/sharepacks/{id}"), &mate).await).await;
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["data"]["ownerDisplayName"], "Packer");
    let (status, headers, got) = download(&app, &mate, &id).await;
    assert!(status == 200 || status == 302);
    assert_eq!(sha(&got), sha(&bytes), "byte-identical");
    if status == 200 {
        assert_eq!(headers["content-type"], "application/zip");
        assert_eq!(
            headers["content-disposition"],
            "attachment; filename=\"Spa setups.zip\""
        );
        assert_eq!(headers["etag"], format!("\"{}\"", sha(&bytes)).as_str());
        assert_eq!(headers["content-length"], bytes.len().to_string().as_str());
    }

    let delete = |token: &str| {
        app.client
            .delete(format!("{}/v1/sharepacks/{id}", app.address))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(
        delete(&mate).await.unwrap().status(),
        404,
        "only the owner deletes"
    );
    assert_eq!(
        app.get_auth(&format!("/v1/sharepacks/{id}"), &mate)
            .await
            .status(),
        200
    );
    // Two deletes at once: one wins, the other finds nothing.
    let (a, b) = tokio::join!(delete(&owner), delete(&owner));
    let mut statuses = [a.unwrap().status().as_u16(), b.unwrap().status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 404]);
    assert_eq!(
        app.get_auth(&format!("/v1/sharepacks/{id}"), &owner)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.get_auth("/v1/sharepacks/not-a-pack", &owner)
            .await
            .status(),
        404
    );
    no_pack_objects(&app).await;

    // A multipart form works the same.
    let form = reqwest::multipart::Form::new()
        .text("name", "Monza")
        .text("description", "low wing")
        .part(
            "file",
            reqwest::multipart::Part::bytes(a_pack()).file_name("monza.zip"),
        );
    let res = app
        .client
        .post(format!("{}/v1/sharepacks", app.address))
        .bearer_auth(&owner)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let (status, created) = envelope(res).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["name"], "Monza");
}

async fn start(app: &TestApp, token: &str, bytes: &[u8], declared_sha: &str) -> Value {
    let body =
        json!({"name": "Big", "description": "", "sizeBytes": bytes.len(), "sha256": declared_sha});
    let (status, res) = envelope(
        app.post_json_auth("/v1/sharepacks/uploads", &body, token)
            .await,
    )
    .await;
    assert_eq!(status, 201, "{res}");
    res["data"].clone()
}

/// A PUT of an attacker: its status, or `REFUSED_EARLY` when the server refused it before it
/// read the body (the connection closes under the body being sent).
async fn attacker_put(url: &str, bytes: bytes::Bytes) -> u16 {
    match reqwest::Client::new()
        .put(url)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
    {
        Ok(res) => res.status().as_u16(),
        Err(e) if e.is_request() => REFUSED_EARLY,
        Err(e) => panic!("{e}"),
    }
}

/// See [`attacker_put`].
const REFUSED_EARLY: u16 = 0;

async fn put(url: &str, bytes: impl Into<reqwest::Body>) -> u16 {
    reqwest::Client::new()
        .put(url)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn large_packs_go_through_upload_urls(app: TestApp, clock: Arc<ManualClock>) {
    let (owner, _) = app.driver("Uploader").await;
    let bytes = zip_of(&[(
        "big.bin",
        (0..300_000u32).flat_map(u32::to_le_bytes).collect(),
    )]);
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let id = ticket["id"].as_str().unwrap().to_owned();
    let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get_auth(&format!("/v1/sharepacks/{id}"), &owner)
            .await
            .status(),
        404,
        "invisible until complete"
    );
    assert_eq!(put(&url, bytes.clone()).await, 200);
    let (status, done) = envelope(
        app.post_json_auth(&format!("/v1/sharepacks/{id}/complete"), &json!({}), &owner)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["data"]["sha256"], sha(&bytes));
    let (_, _, got) = download(&app, &owner, &id).await;
    assert_eq!(sha(&got), sha(&bytes));

    // A wrong digest: refused with the reason, and nothing stays.
    let other = a_pack();
    let ticket = start(&app, &owner, &other, &"0".repeat(64)).await;
    let bad_id = ticket["id"].as_str().unwrap().to_owned();
    assert_eq!(
        put(ticket["uploadUrl"].as_str().unwrap(), other.clone()).await,
        200
    );
    let (status, res) = envelope(
        app.post_json_auth(
            &format!("/v1/sharepacks/{bad_id}/complete"),
            &json!({}),
            &owner,
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "{res}");
    assert!(res["error"].as_str().unwrap().contains("sha256"), "{res}");
    let keys = app.ports.blobs.list("packs/").await.unwrap();
    assert_eq!(
        keys,
        vec![format!("packs/{id}.zip")],
        "the refused object is gone"
    );
    assert!(
        app.ports.blobs.list("uploads/").await.unwrap().is_empty(),
        "the refused object is gone"
    );
    // ... and so is its item: the store knows the pack no more.
    assert!(
        paddock_core::sharepacks::packs::pending(&app.ports, &bad_id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        paddock_core::sharepacks::packs::get(&app.ports, &bad_id)
            .await
            .unwrap()
            .is_none()
    );

    // Not a ZIP at all, through the URL: 422 naming why.
    let junk = b"definitely not a zip file".to_vec();
    let ticket = start(&app, &owner, &junk, &sha(&junk)).await;
    assert_eq!(put(ticket["uploadUrl"].as_str().unwrap(), junk).await, 200);
    let junk_id = ticket["id"].as_str().unwrap();
    let (status, res) = envelope(
        app.post_json_auth(
            &format!("/v1/sharepacks/{junk_id}/complete"),
            &json!({}),
            &owner,
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "{res}");
    assert_eq!(res["error"], "not a ZIP archive");

    // Never completed: after its URL expired, the sweep removes the pending pack and object.
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let orphan = ticket["id"].as_str().unwrap().to_owned();
    let orphan_url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    assert_eq!(put(&orphan_url, bytes.clone()).await, 200);
    assert_eq!(
        app.ports.blobs.list("uploads/").await.unwrap().len(),
        1,
        "waiting for complete"
    );
    clock.advance(time::Duration::hours(2));
    let report = paddock_core::retention::sweep(&app.ports).await.unwrap();
    assert_eq!(report.of("sharepack_uploads"), 1, "{report:?}");
    assert_eq!(
        app.ports.blobs.list("packs/").await.unwrap(),
        vec![format!("packs/{id}.zip")]
    );
    assert!(
        app.ports.blobs.list("uploads/").await.unwrap().is_empty(),
        "{orphan} swept"
    );
    assert!(
        paddock_core::sharepacks::packs::pending(&app.ports, &orphan)
            .await
            .unwrap()
            .is_none()
    );

    // A delete cut short after its transaction (object and item left behind): the pack is
    // already invisible, and the sweep finishes the job.
    let item = paddock_core::ports::items::Key::new(format!("PACK#{id}"), "META");
    let update = paddock_core::ports::items::Update::set("state", "deleting")
        .and_set(paddock_core::ports::items::TTL, clock.unix() + 60);
    app.ports
        .items
        .update(paddock_core::tables::Table::Sharepacks, &item, update, None)
        .await
        .unwrap();
    assert!(
        paddock_core::sharepacks::packs::get(&app.ports, &id)
            .await
            .unwrap()
            .is_none(),
        "hidden at once"
    );
    clock.advance(time::Duration::minutes(2));
    let report = paddock_core::retention::sweep(&app.ports).await.unwrap();
    assert_eq!(report.of("sharepack_uploads"), 1, "{report:?}");
    assert!(app.ports.blobs.list("packs/").await.unwrap().is_empty());
}

async fn local_upload_urls_are_signed(app: TestApp, clock: Arc<ManualClock>) {
    let (owner, _) = app.driver("Signer").await;
    let bytes = a_pack();
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    let tampered = url.replace("signature=", "signature=00");
    assert_eq!(put(&tampered, bytes.clone()).await, 403);
    let longer = url.replace(
        &format!("length={}", bytes.len()),
        &format!("length={}", bytes.len() + 1),
    );
    assert_eq!(put(&longer, bytes.clone()).await, 403);
    let mut short = bytes.clone();
    short.pop();
    assert_eq!(put(&url, short).await, 400, "not the declared length");
    clock.advance(time::Duration::minutes(16));
    assert_eq!(put(&url, bytes).await, 403, "expired");
}

async fn bad_packs_are_refused_and_nothing_is_stored(app: TestApp) {
    let (token, _) = app.driver("Mallory").await;
    let good = a_pack();
    let mut truncated = good.clone();
    truncated.truncate(good.len() / 2);
    let mut bad_crc = stored_zip("data.bin", &[7u8; 5000]);
    // Flip a byte inside the stored data (after the 30-byte header and the name).
    bad_crc[30 + "data.bin".len() + 100] ^= 0xff;
    let mut encrypted = stored_zip("secret.txt", b"hidden");
    // Mark the entry encrypted in its local header and its central directory entry.
    encrypted[6] |= 1;
    let central = encrypted
        .windows(4)
        .position(|w| w == [0x50, 0x4b, 0x01, 0x02])
        .unwrap();
    encrypted[central + 8] |= 1;
    let ratio_bomb = zip_of(&[("zeros.bin", vec![0u8; 30 * 1024 * 1024])]);
    // Nine entries that each compress about 20:1 (under the ratio cap) but inflate to 18 MiB
    // together: the total cap (16 MiB in this test) stops them.
    let mut seed = 7u32;
    let mut sparse = || -> Vec<u8> {
        (0..2 * 1024 * 1024)
            .map(|i| {
                if i % 64 == 0 {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (seed >> 16) as u8
                } else {
                    0
                }
            })
            .collect()
    };
    let layers: Vec<(String, Vec<u8>)> = (0..9)
        .map(|i| (format!("layer/{i}.bin"), sparse()))
        .collect();
    let many_bomb = zip_of(
        &layers
            .iter()
            .map(|(n, d)| (n.as_str(), d.clone()))
            .collect::<Vec<_>>(),
    );
    let too_many = zip_of(
        &(0..12)
            .map(|i| {
                (
                    Box::leak(format!("f{i}").into_boxed_str()) as &str,
                    vec![1u8],
                )
            })
            .collect::<Vec<_>>(),
    );
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("not a zip", b"hello".to_vec(), 422, "not a ZIP archive"),
        ("truncated", truncated, 422, "not a ZIP archive"),
        ("bad crc", bad_crc, 422, "damaged"),
        (
            "parent path",
            zip_of(&[("../evil", b"x".to_vec())]),
            422,
            "\"../evil\"",
        ),
        (
            "absolute path",
            zip_of(&[("/etc/passwd", b"x".to_vec())]),
            422,
            "\"/etc/passwd\"",
        ),
        ("encrypted", encrypted, 422, "encrypted"),
        ("ratio bomb", ratio_bomb, 422, "compression ratio"),
        ("many-entry bomb", many_bomb, 422, "inflates to more than"),
        (
            "too many entries",
            too_many,
            422,
            "declares 12 entries; at most 10",
        ),
        (
            "over the direct size",
            vec![0u8; 2 * 1024 * 1024 + 1],
            413,
            "POST /v1/sharepacks/uploads",
        ),
    ];
    for (what, bytes, status, message) in cases {
        let (got, res) = upload(&app, &token, "x", bytes).await;
        assert_eq!(got, status, "{what}: {res}");
        assert!(
            res["error"].as_str().unwrap().contains(message),
            "{what}: {res}"
        );
    }
    no_pack_objects(&app).await;
    let (_, mine) = envelope(app.get_auth("/v1/sharepacks", &token).await).await;
    assert_eq!(mine["data"]["items"], json!([]));
    let res = app
        .client
        .post(format!("{}/v1/sharepacks?name=x", app.address))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body("zip?")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    let (status, res) = upload(&app, &token, "", a_pack()).await;
    assert_eq!(status, 400, "{res}");
    assert!(res["error"].as_str().unwrap().starts_with("name"), "{res}");
}

async fn quotas_hold(app: TestApp) {
    let (token, _) = app.driver("Hoarder").await;
    for i in 0..2 {
        let (status, res) = upload(&app, &token, &format!("p{i}"), a_pack()).await;
        assert_eq!(status, 201, "{res}");
    }
    let (status, res) = upload(&app, &token, "p2", a_pack()).await;
    assert_eq!(status, 429, "{res}");
    assert!(
        res["error"].as_str().unwrap().contains("2 share packs"),
        "{res}"
    );
    // Uploads a minute are counted whatever their fate: the limit is 4.
    for _ in 0..1 {
        let _ = upload(&app, &token, "x", b"nope".to_vec()).await;
    }
    let (status, _) = upload(&app, &token, "x", b"nope".to_vec()).await;
    assert_eq!(status, 429, "the fifth upload in a minute");
    assert_eq!(app.ports.blobs.list("packs/").await.unwrap().len(), 2);
}

/// The minute's upload limit counts attempts, not successes: a pack refused by the check, a
/// body too large, a bad name, and a pack through an upload URL whose completion is refused
/// each take a place (the limit is 4 here).
async fn refused_uploads_count_against_the_minute(app: TestApp) {
    let (token, _) = app.driver("Looper").await;
    let (status, res) = upload(&app, &token, "x", b"not a zip".to_vec()).await;
    assert_eq!(status, 422, "{res}");
    let (status, res) = upload(&app, &token, "x", vec![0u8; 512 * 1024 + 1]).await;
    assert_eq!(status, 413, "{res}");
    let (status, res) = upload(&app, &token, "", a_pack()).await;
    assert_eq!(status, 400, "{res}");
    let (status, res) = upload(&app, &token, "x", vec![0u8; 512 * 1024 + 1]).await;
    assert_eq!(status, 413, "{res}");
    // Four refused attempts: a good pack now waits for the minute to pass.
    let (status, res) = upload(&app, &token, "good", a_pack()).await;
    assert_eq!(status, 429, "the fifth attempt in a minute: {res}");
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .starts_with("too many requests"),
        "{res}"
    );
    no_pack_objects(&app).await;

    // Through upload URLs: each refused completion was an attempt.
    let (other, _) = app.driver("BigLooper").await;
    let bad = stored_zip("../evil.txt", b"x");
    for n in 0..4 {
        let ticket = start(&app, &other, &bad, &sha(&bad)).await;
        assert_eq!(
            put(ticket["uploadUrl"].as_str().unwrap(), bad.clone()).await,
            200
        );
        let id = ticket["id"].as_str().unwrap();
        let (status, res) = complete_request(&app, &other, id).await;
        assert_eq!(status, 422, "completion {n}: {res}");
        // Refused, the pack is gone: completing it again checks nothing.
        let (status, res) = complete_request(&app, &other, id).await;
        assert_eq!(status, 404, "completion {n} again: {res}");
    }
    let body = json!({"name": "Big", "sizeBytes": bad.len(), "sha256": sha(&bad)});
    let (status, res) = envelope(
        app.post_json_auth("/v1/sharepacks/uploads", &body, &other)
            .await,
    )
    .await;
    assert_eq!(status, 429, "the fifth upload started in a minute: {res}");
    let (status, res) = upload(&app, &other, "good", a_pack()).await;
    assert_eq!(status, 429, "a direct upload shares the limit: {res}");
    no_pack_objects(&app).await;
}

fn limits(s: &mut paddock_core::config::Settings) {
    s.sharepacks.max_direct_bytes = 512 * 1024;
    s.sharepacks.max_entries = 10;
    s.sharepacks.max_uncompressed_bytes = 16 * 1024 * 1024;
    s.sharepacks.max_per_user = 2;
    s.sharepacks.uploads_per_minute = 4;
}

/// Limits that the attack tests do not test.
fn open_limits(s: &mut paddock_core::config::Settings) {
    s.sharepacks.uploads_per_minute = 1000;
    s.sharepacks.max_per_user = 1000;
}

macro_rules! configured {
    ($backend:ident, $module:ident) => {
        mod $module {
            use super::*;
            #[tokio::test(flavor = "multi_thread")]
            async fn packs_are_shared_by_id_and_deleted_by_their_owner() {
                let (app, _) = spawn_configured(Backend::$backend, |s| {
                    s.sharepacks.max_direct_bytes = 512 * 1024
                })
                .await;
                super::packs_are_shared_by_id_and_deleted_by_their_owner(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn large_packs_go_through_upload_urls() {
                let (app, clock) = spawn_configured(Backend::$backend, |_| {}).await;
                super::large_packs_go_through_upload_urls(app, clock).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn bad_packs_are_refused_and_nothing_is_stored() {
                let (app, _) = spawn_configured(Backend::$backend, |s| {
                    limits(s);
                    s.sharepacks.max_direct_bytes = 2 * 1024 * 1024;
                    s.sharepacks.uploads_per_minute = 100;
                    s.sharepacks.max_per_user = 100;
                })
                .await;
                super::bad_packs_are_refused_and_nothing_is_stored(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn hostile_packs_are_refused_naming_the_entry() {
                let (app, _) = spawn_configured(Backend::$backend, open_limits).await;
                super::hostile_packs_are_refused_naming_the_entry(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn a_pack_swapped_during_complete_is_never_published() {
                let (app, _) = spawn_configured(Backend::$backend, open_limits).await;
                super::a_pack_swapped_during_complete_is_never_published(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn staging_is_private_and_unpredictable() {
                super::staging_is_private_and_unpredictable(Backend::$backend).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn quotas_hold() {
                let (app, _) = spawn_configured(Backend::$backend, limits).await;
                super::quotas_hold(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn refused_uploads_count_against_the_minute() {
                let (app, _) = spawn_configured(Backend::$backend, limits).await;
                super::refused_uploads_count_against_the_minute(app).await;
            }
        }
    };
}

configured!(Embedded, embedded);
configured!(Aws, dynamodb_local);

#[tokio::test(flavor = "multi_thread")]
async fn local_upload_urls_are_signed_and_expire() {
    let (app, clock) = spawn_configured(Backend::Embedded, |_| {}).await;
    local_upload_urls_are_signed(app, clock).await;
}

/// The same scenarios through the share-pack function behind the local API, with the same
/// limits given as its settings.
mod functions {
    use paddock_tests::spawn_functions_with;

    const LIMITS: &[(&str, &str)] = &[
        ("Sharepacks__MaxDirectBytes", "524288"),
        ("Sharepacks__MaxEntries", "10"),
        ("Sharepacks__MaxUncompressedBytes", "16777216"),
        ("Sharepacks__MaxPerUser", "2"),
        ("Sharepacks__UploadsPerMinute", "4"),
    ];
    const OPEN_LIMITS: &[(&str, &str)] = &[
        ("Sharepacks__UploadsPerMinute", "1000"),
        ("Sharepacks__MaxPerUser", "1000"),
    ];

    #[tokio::test(flavor = "multi_thread")]
    async fn packs_are_shared_by_id_and_deleted_by_their_owner() {
        let app = spawn_functions_with(&[("Sharepacks__MaxDirectBytes", "524288")]).await;
        super::packs_are_shared_by_id_and_deleted_by_their_owner(app).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn hostile_packs_are_refused_naming_the_entry() {
        super::hostile_packs_are_refused_naming_the_entry(spawn_functions_with(OPEN_LIMITS).await)
            .await;
    }

    /// A pack above the direct limit goes up as the deployed stack takes it: `uploadUrl` is
    /// an S3 presigned PUT for the pack's object under `uploads/` (signed by the share-pack
    /// function, with that function's rights), not a URL of the API, although the secret has
    /// no `uploadUrlKey` (the stack's does not); the PUT and `complete` publish the pack.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_large_pack_goes_up_through_an_s3_presigned_put() {
        let app = spawn_functions_with(&[("Sharepacks__MaxDirectBytes", "524288")]).await;
        let (owner, _) = app.driver("Uploader").await;
        let (reader, _) = app.driver("Reader").await;
        let bytes = super::zip_of(&[(
            "big.bin",
            (0..300_000u32).flat_map(u32::to_le_bytes).collect(),
        )]);
        let ticket = super::start(&app, &owner, &bytes, &super::sha(&bytes)).await;
        let url = ticket["uploadUrl"].as_str().unwrap();
        let bucket = app.settings.bucket.as_deref().unwrap();
        assert!(!url.starts_with(&app.address), "{url}");
        assert!(
            url.contains(&format!("/{bucket}/uploads/")) && url.contains("X-Amz-Signature="),
            "{url}"
        );
        assert_eq!(super::put(url, bytes.clone()).await, 200);
        let id = ticket["id"].as_str().unwrap();
        let answer = super::complete_request(&app, &owner, id).await;
        assert_eq!(answer.0, 200, "{}", answer.1);
        assert!(super::published_as_checked(&app, &reader, id, &answer, &bytes).await);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn quotas_hold() {
        super::quotas_hold(spawn_functions_with(LIMITS).await).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn refused_uploads_count_against_the_minute() {
        super::refused_uploads_count_against_the_minute(spawn_functions_with(LIMITS).await).await;
    }
}
