//! Runs the ZIP check over arbitrary bytes: whatever they are, it answers a summary or a
//! problem, and never panics, overflows or reads out of bounds. The limits are small, so that
//! inputs reach the caps (and a run stays fast).

#![no_main]

use libfuzzer_sys::fuzz_target;
use zip_check::{Limits, check};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_entries: 32,
        max_uncompressed_bytes: 1024 * 1024,
        max_ratio: 20,
    };
    let _ = check(std::io::Cursor::new(data), &limits);
});
