//! The `webhooks` section of the API description (OpenAPI 3.1): each type a subscription can be
//! sent, with the body and the Standard Webhooks headers, so that a receiver can generate its
//! payload types. utoipa's document has no field for the section: it is added to the document
//! as served, with the payloads' schemas (the events' own, less what a receiver is never sent,
//! plus the `userId` every delivery names; a test holds them to what is sent).

use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use paddock_core::events::{
    AchievementUnlocked, BoardPassed, EventFinished, EventStarted, LeaderboardSubmitted,
    SessionUploaded,
};

/// What one type's webhook carries: its payload's schema name and its nested schemas.
struct Described {
    event_type: &'static str,
    what: &'static str,
    payload: String,
    schemas: Vec<(String, RefOr<Schema>)>,
}

fn described<T: ToSchema>(event_type: &'static str, what: &'static str) -> Described {
    let mut schemas = vec![(T::name().into_owned(), T::schema())];
    T::schemas(&mut schemas);
    Described {
        event_type,
        what,
        payload: T::name().into_owned(),
        schemas,
    }
}

/// Every type a receiver can be sent, with what it tells.
fn all() -> Vec<Described> {
    let mut all = vec![
        described::<SessionUploaded>("session.uploaded", "The driver uploaded a session."),
        described::<LeaderboardSubmitted>(
            "leaderboard.best",
            "A lap of the driver's is their new best on a track's board.",
        ),
        described::<AchievementUnlocked>(
            "achievement.unlocked",
            "The driver unlocked an achievement.",
        ),
        described::<BoardPassed>(
            "board.passed",
            "Another driver's new best passed the driver on a board.",
        ),
        described::<EventFinished>(
            "event.finished",
            "A competition event the driver entered has closed: their final position.",
        ),
        described::<EventStarted>(
            "event.started",
            "A competition event of a league the driver is in has opened.",
        ),
    ];
    let test = json!({
        "type": "object",
        "description": "A test delivery (`POST /v1/webhooks/{id}/test`), sent to that subscription only.",
        "properties": {
            "subscriptionId": {"type": "string", "format": "uuid", "description": "The subscription tested."},
            "message": {"type": "string", "description": "Always `A test delivery from Paddock`."}
        },
        "required": ["subscriptionId", "message"]
    });
    all.push(Described {
        event_type: "webhook.test",
        what: "A test delivery the driver asked for.",
        payload: "WebhookTest".into(),
        schemas: vec![(
            "WebhookTest".into(),
            serde_json::from_value(test).expect("a schema"),
        )],
    });
    all
}

/// The name of the delivery body's schema of `event_type` (`session.uploaded` →
/// `SessionUploadedDelivery`).
fn delivery_name(event_type: &str) -> String {
    let words = event_type.split(['.', '_']).map(|w| {
        let mut chars = w.chars();
        chars
            .next()
            .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
    });
    format!("{}Delivery", words.collect::<String>())
}

/// A Standard Webhooks header, as a parameter.
fn header(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "header", "required": true, "schema": {"type": "string"}, "description": description})
}

/// Adds the `webhooks` section, and the schemas it names, to the serialised document `doc`.
pub(crate) fn add_to(doc: &mut Value) {
    let mut webhooks = serde_json::Map::new();
    for described in all() {
        let schemas = &mut doc["components"]["schemas"];
        for (name, schema) in &described.schemas {
            let mut schema = serde_json::to_value(schema).expect("a schema serialises");
            if *name == described.payload {
                // Every delivery names the driver it concerns.
                schema["properties"]["userId"] = json!({"type": "string", "format": "uuid",
                    "description": "The driver the event concerns (the subscription's owner)."});
                if let Some(required) = schema["required"].as_array_mut() {
                    required.push(json!("userId"));
                } else {
                    schema["required"] = json!(["userId"]);
                }
            }
            schemas[name] = schema;
        }
        let delivery = delivery_name(described.event_type);
        schemas[&delivery] = json!({
            "type": "object",
            "description": format!("The body of a `{}` delivery.", described.event_type),
            "properties": {
                "type": {"type": "string", "const": described.event_type, "description": "The event type."},
                "timestamp": {"type": "string", "format": "date-time", "description": "When the event happened (RFC 3339)."},
                "data": {"$ref": format!("#/components/schemas/{}", described.payload)}
            },
            "required": ["type", "timestamp", "data"]
        });
        webhooks.insert(
            described.event_type.to_owned(),
            json!({"post": {
                "operationId": format!("{}Webhook", lower_first(delivery.trim_end_matches("Delivery"))),
                "tags": ["webhooks"],
                "summary": described.what,
                "description": "Sent to each subscription of the driver that subscribed to this type, signed as Standard Webhooks signs (docs/webhooks.md).",
                "security": [],
                "parameters": [
                    header("webhook-id", "The delivery's id: the same on every retry of it."),
                    header("webhook-timestamp", "Unix seconds when it was signed."),
                    header("webhook-signature", "`v1,<base64 HMAC-SHA256>` of `<id>.<timestamp>.<body>`, one per secret in use (space-separated)."),
                    header("webhook-subscription-id", "The subscription it was sent for."),
                ],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{delivery}")}}}},
                "responses": {"200": {"description": "Received: any 2xx answer; anything else is tried again later."}}
            }}),
        );
    }
    doc["webhooks"] = Value::Object(webhooks);
}

