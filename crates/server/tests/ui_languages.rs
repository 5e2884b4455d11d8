//! The web UI's languages in real headless Chromium (issue 34): the `language` preference set
//! to Japanese in Settings draws the reader in Japanese, with `<html lang="ja">`, and keeps it
//! after a reload, even on a browser that remembers nothing; a Chromium whose language is
//! Chinese (China) gets Simplified Chinese while the preference is `auto`.
//!
//! Without Chromium the tests print `SKIPPED … : chromium not installed` and pass.

use serde_json::Value;
use tidings_testkit::{TestDb, on_both_engines};

use crate::browser::{Browser, skip_without_browser};
use crate::support::{PASSWORD, TestApp};

/// A user `ann` following a feed with two items; answers the app and her id.
async fn app_with_items(db: &TestDb) -> (TestApp, i64) {
    let app = TestApp::start(db).await;
    let user = app.user("ann", false).await;
    app.feed_with_items(
        user,
        "https://news.example/feed",
        &["First news", "Second news"],
    )
    .await;
    (app, user)
}

/// Signs `ann` in through the sign-in page and waits for the reader.
async fn sign_in(b: &Browser, base: &str) {
    b.goto(&format!("{base}/login")).await;
    b.type_into("#username", "ann").await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    b.wait_for(
        "the reader",
        "document.querySelector('#main li.item') !== null",
    )
    .await;
}

/// The words the reader shows: the sidebar's views, the filter tabs, the list's and the top
/// bar's buttons, the first item's buttons once opened, and `<html lang>`.
async fn reader_words(b: &Browser) -> Value {
    b.click("#main li.item .item-toggle").await;
    b.wait_for(
        "the opened item's buttons",
        "document.querySelector('#main li.expanded [data-action=read]') !== null",
    )
    .await;
    b.eval(
        "({ lang: document.documentElement.lang, \
            views: [...document.querySelectorAll('.top-entries .feed-title')].map(e => e.textContent), \
            filters: [...document.querySelectorAll('.list-header nav.tabs a')].map(e => e.textContent), \
            markAll: document.querySelector('#mark-all-read').textContent, \
            subscribe: document.querySelector('#subscribe-button').textContent, \
            read: document.querySelector('#main li.expanded [data-action=read]').textContent, \
            heading: document.querySelector('nav#feeds .pane-heading').textContent })",
    )
    .await
}

on_both_engines!(the_language_preference_draws_the_reader_in_japanese, |db| {
    if skip_without_browser("ui_languages::the_language_preference_draws_the_reader_in_japanese") {
        return;
    }
    japanese_by_preference(db).await;
});

/// The preference, stored on the test's engine, draws the reader in Japanese.
async fn japanese_by_preference(db: &TestDb) {
    let (app, ann) = app_with_items(db).await;
    let b = Browser::start(1280, 860).await;
    sign_in(&b, &app.base).await;
    let english = reader_words(&b).await;
    assert_eq!(english["lang"], "en", "{english}");
    assert_eq!(english["views"][0], "All items", "{english}");
    assert_eq!(english["markAll"], "Mark all read", "{english}");

    // Settings: the selector names each language in itself and saves the preference; the
    // page is drawn again in Japanese at once.
    b.goto(&format!("{}/settings", app.base)).await;
    b.wait_for(
        "the language selector",
        "document.querySelector('#pref-language option[value=ja]')?.textContent === '日本語'",
    )
    .await;
    b.js(
        "const s = document.querySelector('#pref-language'); s.value = 'ja'; \
         s.dispatchEvent(new Event('change', {bubbles: true}));",
        vec![],
    )
    .await
    .unwrap();
    b.wait_for(
        "the settings page in Japanese",
        "document.documentElement.lang === 'ja' \
         && document.querySelector('#page-title')?.textContent === '設定'",
    )
    .await;
    let saved = app.store.preferences(ann).await.unwrap();
    assert_eq!(saved.language, "ja");

    // A reload on a browser that remembers nothing: the account's preference decides.
    b.eval("(localStorage.clear(), true)").await;
    b.goto(&format!("{}/all", app.base)).await;
    b.wait_for(
        "the reader in Japanese",
        "document.querySelector('#main li.item') !== null && document.documentElement.lang === 'ja'",
    )
    .await;
    let japanese = reader_words(&b).await;
    assert_eq!(japanese["lang"], "ja", "{japanese}");
    assert_eq!(japanese["views"][0], "すべての記事", "{japanese}");
    assert_eq!(japanese["views"][1], "スター付き", "{japanese}");
    assert_eq!(japanese["filters"][1], "未読", "{japanese}");
    assert_eq!(japanese["markAll"], "すべて既読にする", "{japanese}");
    assert_eq!(japanese["subscribe"], "購読", "{japanese}");
    assert_eq!(japanese["heading"], "購読中", "{japanese}");
    // Opening marked the item read: its button offers the way back.
    assert_eq!(japanese["read"], "未読にする", "{japanese}");
    // Dates are written in Japanese too (relative times: "1 時間前").
    let date = b
        .eval("document.querySelector('#main li.item time').textContent")
        .await;
    assert!(date.as_str().unwrap().contains('前'), "{date}");
    b.quit().await;
}

