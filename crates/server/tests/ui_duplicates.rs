//! Duplicates across feeds in real headless Chromium (issue 35), on both engines: a story that
//! came from two feeds is listed once, with "also in" the other feed; opened, its "Also in"
//! links the other copy, which opens in its own feed's view; reading one copy reads both and
//! the sidebar's counts follow. With the preference off (ticked off in Settings) both copies
//! are listed and opening one shows the other read at once; the other preference and a feed's
//! choice ("never merge") are saved from their pages, and a feed never merged lists its copy
//! on its own.
//!
//! Without Chromium the test prints `SKIPPED … : chromium not installed` and passes.

use std::time::Duration;

use serde_json::Value;
use tidings_store::{NewItem, NewSubscription, Store, unix_now};
use tidings_testkit::on_both_engines;

use crate::browser::{Browser, skip_without_browser};
use crate::support::TestApp;

const TEXT: &str = "<p>The central bank left its main interest rate unchanged on Thursday, \
    saying inflation had cooled faster than expected over the summer while the labour market \
    stayed tight. Policymakers voted seven to two to hold the rate, and the governor told \
    reporters that cuts would depend on wage growth in the coming months.</p>";

/// A story as a feed gives it, published an hour ago.
fn story(guid: &str, url: &str, title: &str, content: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(url.into()),
        title: Some(title.into()),
        content: Some(content.into()),
        published: Some(unix_now() - 3600),
        ..NewItem::default()
    }
}

/// Subscribes `user` to `url` under `title`; answers the subscription's and the feed's ids.
async fn follow_named(store: &Store, user: i64, url: &str, title: &str) -> (i64, i64) {
    let sub = store
        .subscribe(
            user,
            &NewSubscription {
                feed_url: url.into(),
                title: Some(title.into()),
                ..NewSubscription::default()
            },
        )
        .await
        .unwrap();
    (sub.id, sub.feed_id)
}

/// Chooses `value` in the `<select>` at `css`, as a person does (a change event follows).
async fn choose(b: &Browser, css: &str, value: &str) {
    let chosen = b
        .eval(&format!(
            "(() => {{ const s = document.querySelector({css:?}); if (!s) return false; \
               s.value = {value:?}; s.dispatchEvent(new Event('change', {{bubbles: true}})); \
               return s.value; }})()"
        ))
        .await;
    assert_eq!(chosen, Value::String(value.into()), "{css}");
}

/// The answer of `GET /api/v1{path}` in the browser's session.
async fn get(b: &Browser, path: &str) -> Value {
    b.js_async(&format!(
        "const done = arguments[arguments.length - 1]; \
         fetch('/api/v1{path}').then(r => r.json()).then(done, e => done(String(e)));"
    ))
    .await
    .unwrap()
}

/// Waits until `GET /api/v1{path}`'s value at `pointer` is `expected` (a save in flight).
async fn wait_saved(b: &Browser, path: &str, pointer: &str, expected: Value) {
    let mut seen = Value::Null;
    for _ in 0..50 {
        seen = get(b, path).await;
        if seen.pointer(pointer) == Some(&expected) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} {pointer} is not {expected}: {seen}");
}

/// The ids of the listed rows, in order.
async fn rows(b: &Browser) -> Value {
    b.eval("[...document.querySelectorAll('#main li.item')].map(li => Number(li.dataset.id))")
        .await
}

/// The story in two feeds, and what the phases need to know of it.
#[derive(Clone, Copy)]
struct Copies {
    ann: i64,
    wire_sub: i64,
    paper_sub: i64,
    paper: i64,
    w: i64,
    p: i64,
}

