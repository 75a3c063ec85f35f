//! A test that needs its process to itself: one that measures the process's memory, or
//! installs the process's global log subscriber. The test binaries hold many tests each, run
//! at once.

use std::process::Command;

/// The variable that marks a run of this binary made by [`alone`], naming its one test.
const ALONE: &str = "PADDOCK_TEST_ALONE";

/// Whether the caller, the test whose full name (`module::path::test`) is `test`, runs alone
/// in its process. When it does not, runs this test binary again with `test` as its only test,
/// prints what it printed, fails if it failed, and answers false: the caller then returns, its
/// work done in the other process.
// Not rusty-fork: it runs only synchronous `#[test]` bodies, and these tests are `#[tokio::test]`.
pub fn alone(test: &str) -> bool {
    if std::env::var(ALONE).is_ok_and(|t| t == test) {
        return true;
    }
    let exe = std::env::current_exe().expect("this test binary");
    let out = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(ALONE, test)
        .output()
        .expect("this test binary runs again");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{test} failed in its own process");
    assert!(
        stdout.contains("1 passed"),
        "{test} did not run in its own process (is its name whole?)"
    );
    false
}
