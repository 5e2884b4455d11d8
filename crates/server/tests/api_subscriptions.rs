//! Subscriptions and OPML over HTTP against a real server and a local feed server, on both
//! engines.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, TestServer, assert_error, call, import_opml_and_wait, rss};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::FetchStatus;

/// 16x16 PNG header bytes are enough for the icon sniffing.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0\x1f\xf3\xffa";

async fn feed_site() -> TestServer {
    let site = TestServer::start_empty().await;
    site.serve(
        "/feed.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "news", 3),
    );
    site.serve(
        "/other.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "other", 2),
    );
    site.serve(
        "/",
        200,
        "text/html",
        format!(
            "<html><head><title>News</title>\
             <link rel=\"alternate\" type=\"application/rss+xml\" href=\"{}\">\
             </head><body>hi</body></html>",
            site.url("/feed.xml")
        ),
    );
    site.serve(
        "/plain.html",
        200,
        "text/html",
        "<html><body>no feeds here</body></html>",
    );
    site.serve("/favicon.ico", 200, "image/png", PNG);
    site
}

/// Imports an OPML document of `outlines` at `url` (`…/opml`); returns the import once done.
async fn import_outlines(client: &Client, url: String, outlines: String) -> Value {
    let opml = format!("<opml version=\"2.0\"><body>{outlines}</body></opml>");
    import_opml_and_wait(client, &url, None, opml).await
}

async fn subscribe(client: &Client, app: &TestApp, body: Value) -> (StatusCode, Value) {
    let (status, _, body) =
        call(client, Method::POST, &app.url("/subscriptions"), Some(body)).await;
    (status, body)
}

on_both_engines!(subscribe_by_page_list_change_and_unsubscribe, |db| {
    let app = TestApp::start(db).await;
    let site = feed_site().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;

    let id = phase_subscribe_by_page_once_and_listed(&app, &ann, &site).await;
    phase_change_title_group_and_interval(&app, &ann, id).await;
    phase_a_new_feed_url_moves_the_subscription(&app, &ann, &site, id).await;
    phase_the_favicon_is_found_and_served_as_an_image(&app, &ann, id).await;
    phase_nobody_else_sees_it_and_unsubscribing_removes_it(&app, &ann, id).await;
});

