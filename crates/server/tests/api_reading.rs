//! Reading over HTTP against a real server, on both engines: groups, items and their
//! pagination while items arrive, state, mark-read and its "before" rule, counts, updated
//! since, bookmarks that outlive their items, preferences; every error code, isolation
//! between users, read-only keys. Items are put into the store directly.

use tidings_testkit::on_both_engines;

use tidings_testkit::follow as subscribe;

use std::collections::HashSet;

use crate::support::{TestApp, assert_error, call};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::{NewItem, Store, SubscriptionChanges};

/// Publication times of the test items: item n at `BASE + n minutes`.
const BASE: i64 = 1_760_000_000;

fn item(guid: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://example.com/{guid}")),
        title: Some(format!("Item {guid}")),
        author: Some("Ann Author".into()),
        content: Some(format!("<p>Full text of {guid}</p>")),
        summary: Some(format!("<p>Summary of {guid}</p>")),
        published: Some(published),
        ..NewItem::default()
    }
}

async fn add_items(store: &Store, feed_id: i64, prefix: &str, range: std::ops::Range<i64>) {
    let items: Vec<NewItem> = range
        .map(|n| item(&format!("{prefix}-{n}"), BASE + n * 60))
        .collect();
    store.upsert_items(feed_id, &items, BASE).await.unwrap();
}

fn rfc3339(secs: i64) -> String {
    tidings_server::api::time(secs)
}

fn ids(body: &Value) -> Vec<i64> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {body}"))
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

/// An API key of the user signed in with `browser`.
async fn api_key(app: &TestApp, browser: &Client, scope: &str) -> Client {
    let (status, _, body) = call(
        browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": scope, "scope": scope})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let key = body["key"].as_str().unwrap().to_string();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {key}").parse().unwrap(),
    );
    Client::builder().default_headers(headers).build().unwrap()
}

