//! Scraped sources (F7) over HTTP, end to end on both engines: preview, subscribe and
//! reconfigure against the saved pages of `crates/scrape/testdata` served from 127.0.0.1.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, TestServer, assert_error, call};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

fn saved(name: &str) -> Vec<u8> {
    let path = format!("{}/../scrape/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

async fn pages() -> TestServer {
    let site = TestServer::start_empty().await;
    // The saved page names its real asset host; pointed at this server, so that looking up
    // its icon never leaves the machine.
    let webflow = String::from_utf8(saved("webflow-blog.html"))
        .expect("the saved page is UTF-8")
        .replace("https://assets-global.website-files.example", &site.base);
    site.serve("/blog", 200, "text/html", webflow);
    site.serve("/next/blog", 200, "text/html", saved("nextjs-blog.html"));
    site.serve("/remix/blog/", 200, "text/html", saved("remix-blog.html"));
    site.serve_rss("/feed.xml", "news", 2);
    site
}

fn webflow() -> Value {
    json!({
        "kind": "html",
        "item_selector": ".w-dyn-items .w-dyn-item",
        "title_selector": ".blog-title",
        "date_selector": ".blog-date",
        "date_format": "%B %d, %Y",
        "summary_selector": ".blog-summary"
    })
}

async fn post(client: &Client, url: String, body: Value) -> (StatusCode, Value) {
    let (status, _, body) = call(client, Method::POST, &url, Some(body)).await;
    (status, body)
}

on_both_engines!(preview_shows_the_items_and_saves_nothing, |db| {
    let app = TestApp::start(db).await;
    let site = pages().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let preview = app.url("/scraped-sources/preview");

    let (status, body) = post(
        &ann,
        preview.clone(),
        json!({"url": site.url("/blog"), "scraper": webflow()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "Blog | Northwind Labs");
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    assert_eq!(items[0]["title"], "How we cut cold starts by 80%");
    assert_eq!(
        items[0]["url"],
        site.url("/blog/how-we-cut-cold-starts-by-80")
    );
    assert_eq!(items[0]["published_at"], "2024-03-12T00:00:00Z");
    assert_eq!(
        items[1]["summary"],
        "Invite your whole team, share dashboards and keep one source of truth."
    );

    let (status, body) = post(
        &ann,
        preview.clone(),
        json!({"url": site.url("/remix/blog/"), "scraper": {
            "kind": "remix", "context_key": "routes/blog._index", "data_key": "posts",
            "url_selector": "slug"
        }}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"][2]["title"], "Inside our incident process");
    assert_eq!(
        body["items"][2]["url"],
        site.url("/remix/blog/our-incident-process")
    );

    // The selector that matched nothing is named.
    let mut wrong = webflow();
    wrong["item_selector"] = json!(".post-card");
    let (status, body) = post(
        &ann,
        preview.clone(),
        json!({"url": site.url("/blog"), "scraper": wrong}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "scrape_failed", "feed");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("item_selector `.post-card` matched nothing on the page"),
        "{message}"
    );

    // A configuration that cannot work is refused before any request, naming the field.
    let before = site.total_hits();
    let (status, body) = post(
        &ann,
        preview.clone(),
        json!({"url": site.url("/next/blog"), "scraper": {"kind": "nextjs"}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("scraper.data_key"),
        "{body}"
    );
    assert_eq!(site.total_hits(), before);
    // Unknown fields, unknown kinds, over-long selectors and control characters are 400s.
    for scraper in [
        json!({"kind": "html", "item_selector": "li", "selector": "x"}),
        json!({"kind": "angular", "item_selector": "li"}),
        json!({"kind": "html", "item_selector": "li".repeat(300)}),
        json!({"kind": "html", "item_selector": "li\u{0}"}),
    ] {
        let (status, body) = post(
            &ann,
            preview.clone(),
            json!({"url": site.url("/blog"), "scraper": scraper}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    assert_eq!(site.total_hits(), before);

    let (_, _, subscriptions) = call(&ann, Method::GET, &app.url("/subscriptions"), None).await;
    assert_eq!(
        subscriptions["subscriptions"],
        json!([]),
        "a preview saves nothing"
    );
});

/// What the phases of the scraped-source test share: the app, the saved pages, the two readers
/// and the Next.js configuration of the page.
struct Scraped {
    app: TestApp,
    site: TestServer,
    ann: Client,
    bob: Client,
    nextjs: Value,
}

on_both_engines!(
    subscribe_list_reconfigure_and_share_a_scraped_source,
    |db| {
        let app = TestApp::start(db).await;
        let site = pages().await;
        app.user("ann", false).await;
        app.user("bob", false).await;
        let ann = app.signed_in("ann").await;
        let bob = app.signed_in("bob").await;
        let nextjs = json!({
            "kind": "nextjs", "data_key": "props.pageProps.posts", "url_selector": "slug",
            "url_prefix": "https://lumen.example/blog/"
        });
        let t = Scraped {
            app,
            site,
            ann,
            bob,
            nextjs,
        };

        let sub = phase_subscribe_and_read_like_a_feed(&t).await;
        let id = sub["id"].as_i64().unwrap();
        let feed_id = phase_a_feed_is_listed_with_no_scraper(&t, id).await;
        let by_slug = phase_reconfigure_refuse_bad_and_feeds(&t, id, feed_id).await;
        phase_one_page_one_configuration_shared(&t, &sub, &by_slug).await;
    }
);

/// Ann subscribes to the Next.js page: checked as its first fetch, its items the reader's like a
/// feed's. Returns the subscription.
async fn phase_subscribe_and_read_like_a_feed(t: &Scraped) -> Value {
    let Scraped {
        app,
        site,
        ann,
        nextjs,
        ..
    } = t;
    let (status, body) = post(
        ann,
        app.url("/scraped-sources"),
        json!({"url": site.url("/next/blog"), "scraper": nextjs.clone(), "interval_minutes": 120}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sub = body["subscription"].clone();
    assert_eq!(sub["title"], "Engineering Blog — Lumen");
    assert_eq!(sub["unread_count"], 3);
    assert_eq!(sub["interval_minutes"], 120);
    assert_eq!(sub["scraper"]["kind"], "nextjs");
    assert_eq!(sub["scraper"]["data_key"], "props.pageProps.posts");
    assert_eq!(body["preview"]["items"].as_array().unwrap().len(), 3);
    // The check was the first fetch: the source is fetched already.
    assert!(sub["last_success_at"].is_string(), "{sub}");

    // The items are the reader's like a feed's.
    let (status, _, items) = call(
        ann,
        Method::GET,
        &app.url(&format!("/items?feed_id={}&filter=all", sub["feed_id"])),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{items}");
    let urls: Vec<&str> = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["url"].as_str())
        .collect();
    assert_eq!(
        urls,
        [
            "https://lumen.example/blog/zero-downtime-schema-migrations",
            "https://lumen.example/blog/why-we-moved-to-rust",
            "https://lumen.example/blog/tracing-at-scale"
        ]
    );
    sub
}

/// A feed subscribed beside the scraped source (`id`) is listed with no scraper, the source
/// with its own. Returns the feed's subscription id.
async fn phase_a_feed_is_listed_with_no_scraper(t: &Scraped, id: i64) -> i64 {
    let Scraped { app, site, ann, .. } = t;
    let (status, body) = post(
        ann,
        app.url("/subscriptions"),
        json!({"url": site.url("/feed.xml")}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let feed_id = body["subscription"]["id"].as_i64().unwrap();
    let (_, _, list) = call(ann, Method::GET, &app.url("/subscriptions"), None).await;
    let listed = list["subscriptions"].as_array().unwrap();
    let scraped = listed.iter().find(|s| s["id"] == id).unwrap();
    assert_eq!(scraped["scraper"]["url_selector"], "slug");
    let feed = listed.iter().find(|s| s["id"] == feed_id).unwrap();
    assert_eq!(feed["scraper"], Value::Null);
    feed_id
}

/// Ann reconfigures her source so that the titles come from the slugs; a bad configuration is
/// refused naming the key at fault, and a feed has no scraper to change. Returns the new
/// configuration.
async fn phase_reconfigure_refuse_bad_and_feeds(t: &Scraped, id: i64, feed_id: i64) -> Value {
    let Scraped {
        app, ann, nextjs, ..
    } = t;
    // Ann reconfigures her source: the titles now come from the slugs.
    let mut by_slug = nextjs.clone();
    by_slug["title_selector"] = json!("slug");
    let (status, _, body) = call(
        ann,
        Method::PUT,
        &app.url(&format!("/subscriptions/{id}/scraper")),
        Some(json!({"scraper": by_slug})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["scraper"]["title_selector"], "slug");
    assert_eq!(
        body["preview"]["items"][0]["title"],
        "zero-downtime-schema-migrations"
    );
    // A bad one is refused with the key at fault, and the source keeps its configuration.
    let mut broken = nextjs.clone();
    broken["date_selector"] = json!("meta.published");
    let (status, _, body) = call(
        ann,
        Method::PUT,
        &app.url(&format!("/subscriptions/{id}/scraper")),
        Some(json!({"scraper": broken})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("date_selector `meta.published` matched nothing"),
        "{body}"
    );
    // A feed has no scraper to change.
    let (status, _, body) = call(
        ann,
        Method::PUT,
        &app.url(&format!("/subscriptions/{feed_id}/scraper")),
        Some(json!({"scraper": nextjs.clone()})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    by_slug
}

/// One page has one configuration: Bob's other one is refused, with Ann's he shares her source,
/// and then she can no longer change it; nobody else's subscription is reachable.
async fn phase_one_page_one_configuration_shared(t: &Scraped, sub: &Value, by_slug: &Value) {
    let Scraped {
        app,
        site,
        ann,
        bob,
        nextjs,
    } = t;
    let create = app.url("/scraped-sources");
    let id = sub["id"].as_i64().unwrap();
    // Bob gives the page another configuration: refused, one page has one.
    let (status, body) = post(
        bob,
        create.clone(),
        json!({"url": site.url("/next/blog"), "scraper": nextjs.clone()}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // With Ann's configuration he shares her source, and then she can no longer change it.
    let (status, body) = post(
        bob,
        create.clone(),
        json!({"url": site.url("/next/blog"), "scraper": by_slug.clone()}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["subscription"]["feed_id"], sub["feed_id"]);
    let (status, _, body) = call(
        ann,
        Method::PUT,
        &app.url(&format!("/subscriptions/{id}/scraper")),
        Some(json!({"scraper": nextjs.clone()})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // Nobody else's subscription is reachable.
    let (status, _, _) = call(
        bob,
        Method::PUT,
        &app.url(&format!("/subscriptions/{id}/scraper")),
        Some(json!({"scraper": nextjs})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
