//! Related items (F44) over HTTP against a real server, on both engines: once the embedding
//! job (local vectors) ran, `GET /items/{id}/related` answers the user's most similar items
//! with their scores, in English and Japanese, never the item itself and never another
//! user's items; new vectors are found at once; bad limits and other users' items are refused;
//! a starting server loads its index before the first request.

use tidings_testkit::on_both_engines;

use std::sync::Arc;

use crate::support::{TestApp, TestServer, assert_error, call, rss_items};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tidings_embed::LocalEmbedder;
use tidings_worker::{EmbeddingJob, drain_enrichment};

const TECH: [(&str, &str, &str); 5] = [
    (
        "rust-a",
        "Rust compiler release brings faster builds",
        "The Rust compiler team released a new version with faster incremental builds and \
         better borrow checker diagnostics.",
    ),
    (
        "rust-b",
        "Faster builds with the new Rust compiler",
        "Incremental builds in the Rust compiler are faster, and the borrow checker explains \
         its errors better.",
    ),
    (
        "garden",
        "Tomatoes in a small garden",
        "Plant tomatoes in spring, water them in the morning and pick them in summer.",
    ),
    (
        "tokyo-a",
        "東京都知事選挙の投票率が過去最低に",
        "東京都知事選挙の投票率は過去最低となった。",
    ),
    (
        "tokyo-b",
        "都知事選挙、投票率は過去最低",
        "都知事選挙の投票率が過去最低を記録した。",
    ),
];

/// Subscribes; returns the subscription's id.
async fn subscribe(client: &reqwest::Client, app: &TestApp, url: &str) -> i64 {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["subscription"]["id"].as_i64().unwrap()
}

async fn get(client: &reqwest::Client, app: &TestApp, path: &str) -> (StatusCode, Value) {
    let (status, _, body) = call(client, Method::GET, &app.url(path), None).await;
    (status, body)
}

/// The id of the user's item titled `title`.
async fn id_of(client: &reqwest::Client, app: &TestApp, title: &str) -> i64 {
    let (_, body) = get(client, app, "/items?filter=all&limit=100").await;
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["title"] == title)
        .unwrap_or_else(|| panic!("no {title} in {body}"))["id"]
        .as_i64()
        .unwrap()
}

fn titles(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {body}"))
        .iter()
        .map(|item| item["title"].as_str().unwrap().to_owned())
        .collect()
}

fn ids_of(body: &Value) -> Vec<i64> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {body}"))
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

async fn embed(app: &TestApp) {
    let job = Arc::new(EmbeddingJob::new(app.store.clone(), LocalEmbedder, "t", 60));
    drain_enrichment(job, 1).await.unwrap();
}

