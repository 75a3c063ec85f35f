//! Conformance suite of the item store port, run against SQLite and DynamoDB Local.

use paddock_core::ports::Clock;
use paddock_core::ports::items::{Condition, Key, Query, StoreError, TxOp, Update, item};
use paddock_core::tables::Table;
use paddock_tests::{Backend, TestPorts, ports};
use serde_json::json;
use std::collections::HashSet;
use time::Duration;

fn key(pk: &str, sk: &str) -> Key {
    Key::new(pk, sk)
}

async fn get_put_overwrite_and_delete(t: TestPorts) {
    let s = &t.ports.items;
    let k = key("USER#1", "PROFILE");
    assert!(s.get(Table::Users, &k).await.unwrap().is_none());
    s.put(
        Table::Users,
        item(
            &k,
            json!({"name": "Ana", "laps": [1, 2.5], "nested": {"ok": true}, "none": null}),
        ),
        None,
    )
    .await
    .unwrap();
    let got = s.get(Table::Users, &k).await.unwrap().unwrap();
    assert_eq!(got["name"], "Ana");
    assert_eq!(got["laps"], json!([1, 2.5]));
    assert_eq!(got["nested"], json!({"ok": true}));
    assert_eq!(got["pk"], "USER#1");
    // Same key in another table is another item.
    assert!(s.get(Table::Sessions, &k).await.unwrap().is_none());
    s.put(Table::Users, item(&k, json!({"name": "Bea"})), None)
        .await
        .unwrap();
    let got = s.get(Table::Users, &k).await.unwrap().unwrap();
    assert_eq!(got["name"], "Bea");
    assert!(got.get("laps").is_none(), "a put replaces the whole item");
    let old = s.delete(Table::Users, &k, None).await.unwrap().unwrap();
    assert_eq!(old["name"], "Bea");
    assert!(s.get(Table::Users, &k).await.unwrap().is_none());
    assert!(
        s.delete(Table::Users, &k, None).await.unwrap().is_none(),
        "deleting nothing succeeds"
    );
}

async fn conditional_put_update_delete(t: TestPorts) {
    let s = &t.ports.items;
    let k = key("EMAIL#a@b.c", "CLAIM");
    s.put(
        Table::Users,
        item(&k, json!({"owner": "u1", "n": 1})),
        Some(Condition::NotExists),
    )
    .await
    .unwrap();
    let err = s
        .put(
            Table::Users,
            item(&k, json!({"owner": "u2"})),
            Some(Condition::NotExists),
        )
        .await
        .unwrap_err();
    assert!(err.is_condition_failed_at(0), "{err:?}");
    assert_eq!(
        s.get(Table::Users, &k).await.unwrap().unwrap()["owner"],
        "u1",
        "the failed put wrote nothing"
    );

    let err = s
        .update(
            Table::Users,
            &k,
            Update::set("owner", "u3"),
            Some(Condition::eq("owner", "u2")),
        )
        .await
        .unwrap_err();
    assert!(err.is_condition_failed_at(0));
    let updated = s
        .update(
            Table::Users,
            &k,
            Update::set("owner", "u3").and_add("n", 4),
            Some(Condition::eq("owner", "u1")),
        )
        .await
        .unwrap();
    assert_eq!(updated["owner"], "u3");
    assert_eq!(updated["n"], 5);
    let updated = s
        .update(
            Table::Users,
            &k,
            Update::default().and_remove("n"),
            Some(Condition::Exists),
        )
        .await
        .unwrap();
    assert!(updated.get("n").is_none());
    assert!(
        s.update(
            Table::Users,
            &key("X", "Y"),
            Update::set("a", 1),
            Some(Condition::Exists)
        )
        .await
        .is_err()
    );
    let created = s
        .update(
            Table::Users,
            &key("X", "Y"),
            Update::default().and_add("count", 1),
            None,
        )
        .await
        .unwrap();
    assert_eq!(created["count"], 1, "an update creates a missing item");

    assert!(
        s.update(
            Table::Users,
            &k,
            Update::set("v", 10),
            Some(Condition::Lt("missing".into(), json!(1)))
        )
        .await
        .is_err()
    );
    s.update(
        Table::Users,
        &k,
        Update::set("v", 10),
        Some(Condition::AttrNotExists("v".into())),
    )
    .await
    .unwrap();
    s.update(
        Table::Users,
        &k,
        Update::set("v", 7),
        Some(Condition::Gt("v".into(), json!(7))),
    )
    .await
    .unwrap();
    let err = s
        .update(
            Table::Users,
            &k,
            Update::set("v", 7),
            Some(Condition::Lt("v".into(), json!(7))),
        )
        .await;
    assert!(err.unwrap_err().is_condition_failed_at(0));
    let either = Condition::Or(vec![
        Condition::eq("owner", "nobody"),
        Condition::Ne("v".into(), json!(8)),
    ]);
    s.update(Table::Users, &k, Update::set("w", "x"), Some(either))
        .await
        .unwrap();

    let err = s
        .delete(Table::Users, &k, Some(Condition::eq("owner", "u1")))
        .await
        .unwrap_err();
    assert!(err.is_condition_failed_at(0));
    assert!(s.get(Table::Users, &k).await.unwrap().is_some());
    s.delete(
        Table::Users,
        &k,
        Some(Condition::And(vec![
            Condition::Exists,
            Condition::eq("owner", "u3"),
        ])),
    )
    .await
    .unwrap();
    assert!(s.get(Table::Users, &k).await.unwrap().is_none());
}

