//! A tool call's arguments as its route's path and query: each argument a parameter of the
//! route, of its type, the required ones given. What a parameter's value must be beyond its
//! type (a range, a pattern, an id's form) the route checks, as it does for a REST client.

use serde_json::Value;

use crate::catalogue::Tool;
use rmcp::model::JsonObject;

/// The route's path and query for `arguments`; `Err` names the argument and the rule it
/// breaks (a JSON-RPC invalid-params error).
pub(crate) fn path_and_query(
    tool: &Tool,
    arguments: Option<&JsonObject>,
) -> Result<String, String> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    if let Some(unknown) = arguments
        .keys()
        .find(|name| !tool.params.iter().any(|p| &p.name == *name))
    {
        return Err(format!(
            "{unknown}: not an argument of {} (it takes {})",
            tool.listed.name,
            argument_names(tool)
        ));
    }
    let mut path = tool.path.clone();
    let mut query = form_urlencoded_pairs();
    for param in &tool.params {
        let text = match arguments.get(&param.name) {
            None | Some(Value::Null) if param.required => {
                return Err(format!("{}: required", param.name));
            }
            None | Some(Value::Null) => continue,
            Some(Value::Number(n)) if param.integer && (n.is_i64() || n.is_u64()) => n.to_string(),
            Some(_) if param.integer => {
                return Err(format!("{}: must be an integer", param.name));
            }
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(format!("{}: must be a string", param.name)),
        };
        if param.in_path {
            if text.is_empty() {
                return Err(format!("{}: must not be empty", param.name));
            }
            path = path.replace(&format!("{{{}}}", param.name), &escaped_segment(&text));
        } else {
            query.append_pair(&param.name, &text);
        }
    }
    let query = query.finish();
    Ok(if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    })
}

fn form_urlencoded_pairs() -> url::form_urlencoded::Serializer<'static, String> {
    url::form_urlencoded::Serializer::new(String::new())
}

/// `text` as one path segment: every byte but the unreserved ones percent-encoded.
fn escaped_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn argument_names(tool: &Tool) -> String {
    if tool.params.is_empty() {
        return "none".into();
    }
    let names: Vec<&str> = tool.params.iter().map(|p| p.name.as_str()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Param;
    use rmcp::model::Tool as ListedTool;
    use std::sync::Arc;

    fn board_tool() -> Tool {
        let param = |name: &str, in_path, integer, required| Param {
            name: name.into(),
            in_path,
            integer,
            required,
        };
        Tool {
            listed: ListedTool::new("t", "", Arc::new(JsonObject::new())),
            path: "/v1/events/{id}/standings".into(),
            params: vec![
                param("id", true, false, true),
                param("limit", false, true, false),
                param("trackName", false, false, false),
            ],
            scopes: &[],
        }
    }

    fn call(arguments: Value) -> Result<String, String> {
        path_and_query(&board_tool(), arguments.as_object())
    }

    #[test]
    fn arguments_become_the_routes_path_and_query() {
        let got = call(serde_json::json!({"id": "a/b", "limit": 5, "trackName": "Spa & co"}));
        assert_eq!(
            got.as_deref(),
            Ok("/v1/events/a%2Fb/standings?limit=5&trackName=Spa+%26+co")
        );
        assert_eq!(
            call(serde_json::json!({"id": "e1"})).as_deref(),
            Ok("/v1/events/e1/standings")
        );
    }

    #[test]
    fn arguments_outside_the_schema_are_named_with_their_rule() {
        let refused = |arguments: Value| call(arguments).expect_err("refused");
        assert_eq!(refused(serde_json::json!({})), "id: required");
        assert_eq!(
            refused(serde_json::json!({"id": "e", "limit": "5"})),
            "limit: must be an integer"
        );
        assert_eq!(
            refused(serde_json::json!({"id": "e", "limit": 1.5})),
            "limit: must be an integer"
        );
        assert_eq!(
            refused(serde_json::json!({"id": 7})),
            "id: must be a string"
        );
        assert!(
            refused(serde_json::json!({"id": "e", "sql": "x"})).starts_with("sql: not an argument")
        );
    }
}
