//! Popularity (F40) over HTTP, on both engines: every item carries `popularity` (null while
//! unknown, which is not 0) in listings, search results and the item itself, and the hot list
//! orders the user's items of a window by count, then date, with a minimum count, the
//! listing's filters and cursor pagination.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, call};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tidings_store::NewItem;

fn item(guid: &str, title: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://news.example/{guid}")),
        title: Some(title.into()),
        summary: Some(format!("<p>{title}</p>")),
        published: Some(published),
        ..NewItem::default()
    }
}

/// The ids of a listing's items, in order.
fn ids(body: &Value) -> Vec<i64> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {body}"))
        .iter()
        .map(|item| item["id"].as_i64().unwrap())
        .collect()
}

/// The items of the test: ann's six on one feed, bob's one on another, with their counts.
struct Popular {
    feed: i64,
    now: i64,
    hot: i64,
    warm: i64,
    tied: i64,
    cold: i64,
    unknown: i64,
    older: i64,
    bobs: i64,
}

/// A GET by `client`: status, headers and body.
async fn get(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    call(client, Method::GET, &app.url(path), None).await
}

on_both_engines!(
    items_carry_their_counts_and_the_hot_list_orders_by_them,
    |db| {
        let app = TestApp::start(db).await;
        let ann_id = app.user("ann", false).await;
        let bob_id = app.user("bob", false).await;
        let ann = app.signed_in("ann").await;
        let bob = app.signed_in("bob").await;
        let p = phase_items_with_counts(&app, ann_id, bob_id).await;
        phase_counts_in_listings_one_item_and_search(&app, &ann, &p).await;
        phase_hot_list_by_count_pages_filters_and_owner(&app, &ann, &bob, &p).await;
        phase_hot_list_clear_errors(&app, &ann).await;
    }
);

/// Ann's six items and bob's one, with counts saved for all but `unknown`.
async fn phase_items_with_counts(app: &TestApp, ann_id: i64, bob_id: i64) -> Popular {
    let (_, feed) = tidings_testkit::follow(&app.store, ann_id, "https://news.example/feed").await;
    let (_, other) =
        tidings_testkit::follow(&app.store, bob_id, "https://other.example/feed").await;
    let now = chrono::Utc::now().timestamp();
    let items = [
        item("hot", "Hot story", now - 3600),
        item("warm", "Warm story", now - 1800),
        item("tied", "Tied story", now - 600),
        item("cold", "Cold story", now - 300),
        item("unknown", "Unknown story", now - 120),
        item("older", "Older story", now - 3 * 86_400),
    ];
    app.store.upsert_items(feed, &items, now).await.unwrap();
    app.store
        .upsert_items(other, &[item("bobs", "Bob's story", now - 60)], now)
        .await
        .unwrap();
    let by_guid = |guid: &str| {
        let guid = guid.to_owned();
        let store = app.store.clone();
        async move {
            for id in store.feed_item_ids(feed).await.unwrap() {
                if store.item(ann_id, id).await.unwrap().guid.as_deref() == Some(guid.as_str()) {
                    return id;
                }
            }
            panic!("no item {guid}");
        }
    };
    let (hot, warm, tied, cold, unknown, older) = (
        by_guid("hot").await,
        by_guid("warm").await,
        by_guid("tied").await,
        by_guid("cold").await,
        by_guid("unknown").await,
        by_guid("older").await,
    );
    let bobs = app.store.feed_item_ids(other).await.unwrap()[0];
    let counts = [
        (hot, 120),
        (warm, 8),
        (tied, 8),
        (cold, 0),
        (older, 500),
        (bobs, 1000),
    ];
    app.store
        .save_popularity("hatena", "test", &counts, now - 60, 0)
        .await
        .unwrap();
    Popular {
        feed,
        now,
        hot,
        warm,
        tied,
        cold,
        unknown,
        older,
        bobs,
    }
}

/// Listings carry known counts, 0 as a count and null while unknown; so do one item and search
/// results.
async fn phase_counts_in_listings_one_item_and_search(
    app: &TestApp,
    ann: &reqwest::Client,
    p: &Popular,
) {
    let Popular {
        now,
        hot,
        warm,
        cold,
        unknown,
        ..
    } = *p;
    // Listings: known counts, 0 as a count, null while unknown.
    let (status, _, body) = get(app, ann, "/items?filter=all").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for listed in body["items"].as_array().unwrap() {
        let id = listed["id"].as_i64().unwrap();
        let popularity = &listed["popularity"];
        if id == unknown {
            assert!(popularity.is_null(), "{listed}");
        } else {
            assert!(popularity.is_object(), "{listed}");
            assert_eq!(
                popularity["fetched_at"],
                tidings_server::api::time(now - 60)
            );
        }
        if id == cold {
            assert_eq!(popularity["count"], 0);
        }
        if id == hot {
            assert_eq!(popularity["count"], 120);
        }
    }
    let (_, _, body) = get(app, ann, "/items?filter=all&include=content&limit=2").await;
    assert!(body["items"][0].get("popularity").is_some(), "{body}");
    // One item, and search results.
    let (_, _, body) = get(app, ann, &format!("/items/{hot}")).await;
    assert_eq!(body["item"]["popularity"]["count"], 120, "{body}");
    let (_, _, body) = get(app, ann, &format!("/items/{unknown}")).await;
    assert!(body["item"]["popularity"].is_null(), "{body}");
    assert!(body["item"].get("popularity").is_some());
    let (status, _, body) = get(app, ann, "/items?filter=all&q=story").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let found = body["items"].as_array().unwrap();
    assert!(!found.is_empty());
    for listed in found {
        let expected = if listed["id"].as_i64() == Some(unknown) {
            Value::Null
        } else {
            listed["popularity"].clone()
        };
        assert_eq!(listed["popularity"], expected);
        if listed["id"].as_i64() == Some(warm) {
            assert_eq!(listed["popularity"]["count"], 8);
        }
    }
}

