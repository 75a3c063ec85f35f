//! The secret script: one field changed, a key rotated without signing anyone out, failures in
//! one line, unknown fields refused; a provider from the JSON setting.

use super::*;

pub(super) fn app_secret(args: &[&str], stdin: &str) -> Output {
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

pub(super) fn secret_fields(id: &str) -> serde_json::Map<String, serde_json::Value> {
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
pub(super) fn the_secret_script_changes_one_field_and_rotates_without_signing_anyone_out() {
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
pub(super) async fn a_provider_from_the_json_setting_starts_its_sign_in() {
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

/// The secret script's failures are one line (no traceback), with a region given only as
/// AWS_REGION taken, and a field the service does not read is refused by name.
#[test]
pub(super) fn the_secret_script_fails_in_one_line_and_refuses_unknown_fields() {
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

pub(super) fn app_secret_with(args: &[&str], stdin: &str, env: &[(&str, Option<&str>)]) -> Output {
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