#[tokio::test]
async fn a_chinese_browser_gets_simplified_chinese() {
    if skip_without_browser("ui_languages::a_chinese_browser_gets_simplified_chinese") {
        return;
    }
    let db = TestDb::sqlite();
    let (app, ann) = app_with_items(&db).await;
    let b = Browser::start_in(1280, 860, "zh-CN").await;
    b.goto(&format!("{}/login", app.base)).await;
    // The sign-in page already speaks the browser's language.
    b.wait_for(
        "the sign-in page in Chinese",
        "document.querySelector('#sign-in-form button[type=submit]')?.textContent === '登录'",
    )
    .await;
    let languages = b.eval("navigator.languages.join(',')").await;
    assert!(languages.as_str().unwrap().starts_with("zh"), "{languages}");
    sign_in(&b, &app.base).await;
    let chinese = reader_words(&b).await;
    assert_eq!(chinese["lang"], "zh-Hans", "{chinese}");
    assert_eq!(chinese["views"][0], "全部文章", "{chinese}");
    assert_eq!(chinese["views"][1], "星标", "{chinese}");
    assert_eq!(chinese["filters"][1], "未读", "{chinese}");
    assert_eq!(chinese["markAll"], "全部标为已读", "{chinese}");
    assert_eq!(chinese["subscribe"], "订阅", "{chinese}");
    assert_eq!(chinese["read"], "标为未读", "{chinese}");
    let preferences = app.store.preferences(ann).await.unwrap();
    assert_eq!(preferences.language, "auto");
    b.quit().await;
}

/// The shell (the words while the app loads, and without JavaScript) is written in the
/// language the app remembered in its cookie, else the browser's; no browser needed.
#[tokio::test]
async fn the_shell_is_written_in_the_readers_language() {
    let db = TestDb::sqlite();
    let app = TestApp::start(&db).await;
    let shell = |headers: Vec<(&'static str, &'static str)>| {
        let url = format!("{}/all", app.base);
        async move {
            let mut request = reqwest::Client::new().get(url);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.headers()["vary"], "Accept-Language, Cookie");
            response.text().await.unwrap()
        }
    };
    let english = shell(vec![]).await;
    assert!(english.contains("<html lang=\"en\""), "{english}");
    assert!(english.contains("Loading tidings…"));
    let japanese = shell(vec![("accept-language", "ja-JP,ja;q=0.9,en;q=0.8")]).await;
    assert!(japanese.contains("<html lang=\"ja\""), "{japanese}");
    assert!(
        japanese.contains("tidings を読み込んでいます…"),
        "{japanese}"
    );
    assert!(
        japanese.contains("JavaScript を有効にしてください"),
        "{japanese}"
    );
    // The choice remembered by the app wins over the browser's language.
    let chosen = shell(vec![
        ("accept-language", "ja-JP"),
        ("cookie", "tidings_language=zh-Hans"),
    ])
    .await;
    assert!(chosen.contains("<html lang=\"zh-Hans\""), "{chosen}");
    assert!(chosen.contains("正在加载 tidings…"), "{chosen}");
    let auto = shell(vec![
        ("accept-language", "zh-CN"),
        ("cookie", "tidings_language=auto"),
    ])
    .await;
    assert!(auto.contains("<html lang=\"zh-Hans\""), "{auto}");

    // The install prompt and the installed app's shortcuts say the same.
    let manifest: Value = reqwest::Client::new()
        .get(format!("{}/manifest.webmanifest", app.base))
        .header("accept-language", "ja-JP,ja;q=0.9")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(manifest["lang"], "ja", "{manifest}");
    assert_eq!(manifest["shortcuts"][0]["name"], "未読", "{manifest}");
}

on_both_engines!(items_carry_their_language_as_lang, |db| {
    if skip_without_browser("ui_languages::items_carry_their_language_as_lang") {
        return;
    }
    items_in_three_languages(db).await;
});

/// The `language` of each entry of `list` in the answer of `GET /api/v1{path}`, in the
/// browser's session.
async fn languages_in(b: &Browser, path: &str, list: &str) -> Value {
    b.js_async(&format!(
        "const done = arguments[arguments.length - 1]; \
         fetch('/api/v1{path}').then(r => r.json()) \
           .then(l => done(l.{list}.map(e => e.language)), e => done(String(e)));"
    ))
    .await
    .unwrap()
}

