//! A subscription's fields as a driver sends them, parsed: event types, description, URL
//! (resolved and checked against the address rules) and grace period.

use super::*;

/// The event types `raw` names, checked, deduplicated, in documented order.
pub fn parse_event_types(raw: &[String]) -> Result<Vec<String>, SubscriptionError> {
    if raw.is_empty() {
        return Err(SubscriptionError::NoEventTypes);
    }
    if let Some(unknown) = raw.iter().find(|t| !EVENT_TYPES.contains(&t.as_str())) {
        return Err(SubscriptionError::UnknownEventType(unknown.clone()));
    }
    Ok(EVENT_TYPES
        .iter()
        .filter(|t| raw.iter().any(|r| r == *t))
        .map(|t| (*t).to_owned())
        .collect())
}

/// A description, checked and trimmed.
pub fn parse_description(raw: &str) -> Result<String, SubscriptionError> {
    let bad = |c: char| c.is_control() || hidden_characters::is_invisible_or_bidi(c);
    if raw.chars().count() > MAX_DESCRIPTION_CHARS || raw.chars().any(bad) {
        return Err(SubscriptionError::BadDescription);
    }
    Ok(raw.trim().to_owned())
}

/// Checks a URL's own rules and then every address its host resolves to.
pub async fn check_url(raw: &str, policy: Policy) -> Result<WebhookUrl, SubscriptionError> {
    let url = WebhookUrl::parse(raw, policy)?;
    address::resolve_checked(&url, policy).await?;
    Ok(url)
}

/// Parses a grace period in hours (default [`DEFAULT_GRACE_HOURS`]).
pub fn parse_grace_hours(raw: Option<&Value>) -> Result<i64, SubscriptionError> {
    match raw {
        None | Some(Value::Null) => Ok(DEFAULT_GRACE_HOURS),
        Some(v) => v
            .as_i64()
            .filter(|h| (0..=MAX_GRACE_HOURS).contains(h))
            .ok_or(SubscriptionError::BadGrace),
    }
}
