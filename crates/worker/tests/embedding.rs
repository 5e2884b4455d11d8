//! Item vectors (F44) against a stand-in OpenAI-compatible `/v1/embeddings` server on
//! 127.0.0.1, on SQLite and PostgreSQL: batches of the configured size per request with the
//! key and model, every item stored with the provider's model; 429 (with Retry-After), 5xx,
//! time-outs, refusals and malformed answers store nothing, put the batch back to wait and
//! pause the job's claims; the local embedder needs no server at all.

use tidings_testkit::on_both_engines;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{TestServer, user};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tidings_embed::{EmbedError, Embedder, LOCAL_MODEL, LocalEmbedder};
use tidings_store::{NewItem, Store};
use tidings_testkit::follow;
use tidings_worker::{EmbeddingJob, OpenAiEmbeddings, drain_enrichment};
use url::Url;

/// What the stand-in answers to its next request.
#[derive(Debug, Clone)]
enum Reply {
    /// Vectors: the local embedder's for each input (so similar texts are near).
    Vectors,
    /// An error status, with a `Retry-After` when given, and a body.
    Status(StatusCode, Option<&'static str>, &'static str),
    /// A 200 that is not an embeddings answer.
    Garbage,
    /// One vector fewer than inputs.
    Short,
    /// Vectors after this long (longer than the client waits).
    Slow(Duration),
}

/// A request the stand-in received: its inputs, model and Authorization header.
#[derive(Debug, Clone)]
struct Seen {
    inputs: Vec<String>,
    model: String,
    authorization: Option<String>,
}

#[derive(Clone, Default)]
struct Provider {
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
}

impl Provider {
    async fn start(&self) -> TestServer {
        let provider = self.clone();
        let router = Router::new().route(
            "/v1/embeddings",
            post(move |headers: HeaderMap, body: String| {
                let provider = provider.clone();
                async move { provider.answer(headers, body).await }
            }),
        );
        TestServer::start(router).await
    }

    fn then(&self, reply: Reply) {
        self.script.lock().unwrap().push_back(reply);
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    async fn answer(&self, headers: HeaderMap, body: String) -> Response {
        let request: serde_json::Value = serde_json::from_str(&body).unwrap();
        let inputs: Vec<String> = request["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        self.seen.lock().unwrap().push(Seen {
            inputs: inputs.clone(),
            model: request["model"].as_str().unwrap().to_string(),
            authorization: headers
                .get(header::AUTHORIZATION)
                .map(|v| v.to_str().unwrap().to_string()),
        });
        let reply = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Reply::Vectors);
        let vectors = |inputs: &[String]| {
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .rev() // out of order: the client sorts by index
                .map(|(index, text)| {
                    serde_json::json!({
                        "object": "embedding",
                        "index": index,
                        "embedding": LocalEmbedder.vector(text),
                    })
                })
                .collect();
            axum::Json(serde_json::json!({"object": "list", "data": data})).into_response()
        };
        match reply {
            Reply::Vectors => vectors(&inputs),
            Reply::Slow(wait) => {
                tokio::time::sleep(wait).await;
                vectors(&inputs)
            }
            Reply::Short => vectors(&inputs[1..]),
            Reply::Garbage => (StatusCode::OK, "<html>gateway</html>").into_response(),
            Reply::Status(status, retry_after, body) => {
                let mut response = (status, body).into_response();
                if let Some(after) = retry_after {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, after.parse().unwrap());
                }
                response
            }
        }
    }
}

fn items(n: usize) -> Vec<NewItem> {
    (0..n)
        .map(|k| NewItem {
            guid: Some(format!("i{k}")),
            url: Some(format!("https://news.example/{k}")),
            title: Some(format!("Story number {k} about rust compilers")),
            content: Some(format!("<p>The <b>Rust</b> compiler, part {k}.</p>")),
            published: Some(1_000 + k as i64),
            ..NewItem::default()
        })
        .collect()
}

fn openai(server: &TestServer, batch: usize, timeout: Duration) -> OpenAiEmbeddings {
    let base = Url::parse(&server.url("/v1")).unwrap();
    OpenAiEmbeddings::with_timeout(&base, "test-model", Some("sk-test".into()), batch, timeout)
        .unwrap()
}

async fn stored(store: &Store, model: &str) -> usize {
    store
        .embedding_codes_after(model, 0, 1000)
        .await
        .unwrap()
        .len()
}

