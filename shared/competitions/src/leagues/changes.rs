//! What changes a league: making one, joining it by code, rotating its code, removing a
//! member and handing it on. Each is one transaction conditioned on what it read.

use serde::Serialize;
use serde_json::Value;

use super::*;
use paddock_identity::identity::users::not_deleted_op;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Item, TxOp, Update, decode, item};
use paddock_kernel::retry::retry_on_conflict;

/// Attempts of a change that keeps losing to concurrent ones (each from a fresh read).
pub(crate) const ATTEMPTS: u32 = 5;

pub(crate) fn record_item<T: Serialize>(key: &Key, record: &T) -> Result<Item, StoreError> {
    let value = serde_json::to_value(record)
        .map_err(|e| StoreError::Invalid(format!("unserialisable record: {e}")))?;
    Ok(item(key, value))
}

/// The league `id`, as stored.
pub(crate) async fn load(ports: &Ports, id: &LeagueId) -> Result<LeagueRecord, LeagueError> {
    let found = ports.items.get(TABLE, &meta_key(id)).await?;
    let item = found.ok_or(LeagueError::NotFound)?;
    Ok(decode(item, "league")?)
}

/// A count below `max` (a missing count is 0).
pub(crate) fn below(attr: &str, max: u32) -> Condition {
    Condition::Or(vec![
        Condition::AttrNotExists(attr.into()),
        Condition::Lt(attr.into(), Value::from(max)),
    ])
}

/// The league is still `league.id` owned by `owner` (and exists).
pub(crate) fn owned_by(owner: &UserId) -> Condition {
    Condition::eq(OWNER_ID, owner.as_str())
}

fn member_ops(record: &MemberRecord) -> Result<[TxOp; 2], StoreError> {
    let in_league = member_key(&record.league_id, &record.user_id);
    let in_list = driver_league_key(&record.user_id, &record.league_id);
    Ok([
        TxOp::Put {
            table: TABLE,
            item: record_item(&in_league, record)?,
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: TABLE,
            item: record_item(&in_list, record)?,
            condition: Some(Condition::NotExists),
        },
    ])
}

fn new_member(ports: &Ports, league: &LeagueId, user: &UserId) -> MemberRecord {
    let now = ports.clock.now();
    MemberRecord {
        league_id: league.clone(),
        user_id: user.clone(),
        joined_at: rfc3339(now),
        joined_ms: paddock_kernel::ports::clock::unix_ms(now),
    }
}

/// Makes a league owned by `owner`, with a fresh invite code.
pub async fn create(ports: &Ports, owner: &UserId, labels: Labels) -> Result<League, LeagueError> {
    let id = LeagueId::new();
    let member = new_member(ports, &id, owner);
    let record = LeagueRecord {
        id: id.clone(),
        name: labels.name,
        description: labels.description,
        owner_id: owner.clone(),
        member_count: 1,
        created_at: member.joined_at.clone(),
        invite_code: new_code(),
        events_version: 0,
    };
    let [in_league, in_list] = member_ops(&member)?;
    let ops = vec![
        TxOp::Update {
            table: TABLE,
            key: counts_key(owner),
            update: Update::default().and_add(OWNED, 1).and_add(JOINED, 1),
            condition: Some(Condition::And(vec![
                below(OWNED, MAX_OWNED),
                below(JOINED, MAX_JOINED),
            ])),
        },
        TxOp::Put {
            table: TABLE,
            item: record_item(&meta_key(&id), &record)?,
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: TABLE,
            item: item(
                &invite_key(&record.invite_code),
                serde_json::json!({"leagueId": id}),
            ),
            condition: Some(Condition::NotExists),
        },
        in_league,
        in_list,
        // Nothing is written for an account being deleted (its deletion removes only what
        // exists when it runs).
        not_deleted_op(owner),
    ];
    match ports.items.transact(ops).await {
        Ok(()) => Ok(record.seen_by(owner)),
        Err(e) if e.is_condition_failed_at(0) => Err(over_a_limit(ports, owner).await?),
        Err(e) => Err(e.into()),
    }
}

/// Which of the driver's limits refused a change that would make them own one more league.
async fn over_a_limit(ports: &Ports, user: &UserId) -> Result<LeagueError, LeagueError> {
    let counts = ports.items.get(TABLE, &counts_key(user)).await?;
    let owned = counts
        .as_ref()
        .and_then(|c| c.get(OWNED))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok(if owned >= u64::from(MAX_OWNED) {
        LeagueError::TooManyOwned("you")
    } else {
        LeagueError::TooManyJoined
    })
}

/// The outcome of a join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// The league, as the driver now sees it.
    pub league: League,
    /// False when the driver was already a member (the join changed nothing).
    pub new: bool,
}

/// What a new member's league row (`DRIVER#<user>` / `LEAGUE#<id>`) starts with besides the
/// membership, read before the join is written: the league's live events, which the events
/// keep there (`events::live`). A join is conditioned on the league's `eventsVersion`, which
/// every change of them moves on.
pub trait NewMemberCopies: Sync {
    /// The attributes of league `league`'s new member row at `now_ms`.
    fn copies(
        &self,
        ports: &Ports,
        league: &LeagueId,
        now_ms: i64,
    ) -> impl std::future::Future<Output = Result<Vec<(String, Value)>, StoreError>> + Send;
}

