//! What the service does to a driver's subscriptions: pause them all (a password change),
//! delete them all (a takeover, a deletion), disable one failing for days, and record each
//! delivery's outcome.

use super::*;

/// Pauses every enabled subscription of `user` with `reason` (they keep their settings; the
/// driver resumes each, which asks its receiver again); answers how many it paused.
pub async fn pause_all(ports: &Ports, user: &UserId, reason: &str) -> Result<usize, StoreError> {
    let now = rfc3339(ports.clock.now());
    let mut paused = 0;
    for stored in stored_all(ports, user).await? {
        if !stored.shown.enabled {
            continue;
        }
        let update = Update::set("enabled", false)
            .and_set("disabledReason", reason)
            .and_set("updatedAt", now.as_str());
        match ports
            .items
            .update(
                Table::Activity,
                &key(user, &stored.shown.id),
                update,
                Some(Condition::Exists),
            )
            .await
        {
            Ok(_) => paused += 1,
            // Deleted meanwhile.
            Err(e) if e.is_condition_failed_at(0) => {}
            Err(e) => return Err(e),
        }
    }
    refresh_wants_passed(ports, user).await?;
    Ok(paused)
}

/// Deletes every subscription of `user` (their history and markers go with the account's
/// deletion or their expiry); answers how many it deleted.
pub async fn delete_all(ports: &Ports, user: &UserId) -> Result<usize, StoreError> {
    let mut deleted = 0;
    for stored in stored_all(ports, user).await? {
        ports
            .items
            .delete(Table::Activity, &key(user, &stored.shown.id), None)
            .await?;
        deleted += 1;
    }
    refresh_wants_passed(ports, user).await?;
    Ok(deleted)
}

/// Turns off a subscription whose deliveries have all failed since `since`, and tells the
/// driver (a `webhook.disabled` event, in the same transaction, becomes a feed entry).
pub(crate) async fn disable(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
    since: OffsetDateTime,
    reason: String,
) -> Result<(), StoreError> {
    let Ok(mut stored) = stored_one(ports, user, id).await else {
        return Ok(());
    };
    if !stored.shown.enabled {
        return Ok(());
    }
    let before = stored.shown.updated_at.clone();
    let now = ports.clock.now();
    stored.shown.enabled = false;
    stored.shown.disabled_reason = Some(reason);
    stored.shown.updated_at = rfc3339(now);
    let event = Event::new(
        EventKind::WebhookDisabled(WebhookDisabled {
            subscription_id: id.clone(),
            url: stored.shown.url.clone(),
            failing_since: rfc3339(since),
        }),
        Some(user.clone()),
        now,
    );
    let ops = vec![
        TxOp::Put {
            table: Table::Activity,
            item: stored.to_item(user),
            condition: Some(Condition::eq("updatedAt", before.as_str())),
        },
        event.outbox_op(),
    ];
    match ports.items.transact(ops).await {
        // Changed meanwhile (by the driver, or disabled by another delivery): left as it is.
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
        Err(e) => return Err(e),
    }
    refresh_wants_passed(ports, user).await
}

/// Records the failure state after a delivery: `failing_since` set at the first failure
/// after a success (and kept), cleared by a success. Answers the failing-since time.
pub(crate) async fn record_outcome(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
    succeeded: bool,
    now: OffsetDateTime,
) -> Result<Option<OffsetDateTime>, StoreError> {
    let Ok(mut stored) = stored_one(ports, user, id).await else {
        return Ok(None);
    };
    let since = stored.shown.failing_since.as_deref().and_then(|s| {
        OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
    });
    let wanted = match (succeeded, since) {
        (true, None) => return Ok(None),
        (true, Some(_)) => None,
        (false, Some(since)) => return Ok(Some(since)),
        (false, None) => Some(now),
    };
    let before = stored.shown.updated_at.clone();
    stored.shown.failing_since = wanted.map(rfc3339);
    // `updatedAt` is the driver's change time; the failure state is written under the same
    // condition so a concurrent change by the driver is not overwritten.
    match ports
        .items
        .put(
            Table::Activity,
            stored.to_item(user),
            Some(Condition::eq("updatedAt", before.as_str())),
        )
        .await
    {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(wanted),
        Err(e) => Err(e),
    }
}
