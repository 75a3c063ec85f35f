//! Caps on the length of a driver's lists (personal access tokens, webhook subscriptions, apps)
//! that hold when additions arrive at once.
//!
//! Counting the list's rows and then writing a new one lets every request that counted
//! before the others wrote pass the cap. Instead each list has a version, kept on the
//! driver's profile: an addition reads the version, then counts the rows, and writes its row
//! in one transaction with the version moved on, conditional on the version it read. Of
//! additions racing over one count, one commits; the others find the version moved, count
//! again, and see the row that won. Removals do not move the version: a count that still
//! holds a removed row only errs on the safe side.

use super::users::profile_key;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, StoreError, TxOp, Update};
use paddock_kernel::tables::Table;

/// A driver's list whose length is capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CappedList {
    /// Personal access tokens.
    PersonalTokens,
    /// Webhook subscriptions.
    WebhookSubscriptions,
    /// OAuth apps the driver registered.
    Apps,
}

impl CappedList {
    /// The profile attribute holding the list's version.
    fn attribute(self) -> &'static str {
        match self {
            Self::PersonalTokens => "personalTokensVersion",
            Self::WebhookSubscriptions => "webhooksVersion",
            Self::Apps => "appsVersion",
        }
    }
}

/// A list's version as read before its rows were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListVersion {
    list: CappedList,
    read: Option<i64>,
}

impl ListVersion {
    /// Reads the version of `user`'s `list`; count the rows after this read.
    pub async fn read(ports: &Ports, user: &UserId, list: CappedList) -> Result<Self, StoreError> {
        let profile = ports.items.get(Table::Users, &profile_key(user)).await?;
        let read = profile
            .as_ref()
            .and_then(|p| p.get(list.attribute()))
            .and_then(serde_json::Value::as_i64);
        Ok(Self { list, read })
    }

    /// The operation that moves the version on, conditional on it being the one read (and on
    /// the profile existing): put it in the transaction that writes the new row. When its
    /// condition fails, another addition won: read again.
    pub fn advance_op(&self, user: &UserId) -> TxOp {
        let attribute = self.list.attribute();
        let unchanged = match self.read {
            Some(v) => Condition::eq(attribute, v),
            None => Condition::AttrNotExists(attribute.into()),
        };
        TxOp::Update {
            table: Table::Users,
            key: profile_key(user),
            update: Update::set(attribute, self.read.unwrap_or(0) + 1),
            condition: Some(Condition::And(vec![Condition::Exists, unchanged])),
        }
    }
}
