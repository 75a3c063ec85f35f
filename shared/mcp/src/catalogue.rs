//! The tools: each names one REST read operation and is described by that operation's own
//! words, parameters, answer schema and scopes, read from the API's description once per
//! process. A tool's input schema is its route's parameters; its output schema is its route's
//! answer, with the schemas it refers to carried under `$defs`.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use rmcp::model::{JsonObject, Tool as ListedTool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::Reads;
use paddock_core::identity::personal_tokens::Scope;

/// A tool as written here: its name, its title, and the operation it answers with.
#[derive(Debug)]
pub(crate) struct ToolSpec {
    /// The tool's name (what an assistant calls).
    pub name: &'static str,
    /// A short title to show a driver.
    pub title: &'static str,
    /// The REST operation's id.
    pub operation: &'static str,
    /// For a public route (which names no scope), the scope the tool needs: an assistant
    /// reads only what the driver let it.
    pub public_data: Option<Scope>,
}

/// Every tool, in the order they are listed.
pub(crate) const TOOLS: [ToolSpec; 12] = [
    tool("get_my_profile", "My profile", "getMyProfile"),
    tool("list_my_sessions", "My sessions", "listSessions"),
    tool(
        "get_my_session",
        "One of my sessions, with its laps",
        "getSession",
    ),
    tool("list_tracks", "Tracks", "listTracks"),
    tool("get_board", "A track's board", "getLeaderboard"),
    tool("get_my_standing", "My row on a board", "getMyStanding"),
    public(
        "list_board_cars",
        "The cars on a track's board",
        "listLeaderboardVehicles",
        Scope::BoardsRead,
    ),
    tool("get_my_progress", "My progress on a track", "getMyProgress"),
    tool("list_my_feed", "My feed", "listFeed"),
    tool(
        "list_my_achievements",
        "My achievements",
        "listMyAchievements",
    ),
    tool("list_events", "Public events", "listEvents"),
    tool(
        "get_event_standings",
        "An event's standings",
        "getEventStandings",
    ),
];

const fn tool(name: &'static str, title: &'static str, operation: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        title,
        operation,
        public_data: None,
    }
}

const fn public(
    name: &'static str,
    title: &'static str,
    operation: &'static str,
    scope: Scope,
) -> ToolSpec {
    ToolSpec {
        public_data: Some(scope),
        ..tool(name, title, operation)
    }
}

/// The scopes the tools need (each tool needs one of its own), as the protected resource
/// metadata and a refusal's `WWW-Authenticate` name them.
pub(crate) const SCOPES: [Scope; 5] = [
    Scope::ProfileRead,
    Scope::SessionsRead,
    Scope::BoardsRead,
    Scope::ActivityRead,
    Scope::EventsRead,
];

/// [`SCOPES`] by name.
pub(crate) fn scope_names() -> Vec<&'static str> {
    SCOPES.iter().map(|scope| scope.name()).collect()
}

/// A parameter of a tool's route.
#[derive(Debug, Clone)]
pub(crate) struct Param {
    /// Its name, in the route and in the tool's arguments.
    pub name: String,
    /// In the path (else in the query).
    pub in_path: bool,
    /// An integer (else a string).
    pub integer: bool,
    /// Required.
    pub required: bool,
}

/// A tool, ready to list and to call.
#[derive(Debug)]
pub(crate) struct Tool {
    /// As `tools/list` shows it.
    pub listed: ListedTool,
    /// The route's path, with `{name}` for each path parameter.
    pub path: String,
    /// The route's parameters.
    pub params: Vec<Param>,
    /// The scopes the route accepts (any one of them).
    pub scopes: &'static [Scope],
}

/// Every tool, built from the REST description.
#[derive(Debug)]
pub(crate) struct Catalogue {
    /// In the order of [`TOOLS`].
    pub tools: Vec<Tool>,
}

impl Catalogue {
    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.listed.name == name)
    }
}

/// The catalogue, built from `reads`' description on first use.
pub(crate) fn catalogue(reads: Reads) -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let description =
            serde_json::to_value((reads.description)()).expect("the API description serialises");
        match built(&description) {
            Ok(catalogue) => catalogue,
            Err(problem) => panic!("the MCP tools do not match the REST routes: {problem}"),
        }
    })
}

/// The catalogue of the REST description `doc` (OpenAPI 3.1 as JSON); `Err` names a tool
/// whose operation is missing or not a read.
pub(crate) fn built(doc: &Value) -> Result<Catalogue, String> {
    let tools = TOOLS
        .iter()
        .map(|spec| built_tool(doc, spec))
        .collect::<Result<_, _>>()?;
    Ok(Catalogue { tools })
}

