//! Conformance suites of the event queue and secrets ports (SQLite queue / moto SQS,
//! local secrets / moto Secrets Manager).

use paddock_core::ports::SecretSource;
use paddock_core::queues::QueueName;
use paddock_tests::{Backend, TestPorts, ports, require_emulators, unique};
use std::collections::HashSet;
use std::time::Duration;

async fn delivers_acks_and_redelivers(t: TestPorts) {
    let q = t.ports.queues.get(QueueName::Feed);
    // Named queues are apart: what the feed queue holds, the others never deliver.
    let others = [QueueName::TrackMaps, QueueName::Achievements];
    let bodies: Vec<String> = (0..25).map(|i| format!("{{\"n\":{i}}}")).collect();
    q.send(bodies.clone()).await.unwrap();
    let mut got = HashSet::new();
    let mut unacked = None;
    for _ in 0..40 {
        for m in q.receive(10, Duration::from_secs(1)).await.unwrap() {
            assert_eq!(m.receive_count, 1);
            if unacked.is_none() {
                unacked = Some(m.body.clone());
            } else {
                q.ack(&m.receipt).await.unwrap();
            }
            got.insert(m.body);
        }
        if got.len() == 25 {
            break;
        }
    }
    assert_eq!(
        got,
        bodies.iter().cloned().collect::<HashSet<_>>(),
        "every message delivered"
    );
    // The unacknowledged one comes back after the visibility timeout (2 s in tests).
    let mut again = Vec::new();
    for _ in 0..10 {
        again = q.receive(10, Duration::from_secs(1)).await.unwrap();
        if !again.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(again.len(), 1);
    assert_eq!(Some(&again[0].body), unacked.as_ref());
    assert_eq!(again[0].receive_count, 2);
    q.retry_later(&again[0].receipt, Duration::ZERO)
        .await
        .unwrap();
    let third = q.receive(10, Duration::from_secs(2)).await.unwrap();
    assert_eq!(third.len(), 1);
    assert_eq!(third[0].receive_count, 3);
    q.dead_letter(&third[0], "test poison").await.unwrap();
    let dead = q.dead_letters(10).await.unwrap();
    assert_eq!(dead, vec![third[0].body.clone()]);
    assert!(
        q.receive(10, Duration::from_secs(1))
            .await
            .unwrap()
            .is_empty(),
        "dead letters are gone from the queue"
    );
    for other in others {
        let queue = t.ports.queues.get(other);
        assert!(
            queue
                .receive(10, Duration::from_millis(200))
                .await
                .unwrap()
                .is_empty()
        );
        assert!(queue.dead_letters(10).await.unwrap().is_empty());
    }
}

/// A message sent with a delay stays hidden until it is due, then comes once; an oversized
/// one is refused.
async fn delays_a_message_until_it_is_due(t: TestPorts) {
    let q = t.ports.queues.get(QueueName::Feed);
    let sent = std::time::Instant::now();
    q.send_delayed("{\"later\":true}".into(), Duration::from_secs(2))
        .await
        .unwrap();
    q.send(vec!["{\"now\":true}".into()]).await.unwrap();
    let first = q.receive(10, Duration::from_secs(1)).await.unwrap();
    assert_eq!(
        first.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
        ["{\"now\":true}"],
        "only the undelayed message is visible at once"
    );
    q.ack(&first[0].receipt).await.unwrap();
    let mut later = Vec::new();
    for _ in 0..10 {
        later = q.receive(10, Duration::from_secs(1)).await.unwrap();
        if !later.is_empty() {
            break;
        }
    }
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].body, "{\"later\":true}");
    assert!(
        sent.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        sent.elapsed()
    );
    assert!(
        q.send_delayed("x".repeat(300 * 1024), Duration::from_secs(1))
            .await
            .is_err()
    );
}

async fn refuses_oversized_messages(t: TestPorts) {
    let err = t
        .ports
        .queues
        .get(QueueName::Feed)
        .send(vec!["x".repeat(300 * 1024)])
        .await;
    assert!(err.is_err());
}

async fn local_secrets_are_generated_once_and_kept(t: TestPorts) {
    let s = &t.ports.secrets;
    let first = s.get("jwtSigningKey").await.unwrap().expect("generated");
    assert_eq!(first.len(), 43, "32 bytes, base64url");
    assert_eq!(
        s.get("jwtSigningKey").await.unwrap().unwrap(),
        first,
        "kept"
    );
    let again =
        paddock_embedded::LocalSecrets::new(t.settings.data_dir.clone(), &["jwtSigningKey"]);
    assert_eq!(
        again.get("jwtSigningKey").await.unwrap().unwrap(),
        first,
        "survives a restart"
    );
    assert!(
        s.get("llmApiKey").await.unwrap().is_none(),
        "not generated, not configured"
    );
}

mod embedded {
    use super::*;
    #[tokio::test]
    async fn delays_a_message_until_it_is_due() {
        super::delays_a_message_until_it_is_due(ports(Backend::Embedded).await).await;
    }
    #[tokio::test]
    async fn delivers_acks_and_redelivers() {
        super::delivers_acks_and_redelivers(ports(Backend::Embedded).await).await;
    }
    #[tokio::test]
    async fn refuses_oversized_messages() {
        super::refuses_oversized_messages(ports(Backend::Embedded).await).await;
    }
    #[tokio::test]
    async fn local_secrets_are_generated_once_and_kept() {
        super::local_secrets_are_generated_once_and_kept(ports(Backend::Embedded).await).await;
    }
}

mod moto {
    use super::*;
    #[tokio::test]
    async fn delays_a_message_until_it_is_due() {
        super::delays_a_message_until_it_is_due(ports(Backend::Aws).await).await;
    }
    #[tokio::test]
    async fn delivers_acks_and_redelivers() {
        super::delivers_acks_and_redelivers(ports(Backend::Aws).await).await;
    }
    #[tokio::test]
    async fn refuses_oversized_messages() {
        super::refuses_oversized_messages(ports(Backend::Aws).await).await;
    }

    #[tokio::test]
    async fn secrets_manager_reads_named_values_of_a_json_secret() {
        require_emulators();
        let sdk = paddock_aws::sdk_config().await;
        let client = aws_sdk_secretsmanager::Client::new(&sdk);
        let name = unique("paddock/app-");
        let arn = paddock_aws::provision::put_secret(
            &client,
            &name,
            &serde_json::json!({"jwtSigningKey": "k1", "llmApiKey": ""}),
        )
        .await
        .unwrap();
        let secrets = paddock_aws::SecretsManagerSecrets::new(client.clone(), arn);
        assert_eq!(
            secrets.get("jwtSigningKey").await.unwrap().as_deref(),
            Some("k1")
        );
        assert_eq!(
            secrets.get("llmApiKey").await.unwrap(),
            None,
            "empty means not configured"
        );
        assert_eq!(secrets.get("other").await.unwrap(), None);

        let broken = unique("paddock/broken-");
        client
            .create_secret()
            .name(&broken)
            .secret_string("not json")
            .send()
            .await
            .unwrap();
        let err = paddock_aws::SecretsManagerSecrets::new(client.clone(), broken)
            .get("x")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
        let missing = paddock_aws::SecretsManagerSecrets::new(client, unique("paddock/missing-"))
            .get("x")
            .await;
        assert!(
            missing.is_err(),
            "a missing secret is an error, not silence"
        );
    }
}
