//! Newsletters by email in real headless Chromium (issue 36), on both engines: the settings'
//! receiving addresses created (by keyboard, with a label, and without), copied, and revoked
//! after a confirmation (cancelled once), the server refusing mail to the revoked one; a
//! newsletter's opened item offers Unsubscribe (its https link in a new tab, its mailto:
//! address), and an item without List-Unsubscribe offers none. The section is seen in both
//! themes: with TIDINGS_UI_REVIEW_DIR set, screenshots of each are written there.
//!
//! Without Chromium the test prints `SKIPPED … : chromium not installed` and passes.

use reqwest::StatusCode;
use serde_json::Value;
use tidings_server::mail::SmtpLimits;
use tidings_testkit::on_both_engines;

use crate::browser::{Browser, skip_without_browser};
use crate::mail::{SECRET, inbound, message, start};
use crate::support::TestApp;

const ENTER: &str = "\u{E007}";
const TAB: &str = "\u{E004}";
const ESCAPE: &str = "\u{E00C}";

/// The addresses the settings page lists.
async fn listed(b: &Browser) -> Vec<String> {
    let shown = b
        .eval("[...document.querySelectorAll('#mail-addresses code.mail-address')].map(c => c.textContent)")
        .await;
    serde_json::from_value(shown).unwrap()
}

/// Waits until the page lists `count` addresses, and answers them.
async fn wait_listed(b: &Browser, count: usize) -> Vec<String> {
    b.wait_for(
        &format!("{count} addresses"),
        &format!(
            "document.querySelectorAll('#mail-addresses code.mail-address').length === {count}"
        ),
    )
    .await;
    listed(b).await
}

/// A screenshot of the page for people to look at, when TIDINGS_UI_REVIEW_DIR names a folder.
async fn review(b: &Browser, name: &str) {
    if let Some(dir) = std::env::var_os("TIDINGS_UI_REVIEW_DIR") {
        b.eval("document.querySelector('#mail-address-form')?.scrollIntoView({ block: 'center' })")
            .await;
        b.screenshot(&std::path::Path::new(&dir).join(format!("{name}.png")))
            .await;
    }
}

/// Focuses the element by script (as Tab would reach it) and presses `keys`.
async fn focus_and_press(b: &Browser, css: &str, keys: &[&str]) {
    let focused = b
        .eval(&format!(
            "(() => {{ const e = document.querySelector({css:?}); e?.focus(); return document.activeElement === e; }})()"
        ))
        .await;
    assert_eq!(focused, Value::Bool(true), "{css}");
    b.press(keys).await;
}

