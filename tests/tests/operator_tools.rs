//! What an operator copies works: the deploy script refuses a built template whose functions
//! have no `bootstrap` (the top-level template.yaml among them) and passes a complete build;
//! every environment of infra/samconfig.toml sets every parameter; the documented deploy
//! command is the script; the app-secret script changes one field of the secret on moto's
//! Secrets Manager and keeps the others; and the numbers the docs state that the code has (the
//! queues, the functions) are the code's.

use paddock_core::queues::QueueName;
use paddock_core::tables::Table;
use paddock_tests::{require_emulators, unique};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn run(command: &mut Command) -> Output {
    command.current_dir(root()).output().expect("runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The functions of template.yaml with their `CodeUri`, read line by line.
fn template_functions() -> Vec<(String, String)> {
    let template = read("template.yaml");
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut is_function = false;
    for line in template.lines() {
        if let Some(name) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(':'))
            && !name.starts_with(' ')
            && !name.contains(' ')
        {
            current = Some(name.to_owned());
            is_function = false;
        }
        if line == "    Type: AWS::Serverless::Function" {
            is_function = true;
        }
        if let (true, Some(name), Some(uri)) =
            (is_function, &current, line.strip_prefix("      CodeUri: "))
        {
            out.push((name.clone(), uri.trim().to_owned()));
        }
    }
    out
}

/// A build folder as `sam build` leaves it: the template with each `CodeUri` turned into the
/// function's own folder, and a `bootstrap` in each folder but `missing`'s.
fn fabricated_build(missing: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut template = read("template.yaml");
    for (name, uri) in template_functions() {
        template = template.replace(
            &format!("      CodeUri: {uri}\n"),
            &format!("      CodeUri: {name}\n"),
        );
        std::fs::create_dir(dir.path().join(&name)).unwrap();
        if Some(name.as_str()) != missing {
            std::fs::write(dir.path().join(&name).join("bootstrap"), b"\x7fELF").unwrap();
        }
    }
    std::fs::write(dir.path().join("template.yaml"), template).unwrap();
    dir
}

fn check_build(dir: &Path) -> Output {
    run(Command::new("infra/deploy.sh")
        .arg("--check-build")
        .arg(dir))
}

#[test]
fn the_deploy_script_ships_only_a_build_whose_functions_have_a_bootstrap() {
    let functions = template_functions();
    assert!(functions.len() > 10, "{functions:?}");

    let complete = fabricated_build(None);
    let out = check_build(complete.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!(
            "{} functions, each with its bootstrap",
            functions.len()
        )),
        "{}",
        text(&out.stdout)
    );

    let one_missing = fabricated_build(Some("FeedFunction"));
    let out = check_build(one_missing.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("FeedFunction:") && err.contains("holds no bootstrap"),
        "{err}"
    );
    assert_eq!(err.matches("holds no bootstrap").count(), 1, "{err}");

    // What `sam deploy` without --template-file falls back to: sources, no bootstrap anywhere.
    let out = check_build(&root());
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr).matches("holds no bootstrap").count(),
        functions.len(),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_environment_sets_every_parameter_and_deploys_what_it_built() {
    for env in ["dev", "prod"] {
        let out = run(Command::new("infra/deploy.sh").args(["--check-config", env]));
        assert!(out.status.success(), "{env}: {}", text(&out.stderr));
        let out = run(Command::new("infra/deploy.sh").args(["--plan", env]));
        assert!(out.status.success(), "{env}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            format!(
                "PADDOCK_SAM_ENV={env} infra/sam-build.sh arm64\n\
                 sam deploy --template-file .aws-sam/build-arm64/template.yaml \
                 --config-file infra/samconfig.toml --config-env {env}\n"
            )
        );
    }

    // An x86_64 environment builds and deploys x86_64; a list lacking a parameter is refused
    // by name.
    let dir = tempfile::tempdir().unwrap();
    let x86 = dir.path().join("samconfig.toml");
    let config =
        read("infra/samconfig.toml").replace("\"Architecture=arm64\"", "\"Architecture=x86_64\"");
    std::fs::write(&x86, &config).unwrap();
    let out = run(Command::new("infra/deploy.sh")
        .args(["--plan", "prod"])
        .env("PADDOCK_SAMCONFIG", &x86));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(
        plan.starts_with("PADDOCK_SAM_ENV=prod infra/sam-build.sh x86_64\n"),
        "{plan}"
    );
    assert!(
        plan.contains("--template-file .aws-sam/build-x86_64/template.yaml"),
        "{plan}"
    );

    let alarm_topic = "  \"AlarmTopicArn=\\\"\\\"\",\n";
    assert!(
        config.contains(alarm_topic),
        "an empty value is written Name=\"\""
    );
    let refused = |config: String, expected: &str| {
        let path = dir.path().join("refused.toml");
        std::fs::write(&path, config).unwrap();
        let out = run(Command::new("infra/deploy.sh")
            .args(["--plan", "dev"])
            .env("PADDOCK_SAMCONFIG", &path));
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains(expected), "{err}");
    };
    refused(config.replace(alarm_topic, ""), "lacks AlarmTopicArn");
    // SAM CLI refuses a bare `Name=`: so does the script, before building.
    refused(
        config.replace(alarm_topic, "  \"AlarmTopicArn=\",\n"),
        "'AlarmTopicArn=' is not Name=value",
    );
}

