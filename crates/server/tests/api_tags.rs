//! Tags (F41) over HTTP against a real server, on both engines: items carry their tags where
//! they are listed and read, `GET /tags` counts the tags of the user's own subscriptions, and
//! `GET /tags/{tag}/items` lists a tag's items with the listing's filters and cursor pages.

use tidings_testkit::on_both_engines;

use std::sync::Arc;

use crate::support::{TestApp, TestServer, assert_error, call, rss_items, test_fetcher};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::UsageKind;
use tidings_worker::{TaggingJob, drain_enrichment};

async fn subscribe(client: &reqwest::Client, app: &TestApp, url: &str) -> i64 {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["subscription"]["feed_id"].as_i64().unwrap()
}

async fn get(client: &reqwest::Client, app: &TestApp, path: &str) -> (StatusCode, Value) {
    let (status, _, body) = call(client, Method::GET, &app.url(path), None).await;
    (status, body)
}

fn titles(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {body}"))
        .iter()
        .map(|item| item["title"].as_str().unwrap().to_owned())
        .collect()
}

fn tag_names(item: &Value) -> Vec<String> {
    item["tags"]
        .as_array()
        .unwrap_or_else(|| panic!("no tags in {item}"))
        .iter()
        .map(|tag| tag["name"].as_str().unwrap().to_owned())
        .collect()
}

on_both_engines!(tags_on_items_top_tags_and_tag_pages, |db| {
    let app = TestApp::start(db).await;
    let site = TestServer::start_empty().await;
    site.serve(
        "/tech.xml",
        200,
        "application/rss+xml",
        rss_items(
            &site.base,
            &[
                (
                    "a",
                    "Rust compiler gets faster",
                    "The Rust compiler is faster.",
                ),
                (
                    "b",
                    "Rust in the Linux kernel",
                    "Rust drivers land in Linux.",
                ),
                ("c", "東京都知事選挙の投票率", "投票率は過去最低でした。"),
                ("d", "Gardening in spring", "Tomatoes and gardening tips."),
            ],
        ),
    );
    site.serve(
        "/garden.xml",
        200,
        "application/rss+xml",
        rss_items(
            &site.base,
            &[("g", "Gardening tools", "Gardening with good tools.")],
        ),
    );
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    let tech = subscribe(&ann, &app, &site.url("/tech.xml")).await;
    subscribe(&bob, &app, &site.url("/garden.xml")).await;

    // Before the tagging job ran, items have no tags yet.
    let (status, body) = get(&ann, &app, "/items?filter=all").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["items"][0]["tags"].as_array().unwrap().is_empty(),
        "{body}"
    );

    let job = Arc::new(TaggingJob::new(&test_fetcher(app.store.clone(), true)));
    drain_enrichment(job, 2).await.unwrap();

    // Listings carry each item's tags, best first, with scores in 0–1.
    let (_, body) = get(&ann, &app, "/items?filter=all").await;
    let first = &body["items"][0];
    assert_eq!(first["title"], "Rust compiler gets faster");
    assert_eq!(tag_names(first)[0], "rust", "{first}");
    assert_eq!(first["tags"][0]["score"], 1.0);
    for item in body["items"].as_array().unwrap() {
        for tag in item["tags"].as_array().unwrap() {
            let score = tag["score"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&score), "{tag}");
        }
    }
    // So do search results, `include=content` and the item itself.
    let (_, body) = get(&ann, &app, "/items?filter=all&q=kernel&include=content").await;
    assert!(
        tag_names(&body["items"][0]).contains(&"linux".to_owned()),
        "{body}"
    );
    let id = first["id"].as_i64().unwrap();
    let (status, body) = get(&ann, &app, &format!("/items/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tag_names(&body["item"])[0], "rust", "{body}");

    // The top tags count only the user's own subscriptions.
    let (status, body) = get(&ann, &app, "/tags").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["tags"][0],
        json!({"name": "rust", "count": 2}),
        "{body}"
    );
    let ann_tags: Vec<&str> = body["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(ann_tags.contains(&"gardening"), "{body}");
    assert!(!ann_tags.contains(&"tools"), "bob's tag: {body}");
    let (_, body) = get(&bob, &app, "/tags").await;
    assert_eq!(
        body["tags"][0],
        json!({"name": "gardening", "count": 1}),
        "{body}"
    );
    assert!(!body.to_string().contains("rust"), "{body}");
    let (_, body) = get(&ann, &app, "/tags?limit=1").await;
    assert_eq!(body["tags"].as_array().unwrap().len(), 1);
    // Items published before `since` do not count.
    let (_, body) = get(&ann, &app, "/tags?since=2999-01-01T00:00:00Z").await;
    assert_eq!(body, json!({"tags": []}));

    phase_tag_pages(&app, &ann, tech).await;
});

