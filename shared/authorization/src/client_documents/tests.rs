use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;

const ID: &str = "https://ai.example.com/oauth/client.json";

fn doc(fields: Value) -> Vec<u8> {
    let mut base = json!({
        "client_id": ID, "client_name": "Pit Wall AI",
        "redirect_uris": ["http://127.0.0.1/callback", "https://ai.example.com/cb"],
    });
    for (k, v) in fields.as_object().unwrap() {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    serde_json::to_vec(&base).unwrap()
}

fn refused_field(body: &[u8]) -> String {
    match parse(ID, "ai.example.com", body) {
        Err(DocumentError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_client_id_url_has_a_path_and_nothing_hidden() {
    let strict = Policy::default();
    assert!(document_url(ID, strict).is_ok());
    assert!(document_url("https://ai.example.com/c?v=1", strict).is_ok());
    for bad in [
        "https://ai.example.com",
        "https://ai.example.com/",
        "https://ai.example.com/a/../client.json",
        "https://ai.example.com/./client.json",
        "https://ai.example.com/client.json#x",
        "https://user@ai.example.com/client.json",
        "http://ai.example.com/client.json",
        "http://127.0.0.1:9/client.json",
    ] {
        assert!(document_url(bad, strict).is_err(), "{bad}");
    }
    let long = format!("https://ai.example.com/{}", "a".repeat(MAX_CLIENT_ID_BYTES));
    assert!(document_url(&long, strict).is_err());
    assert!(document_url("http://127.0.0.1:9/client.json", Policy::new(true)).is_ok());
}

#[test]
fn a_document_names_itself_and_only_public_redirects() {
    let ok = parse(ID, "ai.example.com", &doc(json!({}))).unwrap();
    assert_eq!(ok.name, "Pit Wall AI");
    assert!(ok.redirects_to("http://127.0.0.1:50111/callback"));
    assert!(ok.redirects_to("https://ai.example.com/cb"));
    assert!(!ok.redirects_to("https://ai.example.com/cb2"));
    let unnamed = parse(ID, "ai.example.com", &doc(json!({"client_name": null}))).unwrap();
    assert_eq!(unnamed.name, "ai.example.com");
    let none = doc(json!({"token_endpoint_auth_method": "none"}));
    assert!(parse(ID, "ai.example.com", &none).is_ok());

    let other = "https://ai.example.com/oauth/other.json";
    for (body, field) in [
        (doc(json!({"client_id": other})), "client_id"),
        (doc(json!({"client_id": null})), "client_id"),
        (
            doc(json!({"token_endpoint_auth_method": "client_secret_post"})),
            "token_endpoint_auth_method",
        ),
        (
            doc(json!({"token_endpoint_auth_method": "private_key_jwt"})),
            "token_endpoint_auth_method",
        ),
        (doc(json!({"client_secret": "s3cret"})), "client_secret"),
        (doc(json!({"redirect_uris": []})), "redirect_uris"),
        (doc(json!({"redirect_uris": null})), "redirect_uris"),
        (
            doc(json!({"redirect_uris": ["http://evil.example.com/cb"]})),
            "redirect_uris[0]",
        ),
        (
            doc(json!({"grant_types": ["client_credentials"]})),
            "grant_types",
        ),
        (doc(json!({"client_name": "a\u{202e}b"})), "client_name"),
        (b"<html></html>".to_vec(), "the document"),
        (b"[1]".to_vec(), "the document"),
    ] {
        assert_eq!(
            refused_field(&body),
            field,
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[test]
fn a_document_is_kept_for_its_max_age_within_bounds() {
    assert_eq!(kept_for(None), DEFAULT_TTL_SECS);
    assert_eq!(kept_for(Some("public, max-age=60")), 60);
    assert_eq!(kept_for(Some("max-age=86400")), MAX_TTL_SECS);
    assert_eq!(kept_for(Some("no-store")), 0);
    assert_eq!(kept_for(Some("max-age=60, no-cache")), 0);
    assert_eq!(kept_for(Some("private")), DEFAULT_TTL_SECS);
}

struct Counting {
    calls: AtomicUsize,
    body: Vec<u8>,
    cache_control: Option<String>,
}

#[async_trait::async_trait]
impl DocumentFetcher for Counting {
    fn policy(&self) -> Policy {
        Policy::default()
    }

    async fn get(&self, _: &WebhookUrl) -> Result<Fetched, FetchFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Fetched {
            status: 200,
            body: self.body.clone(),
            cache_control: self.cache_control.clone(),
        })
    }
}

#[tokio::test]
async fn documents_are_fetched_once_per_lifetime() {
    let fetcher = Arc::new(Counting {
        calls: AtomicUsize::new(0),
        body: doc(json!({})),
        cache_control: Some("max-age=60".into()),
    });
    let documents = ClientDocuments::new(fetcher.clone());
    for now in [1000, 1030, 1059] {
        documents.document(ID, now).await.unwrap();
    }
    assert_eq!(fetcher.calls.load(Ordering::SeqCst), 1);
    documents.document(ID, 1060).await.unwrap();
    assert_eq!(fetcher.calls.load(Ordering::SeqCst), 2);

    let uncached = Arc::new(Counting {
        calls: AtomicUsize::new(0),
        body: doc(json!({})),
        cache_control: Some("no-store".into()),
    });
    let documents = ClientDocuments::new(uncached.clone());
    documents.document(ID, 1).await.unwrap();
    documents.document(ID, 1).await.unwrap();
    assert_eq!(uncached.calls.load(Ordering::SeqCst), 2);
    // A refused document is not kept either.
    let wrong = Arc::new(Counting {
        calls: AtomicUsize::new(0),
        body: doc(json!({"client_id": "https://ai.example.com/x"})),
        cache_control: None,
    });
    let documents = ClientDocuments::new(wrong.clone());
    assert!(documents.document(ID, 1).await.is_err());
    assert!(documents.document(ID, 1).await.is_err());
    assert_eq!(wrong.calls.load(Ordering::SeqCst), 2);
}