/// Ann follows The Wire and The Paper; the wire's story is in both, and another story in the
/// wire alone.
async fn set_up(app: &TestApp) -> Copies {
    let ann = app.user("ann", false).await;
    let (wire_sub, wire) =
        follow_named(&app.store, ann, "https://wire.example/feed", "The Wire").await;
    let (paper_sub, paper) =
        follow_named(&app.store, ann, "https://paper.example/feed", "The Paper").await;
    let now = unix_now();
    let url = "https://wire.example/2026/11/bank-holds-rates";
    let other = story(
        "w2",
        "https://wire.example/2026/11/harbour-bridge",
        "Harbour bridge reopens after repairs",
        "<p>The harbour bridge reopened to traffic on Friday after eight months of repairs.</p>",
    );
    app.store
        .store_fetch(
            wire,
            &[
                story("w1", url, "Bank holds rates as inflation cools", TEXT),
                other,
            ],
            now,
            &Default::default(),
        )
        .await
        .unwrap();
    let paper_copy = story(
        "p1",
        "https://www.wire.example/2026/11/bank-holds-rates?utm_source=paper",
        "Bank holds rates as inflation cools | The Paper",
        TEXT,
    );
    app.store
        .store_fetch(paper, &[paper_copy], now, &Default::default())
        .await
        .unwrap();
    let p = app.store.feed_item_ids(paper).await.unwrap()[0];
    let mut w = 0;
    for id in app.store.feed_item_ids(wire).await.unwrap() {
        if app.store.item(ann, id).await.unwrap().url.as_deref() == Some(url) {
            w = id;
        }
    }
    assert!(w > 0, "the wire's copy");

    Copies {
        ann,
        wire_sub,
        paper_sub,
        paper,
        w,
        p,
    }
}

