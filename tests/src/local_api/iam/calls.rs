//! What IAM authorises for one request to an AWS service: its actions, each on its resource
//! with the request's condition keys. A transaction is authorised item by item by each item's
//! own action (`PutItem`, `UpdateItem`, `DeleteItem`, `ConditionCheckItem`, `GetItem`) on its
//! table, a batch by its own action on each table, a query on an index by the index's ARN, a
//! presigned S3 URL as its signer.

use std::collections::{BTreeMap, BTreeSet};

/// The condition keys of one call: key → values, `None` for "every attribute" (a read without
/// a projection), which no attribute condition allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context(BTreeMap<String, Vec<Option<String>>>);

impl Context {
    /// The values of `key`, when the request has it.
    pub fn get(&self, key: &str) -> Option<&Vec<Option<String>>> {
        self.0.get(key)
    }

    fn set(&mut self, key: &str, values: Vec<Option<String>>) {
        self.0.insert(key.to_owned(), values);
    }
}

/// One authorised unit of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `service:Action`.
    pub action: String,
    /// The resource's ARN (`*` for actions without resource-level permissions).
    pub resource: String,
    /// Its condition keys.
    pub context: Context,
}

/// Where a request's calls live: the service it was signed for and the request itself.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The signing name (`dynamodb`, `s3`, `sqs`, `secretsmanager`, `monitoring`).
    pub service: &'a str,
    /// The signing region.
    pub region: &'a str,
    /// The account the stack's ARNs are written in.
    pub account: &'a str,
    pub method: &'a http::Method,
    pub uri: &'a http::Uri,
    pub headers: &'a http::HeaderMap,
    pub body: &'a [u8],
}

/// The calls `request` makes, or why they cannot be told (which refuses it).
pub fn calls(request: &Request<'_>) -> Result<Vec<Call>, String> {
    match request.service {
        "dynamodb" => dynamodb(request),
        "s3" => s3(request),
        "sqs" => sqs(request),
        "secretsmanager" => secrets_manager(request),
        "monitoring" => cloudwatch(request),
        other => Err(format!(
            "the service {other} is not one the stack's functions call"
        )),
    }
}

fn target_operation(request: &Request<'_>) -> Option<String> {
    let target = request.headers.get("x-amz-target")?.to_str().ok()?;
    Some(target.rsplit('.').next()?.to_owned())
}

fn json_body(request: &Request<'_>) -> Result<serde_json::Value, String> {
    serde_json::from_slice(request.body).map_err(|e| format!("the body is not JSON: {e}"))
}

fn call(action: String, resource: String, context: Context) -> Call {
    Call {
        action,
        resource,
        context,
    }
}

// ---------------------------------------------------------------------------------------------
// DynamoDB

fn dynamodb(request: &Request<'_>) -> Result<Vec<Call>, String> {
    let operation = target_operation(request).ok_or("a DynamoDB request without X-Amz-Target")?;
    let body = json_body(request)?;
    let table_arn = |table: &str| {
        if table.starts_with("arn:") {
            table.to_owned()
        } else {
            format!(
                "arn:aws:dynamodb:{}:{}:table/{table}",
                request.region, request.account
            )
        }
    };
    let action = |op: &str| format!("dynamodb:{op}");
    let table_of = |item: &serde_json::Value| -> Result<String, String> {
        item["TableName"]
            .as_str()
            .map(table_arn)
            .ok_or_else(|| format!("{operation} without a TableName"))
    };
    Ok(match operation.as_str() {
        "TransactWriteItems" | "TransactGetItems" => {
            let items = body["TransactItems"]
                .as_array()
                .ok_or("a transaction without TransactItems")?;
            let mut out = Vec::new();
            for item in items {
                let (kind, op) = [
                    ("Put", "PutItem"),
                    ("Update", "UpdateItem"),
                    ("Delete", "DeleteItem"),
                    ("ConditionCheck", "ConditionCheckItem"),
                    ("Get", "GetItem"),
                ]
                .into_iter()
                .find(|(kind, _)| item.get(kind).is_some())
                .ok_or("a transaction item of no known kind")?;
                let part = &item[kind];
                out.push(call(action(op), table_of(part)?, item_context(op, part)));
            }
            out
        }
        "BatchGetItem" | "BatchWriteItem" => {
            let tables = body["RequestItems"]
                .as_object()
                .ok_or("a batch without RequestItems")?;
            tables
                .iter()
                .map(|(table, requests)| {
                    let mut context = Context::default();
                    context.set("dynamodb:LeadingKeys", batch_leading_keys(requests));
                    call(action(&operation), table_arn(table), context)
                })
                .collect()
        }
        "Query" | "Scan" => {
            let mut resource = table_of(&body)?;
            if let Some(index) = body["IndexName"].as_str() {
                resource = format!("{resource}/index/{index}");
            }
            let mut context = Context::default();
            if operation == "Query" {
                context.set(
                    "dynamodb:LeadingKeys",
                    query_leading_key(&body).into_iter().map(Some).collect(),
                );
            }
            context.set("dynamodb:Attributes", read_attributes(&body));
            vec![call(action(&operation), resource, context)]
        }
        "ListTables" => vec![call(action(&operation), "*".into(), Context::default())],
        op => {
            let resource = table_of(&body)?;
            vec![call(action(op), resource, item_context(op, &body))]
        }
    })
}

