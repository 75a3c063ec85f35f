//! Each function's identity policy from the transformed template
//! (`tests/template/function_policies.py`), bound to this run's resource names, and the
//! decision IAM makes for one call: allowed when an `Allow` statement matches the action, the
//! resource and the condition, and no `Deny` statement does.

use super::calls::{Call, Context};
use anyhow::{Context as _, anyhow, bail};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What `function_policies.py` writes.
#[derive(Debug, Clone, Deserialize)]
pub struct PolicyFile {
    /// The region the stack's ARNs are written in.
    pub region: String,
    /// The account the stack's ARNs are written in.
    pub account: String,
    /// The stack's resources a policy may name, by logical id.
    pub resources: BTreeMap<String, ResourceEntry>,
    /// Each function's statements, by binary name.
    pub functions: BTreeMap<String, FunctionEntry>,
}

/// One of the stack's resources.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceEntry {
    /// Its CloudFormation type.
    #[serde(rename = "type")]
    pub kind: String,
    /// A table's name after the stack's prefix (`users`).
    pub name: Option<String>,
}

/// One function's policy as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionEntry {
    /// The function's logical id (`AuthFunction`).
    pub logical_id: String,
    /// Its statements, placeholders unresolved.
    pub statements: Vec<StatementEntry>,
}

/// One statement as written.
#[derive(Debug, Clone, Deserialize)]
pub struct StatementEntry {
    /// The policy's name and the statement's index (`AuthFunctionRolePolicy0#0`).
    pub id: String,
    /// `Allow` or `Deny`.
    pub effect: String,
    /// Action patterns (`dynamodb:GetItem`, `s3:*`).
    pub actions: Vec<String>,
    /// Resource patterns with `${Logical}` placeholders.
    pub resources: Vec<String>,
    /// Operator → key → values.
    #[serde(default)]
    pub condition: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
}

impl PolicyFile {
    /// Reads `path`.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
    }
}

/// The names this run's resources have locally.
#[derive(Debug, Clone)]
pub struct LocalNames {
    /// `Store__TablePrefix`: a table is this and its name.
    pub table_prefix: String,
    /// `Blobs__Bucket`.
    pub bucket: String,
    /// `Secrets__Id`.
    pub secret_id: String,
    /// Each queue's URL and its dead-letter queue's URL, by settings section (`Feed`).
    pub queues: HashMap<String, (String, String)>,
}

/// The placeholders of a policy and the local values they stand for.
#[derive(Debug, Clone, Default)]
pub struct Names {
    values: Vec<(String, String)>,
}

impl Names {
    /// Binds every resource of `file` to its local name.
    pub fn bind(file: &PolicyFile, local: &LocalNames) -> anyhow::Result<Self> {
        let (region, account) = (&file.region, &file.account);
        let mut values = Vec::new();
        let mut put = |token: String, value: String| values.push((format!("${{{token}}}"), value));
        for (logical, entry) in &file.resources {
            match entry.kind.as_str() {
                "AWS::DynamoDB::Table" => {
                    let name = entry
                        .name
                        .as_deref()
                        .ok_or_else(|| anyhow!("{logical} has no table name"))?;
                    let table = format!("{}{name}", local.table_prefix);
                    let arn = format!("arn:aws:dynamodb:{region}:{account}:table/{table}");
                    put(format!("{logical}.StreamArn"), format!("{arn}/stream/*"));
                    put(format!("{logical}.Arn"), arn);
                    put(logical.clone(), table);
                }
                "AWS::SQS::Queue" => {
                    let (section, dead) = match logical.strip_suffix("DeadLetterQueue") {
                        Some(section) => (section, true),
                        None => (
                            logical.strip_suffix("Queue").ok_or_else(|| {
                                anyhow!("the queue {logical} is not <Section>Queue")
                            })?,
                            false,
                        ),
                    };
                    let Some((url, dlq)) = local.queues.get(section) else {
                        // A queue this run has no URL for: nothing can call it.
                        continue;
                    };
                    let url = if dead { dlq } else { url };
                    let name = url.rsplit('/').next().unwrap_or_default().to_owned();
                    put(
                        format!("{logical}.Arn"),
                        format!("arn:aws:sqs:{region}:{account}:{name}"),
                    );
                    put(format!("{logical}.QueueName"), name);
                    put(logical.clone(), url.clone());
                }
                "AWS::S3::Bucket" => {
                    put(
                        format!("{logical}.Arn"),
                        format!("arn:aws:s3:::{}", local.bucket),
                    );
                    put(logical.clone(), local.bucket.clone());
                }
                "AWS::SecretsManager::Secret" => put(
                    logical.clone(),
                    secret_arn(region, account, &local.secret_id),
                ),
                other => bail!("{logical}: the local API cannot name a {other}"),
            }
        }
        // Longest first, so `${X.Arn}` is replaced before a shorter value inside it is seen.
        values.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        Ok(Self { values })
    }

