//! The library crates stay small enough to read and to rebuild: no crate under `shared/` over
//! 6,000 lines of non-test code, no library file over 600. A crate past the first splits along
//! the domain's graph (README, Crates); a file past the second, along a seam of its own.
//! The plumbing has budgets of its own: the HTTP layer (`shared/http/src/http`) stays under
//! 1,500 lines, maintained crates doing what they can.

use std::path::{Path, PathBuf};

const MAX_CRATE_LINES: usize = 6_000;
const MAX_FILE_LINES: usize = 600;
/// The HTTP layer's budget (`shared/http/src/http`).
const MAX_HTTP_LAYER_LINES: usize = 1_500;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a library file before its unit tests (a `#[cfg(test)]` module at the end);
/// none for a file of unit tests (`tests.rs`, `*_tests.rs`).
fn library_lines(path: &Path) -> usize {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return 0;
    }
    let text = std::fs::read_to_string(path).expect("a readable source file");
    let lines: Vec<&str> = text.lines().collect();
    let tests_start = lines
        .windows(2)
        .position(|pair| pair[0].starts_with("#[cfg(test)]") && pair[1].starts_with("mod "));
    tests_start.unwrap_or(lines.len())
}

/// The library lines of every Rust file under `dir`.
fn folder_lines(dir: &Path) -> usize {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.iter().map(|file| library_lines(file)).sum()
}

#[test]
fn the_plumbing_stays_within_its_budget() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let http = folder_lines(&shared.join("http/src/http"));
    assert!(
        http < MAX_HTTP_LAYER_LINES,
        "the HTTP layer (shared/http/src/http) is {http} lines, over {MAX_HTTP_LAYER_LINES}"
    );
}

#[test]
fn no_library_crate_nor_file_is_too_long() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(&shared).expect("the shared folder") {
        let src = entry.expect("an entry").path().join("src");
        if !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut crate_lines = 0;
        for file in files {
            let lines = library_lines(&file);
            crate_lines += lines;
            if lines > MAX_FILE_LINES {
                failures.push(format!("{}: {lines} lines", file.display()));
            }
        }
        if crate_lines > MAX_CRATE_LINES {
            failures.push(format!("{}: {crate_lines} lines", src.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "over {MAX_CRATE_LINES} lines a crate or {MAX_FILE_LINES} a file:\n{failures:#?}"
    );
}
