//! This process's resident memory, for the tests that measure it (each runs alone in its
//! process: [`crate::own_process::alone`]).

/// A line of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes; `None` where there is none.
pub fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