/// An item of each language (issue 37), as a feed that declares none gives them.
fn item_in(guid: &str, age: i64, title: &str, text: &str) -> tidings_store::NewItem {
    tidings_store::NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(format!("<p>{text}</p>")),
        published: Some(tidings_store::unix_now() - age),
        ..tidings_store::NewItem::default()
    }
}

/// A Japanese, a Chinese and an English item in one feed: each list row's title (and
/// excerpt) and each opened item's text carry the item's detected language as `lang`, while
/// the page itself stays in the reader's language; the API gives the same tags; a bookmark
/// of the Japanese item does too.
async fn items_in_three_languages(db: &TestDb) {
    let app = TestApp::start(db).await;
    let ann = app.user("ann", false).await;
    let (_, feed) = tidings_testkit::follow(&app.store, ann, "https://mixed.example/feed").await;
    let items = [
        item_in(
            "ja",
            3600,
            "市議会、公共交通の新予算を可決",
            "市議会は火曜日の夜、バスや路面電車により多くの予算を充てる新しい予算案を可決した。",
        ),
        item_in(
            "zh",
            7200,
            "市议会通过公共交通新预算",
            "市议会周二晚间通过了一项新预算，为公交车和有轨电车拨出更多资金。",
        ),
        item_in(
            "en",
            10800,
            "City council approves new budget for public transport",
            "The city council voted on Tuesday evening to approve a new budget for buses.",
        ),
    ];
    let now = tidings_store::unix_now();
    app.store.upsert_items(feed, &items, now).await.unwrap();

    let b = Browser::start(1280, 860).await;
    sign_in(&b, &app.base).await;
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    b.wait_for(
        "three rows",
        "document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    let rows = b
        .eval(
            "[...document.querySelectorAll('#main li.item')].map(li => [ \
               li.querySelector('.item-title').textContent, \
               li.querySelector('.item-title').getAttribute('lang'), \
               li.querySelector('.item-excerpt').getAttribute('lang')])",
        )
        .await;
    assert_eq!(
        rows,
        serde_json::json!([
            ["市議会、公共交通の新予算を可決", "ja", "ja"],
            ["市议会通过公共交通新预算", "zh", "zh"],
            [
                "City council approves new budget for public transport",
                "en",
                "en"
            ]
        ]),
        "{rows}"
    );
    // Opened, each item's text is in its language; the page stays English.
    for (n, expected) in ["ja", "zh", "en"].into_iter().enumerate() {
        let row = format!("document.querySelectorAll('#main li.item')[{n}]");
        b.eval(&format!("{row}.querySelector('.item-toggle').click()"))
            .await;
        let opened = b
            .wait_for(
                "the opened item's text",
                &format!(
                    "(() => {{ const c = {row}.querySelector('.item-content'); \
                       return !!c && !{row}.querySelector('.item-body').hidden \
                         && c.getAttribute('lang'); }})()"
                ),
            )
            .await;
        assert_eq!(opened, expected, "item {n}");
    }
    assert_eq!(b.eval("document.documentElement.lang").await, "en");
    let listed = languages_in(&b, "/items?filter=all", "items").await;
    assert_eq!(listed, serde_json::json!(["ja", "zh", "en"]), "{listed}");
    // The subscription carries its feed's language: a three-way tie goes to the newest item's.
    let subscriptions = languages_in(&b, "/subscriptions", "subscriptions").await;
    assert_eq!(subscriptions, serde_json::json!(["ja"]), "{subscriptions}");
    bookmarked_in_its_language(&b, &app, ann, feed).await;
}

/// A bookmark keeps its item's language: its title and its opened copy carry it as `lang`.
async fn bookmarked_in_its_language(b: &Browser, app: &TestApp, ann: i64, feed: i64) {
    for id in app.store.feed_item_ids(feed).await.unwrap() {
        let item = app.store.item(ann, id).await.unwrap();
        if item.language.as_deref() == Some("ja") {
            app.store.create_bookmark(ann, id).await.unwrap();
        }
    }
    b.goto(&format!("{}/bookmarks", app.base)).await;
    let row = "document.querySelector('#main li.item')";
    let title = b
        .wait_for(
            "the bookmark",
            &format!("{row}?.querySelector('.item-title').getAttribute('lang')"),
        )
        .await;
    assert_eq!(title, "ja");
    b.eval(&format!("{row}.querySelector('.item-toggle').click()"))
        .await;
    let copy = b
        .wait_for(
            "the bookmark's copy",
            &format!("{row}.querySelector('.item-content')?.getAttribute('lang')"),
        )
        .await;
    assert_eq!(copy, "ja");
}
