//! Making an event: the host's right to, the track and car, the number of events not yet
//! finished, then one transaction writing the event, its listings and its copies where the
//! drivers' submissions read them ([`super::live`]).

use serde_json::json;

use super::*;
use crate::leagues::{self, LeagueError, owned_by};
use paddock_boards::leaderboards::vehicles;
use paddock_driving::tracks;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Query, TxOp, item};
use paddock_kernel::retry::retry_on_conflict;

/// Makes the event `fields` describe ([`EventPlan::check`]ed at the clock's time), held by
/// `host`, as `creator` asks (for a league, its owner; the caller has checked that `creator`
/// may hold public events). A series starts with its first round; the maintenance tick makes
/// the next ones.
pub async fn create(
    ports: &Ports,
    creator: &UserId,
    host: Host,
    fields: PlanFields,
) -> Result<Event, EventError> {
    let plan = EventPlan::check(fields, ms_of(ports.clock.now()))?;
    // A member joining or leaving between the read of the members and the write: read again.
    let lost_race = |e: &EventError| matches!(e, EventError::Store(StoreError::Conflict));
    retry_on_conflict(leagues::ATTEMPTS, lost_race, || {
        create_once(ports, creator, &host, &plan)
    })
    .await
}

async fn create_once(
    ports: &Ports,
    creator: &UserId,
    host: &Host,
    plan: &EventPlan,
) -> Result<Event, EventError> {
    let now = ports.clock.now();
    let now_ms = ms_of(now);
    let plan = plan.clone();
    let listing = match host {
        Host::League(league) => league_partition(league),
        Host::Public => PUBLIC_PARTITION.to_owned(),
    };
    let (league, track, car, live, members) = futures::try_join!(
        async {
            match &host {
                Host::League(id) => Ok(Some(leagues::visible(ports, creator, id).await?)),
                Host::Public => Ok(None),
            }
        },
        async { Ok::<_, EventError>(tracks::get(ports, &plan.track_id).await?) },
        async {
            match &plan.car {
                Some(car) => Ok(Some(
                    vehicles::read_count(ports, &plan.track_id, car).await?,
                )),
                None => Ok::<_, EventError>(None),
            }
        },
        async {
            let from = format!("{LISTED_PREFIX}{now_ms:013}");
            let query = Query::partition(TABLE, listing.clone())
                .between(from, format!("{LISTED_PREFIX}~"))
                .limit(MAX_LIVE);
            Ok::<_, EventError>(ports.items.query(query).await?.items.len())
        },
        async {
            match host {
                Host::League(id) => Ok::<_, EventError>(super::live::members(ports, id).await?),
                Host::Public => Ok(Vec::new()),
            }
        }
    )?;
    if let Some(league) = &league
        && league.owner_id != *creator
    {
        return Err(LeagueError::NotOwner("make its events").into());
    }
    let track = track.ok_or_else(|| FieldProblems::one("trackId", "no track has this id"))?;
    let car = match car {
        Some(count) if count.drivers == 0 => {
            let rule = "nobody has raced this car on this track yet";
            return Err(FieldProblems::one("car", rule).into());
        }
        Some(count) => Some(count.vehicle_name),
        None => None,
    };
    if live >= MAX_LIVE {
        return Err(EventError::TooManyLive);
    }
    let id = EventId::new();
    let track_name = match track.layout.as_str() {
        "" => track.name.clone(),
        layout => format!("{} ({layout})", track.name),
    };
    let record = EventRecord {
        id: id.clone(),
        league_id: match host {
            Host::League(league) => Some(league.clone()),
            Host::Public => None,
        },
        name: plan.name,
        track_id: track.id.clone(),
        track_name,
        car,
        opens_ms: plan.opens_ms,
        closes_ms: plan.closes_ms,
        min_quality: plan.min_quality,
        series: plan.recurrence.map(|(every_days, rounds)| Series {
            series_id: id.clone(),
            round: 1,
            rounds,
            every_days,
        }),
        created_at: rfc3339(now),
        opened: false,
        closed: false,
    };
    let mut ops = placement_ops(&record)?;
    let league_at = ops.len();
    // Still this creator's league, with the members read, when the event is written.
    let owned = matches!(host, Host::League(_)).then(|| owned_by(creator));
    ops.extend(super::live::add_ops(&record, &members, owned)?);
    match ports.items.transact(ops).await {
        Ok(()) => Ok(record.shown(now_ms)),
        Err(StoreError::ConditionFailed { index }) if index == league_at => {
            let Host::League(id) = host else {
                return Err(StoreError::Conflict.into());
            };
            match leagues::load(ports, id).await {
                Ok(league) if league.owner_id == *creator => Err(StoreError::Conflict.into()),
                Ok(_) => Err(LeagueError::NotOwner("make its events").into()),
                Err(e) => Err(e.into()),
            }
        }
        // A member left since the members were read.
        Err(StoreError::ConditionFailed { index }) if index > league_at => {
            Err(StoreError::Conflict.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The writes that place `record`: the event, its row in its host's listing and the tick's
/// rows (its opening and closing, and its round of a series).
pub(crate) fn placement_ops(record: &EventRecord) -> Result<Vec<TxOp>, StoreError> {
    let listing = match &record.league_id {
        Some(league) => league_partition(league),
        None => PUBLIC_PARTITION.to_owned(),
    };
    let sk = listed_sk(record.closes_ms, &record.id);
    let copy = leagues::record_item(&Key::new(listing, sk), record)?;
    let mut ops = vec![
        TxOp::Put {
            table: TABLE,
            item: leagues::record_item(&meta_key(&record.id), record)?,
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: TABLE,
            item: copy,
            condition: None,
        },
        TxOp::Put {
            table: TABLE,
            item: item(
                &Due::Opening.key(record.opens_ms, &record.id),
                json!({"eventId": record.id}),
            ),
            condition: None,
        },
        TxOp::Put {
            table: TABLE,
            item: item(
                &Due::Closing.key(record.closes_ms, &record.id),
                json!({"eventId": record.id}),
            ),
            condition: None,
        },
    ];
    if let Some(series) = &record.series {
        let key = round_key(&series.series_id, series.round);
        ops.push(TxOp::Put {
            table: TABLE,
            item: item(&key, json!({"eventId": record.id})),
            condition: None,
        });
    }
    Ok(ops)
}
