//! One data directory, one process: the embedded store caches point reads of what it wrote,
//! which is exact only while nothing else writes its file.

use paddock_core::ports::SystemClock;
use paddock_runtime::wiring::embedded_ports;
use std::sync::Arc;

#[test]
fn a_second_store_over_a_locked_data_directory_is_refused_until_the_first_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let settings = paddock_tests::test_settings(&dir);
    let first = embedded_ports(&settings, Arc::new(SystemClock)).expect("the first store opens");
    let refused = embedded_ports(&settings, Arc::new(SystemClock))
        .err()
        .expect("a second store over the same directory is refused");
    let message = format!("{refused:#}");
    assert!(
        message.contains("another Paddock process is using the data directory")
            && message.contains(&dir.path().display().to_string())
            && message.contains("Data__Dir"),
        "{message}"
    );
    drop(first);
    let _ports = embedded_ports(&settings, Arc::new(SystemClock))
        .expect("free again once the first is gone");

    // Another process is refused too: flock(1) from util-linux asks for the same lock without
    // waiting. (One test, not two: a child process started while another test drops its
    // store would hold that store's lock until the child's exec.)
    let lock = dir.path().join("paddock.lock");
    let status = std::process::Command::new("flock")
        .args(["--nonblock", "--exclusive"])
        .arg(&lock)
        .arg("true")
        .status();
    if let Ok(status) = status {
        assert!(!status.success(), "another process cannot take the lock");
    }
}