on_both_engines!(items_are_embedded_in_batches_with_the_key_and_model, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    store.upsert_items(feed, &items(5), 100).await.unwrap();
    let provider = Provider::default();
    let server = provider.start().await;
    let job = Arc::new(EmbeddingJob::new(
        store.clone(),
        openai(&server, 2, Duration::from_secs(10)),
        "w1",
        60,
    ));
    // The first claim names the model: every item stored before it is the backfill's.
    drain_enrichment(Arc::clone(&job), 1).await.unwrap();
    let requests = provider.requests();
    // Five items, two per request: three requests, never more inputs than the batch.
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests.iter().all(|r| r.inputs.len() <= 2));
    assert_eq!(requests.iter().map(|r| r.inputs.len()).sum::<usize>(), 5);
    assert!(requests.iter().all(|r| r.model == "test-model"));
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer sk-test"))
    );
    // Inputs are the title and the plain text.
    let input = &requests[0].inputs[0];
    assert!(
        input.starts_with("Story number ")
            && input.contains(" about rust compilers\n\nThe Rust compiler, part "),
        "{input:?}"
    );
    assert_eq!(
        store.embedding_model().await.unwrap().as_deref(),
        Some("openai:test-model")
    );
    assert_eq!(stored(&store, "openai:test-model").await, 5);
    assert_eq!(store.embedding_queue_len().await.unwrap(), 0);
    // The stored vector is the provider's, quantized: each item's own order came back right.
    let items_ids = store.feed_item_ids(feed).await.unwrap();
    for id in items_ids {
        let item = store.item(ann, id).await.unwrap();
        let text = tidings_embed::item_text(
            item.title.as_deref(),
            Some(&format!(
                "The Rust compiler, part {}.",
                &item.guid.unwrap()[1..]
            )),
        );
        let stored = store.item_vector(ann, id).await.unwrap().unwrap();
        assert_eq!(
            stored.vector,
            tidings_embed::quantize(&LocalEmbedder.vector(&text))
        );
    }
});

