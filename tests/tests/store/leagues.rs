//! Leagues' invariants held by the store's conditions and transactions, on SQLite and on
//! DynamoDB Local: the last seat goes to one of two drivers racing for it, a join racing
//! itself counts once, the limits per driver hold, the ownership rule on leaving, and an
//! account's departure from every league.

use time::Duration;

use paddock_core::competition_events::join;
use paddock_core::ids::UserId;
use paddock_core::leagues::{
    self, Labels, LeagueError, Left, MAX_JOINED, MAX_MEMBERS, MAX_OWNED, Role,
};
use paddock_core::ports::Ports;
use paddock_tests::{Backend, TestPorts, ports};

fn labels(name: &str) -> Labels {
    Labels::parse(Some(name.into()), None).unwrap()
}

/// A league of `owner`; answers its id and invite code.
async fn league_of(p: &Ports, owner: &UserId) -> (paddock_core::ids::LeagueId, String) {
    let league = leagues::create(p, owner, labels("Sunday Cup"))
        .await
        .unwrap();
    (
        league.id,
        league.invite_code.expect("the owner sees the code"),
    )
}

async fn the_last_seat_goes_to_one_of_two_racers(t: TestPorts) {
    let p = &t.ports;
    let owner = UserId::new();
    let (id, code) = league_of(p, &owner).await;
    for _ in 1..MAX_MEMBERS - 1 {
        assert!(join(p, &UserId::new(), &code).await.unwrap().new);
    }
    let (a, b) = (UserId::new(), UserId::new());
    let (ra, rb) = tokio::join!(join(p, &a, &code), join(p, &b, &code));
    let admitted = [&ra, &rb].iter().filter(|r| r.is_ok()).count();
    assert_eq!(admitted, 1, "{ra:?} {rb:?}");
    let refused = if ra.is_ok() { rb } else { ra };
    assert!(matches!(refused, Err(LeagueError::Full)), "{refused:?}");
    let league = leagues::get(p, &owner, &id).await.unwrap();
    assert_eq!(league.member_count, MAX_MEMBERS);
    let members = leagues::members(p, &owner, &id).await.unwrap();
    assert_eq!(members.len(), MAX_MEMBERS as usize);
    let late = join(p, &UserId::new(), &code).await;
    assert!(matches!(late, Err(LeagueError::Full)), "{late:?}");
}

async fn a_join_racing_itself_counts_once(t: TestPorts) {
    let p = &t.ports;
    let owner = UserId::new();
    let (id, code) = league_of(p, &owner).await;
    let driver = UserId::new();
    let joins = futures::future::join_all((0..4).map(|_| join(p, &driver, &code))).await;
    let new = joins.iter().filter(|j| j.as_ref().unwrap().new).count();
    assert_eq!(new, 1, "{joins:?}");
    assert_eq!(leagues::get(p, &owner, &id).await.unwrap().member_count, 2);
    assert_eq!(leagues::list(p, &driver).await.unwrap().len(), 1);
    // Its count of leagues rose once: it may still join MAX_JOINED - 1 more.
    for _ in 1..MAX_JOINED {
        let (_, code) = league_of(p, &UserId::new()).await;
        join(p, &driver, &code).await.unwrap();
    }
    let (_, code) = league_of(p, &UserId::new()).await;
    let over = join(p, &driver, &code).await;
    assert!(matches!(over, Err(LeagueError::TooManyJoined)), "{over:?}");
}

async fn a_driver_owns_and_belongs_to_a_bounded_number(t: TestPorts) {
    let p = &t.ports;
    let owner = UserId::new();
    for _ in 0..MAX_OWNED {
        league_of(p, &owner).await;
    }
    let sixth = leagues::create(p, &owner, labels("One too many")).await;
    assert!(
        matches!(sixth, Err(LeagueError::TooManyOwned(_))),
        "{sixth:?}"
    );
    assert_eq!(
        leagues::list(p, &owner).await.unwrap().len(),
        MAX_OWNED as usize
    );
    // Handing one on makes room; the heir may not take more than the limit either.
    let heir = UserId::new();
    let first = leagues::list(p, &owner).await.unwrap()[0].clone();
    join(p, &heir, first.invite_code.as_deref().unwrap())
        .await
        .unwrap();
    let handed = leagues::transfer(p, &owner, &first.id, &heir)
        .await
        .unwrap();
    assert_eq!((handed.role, &handed.owner_id), (Role::Member, &heir));
    assert!(
        handed.invite_code.is_none(),
        "a member does not see the code"
    );
    leagues::create(p, &owner, labels("Room again"))
        .await
        .unwrap();
}

