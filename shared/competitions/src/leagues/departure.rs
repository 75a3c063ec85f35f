//! Leaving: a member leaves; an owner who leaves hands the league to its longest-standing
//! member, or closes it when nobody else is in it. Account deletion is every league left.

use super::changes::{ATTEMPTS, as_race, departure_ops, lost_race, owned_by, visible};
use super::*;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Query, TxOp, Update, decode};
use paddock_kernel::retry::retry_on_conflict;
use serde_json::Value;

/// What became of a league its driver left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// The driver was a member; the league goes on.
    Member,
    /// The driver owned it; it now belongs to this member.
    HandedTo(UserId),
    /// The driver owned it alone; it is gone, with its invite code.
    Closed,
}

/// `user` leaves league `id` (the ownership rule applies when they own it).
pub async fn leave(ports: &Ports, user: &UserId, id: &LeagueId) -> Result<Left, LeagueError> {
    retry_on_conflict(ATTEMPTS, lost_race, || leave_once(ports, user, id)).await
}

async fn leave_once(ports: &Ports, user: &UserId, id: &LeagueId) -> Result<Left, LeagueError> {
    let league = visible(ports, user, id).await?;
    let owner = league.owner_id == *user;
    let mut ops = departure_ops(id, user, owner);
    let meta = meta_key(id);
    let left = if !owner {
        ops.push(TxOp::Update {
            table: TABLE,
            key: meta,
            update: Update::default().and_add(MEMBER_COUNT, -1),
            condition: Some(Condition::Ne(OWNER_ID.into(), Value::from(user.as_str()))),
        });
        Left::Member
    } else if let Some(heir) = longest_standing(ports, id, user).await? {
        ops.push(TxOp::Update {
            table: TABLE,
            key: meta,
            update: Update::set(OWNER_ID, heir.as_str()).and_add(MEMBER_COUNT, -1),
            condition: Some(owned_by(user)),
        });
        ops.push(TxOp::Check {
            table: TABLE,
            key: member_key(id, &heir),
            condition: Condition::Exists,
        });
        // The heir is named by the rule, so the league passes to them even past the owned
        // limit (the limit holds for what a driver chooses: making or taking a league).
        ops.push(TxOp::Update {
            table: TABLE,
            key: counts_key(&heir),
            update: Update::default().and_add(OWNED, 1),
            condition: None,
        });
        Left::HandedTo(heir)
    } else {
        ops.push(TxOp::Delete {
            table: TABLE,
            key: meta,
            condition: Some(Condition::And(vec![
                owned_by(user),
                Condition::eq(MEMBER_COUNT, 1),
            ])),
        });
        ops.push(TxOp::Delete {
            table: TABLE,
            key: invite_key(&league.invite_code),
            condition: None,
        });
        Left::Closed
    };
    ports.items.transact(ops).await.map_err(as_race)?;
    Ok(left)
}

/// The member of league `id` other than `owner` who joined first (the smaller id on a tie).
/// Reads the league's members: a page of at most [`MAX_MEMBERS`].
async fn longest_standing(
    ports: &Ports,
    id: &LeagueId,
    owner: &UserId,
) -> Result<Option<UserId>, LeagueError> {
    let mut heir: Option<MemberRecord> = None;
    for member in member_records(ports, id).await? {
        let senior = heir
            .as_ref()
            .is_none_or(|h| (member.joined_ms, &member.user_id) < (h.joined_ms, &h.user_id));
        if member.user_id != *owner && senior {
            heir = Some(member);
        }
    }
    Ok(heir.map(|h| h.user_id))
}

/// Takes `user` out of every league they are in, as if they left each (account deletion):
/// their list and counts go too. Answers how many leagues were left and items removed
/// beside them, 0 once nothing of the driver's is left. Reads their list: at most
/// [`MAX_JOINED`] leagues.
pub async fn leave_all(ports: &Ports, user: &UserId) -> Result<u64, LeagueError> {
    let ids = league_ids(ports, user).await?;
    let mut changed = ids.len() as u64;
    for id in ids {
        match leave(ports, user, &id).await {
            // Gone already, or left by a deletion cut short: only the list entry remains.
            Ok(_) | Err(LeagueError::NotFound) => {}
            Err(e) => return Err(e),
        }
        let entry = driver_league_key(user, &id);
        ports.items.delete(TABLE, &entry, None).await?;
    }
    if ports
        .items
        .delete(TABLE, &counts_key(user), None)
        .await?
        .is_some()
    {
        changed += 1;
    }
    Ok(changed)
}

/// The ids of the leagues in `user`'s list.
pub(crate) async fn league_ids(ports: &Ports, user: &UserId) -> Result<Vec<LeagueId>, LeagueError> {
    let query = Query::partition(TABLE, driver_partition(user))
        .begins_with(DRIVER_LEAGUE_PREFIX)
        .limit(MAX_JOINED as usize + MAX_OWNED as usize);
    let page = ports.items.query(query).await?;
    page.items
        .into_iter()
        .map(|item| Ok(decode::<MemberRecord>(item, "driver league")?.league_id))
        .collect()
}
