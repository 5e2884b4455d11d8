//! Reading habits in real headless Chromium (issue 34): an opened item shows its reading time
//! (Japanese counted by characters), "Mark read up to here" marks it and every item above it
//! read on the server, and with the preference on, items scrolled past are marked read.
//!
//! Without Chromium the test prints `SKIPPED … : chromium not installed` and passes.

use std::time::Duration;

use serde_json::Value;
use tidings_store::NewItem;
use tidings_testkit::{TestDb, follow};

use crate::browser::{Browser, skip_without_browser};
use crate::support::TestApp;

#[tokio::test]
async fn reading_habits_in_chromium() {
    if skip_without_browser("ui_habits::reading_habits_in_chromium") {
        return;
    }
    let db = TestDb::sqlite();
    let app = TestApp::start(&db).await;
    let ann = app.user("ann", false).await;
    let (_, feed) = follow(&app.store, ann, "https://wire.example/feed").await;
    let now = tidings_store::unix_now();
    let long = "word ".repeat(690);
    let japanese = "日本語の記事です。".repeat(120);
    let items: Vec<NewItem> = (1..=40)
        .map(|n| NewItem {
            guid: Some(format!("story-{n}")),
            title: Some(format!("Story {n}")),
            content: Some(format!(
                "<p>{}</p>",
                if n == 38 { &japanese } else { &long }
            )),
            published: Some(now - 60 * (41 - n)),
            ..NewItem::default()
        })
        .collect();
    app.store.upsert_items(feed, &items, now).await.unwrap();

    let b = Browser::start(1280, 860).await;
    b.sign_in(&app.base, "ann").await;
    b.goto(&format!("{}/all?filter=unread", app.base)).await;
    b.wait_for(
        "the stories",
        "document.querySelectorAll('#main li.item').length >= 40",
    )
    .await;

    // The third listed (story 38, newest first), opened: read, with its reading time. It is
    // Japanese: 1,080 characters, about two minutes.
    b.click_by_script("#main li.item:nth-child(3) .item-toggle")
        .await;
    let time = b
        .wait_for(
            "the reading time",
            "document.querySelector('#main li.item.expanded .reading-time')?.textContent",
        )
        .await;
    assert_eq!(time, Value::String("2 min read".into()));
    // The second (story 39): 690 words, three minutes.
    b.click_by_script("#main li.item:nth-child(2) .item-toggle")
        .await;
    let time = b
        .wait_for(
            "the reading time of words",
            "document.querySelector('#main li.item.expanded .reading-time')?.textContent",
        )
        .await;
    assert_eq!(time, Value::String("3 min read".into()));
    app.wait_unread(ann, 38).await;

    // "Mark read up to here" on the fifth: the first five are read, the rest not.
    b.click_by_script("#main li.item:nth-child(5) .item-toggle")
        .await;
    b.wait_for(
        "the fifth opened",
        "document.querySelector('#main li.item:nth-child(5) [data-role=read-up-to]') !== null",
    )
    .await;
    b.click("#main li.item:nth-child(5) [data-role=read-up-to]")
        .await;
    app.wait_unread(ann, 35).await;
    let read = b
        .eval("[...document.querySelectorAll('#main li.item')].slice(0, 6).map(li => li.classList.contains('is-read'))")
        .await;
    assert_eq!(
        read,
        serde_json::json!([true, true, true, true, true, false])
    );

    // Marking read on scroll, once asked for: items scrolled past are read, the rest not.
    let saved = b
        .js_async(
            "const done = arguments[arguments.length - 1]; \
             fetch('/api/v1/preferences', {method: 'PUT', headers: {'Content-Type': 'application/json'}, \
               body: JSON.stringify({mark_read_on_scroll: true})}).then(r => r.json()).then(done, e => done(String(e)));",
        )
        .await
        .unwrap();
    assert_eq!(saved["preferences"]["mark_read_on_scroll"], true, "{saved}");
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    b.wait_for(
        "every story",
        "document.querySelectorAll('#main li.item').length >= 40",
    )
    .await;
    // Scroll until the tenth item is above the top of the list.
    b.eval(
        "(() => { const li = document.querySelector('#main li.item:nth-child(11)'); \
           li.scrollIntoView({block: 'start'}); return true; })()",
    )
    .await;
    b.wait_for(
        "the items scrolled past shown read",
        "[...document.querySelectorAll('#main li.item')].slice(5, 9).every(li => li.classList.contains('is-read'))",
    )
    .await;
    let last_read = b
        .eval("document.querySelector('#main li.item:nth-child(40)').classList.contains('is-read')")
        .await;
    assert_eq!(last_read, Value::Bool(false), "not scrolled past");
    // On the server too (the marks go in batches): at least the four checked above.
    for _ in 0..100 {
        if app.unread_total(ann).await <= 31 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left = app.unread_total(ann).await;
    assert!((1..=31).contains(&left), "{left} unread");
    b.quit().await;
}