/// The hash key attribute every table of the stack has.
const HASH_KEY: &str = "pk";

fn item_context(operation: &str, part: &serde_json::Value) -> Context {
    let mut context = Context::default();
    let key = if operation == "PutItem" {
        &part["Item"]
    } else {
        &part["Key"]
    };
    if let Some(pk) = key[HASH_KEY].as_object().and_then(|v| v.get("S")) {
        context.set("dynamodb:LeadingKeys", vec![pk.as_str().map(str::to_owned)]);
    }
    let mut attributes: BTreeSet<String> = key
        .as_object()
        .map(|k| k.keys().cloned().collect())
        .unwrap_or_default();
    let names = &part["ExpressionAttributeNames"];
    for field in [
        "UpdateExpression",
        "ConditionExpression",
        "ProjectionExpression",
    ] {
        if let Some(expression) = part[field].as_str() {
            attributes.extend(expression_attributes(expression, names));
        }
    }
    let values = if operation == "GetItem" && part["ProjectionExpression"].is_null() {
        vec![None]
    } else {
        attributes.into_iter().map(Some).collect()
    };
    context.set("dynamodb:Attributes", values);
    context
}

fn read_attributes(body: &serde_json::Value) -> Vec<Option<String>> {
    match body["ProjectionExpression"].as_str() {
        Some(expression) => expression_attributes(expression, &body["ExpressionAttributeNames"])
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None],
    }
}

fn batch_leading_keys(requests: &serde_json::Value) -> Vec<Option<String>> {
    let keys: Vec<&serde_json::Value> = match requests {
        // BatchGetItem: {"Keys": [...]}; BatchWriteItem: [{"PutRequest": {"Item"}}, ...]
        serde_json::Value::Object(o) => o
            .get("Keys")
            .and_then(|k| k.as_array())
            .map(|k| k.iter().collect())
            .unwrap_or_default(),
        serde_json::Value::Array(writes) => writes
            .iter()
            .filter_map(|w| {
                w.get("PutRequest")
                    .map(|p| &p["Item"])
                    .or_else(|| w.get("DeleteRequest").map(|d| &d["Key"]))
            })
            .collect(),
        _ => Vec::new(),
    };
    keys.iter()
        .map(|k| k[HASH_KEY]["S"].as_str().map(str::to_owned))
        .collect()
}

/// The partition key value a query's key condition names (`pk = :v` or `#n = :v`).
fn query_leading_key(body: &serde_json::Value) -> Option<String> {
    let expression = body["KeyConditionExpression"].as_str()?;
    let names = &body["ExpressionAttributeNames"];
    for clause in expression.split(" AND ").chain(expression.split(" and ")) {
        let Some((left, right)) = clause.split_once('=') else {
            continue;
        };
        let (left, right) = (
            left.trim().trim_start_matches('('),
            right.trim().trim_end_matches(')'),
        );
        let name = names[left].as_str().unwrap_or(left);
        if name == HASH_KEY {
            return body["ExpressionAttributeValues"][right]["S"]
                .as_str()
                .map(str::to_owned);
        }
    }
    None
}

