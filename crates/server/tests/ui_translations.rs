//! Translation in the web UI (issue 37) in real headless Chromium, on both engines, with a
//! LibreTranslate stand-in on 127.0.0.1: an opened item in another language than the reader's
//! offers "Translate"; the translation replaces the text in place (its title above it, `lang`
//! the target's), and the same button goes back to the original and to the translation again
//! without asking the server twice; an item in the reader's language offers nothing; the feed
//! settings' "always translate" is saved.
//!
//! Without Chromium the tests print `SKIPPED … : chromium not installed` and pass.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tidings_testkit::{TestDb, on_both_engines};

use crate::browser::{Browser, skip_without_browser};
use crate::support::{PASSWORD, TestApp};

/// A LibreTranslate stand-in answering every request with an English text; counts requests.
async fn libretranslate() -> (String, Arc<AtomicUsize>) {
    use axum::routing::post;
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let router = axum::Router::new().route(
        "/translate",
        post(move |axum::Json(body): axum::Json<Value>| {
            let seen = Arc::clone(&seen);
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                let target = body["target"].as_str().unwrap_or_default().to_owned();
                axum::Json(json!({
                    "translatedText": [
                        format!("[{target}] The council passes a new transport budget"),
                        "<p>The council approved the budget on Tuesday.</p><script>alert(1)</script>",
                    ],
                    "detectedLanguage": [{"confidence": 95, "language": "ja"}],
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (base, count)
}

on_both_engines!(translate_toggles_between_original_and_translation, |db| {
    if skip_without_browser("ui_translations::translate_toggles_between_original_and_translation") {
        return;
    }
    toggle(db).await;
});

async fn toggle(db: &TestDb) {
    use tidings_worker::translations::{TranslateProviderKind, TranslateSettings};
    let (base, requests) = libretranslate().await;
    let worker = tidings_worker::WorkerConfig {
        translate: tidings_worker::TranslateConfig {
            settings: Some(TranslateSettings {
                kind: TranslateProviderKind::LibreTranslate,
                base_url: base.parse().unwrap(),
                api_key: None,
                model: None,
                timeout: Duration::from_secs(5),
            }),
            ..Default::default()
        },
        ..tidings_worker::WorkerConfig::default()
    };
    let app = TestApp::start_with_worker(db, true, |_| {}, worker).await;
    let ann = app.user("ann", false).await;
    let (subscription, feed) =
        tidings_testkit::follow(&app.store, ann, "https://news.example/feed").await;
    let now = tidings_store::unix_now();
    let item = |guid: &str, age: i64, title: &str, text: &str| tidings_store::NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(format!("<p>{text}</p>")),
        published: Some(now - age),
        ..tidings_store::NewItem::default()
    };
    let items = [
        item(
            "ja",
            3600,
            "市議会、公共交通の新予算を可決",
            "市議会は火曜日の夜、バスや路面電車により多くの予算を充てる新しい予算案を可決した。",
        ),
        item(
            "en",
            7200,
            "City council approves new budget for public transport",
            "The city council voted on Tuesday evening to approve a new budget for buses.",
        ),
    ];
    app.store.upsert_items(feed, &items, now).await.unwrap();

    let b = Browser::start(1280, 860).await;
    open_and_toggle(&b, &app, feed, &requests).await;
    // The feed's settings: "always translate" is saved into the reader's language.
    b.goto(&format!("{}/feeds/{feed}/settings", app.base)).await;
    b.wait_for(
        "the feed settings",
        "document.querySelector('#feed-translate') !== null",
    )
    .await;
    b.click("#feed-translate").await;
    b.click("form.form button[type=submit]").await;
    b.wait_for(
        "saved",
        "document.querySelector('.settings .success') !== null",
    )
    .await;
    let translations = app.store.subscription_translations(ann).await.unwrap();
    assert_eq!(
        translations.get(&subscription).map(String::as_str),
        Some("en")
    );
    b.quit().await;
}

/// Signs ann in, translates the Japanese item and toggles between original and translation;
/// the English item offers nothing.
async fn open_and_toggle(b: &Browser, app: &TestApp, feed: i64, requests: &AtomicUsize) {
    b.goto(&format!("{}/login", app.base)).await;
    b.type_into("#username", "ann").await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    b.wait_for(
        "two rows",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    // The Japanese item, opened, offers "Translate" (the reader's language is English).
    let first = "document.querySelectorAll('#main li.item')[0]";
    b.eval(&format!("{first}.querySelector('.item-toggle').click()"))
        .await;
    let button = format!("{first}.querySelector('[data-action=translate]')");
    b.wait_for(
        "Translate",
        &format!("{button}?.textContent === 'Translate'"),
    )
    .await;
    let content = format!("{first}.querySelector('.item-content')");
    b.eval(&format!("{button}.click()")).await;
    b.wait_for(
        "the translation",
        &format!("{button}.getAttribute('aria-pressed') === 'true'"),
    )
    .await;
    let shown = b
        .eval(&format!(
            "({{ title: {content}.querySelector('.item-translated-title')?.textContent, \
                text: {content}.textContent, lang: {content}.getAttribute('lang'), \
                scripts: {content}.querySelectorAll('script').length, \
                button: {button}.textContent }})"
        ))
        .await;
    assert_eq!(
        shown["title"], "[en] The council passes a new transport budget",
        "{shown}"
    );
    assert!(
        shown["text"]
            .as_str()
            .unwrap()
            .contains("The council approved the budget on Tuesday."),
        "{shown}"
    );
    assert!(
        !shown["text"].as_str().unwrap().contains("市議会"),
        "{shown}"
    );
    assert_eq!(shown["lang"], "en", "{shown}");
    assert_eq!(shown["scripts"], 0, "sanitized by the server: {shown}");
    assert_eq!(shown["button"], "Show original", "{shown}");
    assert_eq!(requests.load(Ordering::SeqCst), 1);

    // Back to the original, and to the translation again without another request.
    b.eval(&format!("{button}.click()")).await;
    let original = b
        .wait_for(
            "the original",
            &format!(
                "{button}.getAttribute('aria-pressed') === 'false' \
                 && [{content}.textContent, {content}.getAttribute('lang'), {button}.textContent]"
            ),
        )
        .await;
    assert!(
        original[0].as_str().unwrap().contains("市議会は火曜日"),
        "{original}"
    );
    assert_eq!(original[1], "ja", "{original}");
    assert_eq!(original[2], "Show translation", "{original}");
    b.eval(&format!("{button}.click()")).await;
    b.wait_for(
        "the translation again",
        &format!(
            "{button}.getAttribute('aria-pressed') === 'true' \
             && {content}.textContent.includes('The council approved')"
        ),
    )
    .await;
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    // Kept by the server, for the API and other readers.
    let mut kept = 0;
    for id in app.store.feed_item_ids(feed).await.unwrap() {
        let translation = app.store.item_translation(id, "en").await.unwrap();
        kept += usize::from(translation.is_some());
    }
    assert_eq!(kept, 1, "the Japanese item's translation is kept");

    // The English item offers no translation.
    let second = "document.querySelectorAll('#main li.item')[1]";
    b.eval(&format!("{second}.querySelector('.item-toggle').click()"))
        .await;
    b.wait_for(
        "the English item opened",
        &format!("{second}.querySelector('[data-action=read]') !== null"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let offered = b
        .eval(&format!(
            "{second}.querySelector('[data-action=translate]') !== null"
        ))
        .await;
    assert_eq!(offered, false);
}