/// Listed once, counted once.
async fn phase_listed_once(b: &Browser, app: &TestApp, c: &Copies) {
    let Copies {
        wire_sub,
        paper_sub,
        w,
        p,
        ..
    } = *c;
    // Listed once, the copy seen first, with the other feed named.
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    b.wait_for(
        "the two stories",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    let listed = rows(b).await;
    assert!(
        listed.as_array().unwrap().contains(&Value::from(w))
            && !listed.as_array().unwrap().contains(&Value::from(p)),
        "{listed}"
    );
    let also = b
        .eval(&format!(
            "document.querySelector('#main li.item[data-id=\"{w}\"] .also-in')?.textContent"
        ))
        .await;
    assert_eq!(also, Value::String(" · also in The Paper".into()));
    // Counted once in the sidebar: two in The Wire, none in The Paper. The counts come after
    // the list on a busy machine: wait for the sidebar's, then compare.
    b.wait_for(
        "the sidebar's counts",
        &format!(
            "(document.querySelector('[data-count=\"s{wire_sub}\"]') || {{}}).textContent > '' \
             && document.querySelector('[data-count=\"s{paper_sub}\"]') !== null"
        ),
    )
    .await;
    let counts = format!(
        "[document.querySelector('[data-count=\"s{wire_sub}\"]').textContent, \
          document.querySelector('[data-count=\"s{paper_sub}\"]').hidden]"
    );
    assert_eq!(b.eval(&counts).await, serde_json::json!(["2", true]));
}

/// The other copy a click away; read and unread marks reach both.
async fn phase_copies_and_marks(b: &Browser, app: &TestApp, c: &Copies) {
    let Copies {
        ann,
        wire_sub,
        paper_sub,
        paper,
        w,
        p,
    } = *c;
    // Opened, the other copy is a click away, and opens in its feed's view.
    b.click_by_script(&format!("#main li.item[data-id=\"{w}\"] .item-toggle"))
        .await;
    let link = b
        .wait_for(
            "the other copy's link",
            "(() => { const a = document.querySelector('#main li.item.expanded .copies a'); \
               return a && [a.textContent, a.getAttribute('href')]; })()",
        )
        .await;
    assert_eq!(
        link,
        serde_json::json!(["The Paper", format!("/feeds/{paper}?filter=all&item={p}")])
    );
    b.click_by_script("#main li.item.expanded .copies a").await;
    b.wait_for(
        "the other copy opened in its feed",
        &format!(
            "location.pathname === '/feeds/{paper}' \
             && document.querySelector('#main li.item.expanded')?.dataset.id === '{p}'"
        ),
    )
    .await;
    let back = b
        .wait_for(
            "the link back to the first copy",
            "document.querySelector('#main li.item.expanded .copies a')?.textContent",
        )
        .await;
    assert_eq!(back, Value::String("The Wire".into()));
    // Reading one copy read both: only the other story is unread, on the server and in the
    // sidebar.
    app.wait_unread(ann, 1).await;
    b.wait_for(
        "the counts after the read",
        &format!(
            "document.querySelector('[data-count=\"s{wire_sub}\"]').textContent === '1' \
             && document.querySelector('[data-count=\"s{paper_sub}\"]').hidden"
        ),
    )
    .await;
    // Marked unread here, both are unread again, and the counts say so.
    b.click_by_script("#main li.item.expanded [data-action=read]")
        .await;
    app.wait_unread(ann, 2).await;
    assert_eq!(
        get(b, &format!("/items/{w}")).await["item"]["is_read"],
        false
    );
    b.wait_for(
        "the counts after the unread mark",
        &format!("document.querySelector('[data-count=\"s{wire_sub}\"]').textContent === '2'"),
    )
    .await;
}

/// The preference off: every copy listed and counted.
async fn phase_every_copy(b: &Browser, app: &TestApp, c: &Copies) {
    let Copies {
        ann,
        paper_sub,
        w,
        p,
        ..
    } = *c;
    // Settings: every copy listed.
    b.goto(&format!("{}/settings", app.base)).await;
    let checked = b
        .wait_for(
            "the preference",
            "document.querySelector('#pref-collapse')?.checked",
        )
        .await;
    assert_eq!(checked, Value::Bool(true));
    assert_eq!(
        b.eval("document.querySelector('#pref-copies-read').value")
            .await,
        Value::String("cluster".into())
    );
    b.click_by_script("#pref-collapse").await;
    wait_saved(
        b,
        "/preferences",
        "/preferences/collapse_duplicates",
        Value::Bool(false),
    )
    .await;
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    b.wait_for(
        "both copies",
        "document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    let also = b
        .eval(&format!(
            "document.querySelector('#main li.item[data-id=\"{p}\"] .also-in')?.textContent"
        ))
        .await;
    assert_eq!(also, Value::String(" · also in The Wire".into()));
    // Both counted now; opening one copy shows the other read at once.
    b.wait_for(
        "both counted",
        &format!("document.querySelector('[data-count=\"s{paper_sub}\"]').textContent === '1'"),
    )
    .await;
    b.click_by_script(&format!("#main li.item[data-id=\"{p}\"] .item-toggle"))
        .await;
    let read = b
        .eval(&format!(
            "document.querySelector('#main li.item[data-id=\"{w}\"]').classList.contains('is-read')"
        ))
        .await;
    assert_eq!(read, Value::Bool(true), "the other copy's row");
    app.wait_unread(ann, 1).await;
}

/// "That copy only", and a feed never merged.
async fn phase_copy_only_and_never(b: &Browser, app: &TestApp, c: &Copies) {
    let Copies {
        paper_sub, paper, ..
    } = *c;
    // Reading one copy marks that copy only, once chosen.
    b.goto(&format!("{}/settings", app.base)).await;
    b.wait_for(
        "the settings",
        "document.querySelector('#pref-copies-read') !== null",
    )
    .await;
    choose(b, "#pref-copies-read", "copy").await;
    wait_saved(
        b,
        "/preferences",
        "/preferences/duplicates_read",
        Value::from("copy"),
    )
    .await;

    // A feed never merged: its copy stands alone.
    b.goto(&format!("{}/feeds/{paper}/settings", app.base))
        .await;
    let mode = b
        .wait_for(
            "the feed's choice",
            "document.querySelector('#feed-duplicates')?.value",
        )
        .await;
    assert_eq!(mode, Value::String("merge".into()));
    choose(b, "#feed-duplicates", "never").await;
    b.click_by_script("#feed-duplicates ~ button[type=submit]")
        .await;
    wait_saved(
        b,
        &format!("/subscriptions/{paper_sub}"),
        "/subscription/duplicates",
        Value::from("never"),
    )
    .await;
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    b.wait_for(
        "the stories",
        "document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelectorAll('#main .also-in').length")
            .await,
        Value::from(0)
    );
}

on_both_engines!(duplicates_in_chromium, |db| {
    if skip_without_browser("ui_duplicates::duplicates_in_chromium") {
        return;
    }
    let app = TestApp::start(db).await;
    let copies = set_up(&app).await;
    let b = Browser::start(1280, 860).await;
    b.sign_in(&app.base, "ann").await;
    phase_listed_once(&b, &app, &copies).await;
    phase_copies_and_marks(&b, &app, &copies).await;
    phase_every_copy(&b, &app, &copies).await;
    phase_copy_only_and_never(&b, &app, &copies).await;
    b.quit().await;
});
