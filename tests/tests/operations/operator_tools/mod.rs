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

mod secret;
mod stacks;

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
        "eleven", "twelve",
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
