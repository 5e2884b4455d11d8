//! Usage counts (F45) through the API on both engines: clicks on items' links and settled
//! searches counted per day under one normalized spelling, the administrators' report of a
//! day or a range, 403 for everyone else, nothing stored when counting is off, and nothing
//! about who anywhere.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, assert_error, call};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::{NewItem, NewSubscription, UsageKind, unix_now, usage_day};

/// Subscribes `user_id` to a feed with `n` items titled `Story 0`…; returns the item ids,
/// newest first.
async fn items_of(app: &TestApp, user_id: i64, n: usize) -> Vec<i64> {
    let subscription = app
        .store
        .subscribe(
            user_id,
            &NewSubscription {
                feed_url: "https://usage.example/feed".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let now = unix_now();
    let items: Vec<NewItem> = (0..n)
        .map(|i| NewItem {
            guid: Some(format!("g{i}")),
            title: Some(format!("Story {i}")),
            url: Some(format!("https://usage.example/{i}")),
            published: Some(now - i as i64),
            ..Default::default()
        })
        .collect();
    app.store
        .upsert_items(subscription.feed_id, &items, now)
        .await
        .unwrap();
    app.store.feed_item_ids(subscription.feed_id).await.unwrap()
}

/// Reports a settled search as `client`; returns the status and body.
async fn settle(app: &TestApp, client: &reqwest::Client, q: &str) -> (StatusCode, Value) {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/usage/searches"),
        Some(json!({"q": q})),
    )
    .await;
    (status, body)
}

fn day_text(day: i64) -> String {
    (chrono::NaiveDate::default() + chrono::Duration::days(day)).to_string()
}

on_both_engines!(clicks_and_settled_searches_reach_the_admins_report, |db| {
    let app = TestApp::start(db).await;
    app.user("root", true).await;
    let alice_id = app.user("alice", false).await;
    app.user("mallory", false).await;
    let ids = items_of(&app, alice_id, 3).await;
    let alice = app.signed_in("alice").await;
    let mallory = app.signed_in("mallory").await;
    let root = app.signed_in("root").await;

    let click = |id: i64| app.url(&format!("/items/{id}/click"));
    for id in [ids[1], ids[1], ids[0]] {
        let (status, _, body) = call(&alice, Method::POST, &click(id), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    }
    // Another user's item, or none: 404, and nothing counted.
    for id in [ids[2], ids[0] + 1000] {
        let (status, _, body) = call(&mallory, Method::POST, &click(id), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }
    // Spellings of one search count as one; a phrase and an exclusion keep their form.
    for q in ["Rust", "rust ", "ＲＵＳＴ", "Café -\"Big  Data\""] {
        let (status, body) = settle(&app, &alice, q).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{q}: {body}");
    }
    // A search the search box would refuse is refused here too.
    let too_long = "x ".repeat(300);
    for (q, code) in [
        ("", "invalid_request"),
        ("   ", "invalid_request"),
        ("-rust", "invalid_request"),
        (too_long.as_str(), "too_long"),
    ] {
        let (status, body) = settle(&app, &alice, q).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{q:?}: {body}");
        assert_error(&body, code, "validation");
    }
    // A tag page view, as the tag listing counts it.
    app.store
        .count_usage(usage_day(unix_now()), UsageKind::TagView, "rust")
        .await
        .unwrap();

    let (status, _, report) = call(&root, Method::GET, &app.url("/admin/usage"), None).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["enabled"], true);
    assert_eq!(report["retention_days"], 90);
    let today = day_text(usage_day(unix_now()));
    assert_eq!(report["first_day"], today.as_str());
    assert_eq!(report["last_day"], today.as_str());
    assert_eq!(
        report["totals"],
        json!({"clicks": 3, "tag_views": 1, "searches": 4})
    );
    assert_eq!(
        report["items"],
        json!([
            {"item_id": ids[1], "title": "Story 1", "url": "https://usage.example/1",
             "deleted": false, "clicks": 2},
            {"item_id": ids[0], "title": "Story 0", "url": "https://usage.example/0",
             "deleted": false, "clicks": 1},
        ])
    );
    assert_eq!(
        report["searches"],
        json!([
            {"query": "rust", "searches": 3},
            {"query": "cafe -\"big data\"", "searches": 1},
        ])
    );
    assert_eq!(report["tags"], json!([{"tag": "rust", "views": 1}]));
    // Nothing in it says who: no user's name or id anywhere.
    let text = report.to_string();
    for who in ["alice", "mallory", "user"] {
        assert!(!text.contains(who), "{who} in {text}");
    }
    // Nor in what is stored.
    assert_eq!(
        app.store.table_columns("usage_counts").await.unwrap(),
        ["day", "kind", "key", "count"]
    );

    // The limit cuts each list.
    let (_, _, report) = call(&root, Method::GET, &app.url("/admin/usage?limit=1"), None).await;
    assert_eq!(report["items"].as_array().unwrap().len(), 1);
    assert_eq!(report["searches"].as_array().unwrap().len(), 1);
    assert_eq!(report["totals"]["searches"], 4);
});

on_both_engines!(the_report_covers_a_day_or_a_range_of_days, |db| {
    let app = TestApp::start(db).await;
    app.user("root", true).await;
    let root = app.signed_in("root").await;
    let today = usage_day(unix_now());
    for (day, key) in [
        (today, "now"),
        (today - 1, "yesterday"),
        (today - 7, "last week"),
    ] {
        app.store
            .count_usage(day, UsageKind::Search, key)
            .await
            .unwrap();
    }
    let queries = |report: &Value| -> Vec<String> {
        report["searches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["query"].as_str().unwrap().to_owned())
            .collect()
    };
    let yesterday = day_text(today - 1);
    let (status, _, report) = call(
        &root,
        Method::GET,
        &app.url(&format!("/admin/usage?day={yesterday}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(queries(&report), ["yesterday"]);
    assert_eq!(report["first_day"], yesterday.as_str());
    let (_, _, report) = call(&root, Method::GET, &app.url("/admin/usage?days=7"), None).await;
    assert_eq!(queries(&report), ["now", "yesterday"]);
    assert_eq!(report["first_day"], day_text(today - 6).as_str());
    let (_, _, report) = call(&root, Method::GET, &app.url("/admin/usage?days=8"), None).await;
    assert_eq!(queries(&report).len(), 3);

    for bad in [
        "day=2026-02-30",
        "day=yesterday",
        "days=0",
        "days=367",
        "limit=0",
        "limit=201",
        "since=2026-01-01",
    ] {
        let (status, _, body) = call(
            &root,
            Method::GET,
            &app.url(&format!("/admin/usage?{bad}")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_error(&body, "invalid_request", "validation");
    }
});

on_both_engines!(only_administrators_read_the_counts, |db| {
    let app = TestApp::start(db).await;
    app.user("root", true).await;
    app.user("alice", false).await;
    let alice = app.signed_in("alice").await;
    let (status, _, body) = call(&alice, Method::GET, &app.url("/admin/usage"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "forbidden", "auth");
    let anonymous = app.browser();
    let (status, _, _) = call(&anonymous, Method::GET, &app.url("/admin/usage"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Nor may anyone count without signing in.
    let (status, _) = settle(&app, &anonymous, "rust").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
});

on_both_engines!(with_counting_off_nothing_is_stored, |db| {
    let app = TestApp::start_with(db, true, |config| config.usage_counts = false).await;
    app.user("root", true).await;
    let alice_id = app.user("alice", false).await;
    app.user("mallory", false).await;
    let ids = items_of(&app, alice_id, 1).await;
    let alice = app.signed_in("alice").await;
    let mallory = app.signed_in("mallory").await;
    // The same answers as with counting on…
    let click = app.url(&format!("/items/{}/click", ids[0]));
    let (status, _, _) = call(&alice, Method::POST, &click, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(&mallory, Method::POST, &click, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = settle(&app, &alice, "rust").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // …and nothing stored.
    let today = usage_day(unix_now());
    for kind in UsageKind::ALL {
        assert!(
            app.store
                .top_usage(kind, today - 1, today + 1, 10)
                .await
                .unwrap()
                .is_empty(),
            "{kind:?}"
        );
    }
    let root = app.signed_in("root").await;
    let (status, _, report) = call(&root, Method::GET, &app.url("/admin/usage"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["enabled"], false);
    assert_eq!(
        report["totals"],
        json!({"clicks": 0, "tag_views": 0, "searches": 0})
    );
});
