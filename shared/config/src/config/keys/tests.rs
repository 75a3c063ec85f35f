use super::*;
use crate::config::Settings;
use paddock_kernel::queues::QueueName;
use std::collections::HashMap;
use std::path::PathBuf;

/// Where the table of keys begins in `docs/configuration.md` (the line goes on with how to
/// regenerate it).
const TABLE_BEGINS: &str = "<!-- keys: begin";

/// Where the table of keys ends in `docs/configuration.md`.
const TABLE_ENDS: &str = "<!-- keys: end -->";

/// The command that rewrites the table in `docs/configuration.md` from the list.
const REGENERATE: &str = "PADDOCK_WRITE_DOCS=1 cargo test -p paddock-config --lib config";

/// The table of every key, as `docs/configuration.md` shows it (markers included).
fn table() -> String {
    let mut out = format!(
        "{TABLE_BEGINS}: generated from the list in config/keys.rs; after a change there run \
         {REGENERATE} -->\n\n| Key | Default | Bounds | Meaning |\n|---|---|---|---|\n"
    );
    for key in all() {
        let names: Vec<String> = if key.name.contains("<Queue>") {
            QueueName::ALL
                .iter()
                .map(|q| key.name.replace("<Queue>", q.config_section()))
                .collect()
        } else {
            key.name.split(", ").map(str::to_owned).collect()
        };
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let default = match key.default {
            DefaultValue::Derived(t) => t.to_owned(),
            DefaultValue::Unset => "—".to_owned(),
            _ => format!("`{}`", key.default_text().unwrap_or_default()),
        };
        let bounds = key
            .bounds
            .map_or_else(|| "—".to_owned(), |(min, max)| format!("`{min}..={max}`"));
        out.push_str(&format!(
            "| {} | {default} | {bounds} | {} |\n",
            names.join(", "),
            key.meaning
        ));
    }
    out.push('\n');
    out.push_str(TABLE_ENDS);
    out
}

/// `page` with its table of keys replaced by [`table`], or `None` when it has no markers.
fn with_table(page: &str) -> Option<String> {
    let begin = page.find(TABLE_BEGINS)?;
    let end = page[begin..].find(TABLE_ENDS)? + begin + TABLE_ENDS.len();
    Some(format!("{}{}{}", &page[..begin], table(), &page[end..]))
}

fn settings(pairs: &[(&str, &str)]) -> Settings {
    let vars: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_vars(&vars).unwrap_or_else(|e| panic!("{pairs:?}: {e}"))
}

/// Setting a key to the default the list states changes nothing, so the stated default is
/// the one an unset key gives.
#[test]
fn every_stated_default_is_what_an_unset_key_gives() {
    let unset = format!("{:?}", settings(&[]));
    for key in all() {
        let Some(value) = key.default_text() else {
            continue;
        };
        let set = format!("{:?}", settings(&[(key.name, &value)]));
        assert_eq!(set, unset, "{} = {value} is not its default", key.name);
    }
}

/// A numeric default lies within its key's bounds; a key with bounds has a numeric
/// default or a derived one.
#[test]
fn numeric_defaults_lie_within_their_bounds() {
    for key in all() {
        match (key.default, key.bounds) {
            (DefaultValue::Number(n), Some((min, max))) => {
                assert!((min..=max).contains(&n), "{}", key.name);
            }
            (DefaultValue::Number(_), None) => panic!("{} has no bounds", key.name),
            (DefaultValue::Derived(_), _) | (_, None) => {}
            (_, Some(_)) => panic!("{} has bounds but no number", key.name),
        }
    }
}

/// The defaults worked out at start are the ones the list describes.
#[test]
fn derived_defaults_are_described_as_the_code_works_them_out() {
    use crate::config::AiProvider;
    for (provider, name) in [
        (AiProvider::Anthropic, "anthropic"),
        (AiProvider::OpenAi, "openai"),
    ] {
        let ai = settings(&[(AI_PROVIDER.name, name)]).ai;
        assert_eq!(ai.provider, provider);
        for (key, value) in [(AI_MODEL, &ai.model), (AI_BASE_URL, &ai.base_url)] {
            let DefaultValue::Derived(text) = key.default else {
                panic!("{} is derived", key.name)
            };
            assert!(text.contains(&format!("`{value}`")), "{}", key.name);
        }
    }
    // Where Google and Discord serve the pictures sign-in gives (Microsoft's needs the
    // driver's token, so no visitor's browser could load it).
    assert_eq!(
        settings(&[]).pages.avatar_hosts,
        ["lh3.googleusercontent.com", "cdn.discordapp.com"]
    );
    assert_eq!(
        settings(&[]).auth.hashing_thread_count(),
        std::thread::available_parallelism().map_or(1, usize::from),
        "Auth__HashingThreads defaults to the cores"
    );
}

/// A bad number names the key and the rule.
#[test]
fn bad_numbers_name_the_key_and_the_rule() {
    let err = JWT_EXPIRY_MINUTES.whole_number("0").unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration key Jwt__ExpiryMinutes: 0 is outside 1..=1440"
    );
    let err = JWT_EXPIRY_MINUTES.whole_number("soon").unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration key Jwt__ExpiryMinutes: \"soon\" is not a whole number"
    );
}

/// Every bounded key, read into its settings field, takes both bounds and refuses a value
/// past either, naming itself and the rule; a word where a number is due is refused alike.
#[test]
fn every_bound_is_enforced_where_the_key_is_read() {
    let read = |name: &str, value: &str| {
        let vars = HashMap::from([(name.to_owned(), value.to_owned())]);
        Settings::from_vars(&vars)
    };
    let mut bounded = 0;
    for key in all() {
        let Some((min, max)) = key.bounds else {
            continue;
        };
        bounded += 1;
        for within in [min, max] {
            if let Err(e) = read(key.name, &within.to_string()) {
                panic!("{} = {within}: {e}", key.name);
            }
        }
        for outside in [min.checked_sub(1), max.checked_add(1)]
            .into_iter()
            .flatten()
        {
            let err = read(key.name, &outside.to_string()).unwrap_err();
            assert_eq!(err.key, key.name);
            assert_eq!(err.reason, format!("{outside} is outside {min}..={max}"));
        }
        let err = read(key.name, "many").unwrap_err();
        assert_eq!(
            (err.key, err.reason.as_str()),
            (key.name, "\"many\" is not a whole number")
        );
    }
    assert!(bounded > 30, "{bounded} bounded keys");
}

#[test]
fn every_key_is_listed_once() {
    let mut names: Vec<&str> = all().map(|k| k.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);
}

/// `docs/configuration.md` shows the list as it is.
#[test]
fn the_configuration_page_is_the_list() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists())
        .expect("the workspace holds Cargo.lock")
        .to_path_buf();
    let path = root.join("docs/configuration.md");
    let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected = with_table(&page).unwrap_or_else(|| {
        panic!("docs/configuration.md lacks the lines {TABLE_BEGINS} ... and {TABLE_ENDS}")
    });
    if std::env::var_os("PADDOCK_WRITE_DOCS").is_some() {
        std::fs::write(&path, &expected).expect("docs/configuration.md is writable");
        return;
    }
    assert!(
        page == expected,
        "docs/configuration.md differs from the keys of config/keys.rs; regenerate it: {REGENERATE}"
    );
}