async fn failed_condition_in_a_transaction_writes_nothing(t: TestPorts) {
    let s = &t.ports.items;
    s.put(
        Table::Tokens,
        item(&key("FAMILY#f", "STATE"), json!({"revoked": false})),
        None,
    )
    .await
    .unwrap();
    s.put(
        Table::Tokens,
        item(&key("TOKEN#old", "TOKEN"), json!({"used": false})),
        None,
    )
    .await
    .unwrap();
    s.put(
        Table::Tokens,
        item(&key("CODE#c", "CODE"), json!({"v": 1})),
        None,
    )
    .await
    .unwrap();
    let ops = vec![
        TxOp::Put {
            table: Table::Tokens,
            item: item(&key("TOKEN#new", "TOKEN"), json!({"used": false})),
            condition: Some(Condition::NotExists),
        },
        TxOp::Update {
            table: Table::Tokens,
            key: key("TOKEN#old", "TOKEN"),
            update: Update::set("used", true),
            condition: Some(Condition::eq("used", false)),
        },
        TxOp::Check {
            table: Table::Tokens,
            key: key("FAMILY#f", "STATE"),
            condition: Condition::eq("revoked", true),
        },
        TxOp::Delete {
            table: Table::Tokens,
            key: key("CODE#c", "CODE"),
            condition: Some(Condition::Exists),
        },
    ];
    let err = s.transact(ops.clone()).await.unwrap_err();
    assert!(
        err.is_condition_failed_at(2),
        "the third condition failed: {err:?}"
    );
    assert!(
        s.get(Table::Tokens, &key("TOKEN#new", "TOKEN"))
            .await
            .unwrap()
            .is_none(),
        "no put"
    );
    assert_eq!(
        s.get(Table::Tokens, &key("TOKEN#old", "TOKEN"))
            .await
            .unwrap()
            .unwrap()["used"],
        false,
        "no update"
    );
    assert!(
        s.get(Table::Tokens, &key("CODE#c", "CODE"))
            .await
            .unwrap()
            .is_some(),
        "no delete"
    );

    let mut ops = ops;
    ops[2] = TxOp::Check {
        table: Table::Tokens,
        key: key("FAMILY#f", "STATE"),
        condition: Condition::eq("revoked", false),
    };
    s.transact(ops.clone()).await.unwrap();
    assert!(
        s.get(Table::Tokens, &key("TOKEN#new", "TOKEN"))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        s.get(Table::Tokens, &key("TOKEN#old", "TOKEN"))
            .await
            .unwrap()
            .unwrap()["used"],
        true
    );
    assert!(
        s.get(Table::Tokens, &key("CODE#c", "CODE"))
            .await
            .unwrap()
            .is_none()
    );
    // Replaying the same transaction now fails on its first condition.
    assert!(s.transact(ops).await.unwrap_err().is_condition_failed_at(0));
}

async fn transactions_span_tables_and_reject_bad_shapes(t: TestPorts) {
    let s = &t.ports.items;
    let ops = vec![
        TxOp::Put {
            table: Table::Sessions,
            item: item(&key("USER#u", "SESSION#1"), json!({"n": 1})),
            condition: None,
        },
        TxOp::Put {
            table: Table::Outbox,
            item: item(&key("OUTBOX#00", "e1"), json!({"n": 1})),
            condition: None,
        },
    ];
    s.transact(ops).await.unwrap();
    assert!(
        s.get(Table::Sessions, &key("USER#u", "SESSION#1"))
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        s.get(Table::Outbox, &key("OUTBOX#00", "e1"))
            .await
            .unwrap()
            .is_some()
    );

    let dup = vec![
        TxOp::Put {
            table: Table::Sessions,
            item: item(&key("A", "B"), json!({})),
            condition: None,
        },
        TxOp::Delete {
            table: Table::Sessions,
            key: key("A", "B"),
            condition: None,
        },
    ];
    assert!(matches!(s.transact(dup).await, Err(StoreError::Invalid(_))));
    assert!(matches!(
        s.transact(vec![]).await,
        Err(StoreError::Invalid(_))
    ));
    let huge = "x".repeat(401 * 1024);
    let err = s
        .put(
            Table::Sessions,
            item(&key("A", "B"), json!({"blob": huge})),
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TooLarge(_)), "{err:?}");
    assert!(
        s.get(Table::Sessions, &key("A", "B"))
            .await
            .unwrap()
            .is_none()
    );
}

