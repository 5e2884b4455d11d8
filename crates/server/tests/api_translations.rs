//! Translations (issue 37) over HTTP against a real server, on both engines, with a
//! LibreTranslate stand-in on 127.0.0.1: "Translate" and its answer, the cache on
//! `GET /items/{id}?translated=true`, the target language (given, the user's setting, the
//! browser's), a subscription's "always translate", and the clear errors: translation off,
//! a bad language, a budget spent, a provider failing, another user's item.

use tidings_testkit::on_both_engines;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{TestApp, TestServer, assert_error, call, import_opml_and_wait};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A LibreTranslate stand-in: every text comes back with "[to]" before it (the title) or
/// around its HTML, with a script the server must remove; `fail` answers 500 from the request
/// of that number on (1-based; 0: never).
async fn libretranslate(fail: usize) -> (String, Arc<AtomicUsize>) {
    use axum::routing::post;
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let router = axum::Router::new().route(
        "/translate",
        post(move |axum::Json(body): axum::Json<Value>| {
            let seen = Arc::clone(&seen);
            async move {
                let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
                if fail > 0 && n >= fail {
                    return (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        axum::Json(json!({"error": "the model crashed"})),
                    );
                }
                let target = body["target"].as_str().unwrap_or_default().to_owned();
                let texts: Vec<Value> = body["q"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(i, q)| {
                        let q = q.as_str().unwrap();
                        if i == 0 {
                            json!(format!("[{target}] {q}"))
                        } else {
                            json!(format!("<div>{q}</div><script>alert(1)</script>"))
                        }
                    })
                    .collect();
                (
                    axum::http::StatusCode::OK,
                    axum::Json(json!({"translatedText": texts,
                                      "detectedLanguage": [{"confidence": 90, "language": "en"}]})),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (base, count)
}

fn worker(base: Option<&str>, user_budget: i64) -> tidings_worker::WorkerConfig {
    use tidings_worker::translations::{TranslateProviderKind, TranslateSettings};
    let translate = tidings_worker::TranslateConfig {
        settings: base.map(|base| TranslateSettings {
            kind: TranslateProviderKind::LibreTranslate,
            base_url: base.parse().unwrap(),
            api_key: None,
            model: None,
            timeout: Duration::from_secs(5),
        }),
        user_daily_budget: user_budget,
        retry: tidings_worker::summaries::RetryPolicy {
            tries: 2,
            first_backoff: Duration::from_millis(20),
            ..Default::default()
        },
        ..Default::default()
    };
    tidings_worker::WorkerConfig {
        translate,
        ..tidings_worker::WorkerConfig::default()
    }
}

/// A server translating through a LibreTranslate stand-in, an empty site to serve feeds
/// from, users ann and bob signed in, and the count of requests the stand-in answered.
async fn two_readers(
    db: &tidings_testkit::TestDb,
) -> (
    TestApp,
    TestServer,
    reqwest::Client,
    reqwest::Client,
    Arc<AtomicUsize>,
) {
    let (base, requests) = libretranslate(0).await;
    let app = TestApp::start_with_worker(db, true, |_| {}, worker(Some(&base), 100)).await;
    let site = TestServer::start_empty().await;
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    (app, site, ann, bob, requests)
}

/// Subscribes `client` to a feed of three English stories; the subscription and item ids.
async fn subscribe(client: &reqwest::Client, app: &TestApp, site: &TestServer) -> (i64, Vec<i64>) {
    let text = "The harbour town voted to restore its tidal mill, which last turned in 1950.";
    subscribe_to_stories(client, app, site, text).await
}

/// Subscribes `client` to a feed of three English stories with `text`; the subscription and
/// item ids.
async fn subscribe_to_stories(
    client: &reqwest::Client,
    app: &TestApp,
    site: &TestServer,
    text: &str,
) -> (i64, Vec<i64>) {
    serve_stories(site, text);
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": site.url("/feed.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["subscription"]["translate"], false);
    let sub = body["subscription"]["id"].as_i64().unwrap();
    let (_, _, body) = call(client, Method::GET, &app.url("/items?filter=all"), None).await;
    let mut ids: Vec<i64> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect();
    ids.sort();
    (sub, ids)
}

async fn translate(
    client: &reqwest::Client,
    app: &TestApp,
    id: i64,
    body: Value,
) -> (StatusCode, Value) {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url(&format!("/items/{id}/translate")),
        Some(body),
    )
    .await;
    (status, body)
}

on_both_engines!(translate_an_item_and_read_it_back, |db| {
    let (app, site, ann, bob, requests) = two_readers(db).await;
    let (sub, ids) = subscribe(&ann, &app, &site).await;

    let (status, body) = translate(&ann, &app, ids[0], json!({"to": "JA"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["to"], "ja");
    assert_eq!(body["from"], "en");
    assert_eq!(body["provider"], "libretranslate");
    let title = body["title"].as_str().unwrap();
    assert!(title.starts_with("[ja] Story "), "{title}");
    let content = body["content"].as_str().unwrap();
    assert!(content.starts_with("<p>The harbour town"), "{content}");
    assert!(!content.contains("script"), "sanitized again: {content}");
    // Kept: asked again, no request; and on the item with translated=true.
    let (status, again) = translate(&ann, &app, ids[0], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, body);
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    let url = app.url(&format!("/items/{}?translated=true&to=ja", ids[0]));
    let (status, _, item) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::OK, "{item}");
    assert_eq!(item["translation"], body);
    assert_eq!(item["item"]["title"].as_str().unwrap(), &title[5..]);
    // Without translated=true, or into a language it has none in: no translation.
    let (_, _, item) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/items/{}", ids[0])),
        None,
    )
    .await;
    assert!(item.get("translation").is_none(), "{item}");
    let url = app.url(&format!("/items/{}?translated=true", ids[0]));
    let (_, _, item) = call(&ann, Method::GET, &url, None).await;
    assert!(item.get("translation").is_none(), "into en: {item}");

    // The default target: the user's language setting.
    let (status, _, _) = call(
        &ann,
        Method::PUT,
        &app.url("/preferences"),
        Some(json!({"language": "zh-Hans"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = translate(&ann, &app, ids[1], json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["to"], "zh-Hans");

    // Errors: a bad language, another user's item.
    let (status, body) = translate(&ann, &app, ids[1], json!({"to": "not a language"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");
    let (status, body) = translate(&bob, &app, ids[1], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_error(&body, "not_found", "validation");
    let url = app.url(&format!("/items/{}?translated=true&to=x y", ids[0]));
    let (status, _, body) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");

    // "Always translate": into the user's language, or the one given; off again.
    let sub_url = app.url(&format!("/subscriptions/{sub}"));
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &sub_url,
        Some(json!({"translate": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["translate"], true);
    assert_eq!(body["subscription"]["translate_to"], "zh-Hans");
    let (_, _, body) = call(
        &ann,
        Method::PATCH,
        &sub_url,
        Some(json!({"translate": true, "translate_to": "de"})),
    )
    .await;
    assert_eq!(body["subscription"]["translate_to"], "de");
    let (_, _, list) = call(&ann, Method::GET, &app.url("/subscriptions"), None).await;
    assert_eq!(list["subscriptions"][0]["translate_to"], "de");
    let (_, _, one) = call(&ann, Method::GET, &sub_url, None).await;
    assert_eq!(one["subscription"]["translate"], true);
    let (_, _, body) = call(
        &ann,
        Method::PATCH,
        &sub_url,
        Some(json!({"translate": false})),
    )
    .await;
    assert_eq!(body["subscription"]["translate"], false);
    assert!(body["subscription"]["translate_to"].is_null());
});

on_both_engines!(translation_errors_say_what_to_do, |db| {
    // Off: 409 naming the setting.
    let app = TestApp::start_with_worker(db, true, |_| {}, worker(None, 100)).await;
    let site = TestServer::start_empty().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, ids) = subscribe(&ann, &app, &site).await;
    let (status, body) = translate(&ann, &app, ids[0], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "translation_off", "validation");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("TIDINGS_TRANSLATE_PROVIDER"), "{message}");
});

on_both_engines!(budgets_and_failing_providers_answer_clearly, |db| {
    // The provider fails from its third request on; the user may make four a day.
    let (base, _) = libretranslate(3).await;
    let app = TestApp::start_with_worker(db, true, |_| {}, worker(Some(&base), 4)).await;
    let site = TestServer::start_empty().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, ids) = subscribe(&ann, &app, &site).await;
    for id in &ids[..2] {
        let (status, body) = translate(&ann, &app, *id, json!({"to": "ja"})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // The third and fourth requests fail (500, then its retry): 502 saying what failed.
    let (status, body) = translate(&ann, &app, ids[2], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_error(&body, "translation_provider_failed", "system");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("libretranslate translation provider failed (HTTP 500)"),
        "{message}"
    );
    // The budget is spent now: refused before any request, until the next UTC day.
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url(&format!("/items/{}/translate", ids[2])),
        Some(json!({"to": "ja"})),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_error(&body, "translation_budget_spent", "limit");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("daily budget of 4"), "{message}");
});

/// Serves on `site` a feed of three English stories (`Story 0`…), each with `text`.
fn serve_stories(site: &TestServer, text: &str) {
    let mut items = String::new();
    for i in 0..3 {
        items.push_str(&format!(
            "<item><title>Story {i}</title><link>{0}/{i}</link><guid>g{i}</guid>\
             <description>&lt;p&gt;{text}&lt;/p&gt;</description></item>",
            site.base
        ));
    }
    site.serve(
        "/feed.xml",
        200,
        "application/rss+xml",
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>News</title>\
             <link>{}/</link><language>en</language>{items}</channel></rss>",
            site.base
        ),
    );
}

/// The ids of the items `GET /items?q=` finds.
async fn found(client: &reqwest::Client, app: &TestApp, query: &str) -> Vec<i64> {
    let url = app.url(&format!("/items?filter=all&q={query}"));
    let (status, _, body) = call(client, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

on_both_engines!(updated_items_stay_found_and_settings_travel, |db| {
    let (app, site, ann, bob, requests) = two_readers(db).await;
    let (sub, ids) = subscribe(&ann, &app, &site).await;
    let sub_url = app.url(&format!("/subscriptions/{sub}"));

    // Translated into Japanese: the stand-in's "[ja]" is a word only the translation has.
    let (status, body) = translate(&ann, &app, ids[0], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stale"], false);
    assert_eq!(found(&ann, &app, "ja").await, vec![ids[0]]);

    // "Always translate" on: every answer about the subscription says so, the refresh's
    // (which updates the items) and the resume's included.
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &sub_url,
        Some(json!({"translate": true, "translate_to": "ja"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, _, body) = call(
        &ann,
        Method::PATCH,
        &sub_url,
        Some(json!({"title": "Mill"})),
    )
    .await;
    assert_eq!(body["subscription"]["translate"], true, "{body}");
    assert_eq!(body["subscription"]["translate_to"], "ja");
    // The feed changes the stories' text: a refresh updates every item. Times are kept in
    // seconds: a change in the second the translation was made is not told from it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    serve_stories(&site, "The mill turned again this spring.");
    let (status, _, body) = call(&ann, Method::POST, &format!("{sub_url}/refresh"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items_updated"], 3, "{body}");
    assert_eq!(body["subscription"]["translate"], true, "{body}");
    let (_, _, body) = call(&ann, Method::POST, &format!("{sub_url}/resume"), None).await;
    assert_eq!(body["subscription"]["translate_to"], "ja", "{body}");

    // The item changed: still found by the translation's word and the new text's; the kept
    // translation says it is stale, and "Translate" makes a new one.
    assert_eq!(found(&ann, &app, "ja").await, vec![ids[0]]);
    assert_eq!(found(&ann, &app, "spring").await.len(), 3);
    let url = app.url(&format!("/items/{}?translated=true&to=ja", ids[0]));
    let (_, _, item) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(item["translation"]["stale"], true, "{item}");
    let before = requests.load(Ordering::SeqCst);
    let (status, body) = translate(&ann, &app, ids[0], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stale"], false);
    assert!(
        body["content"].as_str().unwrap().contains("turned again"),
        "{body}"
    );
    assert!(requests.load(Ordering::SeqCst) > before, "asked again");

    // OPML carries the setting: exported as tidings:translate, restored on import.
    let response = ann.get(app.url("/opml")).send().await.unwrap();
    let opml = response.text().await.unwrap();
    assert!(opml.contains("tidings:translate=\"ja\""), "{opml}");
    let job = import_opml_and_wait(&bob, &app.url("/opml"), None, opml).await;
    assert_eq!(job["status"], "done", "{job}");
    let (_, _, list) = call(&bob, Method::GET, &app.url("/subscriptions"), None).await;
    assert_eq!(list["subscriptions"][0]["translate"], true, "{list}");
    assert_eq!(list["subscriptions"][0]["translate_to"], "ja");
});

on_both_engines!(summaries_in_the_readers_language, |db| {
    let (base, requests) = libretranslate(0).await;
    let app = TestApp::start_with_worker(db, true, |_| {}, worker(Some(&base), 100)).await;
    let site = TestServer::start_empty().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    // English stories long enough to summarize (the built-in summarizer).
    let sentence = "The harbour town voted to restore its tidal mill, which last turned in 1950. ";
    let (_, ids) = subscribe_to_stories(&ann, &app, &site, &sentence.repeat(20)).await;
    let id = ids[0];
    let summarize = |query: &'static str| {
        let url = app.url(&format!("/items/{id}/summarize{query}"));
        let ann = ann.clone();
        async move { call(&ann, Method::POST, &url, None).await }
    };

    // Into Japanese: the summary through the translation provider, once.
    let (status, _, body) = summarize("?translated=true&to=ja").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let summary = body["generated_summary"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(summary.starts_with("The harbour town"), "{body}");
    let translation = &body["translation"];
    assert_eq!(translation["to"], "ja", "{body}");
    assert_eq!(translation["from"], "en");
    assert_eq!(translation["provider"], "libretranslate");
    let text = translation["text"].as_str().unwrap();
    assert!(text.starts_with("[ja] The harbour town"), "{text}");
    assert!(!text.contains('<'), "plain text: {text}");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    // Kept: no second request.
    let (_, _, again) = summarize("?translated=true&to=ja").await;
    assert_eq!(again["translation"]["text"], text);
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    // Into the user's language (their setting), and into the item's own: no request for it.
    let (_, _, _) = call(
        &ann,
        Method::PUT,
        &app.url("/preferences"),
        Some(json!({"language": "en"})),
    )
    .await;
    let (status, _, own) = summarize("?translated=true").await;
    assert_eq!(status, StatusCode::OK, "{own}");
    assert_eq!(own["translation"]["to"], "en");
    assert_eq!(own["translation"]["text"], summary.as_str());
    assert_eq!(own["translation"]["provider"], "local");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    // Without translated=true: no translation; a bad tag: 400 before anything.
    let (_, _, plain) = summarize("").await;
    assert!(plain.get("translation").is_none(), "{plain}");
    let (status, _, bad) = summarize("?translated=true&to=x%20y").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    assert_error(&bad, "invalid_request", "validation");
    // The item carries the kept one with translated=true.
    let url = app.url(&format!("/items/{id}?translated=true&to=ja"));
    let (_, _, item) = call(&ann, Method::GET, &url, None).await;
    assert_eq!(item["summary_translation"]["text"], text, "{item}");
});

on_both_engines!(summaries_in_another_language_need_a_provider, |db| {
    let app = TestApp::start_with_worker(db, true, |_| {}, worker(None, 100)).await;
    let site = TestServer::start_empty().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, ids) = subscribe(&ann, &app, &site).await;
    // Too short to summarize comes first; the long item is in the other test. Here only the
    // refusal of a bad tag and "off" on an item with a summary made by hand.
    app.store
        .save_summary(ids[0], "A mill turns again.", "local", None, 2000, 1)
        .await
        .unwrap();
    let url = app.url(&format!(
        "/items/{}/summarize?translated=true&to=ja",
        ids[0]
    ));
    let (status, _, body) = call(&ann, Method::POST, &url, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "translation_off", "validation");
});

/// The `translated_title` of each listed item, by id.
async fn translated_titles(client: &reqwest::Client, url: &str) -> Vec<(i64, Value)> {
    let (status, _, body) = call(client, Method::GET, url, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut titles: Vec<(i64, Value)> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].as_i64().unwrap(), i["translated_title"].clone()))
        .collect();
    titles.sort_by_key(|(id, _)| *id);
    titles
}

on_both_engines!(always_translated_feeds_list_translated_titles, |db| {
    let (app, site, ann, bob, _) = two_readers(db).await;
    let (sub, ids) = subscribe(&ann, &app, &site).await;
    subscribe(&bob, &app, &site).await;
    let (status, body) = translate(&ann, &app, ids[0], json!({"to": "ja"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let title = body["title"].clone();
    assert!(title.as_str().unwrap().starts_with("[ja] "), "{body}");
    let list = app.url("/items?filter=all");
    let none: Vec<(i64, Value)> = ids.iter().map(|id| (*id, Value::Null)).collect();

    // Translated, but the feed is not always translated: listings show the original alone.
    assert_eq!(translated_titles(&ann, &list).await, none);

    // "Always translate" into Japanese: the translated item lists its Japanese title, in
    // every listing and the single item; the others (no translation made yet) none.
    always_translate(&ann, &app, sub, "ja").await;
    let expected = json!({"text": title, "language": "ja"});
    let mut with_title = none.clone();
    with_title[0].1 = expected.clone();
    assert_eq!(translated_titles(&ann, &list).await, with_title);
    let search = app.url("/items?filter=all&q=tidal");
    assert_eq!(translated_titles(&ann, &search).await, with_title);
    let (_, _, item) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/items/{}", ids[0])),
        None,
    )
    .await;
    assert_eq!(item["item"]["translated_title"], expected, "{item}");

    // Another reader of the same feed, without the setting, sees the original.
    assert_eq!(translated_titles(&bob, &list).await, none);

    // Into the items' own language: nothing to show, whatever is kept.
    always_translate(&ann, &app, sub, "en-GB").await;
    assert_eq!(translated_titles(&ann, &list).await, none);
});

/// Turns "always translate" on for subscription `sub`, into `to`.
async fn always_translate(client: &reqwest::Client, app: &TestApp, sub: i64, to: &str) {
    let (status, _, body) = call(
        client,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{sub}")),
        Some(json!({"translate": true, "translate_to": to})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
