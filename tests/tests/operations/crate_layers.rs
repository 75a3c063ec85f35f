//! The crates under `shared/` are layers, and `cargo metadata` proves it: the core links no
//! HTTP, AWS, Lambda or SQLite crate (not even through another crate), and each crate depends
//! only on the layers below it (the leaf crates under the core on none).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Crates the core must not link, by name or name prefix (`*`): what speaks HTTP, AWS,
/// Lambda or SQLite belongs to an adapter, the API or the runtime.
const NOT_IN_CORE: [&str; 14] = [
    "axum*",
    "http",
    "http-body*",
    "hyper*",
    "tower*",
    "reqwest",
    "oauth2",
    "aws-*",
    "aws_*",
    "lambda_*",
    "rusqlite",
    "libsqlite3-sys",
    "maud",
    "tokio-rustls",
];

/// Each layer and the workspace crates it may depend on. The leaves at the bottom know
/// nothing of Paddock: the hidden characters, the ZIP check, the webhook address rules and the
/// camelCase key adapter.
/// Above them the domain's crates follow the domain's own graph, from the platform and the
/// kernel up to a driver's data, and `paddock-core` gathers them for the layers above.
const LAYERS: [(&str, &[&str]); 26] = [
    ("paddock-hidden-characters", &[]),
    ("paddock-zip-check", &["paddock-hidden-characters"]),
    ("paddock-webhook-address", &[]),
    ("paddock-camel-keys", &[]),
    ("paddock-platform", &[]),
    ("paddock-kernel", &["paddock-platform"]),
    ("paddock-config", &["paddock-kernel"]),
    (
        "paddock-identity",
        &[
            "paddock-hidden-characters",
            "paddock-kernel",
            "paddock-config",
        ],
    ),
    (
        "paddock-driving",
        &[
            "paddock-hidden-characters",
            "paddock-platform",
            "paddock-kernel",
        ],
    ),
    (
        "paddock-boards",
        &[
            "paddock-platform",
            "paddock-kernel",
            "paddock-identity",
            "paddock-driving",
        ],
    ),
    (
        "paddock-social",
        &[
            "paddock-hidden-characters",
            "paddock-webhook-address",
            "paddock-platform",
            "paddock-kernel",
            "paddock-config",
            "paddock-identity",
            "paddock-boards",
        ],
    ),
    (
        "paddock-packs",
        &[
            "paddock-hidden-characters",
            "paddock-zip-check",
            "paddock-platform",
            "paddock-kernel",
            "paddock-config",
        ],
    ),
    (
        "paddock-competitions",
        &[
            "paddock-hidden-characters",
            "paddock-kernel",
            "paddock-identity",
            "paddock-driving",
            "paddock-boards",
        ],
    ),
    (
        "paddock-authorization",
        &[
            "paddock-hidden-characters",
            "paddock-webhook-address",
            "paddock-kernel",
            "paddock-identity",
        ],
    ),
    (
        "paddock-driver-data",
        &[
            "paddock-platform",
            "paddock-kernel",
            "paddock-identity",
            "paddock-driving",
            "paddock-boards",
            "paddock-social",
            "paddock-packs",
            "paddock-competitions",
            "paddock-authorization",
        ],
    ),
    (
        "paddock-core",
        &[
            "paddock-hidden-characters",
            "paddock-platform",
            "paddock-kernel",
            "paddock-config",
            "paddock-identity",
            "paddock-driving",
            "paddock-boards",
            "paddock-social",
            "paddock-packs",
            "paddock-competitions",
            "paddock-authorization",
            "paddock-driver-data",
        ],
    ),
    ("paddock-embedded", &["paddock-core"]),
    ("paddock-aws", &["paddock-core"]),
    ("paddock-clients", &["paddock-core"]),
    (
        "paddock-board-pages",
        &[
            "paddock-hidden-characters",
            "paddock-kernel",
            "paddock-identity",
            "paddock-driving",
            "paddock-boards",
            "paddock-competitions",
        ],
    ),
    (
        "paddock-http",
        &["paddock-core", "paddock-clients", "paddock-camel-keys"],
    ),
    (
        "paddock-pages",
        &["paddock-core", "paddock-board-pages", "paddock-http"],
    ),
    (
        "paddock-oauth-routes",
        &["paddock-core", "paddock-authorization", "paddock-http"],
    ),
    ("paddock-mcp-server", &["paddock-core", "paddock-http"]),
    (
        "paddock-api",
        &[
            "paddock-core",
            "paddock-clients",
            "paddock-http",
            "paddock-pages",
            "paddock-oauth-routes",
            "paddock-mcp-server",
        ],
    ),
    (
        "paddock-runtime",
        &[
            "paddock-core",
            "paddock-embedded",
            "paddock-aws",
            "paddock-clients",
            "paddock-api",
        ],
    ),
];

