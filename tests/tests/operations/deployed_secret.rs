//! The app secret as the stack creates it holds every field the functions need from the first
//! request: each field the code reads is accounted for in `secret_fields`, and the template's
//! `AppSecret` generates or contains the fields that list says it must.

use paddock_runtime::secret_fields::{SECRET_FIELDS, Source};
use paddock_tests::binaries::workspace_root;
use serde_yaml::Value;

fn app_secret() -> Value {
    let text = std::fs::read_to_string(workspace_root().join("template.yaml")).expect("template");
    let template: Value = serde_yaml::from_str(&text).expect("YAML");
    template["Resources"]["AppSecret"]["Properties"].clone()
}

#[test]
fn the_deployed_secret_has_every_field_the_functions_need() {
    let secret = app_secret();
    let generate = &secret["GenerateSecretString"];
    let generated = generate["GenerateStringKey"]
        .as_str()
        .expect("a generated field");
    let initial: serde_json::Value = serde_json::from_str(
        generate["SecretStringTemplate"]
            .as_str()
            .expect("a SecretStringTemplate"),
    )
    .expect("the SecretStringTemplate is JSON");
    let initial = initial.as_object().expect("a JSON object");
    for field in SECRET_FIELDS {
        match field.source {
            Source::Generated => assert_eq!(
                generated, field.name,
                "{} must be the template's GenerateStringKey",
                field.name
            ),
            Source::Template => assert!(
                initial.contains_key(field.name),
                "{} is missing from AppSecret's SecretStringTemplate",
                field.name
            ),
            Source::Operator | Source::LocalOnly => assert!(
                !initial.contains_key(field.name) && generated != field.name,
                "{} is not expected in the deployed secret at creation; update secret_fields",
                field.name
            ),
        }
    }
    for name in initial.keys().map(String::as_str).chain([generated]) {
        assert!(
            SECRET_FIELDS.iter().any(|f| f.name == name),
            "the template's secret has {name}, which no code reads"
        );
    }
}

/// Every string literal the service's code passes to a secret read names a listed field: a new
/// field cannot be read without saying where it comes from.
#[test]
fn every_secret_the_code_reads_is_listed() {
    let listed: Vec<&str> = SECRET_FIELDS.iter().map(|f| f.name).collect();
    let mut found = Vec::new();
    for dir in ["shared", "functions"] {
        for path in rust_files(&workspace_root().join(dir)) {
            let text = std::fs::read_to_string(&path).expect("source");
            let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            assert!(
                !squeezed.contains("secrets.get(\""),
                "{} reads a secret field by a literal: name it by a constant listed in secret_fields",
                path.display()
            );
            for (i, _) in text.match_indices("_SECRET: &str = \"") {
                let rest = &text[i + "_SECRET: &str = \"".len()..];
                let name = &rest[..rest.find('"').expect("a closing quote")];
                found.push((name.to_owned(), path.display().to_string()));
            }
        }
    }
    assert!(found.len() >= listed.len(), "the scan found {found:?}");
    for (name, path) in found {
        assert!(
            listed.contains(&name.as_str()),
            "{path} reads the secret field {name}, which secret_fields does not list"
        );
    }
}

fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a directory").flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