/// The whole `infra/deploy.sh dev` in a copy of the repository's deploy files, with
/// stand-ins for `infra/sam-build.sh` (writes a build as SAM does), `sam` (records its
/// arguments) and `infra/smoke.sh`: it builds the environment's architecture, deploys that
/// build's template with the environment's settings, lists the outputs and smoke-tests the
/// stack's `ApiUrl`; with a bootstrap missing, it stops before `sam deploy`.
#[test]
fn a_deploy_builds_checks_then_deploys_the_built_template() {
    use std::os::unix::fs::PermissionsExt;
    let copy = tempfile::tempdir().unwrap();
    let at = |p: &str| copy.path().join(p);
    std::fs::create_dir_all(at("infra")).unwrap();
    std::fs::create_dir_all(at("tools/lambda-venv/bin")).unwrap();
    for file in ["template.yaml", "infra/deploy.sh", "infra/samconfig.toml"] {
        std::fs::copy(root().join(file), at(file)).unwrap();
    }
    let build = fabricated_build(None);
    let script = |path: PathBuf, body: String| {
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    // The stand-in build copies the fabricated build, leaving out $DROP's bootstrap.
    script(
        at("infra/sam-build.sh"),
        format!(
            "#!/bin/sh\necho \"build $PADDOCK_SAM_ENV $1\" >> calls\n\
             mkdir -p .aws-sam && cp -r {} .aws-sam/build-$1\n\
             [ -z \"$DROP\" ] || rm .aws-sam/build-$1/$DROP/bootstrap\n",
            build.path().display()
        ),
    );
    // The stand-in `sam` answers `list stack-outputs` as SAM CLI does with --output json.
    script(
        at("tools/lambda-venv/bin/sam"),
        "#!/bin/sh\necho \"sam $*\" >> calls\n\
         [ \"$1\" != list ] || echo '[{\"OutputKey\": \"ApiUrl\", \"OutputValue\": \"https://api.example/\"}]'\n"
            .into(),
    );
    script(
        at("infra/smoke.sh"),
        "#!/bin/sh\necho \"smoke $*\" >> calls\n".into(),
    );
    let deploy = |drop: &str| {
        let _ = std::fs::remove_file(at("calls"));
        let _ = std::fs::remove_dir_all(at(".aws-sam"));
        let out = Command::new("infra/deploy.sh")
            .arg("dev")
            .current_dir(copy.path())
            .env("PADDOCK_TOOLS_DIR", at("tools"))
            .env("DROP", drop)
            .output()
            .unwrap();
        let calls = std::fs::read_to_string(at("calls")).unwrap_or_default();
        (out, calls)
    };

    let (out, calls) = deploy("");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        calls,
        "build dev arm64\n\
         sam deploy --template-file .aws-sam/build-arm64/template.yaml \
         --config-file infra/samconfig.toml --config-env dev\n\
         sam list stack-outputs --config-file infra/samconfig.toml --config-env dev --output json\n\
         smoke https://api.example/\n"
    );

    let (out, calls) = deploy("SessionsFunction");
    assert!(!out.status.success());
    assert_eq!(calls, "build dev arm64\n", "nothing deployed");
    assert!(
        text(&out.stderr).contains("SessionsFunction:"),
        "{}",
        text(&out.stderr)
    );
}