async fn an_owner_leaving_hands_on_to_the_longest_standing_member(t: TestPorts) {
    let p = &t.ports;
    let owner = UserId::new();
    let (id, code) = league_of(p, &owner).await;
    let drivers: Vec<UserId> = (0..3).map(|_| UserId::new()).collect();
    for d in &drivers {
        t.clock.advance(Duration::seconds(60));
        join(p, d, &code).await.unwrap();
    }
    assert_eq!(
        leagues::leave(p, &drivers[0], &id).await.unwrap(),
        Left::Member
    );
    let left = leagues::leave(p, &owner, &id).await.unwrap();
    assert_eq!(left, Left::HandedTo(drivers[1].clone()));
    let seen = leagues::get(p, &drivers[1], &id).await.unwrap();
    assert_eq!((seen.role, seen.member_count), (Role::Owner, 2));
    assert!(matches!(
        leagues::get(p, &owner, &id).await,
        Err(LeagueError::NotFound)
    ));
    // The code is unchanged by the hand-over; the new owner leaving leaves the last one.
    assert_eq!(seen.invite_code.as_deref(), Some(code.as_str()));
    let left = leagues::leave(p, &drivers[1], &id).await.unwrap();
    assert_eq!(left, Left::HandedTo(drivers[2].clone()));
    assert_eq!(
        leagues::leave(p, &drivers[2], &id).await.unwrap(),
        Left::Closed
    );
    let gone = join(p, &UserId::new(), &code).await;
    assert!(matches!(gone, Err(LeagueError::UnknownCode)), "{gone:?}");
    for d in &drivers {
        assert!(leagues::list(p, d).await.unwrap().is_empty());
    }
}

async fn an_account_leaves_every_league(t: TestPorts) {
    let p = &t.ports;
    let (leaving, other) = (UserId::new(), UserId::new());
    let (alone, _) = league_of(p, &leaving).await;
    let (shared, code) = league_of(p, &leaving).await;
    join(p, &other, &code).await.unwrap();
    let (theirs, their_code) = league_of(p, &other).await;
    join(p, &leaving, &their_code).await.unwrap();

    leagues::leave_all(p, &leaving).await.unwrap();
    assert!(leagues::list(p, &leaving).await.unwrap().is_empty());
    assert!(matches!(
        leagues::get(p, &other, &alone).await,
        Err(LeagueError::NotFound)
    ));
    let inherited = leagues::get(p, &other, &shared).await.unwrap();
    assert_eq!((inherited.role, inherited.member_count), (Role::Owner, 1));
    assert_eq!(
        leagues::get(p, &other, &theirs).await.unwrap().member_count,
        1
    );
    // Nothing of the driver is left in the table.
    let all = paddock_tests::every_item(&t.settings).await;
    let traces: Vec<_> = all
        .iter()
        .filter(|(_, item)| {
            serde_json::to_string(item)
                .unwrap()
                .contains(leaving.as_str())
        })
        .collect();
    assert!(traces.is_empty(), "{traces:?}");
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
               async fn $name() { super::$name(super::ports(super::Backend::Embedded).await).await } )*
        }
        mod dynamodb_local {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
               async fn $name() { super::$name(super::ports(super::Backend::Aws).await).await } )*
        }
    };
}

conformance!(
    the_last_seat_goes_to_one_of_two_racers,
    a_join_racing_itself_counts_once,
    a_driver_owns_and_belongs_to_a_bounded_number,
    an_owner_leaving_hands_on_to_the_longest_standing_member,
    an_account_leaves_every_league,
);
