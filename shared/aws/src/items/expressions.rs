//! DynamoDB's shapes of the store's items, keys, conditions and updates, and of one
//! transaction operation.

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update as DynamoUpdate,
};
use serde_json::Value;
use std::collections::HashMap;

use super::Attributes;
use paddock_core::ports::items::{Condition, Item, Key, PK, SK, StoreError, TTL, TxOp, Update};
use paddock_core::tables::Table;

pub(super) fn to_attributes(item: &Item) -> Result<Attributes, StoreError> {
    serde_dynamo::to_item(item)
        .map_err(|e| StoreError::Invalid(format!("item not representable: {e}")))
}

pub(super) fn from_attributes(attrs: Attributes) -> Result<Item, StoreError> {
    serde_dynamo::from_item(attrs)
        .map_err(|e| StoreError::Unavailable(format!("unreadable item: {e}")))
}

pub(super) fn to_value(value: &Value) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(value)
        .map_err(|e| StoreError::Invalid(format!("value not representable: {e}")))
}

pub(super) fn key_attributes(key: &Key) -> Attributes {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(key.pk.clone())),
        (SK.to_owned(), AttributeValue::S(key.sk.clone())),
    ])
}

/// Placeholders for one DynamoDB expression.
pub(super) struct Expression {
    names: HashMap<String, String>,
    values: Attributes,
    now: i64,
}

impl Expression {
    pub(super) fn new(now: i64) -> Self {
        Self {
            names: HashMap::new(),
            values: HashMap::new(),
            now,
        }
    }

    pub(super) fn name(&mut self, attr: &str) -> String {
        if let Some((p, _)) = self.names.iter().find(|(_, a)| *a == attr) {
            return p.clone();
        }
        let p = format!("#n{}", self.names.len());
        self.names.insert(p.clone(), attr.to_owned());
        p
    }

    pub(super) fn value(&mut self, value: AttributeValue) -> String {
        let p = format!(":v{}", self.values.len());
        self.values.insert(p.clone(), value);
        p
    }

    /// `#ttl` is missing or in the future: the item is live.
    pub(super) fn live(&mut self) -> String {
        let ttl = self.name(TTL);
        let now = self.value(AttributeValue::N(self.now.to_string()));
        format!("(attribute_not_exists({ttl}) OR {ttl} > {now})")
    }

    /// The item is absent or expired.
    pub(super) fn dead(&mut self) -> String {
        let (pk, ttl) = (self.name(PK), self.name(TTL));
        let now = self.value(AttributeValue::N(self.now.to_string()));
        format!("(attribute_not_exists({pk}) OR {ttl} <= {now})")
    }

    pub(super) fn condition(&mut self, c: &Condition) -> Result<String, StoreError> {
        Ok(match c {
            Condition::Exists => {
                let pk = self.name(PK);
                format!("(attribute_exists({pk}) AND {})", self.live())
            }
            Condition::NotExists => self.dead(),
            Condition::Eq(a, v) => self.compare(a, "=", v)?,
            Condition::Lt(a, v) => self.compare(a, "<", v)?,
            Condition::Gt(a, v) => self.compare(a, ">", v)?,
            Condition::Ne(a, v) => {
                let inner = self.compare(a, "<>", v)?;
                let n = self.name(a);
                format!("(attribute_exists({n}) AND {inner})")
            }
            Condition::AttrNotExists(a) => {
                let n = self.name(a);
                format!("(attribute_not_exists({n}) OR {})", self.dead())
            }
            Condition::And(all) | Condition::Or(all) if all.is_empty() => {
                // An empty AND is true and an empty OR false, as in `Condition::holds`.
                let pk = self.name(PK);
                if matches!(c, Condition::And(_)) {
                    format!("(attribute_exists({pk}) OR attribute_not_exists({pk}))")
                } else {
                    format!("(attribute_exists({pk}) AND attribute_not_exists({pk}))")
                }
            }
            Condition::And(all) => self.join(all, " AND ")?,
            Condition::Or(any) => self.join(any, " OR ")?,
        })
    }

    pub(super) fn compare(
        &mut self,
        attr: &str,
        op: &str,
        v: &Value,
    ) -> Result<String, StoreError> {
        let n = self.name(attr);
        let v = self.value(to_value(v)?);
        Ok(format!("({n} {op} {v} AND {})", self.live()))
    }

    pub(super) fn join(&mut self, parts: &[Condition], sep: &str) -> Result<String, StoreError> {
        let parts = parts
            .iter()
            .map(|c| self.condition(c))
            .collect::<Result<Vec<_>, _>>()?;
        // One part is already parenthesised: DynamoDB refuses parentheses around it again.
        Ok(match parts.as_slice() {
            [one] => one.clone(),
            _ => format!("({})", parts.join(sep)),
        })
    }

