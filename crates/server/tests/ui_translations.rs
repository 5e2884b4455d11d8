//! Translation in the web UI (issue 37) in real headless Chromium, on both engines, with a
//! LibreTranslate stand-in on 127.0.0.1: an opened item in another language than the reader's
//! offers "Translate"; the translation replaces the text in place (its title above it, `lang`
//! the target's), and the same button goes back to the original and to the translation again
//! without asking the server twice; an item in the reader's language offers nothing; the feed
//! settings' "always translate" is saved, after which the list shows the item's translated
//! title and the item opens translated. A generated summary is translated with its item.
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
                // An item is sent as its title and text; a summary as its text alone.
                let texts = if body["q"].as_array().map_or(0, Vec::len) == 1 {
                    json!([format!("<p>[{target}] Buses and trams get more money.</p>")])
                } else {
                    json!([
                        format!("[{target}] The council passes a new transport budget"),
                        "<p>The council approved the budget on Tuesday.</p><script>alert(1)</script>",
                    ])
                };
                axum::Json(json!({
                    "translatedText": texts,
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
    // The Japanese item has a generated summary, which is translated with it.
    let ids = app.store.feed_item_ids(feed).await.unwrap();
    for id in ids {
        let item = app.store.item(ann, id).await.unwrap();
        if item.language.as_deref() == Some("ja") {
            let summary = "市議会はバスと路面電車の予算を増やした。";
            let saved = app.store.save_summary(id, summary, "local", None, 60, now);
            saved.await.unwrap().unwrap();
        }
    }

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
    always_translated(&b, &app, &requests).await;
    b.quit().await;
}

/// With "always translate" on, the list shows the kept translated title (the original on
/// hover) and the item opens translated, summary included, without asking the provider
/// again; "Show original" goes back.
async fn always_translated(b: &Browser, app: &TestApp, requests: &AtomicUsize) {
    // Both items were opened, so read: the list of all items shows them.
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    let first = "document.querySelectorAll('#main li.item')[0]";
    let title = format!("{first}?.querySelector('.item-title')");
    let row = b
        .wait_for(
            "the translated title",
            &format!(
                "{title}?.classList.contains('translated') \
                 && [{title}.textContent, {title}.lang, {title}.title]"
            ),
        )
        .await;
    assert_eq!(
        row,
        json!([
            "[en] The council passes a new transport budget",
            "en",
            "市議会、公共交通の新予算を可決"
        ])
    );
    b.eval(&format!("{first}.querySelector('.item-toggle').click()"))
        .await;
    let button = format!("{first}.querySelector('[data-action=translate]')");
    let content = format!("{first}.querySelector('.item-content')");
    let summary = format!("{first}.querySelector('.item-summary p')");
    let opened = b
        .wait_for(
            "opened translated",
            &format!(
                "{button}?.getAttribute('aria-pressed') === 'true' \
                 && [{content}.textContent.includes('The council approved'), {content}.lang, \
                     {summary}.textContent, {summary}.lang, {button}.textContent, \
                     {content}.querySelectorAll('.item-translated-title').length]"
            ),
        )
        .await;
    // The row already shows the translated title: none is added above the text.
    assert_eq!(
        opened,
        json!([
            true,
            "en",
            "[en] Buses and trams get more money.",
            "en",
            "Show original",
            0
        ])
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        2,
        "the kept ones were read"
    );
    b.eval(&format!("{button}.click()")).await;
    let original = b
        .wait_for(
            "the original",
            &format!(
                "{button}.getAttribute('aria-pressed') === 'false' \
                 && [{content}.textContent.includes('市議会は火曜日'), {summary}.textContent, \
                     {summary}.lang, {title}.textContent, {title}.lang]"
            ),
        )
        .await;
    // The row's title goes back to the original with the text.
    assert_eq!(
        original,
        json!([
            true,
            "市議会はバスと路面電車の予算を増やした。",
            "ja",
            "市議会、公共交通の新予算を可決",
            "ja"
        ])
    );
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
    // The generated summary comes in the same language: one request for the item, one for
    // its summary.
    let summary = format!("{first}.querySelector('.item-summary p')");
    let translated_summary = b
        .wait_for(
            "the summary's translation",
            &format!("{summary}.lang === 'en' && {summary}.textContent"),
        )
        .await;
    assert_eq!(translated_summary, "[en] Buses and trams get more money.");
    assert_eq!(requests.load(Ordering::SeqCst), 2);

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
    let summary_back = b
        .eval(&format!("[{summary}.textContent, {summary}.lang]"))
        .await;
    assert_eq!(
        summary_back,
        json!(["市議会はバスと路面電車の予算を増やした。", "ja"])
    );
    b.eval(&format!("{button}.click()")).await;
    b.wait_for(
        "the translation again",
        &format!(
            "{button}.getAttribute('aria-pressed') === 'true' \
             && {content}.textContent.includes('The council approved')"
        ),
    )
    .await;
    assert_eq!(requests.load(Ordering::SeqCst), 2);
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