/// The operator's page deploys with the script, and no page names `sam deploy` with a config
/// file but no template (which ships the sources).
#[test]
fn the_documented_deploy_command_is_the_script() {
    let operating = read("docs/operating.md");
    assert!(operating.contains("infra/deploy.sh dev"));
    assert!(operating.contains("infra/deploy.sh prod"));
    for doc in documents() {
        let text = read(&doc);
        for line in text.lines().filter(|l| l.contains("sam deploy")) {
            assert!(
                !line.contains("--config-file") || line.contains("--template-file"),
                "{doc}: {line}"
            );
            assert!(!line.contains("--parameter-overrides"), "{doc}: {line}");
        }
    }
}

/// The counts the docs state are the code's: queues (`QueueName::ALL`), tables (`Table::ALL`)
/// and functions (the template's).
#[test]
fn the_documented_counts_are_the_code_s() {
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    let queues = words[QueueName::ALL.len()];
    let functions = template_functions().len();
    let stated = [
        (
            "docs/architecture.md",
            format!("{queues} queues each with a dead-letter queue"),
        ),
        (
            "docs/operating.md",
            format!("each of the {functions} functions"),
        ),
        ("docs/operating.md", format!("{functions} functions")),
        ("docs/operating.md", format!("{queues} queues")),
        ("infra/COSTS.md", format!("the {queues} queues")),
        (
            "docs/operating.md",
            format!("{} DynamoDB tables", words[Table::ALL.len()]),
        ),
    ];
    for (doc, phrase) in stated {
        assert!(read(doc).contains(&phrase), "{doc} does not say {phrase:?}");
    }
    for doc in documents()
        .into_iter()
        .chain(["infra/COSTS.md".to_owned(), "template.yaml".to_owned()])
    {
        let text = read(&doc);
        for (n, word) in words
            .iter()
            .enumerate()
            .filter(|(n, _)| *n != QueueName::ALL.len())
        {
            for wrong in [format!("{word} queues"), format!("the {n} queues")] {
                assert!(!text.contains(&wrong), "{doc} says {wrong:?}");
            }
        }
    }
}

/// The fixed monthly costs the performance and operator's pages state are the ones
/// infra/COSTS.md works out.
#[test]
fn the_stated_costs_are_those_of_costs_md() {
    let costs = read("infra/COSTS.md");
    let summary = costs
        .lines()
        .find(|l| l.starts_with("In short:"))
        .expect("infra/COSTS.md has an 'In short:' line");
    for doc in ["docs/perf.md", "docs/operating.md"] {
        assert!(
            read(doc).contains(summary),
            "{doc} does not repeat: {summary}"
        );
    }
}

