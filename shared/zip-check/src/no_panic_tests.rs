//! The checker answers every input, however damaged, with a summary or a problem and never
//! panics: a few thousand mutations of a small valid archive, from a fixed seed so that a
//! failure repeats. (The fuzz target under `fuzz/` explores further, with nightly Rust.)

use std::collections::HashSet;
use std::io::{Cursor, Write};

use fastrand::Rng;

use crate::{Limits, check};
use zip::write::SimpleFileOptions;

/// Mutations tried; each is checked from a fresh copy of the archive.
const ROUNDS: u64 = 4_000;

/// A small valid archive: stored and deflated entries, a folder, and a ZIP inside it, so that
/// mutations reach every stage of the check.
fn sample() -> Vec<u8> {
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut inner = zip::ZipWriter::new(Cursor::new(Vec::new()));
    inner.start_file("inner.txt", stored).unwrap();
    inner.write_all(b"inside").unwrap();
    let inner = inner.finish().unwrap().into_inner();

    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("setup.json", SimpleFileOptions::default())
        .unwrap();
    w.write_all(&b"{\"wing\": 4, \"fuel\": 40}".repeat(20))
        .unwrap();
    w.add_directory("laps/", SimpleFileOptions::default())
        .unwrap();
    w.start_file("laps/a.txt", stored).unwrap();
    w.write_all(b"1:23.456").unwrap();
    w.start_file("team.zip", stored).unwrap();
    w.write_all(&inner).unwrap();
    w.finish().unwrap().into_inner()
}

/// Values that sit on the edges of the fields the checker reads.
const INTERESTING: [u32; 8] = [
    0,
    1,
    0x7f,
    0xff,
    0xffff,
    0xffff_ffff,
    0x0403_4b50,
    0x0605_4b50,
];

/// Changes `bytes` in one of a few ways a damaged or hostile archive differs from a good one.
fn mutate(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let len = bytes.len();
    match rng.usize(..7) {
        // Flip a few bits.
        0 => {
            for _ in 0..=rng.usize(..4) {
                let at = rng.usize(..len);
                bytes[at] ^= 1 << rng.usize(..8);
            }
        }
        // A random byte somewhere.
        1 => {
            let at = rng.usize(..len);
            bytes[at] = rng.u8(..);
        }
        // An edge value over a (possibly unaligned) 16- or 32-bit field.
        2 => {
            let value = INTERESTING[rng.usize(..INTERESTING.len())].to_le_bytes();
            let width = if rng.usize(..2) == 0 { 2 } else { 4 };
            let at = rng.usize(..len.saturating_sub(width).max(1));
            let end = (at + width).min(len);
            bytes[at..end].copy_from_slice(&value[..end - at]);
        }
        // Cut the archive short.
        3 => bytes.truncate(rng.usize(..len)),
        // Bytes inserted.
        4 => {
            let at = rng.usize(..len + 1);
            let extra: Vec<u8> = (0..=rng.usize(..8)).map(|_| rng.u8(..)).collect();
            bytes.splice(at..at, extra);
        }
        // A stretch removed.
        5 => {
            let from = rng.usize(..len);
            let to = (from + 1 + rng.usize(..16)).min(len);
            bytes.drain(from..to);
        }
        // A stretch repeated elsewhere (headers copied over other headers).
        _ => {
            let from = rng.usize(..len);
            let to = (from + 1 + rng.usize(..64)).min(len);
            let piece = bytes[from..to].to_vec();
            let at = rng.usize(..len + 1);
            bytes.splice(at..at, piece);
        }
    }
}

#[test]
fn mutated_archives_are_answered_without_a_panic() {
    let good = sample();
    let limits = Limits {
        max_entries: 16,
        max_uncompressed_bytes: 1024 * 1024,
        max_ratio: 10,
    };
    assert_eq!(check(Cursor::new(&good), &limits).unwrap().entries, 4);

    let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let mut refused = 0;
    let mut rules = HashSet::new();
    for round in 0..ROUNDS {
        let mut bytes = good.clone();
        for _ in 0..=rng.usize(..3) {
            if bytes.is_empty() {
                break;
            }
            mutate(&mut bytes, &mut rng);
        }
        let answer = std::panic::catch_unwind(|| check(Cursor::new(&bytes), &limits));
        match answer {
            Ok(Ok(_)) => {}
            Ok(Err(problem)) => {
                refused += 1;
                rules.insert(std::mem::discriminant(problem.innermost()));
            }
            Err(_) => panic!("round {round}: the check panicked on {bytes:02x?}"),
        }
    }
    // The mutations reach past the first checks: most are refused, and not all for one rule.
    assert!(refused > ROUNDS / 2, "only {refused} of {ROUNDS} refused");
    assert!(rules.len() >= 6, "only {} rules broken", rules.len());
}