/// Creates two addresses (one labelled, by keyboard), copies one, revokes the labelled one by
/// keyboard after cancelling once; answers the address left.
async fn phase_addresses(b: &Browser, app: &TestApp) -> String {
    b.goto(&format!("{}/settings", app.base)).await;
    b.wait_for(
        "the empty list",
        "document.querySelector('#mail-addresses')?.innerText.includes('No addresses yet')",
    )
    .await;
    // A label typed, and Enter in its field: the form is sent.
    b.type_into("#mail-label", "shop").await;
    b.press(&[ENTER]).await;
    let labelled = wait_listed(b, 1).await.remove(0);
    assert!(
        labelled.ends_with("+shop@news.tidings.example"),
        "{labelled}"
    );
    assert_eq!(
        b.eval("document.querySelector('#mail-label').value").await,
        ""
    );
    b.click("#mail-address-form button[type=submit]").await;
    let both = wait_listed(b, 2).await;
    let plain = both[1].clone();
    assert!(
        plain.ends_with("@news.tidings.example") && !plain.contains('+'),
        "{plain}"
    );

    review(b, "newsletters-light").await;
    // By script: the sticky header covers the choice where the page is scrolled to.
    b.eval("document.querySelector('input[name=theme][value=dark]').click()")
        .await;
    b.wait_for(
        "the dark theme",
        "document.documentElement.dataset.theme === 'dark'",
    )
    .await;
    review(b, "newsletters-dark").await;

    // Copy: on the clipboard (a toast says so) or, where the browser refuses, selected.
    b.click("#mail-addresses li:nth-child(2) [data-action=copy]")
        .await;
    b.wait_for(
        "the address copied or selected",
        &format!(
            "getSelection().toString() === {plain:?} || [...document.querySelectorAll('#toasts .toast-message')].some(m => m.textContent === 'The address is on the clipboard.')"
        ),
    )
    .await;

    // Revoke by keyboard: Escape cancels (nothing revoked); then Tab to the confirmation.
    let revoke = "#mail-addresses li:nth-child(1) [data-action=revoke]";
    focus_and_press(b, revoke, &[ENTER]).await;
    let title = b
        .wait_for(
            "the confirmation",
            "document.querySelector('dialog #confirm-title')?.textContent",
        )
        .await;
    assert_eq!(title, Value::String(format!("Revoke {labelled}?")));
    b.press(&[ESCAPE]).await;
    b.wait_for(
        "the dialog closed",
        "document.querySelector('dialog') === null",
    )
    .await;
    assert_eq!(listed(b).await.len(), 2, "cancelled: nothing revoked");
    focus_and_press(b, revoke, &[ENTER]).await;
    b.wait_for(
        "the confirmation again",
        "document.querySelector('dialog') !== null",
    )
    .await;
    b.press(&[TAB, ENTER]).await;
    assert_eq!(wait_listed(b, 1).await, std::slice::from_ref(&plain));

    // The server agrees: mail to the revoked address is refused, to the other delivered.
    let (status, body) = inbound(
        app,
        SECRET,
        Some(&labelled),
        message("confirmation.eml", &labelled),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    plain
}

/// A newsletter with List-Unsubscribe, opened: Unsubscribe (https, new tab) and Unsubscribe by
/// email (mailto:); a confirmation mail without the header: no such action.
async fn phase_unsubscribe(b: &Browser, app: &TestApp, address: &str) {
    for name in ["confirmation.eml", "multipart_alternative.eml"] {
        let (status, body) = inbound(app, SECRET, Some(address), message(name, address)).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
    }
    b.goto(&format!("{}/all?filter=all", app.base)).await;
    b.wait_for(
        "both messages",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    let open = |title: &str| {
        format!(
            "(() => {{ const li = [...document.querySelectorAll('#main li.item')].find(li => li.textContent.includes({title:?})); li.querySelector('.item-toggle').click(); return true; }})()"
        )
    };
    b.eval(&open("Café notes")).await;
    let actions = b
        .wait_for(
            "the Unsubscribe actions",
            "(() => { const a = [...document.querySelectorAll('#main li.item.expanded .item-tools [data-action=unsubscribe]')]; \
             return a.length === 2 && a.map(e => [e.textContent, e.getAttribute('href'), e.getAttribute('target')]); })()",
        )
        .await;
    assert_eq!(
        actions,
        serde_json::json!([
            [
                "Unsubscribe",
                "https://writer.example.com/unsubscribe?u=abc&l=42",
                "_blank"
            ],
            [
                "Unsubscribe by email",
                "mailto:unsubscribe@writer.example.com?subject=unsubscribe",
                null
            ]
        ])
    );
    review(b, "newsletters-unsubscribe").await;
    b.eval(&open("Please confirm")).await;
    b.wait_for(
        "the confirmation mail opened, with its link",
        "document.querySelector('#main li.item.expanded .item-content a[href*=\"confirm?token\"]') !== null \
         && document.querySelector('#main li.item.expanded .reading-time') !== null",
    )
    .await;
    assert_eq!(
        b.eval(
            "document.querySelectorAll('#main li.item.expanded [data-action=unsubscribe]').length"
        )
        .await,
        Value::from(0)
    );
}

on_both_engines!(newsletters_in_chromium, |db| {
    if skip_without_browser("ui_newsletters::newsletters_in_chromium") {
        return;
    }
    let (app, _) = start(db, SmtpLimits::default()).await;
    app.user("ann", false).await;
    let b = Browser::start(1280, 860).await;
    b.sign_in(&app.base, "ann").await;
    let address = phase_addresses(&b, &app).await;
    phase_unsubscribe(&b, &app, &address).await;
    b.quit().await;
});