    /// `text` with every placeholder replaced by its local value.
    pub fn resolve(&self, text: &str) -> anyhow::Result<String> {
        let mut out = text.to_owned();
        for (token, value) in &self.values {
            out = out.replace(token, value);
        }
        if let Some(start) = out.find("${") {
            bail!("{text}: {} names nothing this run has", &out[start..]);
        }
        Ok(out)
    }

    /// `resource` as the template writes it: local names back to their placeholders.
    pub fn as_written(&self, resource: &str) -> String {
        let mut out = resource.to_owned();
        for (token, value) in &self.values {
            if !value.is_empty() {
                out = out.replace(value.as_str(), token);
            }
        }
        out
    }
}

/// The ARN IAM authorises a secret's calls on, for an id that is a name or an ARN.
pub fn secret_arn(region: &str, account: &str, id: &str) -> String {
    if id.starts_with("arn:") {
        id.to_owned()
    } else {
        format!("arn:aws:secretsmanager:{region}:{account}:secret:{id}")
    }
}

/// One statement, bound.
#[derive(Debug, Clone)]
struct Statement {
    id: String,
    allow: bool,
    actions: Vec<String>,
    /// (as bound, as written)
    resources: Vec<(String, String)>,
    conditions: Vec<Condition>,
}

/// One condition of a statement: an operator over one key.
#[derive(Debug, Clone)]
struct Condition {
    set: SetQualifier,
    like: bool,
    key: String,
    values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetQualifier {
    Single,
    ForAllValues,
    ForAnyValue,
}

/// The condition keys the enforcement knows; a statement naming another is refused at start,
/// so no condition is ever read as holding when it was not checked.
const KNOWN_KEYS: &[&str] = &["dynamodb:LeadingKeys", "dynamodb:Attributes"];

impl Condition {
    fn parse(operator: &str, key: &str, values: &serde_json::Value) -> anyhow::Result<Self> {
        let (set, base) = match operator.split_once(':') {
            Some(("ForAllValues", base)) => (SetQualifier::ForAllValues, base),
            Some(("ForAnyValue", base)) => (SetQualifier::ForAnyValue, base),
            Some(_) => bail!("the condition operator {operator} is not enforced locally"),
            None => (SetQualifier::Single, operator),
        };
        let like = match base {
            "StringEquals" => false,
            "StringLike" => true,
            other => bail!("the condition operator {other} is not enforced locally"),
        };
        if !KNOWN_KEYS.contains(&key) {
            bail!("the condition key {key} is not enforced locally");
        }
        let values = match values {
            serde_json::Value::String(s) => vec![s.clone()],
            serde_json::Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| anyhow!("{key}: {v} is not a string"))
                })
                .collect::<anyhow::Result<_>>()?,
            other => bail!("{key}: {other} is not a string or a list"),
        };
        Ok(Self {
            set,
            like,
            key: key.to_owned(),
            values,
        })
    }

    fn holds(&self, context: &Context) -> bool {
        let matches = |value: &str| {
            self.values.iter().any(|pattern| {
                if self.like {
                    wildcard(pattern, value, false)
                } else {
                    pattern == value
                }
            })
        };
        let request = context.get(&self.key);
        match (self.set, request) {
            // IAM: ForAllValues holds when the request has no value for the key.
            (SetQualifier::ForAllValues, None) => true,
            (SetQualifier::ForAllValues, Some(values)) => {
                values.iter().all(|v| v.as_deref().is_some_and(matches))
            }
            (SetQualifier::ForAnyValue | SetQualifier::Single, None) => false,
            (SetQualifier::ForAnyValue | SetQualifier::Single, Some(values)) => {
                values.iter().any(|v| v.as_deref().is_some_and(matches))
            }
        }
    }
}