fn lower_first(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_lowercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::events::Event;
    use paddock_core::webhooks::message::message_of;

    /// A value of `schema`'s shape, resolving references in `doc`.
    fn sample(schema: &Value, doc: &Value) -> Value {
        if let Some(target) = schema["$ref"].as_str() {
            let name = target.rsplit('/').next().unwrap();
            return sample(&doc["components"]["schemas"][name], doc);
        }
        if let Some(one) = schema["oneOf"].as_array() {
            return sample(&one[0], doc);
        }
        let kind = match &schema["type"] {
            Value::Array(kinds) => kinds
                .iter()
                .find(|k| *k != "null")
                .cloned()
                .unwrap_or_default(),
            kind => kind.clone(),
        };
        match kind.as_str() {
            Some("object") => {
                let properties = schema["properties"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                properties
                    .iter()
                    .map(|(k, v)| (k.clone(), sample(v, doc)))
                    .collect()
            }
            Some("integer") => json!(1),
            Some("boolean") => json!(false),
            Some("array") => json!([]),
            _ if schema["format"] == "uuid" => json!(uuid::Uuid::new_v4()),
            _ => json!("2026-11-29T12:00:00Z"),
        }
    }

    #[test]
    fn each_payload_schema_names_what_is_sent() {
        let mut doc = json!({"components": {"schemas": {}}});
        add_to(&mut doc);
        // Fields a receiver is never sent, which an event cannot be read without.
        let internal = json!({"improved": true, "causeEventId": uuid::Uuid::new_v4()});
        for described in all().iter().filter(|d| d.event_type != "webhook.test") {
            let schema = &doc["components"]["schemas"][&described.payload];
            let mut payload = sample(schema, &doc);
            for (k, v) in internal.as_object().unwrap() {
                payload[k] = v.clone();
            }
            let kind = match described.event_type {
                "leaderboard.best" => "leaderboard.submit",
                other => other,
            };
            let user = payload["userId"].clone();
            payload.as_object_mut().unwrap().remove("userId");
            let event: Event = serde_json::from_value(json!({
                "id": uuid::Uuid::new_v4(), "userId": user, "occurredAt": "2026-11-29T12:00:00Z",
                "kind": kind, "payload": payload,
            }))
            .unwrap_or_else(|e| panic!("{}: {e}", described.event_type));
            let message = message_of(&event).expect("a message");
            assert_eq!(message.event_type, described.event_type);
            let sent: Vec<&String> = message.data.as_object().unwrap().keys().collect();
            let documented: Vec<&String> =
                schema["properties"].as_object().unwrap().keys().collect();
            let (mut sent, mut documented) = (sent, documented);
            sent.sort();
            documented.sort();
            assert_eq!(sent, documented, "{}", described.event_type);
        }
        let webhooks = doc["webhooks"].as_object().unwrap();
        let mut types: Vec<&str> = webhooks.keys().map(String::as_str).collect();
        types.sort();
        let mut expected: Vec<&str> = paddock_core::webhooks::EVENT_TYPES.to_vec();
        expected.push(paddock_core::webhooks::TEST_EVENT_TYPE);
        expected.sort();
        assert_eq!(types, expected);
        assert_eq!(delivery_name("board.passed"), "BoardPassedDelivery");
    }
}
