//! Reads of many items in one call, on SQLite and DynamoDB Local: `get_many` (BatchGetItem)
//! and `transact_get` (TransactGetItems, one snapshot).

use paddock_core::ports::Clock;
use paddock_core::ports::items::{Key, MAX_SNAPSHOT_ITEMS, StoreError, TxOp, Update, item};
use paddock_core::tables::Table;
use paddock_tests::{Backend, TestPorts, ports};
use serde_json::json;

async fn many_items_are_answered_in_the_order_asked(t: TestPorts) {
    let s = &t.ports.items;
    let now = t.clock.unix();
    // More keys than one BatchGetItem takes, over two tables, with gaps and repeats.
    let mut written = Vec::new();
    for i in 0..150 {
        let table = if i % 2 == 0 {
            Table::Users
        } else {
            Table::Tracks
        };
        let k = Key::new(format!("P#{}", i % 7), format!("S#{i:03}"));
        if i % 5 != 0 {
            s.put(table, item(&k, json!({"i": i})), None).await.unwrap();
        }
        written.push((table, k, i % 5 != 0));
    }
    let expired = Key::new("P#gone", "S");
    s.put(Table::Users, item(&expired, json!({"ttl": now - 1})), None)
        .await
        .unwrap();
    let mut asked: Vec<(Table, Key)> = written.iter().map(|(t, k, _)| (*t, k.clone())).collect();
    asked.push((Table::Users, expired.clone()));
    asked.push(asked[1].clone());
    // Same key in the other table: another item.
    asked.push((Table::Sessions, written[1].1.clone()));
    let found = s.get_many(asked.clone()).await.unwrap();
    assert_eq!(found.len(), asked.len());
    for (i, (_, _, present)) in written.iter().enumerate() {
        match &found[i] {
            Some(got) => {
                assert!(present, "{i} was never written");
                assert_eq!(got["i"], i, "answered out of order");
            }
            None => assert!(!present, "{i} is missing"),
        }
    }
    assert!(found[150].is_none(), "an expired item is absent");
    assert_eq!(found[151], found[1], "a key asked twice is answered twice");
    assert!(found[152].is_none());
    assert!(s.get_many(Vec::new()).await.unwrap().is_empty());
}

async fn a_snapshot_read_answers_in_order_and_refuses_bad_shapes(t: TestPorts) {
    let s = &t.ports.items;
    let a = Key::new("COUNTS", "A");
    let b = Key::new("COUNTS", "B");
    s.put(Table::Leaderboards, item(&a, json!({"n": 1})), None)
        .await
        .unwrap();
    s.put(Table::Users, item(&b, json!({"n": 2})), None)
        .await
        .unwrap();
    let found = s
        .transact_get(vec![
            (Table::Users, b.clone()),
            (Table::Leaderboards, Key::new("COUNTS", "none")),
            (Table::Leaderboards, a.clone()),
        ])
        .await
        .unwrap();
    assert_eq!(found[0].as_ref().unwrap()["n"], 2);
    assert!(found[1].is_none());
    assert_eq!(found[2].as_ref().unwrap()["n"], 1);
    let too_many: Vec<_> = (0..=MAX_SNAPSHOT_ITEMS)
        .map(|i| (Table::Leaderboards, Key::new("COUNTS", format!("{i}"))))
        .collect();
    for bad in [
        Vec::new(),
        too_many,
        vec![(Table::Users, b.clone()), (Table::Users, b.clone())],
    ] {
        let refused = s.transact_get(bad).await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{refused:?}"
        );
    }
}

async fn a_snapshot_never_sees_half_a_transaction(t: TestPorts) {
    let s = t.ports.items.clone();
    // Two counts that transactions move together: a snapshot always sees them equal.
    let keys: Vec<(Table, Key)> = ["A", "B", "C"]
        .iter()
        .map(|sk| (Table::Leaderboards, Key::new("PAIR", *sk)))
        .collect();
    let writer = {
        let (s, keys) = (s.clone(), keys.clone());
        tokio::spawn(async move {
            for _ in 0..40 {
                let ops = keys
                    .iter()
                    .map(|(table, key)| TxOp::Update {
                        table: *table,
                        key: key.clone(),
                        update: Update::default().and_add("n", 1),
                        condition: None,
                    })
                    .collect();
                match s.transact(ops).await {
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        })
    };
    let mut seen = 0;
    while !writer.is_finished() || seen == 0 {
        let found = s.transact_get(keys.clone()).await.unwrap();
        let counts: Vec<i64> = found
            .iter()
            .map(|i| i.as_ref().and_then(|i| i["n"].as_i64()).unwrap_or(0))
            .collect();
        assert!(
            counts.windows(2).all(|w| w[0] == w[1]),
            "half a transaction seen: {counts:?}"
        );
        seen += 1;
    }
    writer.await.unwrap();
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
    many_items_are_answered_in_the_order_asked,
    a_snapshot_read_answers_in_order_and_refuses_bad_shapes,
    a_snapshot_never_sees_half_a_transaction,
);
