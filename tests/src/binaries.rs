//! The workspace's binaries, built by cargo and located through its build messages.
//!
//! Tests of a function binary run the real executable. `env!("CARGO_BIN_EXE_...")` only names
//! the binaries of the test's own package, and `target/debug` may hold stale ones when only
//! this package was built, so cargo is asked to build them (a no-op after `cargo test
//! --workspace --all-targets`, which builds every binary) and to say where each one is.

use anyhow::{Context, bail};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The workspace root (the directory of the top `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lies in the workspace")
        .to_path_buf()
}

/// Builds the binaries of `packages` (every workspace member when empty) with cargo profile
/// `profile` and answers their paths by binary name.
pub fn build(profile: &str, packages: &[&str]) -> anyhow::Result<HashMap<String, PathBuf>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .args([
            "build",
            "--bins",
            "--message-format=json-render-diagnostics",
        ])
        .args(["--profile", profile])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // What cargo sets for a test process (the package's name, version and directories): a
    // build script that asks to be run again when one of these changes (ring's, through the
    // C compiler crate) would see this package's values instead of none, and cargo would
    // build it, and every crate above it, again, here and again in the next outer build.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name.as_ref(),
                "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR"
            )
        {
            command.env_remove(name.as_ref());
        }
    }
    if packages.is_empty() {
        command.arg("--workspace");
    }
    for package in packages {
        command.args(["-p", package]);
    }
    let output = command.output().context("running cargo build")?;
    if !output.status.success() {
        bail!("cargo build of the binaries failed ({})", output.status);
    }
    let mut binaries = HashMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_bin = message["target"]["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
        if message["reason"] == "compiler-artifact"
            && is_bin
            && let (Some(name), Some(path)) = (
                message["target"]["name"].as_str(),
                message["executable"].as_str(),
            )
        {
            binaries.insert(name.to_owned(), PathBuf::from(path));
        }
    }
    Ok(binaries)
}