/// The README, CONTRIBUTING.md and every page under docs/.
fn documents() -> Vec<String> {
    let mut docs = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    let dir = root().join("docs");
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .expect("docs/ is readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

fn python() -> PathBuf {
    let tools = std::env::var_os("PADDOCK_TOOLS_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/paddock-tools"),
        PathBuf::from,
    );
    tools.join("venv/bin/python")
}

fn app_secret(args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(python())
        .arg("infra/app-secret.py")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python with boto3 (infra/emulators.sh install)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn secret_fields(id: &str) -> serde_json::Map<String, serde_json::Value> {
    let out = Command::new(python())
        .args([
            "-c",
            "import boto3, sys; print(boto3.client('secretsmanager').get_secret_value(SecretId=sys.argv[1])['SecretString'])",
            id,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_secret_script_changes_one_field_and_rotates_without_signing_anyone_out() {
    require_emulators();
    let id = unique("paddock/operator-");
    let first_key = "k".repeat(64);
    let created = Command::new(python())
        .args([
            "-c",
            "import boto3, sys; boto3.client('secretsmanager').create_secret(Name=sys.argv[1], SecretString=sys.argv[2])",
            &id,
            &format!(r#"{{"jwtSigningKey":"{first_key}","anthropicApiKey":"","openaiApiKey":""}}"#),
        ])
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", text(&created.stderr));

    let out = app_secret(&["set", &id, "googleClientSecret"], "g-secret\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = app_secret(&["set", &id, "anthropicApiKey"], "sk-ant-1");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fields = secret_fields(&id);
    assert_eq!(fields["jwtSigningKey"], first_key.as_str());
    assert_eq!(fields["googleClientSecret"], "g-secret");
    assert_eq!(fields["anthropicApiKey"], "sk-ant-1");
    assert_eq!(fields["openaiApiKey"], "");

    // The signing key is never set by hand (that would sign everyone out) nor emptied.
    let out = app_secret(&["set", &id, "jwtSigningKey"], "short");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("rotate-signing-key"),
        "{}",
        text(&out.stderr)
    );
    let out = app_secret(&["set", &id, "openaiApiKey"], "");
    assert!(!out.status.success());

    // Two rotations: each new key is 64 letters and digits, and the keys before it stay
    // accepted (a JSON list in a string, newest first), the other fields untouched.
    for round in 1..=2 {
        let before = secret_fields(&id)["jwtSigningKey"]
            .as_str()
            .unwrap()
            .to_owned();
        let out = app_secret(&["rotate-signing-key", &id], "");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let fields = secret_fields(&id);
        let key = fields["jwtSigningKey"].as_str().unwrap();
        assert_eq!(key.len(), 64);
        assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()), "{key}");
        assert_ne!(key, before);
        let previous: Vec<String> =
            serde_json::from_str(fields["jwtPreviousSigningKeys"].as_str().unwrap()).unwrap();
        assert_eq!(previous.len(), round);
        assert_eq!(previous[0], before);
        assert_eq!(previous.last().unwrap(), &first_key);
        assert_eq!(fields["googleClientSecret"], "g-secret");
    }
    let out = app_secret(&["drop-previous-keys", &id], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fields = secret_fields(&id);
    assert!(!fields.contains_key("jwtPreviousSigningKeys"));
    assert_eq!(fields["anthropicApiKey"], "sk-ant-1");

    let out = app_secret(&["fields", &id], "");
    assert_eq!(
        text(&out.stdout),
        "anthropicApiKey\ngoogleClientSecret\njwtSigningKey\nopenaiApiKey (empty)\n"
    );
    assert!(!text(&out.stdout).contains("sk-ant-1"));
}

/// A provider set only through `Auth__ProvidersJson` (the template's `AuthProviders`) is
/// offered at sign-in with its client id and scopes; Discord's endpoints need no discovery.
#[tokio::test]
async fn a_provider_from_the_json_setting_starts_its_sign_in() {
    let vars = [(
        "Auth__ProvidersJson".to_owned(),
        r#"{"discord": {"clientId": "discord-client-7", "scopes": ["identify", "email"]}}"#
            .to_owned(),
    )]
    .into_iter()
    .collect();
    let providers = paddock_core::config::Settings::from_vars(&vars)
        .unwrap()
        .auth
        .providers;
    let t = paddock_tests::ports(paddock_tests::Backend::Embedded).await;
    let mut settings = t.settings;
    settings.auth.providers = providers;
    let app = paddock_tests::spawn_with(settings, t.ports, t.dir).await;
    // A PKCE S256 challenge is 43 characters of base64url.
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let answer = app
        .get(&format!(
            "/v1/auth/login/discord?redirect_uri=http://127.0.0.1:5000/callback&code_challenge={challenge}"
        ))
        .await;
    assert!(answer.status().is_redirection(), "{}", answer.status());
    let location = answer.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("https://discord.com/oauth2/authorize?"),
        "{location}"
    );
    assert!(
        location.contains("client_id=discord-client-7"),
        "{location}"
    );
    assert!(
        location.contains("scope=identify+email") || location.contains("scope=identify%20email"),
        "{location}"
    );
}

/// moto_server's address: every AWS service the operator's scripts call (CloudFormation,
/// DynamoDB, S3, CloudWatch Logs, SQS) is moto's there, so that a stack's resources are where
/// its CloudFormation made them (DynamoDB Local is left out of these tests).
fn moto() -> String {
    require_emulators();
    std::env::var("AWS_ENDPOINT_URL_S3").expect("AWS_ENDPOINT_URL_S3 (moto_server)")
}

/// A settings file whose `prod` and `dev` stacks are `<name>` and `<name>-dev`: fresh names
/// sharing a prefix, as `paddock` and `paddock-dev` do.
fn two_stack_config(dir: &Path) -> (PathBuf, String, String) {
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
fn against_moto(command: &mut Command, config: &Path, stdin: &str) -> Output {
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

fn fixture(config: &Path, args: &[&str]) -> serde_json::Value {
    let out = against_moto(
        Command::new(python())
            .arg("tests/operator/stack_fixture.py")
            .args(args),
        config,
        "",
    );
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

/// Two stacks on moto's CloudFormation whose names share a prefix, each with retained tables
/// (deletion protection on), a versioned bucket with old versions and a delete marker, and
/// retained log groups: tearing down the first with its data leaves nothing of it and every
/// resource of the second; a wrong confirmation deletes nothing.
#[test]
fn the_teardown_removes_its_own_stack_and_data_and_nothing_of_a_stack_sharing_its_prefix() {
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
fn the_redrive_moves_dead_letters_back_to_their_queue() {
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

/// The smoke test walks the local server step by step and removes its driver; pointed at a
/// wrong URL it fails, naming the step.
#[tokio::test(flavor = "multi_thread")]
async fn the_smoke_test_walks_the_service_and_names_a_failed_step() {
    let app = paddock_tests::spawn_app().await;
    let smoke = |url: String| {
        tokio::task::spawn_blocking(move || {
            run(Command::new("infra/smoke.sh")
                .arg(url)
                .env_remove("PADDOCK_METRICS_TOKEN"))
        })
    };
    let out = smoke(format!("{}/", app.address)).await.unwrap();
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let steps: Vec<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("ok     "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "health", "register", "upload", "submit", "board", "board", "metrics", "delete"
        ],
        "{said}"
    );
    assert!(said.contains("ok     board page\n"), "{said}");
    assert!(
        said.ends_with(&format!("smoke test passed: {}\n", app.address)),
        "{said}"
    );

    // The driver is gone: its board entry goes with the account (the deletion job runs
    // moments after the answer).
    let track = said
        .lines()
        .find_map(|l| l.strip_prefix("ok     upload (session "))
        .and_then(|l| l.split(", track ").nth(1))
        .and_then(|l| l.strip_suffix(')'))
        .expect("the upload line names the track")
        .to_owned();
    let mut gone = false;
    for _ in 0..100 {
        let (status, body) =
            paddock_tests::envelope(app.get(&format!("/v1/leaderboards?trackId={track}")).await)
                .await;
        assert_eq!(status, 200, "{body}");
        if body["data"]["totalEntries"] == 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(gone, "the smoke test's driver is still on the board");

    // A wrong URL: the first step fails, named.
    let out = smoke(format!("{}/nothing-here", app.address))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stdout);
    assert!(said.starts_with("FAILED health: HTTP 404"), "{said}");
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let out = smoke(format!("http://127.0.0.1:{closed}")).await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        format!("FAILED health: no answer from http://127.0.0.1:{closed}\n")
    );
}

/// The secret script's failures are one line (no traceback), with a region given only as
/// AWS_REGION taken, and a field the service does not read is refused by name.
#[test]
fn the_secret_script_fails_in_one_line_and_refuses_unknown_fields() {
    require_emulators();
    let id = unique("paddock/fields-");
    let created = Command::new(python())
        .args([
            "-c",
            "import boto3, sys; boto3.client('secretsmanager').create_secret(Name=sys.argv[1], SecretString=sys.argv[2])",
            &id,
            &format!(r#"{{"jwtSigningKey":"{}","typoKey":"x"}}"#, "k".repeat(64)),
        ])
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", text(&created.stderr));

    // Only AWS_REGION, as the Rust SDK reads it: boto3 alone would not find a region.
    let out = app_secret_with(&["fields", &id], "", &[("AWS_DEFAULT_REGION", None)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("jwtSigningKey\n"));

    // No region at all, no credentials, no such secret: one line each.
    for (args, env, expected) in [
        (
            vec!["fields", id.as_str()],
            vec![("AWS_DEFAULT_REGION", None), ("AWS_REGION", None)],
            "set AWS_REGION",
        ),
        (
            vec!["fields", "paddock/no-such-secret"],
            vec![],
            "cannot read paddock/no-such-secret",
        ),
    ] {
        let out = app_secret_with(&args, "", &env);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("app-secret: ") && err.contains(expected),
            "{err}"
        );
        assert!(!err.contains("Traceback"), "{err}");
    }

    let out = app_secret_with(&["set", &id, "antropicApiKey"], "sk-1\n", &[]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.starts_with("app-secret: unknown field 'antropicApiKey'"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!secret_fields(&id).contains_key("antropicApiKey"));
    // The fields the service reads are taken, and one misspelt earlier can be removed.
    for field in ["metricsToken", "openaiApiKey", "corpClientSecret"] {
        let out = app_secret_with(&["set", &id, field], "value-1\n", &[]);
        assert!(out.status.success(), "{field}: {}", text(&out.stderr));
    }
    let out = app_secret_with(&["unset", &id, "typoKey"], "", &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!secret_fields(&id).contains_key("typoKey"));
}

fn app_secret_with(args: &[&str], stdin: &str, env: &[(&str, Option<&str>)]) -> Output {
    use std::io::Write;
    let mut command = Command::new(python());
    command
        .arg("infra/app-secret.py")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        match value {
            Some(v) => command.env(key, v),
            None => command.env_remove(key),
        };
    }
    let mut child = command.spawn().expect("python with boto3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `--check-config` refuses, in one line and before any build, what CloudFormation would
/// refuse after it: a value outside a parameter's allowed values or minimum, and a custom
/// domain without its certificate.
#[test]
fn the_config_check_refuses_what_cloudformation_would() {
    let config = read("infra/samconfig.toml");
    let dir = tempfile::tempdir().unwrap();
    let check = |config: String| {
        let path = dir.path().join("samconfig.toml");
        std::fs::write(&path, config).unwrap();
        run(Command::new("infra/deploy.sh")
            .args(["--check-config", "dev"])
            .env("PADDOCK_SAMCONFIG", &path))
    };
    let domain = "\"DomainName=api.example.com\"";
    let certificate = "\"CertificateArn=arn:aws:acm:us-east-1:123456789012:certificate/abc\"";
    for (from, to, expected) in [
        (
            "\"AiProvider=anthropic\"",
            "\"AiProvider=anthropik\"",
            "AiProvider='anthropik' is not one of anthropic, openai",
        ),
        (
            "\"DomainName=\\\"\\\"\"",
            domain,
            "DomainName='api.example.com' needs CertificateArn",
        ),
        (
            "\"CertificateArn=\\\"\\\"\"",
            "\"CertificateArn=not-an-arn\"",
            "CertificateArn='not-an-arn' does not match",
        ),
        (
            "\"JwtExpiryMinutes=60\"",
            "\"JwtExpiryMinutes=0\"",
            "JwtExpiryMinutes='0' is below its minimum 1",
        ),
        (
            "\"LogRetentionDays=30\"",
            "\"LogRetentionDays=31\"",
            "LogRetentionDays='31' is not one of",
        ),
    ] {
        assert!(config.contains(from), "{from}");
        let out = check(config.replacen(from, to, 1));
        assert!(!out.status.success(), "{to} passed");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{err}");
    }
    // A domain with its certificate passes.
    let both = config
        .replacen("\"DomainName=\\\"\\\"\"", domain, 1)
        .replacen("\"CertificateArn=\\\"\\\"\"", certificate, 1);
    let out = check(both);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The "In short" line of infra/COSTS.md is computed once: its figures are the sums, by part,
/// of the rows of its summary table (each item counted in one part only), rounded to the
/// half dollar; and the alarms it prices are the template's.
#[test]
fn the_cost_summary_adds_up_its_rows_once() {
    let costs = read("infra/COSTS.md");
    let summary = costs
        .lines()
        .find(|l| l.starts_with("In short:"))
        .expect("an 'In short:' line");
    let table = costs
        .split("\n## Summary\n")
        .nth(1)
        .expect("a Summary section");
    let mut parts: std::collections::BTreeMap<&str, f64> = Default::default();
    let mut items = Vec::new();
    for row in table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Item"))
    {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let amount: f64 = cells[1].parse().unwrap_or_else(|_| panic!("{row}"));
        *parts.entry(cells[2]).or_default() += amount;
        assert!(!items.contains(&cells[0]), "counted twice: {row}");
        items.push(cells[0]);
    }
    assert_eq!(
        parts.keys().copied().collect::<Vec<_>>(),
        ["drivers", "fixed", "metrics", "scraped"]
    );
    // Rounded to the half dollar, as the line states them: "$9.50", "$12".
    let dollars = |x: f64| {
        let half = (x * 2.0).round() / 2.0;
        if half.fract() == 0.0 {
            format!("${half:.0}")
        } else {
            format!("${half:.2}")
        }
    };
    let fixed = parts["fixed"];
    let drivers = parts["drivers"];
    let expected = [
        format!("about {} a month of fixed costs", dollars(fixed)),
        format!(
            "{} a month more once each of the service's own metrics",
            dollars(parts["metrics"])
        ),
        format!(
            "{} a month more while something scrapes",
            dollars(parts["scraped"])
        ),
        format!("about {} per thousand active drivers", dollars(drivers)),
        format!("costs about {} a month without", dollars(fixed + drivers)),
        format!(
            "about {} with them",
            dollars(fixed + drivers + parts["metrics"])
        ),
        format!(
            "about {} with them scraped",
            dollars(fixed + drivers + parts["metrics"] + parts["scraped"])
        ),
    ];
    for phrase in expected {
        assert!(
            summary.contains(&phrase),
            "'In short' does not say {phrase:?}: {summary}"
        );
    }
    // The background work is added once: only what the requests' rows leave out.
    assert!(table.contains("| Background work not in the requests' events | 0.12 | drivers |"));
    assert!(summary.contains("background work beyond the requests' own events $0.12"));
    let alarms = read("template.yaml")
        .matches("    Type: AWS::CloudWatch::Alarm\n")
        .count();
    assert!(
        costs.contains(&format!("CloudWatch alarms: {alarms} alarms on ")),
        "infra/COSTS.md does not price the template's {alarms} alarms"
    );
}

/// The documented restore: a point-in-time copy of a table into a new one, then its items
/// written back into the live table (which keeps its stream and settings).
#[test]
fn a_table_is_restored_into_a_copy_and_its_items_written_back() {
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

/// What the docs tell an operator to run needs nothing the project does not install: no
/// command in a code block is the AWS CLI, every `infra/` script named exists, and the
/// scripts that install tools pin their versions (boto3; the SAM CLI and cargo-lambda).
#[test]
fn the_documented_commands_need_only_what_the_scripts_install() {
    for doc in documents() {
        let text = read(&doc);
        let mut in_code = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                let command = line.trim_start();
                assert!(
                    !command.starts_with("aws ")
                        && !command.contains("| aws ")
                        && !command.contains("$(aws "),
                    "{doc} runs the AWS CLI: {line}"
                );
            }
        }
        for (i, _) in text.match_indices("infra/") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_'))
                .collect();
            let name = name.trim_end_matches('.');
            if name.ends_with(".sh") || name.ends_with(".py") {
                assert!(
                    root().join(name).is_file(),
                    "{doc} names {name}, which does not exist"
                );
            }
        }
    }
    let tools = read("infra/tools.sh");
    assert!(
        tools.contains("boto3_version=1."),
        "infra/tools.sh pins boto3"
    );
    let build = read("infra/sam-build.sh");
    assert!(
        build.contains("sam_version=1.") && build.contains("cargo_lambda_version=1."),
        "infra/sam-build.sh pins the SAM CLI and cargo-lambda"
    );
    assert!(read("docs/operating.md").contains("py=$(infra/tools.sh)"));
}

/// Through the Lambda functions behind the local API, as in AWS: `/metrics` refuses a scrape
/// without the metrics token (401, which the smoke test takes) and answers one with it.
#[tokio::test(flavor = "multi_thread")]
async fn the_smoke_test_passes_through_the_lambda_functions() {
    require_emulators();
    let app = paddock_tests::spawn_functions().await;
    for token in [None, Some(paddock_tests::METRICS_TOKEN)] {
        let address = app.address.clone();
        let out = tokio::task::spawn_blocking(move || {
            let mut command = Command::new("infra/smoke.sh");
            command.arg(&address).env_remove("PADDOCK_METRICS_TOKEN");
            if let Some(token) = token {
                command.env("PADDOCK_METRICS_TOKEN", token);
            }
            run(&mut command)
        })
        .await
        .unwrap();
        let said = text(&out.stdout);
        assert!(out.status.success(), "{said}{}", text(&out.stderr));
        let metrics = if token.is_some() {
            "ok     metrics\n"
        } else {
            "ok     metrics (HTTP 401"
        };
        assert!(said.contains(metrics), "{said}");
        assert!(said.contains("ok     delete"), "{said}");
    }
}