/// A function's policy, bound to this run's names.
#[derive(Debug, Clone)]
pub struct FunctionPolicy {
    /// The function's logical id.
    pub logical_id: String,
    statements: Vec<Statement>,
}

/// What IAM decides for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed by this statement, through this action pattern and resource pattern (as
    /// written).
    Allowed {
        statement: String,
        action: String,
        resource: String,
    },
    /// No statement allows it (or one denies it).
    Denied,
}

impl FunctionPolicy {
    /// The policy of `entry` with its placeholders bound by `names`.
    pub fn bind(entry: &FunctionEntry, names: &Names) -> anyhow::Result<Self> {
        let statements = entry
            .statements
            .iter()
            .map(|s| {
                let context = || format!("{} {}", entry.logical_id, s.id);
                let allow = match s.effect.as_str() {
                    "Allow" => true,
                    "Deny" => false,
                    other => bail!("{}: the effect {other}", context()),
                };
                let resources = s
                    .resources
                    .iter()
                    .map(|r| Ok((names.resolve(r)?, r.clone())))
                    .collect::<anyhow::Result<_>>()
                    .with_context(context)?;
                let mut conditions = Vec::new();
                for (operator, keys) in &s.condition {
                    for (key, values) in keys {
                        conditions
                            .push(Condition::parse(operator, key, values).with_context(context)?);
                    }
                }
                Ok(Statement {
                    id: s.id.clone(),
                    allow,
                    actions: s.actions.clone(),
                    resources,
                    conditions,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            logical_id: entry.logical_id.clone(),
            statements,
        })
    }

    /// IAM's decision for `call`.
    pub fn decide(&self, call: &Call) -> Decision {
        let matching = |s: &Statement| -> Option<(String, String)> {
            let action = s
                .actions
                .iter()
                .find(|pattern| wildcard(pattern, &call.action, true))?;
            let (_, resource) = s
                .resources
                .iter()
                .find(|(bound, _)| wildcard(bound, &call.resource, false))?;
            s.conditions
                .iter()
                .all(|c| c.holds(&call.context))
                .then(|| (action.clone(), resource.clone()))
        };
        if self
            .statements
            .iter()
            .any(|s| !s.allow && matching(s).is_some())
        {
            return Decision::Denied;
        }
        self.statements
            .iter()
            .filter(|s| s.allow)
            .find_map(|s| {
                matching(s).map(|(action, resource)| Decision::Allowed {
                    statement: s.id.clone(),
                    action,
                    resource,
                })
            })
            .unwrap_or(Decision::Denied)
    }
}

/// IAM's wildcard match: `*` any run of characters, `?` one; actions compare without case.
pub fn wildcard(pattern: &str, value: &str, ignore_case: bool) -> bool {
    if ignore_case {
        wildmatch::WildMatch::new_case_insensitive(pattern).matches(value)
    } else {
        wildmatch::WildMatch::new(pattern).matches(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_iam_matches() {
        assert!(wildcard("dynamodb:*", "dynamodb:GetItem", true));
        assert!(wildcard("DynamoDB:getitem", "dynamodb:GetItem", true));
        assert!(!wildcard("dynamodb:Get*", "dynamodb:PutItem", true));
        assert!(wildcard("arn:aws:s3:::b/*", "arn:aws:s3:::b/k/x", false));
        assert!(!wildcard("arn:aws:s3:::b/*", "arn:aws:s3:::b", false));
        assert!(wildcard("t/index/*", "t/index/byUser", false));
        assert!(wildcard("a?c", "abc", false));
        assert!(!wildcard("arn:x:table/T", "arn:x:table/T/index/I", false));
    }
}