/// The hot list: the last 24 h by count, then newest, the unknown and the 0 not hot; windows,
/// minimum counts and a feed; pages that follow each other; read and starred filters; only the
/// user's own subscriptions.
async fn phase_hot_list_by_count_pages_filters_and_owner(
    app: &TestApp,
    ann: &reqwest::Client,
    bob: &reqwest::Client,
    p: &Popular,
) {
    let Popular {
        feed,
        hot,
        warm,
        tied,
        cold,
        older,
        bobs,
        ..
    } = *p;
    let (status, _, body) = get(app, ann, "/items/hot").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body), [hot, tied, warm]);
    assert_eq!(body["items"][0]["popularity"]["count"], 120);
    assert_eq!(body["has_more"], false);
    assert!(body["next_cursor"].is_null());
    let (_, _, body) = get(app, ann, "/items/hot?window=24h&min_count=0").await;
    assert_eq!(ids(&body), [hot, tied, warm, cold]);
    let (_, _, body) = get(app, ann, "/items/hot?window=7d&min_count=10").await;
    assert_eq!(ids(&body), [older, hot]);
    let (_, _, body) = get(app, ann, &format!("/items/hot?window=30d&feed_id={feed}")).await;
    assert_eq!(ids(&body), [older, hot, tied, warm]);
    // Pages follow each other.
    let mut paged = Vec::new();
    let mut path = "/items/hot?window=30d&limit=1".to_owned();
    loop {
        let (status, _, body) = get(app, ann, &path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        paged.extend(ids(&body));
        match body["next_cursor"].as_str() {
            Some(cursor) => {
                assert_eq!(body["has_more"], true);
                path = format!("/items/hot?window=30d&limit=1&cursor={cursor}");
            }
            None => break,
        }
    }
    assert_eq!(paged, [older, hot, tied, warm]);
    // Read and starred filters.
    call(
        ann,
        Method::PUT,
        &app.url(&format!("/items/{hot}/state")),
        Some(serde_json::json!({"is_read": true, "is_starred": true})),
    )
    .await;
    let (_, _, body) = get(app, ann, "/items/hot?filter=unread").await;
    assert_eq!(ids(&body), [tied, warm]);
    let (_, _, body) = get(app, ann, "/items/hot?filter=starred").await;
    assert_eq!(ids(&body), [hot]);
    // Only the user's own subscriptions.
    let (_, _, body) = get(app, bob, "/items/hot?window=30d").await;
    assert_eq!(ids(&body), [bobs]);
    let (status, _, body) = get(app, bob, &format!("/items/hot?feed_id={feed}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// Clear errors: bad parameters are validation errors, no session an auth error.
async fn phase_hot_list_clear_errors(app: &TestApp, ann: &reqwest::Client) {
    for bad in [
        "/items/hot?window=1y",
        "/items/hot?min_count=-1",
        "/items/hot?filter=popular",
        "/items/hot?limit=0",
        "/items/hot?cursor=nonsense",
        "/items/hot?order=newest",
    ] {
        let (status, _, body) = get(app, ann, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"]["category"], "validation", "{bad}: {body}");
    }
    let (status, _, body) = call(&app.browser(), Method::GET, &app.url("/items/hot"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["category"], "auth", "{body}");
}

#[tokio::test]
async fn the_openapi_document_describes_popularity_and_the_hot_list() {
    let document = serde_json::to_value(tidings_server::api::openapi()).unwrap();
    let hot = &document["paths"]["/api/v1/items/hot"]["get"];
    assert!(hot.is_object(), "no /items/hot in the document");
    let parameters = hot["parameters"].as_array().unwrap();
    let window = parameters.iter().find(|p| p["name"] == "window").unwrap();
    assert_eq!(
        window["schema"]["enum"],
        serde_json::json!(["24h", "7d", "30d"])
    );
    let summary = &document["components"]["schemas"]["ItemSummaryView"]["properties"];
    assert!(summary["popularity"].is_object(), "{summary}");
    let view = &document["components"]["schemas"]["PopularityView"]["properties"];
    assert_eq!(view["fetched_at"]["format"], "date-time");
}