async fn concurrent_conditional_puts_have_one_winner(t: TestPorts) {
    let s = t.ports.items.clone();
    let k = key("CLIENTSESSION#u1#abc", "IDEMPOTENCY");
    let attempts = (0..16).map(|i| {
        let s = s.clone();
        let k = k.clone();
        tokio::spawn(async move {
            s.put(
                Table::Sessions,
                item(&k, json!({"winner": i})),
                Some(Condition::NotExists),
            )
            .await
        })
    });
    let results = futures::future::join_all(attempts).await;
    let wins = results.iter().filter(|r| matches!(r, Ok(Ok(())))).count();
    let losses = results
        .iter()
        .filter(|r| matches!(r, Ok(Err(e)) if e.is_condition_failed_at(0)))
        .count();
    assert_eq!((wins, losses), (1, 15), "{results:?}");
}

async fn concurrent_transactions_on_one_item_have_one_winner(t: TestPorts) {
    let s = t.ports.items.clone();
    s.put(
        Table::Tokens,
        item(&key("TOKEN#t", "TOKEN"), json!({"used": false})),
        None,
    )
    .await
    .unwrap();
    let attempts = (0..8).map(|i| {
        let s = s.clone();
        tokio::spawn(async move {
            loop {
                let ops = vec![
                    TxOp::Update {
                        table: Table::Tokens,
                        key: key("TOKEN#t", "TOKEN"),
                        update: Update::set("used", true),
                        condition: Some(Condition::eq("used", false)),
                    },
                    TxOp::Put {
                        table: Table::Tokens,
                        item: item(&key(&format!("TOKEN#n{i}"), "TOKEN"), json!({})),
                        condition: None,
                    },
                ];
                match s.transact(ops).await {
                    Err(StoreError::Conflict) => continue,
                    other => return other,
                }
            }
        })
    });
    let results = futures::future::join_all(attempts).await;
    let wins = results.iter().filter(|r| matches!(r, Ok(Ok(())))).count();
    assert_eq!(wins, 1, "{results:?}");
    let mut written = 0;
    for i in 0..8 {
        written += s
            .get(Table::Tokens, &key(&format!("TOKEN#n{i}"), "TOKEN"))
            .await
            .unwrap()
            .is_some() as usize;
    }
    assert_eq!(written, 1, "only the winner's other write landed");
}

async fn pagination_loses_and_repeats_nothing(t: TestPorts) {
    let s = &t.ports.items;
    for i in 0..53 {
        s.put(
            Table::Activity,
            item(&key("FEED#u", &format!("ITEM#{i:03}")), json!({"i": i})),
            None,
        )
        .await
        .unwrap();
    }
    s.put(
        Table::Activity,
        item(&key("FEED#u", "OTHER#1"), json!({})),
        None,
    )
    .await
    .unwrap();
    s.put(
        Table::Activity,
        item(&key("FEED#v", "ITEM#000"), json!({})),
        None,
    )
    .await
    .unwrap();
    for descending in [false, true] {
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let mut q = Query::partition(Table::Activity, "FEED#u")
                .begins_with("ITEM#")
                .limit(10)
                .after(cursor);
            if descending {
                q = q.descending();
            }
            let page = s.query(q).await.unwrap();
            pages += 1;
            seen.extend(page.items.iter().map(|i| i["i"].as_i64().unwrap()));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        let mut expected: Vec<i64> = (0..53).collect();
        if descending {
            expected.reverse();
        }
        assert_eq!(seen, expected, "descending={descending}");
        assert_eq!(pages, 6);
    }
    let between = s
        .query(
            Query::partition(Table::Activity, "FEED#u")
                .between("ITEM#010", "ITEM#019")
                .limit(100),
        )
        .await
        .unwrap();
    assert_eq!(between.items.len(), 10);
    assert!(between.next_cursor.is_none());
    // Paging inside a range, both ways: the cursor bounds the range and the far end holds.
    for descending in [false, true] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = Query::partition(Table::Activity, "FEED#u")
                .between("ITEM#010", "ITEM#034")
                .limit(7)
                .after(cursor.clone());
            if descending {
                q = q.descending();
            }
            let page = s.query(q).await.unwrap();
            seen.extend(page.items.iter().map(|i| i["i"].as_i64().unwrap()));
            match page.next_cursor {
                Some(next) => {
                    assert_ne!(
                        cursor.as_deref(),
                        Some(next.as_str()),
                        "the cursor advances"
                    );
                    cursor = Some(next);
                }
                None => break,
            }
        }
        let mut expected: Vec<i64> = (10..=34).collect();
        if descending {
            expected.reverse();
        }
        assert_eq!(seen, expected, "between, descending={descending}");
    }
    let all = s
        .query(Query::partition(Table::Activity, "FEED#u").limit(100))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 54);
    let exact = s
        .query(
            Query::partition(Table::Activity, "FEED#u")
                .begins_with("ITEM#")
                .limit(53),
        )
        .await
        .unwrap();
    assert_eq!(exact.items.len(), 53);
    assert!(
        exact.next_cursor.is_none(),
        "a page that ends the partition has no cursor"
    );
    let bad = s
        .query(Query::partition(Table::Activity, "FEED#u").after(Some("%%%".into())))
        .await;
    assert!(matches!(bad, Err(StoreError::InvalidCursor)));
}