/// The top-level attribute names an expression reads or writes: `#name` placeholders through
/// `names`, bare names as written; functions, keywords, values and nested paths are not.
pub fn expression_attributes(expression: &str, names: &serde_json::Value) -> BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "SET", "REMOVE", "ADD", "DELETE", "AND", "OR", "NOT", "BETWEEN", "IN",
    ];
    let chars: Vec<char> = expression.chars().collect();
    let mut out = BTreeSet::new();
    let mut i = 0;
    let mut after_dot = false;
    while i < chars.len() {
        let c = chars[i];
        if c == ':' {
            // A value placeholder.
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            after_dot = false;
            continue;
        }
        if c == '#' || c.is_alphabetic() || c == '_' {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let is_function = j < chars.len() && chars[j] == '(';
            let nested = after_dot;
            after_dot = false;
            if is_function || nested || KEYWORDS.contains(&word.to_ascii_uppercase().as_str()) {
                continue;
            }
            let name = if word.starts_with('#') {
                names[word.as_str()]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or(word)
            } else {
                word
            };
            out.insert(name);
            continue;
        }
        if c == '.' {
            after_dot = true;
        } else if c == '[' {
            // A list index: what follows is a number, then `]`.
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
        } else if !c.is_whitespace() {
            after_dot = false;
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// S3 (path-style, as the local endpoint is addressed)

fn s3(request: &Request<'_>) -> Result<Vec<Call>, String> {
    let path = request.uri.path().trim_start_matches('/');
    let (bucket, key) = match path.split_once('/') {
        Some((bucket, key)) if !key.is_empty() => (bucket, Some(key)),
        _ => (path.trim_end_matches('/'), None),
    };
    if bucket.is_empty() {
        return Ok(vec![call(
            "s3:ListAllMyBuckets".into(),
            "*".into(),
            Context::default(),
        )]);
    }
    let query: BTreeMap<String, String> = request
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let bucket_arn = format!("arn:aws:s3:::{bucket}");
    let one = |action: &str, resource: String| {
        vec![call(format!("s3:{action}"), resource, Context::default())]
    };
    let method = request.method.as_str();
    let Some(key) = key else {
        return Ok(match method {
            "GET" | "HEAD" if query.contains_key("location") => {
                one("GetBucketLocation", bucket_arn)
            }
            "GET" if query.contains_key("lifecycle") => {
                one("GetLifecycleConfiguration", bucket_arn)
            }
            "PUT" if query.contains_key("lifecycle") => {
                one("PutLifecycleConfiguration", bucket_arn)
            }
            "GET" if query.contains_key("versions") => one("ListBucketVersions", bucket_arn),
            "GET" if query.contains_key("uploads") => one("ListBucketMultipartUploads", bucket_arn),
            "GET" | "HEAD" => one("ListBucket", bucket_arn),
            "PUT" => one("CreateBucket", bucket_arn),
            "DELETE" => one("DeleteBucket", bucket_arn),
            "POST" if query.contains_key("delete") => {
                // DeleteObjects: authorised as DeleteObject on each key it names.
                let text = String::from_utf8_lossy(request.body);
                let keys: Vec<String> = text
                    .split("<Key>")
                    .skip(1)
                    .filter_map(|rest| rest.split_once("</Key>").map(|(k, _)| xml_unescape(k)))
                    .collect();
                keys.into_iter()
                    .map(|k| {
                        call(
                            "s3:DeleteObject".into(),
                            format!("{bucket_arn}/{k}"),
                            Context::default(),
                        )
                    })
                    .collect()
            }
            other => return Err(format!("an S3 bucket request {other} {}", request.uri)),
        });
    };
    let key = percent_decode(key);
    let object = format!("{bucket_arn}/{key}");
    Ok(match method {
        "GET" | "HEAD" if query.contains_key("versionId") => one("GetObjectVersion", object),
        "GET" | "HEAD" => one("GetObject", object),
        "PUT" => {
            let mut out = one("PutObject", object);
            if let Some(source) = request.headers.get("x-amz-copy-source") {
                let source = source.to_str().unwrap_or_default();
                let source = percent_decode(source.trim_start_matches('/'));
                let source = source.split('?').next().unwrap_or_default();
                out.push(call(
                    "s3:GetObject".into(),
                    format!("arn:aws:s3:::{source}"),
                    Context::default(),
                ));
            }
            out
        }
        "POST" => one("PutObject", object),
        "DELETE" if query.contains_key("uploadId") => one("AbortMultipartUpload", object),
        "DELETE" => one("DeleteObject", object),
        other => return Err(format!("an S3 object request {other} {}", request.uri)),
    })
}

fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("k={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

// ---------------------------------------------------------------------------------------------
// SQS (JSON protocol), Secrets Manager, CloudWatch (query protocol)

fn sqs(request: &Request<'_>) -> Result<Vec<Call>, String> {
    let operation = target_operation(request).ok_or("an SQS request without X-Amz-Target")?;
    let body = json_body(request)?;
    // The batch forms are authorised as their single forms.
    let action = match operation.as_str() {
        "SendMessageBatch" => "SendMessage",
        "DeleteMessageBatch" => "DeleteMessage",
        "ChangeMessageVisibilityBatch" => "ChangeMessageVisibility",
        op => op,
    };
    let resource = match body["QueueUrl"].as_str() {
        Some(url) => {
            let mut parts = url.trim_end_matches('/').rsplit('/');
            let name = parts.next().unwrap_or_default();
            let account = parts.next().unwrap_or(request.account);
            format!("arn:aws:sqs:{}:{account}:{name}", request.region)
        }
        None => match body["QueueName"].as_str() {
            Some(name) => format!("arn:aws:sqs:{}:{}:{name}", request.region, request.account),
            None => "*".into(),
        },
    };
    Ok(vec![call(
        format!("sqs:{action}"),
        resource,
        Context::default(),
    )])
}

fn secrets_manager(request: &Request<'_>) -> Result<Vec<Call>, String> {
    let operation =
        target_operation(request).ok_or("a Secrets Manager request without X-Amz-Target")?;
    let body = json_body(request)?;
    let resource = match body["SecretId"].as_str().or(body["Name"].as_str()) {
        Some(id) => super::policy::secret_arn(request.region, request.account, id),
        None => "*".into(),
    };
    Ok(vec![call(
        format!("secretsmanager:{operation}"),
        resource,
        Context::default(),
    )])
}

fn cloudwatch(request: &Request<'_>) -> Result<Vec<Call>, String> {
    let action = form_urlencoded::parse(request.body)
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.into_owned())
        .ok_or("a CloudWatch request without an Action")?;
    // None of the metric actions the stack uses has resource-level permissions.
    Ok(vec![call(
        format!("cloudwatch:{action}"),
        "*".into(),
        Context::default(),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_name_their_top_level_attributes() {
        let names = json!({"#t": "ttl", "#u": "lastUsedAt"});
        let got = expression_attributes(
            "SET #u = :now, counts.total = counts.total + :one REMOVE old[2] ",
            &names,
        );
        assert_eq!(
            got,
            ["counts", "lastUsedAt", "old"].map(String::from).into()
        );
        let got = expression_attributes(
            "attribute_exists(pk) AND (#t > :now OR attribute_not_exists(#t)) AND size(a.b) < :n",
            &names,
        );
        assert_eq!(got, ["a", "pk", "ttl"].map(String::from).into());
    }

    #[test]
    fn a_transaction_is_authorised_item_by_item() {
        let body = json!({"TransactItems": [
            {"Put": {"TableName": "t-outbox", "Item": {"pk": {"S": "E#1"}}}},
            {"ConditionCheck": {"TableName": "t-users", "Key": {"pk": {"S": "U#1"}, "sk": {"S": "P"}},
                                "ConditionExpression": "attribute_exists(pk)"}},
        ]})
        .to_string();
        let headers: http::HeaderMap = [(
            http::header::HeaderName::from_static("x-amz-target"),
            http::HeaderValue::from_static("DynamoDB_20120810.TransactWriteItems"),
        )]
        .into_iter()
        .collect();
        let uri: http::Uri = "/".parse().unwrap();
        let request = Request {
            service: "dynamodb",
            region: "us-east-1",
            account: "123456789012",
            method: &http::Method::POST,
            uri: &uri,
            headers: &headers,
            body: body.as_bytes(),
        };
        let got: Vec<(String, String)> = calls(&request)
            .unwrap()
            .into_iter()
            .map(|c| (c.action, c.resource))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "dynamodb:PutItem",
                    "arn:aws:dynamodb:us-east-1:123456789012:table/t-outbox"
                ),
                (
                    "dynamodb:ConditionCheckItem",
                    "arn:aws:dynamodb:us-east-1:123456789012:table/t-users"
                ),
            ]
            .map(|(a, r)| (a.to_owned(), r.to_owned()))
        );
    }
}