/// A tag's page lists its items in any spelling of its name, by cursor pages and with the
/// listing's filters; views are counted; other users' tags list nothing; bad requests say what
/// is wrong; only the signed-in are served.
async fn phase_tag_pages(app: &TestApp, ann: &reqwest::Client, tech: i64) {
    // A tag's page: its items, as the listing gives them, in any spelling of its name.
    let (status, body) = get(ann, app, "/tags/rust/items?filter=all").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        titles(&body),
        ["Rust compiler gets faster", "Rust in the Linux kernel"]
    );
    assert!(tag_names(&body["items"][0]).contains(&"rust".to_owned()));
    let (_, body) = get(
        ann,
        app,
        "/tags/%EF%BC%B2%EF%BC%B5%EF%BC%B3%EF%BC%B4/items?filter=all",
    )
    .await;
    assert_eq!(titles(&body).len(), 2, "ＲＵＳＴ is rust: {body}");
    // Cursor pages.
    let (_, body) = get(ann, app, "/tags/Rust/items?filter=all&limit=1").await;
    assert_eq!(titles(&body), ["Rust compiler gets faster"]);
    assert_eq!(body["has_more"], true);
    let cursor = body["next_cursor"].as_str().unwrap().to_owned();
    let (_, body) = get(
        ann,
        app,
        &format!("/tags/Rust/items?filter=all&limit=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(titles(&body), ["Rust in the Linux kernel"]);
    assert_eq!(body["has_more"], false);
    // The listing's filters: unread, starred, a feed.
    let (_, body) = get(ann, app, "/tags/rust/items?filter=starred").await;
    assert!(titles(&body).is_empty());
    let (_, body) = get(ann, app, &format!("/tags/rust/items?feed_id={tech}")).await;
    assert_eq!(titles(&body).len(), 2, "unread by default: {body}");
    // Japanese tags, percent-encoded in the path.
    let (_, body) = get(
        ann,
        app,
        "/tags/%E6%8A%95%E7%A5%A8%E7%8E%87/items?filter=all",
    )
    .await;
    assert_eq!(titles(&body), ["東京都知事選挙の投票率"], "{body}");
    // Views of tag pages are counted per day (F45): first pages of known tags only.
    let today = tidings_store::usage_day(tidings_store::unix_now());
    let views = app
        .store
        .top_usage(UsageKind::TagView, today - 1, today + 1, 10)
        .await
        .unwrap();
    let rust_views = views.iter().find(|v| v.key == "rust").map(|v| v.count);
    // rust, ＲＵＳＴ, Rust (its first page only), starred and one feed's: five views.
    assert_eq!(rust_views, Some(5), "{views:?}");
    // Another user's tag, or no one's, lists nothing.
    let (status, body) = get(ann, app, "/tags/tools/items?filter=all").await;
    assert_eq!(status, StatusCode::OK);
    assert!(titles(&body).is_empty(), "{body}");
    let (_, body) = get(ann, app, "/tags/no-such-tag/items").await;
    assert_eq!(body["items"], json!([]));

    // Bad requests say what is wrong.
    let (status, body) = get(ann, app, "/tags/%20/items").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
    let (status, body) = get(ann, app, "/tags/rust/items?filter=some").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = get(ann, app, "/tags?limit=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = get(ann, app, "/tags?limit=201").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = get(ann, app, "/tags?since=yesterday").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = get(ann, app, "/tags?window=7d").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Only for the signed-in.
    let anonymous = reqwest::Client::new();
    let (status, _, _) = call(&anonymous, Method::GET, &app.url("/tags"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = call(&anonymous, Method::GET, &app.url("/tags/rust/items"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
