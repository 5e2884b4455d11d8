//! The Rules page in real headless Chromium (issue 33): a rule typed into the editor shows,
//! as it is typed, which recent items it would catch (Japanese included); saved, it is listed;
//! "Apply now" hides what it catches and its Undo brings them back; an opened item's "Hide
//! items like this" opens the editor prefilled for its feed; the page fits a phone's width.
//!
//! Without Chromium the test prints `SKIPPED … : chromium not installed` and passes.

use serde_json::{Value, json};
use tidings_testkit::TestDb;

use crate::browser::{Browser, skip_without_browser};
use crate::support::TestApp;

/// Fetches an API path from inside the page (with its session) and answers the JSON.
async fn api_in_page(b: &Browser, path: &str) -> Value {
    b.js_async(&format!(
        "const done = arguments[arguments.length - 1]; \
         fetch('/api/v1{path}').then(r => r.json()).then(done, e => done(String(e)));"
    ))
    .await
    .expect("fetch in page")
}

/// How many items a listing of all of the user's items holds, asked from the page.
async fn all_items(b: &Browser) -> usize {
    let page = api_in_page(b, "/items?filter=all&limit=200").await;
    page["items"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn rules_page_in_chromium() {
    if skip_without_browser("ui_rules::rules_page_in_chromium") {
        return;
    }
    let db = TestDb::sqlite();
    let app = TestApp::start(&db).await;
    let user = app.user("ann", false).await;
    // A feed with items already there (the subscription is made in the store: nothing is
    // fetched, the items are the feed's).
    let feed_id = app
        .feed_with_items(
            user,
            "https://wire.example/feed",
            &[
                "Sponsored: a course",
                "Sponsored: a book",
                "Rust 2.0 released",
                "東京の天気",
            ],
        )
        .await;

    let b = Browser::start(1280, 860).await;
    b.sign_in(&app.base, "ann").await;

    phase_editor_previews_then_saves(&b, &app.base).await;
    phase_apply_then_undo(&b).await;
    phase_hide_items_like_this(&b, &app.base, feed_id).await;
    b.quit().await;
}

/// Typing a query previews its catch (Japanese too); saving lists the rule.
async fn phase_editor_previews_then_saves(b: &Browser, base: &str) {
    b.goto(&format!("{base}/rules")).await;
    b.wait_for(
        "the rule editor",
        "document.querySelector('#new-rule-query') !== null \
         && document.querySelector('label[for=new-rule-query]') !== null \
         && document.querySelector('#rules') !== null",
    )
    .await;
    // The Rules tab is among the settings pages and marked as the current one.
    assert_eq!(
        b.eval("document.querySelector('a.tab[aria-current=page]')?.textContent")
            .await,
        "Rules"
    );
    b.type_into("#new-rule-query", "東京").await;
    b.wait_for(
        "the Japanese preview",
        "document.querySelector('#new-rule-preview .preview-count strong')?.textContent === '1'",
    )
    .await;
    b.js(
        "const q = document.querySelector('#new-rule-query'); q.value = ''; \
         q.dispatchEvent(new Event('input', {bubbles: true}));",
        vec![],
    )
    .await
    .unwrap();
    b.type_into("#new-rule-query", "sponsored").await;
    let shown = b
        .wait_for(
            "the preview of two items",
            "document.querySelector('#new-rule-preview .preview-count strong')?.textContent === '2' \
             && [...document.querySelectorAll('#new-rule-preview .preview-items li')].map(li => li.firstChild.textContent)",
        )
        .await;
    assert_eq!(shown, json!(["Sponsored: a course", "Sponsored: a book"]));
    // "Hide" is the new rule's action already; saving lists it.
    b.click(".rule-form button[type=submit]").await;
    b.wait_for(
        "the saved rule",
        "[...document.querySelectorAll('#rules li.rule strong')].some(s => s.textContent === 'sponsored')",
    )
    .await;
    let rules = api_in_page(b, "/rules").await;
    assert_eq!(rules["rules"][0]["actions"], json!(["hide"]), "{rules}");
    assert_eq!(all_items(b).await, 4, "saving changes no existing item");
}

/// "Apply now" hides the two items; the toast's Undo brings them back.
async fn phase_apply_then_undo(b: &Browser) {
    // Brought to the middle of the screen first, as a person scrolls to it: the page's header
    // stays on top of whatever is under it.
    b.js(
        "document.querySelector('#rules li.rule button[data-action=apply]').scrollIntoView({block: 'center'})",
        vec![],
    )
    .await
    .unwrap();
    b.click("#rules li.rule button[data-action=apply]").await;
    b.wait_for(
        "the applied rule's toast",
        "[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('2 items changed'))",
    )
    .await;
    assert_eq!(all_items(b).await, 2);
    b.click(".toast .toast-button").await;
    b.wait_for(
        "the undo's toast",
        "[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('2 items are as they were'))",
    )
    .await;
    assert_eq!(all_items(b).await, 4);
}

/// An opened item's "Hide items like this" opens the editor for its feed with its words; the
/// page fits a phone.
async fn phase_hide_items_like_this(b: &Browser, base: &str, feed_id: i64) {
    b.goto(&format!("{base}/feeds/{feed_id}?filter=all")).await;
    b.wait_for(
        "the items",
        "document.querySelectorAll('#main li.item').length === 4",
    )
    .await;
    b.click("#main li.item .item-title").await;
    b.wait_for(
        "the opened item's tools",
        "document.querySelector('a[data-action=hide-like]') !== null",
    )
    .await;
    b.click("a[data-action=hide-like]").await;
    let prefilled = b
        .wait_for(
            "the prefilled editor",
            "location.pathname === '/rules' && document.querySelector('#new-rule-query')?.value \
             && [document.querySelector('#new-rule-query').value, document.querySelector('#new-rule-scope').value]",
        )
        .await;
    assert_eq!(prefilled[1], format!("feed:{feed_id}"), "{prefilled}");
    b.wait_for(
        "its preview",
        "Number(document.querySelector('#new-rule-preview .preview-count strong')?.textContent) >= 1",
    )
    .await;
    b.resize(390, 844).await;
    b.wait_for(
        "the page at a phone's width",
        "document.querySelector('#new-rule-query').getBoundingClientRect().right <= window.innerWidth \
         && document.documentElement.scrollWidth <= window.innerWidth",
    )
    .await;
}