/// Adds `user` to the league whose live invite code is `code`, their row starting with
/// `copies`. A driver already in it is answered the league again, unchanged; the last seat
/// goes to one of two drivers racing for it (the member count is a condition of the write).
/// (The API joins through `events::join`, which gives the league's live events.)
pub async fn join_with(
    ports: &Ports,
    user: &UserId,
    code: &str,
    copies: &impl NewMemberCopies,
) -> Result<Joined, LeagueError> {
    retry_on_conflict(ATTEMPTS, lost_race, || join_once(ports, user, code, copies)).await
}

/// A change that lost to a concurrent one and may be made again from a fresh read.
pub(crate) fn lost_race(e: &LeagueError) -> bool {
    matches!(e, LeagueError::Store(StoreError::Conflict))
}

async fn join_once(
    ports: &Ports,
    user: &UserId,
    code: &str,
    copies: &impl NewMemberCopies,
) -> Result<Joined, LeagueError> {
    let invite = ports.items.get(TABLE, &invite_key(code)).await?;
    let id: LeagueId = invite
        .and_then(|i| i.get("leagueId").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or(LeagueError::UnknownCode)?;
    let now_ms = new_member(ports, &id, user).joined_ms;
    let keys = vec![(TABLE, meta_key(&id)), (TABLE, member_key(&id, user))];
    // The league (and its events' version) first, the copies after: copies read before a
    // change of the events that the version read missed would be written under a version
    // that no longer holds, and the join refused and made again.
    let found = ports.items.get_many(keys).await?;
    let live = copies.copies(ports, &id, now_ms).await?;
    let (league, mine) = {
        let mut found = found.into_iter();
        (found.next().flatten(), found.next().flatten())
    };
    let league: LeagueRecord = decode(league.ok_or(LeagueError::UnknownCode)?, "league")?;
    if league.invite_code != code {
        return Err(LeagueError::UnknownCode);
    }
    if mine.is_some() {
        let league = league.seen_by(user);
        return Ok(Joined { league, new: false });
    }
    let member = new_member(ports, &id, user);
    let [in_league, mut in_list] = member_ops(&member)?;
    // The league's live events, on the row the driver's submissions read them from; written
    // only if no event was added or closed since they were read.
    if let TxOp::Put { item, .. } = &mut in_list {
        item.extend(live);
    }
    let version = match league.events_version {
        0 => Condition::Or(vec![
            Condition::AttrNotExists(EVENTS_VERSION.into()),
            Condition::eq(EVENTS_VERSION, 0),
        ]),
        v => Condition::eq(EVENTS_VERSION, v),
    };
    let ops = vec![
        TxOp::Update {
            table: TABLE,
            key: meta_key(&id),
            update: Update::default().and_add(MEMBER_COUNT, 1),
            condition: Some(Condition::And(vec![
                Condition::eq(INVITE_CODE, code),
                Condition::Lt(MEMBER_COUNT.into(), Value::from(MAX_MEMBERS)),
                version,
            ])),
        },
        in_league,
        in_list,
        TxOp::Update {
            table: TABLE,
            key: counts_key(user),
            update: Update::default().and_add(JOINED, 1),
            condition: Some(below(JOINED, MAX_JOINED)),
        },
        not_deleted_op(user),
    ];
    match ports.items.transact(ops).await {
        Ok(()) => {
            let mut league = league.seen_by(user);
            league.member_count += 1;
            Ok(Joined { league, new: true })
        }
        // The code was rotated, the league closed or filled since it was read: the state
        // says which (read afresh).
        Err(e) if e.is_condition_failed_at(0) => {
            let now = load(ports, &id).await;
            match now {
                Ok(l) if l.invite_code == code && l.member_count >= MAX_MEMBERS => {
                    Err(LeagueError::Full)
                }
                Ok(l) if l.invite_code == code => Err(StoreError::Conflict.into()),
                Ok(_) | Err(LeagueError::NotFound) => Err(LeagueError::UnknownCode),
                Err(e) => Err(e),
            }
        }
        // The same driver joined meanwhile (a repeat of this request): that join stands.
        Err(e) if e.is_condition_failed_at(1) || e.is_condition_failed_at(2) => {
            Err(StoreError::Conflict.into())
        }
        Err(e) if e.is_condition_failed_at(3) => Err(LeagueError::TooManyJoined),
        Err(e) => Err(e.into()),
    }
}

/// Gives the league a new invite code; the old one names nothing from then on. Owner only.
pub async fn rotate_code(
    ports: &Ports,
    owner: &UserId,
    id: &LeagueId,
) -> Result<League, LeagueError> {
    retry_on_conflict(ATTEMPTS, lost_race, || async {
        let mut league = visible(ports, owner, id).await?;
        if league.owner_id != *owner {
            return Err(LeagueError::NotOwner("rotate its invite code"));
        }
        let (old, new) = (league.invite_code.clone(), new_code());
        let ops = vec![
            TxOp::Update {
                table: TABLE,
                key: meta_key(id),
                update: Update::set(INVITE_CODE, new.as_str()),
                condition: Some(Condition::And(vec![
                    owned_by(owner),
                    Condition::eq(INVITE_CODE, old.as_str()),
                ])),
            },
            TxOp::Delete {
                table: TABLE,
                key: invite_key(&old),
                condition: None,
            },
            TxOp::Put {
                table: TABLE,
                item: item(&invite_key(&new), serde_json::json!({"leagueId": id})),
                condition: Some(Condition::NotExists),
            },
        ];
        ports.items.transact(ops).await.map_err(as_race)?;
        league.invite_code = new;
        Ok(league.seen_by(owner))
    })
    .await
}

/// A failed condition on what was just read means another change came first: read again.
pub(crate) fn as_race(e: StoreError) -> LeagueError {
    match e {
        StoreError::ConditionFailed { .. } => StoreError::Conflict.into(),
        other => other.into(),
    }
}

/// The league `id` if `viewer` is in it; [`LeagueError::NotFound`] otherwise, so a league is
/// not seen to exist by anyone outside it.
pub(crate) async fn visible(
    ports: &Ports,
    viewer: &UserId,
    id: &LeagueId,
) -> Result<LeagueRecord, LeagueError> {
    let keys = vec![(TABLE, meta_key(id)), (TABLE, member_key(id, viewer))];
    let mut found = ports.items.get_many(keys).await?.into_iter();
    let (league, mine) = (found.next().flatten(), found.next().flatten());
    match (league, mine) {
        (Some(league), Some(_)) => Ok(decode(league, "league")?),
        _ => Err(LeagueError::NotFound),
    }
}

/// The writes that take `member` out of `league` (the member count and their own count with
/// them); the member must still be in it.
pub(crate) fn departure_ops(league: &LeagueId, member: &UserId, owned: bool) -> Vec<TxOp> {
    let mut counts = Update::default().and_add(JOINED, -1);
    if owned {
        counts = counts.and_add(OWNED, -1);
    }
    vec![
        TxOp::Delete {
            table: TABLE,
            key: member_key(league, member),
            condition: Some(Condition::Exists),
        },
        TxOp::Delete {
            table: TABLE,
            key: driver_league_key(member, league),
            condition: None,
        },
        TxOp::Update {
            table: TABLE,
            key: counts_key(member),
            update: counts,
            condition: None,
        },
    ]
}

/// The owner takes `member` out of the league.
pub async fn remove_member(
    ports: &Ports,
    owner: &UserId,
    id: &LeagueId,
    member: &UserId,
) -> Result<(), LeagueError> {
    retry_on_conflict(ATTEMPTS, lost_race, || async {
        let league = visible(ports, owner, id).await?;
        if league.owner_id != *owner {
            return Err(LeagueError::NotOwner("remove members"));
        }
        if member == owner {
            return Err(LeagueError::OwnerThemselves(
                "the owner leaves the league instead of removing themselves",
            ));
        }
        let mut ops = vec![TxOp::Update {
            table: TABLE,
            key: meta_key(id),
            update: Update::default().and_add(MEMBER_COUNT, -1),
            condition: Some(owned_by(owner)),
        }];
        ops.extend(departure_ops(id, member, false));
        match ports.items.transact(ops).await {
            Err(e) if e.is_condition_failed_at(1) => Err(LeagueError::NotAMember),
            other => other.map_err(as_race),
        }
    })
    .await
}

/// The owner hands the league to `heir`, one of its members.
pub async fn transfer(
    ports: &Ports,
    owner: &UserId,
    id: &LeagueId,
    heir: &UserId,
) -> Result<League, LeagueError> {
    retry_on_conflict(ATTEMPTS, lost_race, || async {
        let mut league = visible(ports, owner, id).await?;
        if league.owner_id != *owner {
            return Err(LeagueError::NotOwner("hand it on"));
        }
        if heir == owner {
            return Err(LeagueError::OwnerThemselves("is the owner already"));
        }
        let ops = vec![
            TxOp::Update {
                table: TABLE,
                key: meta_key(id),
                update: Update::set(OWNER_ID, heir.as_str()),
                condition: Some(owned_by(owner)),
            },
            TxOp::Check {
                table: TABLE,
                key: member_key(id, heir),
                condition: Condition::Exists,
            },
            TxOp::Update {
                table: TABLE,
                key: counts_key(heir),
                update: Update::default().and_add(OWNED, 1),
                condition: Some(below(OWNED, MAX_OWNED)),
            },
            TxOp::Update {
                table: TABLE,
                key: counts_key(owner),
                update: Update::default().and_add(OWNED, -1),
                condition: None,
            },
        ];
        match ports.items.transact(ops).await {
            Err(e) if e.is_condition_failed_at(1) => Err(LeagueError::NotAMember),
            Err(e) if e.is_condition_failed_at(2) => Err(LeagueError::TooManyOwned("that member")),
            other => other.map_err(as_race),
        }?;
        league.owner_id = heir.clone();
        Ok(league.seen_by(owner))
    })
    .await
}