#[tokio::test]
async fn provider_errors_are_told_apart() {
    let provider = Provider::default();
    let server = provider.start().await;
    let embedder = openai(&server, 10, Duration::from_millis(700));
    let texts = vec!["one".to_string(), "two".to_string()];
    for reply in [
        Reply::Status(StatusCode::TOO_MANY_REQUESTS, Some("120"), "slow down"),
        Reply::Status(StatusCode::SERVICE_UNAVAILABLE, None, "down"),
        Reply::Status(
            StatusCode::UNAUTHORIZED,
            None,
            r#"{"error":{"message":"bad key"}}"#,
        ),
        Reply::Garbage,
        Reply::Short,
        Reply::Slow(Duration::from_secs(3)),
    ] {
        provider.then(reply.clone());
        let started = Instant::now();
        let error = embedder.embed(&texts).await.unwrap_err();
        match (&reply, &error) {
            (
                Reply::Status(StatusCode::TOO_MANY_REQUESTS, ..),
                EmbedError::RateLimited { retry_after },
            ) => {
                assert_eq!(*retry_after, Some(Duration::from_secs(120)));
            }
            (Reply::Status(StatusCode::SERVICE_UNAVAILABLE, ..), EmbedError::Unavailable(_)) => {}
            (Reply::Status(StatusCode::UNAUTHORIZED, ..), EmbedError::Refused(message)) => {
                assert!(
                    message.contains("401") && message.contains("bad key"),
                    "{message}"
                );
            }
            (Reply::Garbage, EmbedError::Malformed(_)) => {}
            (Reply::Short, EmbedError::Malformed(message)) => {
                assert!(message.contains("1 embeddings for 2 texts"), "{message}");
            }
            (Reply::Slow(_), EmbedError::Unavailable(message)) => {
                assert!(message.contains("no answer within"), "{message}");
                assert!(started.elapsed() < Duration::from_secs(3));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // And when it answers, the vectors come back in the inputs' order.
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(
        vectors,
        [LocalEmbedder.vector("one"), LocalEmbedder.vector("two")]
    );
    // A server that is not there is unavailable, not a panic.
    let gone = OpenAiEmbeddings::with_timeout(
        &Url::parse("http://127.0.0.1:9/v1").unwrap(),
        "m",
        None,
        10,
        Duration::from_secs(2),
    )
    .unwrap();
    assert!(matches!(
        gone.embed(&texts).await,
        Err(EmbedError::Unavailable(_))
    ));
}

on_both_engines!(a_failing_provider_pauses_the_job_and_the_items_wait, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    let provider = Provider::default();
    let server = provider.start().await;
    let cases = [
        (
            Reply::Status(StatusCode::TOO_MANY_REQUESTS, Some("120"), "slow down"),
            120,
        ),
        (Reply::Status(StatusCode::BAD_GATEWAY, None, "down"), 15),
        (Reply::Slow(Duration::from_secs(3)), 15),
    ];
    for (n, (reply, least_wait)) in cases.iter().enumerate() {
        // A new item for each case; the earlier ones are still waiting.
        let mut item = items(1).remove(0);
        item.guid = Some(format!("case{n}"));
        store
            .upsert_items(feed, &[item], 100 + n as i64)
            .await
            .unwrap();
        provider.then(reply.clone());
        let before_requests = provider.requests().len();
        let job = Arc::new(EmbeddingJob::new(
            store.clone(),
            openai(&server, 10, Duration::from_millis(700)),
            "w",
            60,
        ));
        let now = chrono::Utc::now().timestamp();
        // One request for the batch; then the job pauses: no second request.
        assert_eq!(
            drain_enrichment(Arc::clone(&job), 2).await.unwrap(),
            1,
            "{reply:?}"
        );
        assert_eq!(provider.requests().len() - before_requests, 1, "{reply:?}");
        assert_eq!(
            provider.requests().last().unwrap().inputs.len(),
            1,
            "{reply:?}"
        );
        assert_eq!(stored(&store, "openai:test-model").await, n, "{reply:?}");
        assert!(
            job.paused_until() >= now + least_wait,
            "{reply:?}: {}",
            job.paused_until()
        );
        assert!(job.paused_until() <= now + 3600 + 5, "{reply:?}");
        // Paused: the same job asks nothing more, even with a new item due.
        let mut fresh = items(1).remove(0);
        fresh.guid = Some(format!("paused{n}"));
        store.upsert_items(feed, &[fresh], 100).await.unwrap();
        assert_eq!(
            drain_enrichment(Arc::clone(&job), 1).await.unwrap(),
            0,
            "{reply:?}"
        );
        assert_eq!(provider.requests().len() - before_requests, 1, "{reply:?}");
        // Another worker's job takes the new item but not the one waiting.
        let other = Arc::new(EmbeddingJob::new(
            store.clone(),
            openai(&server, 10, Duration::from_secs(10)),
            "w2",
            60,
        ));
        assert_eq!(drain_enrichment(other, 1).await.unwrap(), 1, "{reply:?}");
        assert_eq!(
            stored(&store, "openai:test-model").await,
            n + 1,
            "{reply:?}"
        );
    }
    // The failed items wait with one attempt counted each; once due they are embedded.
    let later = chrono::Utc::now().timestamp() + 100_000;
    let waiting = store
        .claim_embedding_jobs("probe", later, 10, 60)
        .await
        .unwrap();
    assert_eq!(waiting.len(), 3);
    assert!(waiting.iter().all(|j| j.attempts == 1));
});

on_both_engines!(the_local_embedder_needs_no_server, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    store.upsert_items(feed, &items(70), 100).await.unwrap();
    let job = Arc::new(EmbeddingJob::new(store.clone(), LocalEmbedder, "w", 60));
    // 70 items, 64 per batch.
    assert_eq!(drain_enrichment(job, 2).await.unwrap(), 2);
    assert_eq!(
        store.embedding_model().await.unwrap().as_deref(),
        Some(LOCAL_MODEL)
    );
    assert_eq!(stored(&store, LOCAL_MODEL).await, 70);
    let codes = store
        .embedding_codes_after(LOCAL_MODEL, 0, 1000)
        .await
        .unwrap();
    assert!(
        codes
            .iter()
            .all(|c| c.code.len() == tidings_embed::CODE_BYTES)
    );
    let vector = store
        .item_vector(ann, codes[0].item_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(vector.vector.len(), tidings_embed::LOCAL_DIMS);
});

on_both_engines!(one_users_feeds_embed_only_their_daily_budget, |db| {
    // Ann follows a busy feed alone, Bob a quiet one: with 3 items a day each, Ann's other
    // items wait for tomorrow (no attempt counted) and Bob's are embedded all the same.
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, busy) = follow(&store, ann, "https://busy.example/feed").await;
    let (_, quiet) = follow(&store, bob, "https://quiet.example/feed").await;
    store.upsert_items(busy, &items(6), 100).await.unwrap();
    store.upsert_items(quiet, &items(2), 100).await.unwrap();
    let provider = Provider::default();
    let server = provider.start().await;
    let job = Arc::new(
        EmbeddingJob::new(
            store.clone(),
            openai(&server, 4, Duration::from_secs(10)),
            "w1",
            60,
        )
        .with_user_daily_budget(3),
    );
    drain_enrichment(Arc::clone(&job), 1).await.unwrap();
    let sent: usize = provider.requests().iter().map(|r| r.inputs.len()).sum();
    assert_eq!(sent, 5, "Ann's 3 and Bob's 2");
    assert_eq!(stored(&store, "openai:test-model").await, 5);
    assert_eq!(
        store.embedding_queue_len().await.unwrap(),
        3,
        "Ann's others wait"
    );
    let day = chrono::Utc::now().timestamp().div_euclid(86_400);
    let spent = |user| {
        let store = store.clone();
        async move {
            store
                .user_requests_on(day, user, tidings_store::BudgetKind::Embedding)
                .await
                .unwrap()
        }
    };
    assert_eq!((spent(ann).await, spent(bob).await), (3, 2));
});
