//! Against moto's CloudFormation: the teardown of one stack among others sharing its prefix,
//! the redrive of dead letters, and a table restored through a copy.

use super::*;

/// moto_server's address: every AWS service the operator's scripts call (CloudFormation,
/// DynamoDB, S3, CloudWatch Logs, SQS) is moto's there, so that a stack's resources are where
/// its CloudFormation made them (DynamoDB Local is left out of these tests).
pub(super) fn moto() -> String {
    require_emulators();
    std::env::var("AWS_ENDPOINT_URL_S3").expect("AWS_ENDPOINT_URL_S3 (moto_server)")
}

/// A settings file whose `prod` and `dev` stacks are `<name>` and `<name>-dev`: fresh names
/// sharing a prefix, as `paddock` and `paddock-dev` do.
pub(super) fn two_stack_config(dir: &Path) -> (PathBuf, String, String) {
    let prod = unique("pdk");
    let dev = format!("{prod}-dev");
    let config = read("infra/samconfig.toml")
        .replace(
            "stack_name = \"paddock-dev\"",
            &format!("stack_name = \"{dev}\""),
        )
        .replace(
            "stack_name = \"paddock\"",
            &format!("stack_name = \"{prod}\""),
        );
    let path = dir.join("samconfig.toml");
    std::fs::write(&path, config).unwrap();
    (path, prod, dev)
}

/// Runs `command` (from the repository's top) against moto with `config`, feeding `stdin`.
pub(super) fn against_moto(command: &mut Command, config: &Path, stdin: &str) -> Output {
    use std::io::Write;
    let moto = moto();
    let mut child = command
        .current_dir(root())
        .env("AWS_ENDPOINT_URL", &moto)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &moto)
        .env("PADDOCK_SAMCONFIG", config)
        .env("PADDOCK_OPS_PYTHON", python())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub(super) fn fixture(config: &Path, args: &[&str]) -> serde_json::Value {
    let out = against_moto(
        Command::new(python())
            .arg("tests/operator/stack_fixture.py")
            .args(args),
        config,
        "",
    );
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    let mut answer: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    // moto's buckets are every test's: an inventory keeps those of this test's stacks (their
    // names share the part before the first `-`), which no other test changes meanwhile.
    if let (Some(stack), Some(names)) = (
        args.get(1),
        answer
            .get_mut("bucket_names")
            .and_then(serde_json::Value::as_array_mut),
    ) {
        let family = stack.split('-').next().unwrap_or(stack);
        names.retain(|n| n.as_str().is_some_and(|n| n.starts_with(family)));
    }
    answer
}