on_both_engines!(related_items_are_the_users_most_similar_ones, |db| {
    let app = TestApp::start(db).await;
    let site = TestServer::start_empty().await;
    site.serve(
        "/tech.xml",
        200,
        "application/rss+xml",
        rss_items(&site.base, &TECH),
    );
    // Bob's feed has the nearest item of all to Ann's Rust story: she must never see it.
    site.serve(
        "/bob.xml",
        200,
        "application/rss+xml",
        rss_items(
            &site.base,
            &[(
                "rust-bob",
                "Rust compiler release brings faster builds",
                "The Rust compiler team released a new version with faster incremental \
                 builds and better borrow checker diagnostics.",
            )],
        ),
    );
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    let sub = subscribe(&ann, &app, &site.url("/tech.xml")).await;
    subscribe(&bob, &app, &site.url("/bob.xml")).await;
    let rust_a = id_of(&ann, &app, TECH[0].1).await;
    let tokyo_a = id_of(&ann, &app, TECH[3].1).await;
    let bobs = id_of(&bob, &app, "Rust compiler release brings faster builds").await;

    // Before the embedding job ran: nothing yet, not an error.
    let path = format!("/items/{rust_a}/related");
    let (status, body) = get(&ann, &app, &path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"items": []}));

    embed(&app).await;
    let (status, body) = get(&ann, &app, &path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let found = titles(&body);
    assert_eq!(found[0], TECH[1].1, "{body}");
    assert!(
        !found.contains(&TECH[0].1.to_string()),
        "never the item itself: {body}"
    );
    let ids = ids_of(&body);
    assert!(!ids.contains(&bobs), "never another user's item: {body}");
    // Listing fields and a score, most similar first.
    let first = &body["items"][0];
    assert_eq!(first["feed_title"], "t");
    assert!(
        first["tags"].is_array() && first["published_at"].is_string(),
        "{first}"
    );
    let scores: Vec<f64> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["score"].as_f64().unwrap())
        .collect();
    assert!(scores[0] > 0.3 && scores[0] <= 1.0, "{scores:?}");
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // The Rust story is far from the Japanese ones.
    assert!(!found.contains(&TECH[3].1.to_string()), "{body}");

    // Japanese: the other story about the same election comes first.
    let (_, body) = get(&ann, &app, &format!("/items/{tokyo_a}/related")).await;
    assert_eq!(titles(&body)[0], TECH[4].1, "{body}");

    // Bob's item is his: related items of it for him never include Ann's.
    let (status, body) = get(&bob, &app, &format!("/items/{bobs}/related")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"items": []}),
        "only Ann's items are similar: {body}"
    );
    // And neither can ask about the other's item.
    let (status, body) = get(&bob, &app, &path).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_error(&body, "not_found", "validation");
    let (status, _) = get(&ann, &app, &format!("/items/{bobs}/related")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Limits.
    let (_, body) = get(&ann, &app, &format!("{path}?limit=1")).await;
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
    for bad in ["0", "51", "many"] {
        let (status, body) = get(&ann, &app, &format!("{path}?limit={bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }

    // Bob subscribes to Ann's feed: its items are his to see, his own story is related now
    // to hers for him, and still not for her.
    subscribe(&bob, &app, &site.url("/tech.xml")).await;
    let (_, body) = get(&bob, &app, &format!("/items/{bobs}/related")).await;
    assert_eq!(titles(&body)[0], TECH[0].1, "{body}");
    let (_, body) = get(&ann, &app, &path).await;
    let ids = ids_of(&body);
    assert!(!ids.contains(&bobs), "{body}");

    // A new item's vector is found by the next request (the index reads on).
    site.serve(
        "/tech.xml",
        200,
        "application/rss+xml",
        rss_items(
            &site.base,
            &[(
                "rust-c",
                "Rust compiler: incremental builds are faster",
                "The borrow checker diagnostics of the Rust compiler got better too.",
            )],
        ),
    );
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url(&format!("/subscriptions/{sub}/refresh")),
        None,
    )
    .await;
    assert!(status.is_success(), "{status} {body}");
    embed(&app).await;
    let (_, body) = get(&ann, &app, &path).await;
    assert!(
        titles(&body).contains(&"Rust compiler: incremental builds are faster".to_string()),
        "{body}"
    );
});

/// The value of the series `name` (no labels) on the server's `/metrics`.
async fn metric(app: &TestApp, name: &str) -> Option<f64> {
    let text = reqwest::get(format!("{}/metrics", app.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
}

on_both_engines!(a_starting_server_loads_the_index_before_anyone_asks, |db| {
    let app = TestApp::start(db).await;
    let site = TestServer::start_empty().await;
    site.serve(
        "/tech.xml",
        200,
        "application/rss+xml",
        rss_items(&site.base, &TECH),
    );
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    subscribe(&ann, &app, &site.url("/tech.xml")).await;
    embed(&app).await;
    // Nobody asked this server for related items: its index is still empty.
    assert_eq!(metric(&app, "tidings_related_index_items").await, Some(0.0));

    // A server started on the same database loads the vectors by itself.
    let restarted = TestApp::start(db).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let items = metric(&restarted, "tidings_related_index_items").await;
        if items == Some(TECH.len() as f64) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the index was not loaded at start: {items:?} items"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let bytes = metric(&restarted, "tidings_related_index_bytes").await;
    assert!(bytes.is_some_and(|b| b > 0.0), "{bytes:?}");
});
