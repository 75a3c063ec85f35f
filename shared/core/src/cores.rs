//! How many threads can run at once in this process, read once.
//!
//! `std::thread::available_parallelism` reads the process's cgroup files (its CPU quota) on
//! every call, which shows in a Lambda function's init (docs/perf.md); that init asked three
//! times (the async runtime, the password threads' default, the board cache's shards).

use std::sync::OnceLock;

/// The process's available parallelism (at least 1), as read at the first call.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cores_are_the_system_s_answer_and_stay() {
        let system = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(super::cores(), system);
        assert_eq!(super::cores(), system);
    }
}
