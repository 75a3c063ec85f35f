//! The layout of the test suite, which keeps the test command quick: a few test binaries
//! (each one linked once, its tests run at once across areas), each a folder of modules, and
//! no test file too long to read.

use std::path::{Path, PathBuf};

/// Test binaries: each is linked on its own, the costliest step of a change's verdict.
const MAX_BINARIES: usize = 5;
/// Lines of one test file.
const MAX_LINES: usize = 1_000;

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a test folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_suite_is_a_few_binaries_of_short_files() {
    let dir = tests_dir();
    let mut binaries = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            path.is_dir(),
            "{}: a file at the top of tests/tests is a binary of its own; make it a module of \
             one of the binaries (a folder with main.rs)",
            path.display()
        );
        assert!(
            path.join("main.rs").is_file(),
            "{} has no main.rs",
            path.display()
        );
        binaries.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    binaries.sort();
    assert!(
        binaries.len() <= MAX_BINARIES,
        "{} test binaries ({binaries:?}), at most {MAX_BINARIES}",
        binaries.len()
    );
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "test files over {MAX_LINES} lines: {long:?}"
    );
}