/// Ann subscribes by the site's page: the feed is discovered and fetched at once; subscribing
/// again is a conflict that reads as two sentences; the list has the one. Returns its id.
async fn phase_subscribe_by_page_once_and_listed(
    app: &TestApp,
    ann: &Client,
    site: &TestServer,
) -> i64 {
    let (status, body) = subscribe(ann, app, json!({"url": site.url("/")})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sub = body["subscription"].clone();
    assert_eq!(
        sub["feed_url"],
        site.url("/feed.xml"),
        "discovered from the page"
    );
    assert_eq!(sub["title"], "news");
    assert_eq!(sub["unread_count"], 3, "fetched once at once");
    assert_eq!(sub["status"], "active");
    assert_eq!(sub["interval_minutes"], 60);
    assert!(sub["last_success_at"].is_string());
    let id = sub["id"].as_i64().unwrap();

    let (status, body) = subscribe(ann, app, json!({"url": site.url("/feed.xml")})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "conflict", "validation");
    // Message and action read as two sentences when a client shows them together.
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Already subscribed to ") && message.ends_with('.'),
        "{body}"
    );

    let (status, _, listed) = call(ann, Method::GET, &app.url("/subscriptions"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["subscriptions"].as_array().unwrap().len(), 1);

    id
}

/// Title, group and interval change; bad values are refused with the reason, and a null title
/// goes back to the feed's.
async fn phase_change_title_group_and_interval(app: &TestApp, ann: &Client, id: i64) {
    // Change title, group and interval; bad values are refused with the reason.
    let (_, _, group) = call(
        ann,
        Method::POST,
        &app.url("/groups"),
        Some(json!({"name": "Tech"})),
    )
    .await;
    let group_id = group["group"]["id"]
        .as_i64()
        .or_else(|| group["id"].as_i64());
    let (status, _, body) = call(
        ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{id}")),
        Some(json!({"interval_minutes": 45})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("30 to 720")
    );
    let mut patch = json!({"title": "My news", "interval_minutes": 120});
    if let Some(group_id) = group_id {
        patch["group_id"] = json!(group_id);
    }
    let (status, _, body) = call(
        ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{id}")),
        Some(patch),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["title"], "My news");
    assert_eq!(body["subscription"]["custom_title"], "My news");
    assert_eq!(body["subscription"]["interval_minutes"], 120);
    if let Some(group_id) = group_id {
        assert_eq!(body["subscription"]["group_id"], group_id);
    }
    let (_, _, body) = call(
        ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{id}")),
        Some(json!({"title": null})),
    )
    .await;
    assert_eq!(
        body["subscription"]["title"], "news",
        "null goes back to the feed's title"
    );
    let (status, _, body) = call(
        ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{id}")),
        Some(json!({"group_id": 999_999})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// A new feed URL moves the subscription and fetches the new feed; a bad one is refused.
async fn phase_a_new_feed_url_moves_the_subscription(
    app: &TestApp,
    ann: &Client,
    site: &TestServer,
    id: i64,
) {
    // A new feed URL moves the subscription and fetches the new feed.
    let (status, _, body) = call(
        ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{id}")),
        Some(json!({"feed_url": site.url("/other.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["feed_url"], site.url("/other.xml"));
    assert_eq!(body["subscription"]["unread_count"], 2);
    let (status, _, body) = call(
        ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{id}")),
        Some(json!({"feed_url": "javascript:alert(1)"})),
    )
    .await;
    assert_eq!(status.as_u16() / 100, 4, "{body}");
}

/// The favicon is found (in the background, after the first fetch) and served as a sandboxed
/// image.
async fn phase_the_favicon_is_found_and_served_as_an_image(app: &TestApp, ann: &Client, id: i64) {
    // The favicon was found (in the background, after the first fetch) and is served as an
    // image.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let body = loop {
        let (_, _, body) = call(
            ann,
            Method::GET,
            &app.url(&format!("/subscriptions/{id}")),
            None,
        )
        .await;
        if !body["subscription"]["favicon_url"].is_null() || std::time::Instant::now() > deadline {
            break body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let path = body["subscription"]["favicon_url"]
        .as_str()
        .expect("the site's /favicon.ico was found and is linked")
        .to_string();
    let response = ann.get(format!("{}{path}", app.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "image/png");
    assert!(
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(response.bytes().await.unwrap().as_ref(), PNG);
}

/// Someone else sees none of it (404 for every operation), and unsubscribing removes it.
async fn phase_nobody_else_sees_it_and_unsubscribing_removes_it(
    app: &TestApp,
    ann: &Client,
    id: i64,
) {
    // Someone else sees none of it.
    app.user("bob", false).await;
    let bob = app.signed_in("bob").await;
    for (method, path) in [
        (Method::GET, format!("/subscriptions/{id}")),
        (Method::PATCH, format!("/subscriptions/{id}")),
        (Method::DELETE, format!("/subscriptions/{id}")),
        (Method::POST, format!("/subscriptions/{id}/resume")),
        (Method::POST, format!("/subscriptions/{id}/refresh")),
        (Method::GET, format!("/subscriptions/{id}/favicon")),
    ] {
        let (status, _, body) = call(&bob, method.clone(), &app.url(&path), Some(json!({}))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
    }

    let (status, _, _) = call(
        ann,
        Method::DELETE,
        &app.url(&format!("/subscriptions/{id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(
        ann,
        Method::GET,
        &app.url(&format!("/subscriptions/{id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

on_both_engines!(subscribing_explains_failures, |db| {
    let app = TestApp::start_with(db, true, |config| config.max_subscriptions = 2).await;
    let site = feed_site().await;
    app.user("cid", false).await;
    let cid = app.signed_in("cid").await;

    // A site with a page that links no feed and none at the conventional paths.
    let bare = TestServer::start_empty().await;
    bare.serve(
        "/plain.html",
        200,
        "text/html",
        "<html><body>no feeds here</body></html>",
    );
    let (status, body) = subscribe(&cid, &app, json!({"url": bare.url("/plain.html")})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        bare.hits("/rss") == 1 && bare.hits("/feed") == 1,
        "the fallbacks were tried"
    );
    assert_error(&body, "no_feed_found", "feed");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("/rss"),
        "says what was tried"
    );

    let (status, body) = subscribe(&cid, &app, json!({"url": site.url("/missing")})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "feed_unreachable", "feed");
    assert!(body["error"]["message"].as_str().unwrap().contains("404"));

    let (status, body) = subscribe(&cid, &app, json!({"url": "   "})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");

    let (status, body) = subscribe(
        &cid,
        &app,
        json!({"url": site.url("/feed.xml"), "interval_minutes": 10}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // The subscription limit (F29).
    assert_eq!(
        subscribe(&cid, &app, json!({"url": site.url("/feed.xml")}))
            .await
            .0,
        StatusCode::CREATED
    );
    assert_eq!(
        subscribe(&cid, &app, json!({"url": site.url("/other.xml")}))
            .await
            .0,
        StatusCode::CREATED
    );
    site.serve(
        "/third.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "third", 1),
    );
    let (status, body) = subscribe(&cid, &app, json!({"url": site.url("/third.xml")})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "subscription_limit", "limit");

    // Ten subscribe requests a minute (F25), whatever their outcome.
    app.user("dee", false).await;
    let dee = app.signed_in("dee").await;
    for _ in 0..10 {
        assert_ne!(
            subscribe(&dee, &app, json!({"url": ""})).await.0,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
    let response = dee
        .post(app.url("/subscriptions"))
        .json(&json!({"url": site.url("/feed.xml")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().contains_key("retry-after"));
});

on_both_engines!(private_addresses_are_refused_when_not_allowed, |db| {
    let app = TestApp::start_with(db, false, |_| {}).await;
    let site = feed_site().await;
    app.user("eve", false).await;
    let eve = app.signed_in("eve").await;
    let (status, body) = subscribe(&eve, &app, json!({"url": site.url("/feed.xml")})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "url_refused", "feed");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("refused") && message.contains("TIDINGS_ALLOW_PRIVATE_NETWORKS=true"),
        "says what allows it: {body}"
    );
    assert_eq!(site.total_hits(), 0, "the local server saw no request");
});

on_both_engines!(refresh_resume_and_a_stopped_feed, |db| {
    let app = TestApp::start(db).await;
    let site = feed_site().await;
    app.user("fay", false).await;
    let fay = app.signed_in("fay").await;
    let (_, body) = subscribe(&fay, &app, json!({"url": site.url("/feed.xml")})).await;
    let id = body["subscription"]["id"].as_i64().unwrap();
    let refresh = app.url(&format!("/subscriptions/{id}/refresh"));

    // The feed disappears: a refresh stops it and shows why.
    site.serve("/feed.xml", 410, "text/plain", "gone");
    let (status, _, body) = call(&fay, Method::POST, &refresh, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["status"], "stopped");
    assert_eq!(body["subscription"]["last_http_status"], 410);
    assert!(body["subscription"]["status_reason"].is_string());

    // At most one manual refresh a minute per feed.
    let (status, headers, body) = call(&fay, Method::POST, &refresh, None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("try again in")
    );
    assert!(headers.contains_key("retry-after"));

    // Resume: active again, due now.
    site.serve(
        "/feed.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "news", 4),
    );
    let (status, _, body) = call(
        &fay,
        Method::POST,
        &app.url(&format!("/subscriptions/{id}/resume")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["status"], "active");
});

on_both_engines!(opml_import_export_and_history, |db| {
    let app = TestApp::start(db).await;
    let site = feed_site().await;
    app.user("gus", false).await;
    let gus = app.signed_in("gus").await;
    let opml = format!(
        r#"<?xml version="1.0"?>
<opml version="2.0"><head><title>mine</title></head><body>
  <outline text="Tech">
    <outline type="rss" text="News" xmlUrl="{}"/>
    <outline type="rss" text="News again" xmlUrl="{}"/>
  </outline>
  <outline type="rss" text="Other" xmlUrl="{}"/>
  <outline type="rss" text="Bad" xmlUrl="javascript:alert(1)"/>
  <outline type="rss" text="Missing" xmlUrl="{}"/>
  <outline type="rss" text="A page" xmlUrl="{}"/>
</body></opml>"#,
        site.url("/feed.xml"),
        // Another spelling of the same address (F10): the same feed, listed twice.
        site.url("/feed.xml?#again").replace("http://", "HTTP://"),
        site.url("/other.xml"),
        site.url("/missing.xml"),
        site.url("/plain.html"),
    );
    let report = import_opml_and_wait(&gus, &app.url("/opml"), Some("mine.opml"), opml).await;
    assert_eq!(report["status"], "done", "{report}");
    assert_eq!(report["total"], 6, "{report}");
    assert_eq!(report["checked"], 6, "{report}");
    assert_eq!(report["added"], 2, "{report}");
    assert_eq!(report["skipped"], 1, "{report}");
    assert_eq!(report["failed"], 3, "refused and failed: {report}");
    assert_eq!(report["refused"], 1, "{report}");
    assert_eq!(report["file_name"], "mine.opml", "{report}");
    assert!(report["notice"].is_null(), "{report}");
    let entries = report["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .all(|e| e["status"] == "added" || e["reason"].is_string())
    );
    assert_eq!(entries[0]["group"], "Tech");
    assert_eq!(entries[1]["status"], "skipped", "{report}");
    assert_eq!(entries[1]["reason"], "listed more than once in the file");
    // A 404 and a page that is no feed are failures with their reason, not subscriptions.
    assert_eq!(entries[4]["status"], "failed", "{report}");
    assert_eq!(entries[4]["reason"], "the server answered HTTP 404");
    assert_eq!(entries[5]["status"], "failed", "{report}");
    assert!(
        entries[5]["reason"]
            .as_str()
            .unwrap()
            .starts_with("not a feed"),
        "{report}"
    );

    // The outlines' names are the subscriptions' titles, before the feeds are even fetched.
    let (_, _, listed) = call(&gus, Method::GET, &app.url("/subscriptions"), None).await;
    let mut titles: Vec<&str> = listed["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    titles.sort();
    assert_eq!(titles, ["News", "Other"]);

    let response = gus.get(app.url("/opml")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/x-opml")
    );
    let exported = response.text().await.unwrap();
    assert!(exported.contains("<opml version=\"2.0\""), "{exported}");
    assert!(
        exported.contains("Tech") && exported.contains(&site.url("/other.xml")),
        "{exported}"
    );

    let (_, _, history) = call(&gus, Method::GET, &app.url("/opml/imports"), None).await;
    let imports = history["imports"].as_array().unwrap();
    assert_eq!(imports.len(), 1);
    assert_eq!(imports[0]["file_name"], "mine.opml");
    assert_eq!(imports[0]["added"], 2);
    assert_eq!(imports[0]["failed"], 3, "refused and failed");
    assert_eq!(imports[0]["status"], "done");

    for bad in ["", "not xml at all", "<html><body>a page</body></html>"] {
        let response = gus
            .post(app.url("/opml"))
            .header("content-type", "text/x-opml")
            .body(bad)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad:?}");
    }
    let huge = format!(
        "<opml version=\"2.0\"><body>{}</body></opml>",
        " ".repeat(6 * 1024 * 1024)
    );
    let response = app
        .signed_in("gus")
        .await
        .post(app.url("/opml"))
        .header("content-type", "text/x-opml")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    phase_a_thousand_outlines(&app, &site).await;
});

/// A 1,000-outline file is taken whole; more are refused past 1,000, and the report says so
/// plainly.
async fn phase_a_thousand_outlines(app: &TestApp, site: &TestServer) {
    // A 1,000-outline file is taken whole; more are refused past 1,000, and the report says
    // so plainly.
    let outlines: String = (0..1001)
        .map(|i| {
            let path = format!("/many/{i}.xml");
            site.serve(
                &path,
                200,
                "application/rss+xml",
                rss(&site.base, "many", 1),
            );
            format!("<outline type=\"rss\" xmlUrl=\"{}\"/>", site.url(&path))
        })
        .collect();
    app.user("hal", false).await;
    let hal = app.signed_in("hal").await;
    let report = import_outlines(&hal, app.url("/opml"), outlines).await;
    assert_eq!(report["total"], 1001);
    assert_eq!(
        report["added"], 100,
        "the per-user limit of 100 applies: {}",
        report["refused"]
    );
    assert_eq!(report["over_file_limit"], 1);
    assert_eq!(report["over_subscription_limit"], 900);
    let notice = report["notice"].as_str().unwrap();
    assert!(
        notice.contains("The file lists 1001 feeds, more than the 1000 one import takes")
            && notice.contains("900 feeds were not imported because the limit of 100"),
        "{notice}"
    );
}

/// A YouTube channel feed as YouTube serves it: Atom whose entries carry their description and
/// still only in a `media:group`. Dated recently, so that nothing is too old to keep.
fn youtube_feed(site: &str) -> String {
    let now = chrono::Utc::now();
    let entry = |id: &str, hours: i64, thumbnail: &str| {
        let published = (now - chrono::Duration::hours(hours)).to_rfc3339();
        format!(
            "<entry><id>yt:video:{id}</id><yt:videoId>{id}</yt:videoId>\
             <title>Video {id}</title><link rel=\"alternate\" href=\"{site}/watch?v={id}\"/>\
             <author><name>Workshop</name></author><published>{published}</published>\
             <updated>{published}</updated><media:group><media:title>Video {id}</media:title>\
             <media:content url=\"{site}/v/{id}\" type=\"application/x-shockwave-flash\" width=\"640\" height=\"390\"/>\
             <media:thumbnail url=\"{thumbnail}\" width=\"480\" height=\"360\"/>\
             <media:description>First line of {id}\nsecond line\n\nNext paragraph</media:description>\
             </media:group></entry>"
        )
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <feed xmlns:yt=\"http://www.youtube.com/xml/schemas/2015\" xmlns:media=\"http://search.yahoo.com/mrss/\" xmlns=\"http://www.w3.org/2005/Atom\">\
         <id>yt:channel:x</id><title>Workshop</title><link rel=\"alternate\" href=\"{site}/\"/>{}{}</feed>",
        entry("aaa", 1, "https://i1.ytimg.example/vi/aaa/hqdefault.jpg"),
        // An http still cannot be shown on an https page: it is not kept.
        entry("bbb", 2, "http://i1.ytimg.example/vi/bbb/hqdefault.jpg"),
    )
}

on_both_engines!(
    a_video_feeds_thumbnail_and_description_reach_the_api,
    |db| {
        let app = TestApp::start(db).await;
        let site = TestServer::start_empty().await;
        site.serve(
            "/videos.xml",
            200,
            "application/atom+xml",
            youtube_feed(&site.base),
        );
        app.user("ann", false).await;
        let ann = app.signed_in("ann").await;
        let (status, body) = subscribe(&ann, &app, json!({"url": site.url("/videos.xml")})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, _, list) = call(&ann, Method::GET, &app.url("/items"), None).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        let items = list["items"].as_array().expect("items");
        assert_eq!(items.len(), 2, "{list}");
        assert_eq!(items[0]["title"], "Video aaa");
        assert_eq!(
            items[0]["thumbnail_url"],
            "https://i1.ytimg.example/vi/aaa/hqdefault.jpg"
        );
        assert_eq!(
            items[0]["summary"],
            "<p>First line of aaa<br>second line</p><p>Next paragraph</p>"
        );
        assert_eq!(items[1]["thumbnail_url"], Value::Null);
        let id = items[0]["id"].as_i64().unwrap();
        let (status, _, one) =
            call(&ann, Method::GET, &app.url(&format!("/items/{id}")), None).await;
        assert_eq!(status, StatusCode::OK, "{one}");
        assert_eq!(
            one["item"]["thumbnail_url"],
            "https://i1.ytimg.example/vi/aaa/hqdefault.jpg"
        );
        assert_eq!(
            one["item"]["enclosures"][0]["url"],
            site.url("/v/aaa"),
            "the video stays an enclosure"
        );
    }
);

on_both_engines!(
    the_subscription_limit_holds_under_concurrent_requests,
    |db| {
        let app = TestApp::start_with(db, true, |config| config.max_subscriptions = 4).await;
        let site = feed_site().await;
        for n in 0..80 {
            site.serve(
                &format!("/c/{n}.xml"),
                200,
                "application/rss+xml",
                rss(&site.base, &format!("c{n}"), 1),
            );
        }
        // Ten subscribe requests at once (the most the per-user rate allows in a minute).
        app.user("ida", false).await;
        let ida = app.signed_in("ida").await;
        let mut requests = tokio::task::JoinSet::new();
        for n in 0..10 {
            let (client, url, feed) = (
                ida.clone(),
                app.url("/subscriptions"),
                site.url(&format!("/c/{n}.xml")),
            );
            requests.spawn(async move {
                let (status, _, body) =
                    call(&client, Method::POST, &url, Some(json!({ "url": feed }))).await;
                (status, body)
            });
        }
        let (mut created, mut limited) = (0, 0);
        while let Some(done) = requests.join_next().await {
            let (status, body) = done.unwrap();
            match status {
                StatusCode::CREATED => created += 1,
                StatusCode::CONFLICT => {
                    assert_eq!(body["error"]["code"], "subscription_limit", "{body}");
                    limited += 1;
                }
                other => panic!("unexpected {other}: {body}"),
            }
        }
        assert_eq!((created, limited), (4, 6));
        let (_, _, listed) = call(&ida, Method::GET, &app.url("/subscriptions"), None).await;
        assert_eq!(listed["subscriptions"].as_array().unwrap().len(), 4);

        // Twenty OPML imports at once, three feeds each: what fits is taken, the rest is over.
        // A user runs three imports at once (more are told to wait), so three are sent at a
        // time, and the polling stays within the per-user rate limit.
        app.user("jan", false).await;
        let jan = app.signed_in("jan").await;
        let mut imports = tokio::task::JoinSet::new();
        let three = std::sync::Arc::new(tokio::sync::Semaphore::new(3));
        for n in 0..20 {
            let outlines: String = (0..3)
                .map(|k| {
                    format!(
                        "<outline xmlUrl=\"{}\"/>",
                        site.url(&format!("/c/{}.xml", 20 + n * 3 + k))
                    )
                })
                .collect();
            let (client, url) = (jan.clone(), app.url("/opml"));
            let three = std::sync::Arc::clone(&three);
            imports.spawn(async move {
                let _turn = three.acquire().await;
                import_outlines(&client, url, outlines).await
            });
        }
        let (mut added, mut over) = (0, 0);
        while let Some(done) = imports.join_next().await {
            let report = done.unwrap();
            added += report["added"].as_i64().unwrap();
            over += report["over_subscription_limit"].as_i64().unwrap();
        }
        assert_eq!((added, over), (4, 56));
        let (_, _, listed) = call(&jan, Method::GET, &app.url("/subscriptions"), None).await;
        assert_eq!(listed["subscriptions"].as_array().unwrap().len(), 4);
    }
);

/// A local server that tells TLS from plain HTTP on one port: every connection's first byte
/// is recorded (`tls` for a TLS handshake record, `http` otherwise); a TLS attempt is closed
/// at once, as by a server without https, and a plain request gets `feed`.
struct OnePortServer {
    address: std::net::SocketAddr,
    attempts: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl OnePortServer {
    async fn start(feed: impl Fn(&str) -> String + Send + Sync + 'static) -> OnePortServer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let attempts: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>> = Default::default();
        let (seen, feed) = (attempts.clone(), std::sync::Arc::new(feed));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (seen, feed) = (seen.clone(), feed.clone());
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 4096];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buffer).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => request.extend_from_slice(&buffer[..n]),
                        }
                        if request.first() == Some(&0x16) {
                            seen.lock().unwrap().push("tls");
                            return;
                        }
                    }
                    seen.lock().unwrap().push("http");
                    let text = String::from_utf8_lossy(&request);
                    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let body = feed(&path);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/rss+xml\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(body.as_bytes()).await;
                });
            }
        });
        OnePortServer { address, attempts }
    }

    fn attempts(&self) -> Vec<&'static str> {
        self.attempts.lock().unwrap().clone()
    }
}

on_both_engines!(a_url_without_a_scheme_tries_https_then_http, |db| {
    let app = TestApp::start(db).await;
    app.user("sam", false).await;
    let sam = app.signed_in("sam").await;
    let server = OnePortServer::start(|_| rss("http://127.0.0.1:9/", "plain", 2)).await;
    let port = server.address.port();

    // https first: its handshake reaches the server and goes unanswered; then http.
    let (status, body) = subscribe(
        &sam,
        &app,
        json!({"url": format!("localhost:{port}/feed.xml")}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let attempts = server.attempts();
    assert_eq!(
        attempts.first(),
        Some(&"tls"),
        "https was tried first: {attempts:?}"
    );
    assert!(attempts[1..].iter().all(|a| *a == "http"), "{attempts:?}");
    assert_eq!(body["scheme_added"], "http");
    assert_eq!(
        body["requested_url"],
        format!("http://localhost:{port}/feed.xml")
    );
    assert_eq!(
        body["subscription"]["feed_url"],
        format!("http://localhost:{port}/feed.xml")
    );
    let notice = body["notice"].as_str().unwrap();
    assert!(
        notice.contains("https did not answer") && notice.contains("http://localhost"),
        "{notice}"
    );

    // Nothing listens on this port at all: https fails to connect, http too, and the error
    // is the http attempt's.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let (status, body) = subscribe(
        &sam,
        &app,
        json!({"url": format!("127.0.0.1:{closed}/feed.xml")}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "feed_unreachable", "feed");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("http://127.0.0.1:{closed}/feed.xml")),
        "{body}"
    );

    // With a scheme, only that scheme is tried, and the answer says none was added.
    let site = feed_site().await;
    let (status, body) = subscribe(&sam, &app, json!({"url": site.url("/other.xml")})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(
        body["scheme_added"].is_null() && body["notice"].is_null(),
        "{body}"
    );
    assert_eq!(body["requested_url"], site.url("/other.xml"));
});

on_both_engines!(a_refused_https_attempt_is_not_retried_in_http, |db| {
    let app = TestApp::start_with(db, false, |_| {}).await;
    app.user("tia", false).await;
    let tia = app.signed_in("tia").await;
    let server = OnePortServer::start(|_| rss("http://127.0.0.1:9/", "plain", 1)).await;
    let port = server.address.port();
    let (status, body) = subscribe(
        &tia,
        &app,
        json!({"url": format!("127.0.0.1:{port}/feed.xml")}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "url_refused", "feed");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("https://127.0.0.1") && message.contains("TIDINGS_ALLOW_PRIVATE_NETWORKS"),
        "the refusal names the URL tried and the setting: {message}"
    );
    assert!(server.attempts().is_empty(), "no connection was made");
});

on_both_engines!(changing_a_feed_url_passes_the_subscribe_checks, |db| {
    let app = TestApp::start(db).await;
    let site = feed_site().await;
    site.serve(
        "/other-page.html",
        200,
        "text/html",
        format!(
            "<html><head><link rel=\"alternate\" type=\"application/rss+xml\" href=\"{}\">\
             </head><body>other</body></html>",
            site.url("/other.xml")
        ),
    );
    app.user("uma", false).await;
    app.user("vic", false).await;
    let uma = app.signed_in("uma").await;
    let vic = app.signed_in("vic").await;
    let (_, body) = subscribe(&uma, &app, json!({"url": site.url("/feed.xml")})).await;
    let id = body["subscription"]["id"].as_i64().unwrap();
    let path = app.url(&format!("/subscriptions/{id}"));
    let patch = |url: Value| {
        let (uma, path) = (&uma, &path);
        async move { call(uma, Method::PATCH, path, Some(json!({ "feed_url": url }))).await }
    };

    // Discovery: a page URL is resolved to its feed. Normalization: another spelling of
    // the feed Vic follows is that feed.
    let (_, vic_body) = subscribe(&vic, &app, json!({"url": site.url("/other.xml")})).await;
    let vic_feed = vic_body["subscription"]["feed_id"].as_i64().unwrap();
    let (status, _, body) = patch(json!(site.url("/other-page.html"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["feed_url"], site.url("/other.xml"));
    assert_eq!(body["subscription"]["feed_id"], vic_feed);
    assert!(body["scheme_added"].is_null());
    let shouting = site.url("/feed.xml?#top").replace("http://", "HTTP://");
    let (status, _, body) = patch(json!(shouting)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["feed_url"], site.url("/feed.xml"));

    // The scheme: only http(s).
    let (status, _, body) = patch(json!("ftp://127.0.0.1/feed.xml")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "url_refused", "feed");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("ftp"),
        "{body}"
    );
    // A URL without one: https first, then http (the local server has no https).
    let bare = site.url("/other.xml").replace("http://", "");
    let (status, _, body) = patch(json!(bare)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["scheme_added"], "http");
    assert_eq!(body["subscription"]["feed_url"], site.url("/other.xml"));
    assert!(
        body["notice"]
            .as_str()
            .unwrap()
            .contains("https did not answer")
    );
    // A page without a feed (and none at the conventional paths) changes nothing.
    let bare = TestServer::start_empty().await;
    bare.serve(
        "/plain.html",
        200,
        "text/html",
        "<html><body>no feeds here</body></html>",
    );
    let (status, _, body) = patch(json!(bare.url("/plain.html"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "no_feed_found", "feed");
    let (_, _, now) = call(&uma, Method::GET, &path, None).await;
    assert_eq!(now["subscription"]["feed_url"], site.url("/other.xml"));

    // The subscribe rate limit: ten URL changes or subscribes a minute (6 so far, counting
    // Uma's subscribe); title changes do not count.
    for n in 0..12 {
        let (status, _, body) = call(
            &uma,
            Method::PATCH,
            &path,
            Some(json!({"title": format!("title {n}")})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    for _ in 0..4 {
        assert_ne!(patch(json!("")).await.0, StatusCode::TOO_MANY_REQUESTS);
    }
    let (status, headers, body) = patch(json!(site.url("/feed.xml"))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(headers["x-ratelimit-scope"], "subscribe");
});

on_both_engines!(
    changing_a_feed_url_to_a_private_address_names_the_setting,
    |db| {
        let app = TestApp::start_with(db, false, |_| {}).await;
        let site = feed_site().await;
        let wes = app.user("wes", false).await;
        let subscription = app
            .store
            .subscribe(
                wes,
                &tidings_store::NewSubscription {
                    feed_url: "https://public.example/feed.xml".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let client = app.signed_in("wes").await;
        let (status, _, body) = call(
            &client,
            Method::PATCH,
            &app.url(&format!("/subscriptions/{}", subscription.id)),
            Some(json!({"feed_url": site.url("/feed.xml"), "title": "never applied"})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_error(&body, "url_refused", "feed");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("TIDINGS_ALLOW_PRIVATE_NETWORKS=true"),
            "names the setting: {message}"
        );
        assert_eq!(
            site.total_hits(),
            0,
            "no request reached the private address"
        );
        let unchanged = app.store.subscription(wes, subscription.id).await.unwrap();
        assert_eq!(unchanged.feed_url, "https://public.example/feed.xml");
        assert_eq!(unchanged.custom_title, None, "nothing was changed");
    }
);

on_both_engines!(stopped_feeds_are_resumed_all_at_once, |db| {
    let app = TestApp::start(db).await;
    let site = feed_site().await;
    app.user("xan", false).await;
    app.user("yul", false).await;
    app.user("zed", true).await;
    let xan = app.signed_in("xan").await;
    let yul = app.signed_in("yul").await;
    let zed = app.signed_in("zed").await;
    let feed_of = |body: Value| body["subscription"]["feed_id"].as_i64().unwrap();
    let xan_stopped = feed_of(
        subscribe(&xan, &app, json!({"url": site.url("/feed.xml")}))
            .await
            .1,
    );
    let xan_working = feed_of(
        subscribe(&xan, &app, json!({"url": site.url("/other.xml")}))
            .await
            .1,
    );
    site.serve(
        "/third.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "third", 1),
    );
    let yul_stopped = feed_of(
        subscribe(&yul, &app, json!({"url": site.url("/third.xml")}))
            .await
            .1,
    );
    app.store
        .execute_raw(&format!(
            "UPDATE feed_fetch_state SET status = 'stopped', status_reason = 'HTTP 410',
                    next_check_at = 4102444800
             WHERE feed_id IN ({xan_stopped}, {yul_stopped})"
        ))
        .await
        .unwrap();
    let status_of = async |feed: i64| app.store.feed_fetch_state(feed).await.unwrap().status;

    // A user resumes their own stopped feeds, not other users'.
    let resume_mine = app.url("/subscriptions/resume-stopped");
    let (status, _, body) = call(&xan, Method::POST, &resume_mine, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"resumed": 1}));
    assert_eq!(status_of(xan_stopped).await, FetchStatus::Active);
    assert_eq!(status_of(xan_working).await, FetchStatus::Active);
    assert_eq!(status_of(yul_stopped).await, FetchStatus::Stopped);
    let (_, _, body) = call(&xan, Method::POST, &resume_mine, None).await;
    assert_eq!(body, json!({"resumed": 0}));

    // Every stopped feed: administrators only.
    let resume_all = app.url("/feeds/resume-stopped");
    let (status, _, body) = call(&xan, Method::POST, &resume_all, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(status_of(yul_stopped).await, FetchStatus::Stopped);
    let (status, _, body) = call(&zed, Method::POST, &resume_all, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"resumed": 1}));
    let state = app.store.feed_fetch_state(yul_stopped).await.unwrap();
    assert_eq!(state.status, FetchStatus::Active);
    assert!(state.next_check_at <= tidings_store::unix_now(), "due now");

    // Without a session: 401. Both are in the OpenAPI document with their answers.
    let anonymous = app.browser();
    for path in [&resume_mine, &resume_all] {
        let (status, _, _) = call(&anonymous, Method::POST, path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let (_, _, openapi) = call(&anonymous, Method::GET, &app.url("/openapi.json"), None).await;
    for (path, codes) in [
        (
            "/api/v1/subscriptions/resume-stopped",
            ["200", "401", "403", "429"],
        ),
        ("/api/v1/feeds/resume-stopped", ["200", "401", "403", "429"]),
    ] {
        let responses = &openapi["paths"][path]["post"]["responses"];
        for code in codes {
            assert!(
                responses[code].is_object(),
                "{path} documents {code}: {responses}"
            );
        }
    }
    drop(yul);
});