/// Two stacks on moto's CloudFormation whose names share a prefix, each with retained tables
/// (deletion protection on), a versioned bucket with old versions and a delete marker, and
/// retained log groups: tearing down the first with its data leaves nothing of it and every
/// resource of the second; a wrong confirmation deletes nothing.
#[test]
pub(super) fn the_teardown_removes_its_own_stack_and_data_and_nothing_of_a_stack_sharing_its_prefix()
 {
    let dir = tempfile::tempdir().unwrap();
    let (config, prod, dev) = two_stack_config(dir.path());
    fixture(&config, &["create", &prod]);
    fixture(&config, &["create", &dev]);
    let before_prod = fixture(&config, &["inventory", &prod]);
    let before_dev = fixture(&config, &["inventory", &dev]);
    // Every table of both stacks starts under deletion protection.
    assert_eq!(
        before_prod["protected"], before_prod["tables"],
        "{before_prod}"
    );
    assert_eq!(
        before_dev["protected"], before_dev["tables"],
        "{before_dev}"
    );
    assert_eq!(
        before_prod["tables"].as_array().unwrap().len(),
        2,
        "{before_prod}"
    );
    assert_eq!(before_prod["log_groups"].as_array().unwrap().len(), 2);
    assert_eq!(before_prod["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(
        before_dev["tables"].as_array().unwrap().len(),
        2,
        "{before_dev}"
    );

    // Anything but the stack's name typed back is a no.
    let out = against_moto(
        Command::new("infra/teardown.sh").args(["prod", "--with-data"]),
        &config,
        &format!("{dev}\n"),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not confirmed"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(fixture(&config, &["inventory", &prod]), before_prod);

    let out = against_moto(
        Command::new("infra/teardown.sh").args(["prod", "--with-data"]),
        &config,
        &format!("{prod}\n"),
    );
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    for table in ["users", "sessions"] {
        assert!(
            said.contains(&format!("table {prod}-{table}: deleted")),
            "{said}"
        );
    }
    // Two versions of one object, one of another and its delete marker.
    assert!(
        said.contains(": 4 object versions removed, deleted"),
        "{said}"
    );
    assert!(!said.contains(&dev), "{said}");

    let after_prod = fixture(&config, &["inventory", &prod]);
    assert_eq!(after_prod["stack"], false, "{after_prod}");
    for kind in ["tables", "log_groups", "buckets"] {
        assert_eq!(after_prod[kind], serde_json::json!([]), "{after_prod}");
    }
    let prod_bucket = before_prod["buckets"][0].as_str().unwrap();
    assert!(
        !after_prod["bucket_names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b == prod_bucket)
    );
    assert_eq!(fixture(&config, &["inventory", &dev]), {
        let mut v = before_dev.clone();
        v["bucket_names"] = after_prod["bucket_names"].clone();
        v
    });

    // Again: the stack is gone and nothing is tagged as its own (moto's CloudFormation tags
    // nothing), so there is nothing to do and still nothing of the other stack is touched.
    let out = against_moto(
        Command::new("infra/teardown.sh").args(["prod", "--with-data", "--yes"]),
        &config,
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("nothing tagged as its own"));
    let out = against_moto(Command::new("infra/teardown.sh").arg("prod"), &config, "");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).starts_with(&format!("stack: no stack {prod} in us-east-1")),
        "{}",
        text(&out.stderr)
    );
    let dev_now = fixture(&config, &["inventory", &dev]);
    assert_eq!(dev_now["tables"], before_dev["tables"]);
    assert_eq!(dev_now["log_groups"], before_dev["log_groups"]);
    // Its tables are still under deletion protection: only the torn-down stack's were freed.
    assert_eq!(dev_now["protected"], before_dev["tables"]);
    assert_eq!(dev_now["buckets"], before_dev["buckets"]);
}

/// Dead letters go back to their queue, bodies and attributes intact, and leave the
/// dead-letter queue; the queues are found through the stack's outputs.
#[test]
pub(super) fn the_redrive_moves_dead_letters_back_to_their_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _, dev) = two_stack_config(dir.path());
    fixture(&config, &["create", &dev]);
    fixture(&config, &["dead-letters", &dev, "13"]);
    let before = fixture(&config, &["depths", &dev]);
    assert_eq!(
        (before["queue"].as_u64(), before["dead_letters"].as_u64()),
        (Some(0), Some(13))
    );

    let out = against_moto(
        Command::new("infra/redrive.sh").args(["dev", "track-maps"]),
        &config,
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "track-maps: 13 message(s) moved from the dead-letter queue back to the queue\n"
    );
    let after = fixture(&config, &["depths", &dev]);
    assert_eq!(
        (after["queue"].as_u64(), after["dead_letters"].as_u64()),
        (Some(13), Some(0))
    );
    let mut expected: Vec<String> = (0..13)
        .map(|i| format!("{{\"id\": \"event-{i}\"}}"))
        .collect();
    expected.sort();
    assert_eq!(after["bodies"], serde_json::json!(expected));
    assert_eq!(after["kinds"], serde_json::json!(["session.uploaded"]));

    let out = against_moto(
        Command::new("infra/redrive.sh").args(["dev", "track-map"]),
        &config,
        "",
    );
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr),
        "stack: unknown queue 'track-map' (one of: track-maps, achievements, feed, accounts, webhooks)\n"
    );
}
/// The documented restore: a point-in-time copy of a table into a new one, then its items
/// written back into the live table (which keeps its stream and settings).
#[test]
pub(super) fn a_table_is_restored_into_a_copy_and_its_items_written_back() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _, dev) = two_stack_config(dir.path());
    fixture(&config, &["create", &dev]);
    let live = format!("{dev}-users");
    let before = fixture(&config, &["items", &live]);
    assert_eq!(before, serde_json::json!([["USER#1", "PROFILE"]]));

    let at = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let out = against_moto(
        Command::new(python()).args(["infra/stack.py", "restore-table", "dev", "users", &at]),
        &config,
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let copy = said
        .split(':')
        .next()
        .filter(|t| t.starts_with(&format!("{live}-restored-")))
        .unwrap_or_else(|| panic!("{said}"))
        .to_owned();

    // The mistake: the driver's item is deleted from the live table.
    fixture(&config, &["delete-item", &live, "USER#1", "PROFILE"]);
    assert_eq!(fixture(&config, &["items", &live]), serde_json::json!([]));

    let out = against_moto(
        Command::new(python()).args([
            "infra/stack.py",
            "copy-items",
            "dev",
            &copy,
            "users",
            "USER#1",
        ]),
        &config,
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("{live}: 1 item(s) written from {copy} (partition USER#1)\n")
    );
    assert_eq!(fixture(&config, &["items", &live]), before);
}
