//! Reading leagues: one league, a driver's leagues and a league's members, each for members
//! only (anyone else is told there is no such league).

use super::changes::visible;
use super::departure::league_ids;
use super::*;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::decode;

/// League `id`, as `viewer` (a member) sees it.
pub async fn get(ports: &Ports, viewer: &UserId, id: &LeagueId) -> Result<League, LeagueError> {
    Ok(visible(ports, viewer, id).await?.seen_by(viewer))
}

/// The leagues `user` belongs to, oldest first. Reads their list (at most [`MAX_JOINED`]
/// entries) and the leagues in one batch.
pub async fn list(ports: &Ports, user: &UserId) -> Result<Vec<League>, LeagueError> {
    let ids = league_ids(ports, user).await?;
    let keys = ids.iter().map(|id| (TABLE, meta_key(id))).collect();
    let found = ports.items.get_many(keys).await?;
    let mut leagues = found
        .into_iter()
        .flatten()
        .map(|item| Ok(decode::<LeagueRecord>(item, "league")?.seen_by(user)))
        .collect::<Result<Vec<_>, LeagueError>>()?;
    leagues.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(leagues)
}

/// The members of league `id` in the order they joined, for `viewer`, a member. One page of
/// at most [`MAX_MEMBERS`].
pub async fn members(
    ports: &Ports,
    viewer: &UserId,
    id: &LeagueId,
) -> Result<Vec<Member>, LeagueError> {
    let league = visible(ports, viewer, id).await?;
    let mut members = member_records(ports, id).await?;
    members.sort_by(|a, b| (a.joined_ms, &a.user_id).cmp(&(b.joined_ms, &b.user_id)));
    Ok(members
        .into_iter()
        .map(|m| Member {
            role: if m.user_id == league.owner_id {
                Role::Owner
            } else {
                Role::Member
            },
            user_id: m.user_id,
            joined_at: m.joined_at,
        })
        .collect())
}