/// The workspace's resolved graph: package name → names of its normal (non-dev, non-build)
/// dependencies.
fn normal_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = BTreeMap::<String, BTreeSet<String>>::new();
    for node in metadata["resolve"]["nodes"].as_array().expect("resolve") {
        let name = names[node["id"].as_str().unwrap()].to_owned();
        let deps = graph.entry(name).or_default();
        for dep in node["deps"].as_array().expect("deps") {
            let normal = dep["dep_kinds"]
                .as_array()
                .expect("dep_kinds")
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                deps.insert(names[dep["pkg"].as_str().unwrap()].to_owned());
            }
        }
    }
    graph
}

/// Everything `root` links, through any number of crates, each with the path that brings it.
fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, root: &str) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::from([(root.to_owned(), root.to_owned())]);
    let mut stack = vec![root.to_owned()];
    while let Some(name) = stack.pop() {
        let path = seen[&name].clone();
        for dep in graph.get(&name).into_iter().flatten() {
            if !seen.contains_key(dep) {
                seen.insert(dep.clone(), format!("{path} → {dep}"));
                stack.push(dep.clone());
            }
        }
    }
    seen
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

#[test]
fn the_core_links_no_http_aws_lambda_or_sqlite_crate() {
    let graph = normal_dependencies();
    let linked = reachable(&graph, "paddock-core");
    let found: Vec<&String> = linked
        .iter()
        .filter(|(name, _)| NOT_IN_CORE.iter().any(|p| matches(p, name)))
        .map(|(_, path)| path)
        .collect();
    assert!(found.is_empty(), "paddock-core links:\n{found:#?}");
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let graph = normal_dependencies();
    let mut failures = Vec::new();
    for (layer, allowed) in LAYERS {
        let deps = graph
            .get(layer)
            .unwrap_or_else(|| panic!("{layer} is a workspace crate"));
        for dep in deps.iter().filter(|d| d.starts_with("paddock-")) {
            if !allowed.contains(&dep.as_str()) {
                failures.push(format!("{layer} depends on {dep}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_function_is_a_thin_binary_over_the_runtime() {
    let graph = normal_dependencies();
    let functions = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../functions"))
        .expect("functions dir");
    for entry in functions {
        let dir = entry.expect("entry").file_name().into_string().unwrap();
        let name = format!("paddock-{dir}");
        let deps = graph
            .get(&name)
            .unwrap_or_else(|| panic!("{name} is a workspace crate"));
        assert!(
            deps.contains("paddock-runtime"),
            "{name} runs on paddock-runtime"
        );
        let layers: Vec<&String> = deps.iter().filter(|d| d.starts_with("paddock-")).collect();
        assert!(
            layers
                .iter()
                .all(|d| ["paddock-core", "paddock-api", "paddock-runtime"].contains(&d.as_str())),
            "{name} reaches the adapters only through paddock-runtime: {layers:?}"
        );
    }
}

/// The features each function enables on `paddock-runtime`, from `cargo metadata`.
fn runtime_features() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let mut out = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let runtime = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .find(|d| d["name"] == "paddock-runtime" && d["kind"].is_null());
        if let Some(runtime) = runtime {
            let features = runtime["features"]
                .as_array()
                .expect("features")
                .iter()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect();
            out.insert(package["name"].as_str().unwrap().to_owned(), features);
        }
    }
    out
}

#[test]
fn each_group_function_links_the_aws_services_its_group_needs_and_no_other() {
    let features = runtime_features();
    for group in paddock_api::routes::Group::ALL {
        let name = format!("paddock-{}", group.name());
        let needs = group.needs();
        let mut wanted = BTreeSet::new();
        if needs.blobs {
            wanted.insert("s3".to_owned());
        }
        if needs.secrets {
            wanted.insert("secrets".to_owned());
        }
        if needs.metrics {
            wanted.insert("cloudwatch".to_owned());
        }
        assert_eq!(features[&name], wanted, "{name}");
    }
}