fn built_tool(doc: &Value, spec: &ToolSpec) -> Result<Tool, String> {
    let (path, operation) = find_operation(doc, spec.operation)
        .ok_or_else(|| format!("{}: no GET operation {}", spec.name, spec.operation))?;
    let mut params = Vec::new();
    let (mut properties, mut required) = (Map::new(), Vec::new());
    for param in operation["parameters"].as_array().into_iter().flatten() {
        let name = param["name"].as_str().unwrap_or_default().to_owned();
        let in_path = param["in"] == "path";
        let mut schema = param["schema"].clone();
        let integer = schema["type"] == "integer";
        if let (Some(schema), Some(text)) = (schema.as_object_mut(), param["description"].as_str())
        {
            schema.insert("description".into(), text.into());
        }
        let is_required = in_path || param["required"] == true;
        if is_required {
            required.push(Value::from(name.clone()));
        }
        properties.insert(name.clone(), schema);
        params.push(Param {
            name,
            in_path,
            integer,
            required: is_required,
        });
    }
    let input = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let answer = &operation["responses"]["200"]["content"]["application/json"]["schema"];
    let output = self_contained(doc, answer)
        .ok_or_else(|| format!("{}: no JSON answer schema", spec.name))?;
    let scopes = match (route_scopes(operation), spec.public_data) {
        (named, None) if !named.is_empty() => named,
        (named, Some(scope)) if named.is_empty() => vec![scope],
        _ => {
            return Err(format!(
                "{}: a tool needs the route's scopes, or one of its own for a public route",
                spec.name
            ));
        }
    };
    let words = [&operation["summary"], &operation["description"]]
        .into_iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n\n");
    let listed = ListedTool::new(spec.name, words, Arc::new(object(input)))
        .with_title(spec.title)
        .with_raw_output_schema(Arc::new(object(output)))
        .with_annotations(
            ToolAnnotations::with_title(spec.title)
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        );
    Ok(Tool {
        listed,
        path: path.to_owned(),
        params,
        scopes: Box::leak(scopes.into_boxed_slice()),
    })
}

/// The GET operation with id `id`, and its path.
fn find_operation<'a>(doc: &'a Value, id: &str) -> Option<(&'a str, &'a Value)> {
    doc["paths"].as_object()?.iter().find_map(|(path, item)| {
        let get = item.get("get")?;
        (get["operationId"] == id).then_some((path.as_str(), get))
    })
}

/// The scopes an operation's security accepts (one of them is enough).
fn route_scopes(operation: &Value) -> Vec<Scope> {
    let named = operation["security"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|requirement| requirement["bearer"].as_array())
        .flatten()
        .filter_map(Value::as_str);
    let unique: BTreeSet<&str> = named.collect();
    unique.into_iter().filter_map(Scope::parse).collect()
}

/// `schema` with every component it refers to (transitively) under `$defs`, its references
/// pointing there: a JSON Schema that stands alone. A reference at the top is inlined, so the
/// schema's own type (an object) is at its top, as MCP asks of an output schema.
fn self_contained(doc: &Value, schema: &Value) -> Option<Value> {
    let components = doc["components"]["schemas"].as_object();
    let mut top = match schema["$ref"].as_str() {
        Some(reference) => components?.get(component_name(reference)?)?.clone(),
        None => schema.clone(),
    };
    if top.is_null() {
        return None;
    }
    let mut names = BTreeSet::new();
    let mut pending = vec![top.clone()];
    while let Some(value) = pending.pop() {
        let mut found = Vec::new();
        references(&value, &mut found);
        for name in found {
            if names.insert(name.clone())
                && let Some(component) = components.and_then(|c| c.get(&name))
            {
                pending.push(component.clone());
            }
        }
    }
    let mut defs = Map::new();
    for name in names {
        let mut component = components
            .and_then(|c| c.get(&name))
            .cloned()
            .unwrap_or(Value::Null);
        repoint(&mut component);
        defs.insert(name, component);
    }
    repoint(&mut top);
    if !defs.is_empty()
        && let Some(object) = top.as_object_mut()
    {
        object.insert("$defs".into(), Value::Object(defs));
    }
    Some(top)
}

const COMPONENTS: &str = "#/components/schemas/";

fn component_name(reference: &str) -> Option<&str> {
    reference.strip_prefix(COMPONENTS)
}

/// The component names `value` refers to.
fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner.as_str().and_then(component_name)) {
                    ("$ref", Some(name)) => out.push(name.to_owned()),
                    _ => references(inner, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, out)),
        _ => {}
    }
}

/// Points `value`'s component references at `$defs`.
fn repoint(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if key == "$ref"
                    && let Some(name) = inner.as_str().and_then(component_name)
                {
                    *inner = Value::from(format!("#/$defs/{name}"));
                } else {
                    repoint(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(repoint),
        _ => {}
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_schema_stands_alone_with_what_it_refers_to() {
        let doc = json!({"components": {"schemas": {
            "Envelope": {"type": "object", "properties": {"data": {"$ref": "#/components/schemas/Page"}}},
            "Page": {"type": "object", "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Row"}}}},
            "Row": {"type": "object", "properties": {"ms": {"type": "integer"}}},
            "Unused": {"type": "string"},
        }}});
        let schema = self_contained(&doc, &json!({"$ref": "#/components/schemas/Envelope"}))
            .expect("a schema");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["data"]["$ref"], "#/$defs/Page");
        let defs = schema["$defs"].as_object().expect("$defs");
        assert_eq!(defs.keys().collect::<Vec<_>>(), ["Page", "Row"]);
        assert_eq!(
            defs["Page"]["properties"]["items"]["items"]["$ref"],
            "#/$defs/Row"
        );
    }
}
