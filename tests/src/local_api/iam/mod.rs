//! Each function under its own IAM policy, as in AWS: the local API points every AWS endpoint
//! of a function at a proxy of its own ([`proxy`]) that authorises each call as IAM does
//! ([`calls`]) against the function's policy from the transformed template ([`policy`]), and
//! refuses the rest with the service's `AccessDenied`. What was allowed, by which grant, and
//! what was refused is kept ([`Seen`]) so the test command can compare the policies with what
//! the functions call (`tests/template/check_policies.py`).

pub mod calls;
pub mod policy;
pub mod proxy;

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A call a function's policy does not allow.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Refusal {
    /// The function's logical id.
    pub function: String,
    /// `service:Action`.
    pub action: String,
    /// The resource, with the stack's placeholders (`arn:…:table/${UsersTable}`).
    pub resource: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} on {}", self.function, self.action, self.resource)
    }
}

/// What the functions' calls used of their policies, and what was refused: kept in memory and,
/// when a file is named, appended to it once per distinct line (one JSON object a line).
#[derive(Clone, Default)]
pub struct Seen {
    inner: Arc<SeenInner>,
}

#[derive(Default)]
struct SeenInner {
    file: Option<PathBuf>,
    lines: Mutex<HashSet<String>>,
    refusals: Mutex<Vec<Refusal>>,
}

impl Seen {
    /// Keeps what is seen in memory and, when `file` is given, appends it there.
    pub fn new(file: Option<PathBuf>) -> Self {
        Self {
            inner: Arc::new(SeenInner {
                file,
                ..SeenInner::default()
            }),
        }
    }

    /// The distinct calls refused so far.
    pub fn refusals(&self) -> Vec<Refusal> {
        lock(&self.inner.refusals).clone()
    }

    pub(crate) fn allowed(&self, function: &str, statement: &str, action: &str, resource: &str) {
        self.write(serde_json::json!({
            "function": function,
            "statement": statement,
            "action": action,
            "resource": resource,
        }));
    }

    pub(crate) fn refused(&self, refusal: Refusal) {
        self.write(serde_json::json!({
            "function": refusal.function,
            "refused": true,
            "action": refusal.action,
            "resource": refusal.resource,
        }));
        let mut refusals = lock(&self.inner.refusals);
        if !refusals.contains(&refusal) {
            refusals.push(refusal);
        }
    }

    fn write(&self, line: serde_json::Value) {
        let line = line.to_string();
        if !lock(&self.inner.lines).insert(line.clone()) {
            return;
        }
        let Some(path) = &self.inner.file else {
            return;
        };
        // One short line per write with O_APPEND: the test processes running at once append
        // whole lines.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "could not record a call");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
