//! Full text (F6) over HTTP against a real server and a local site, on both engines: the
//! subscription's mode in the API, "load full article" on demand, and the item's
//! `full_content`.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, TestServer, assert_error, call, rss};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const NEWS: &[u8] = include_bytes!("../../extract/testdata/news.html");
const JAPANESE_SJIS: &[u8] = include_bytes!("../../extract/testdata/japanese-sjis.html");

/// A site whose feed `news` links its items to `/news/0` (the saved news page), `/news/1`
/// (the Shift_JIS page) and `/news/2` (gone), and a feed `bare` whose item has no link.
async fn site() -> TestServer {
    let site = TestServer::start_empty().await;
    site.serve(
        "/feed.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "news", 3),
    );
    site.serve("/news/0", 200, "text/html; charset=utf-8", NEWS);
    site.serve("/news/1", 200, "text/html", JAPANESE_SJIS);
    site.serve(
        "/bare.xml",
        200,
        "application/rss+xml",
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>bare</title>\
         <item><guid isPermaLink=\"false\">x</guid><title>No link</title>\
         <description>Only this.</description></item></channel></rss>",
    );
    site
}

/// The user's items of one subscription, newest first.
async fn items_of(client: &reqwest::Client, app: &TestApp, feed_id: i64) -> Vec<Value> {
    let (status, _, body) = call(
        client,
        Method::GET,
        &app.url(&format!(
            "/items?feed_id={feed_id}&filter=all&include=content"
        )),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["items"].as_array().unwrap().clone()
}

/// `POST /items/{id}/full-content` as `client`.
async fn load_full(
    client: &reqwest::Client,
    app: &TestApp,
    id: i64,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    call(
        client,
        Method::POST,
        &app.url(&format!("/items/{id}/full-content")),
        None,
    )
    .await
}

on_both_engines!(modes_in_the_api_and_full_articles_on_demand, |db| {
    let app = TestApp::start(db).await;
    let site = site().await;
    app.user("ann", false).await;
    let client = app.signed_in("ann").await;

    // A bad mode is refused before anything is fetched.
    let (status, _, body) = call(
        &client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": site.url("/feed.xml"), "full_text": "sometimes"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");
    assert_eq!(site.hits("/feed.xml"), 0);

    // Subscribing with a mode; the default is auto.
    let (status, _, body) = call(
        &client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": site.url("/feed.xml"), "full_text": "never"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["subscription"]["full_text"], "never");
    let sub = body["subscription"]["id"].as_i64().unwrap();
    let feed = body["subscription"]["feed_id"].as_i64().unwrap();
    let (status, _, body) = call(
        &client,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{sub}")),
        Some(json!({"full_text": "always"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["full_text"], "always");
    assert_eq!(
        body["subscription"]["interval_minutes"], 60,
        "other settings stay"
    );
    let (status, _, body) = call(
        &client,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{sub}")),
        Some(json!({"full_text": "ALWAYS!"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (_, _, body) = call(&client, Method::GET, &app.url("/subscriptions"), None).await;
    assert_eq!(body["subscriptions"][0]["full_text"], "always");

    // Never (when it subscribed): nothing was fetched beyond the feed.
    assert_eq!(site.hits("/news/0"), 0);
    let items = items_of(&client, &app, feed).await;
    assert_eq!(items.len(), 3);
    let id_of = |link: &str| {
        items
            .iter()
            .find(|i| i["url"].as_str().is_some_and(|u| u.ends_with(link)))
            .unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    let (news, ja, gone) = (id_of("/news/0"), id_of("/news/1"), id_of("/news/2"));
    let (_, _, body) = call(
        &client,
        Method::GET,
        &app.url(&format!("/items/{news}")),
        None,
    )
    .await;
    assert_eq!(body["item"]["full_content"], Value::Null, "{body}");
    assert_eq!(body["item"]["full_content_fetched_at"], Value::Null);

    // Load full article: the page is fetched now, its article answered and stored.
    let (status, _, body) = load_full(&client, &app, news).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let article = body["full_content"].as_str().unwrap();
    assert!(
        article.contains("The tidal mill at Porthcarrow last turned"),
        "{article}"
    );
    assert!(!article.contains("Most read"), "{article}");
    assert!(body["text_chars"].as_i64().unwrap() > 3000);
    assert_eq!(site.hits("/news/0"), 1);
    // The item carries it beside the feed's own content, with its time.
    let (_, _, body) = call(
        &client,
        Method::GET,
        &app.url(&format!("/items/{news}")),
        None,
    )
    .await;
    assert_eq!(body["item"]["full_content"].as_str(), Some(article));
    assert!(
        body["item"]["full_content_fetched_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(body["item"]["content"], "<p>Body 0</p>");
    // So does the listing with include=content.
    let listed = items_of(&client, &app, feed).await;
    let listed = listed.iter().find(|i| i["id"] == news).unwrap();
    assert_eq!(listed["full_content"].as_str(), Some(article));
    // Search finds the item by words only its article holds, with a snippet from the
    // article; the feed's other items do not match.
    let (status, _, body) = call(
        &client,
        Method::GET,
        &app.url("/items?filter=all&q=Porthcarrow%20sluice"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let found = body["items"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{body}");
    assert_eq!(found[0]["id"], news);
    assert!(
        found[0]["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("<mark>Porthcarrow</mark>")),
        "{body}"
    );

    phase_other_pages(&app, &client, &site, (news, ja, gone)).await;
});

/// A Shift_JIS page decodes; a page that is gone and an item without a link are 400 with
/// the reason; another user's item, or none, is 404 and no request leaves.
async fn phase_other_pages(
    app: &TestApp,
    client: &reqwest::Client,
    site: &TestServer,
    (news, ja, gone): (i64, i64, i64),
) {
    // The Shift_JIS page decodes.
    let (status, _, body) = load_full(client, app, ja).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["full_content"].as_str().unwrap().contains("大浜島"),
        "{body}"
    );

    // A page that is gone: 400 with the reason, and nothing stored.
    let (status, _, body) = load_full(client, app, gone).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "full_text_unavailable", "feed");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("404"),
        "{body}"
    );
    let (_, _, body) = call(
        client,
        Method::GET,
        &app.url(&format!("/items/{gone}")),
        None,
    )
    .await;
    assert_eq!(body["item"]["full_content"], Value::Null);

    // An item without a link: 400.
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": site.url("/bare.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["subscription"]["full_text"], "auto");
    let bare = items_of(
        client,
        app,
        body["subscription"]["feed_id"].as_i64().unwrap(),
    )
    .await;
    let (status, _, body) = load_full(client, app, bare[0]["id"].as_i64().unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "no_article_link", "validation");

    // Another user's item, or none: 404, and no request leaves.
    app.user("bob", false).await;
    let bob = app.signed_in("bob").await;
    let (status, _, _) = load_full(&bob, app, news).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(site.hits("/news/0"), 1);
}