    pub(super) fn update(&mut self, u: &Update) -> Result<Option<String>, StoreError> {
        let mut clauses = Vec::new();
        if !u.set.is_empty() || !u.set_if_absent.is_empty() {
            let mut sets = u
                .set
                .iter()
                .map(|(a, v)| Ok(format!("{} = {}", self.name(a), self.value(to_value(v)?))))
                .collect::<Result<Vec<_>, StoreError>>()?;
            for (a, v) in &u.set_if_absent {
                let (name, value) = (self.name(a), self.value(to_value(v)?));
                sets.push(format!("{name} = if_not_exists({name}, {value})"));
            }
            clauses.push(format!("SET {}", sets.join(", ")));
        }
        if !u.add.is_empty() {
            let adds: Vec<_> = u
                .add
                .iter()
                .map(|(a, by)| {
                    format!(
                        "{} {}",
                        self.name(a),
                        self.value(AttributeValue::N(by.to_string()))
                    )
                })
                .collect();
            clauses.push(format!("ADD {}", adds.join(", ")));
        }
        if !u.remove.is_empty() {
            let removes: Vec<_> = u.remove.iter().map(|a| self.name(a)).collect();
            clauses.push(format!("REMOVE {}", removes.join(", ")));
        }
        Ok((!clauses.is_empty()).then(|| clauses.join(" ")))
    }

    pub(super) fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| self.names.clone())
    }

    pub(super) fn values(&self) -> Option<Attributes> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }
}

/// One operation of a transaction as DynamoDB takes it; `physical` names a table as the
/// deployment does.
pub(super) fn transact_item(
    op: &TxOp,
    now: i64,
    physical: impl Fn(Table) -> String,
) -> Result<TransactWriteItem, StoreError> {
    let mut expr = Expression::new(now);
    let build = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Invalid(e.to_string());
    Ok(match op {
        TxOp::Put {
            table,
            item,
            condition,
        } => {
            let cond = condition.as_ref().map(|c| expr.condition(c)).transpose()?;
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(physical(*table))
                        .set_item(Some(to_attributes(item)?))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build)?,
                )
                .build()
        }
        TxOp::Update {
            table,
            key,
            update,
            condition,
        } => {
            let update_expr = expr.update(update)?.ok_or_else(|| {
                StoreError::Invalid(
                    "an update inside a transaction needs at least one change".into(),
                )
            })?;
            let cond = condition.as_ref().map(|c| expr.condition(c)).transpose()?;
            TransactWriteItem::builder()
                .update(
                    DynamoUpdate::builder()
                        .table_name(physical(*table))
                        .set_key(Some(key_attributes(key)))
                        .update_expression(update_expr)
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build)?,
                )
                .build()
        }
        TxOp::Delete {
            table,
            key,
            condition,
        } => {
            let cond = condition.as_ref().map(|c| expr.condition(c)).transpose()?;
            TransactWriteItem::builder()
                .delete(
                    Delete::builder()
                        .table_name(physical(*table))
                        .set_key(Some(key_attributes(key)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build)?,
                )
                .build()
        }
        TxOp::Check {
            table,
            key,
            condition,
        } => {
            let cond = expr.condition(condition)?;
            TransactWriteItem::builder()
                .condition_check(
                    ConditionCheck::builder()
                        .table_name(physical(*table))
                        .set_key(Some(key_attributes(key)))
                        .condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build)?,
                )
                .build()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::ids::SessionId;
    use paddock_core::ports::items::decode;

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Record {
        session_id: SessionId,
    }

    fn attributes(session_id: &str) -> Attributes {
        HashMap::from([
            ("pk".to_owned(), AttributeValue::S("USER#x".into())),
            ("sk".to_owned(), AttributeValue::S("CLIENT#c-1".into())),
            ("sessionId".to_owned(), AttributeValue::S(session_id.into())),
        ])
    }

    #[test]
    fn an_item_with_a_malformed_id_does_not_read() {
        let malformed = attributes("s1");
        assert!(serde_dynamo::from_item::<_, Record>(malformed.clone()).is_err());
        let item = from_attributes(malformed).unwrap();
        let Err(StoreError::Unavailable(refused)) = decode::<Record>(item, "upload") else {
            panic!("a malformed id is refused");
        };
        assert!(
            refused.starts_with("corrupt upload: sessionId: invalid value"),
            "{refused}"
        );

        let id = "0190a0b2-3c4d-7e5f-9a0b-1c2d3e4f5a6b";
        let read: Record = serde_dynamo::from_item(attributes(id)).unwrap();
        assert_eq!(read.session_id.as_str(), id);
        let written = to_attributes(&from_attributes(attributes(id)).unwrap()).unwrap();
        assert_eq!(written["sessionId"], AttributeValue::S(id.into()));
    }
}
