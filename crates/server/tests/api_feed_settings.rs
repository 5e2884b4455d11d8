//! Pausing a subscription (each user's own) and a feed's operator settings (suspended for
//! everyone, its proxy: administrators only) over HTTP, on both engines.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, TestServer, assert_error, call, test_fetcher};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Whether a worker would fetch `feed` now (claims and releases it again).
async fn is_due(app: &TestApp, feed: i64) -> bool {
    let now = tidings_store::unix_now() + 1;
    let claimed = app
        .store
        .claim_due_feeds("probe", now, 100, 60)
        .await
        .unwrap();
    let ids: Vec<i64> = claimed.iter().map(|d| d.feed_id).collect();
    app.store.release_feeds("probe", &ids).await.unwrap();
    ids.contains(&feed)
}

on_both_engines!(pausing_a_subscription_is_each_users_own, |db| {
    let app = TestApp::start(db).await;
    let site = TestServer::start_empty().await;
    site.serve_rss("/feed.xml", "news", 2);
    app.user("xan", false).await;
    app.user("yul", false).await;
    let xan = app.signed_in("xan").await;
    let yul = app.signed_in("yul").await;
    let subscribe = async |client: &reqwest::Client| {
        let body = json!({"url": site.url("/feed.xml")});
        let (status, _, body) =
            call(client, Method::POST, &app.url("/subscriptions"), Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["subscription"]["suspended"], false, "{body}");
        body["subscription"].clone()
    };
    let xan_sub = subscribe(&xan).await;
    let yul_sub = subscribe(&yul).await;
    let feed = xan_sub["feed_id"].as_i64().unwrap();
    let xan_url = app.url(&format!("/subscriptions/{}", xan_sub["id"]));
    let yul_url = app.url(&format!("/subscriptions/{}", yul_sub["id"]));
    app.store
        .execute_raw(&format!(
            "UPDATE feed_fetch_state SET next_check_at = 0 WHERE feed_id = {feed}"
        ))
        .await
        .unwrap();

    // Xan pauses: his subscription says so, yul's does not, and yul's keeps it fetched.
    let (status, _, body) = call(
        &xan,
        Method::PATCH,
        &xan_url,
        Some(json!({"suspended": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["suspended"], true);
    let (_, _, body) = call(&yul, Method::GET, &yul_url, None).await;
    assert_eq!(body["subscription"]["suspended"], false);
    let (_, _, list) = call(&xan, Method::GET, &app.url("/subscriptions"), None).await;
    assert_eq!(list["subscriptions"][0]["suspended"], true, "{list}");
    assert!(
        is_due(&app, feed).await,
        "another user's subscription fetches it"
    );

    // Both paused: nobody fetches it. Resumed: fetched again.
    call(
        &yul,
        Method::PATCH,
        &yul_url,
        Some(json!({"suspended": true})),
    )
    .await;
    assert!(!is_due(&app, feed).await);
    let (status, _, body) = call(
        &xan,
        Method::PATCH,
        &xan_url,
        Some(json!({"suspended": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["suspended"], false);
    assert!(is_due(&app, feed).await);

    // Not a boolean: 400; another user's subscription: 404.
    let (status, _, body) = call(
        &xan,
        Method::PATCH,
        &xan_url,
        Some(json!({"suspended": "yes"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, _) = call(
        &xan,
        Method::PATCH,
        &yul_url,
        Some(json!({"suspended": false})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, _, body) = call(&yul, Method::GET, &yul_url, None).await;
    assert_eq!(
        body["subscription"]["suspended"], true,
        "yul's stays paused"
    );
});

on_both_engines!(feed_suspend_and_proxy_are_for_administrators, |db| {
    let app = TestApp::start(db).await;
    let site = TestServer::start_empty().await;
    site.serve_rss("/feed.xml", "news", 2);
    // A stand-in HTTP proxy on 127.0.0.1: it answers the absolute-form request for the
    // feed itself, with other items, and counts it.
    let proxy = TestServer::start_empty().await;
    proxy.serve_rss("/feed.xml", "through the proxy", 3);
    app.user("xan", false).await;
    app.user("zed", true).await;
    let xan = app.signed_in("xan").await;
    let zed = app.signed_in("zed").await;
    let body = json!({"url": site.url("/feed.xml")});
    let (_, _, body) = call(&xan, Method::POST, &app.url("/subscriptions"), Some(body)).await;
    let feed = body["subscription"]["feed_id"].as_i64().unwrap();
    let xan_sub = app.url(&format!("/subscriptions/{}", body["subscription"]["id"]));
    let settings = app.url(&format!("/admin/feeds/{feed}"));

    // Others: 403 (signed in) or 401; an unknown feed: 404.
    for method in [Method::GET, Method::PATCH] {
        let (status, _, body) = call(
            &xan,
            method.clone(),
            &settings,
            Some(json!({"suspended": true})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let (status, _, _) = call(&app.browser(), method, &settings, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _, _) = call(&zed, Method::GET, &app.url("/admin/feeds/999999"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, body) = call(&zed, Method::GET, &settings, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["feed"]["suspended"], &body["feed"]["proxy_url"]),
        (&json!(false), &Value::Null)
    );

    // Proxies that are not allowed: a clear 400 saying what is, never the password.
    for refused in [
        "ftp://proxy.example.com:21",
        "not a url",
        "http://user:hunter2@169.254.169.254:80",
    ] {
        let (status, _, body) = call(
            &zed,
            Method::PATCH,
            &settings,
            Some(json!({"proxy_url": refused})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}: {body}");
        assert_error(&body, "invalid_request", "validation");
        assert!(
            body["error"]["action"]
                .as_str()
                .unwrap()
                .contains("socks5h://")
        );
        assert!(!body.to_string().contains("hunter2"), "{body}");
    }

    // Suspended for everyone: not fetched although xan follows it.
    let (status, _, body) = call(
        &zed,
        Method::PATCH,
        &settings,
        Some(json!({"suspended": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["feed"]["suspended"], true);
    assert!(!is_due(&app, feed).await);

    // A proxy with credentials: the administrator sees it, the subscriber never does, and
    // the next fetch goes through it.
    let with_secret = format!("http://fetcher:hunter2@{}", proxy.addr);
    let patch = json!({"suspended": false, "proxy_url": with_secret});
    let (status, _, body) = call(&zed, Method::PATCH, &settings, Some(patch)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["feed"]["suspended"], false);
    assert!(
        body["feed"]["proxy_url"]
            .as_str()
            .unwrap()
            .contains("hunter2")
    );
    assert!(is_due(&app, feed).await, "resumed: due at once");
    let (_, _, mine) = call(&xan, Method::GET, &xan_sub, None).await;
    assert!(!mine.to_string().contains("hunter2"), "{mine}");
    let fetcher = test_fetcher(app.store.clone(), true);
    let report = fetcher.refresh_feed(feed).await.unwrap();
    assert_eq!(proxy.hits("/feed.xml"), 1, "{report:?}");
    let auth = proxy.last_headers();
    assert!(auth.contains_key("proxy-authorization"), "{auth:?}");
    let (_, _, items) = call(&xan, Method::GET, &app.url("/items"), None).await;
    assert!(items.to_string().contains("through the proxy"), "{items}");

    // No proxy any more (`null` or `""`).
    for none in [Value::Null, json!("")] {
        let (status, _, body) = call(
            &zed,
            Method::PATCH,
            &settings,
            Some(json!({"proxy_url": none})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["feed"]["proxy_url"], Value::Null);
    }
});
