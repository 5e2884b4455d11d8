//! Search over HTTP (F35), on both engines: `GET /items?q=` with the listing's filters, order
//! and cursors, safe highlighted snippets, clear errors, `GET /bookmarks?q=`, and the OpenAPI
//! description.

use tidings_testkit::on_both_engines;

use tidings_testkit::follow as subscribe;

use crate::support::{TestApp, assert_error, call};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::NewItem;

const BASE: i64 = 1_760_000_000;

fn item(guid: &str, n: i64, title: &str, content: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(content.into()),
        published: Some(BASE + n * 60),
        ..NewItem::default()
    }
}

fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

fn titles(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {body}"))
        .iter()
        .map(|i| i["title"].as_str().unwrap_or("").to_string())
        .collect()
}

on_both_engines!(items_are_searched_with_the_listing_parameters, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, feed_a) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
    let (_, feed_b) = subscribe(&app.store, ann_id, "https://b.example/feed").await;
    app.store
        .upsert_items(
            feed_a,
            &[
                item(
                    "a1",
                    1,
                    "東京の天気",
                    "<p>明日の東京は晴れ &lt;script&gt; です。</p>",
                ),
                item(
                    "a2",
                    2,
                    "Rust news",
                    "<p>Rust rust rust: the 東京 meetup.</p>",
                ),
                item("a3", 3, "Grüße", "<p>Straße in München</p>"),
            ],
            BASE,
        )
        .await
        .unwrap();
    app.store
        .upsert_items(
            feed_b,
            &[item("b1", 4, "ＲＵＳＴ入門", "<p>全角</p>")],
            BASE,
        )
        .await
        .unwrap();
    let get = |path: String| {
        let ann = ann.clone();
        let url = app.url(&path);
        async move { call(&ann, Method::GET, &url, None).await }
    };

    // Newest first, with a snippet whose text is escaped and whose matches are marked.
    let (status, _, body) = get(format!("/items?filter=all&q={}", encode("東京"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(titles(&body), ["Rust news", "東京の天気"]);
    assert_eq!(
        body["items"][1]["snippet"],
        "明日の<mark>東京</mark>は晴れ &lt;script&gt; です。"
    );
    assert_eq!(
        body["items"][0]["snippet"],
        "Rust rust rust: the <mark>東京</mark> meetup."
    );
    // Full-width, case, accents; a feed; phrases and exclusions.
    let (_, _, body) = get(format!("/items?filter=all&q={}", encode("rust"))).await;
    assert_eq!(titles(&body), ["ＲＵＳＴ入門", "Rust news"]);
    let (_, _, body) = get(format!("/items?filter=all&feed_id={feed_b}&q=rust")).await;
    assert_eq!(titles(&body), ["ＲＵＳＴ入門"]);
    let (_, _, body) = get(format!("/items?filter=all&q={}", encode("strasse MUNCHEN"))).await;
    assert_eq!(titles(&body), ["Grüße"]);
    assert_eq!(
        body["items"][0]["snippet"],
        "<mark>Straße</mark> in <mark>München</mark>"
    );
    let (_, _, body) = get(format!("/items?filter=all&q={}", encode("rust -入門"))).await;
    assert_eq!(titles(&body), ["Rust news"]);
    let (_, _, body) = get(format!(
        "/items?filter=all&q={}",
        encode("\"the 東京 meetup\"")
    ))
    .await;
    assert_eq!(titles(&body), ["Rust news"]);
    // Unread is the default filter, as for the listing.
    let id = body["items"][0]["id"].as_i64().unwrap();
    let (status, _, _) = call(
        &ann,
        Method::PUT,
        &app.url(&format!("/items/{id}/state")),
        Some(json!({"is_read": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, body) = get(format!("/items?q={}", encode("東京"))).await;
    assert_eq!(titles(&body), ["東京の天気"]);
    // Pages by date and by relevance.
    let (_, _, page) = get("/items?filter=all&q=rust&limit=1".into()).await;
    assert_eq!(page["has_more"], true);
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, _, page2) = get(format!("/items?filter=all&q=rust&limit=1&cursor={cursor}")).await;
    assert_eq!(titles(&page2), ["Rust news"]);
    assert_eq!(page2["has_more"], false);
    let (status, _, page) = get("/items?filter=all&q=rust&limit=1&order=relevance".into()).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(titles(&page), ["Rust news"], "four mentions rank first");
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, _, page2) = get(format!(
        "/items?filter=all&q=rust&limit=1&order=relevance&cursor={cursor}"
    ))
    .await;
    assert_eq!(titles(&page2), ["ＲＵＳＴ入門"]);
    assert_eq!(page2["next_cursor"], Value::Null);
    // A blank q is the plain listing (no snippets).
    let (_, _, body) = get("/items?filter=all&q=%20".into()).await;
    assert_eq!(body["items"].as_array().unwrap().len(), 4);
    assert!(body["items"][0].get("snippet").is_none());

    // Errors say what was wrong.
    let (status, _, body) = get(format!("/items?q={}", "x".repeat(401))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("400"),
        "{body}"
    );
    let (status, _, body) = get(format!("/items?q={}", "x".repeat(101))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("100"),
        "{body}"
    );
    let (status, _, body) = get(format!("/items?q={}", encode("a b c d e f g h i j k"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = get("/items?q=-rust".into()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = get("/items?order=relevance".into()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = get("/items?q=rust&order=relevance&cursor=zz".into()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Another user's feed is not searched.
    app.user("bob", false).await;
    let bob = app.signed_in("bob").await;
    let (status, _, body) = call(
        &bob,
        Method::GET,
        &app.url("/items?filter=all&q=rust"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(titles(&body), Vec::<String>::new());
});

on_both_engines!(bookmarks_are_searched, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, feed) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
    app.store
        .upsert_items(
            feed,
            &[
                item("a1", 1, "京都の紅葉", "<p>秋の京都</p>"),
                item("a2", 2, "Café", "<p>Paris</p>"),
            ],
            BASE,
        )
        .await
        .unwrap();
    for id in app.store.feed_item_ids(feed).await.unwrap() {
        let (status, _, _) = call(
            &ann,
            Method::POST,
            &app.url("/bookmarks"),
            Some(json!({ "item_id": id })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (status, _, body) = call(&ann, Method::GET, &app.url("/bookmarks?q=cafe"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let list = body["bookmarks"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["title"], "Café");
    let url = app.url(&format!("/bookmarks?q={}", encode("紅葉")));
    let (_, _, body) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(body["bookmarks"][0]["title"], "京都の紅葉");
    let (_, _, body) = call(&ann, Method::GET, &app.url("/bookmarks"), None).await;
    assert_eq!(body["bookmarks"].as_array().unwrap().len(), 2);
    let (status, _, body) = call(&ann, Method::GET, &app.url("/bookmarks?q=-x"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
});

on_both_engines!(the_openapi_document_describes_search, |db| {
    let app = TestApp::start(db).await;
    let (_, _, doc) = call(&app.browser(), Method::GET, &app.url("/openapi.json"), None).await;
    for path in ["/api/v1/items", "/api/v1/bookmarks"] {
        let params: Vec<&str> = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} has no parameters"))
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(params.contains(&"q"), "q missing from {path}: {params:?}");
    }
    let schema = &doc["components"]["schemas"]["ItemSummaryView"]["properties"];
    assert!(schema["snippet"].is_object(), "{schema}");
});