on_both_engines!(
    groups_are_listed_created_renamed_ordered_and_deleted,
    |db| {
        let app = TestApp::start(db).await;
        let ann_id = app.user("ann", false).await;
        let ann = app.signed_in("ann").await;
        let (status, _, body) = call(&ann, Method::GET, &app.url("/groups"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["groups"].as_array().unwrap().len(), 1);
        assert_eq!(body["groups"][0]["is_default"], true);
        let default_id = body["groups"][0]["id"].as_i64().unwrap();

        let (status, _, body) = call(
            &ann,
            Method::POST,
            &app.url("/groups"),
            Some(json!({"name": "  Tech   news "})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["group"]["name"], "Tech news");
        let tech = body["group"]["id"].as_i64().unwrap();
        let (status, _, body) = call(
            &ann,
            Method::POST,
            &app.url("/groups"),
            Some(json!({"name": "Tech news"})),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_error(&body, "conflict", "validation");
        for (bad, expected, code) in [
            (
                json!({"name": "   "}),
                StatusCode::BAD_REQUEST,
                "invalid_request",
            ),
            (
                json!({"name": "x".repeat(101)}),
                StatusCode::BAD_REQUEST,
                "too_long",
            ),
        ] {
            let (status, _, body) = call(&ann, Method::POST, &app.url("/groups"), Some(bad)).await;
            assert_eq!(status, expected);
            assert_error(&body, code, "validation");
        }
        let (status, _, body) = call(
            &ann,
            Method::POST,
            &app.url("/groups"),
            Some(json!({"title": "wrong field"})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_error(&body, "invalid_request", "validation");

        let group_url = app.url(&format!("/groups/{tech}"));
        let (status, _, body) = call(
            &ann,
            Method::PATCH,
            &group_url,
            Some(json!({"name": "Technology", "position": 7})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["group"]["name"], "Technology");
        assert_eq!(body["group"]["position"], 7);
        for bad in [json!({}), json!({"position": -1})] {
            let (status, _, body) = call(&ann, Method::PATCH, &group_url, Some(bad)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST);
            assert_error(&body, "invalid_request", "validation");
        }

        // Deleting moves the group's subscriptions to the default group.
        let (sub, _) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
        app.store
            .update_subscription(
                ann_id,
                sub,
                &SubscriptionChanges {
                    group_id: Some(tech),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let (status, _, _) = call(&ann, Method::DELETE, &group_url, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(
            app.store.subscription(ann_id, sub).await.unwrap().group_id,
            default_id
        );
        let (status, _, body) = call(&ann, Method::DELETE, &group_url, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_error(&body, "not_found", "validation");
        let (status, _, body) = call(
            &ann,
            Method::DELETE,
            &app.url(&format!("/groups/{default_id}")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_error(&body, "invalid_request", "validation");
        let (status, _, _) =
            call(&ann, Method::DELETE, &app.url("/groups/not-a-number"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
);

on_both_engines!(items_are_listed_shown_and_their_state_set, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (sub_a, feed_a) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
    let (_, feed_b) = subscribe(&app.store, ann_id, "https://b.example/feed").await;
    app.store
        .update_subscription(
            ann_id,
            sub_a,
            &SubscriptionChanges {
                title: Some(Some("My A".into())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    add_items(&app.store, feed_a, "a", 0..30).await;
    add_items(&app.store, feed_b, "b", 0..30).await;
    let undated = NewItem {
        published: None,
        ..item("undated", 0)
    };
    app.store
        .upsert_items(feed_b, &[undated], BASE + 3600 * 24)
        .await
        .unwrap();

    // The default: unread, newest first, 50 a page.
    let (status, _, body) = call(&ann, Method::GET, &app.url("/items"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"].as_array().unwrap().len(), 50);
    assert_eq!(body["has_more"], true);
    let first = &body["items"][0];
    assert_eq!(first["title"], "Item undated");
    assert_eq!(first["is_date_estimated"], true);
    assert_eq!(first["is_read"], false);
    assert_eq!(first["feed_id"], feed_b);
    assert!(first.get("content").is_none(), "listings carry no content");
    // a-29 and b-29 share a time; the larger id (b-29) comes first.
    assert_eq!(body["items"][1]["url"], "https://example.com/b-29");
    let second = &body["items"][2];
    assert_eq!(second["feed_title"], "My A", "the user's own title");
    assert_eq!(second["published_at"], rfc3339(BASE + 29 * 60));
    assert_eq!(second["url"], "https://example.com/a-29");
    assert_eq!(second["author"], "Ann Author");
    assert_eq!(second["summary"], "<p>Summary of a-29</p>");
    assert_eq!(second["is_date_estimated"], false);
    let cursor = body["next_cursor"].as_str().unwrap().to_string();
    let (_, _, page2) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/items?cursor={cursor}")),
        None,
    )
    .await;
    assert_eq!(page2["items"].as_array().unwrap().len(), 11);
    assert_eq!(page2["has_more"], false);
    assert_eq!(page2["next_cursor"], Value::Null);

    // One feed, oldest first, a time window.
    let (_, _, body) = call(
        &ann,
        Method::GET,
        &app.url(&format!(
            "/items?feed_id={feed_a}&order=oldest&filter=all&since={}&until={}",
            rfc3339(BASE + 5 * 60),
            rfc3339(BASE + 8 * 60)
        )),
        None,
    )
    .await;
    let titles: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Item a-5", "Item a-6", "Item a-7"]);

    // The detail, with content; state changes, idempotent.
    let item_id = ids(&body)[0];
    phase_detail_state_and_bad_queries(&app, &ann, item_id, sub_a).await;
});

/// A mark sent later than it was made (`at`, as the web app sends marks made offline): a
/// change made on the server after that time wins; a mark made after the last change acts.
async fn phase_marks_made_earlier(ann: &Client, state_url: &str, item_id: i64) {
    let now = chrono::Utc::now();
    let earlier = (now - chrono::Duration::minutes(5)).to_rfc3339();
    // The item was made unread just now; an offline "read" of five minutes ago loses.
    let (status, _, body) = call(
        ann,
        Method::PUT,
        state_url,
        Some(json!({"is_read": true, "at": earlier})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"item_id": item_id, "is_read": false, "is_starred": true})
    );
    let later = (now + chrono::Duration::seconds(2)).to_rfc3339();
    let (_, _, body) = call(
        ann,
        Method::PUT,
        state_url,
        Some(json!({"is_starred": false, "at": later})),
    )
    .await;
    assert_eq!(
        body,
        json!({"item_id": item_id, "is_read": false, "is_starred": false})
    );
    let (_, _, body) = call(
        ann,
        Method::PUT,
        state_url,
        Some(json!({"is_starred": true})),
    )
    .await;
    assert_eq!(body["is_starred"], true);
    let (status, _, body) = call(
        ann,
        Method::PUT,
        state_url,
        Some(json!({"is_read": true, "at": "yesterday"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
}

/// The detail with content, state changes (idempotent), and malformed query parameters as
/// 400 with the JSON error body.
async fn phase_detail_state_and_bad_queries(app: &TestApp, ann: &Client, item_id: i64, sub_a: i64) {
    let (status, _, body) = call(
        ann,
        Method::GET,
        &app.url(&format!("/items/{item_id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["item"]["content"], "<p>Full text of a-5</p>");
    assert_eq!(body["item"]["guid"], "a-5");
    assert_eq!(body["item"]["subscription_id"], sub_a);
    let state_url = app.url(&format!("/items/{item_id}/state"));
    for _ in 0..2 {
        let (status, _, body) = call(
            ann,
            Method::PUT,
            &state_url,
            Some(json!({"is_read": true, "is_starred": true})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"item_id": item_id, "is_read": true, "is_starred": true})
        );
    }
    let (_, _, body) = call(
        ann,
        Method::PUT,
        &state_url,
        Some(json!({"is_read": false})),
    )
    .await;
    assert_eq!(
        body,
        json!({"item_id": item_id, "is_read": false, "is_starred": true})
    );
    let (_, _, body) = call(ann, Method::GET, &app.url("/items?filter=starred"), None).await;
    assert_eq!(ids(&body), vec![item_id]);
    phase_marks_made_earlier(ann, &state_url, item_id).await;
    let (status, _, body) = call(ann, Method::PUT, &state_url, Some(json!({}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
    let (status, _, body) = call(
        ann,
        Method::PUT,
        &state_url,
        Some(json!({"is_read": "yes"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
    let (status, _, body) = call(
        ann,
        Method::PUT,
        &app.url("/items/999999/state"),
        Some(json!({"is_read": true})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found", "validation");
    let response = ann
        .put(&state_url)
        .header("content-type", "application/json")
        .body("{\"is_read\": tru")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_error(
        &response.json().await.unwrap(),
        "malformed_json",
        "validation",
    );

    // Malformed query parameters are 400 with the JSON error body.
    for query in [
        "limit=abc",
        "limit=0",
        "limit=201",
        "filter=bogus",
        "order=sideways",
        "since=yesterday",
        "until=2026-13-01T00:00:00Z",
        "cursor=not-a-cursor",
        "feed_id=x",
        "colour=blue",
    ] {
        let (status, _, body) =
            call(ann, Method::GET, &app.url(&format!("/items?{query}")), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_error(&body, "invalid_request", "validation");
    }
    let (status, _, body) = call(ann, Method::GET, &app.url("/items?feed_id=999999"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

on_both_engines!(pages_neither_skip_nor_repeat_while_items_arrive, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, feed_a) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
    let (_, feed_b) = subscribe(&app.store, ann_id, "https://b.example/feed").await;
    add_items(&app.store, feed_a, "a", 0..45).await;
    add_items(&app.store, feed_b, "b", 0..45).await; // the same times: ties broken by id
    let mut originals = HashSet::new();
    for feed in [feed_a, feed_b] {
        originals.extend(app.store.feed_item_ids(feed).await.unwrap());
    }

    for (filter, order) in [
        ("all", "newest"),
        ("unread", "newest"),
        ("all", "oldest"),
        ("unread", "oldest"),
    ] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut round = 0;
        loop {
            let mut path = format!("/items?filter={filter}&order={order}&limit=20");
            if let Some(cursor) = &cursor {
                path.push_str(&format!("&cursor={cursor}"));
            }
            let (status, _, body) = call(&ann, Method::GET, &app.url(&path), None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            seen.extend(ids(&body));
            // Between pages, items arrive: newer than all, and dated amid the pages.
            round += 1;
            let prefix = format!("{filter}-{order}-{round}");
            add_items(&app.store, feed_a, &format!("new-{prefix}"), 1000..1002).await;
            app.store
                .upsert_items(
                    feed_b,
                    &[item(&format!("mid-{prefix}"), BASE + 20 * 60 + 30)],
                    BASE,
                )
                .await
                .unwrap();
            if body["has_more"] == false {
                break;
            }
            cursor = Some(body["next_cursor"].as_str().unwrap().to_string());
        }
        let unique: HashSet<i64> = seen.iter().copied().collect();
        assert_eq!(
            unique.len(),
            seen.len(),
            "{filter} {order}: an item came twice"
        );
        assert!(
            originals.is_subset(&unique),
            "{filter} {order}: an item was skipped"
        );
    }
});

on_both_engines!(mark_read_counts_and_the_before_rule, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (sub_a, feed_a) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
    let (sub_b, feed_b) = subscribe(&app.store, ann_id, "https://b.example/feed").await;
    let group = app.store.create_group(ann_id, "Later").await.unwrap();
    app.store
        .update_subscription(
            ann_id,
            sub_b,
            &SubscriptionChanges {
                group_id: Some(group.id),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    add_items(&app.store, feed_a, "a", 0..10).await;
    add_items(&app.store, feed_b, "b", 0..4).await;

    let (status, _, counts) = call(&ann, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(counts["unread"], 14);
    assert_eq!(counts["starred"], 0);
    let per_group: Vec<(i64, i64)> = counts["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group_id"].as_i64().unwrap(),
                g["unread"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(per_group.contains(&(group.id, 4)), "{counts}");
    let sub_count = |counts: &Value, sub: i64| -> i64 {
        counts["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["subscription_id"] == sub)
            .unwrap()["unread"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(sub_count(&counts, sub_a), 10);

    // The user loaded the list at "T" = just after item a-5; then items arrive: a new one,
    // and a late one dated before T. Marking the feed read before T keeps both unread.
    let loaded_at = BASE + 5 * 60 + 30;
    app.store
        .upsert_items(
            feed_a,
            &[item("arrived", BASE + 3600), item("late", BASE + 60 + 1)],
            BASE + 7200,
        )
        .await
        .unwrap();
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"feed_id": feed_a, "before": rfc3339(loaded_at)})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // a-0..a-5 and the late item dated before T: 7.
    assert_eq!(body["marked"], 7);
    let (_, _, unread) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/items?feed_id={feed_a}")),
        None,
    )
    .await;
    let titles: Vec<&str> = unread["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Item arrived",
            "Item a-9",
            "Item a-8",
            "Item a-7",
            "Item a-6"
        ]
    );
    // An item that arrives after the mark, dated before T, is not hidden under it.
    app.store
        .upsert_items(
            feed_a,
            &[item("later-still", BASE + 2 * 60 + 1)],
            BASE + 9000,
        )
        .await
        .unwrap();
    let (_, _, counts) = call(&ann, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(sub_count(&counts, sub_a), 6);

    // By ids, by group, everything.
    let some = ids(&unread)[..2].to_vec();
    let (_, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"ids": some})),
    )
    .await;
    assert_eq!(body["marked"], 2);
    let (_, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"group_id": group.id})),
    )
    .await;
    assert_eq!(body["marked"], 4);
    let (_, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"all": true})),
    )
    .await;
    assert_eq!(body["marked"], 4);
    let (_, _, counts) = call(&ann, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(counts["unread"], 0);
    let (_, _, body) = call(&ann, Method::GET, &app.url("/items"), None).await;
    assert!(ids(&body).is_empty());
    let (_, _, subs) = call(&ann, Method::GET, &app.url("/subscriptions"), None).await;
    if let Some(list) = subs["subscriptions"].as_array() {
        assert!(list.iter().all(|s| s["unread_count"] == 0), "{subs}");
    }

    phase_wrong_requests_and_updated_since(&app, &ann, sub_a, feed_a).await;
});

/// Wrong mark-read requests are refused; "updated since" lists only the feed with items that
/// arrived after the time.
async fn phase_wrong_requests_and_updated_since(
    app: &TestApp,
    ann: &Client,
    sub_a: i64,
    feed_a: i64,
) {
    // Wrong requests.
    for bad in [
        json!({}),
        json!({"feed_id": feed_a, "all": true}),
        json!({"all": false}),
        json!({"feed_id": feed_a, "before": "last tuesday"}),
        json!({"ids": "1,2"}),
        json!({"ids": (0..1001).collect::<Vec<i64>>()}),
    ] {
        let (status, _, body) = call(
            ann,
            Method::POST,
            &app.url("/items/mark-read"),
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_error(&body, "invalid_request", "validation");
    }
    let (status, _, _) = call(
        ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"feed_id": 999999})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Updated since: only the feed with items that arrived after the time.
    let (status, _, body) = call(
        ann,
        Method::GET,
        &app.url(&format!(
            "/items/updated-feeds?since={}",
            rfc3339(BASE + 8000)
        )),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let updated = body["subscriptions"].as_array().unwrap();
    assert_eq!(updated.len(), 1, "{body}");
    assert_eq!(updated[0]["subscription_id"], sub_a);
    assert_eq!(updated[0]["new_items"], 1);
    assert_eq!(updated[0]["last_arrived_at"], rfc3339(BASE + 9000));
    for query in ["", "?since=soon", "?since=2026-01-01T00:00:00Z&x=1"] {
        let (status, _, body) = call(
            ann,
            Method::GET,
            &app.url(&format!("/items/updated-feeds{query}")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_error(&body, "invalid_request", "validation");
    }
}

on_both_engines!(
    bookmarks_keep_their_snapshot_after_item_and_feed_deletion,
    |db| {
        let app = TestApp::start(db).await;
        let ann_id = app.user("ann", false).await;
        let ann = app.signed_in("ann").await;
        let (sub, feed) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
        add_items(&app.store, feed, "a", 0..2).await;
        let item_ids = app.store.feed_item_ids(feed).await.unwrap();

        let (status, _, created) = call(
            &ann,
            Method::POST,
            &app.url("/bookmarks"),
            Some(json!({"item_id": item_ids[0]})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let bookmark = &created["bookmark"];
        assert_eq!(bookmark["title"], "Item a-1");
        assert_eq!(bookmark["url"], "https://example.com/a-1");
        assert_eq!(bookmark["content"], "<p>Full text of a-1</p>");
        assert_eq!(bookmark["feed_title"], "https://a.example/feed");
        assert_eq!(bookmark["published_at"], rfc3339(BASE + 60));
        let id = bookmark["id"].as_i64().unwrap();
        let (status, _, again) = call(
            &ann,
            Method::POST,
            &app.url("/bookmarks"),
            Some(json!({"item_id": item_ids[0]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(again["bookmark"]["id"], id);
        for (bad, expected) in [
            (json!({"item_id": 999999}), StatusCode::NOT_FOUND),
            (json!({}), StatusCode::BAD_REQUEST),
            (json!({"item_id": "one"}), StatusCode::BAD_REQUEST),
        ] {
            let (status, _, body) =
                call(&ann, Method::POST, &app.url("/bookmarks"), Some(bad)).await;
            assert_eq!(status, expected, "{body}");
        }

        // The item, then the feed, are deleted: the snapshot stays.
        app.store.unsubscribe(ann_id, sub).await.unwrap();
        app.store
            .execute_raw(&format!("DELETE FROM feeds WHERE id = {feed}"))
            .await
            .unwrap();
        let (status, _, list) = call(&ann, Method::GET, &app.url("/bookmarks"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(list["bookmarks"].as_array().unwrap().len(), 1);
        assert_eq!(list["bookmarks"][0]["item_id"], Value::Null);
        assert!(list["bookmarks"][0].get("content").is_none());
        let url = app.url(&format!("/bookmarks/{id}"));
        let (status, _, one) = call(&ann, Method::GET, &url, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(one["bookmark"]["title"], "Item a-1");
        assert_eq!(one["bookmark"]["content"], "<p>Full text of a-1</p>");
        let (status, _, _) = call(&ann, Method::DELETE, &url, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, _, body) = call(&ann, Method::GET, &url, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_error(&body, "not_found", "validation");
    }
);

on_both_engines!(preferences_are_read_and_validated, |db| {
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let url = app.url("/preferences");
    let (status, _, body) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["preferences"]["theme"], "auto");
    assert_eq!(body["preferences"]["page_size"], 50);
    assert_eq!(body["preferences"]["default_view"], "unread");
    assert_eq!(body["preferences"]["mark_read_on_scroll"], false);
    let (status, _, body) = call(
        &ann,
        Method::PUT,
        &url,
        Some(
            json!({"theme": "Dark", "page_size": 100, "show_images": false,
                    "mark_read_on_open": false, "mark_read_on_scroll": true,
                    "default_view": "all"}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["preferences"]["theme"], "dark");
    assert_eq!(body["preferences"]["page_size"], 100);
    assert_eq!(body["preferences"]["show_images"], false);
    assert_eq!(body["preferences"]["mark_read_on_open"], false);
    assert_eq!(body["preferences"]["mark_read_on_scroll"], true);
    assert_eq!(body["preferences"]["default_view"], "all");
    assert!(body["preferences"]["updated_at"].is_string());
    for bad in [
        json!({"theme": "neon"}),
        json!({"page_size": 9}),
        json!({"page_size": 201}),
        json!({"default_view": "magazine"}),
        json!({"show_images": "no"}),
        json!({"font": "serif"}),
    ] {
        let (status, _, body) = call(&ann, Method::PUT, &url, Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_error(&body, "invalid_request", "validation");
    }
    let (_, _, body) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(
        body["preferences"]["theme"], "dark",
        "a refused change changes nothing"
    );
    // The UI's language (issue 34): auto by default; the languages the UI has a catalog for;
    // anything else refused with the list.
    assert_eq!(body["preferences"]["language"], "auto");
    for language in ["ja", "zh-Hans", "en", "auto"] {
        let (status, _, body) =
            call(&ann, Method::PUT, &url, Some(json!({"language": language}))).await;
        assert_eq!(status, StatusCode::OK, "{language}: {body}");
        assert_eq!(body["preferences"]["language"], language);
        let (_, _, body) = call(&ann, Method::GET, &url, None).await;
        assert_eq!(body["preferences"]["language"], language);
    }
    for bad in ["fr", "JA", "zh-CN", "", "ja; x"] {
        let (status, _, body) = call(&ann, Method::PUT, &url, Some(json!({"language": bad}))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_error(&body, "invalid_request", "validation");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("auto or one of en, ja, zh-Hans"),
            "{message}"
        );
    }
    let (_, _, body) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(body["preferences"]["language"], "auto");
});

on_both_engines!(
    other_users_objects_are_404_and_read_only_keys_cannot_write,
    |db| {
        let app = TestApp::start(db).await;
        let ann_id = app.user("ann", false).await;
        app.user("eve", false).await;
        let ann = app.signed_in("ann").await;
        let eve = app.signed_in("eve").await;
        let (_, feed) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
        add_items(&app.store, feed, "a", 0..3).await;
        let item_id = app.store.feed_item_ids(feed).await.unwrap()[0];
        let group = app.store.create_group(ann_id, "Mine").await.unwrap().id;
        let (_, _, body) = call(
            &ann,
            Method::POST,
            &app.url("/bookmarks"),
            Some(json!({"item_id": item_id})),
        )
        .await;
        let bookmark = body["bookmark"]["id"].as_i64().unwrap();

        // Every endpoint that takes an id of Ann's answers 404 to Eve, as for no such object.
        let cases: Vec<(Method, String, Option<Value>)> = vec![
            (Method::GET, format!("/items/{item_id}"), None),
            (
                Method::PUT,
                format!("/items/{item_id}/state"),
                Some(json!({"is_read": true})),
            ),
            (Method::GET, format!("/items?feed_id={feed}"), None),
            (Method::GET, format!("/items?group_id={group}"), None),
            (
                Method::POST,
                "/items/mark-read".into(),
                Some(json!({"feed_id": feed})),
            ),
            (
                Method::POST,
                "/items/mark-read".into(),
                Some(json!({"group_id": group})),
            ),
            (
                Method::PATCH,
                format!("/groups/{group}"),
                Some(json!({"name": "Eve's now"})),
            ),
            (Method::DELETE, format!("/groups/{group}"), None),
            (
                Method::POST,
                "/bookmarks".into(),
                Some(json!({"item_id": item_id})),
            ),
            (Method::GET, format!("/bookmarks/{bookmark}"), None),
            (Method::DELETE, format!("/bookmarks/{bookmark}"), None),
        ];
        for (method, path, body) in &cases {
            let (status, _, answer) =
                call(&eve, method.clone(), &app.url(path), body.clone()).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
            assert_error(&answer, "not_found", "validation");
        }
        // Eve's ids marking: Ann's item ids are ignored, not marked.
        let (_, _, body) = call(
            &eve,
            Method::POST,
            &app.url("/items/mark-read"),
            Some(json!({"ids": [item_id]})),
        )
        .await;
        assert_eq!(body["marked"], 0);
        // Nothing of Ann's changed.
        let (_, _, body) = call(
            &ann,
            Method::GET,
            &app.url(&format!("/items/{item_id}")),
            None,
        )
        .await;
        assert_eq!(body["item"]["is_read"], false);
        assert_eq!(app.store.list_groups(ann_id).await.unwrap().len(), 2);
        let (_, _, body) = call(&eve, Method::GET, &app.url("/counts"), None).await;
        assert_eq!(body["unread"], 0);
        assert_eq!(body["subscriptions"], json!([]));

        phase_read_only_keys(&app, &ann, (item_id, group, bookmark), &cases).await;
    }
);

/// A read-only key reads but cannot write, the same writes with a read-write key work, and
/// without credentials every call is a 401.
async fn phase_read_only_keys(
    app: &TestApp,
    ann: &Client,
    (item_id, group, bookmark): (i64, i64, i64),
    cases: &[(Method, String, Option<Value>)],
) {
    // A read-only key reads but cannot write.
    let reader = api_key(app, ann, "read").await;
    for path in ["/items", "/counts", "/groups", "/bookmarks", "/preferences"] {
        let (status, _, body) = call(&reader, Method::GET, &app.url(path), None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    }
    let writes: Vec<(Method, String, Value)> = vec![
        (
            Method::PUT,
            format!("/items/{item_id}/state"),
            json!({"is_read": true}),
        ),
        (
            Method::POST,
            "/items/mark-read".into(),
            json!({"all": true}),
        ),
        (Method::POST, "/groups".into(), json!({"name": "New"})),
        (
            Method::PATCH,
            format!("/groups/{group}"),
            json!({"name": "Renamed"}),
        ),
        (Method::DELETE, format!("/groups/{group}"), Value::Null),
        (
            Method::POST,
            "/bookmarks".into(),
            json!({"item_id": item_id}),
        ),
        (
            Method::DELETE,
            format!("/bookmarks/{bookmark}"),
            Value::Null,
        ),
        (Method::PUT, "/preferences".into(), json!({"theme": "dark"})),
    ];
    for (method, path, body) in &writes {
        let body = (!body.is_null()).then(|| body.clone());
        let (status, _, answer) = call(&reader, method.clone(), &app.url(path), body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_error(&answer, "forbidden", "auth");
    }
    let (_, _, body) = call(
        ann,
        Method::GET,
        &app.url(&format!("/items/{item_id}")),
        None,
    )
    .await;
    assert_eq!(body["item"]["is_read"], false);
    // The same writes with a read-write key work.
    let writer = api_key(app, ann, "read_write").await;
    let (status, _, _) = call(
        &writer,
        Method::PUT,
        &app.url(&format!("/items/{item_id}/state")),
        Some(json!({"is_read": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // Without credentials: 401 everywhere.
    let anonymous = app.browser();
    for (method, path, body) in cases.iter().chain(
        [
            (Method::GET, "/counts".to_string(), None),
            (Method::GET, "/groups".to_string(), None),
            (Method::GET, "/preferences".to_string(), None),
            (
                Method::GET,
                "/items/updated-feeds?since=2026-01-01T00:00:00Z".to_string(),
                None,
            ),
        ]
        .iter(),
    ) {
        let (status, _, answer) =
            call(&anonymous, method.clone(), &app.url(path), body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path}: {answer}"
        );
        assert_error(&answer, "unauthenticated", "auth");
    }
}

on_both_engines!(the_openapi_document_describes_the_reading_endpoints, |db| {
    let app = TestApp::start(db).await;
    let (status, _, doc) = call(&app.browser(), Method::GET, &app.url("/openapi.json"), None).await;
    assert_eq!(status, StatusCode::OK);
    for (path, methods) in [
        ("/api/v1/groups", &["get", "post"][..]),
        ("/api/v1/groups/{id}", &["patch", "delete"][..]),
        ("/api/v1/items", &["get"][..]),
        ("/api/v1/items/{id}", &["get"][..]),
        ("/api/v1/items/{id}/state", &["put"][..]),
        ("/api/v1/items/mark-read", &["post"][..]),
        ("/api/v1/items/updated-feeds", &["get"][..]),
        ("/api/v1/counts", &["get"][..]),
        ("/api/v1/bookmarks", &["get", "post"][..]),
        ("/api/v1/bookmarks/{id}", &["get", "delete"][..]),
        ("/api/v1/preferences", &["get", "put"][..]),
    ] {
        for method in methods {
            assert!(
                doc["paths"][path][method].is_object(),
                "{method} {path} is not documented"
            );
        }
    }
    let params: Vec<&str> = doc["paths"]["/api/v1/items"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "feed_id", "group_id", "filter", "order", "since", "until", "cursor", "limit",
    ] {
        assert!(params.contains(&name), "{name} missing from {params:?}");
    }
    // The UI's language is described where it is read and where it is written.
    for schema in ["PreferencesView", "UpdatePreferences"] {
        let described =
            doc["components"]["schemas"][schema]["properties"]["language"]["description"]
                .as_str()
                .unwrap_or_default();
        assert!(described.contains("zh-Hans"), "{schema}: {described:?}");
    }
});

/// The unread item ids of the user's feed, all pages.
async fn unread_of(app: &TestApp, client: &Client, feed: i64) -> Vec<i64> {
    let (status, _, body) = call(
        client,
        Method::GET,
        &app.url(&format!("/items?feed_id={feed}&limit=200")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    ids(&body)
}

on_both_engines!(
    listings_carry_content_and_mark_read_is_scoped_and_undone,
    |db| {
        let app = TestApp::start(db).await;
        let ann_id = app.user("ann", false).await;
        let ann = app.signed_in("ann").await;
        app.user("eve", false).await;
        let eve = app.signed_in("eve").await;
        let (_, feed_a) = subscribe(&app.store, ann_id, "https://a.example/feed").await;
        let (_, feed_b) = subscribe(&app.store, ann_id, "https://b.example/feed").await;
        add_items(&app.store, feed_a, "a", 0..10).await;
        let mut episode = item("b-0", BASE);
        episode.enclosures = vec![tidings_store::Enclosure {
            url: "https://b.example/ep0.mp3".into(),
            mime_type: Some("audio/mpeg".into()),
            length: Some(48_213_000),
        }];
        app.store
            .upsert_items(feed_b, &[episode], BASE)
            .await
            .unwrap();
        add_items(&app.store, feed_b, "b", 1..5).await;

        // include=content: what an opened item shows comes with the listing.
        let (status, _, body) = call(
            &ann,
            Method::GET,
            &app.url(&format!("/items?feed_id={feed_b}&include=content")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let listed = body["items"].as_array().unwrap();
        assert_eq!(listed.len(), 5);
        let b0 = listed.iter().find(|i| i["title"] == "Item b-0").unwrap();
        assert_eq!(b0["content"], "<p>Full text of b-0</p>");
        assert_eq!(
            b0["enclosures"],
            json!([{"url": "https://b.example/ep0.mp3", "mime_type": "audio/mpeg", "length": 48_213_000}])
        );
        assert!(listed.iter().all(|i| i["enclosures"].is_array()), "{body}");
        let (_, _, plain) = call(
            &ann,
            Method::GET,
            &app.url(&format!("/items?feed_id={feed_b}")),
            None,
        )
        .await;
        assert!(plain["items"][0].get("content").is_none(), "{plain}");
        assert!(plain["items"][0].get("enclosures").is_none(), "{plain}");
        let (status, _, body) = call(
            &ann,
            Method::GET,
            &app.url("/items?include=everything"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_error(&body, "invalid_request", "validation");

        // Star a-1, a-2 and b-0; a-2 is read already.
        let a_ids = unread_of(&app, &ann, feed_a).await; // newest first: a-9 … a-0
        let b_ids = unread_of(&app, &ann, feed_b).await;
        let (a1, a2, b0) = (a_ids[8], a_ids[7], b_ids[4]);
        for (id, change) in [
            (a1, json!({"is_starred": true})),
            (a2, json!({"is_starred": true, "is_read": true})),
            (b0, json!({"is_starred": true})),
        ] {
            let (status, _, body) = call(
                &ann,
                Method::PUT,
                &app.url(&format!("/items/{id}/state")),
                Some(change),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        let a_before = unread_of(&app, &ann, feed_a).await;
        let b_before = unread_of(&app, &ann, feed_b).await;
        assert_eq!((a_before.len(), b_before.len()), (9, 5));

        // In Starred, "mark all read" marks the starred items only.
        let (status, _, marked) = call(
            &ann,
            Method::POST,
            &app.url("/items/mark-read"),
            Some(json!({"starred": true, "before": rfc3339(BASE + 86_400)})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{marked}");
        assert_eq!(marked["marked"], 2);
        assert_eq!(unread_of(&app, &ann, feed_a).await.len(), 8);
        assert_eq!(unread_of(&app, &ann, feed_b).await.len(), 4);
        // Eve cannot undo Ann's marks with Ann's answer.
        let (status, _, body) = call(
            &eve,
            Method::POST,
            &app.url("/items/mark-read/undo"),
            Some(marked["undo"].clone()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["restored"], 0);
        assert_eq!(unread_of(&app, &ann, feed_a).await.len(), 8);
        // Undo restores exactly the state before.
        let (status, _, body) = call(
            &ann,
            Method::POST,
            &app.url("/items/mark-read/undo"),
            Some(marked["undo"].clone()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["restored"], 2);
        assert_eq!(unread_of(&app, &ann, feed_a).await, a_before);
        assert_eq!(unread_of(&app, &ann, feed_b).await, b_before);

        // Starred within one feed.
        let (_, _, marked) = call(
            &ann,
            Method::POST,
            &app.url("/items/mark-read"),
            Some(json!({"starred": true, "feed_id": feed_b})),
        )
        .await;
        assert_eq!(marked["marked"], 1);
        assert_eq!(unread_of(&app, &ann, feed_a).await, a_before);
        call(
            &ann,
            Method::POST,
            &app.url("/items/mark-read/undo"),
            Some(marked["undo"].clone()),
        )
        .await;

        phase_feed_and_everything_undone(&app, &ann, (feed_a, feed_b), a1, (&a_before, &b_before))
            .await;
    }
);

/// A feed, a watermark and an explicit unread row under it, then everything: each undone
/// exactly, and an item read by hand before stays read; then the wrong requests.
async fn phase_feed_and_everything_undone(
    app: &TestApp,
    ann: &Client,
    (feed_a, feed_b): (i64, i64),
    a1: i64,
    (a_before, b_before): (&[i64], &[i64]),
) {
    // A feed, a watermark and an explicit unread row under it, then everything: each
    // undone exactly, and a-2 (read by hand before) stays read.
    for scope in [json!({"feed_id": feed_a}), json!({"all": true})] {
        let (status, _, marked) = call(
            ann,
            Method::POST,
            &app.url("/items/mark-read"),
            Some(scope.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{marked}");
        assert!(marked["marked"].as_u64().unwrap() >= 9, "{scope}: {marked}");
        assert!(unread_of(app, ann, feed_a).await.is_empty());
        let (_, _, body) = call(
            ann,
            Method::POST,
            &app.url("/items/mark-read/undo"),
            Some(marked["undo"].clone()),
        )
        .await;
        assert_eq!(body["restored"], marked["marked"], "{scope}");
        assert_eq!(unread_of(app, ann, feed_a).await, a_before, "{scope}");
        assert_eq!(unread_of(app, ann, feed_b).await, b_before, "{scope}");
    }
    call(
        ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"feed_id": feed_a})),
    )
    .await;
    call(
        ann,
        Method::PUT,
        &app.url(&format!("/items/{a1}/state")),
        Some(json!({"is_read": false})),
    )
    .await;
    let (_, _, marked) = call(
        ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"feed_id": feed_a})),
    )
    .await;
    assert_eq!(marked["marked"], 1);
    assert_eq!(marked["undo"]["item_ids"], json!([a1]));
    call(
        ann,
        Method::POST,
        &app.url("/items/mark-read/undo"),
        Some(marked["undo"].clone()),
    )
    .await;
    assert_eq!(unread_of(app, ann, feed_a).await, [a1]);

    // Wrong requests.
    for bad in [
        json!({"starred": true, "ids": [a1]}),
        json!({"starred": false, "all": true}),
        json!({"starred": true, "feed_id": feed_a, "group_id": 1}),
    ] {
        let (status, _, body) = call(
            ann,
            Method::POST,
            &app.url("/items/mark-read"),
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_error(&body, "invalid_request", "validation");
    }
    let (status, _, _) = call(
        ann,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"starred": true, "feed_id": 999_999})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, body) = call(
        ann,
        Method::POST,
        &app.url("/items/mark-read/undo"),
        Some(json!({"watermarks": [], "item_ids": (0..10_001).collect::<Vec<i64>>()})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (_, _, counts) = call(ann, Method::GET, &app.url("/counts"), None).await;
    assert!(
        counts["as_of"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{counts}"
    );
}