async fn expired_items_are_absent(t: TestPorts) {
    let s = &t.ports.items;
    let now = t.clock.now().unix_timestamp();
    let k = key("CODE#x", "CODE");
    s.put(
        Table::Tokens,
        item(&k, json!({"ttl": now + 60, "v": 1})),
        None,
    )
    .await
    .unwrap();
    s.put(
        Table::Tokens,
        item(&key("CODE#y", "CODE"), json!({"v": 2})),
        None,
    )
    .await
    .unwrap();
    for i in 0..5 {
        s.put(
            Table::Tokens,
            item(
                &key("LIST", &format!("{i}")),
                json!({"ttl": now + 10 * i64::from(i)}),
            ),
            None,
        )
        .await
        .unwrap();
    }
    assert!(s.get(Table::Tokens, &k).await.unwrap().is_some());
    t.clock.advance(Duration::seconds(25));
    let live = s
        .query(Query::partition(Table::Tokens, "LIST").limit(2))
        .await
        .unwrap();
    let sks: Vec<_> = live
        .items
        .iter()
        .map(|i| i["sk"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sks,
        vec!["3", "4"],
        "expired items are skipped and pages stay full"
    );
    t.clock.advance(Duration::seconds(60));
    assert!(s.get(Table::Tokens, &k).await.unwrap().is_none(), "expired");
    assert!(
        s.get(Table::Tokens, &key("CODE#y", "CODE"))
            .await
            .unwrap()
            .is_some(),
        "no ttl, no expiry"
    );
    assert!(
        s.delete(Table::Tokens, &k, Some(Condition::Exists))
            .await
            .is_err(),
        "an expired item fails Exists"
    );
    s.put(
        Table::Tokens,
        item(&k, json!({"v": 3})),
        Some(Condition::NotExists),
    )
    .await
    .expect("expired counts as absent");
    assert_eq!(s.get(Table::Tokens, &k).await.unwrap().unwrap()["v"], 3);
    let empty = s
        .query(Query::partition(Table::Tokens, "LIST"))
        .await
        .unwrap();
    assert!(empty.items.is_empty());
}

async fn keys_survive_unusual_characters(t: TestPorts) {
    let s = &t.ports.items;
    let pks = [
        "TRACK#acc#Spa-Francorchamps#GP",
        "USER#ünïcødé 🏎",
        "a'b\"c;--",
    ];
    for pk in pks {
        s.put(
            Table::Tracks,
            item(&key(pk, "META"), json!({"pk_copy": pk})),
            Some(Condition::NotExists),
        )
        .await
        .unwrap();
    }
    let mut seen = HashSet::new();
    for pk in pks {
        let got = s
            .get(Table::Tracks, &key(pk, "META"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got["pk_copy"], pk);
        seen.insert(pk);
    }
    assert_eq!(seen.len(), 3);
    assert!(s.ping().await.is_ok());
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
    get_put_overwrite_and_delete,
    conditional_put_update_delete,
    failed_condition_in_a_transaction_writes_nothing,
    transactions_span_tables_and_reject_bad_shapes,
    concurrent_conditional_puts_have_one_winner,
    concurrent_transactions_on_one_item_have_one_winner,
    pagination_loses_and_repeats_nothing,
    expired_items_are_absent,
    keys_survive_unusual_characters,
);
