//! The web UI end to end in real headless Chromium (Debian's `chromium` + `chromium-driver`)
//! against the real server and a local feed server: first-admin setup, sign-in, subscribing
//! (success and "no feed found"), infinite scroll past 150 items, exclusive expand marking
//! read, the unread filter, stars and the starred view, mark all read, the keyboard, the
//! theme across reloads, a stopped feed's error and "Resume all", unsubscribing and the phone
//! layout; tags on items, the tag list and a tag's page; the Notifications page's channels
//! against a Discord stand-in.
//!
//! Without Chromium the tests print `SKIPPED … : chromium not installed` and pass.
//! `cargo test -p tidings-server --test server -- --ignored ui_browser::screenshots` rewrites
//! `docs/screenshots/*.png`.

use tidings_testkit::on_both_engines;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crate::browser::{Browser, skip_without_browser};
use crate::support::{DiscordStandIn, PASSWORD, TestServer, rss};
use serde_json::{Value, json};
use tidings_server::ratelimit::{RateLimiter, RateLimits};
use tidings_server::{AppState, ServerConfig};
use tidings_store::Store;
use tidings_testkit::TestDb;

/// A server like `tidings serve` runs it; the per-user limit is raised because one test
/// session clicks far faster than a person.
async fn start_server(db: &TestDb) -> (String, Store) {
    let store = db.migrated().await;
    (start_server_on(store.clone()).await, store)
}

/// [`start_server`] on a store opened by the caller; answers the base URL.
async fn start_server_on(store: Store) -> String {
    start_server_with(
        store,
        RateLimits {
            per_user: RateLimiter::new(100_000, Duration::from_secs(60)),
            subscribe: RateLimiter::new(1_000, Duration::from_secs(60)),
            ..RateLimits::standard()
        },
    )
    .await
}

/// A server on `store` with these rate limits; answers the base URL.
async fn start_server_with(store: Store, limits: RateLimits) -> String {
    start_server_configured(store, limits, |_, _| {}).await
}

/// [`start_server_with`] with the server's and the worker's configuration adjusted.
async fn start_server_configured(
    store: Store,
    limits: RateLimits,
    adjust: impl FnOnce(&mut ServerConfig, &mut tidings_worker::WorkerConfig),
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = ServerConfig::new(base.parse().unwrap());
    let mut worker = tidings_worker::WorkerConfig::default();
    adjust(&mut config, &mut worker);
    // As `tidings serve` does: with the media proxy on, items keep their http: images.
    worker.sanitize.keep_http_media =
        config.media_proxy.mode != tidings_server::media::MediaProxyMode::Off;
    let fetcher = crate::support::test_fetcher_with(store.clone(), true, worker);
    let mut state = AppState::new(store.clone(), config, fetcher);
    state.limits = Arc::new(limits);
    tokio::spawn(tidings_server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    base
}

fn page(site: &TestServer, feed_path: &str) -> String {
    format!(
        "<html><head><title>Blog</title><link rel=\"alternate\" type=\"application/rss+xml\" \
         href=\"{}\"></head><body>A blog</body></html>",
        site.url(feed_path)
    )
}

async fn feed_site() -> TestServer {
    let site = TestServer::start_empty().await;
    site.serve(
        "/big.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "Big", 160),
    );
    site.serve(
        "/news.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "news", 5),
    );
    site.serve(
        "/gone.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "gone", 2),
    );
    site.serve("/blog/", 200, "text/html", page(&site, "/news.xml"));
    site.serve(
        "/plain.html",
        200,
        "text/html",
        "<html><body>no feeds here</body></html>",
    );
    site
}

/// The feed id in the current `/feeds/{id}` URL.
async fn current_feed_id(b: &Browser) -> i64 {
    let path = b.eval("location.pathname").await;
    path.as_str()
        .and_then(|p| p.strip_prefix("/feeds/"))
        .and_then(|p| p.split('/').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("not a feed URL: {path}"))
}

async fn subscribe(b: &Browser, url: &str) {
    b.click("#subscribe-button").await;
    b.type_into("#subscribe-url", url).await;
    b.click("dialog form button[type=submit]").await;
}

/// Signs in through the sign-in page with [`PASSWORD`] and waits for the reader.
async fn sign_in(b: &Browser, base: &str, username: &str) {
    b.goto(&format!("{base}/login")).await;
    b.type_into("#username", username).await;
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    b.wait_for("the reader", "document.querySelector('nav#feeds') !== null")
        .await;
}

/// Saves a screenshot for a person to look at when `TIDINGS_UI_REVIEW_DIR` names a folder.
async fn review(b: &Browser, name: &str) {
    if let Some(dir) = std::env::var_os("TIDINGS_UI_REVIEW_DIR") {
        b.screenshot(&std::path::Path::new(&dir).join(format!("{name}.png")))
            .await;
    }
}

/// The ids of the listed items, in order.
async fn listed_ids(b: &Browser) -> Vec<i64> {
    let value = b
        .eval("[...document.querySelectorAll('#main li.item')].map(li => Number(li.dataset.id))")
        .await;
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

/// Fetches an API path from inside the page (with its session) and answers the JSON.
async fn api_in_page(b: &Browser, path: &str) -> Value {
    b.js_async(&format!(
        "const done = arguments[arguments.length - 1]; \
         fetch('/api/v1{path}').then(r => r.json()).then(done, e => done(String(e)));"
    ))
    .await
    .expect("fetch in page")
}

async fn sidebar_count(b: &Browser, feed_id: i64) -> String {
    b.eval(&format!(
        "(() => {{ const c = document.querySelector('a.feed-link[data-key=\"/feeds/{feed_id}\"] .count'); \
         return c && !c.hidden ? c.textContent : '0'; }})()"
    ))
    .await
    .as_str()
    .unwrap_or("0")
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_flows_in_chromium() {
    if skip_without_browser("ui_browser::reader_flows_in_chromium") {
        return;
    }
    let db = TestDb::sqlite();
    let (base, store) = start_server(&db).await;
    let site = feed_site().await;
    let token = tidings_server::setup::issue_setup_token(&store)
        .await
        .unwrap()
        .expect("a setup token while no user exists");
    let b = Browser::start(1280, 860).await;

    setup_then_sign_in(&b, &base, &token).await;
    let (news, big) = subscribe_then_scroll(&b, &site).await;
    open_read_and_star(&b, &base, big).await;
    keyboard(&b, &base, big).await;
    mark_all_read_then_bookmark(&b, &base, news, big).await;
    settings_pages(&b, &base, &site).await;
    stopped_feed_then_unsubscribe(&b, &base, &site, &store).await;
    refused_changes_roll_back(&b, &base, news).await;
    phone_layout(&b, &base, big).await;
    b.quit().await;
}

/// The first administrator's setup through the one-time link, signing out, a wrong password, then
/// signing in.
async fn setup_then_sign_in(b: &Browser, base: &str, token: &str) {
    // First-admin setup through the one-time link.
    b.goto(&format!("{base}/setup?token={token}")).await;
    b.type_into("#username", "admin").await;
    b.type_into("#password", PASSWORD).await;
    b.type_into("#password-again", PASSWORD).await;
    b.click("#setup-form button[type=submit]").await;
    b.wait_for(
        "the reader after setup",
        "document.querySelector('nav#feeds .empty-feeds') !== null",
    )
    .await;
    assert_eq!(b.eval("location.pathname").await, "/");

    // Sign out, a wrong password, then sign in.
    b.goto(&format!("{base}/account")).await;
    b.click("#sign-out").await;
    b.wait_for(
        "the sign-in page",
        "location.pathname === '/login' && !!document.querySelector('#sign-in-form')",
    )
    .await;
    b.type_into("#username", "admin").await;
    b.type_into("#password", "not the password at all").await;
    b.click("#sign-in-form button[type=submit]").await;
    let error = b
        .wait_for(
            "the sign-in error",
            "document.querySelector('#sign-in-form .inline-error')?.innerText",
        )
        .await;
    assert!(
        error.as_str().unwrap().contains("Sign-in problem"),
        "{error}"
    );
    b.type_into("#password", PASSWORD).await;
    b.click("#sign-in-form button[type=submit]").await;
    b.wait_for(
        "the reader after sign-in",
        "document.querySelector('nav#feeds') !== null",
    )
    .await;
}

/// Subscribing (an error, then discovery by a blog's page) and infinite scroll; answers the ids of
/// the news feed and of the big one.
async fn subscribe_then_scroll(b: &Browser, site: &TestServer) -> (i64, i64) {
    // Subscribe: a page without a feed shows the category and what to try.
    subscribe(b, &site.url("/plain.html")).await;
    let error = b
        .wait_for(
            "the no-feed error",
            "document.querySelector('dialog .inline-error')?.innerText",
        )
        .await;
    review(b, "subscribe-error").await;
    let error = error.as_str().unwrap();
    assert!(error.contains("Feed problem"), "{error}");
    assert!(error.contains("No feed found"), "{error}");
    assert!(error.contains("Check the address"), "the action: {error}");
    // The same dialog then subscribes by the blog's page (discovery).
    b.type_into("#subscribe-url", &site.url("/blog/")).await;
    b.click("dialog form button[type=submit]").await;
    b.wait_for("the news feed's items", "location.pathname.startsWith('/feeds/') && document.querySelectorAll('#main li.item').length === 5")
        .await;
    let news = current_feed_id(b).await;
    assert!(
        b.eval("document.querySelector('dialog[open]') === null")
            .await
            .as_bool()
            .unwrap()
    );

    // Infinite scroll: 160 items arrive 50 at a time as the pane scrolls.
    subscribe(b, &site.url("/big.xml")).await;
    b.wait_for("the first page", "document.querySelectorAll('#main li.item').length >= 50 && document.querySelector('h1.list-title').textContent === 'Big'")
        .await;
    let big = current_feed_id(b).await;
    assert_ne!(big, news);
    for _ in 0..20 {
        let count = b
            .eval("document.querySelectorAll('#main li.item').length")
            .await;
        if count == 160 {
            break;
        }
        b.eval("(() => { const m = document.querySelector('#main'); m.scrollTop = m.scrollHeight; return true; })()")
            .await;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    b.wait_for(
        "all 160 items",
        "document.querySelectorAll('#main li.item').length === 160",
    )
    .await;
    b.wait_for(
        "the end of the list",
        "document.querySelector('.list-end').innerText.includes('160 items')",
    )
    .await;
    let ids = listed_ids(b).await;
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 160, "no item twice");
    let titles = b
        .eval("[...document.querySelectorAll('#main .item-title')].slice(0, 3).map(t => t.textContent)")
        .await;
    assert_eq!(
        titles,
        json!(["Big item 0", "Big item 1", "Big item 2"]),
        "newest first"
    );
    (news, big)
}

/// Opening items marks them read (one open at a time), the unread filter drops them, and a starred
/// item is in Starred.
async fn open_read_and_star(b: &Browser, base: &str, big: i64) {
    // Exclusive expand marks read, shown at once and kept by the server.
    b.goto(&format!("{base}/feeds/{big}?filter=unread")).await;
    b.wait_for(
        "the unread list",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    assert_eq!(sidebar_count(b, big).await, "160");
    let ids = listed_ids(b).await;
    let (first, second) = (ids[0], ids[1]);
    b.click(&format!("li.item[data-id='{first}'] .item-toggle"))
        .await;
    b.wait_for("the first item's content", &format!("document.querySelector(\"li.item[data-id='{first}'] .item-content\")?.innerText.includes('Body 0')"))
        .await;
    assert!(
        b.eval(&format!(
            "document.querySelector(\"li.item[data-id='{first}']\").classList.contains('is-read')"
        ))
        .await
        .as_bool()
        .unwrap()
    );
    assert!(
        b.eval("location.search.includes('item=')")
            .await
            .as_bool()
            .unwrap(),
        "the item has a URL"
    );
    b.click(&format!("li.item[data-id='{second}'] .item-toggle"))
        .await;
    b.wait_for("the second item open", &format!("document.querySelector(\"li.item[data-id='{second}'] .item-toggle\").getAttribute('aria-expanded') === 'true'"))
        .await;
    let expanded = b
        .eval("document.querySelectorAll('#main .item-toggle[aria-expanded=true]').length")
        .await;
    assert_eq!(expanded, 1, "one item open at a time");
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"li.item[data-id='{first}'] .item-body\").hidden"
        ))
        .await,
        true
    );
    b.wait_for("the count to drop", &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{big}\"] .count').textContent === '158'"))
        .await;
    b.wait_for("the server to agree", &format!("fetch('/api/v1/items/{second}').then(r => r.json()).then(j => window.__second = j.item.is_read) && window.__second === true"))
        .await;

    // The unread filter no longer lists them after a reload.
    b.press(&["r"]).await;
    b.wait_for("the reloaded unread list", &format!("document.querySelectorAll('#main li.item').length >= 50 && !document.querySelector(\"li.item[data-id='{first}']\")"))
        .await;
    let ids = listed_ids(b).await;
    assert!(
        !ids.contains(&first) && !ids.contains(&second),
        "read items are hidden"
    );

    // Star one, then find it in the Starred view.
    let starred = ids[0];
    b.click(&format!("li.item[data-id='{starred}'] .star"))
        .await;
    b.wait_for("the star", &format!("document.querySelector(\"li.item[data-id='{starred}'] .star\").getAttribute('aria-pressed') === 'true'"))
        .await;
    b.wait_for(
        "the starred count",
        "document.querySelector('[data-count=starred]').textContent === '1'",
    )
    .await;
    b.click("a.feed-link[data-key='/all?filter=starred']").await;
    b.wait_for("the starred view", &format!("location.search === '?filter=starred' && document.querySelectorAll('#main li.item').length === 1 && !!document.querySelector(\"li.item[data-id='{starred}']\")"))
        .await;
}

/// The keys: j/k select, o opens, j moves the open item, s stars, m toggles read, ? lists the
/// shortcuts, g then u goes to the unread items.
async fn keyboard(b: &Browser, base: &str, big: i64) {
    // Keyboard: j/k select, o opens, j moves the open item, s stars, m toggles read,
    // ? lists the shortcuts, g then u goes to the unread items.
    b.goto(&format!("{base}/feeds/{big}?filter=all")).await;
    b.wait_for(
        "the full list",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    let ids = listed_ids(b).await;
    b.press(&["j", "j", "j", "k"]).await;
    b.wait_for(
        "the second item selected",
        &format!(
            "document.querySelector('li.item.selected')?.dataset.id === '{}'",
            ids[1]
        ),
    )
    .await;
    assert_eq!(
        b.eval("document.activeElement.closest('li.item')?.dataset.id")
            .await,
        json!(ids[1].to_string()),
        "the focus follows"
    );
    // The batch of "read" marks that opening items sends is held back for 4 s by the page, so
    // that `m` below is pressed while it is on its way: the explicit mark must reach the
    // server after it, or the item ends read while its row shows unread (CI, load 40).
    b.eval(HOLD_READ_BATCHES).await;
    b.press(&["o"]).await;
    b.wait_for("the selected item open", &format!("document.querySelector(\"li.item[data-id='{}'] .item-toggle\").getAttribute('aria-expanded') === 'true'", ids[1]))
        .await;
    b.press(&["j"]).await;
    b.wait_for("the next item open", &format!("document.querySelector(\"li.item[data-id='{}'] .item-toggle\").getAttribute('aria-expanded') === 'true' && document.querySelectorAll('#main .item-toggle[aria-expanded=true]').length === 1", ids[2]))
        .await;
    b.wait_for(
        "its read mark sent",
        &format!("window.heldReads.includes({})", ids[2]),
    )
    .await;
    // That item was starred above (the first unread one then), so s takes the star off.
    let star = format!(
        "document.querySelector(\"li.item[data-id='{}'] .star\").getAttribute('aria-pressed')",
        ids[2]
    );
    let before = b.eval(&star).await;
    b.press(&["s"]).await;
    let after = if before == "true" { "false" } else { "true" };
    b.wait_for("the star by key", &format!("{star} === '{after}'"))
        .await;
    b.press(&["m"]).await;
    b.wait_for(
        "unread by key",
        &format!(
            "!document.querySelector(\"li.item[data-id='{}']\").classList.contains('is-read')",
            ids[2]
        ),
    )
    .await;
    b.wait_for_within(
        "the held batch answered",
        "window.readBatchesAnswered > 0",
        Duration::from_secs(20),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    b.wait_for("every request answered", "window.openRequests === 0")
        .await;
    let on_server = b
        .js_async(&format!(
            "const done = arguments[arguments.length - 1];
             fetch('/api/v1/items/{}').then((r) => r.json()).then((answer) => done(answer.item.is_read), (e) => done(String(e)));",
            ids[2]
        ))
        .await
        .unwrap();
    assert_eq!(
        on_server,
        json!(false),
        "the explicit mark went after the batch"
    );
    b.eval("window.fetch = window.unheldFetch").await;
    b.press(&["?"]).await;
    b.wait_for(
        "the shortcut list",
        "document.querySelector('dialog.shortcuts[open]')?.innerText.includes('Mark all read')",
    )
    .await;
    b.press(&["\u{E00C}"]).await;
    b.wait_for(
        "the dialog closed",
        "document.querySelector('dialog[open]') === null",
    )
    .await;
    b.press(&["g", "u"]).await;
    b.wait_for("the unread items of everything", "location.pathname === '/all' && location.search === '?filter=unread' && document.querySelector('h1.list-title').textContent === 'All items'")
        .await;
}

/// Installs a `fetch` in the page that holds each `POST /items/mark-read` for 4 s before
/// sending it (its ids in `heldReads`, answered ones counted in `readBatchesAnswered`) and
/// counts requests not yet answered (`openRequests`); `unheldFetch` is the browser's own.
const HOLD_READ_BATCHES: &str = "(() => {
    const send = window.fetch;
    Object.assign(window, { unheldFetch: send, heldReads: [], readBatchesAnswered: 0, openRequests: 0 });
    window.fetch = async (url, init) => {
        window.openRequests++;
        try {
            if (String(url).endsWith('/items/mark-read') && init?.method === 'POST') {
                window.heldReads.push(...JSON.parse(init.body).ids);
                await new Promise((resolve) => setTimeout(resolve, 4000));
                const answer = await send(url, init);
                window.readBatchesAnswered++;
                return answer;
            }
            return await send(url, init);
        } finally {
            window.openRequests--;
        }
    };
    return true;
})()";

/// Mark all read for one feed, then a bookmark read in the Bookmarks view.
async fn mark_all_read_then_bookmark(b: &Browser, base: &str, news: i64, big: i64) {
    // Mark all read for one feed, with the before-time rule.
    b.goto(&format!("{base}/feeds/{news}?filter=unread")).await;
    b.wait_for(
        "the news items",
        "document.querySelectorAll('#main li.item').length === 5",
    )
    .await;
    b.click("#mark-all-read").await;
    b.wait_for(
        "all marked read",
        "document.querySelectorAll('#main li.item.is-read').length === 5",
    )
    .await;
    b.wait_for(
        "the news count gone",
        &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{news}\"] .count').hidden"),
    )
    .await;
    b.press(&["r"]).await;
    b.wait_for(
        "nothing unread",
        "document.querySelector('.list-end').innerText.includes('Nothing unread')",
    )
    .await;
    assert_eq!(sidebar_count(b, big).await, "158", "other feeds untouched");

    // Bookmark an item, then read its saved copy in the Bookmarks view.
    b.goto(&format!("{base}/feeds/{big}?filter=all")).await;
    b.wait_for(
        "the list",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    b.click("#main li.item .item-toggle").await;
    // The expanded body is drawn again when the full text arrives; a click in between would
    // land on the button being replaced.
    b.wait_for(
        "the full text",
        "document.querySelector('#main li.item.expanded .item-content:not(.pending)') !== null",
    )
    .await;
    b.click("#main li.item.expanded [data-action=bookmark]")
        .await;
    b.wait_for(
        "the bookmark toast",
        "document.querySelector('#toasts')?.innerText.includes('Bookmarked')",
    )
    .await;
    b.click("a.feed-link[data-key='/bookmarks']").await;
    b.wait_for("one bookmark", "location.pathname === '/bookmarks' && document.querySelectorAll('#main li.item').length === 1")
        .await;
    b.click("#main li.item .item-toggle").await;
    b.wait_for(
        "the saved copy",
        "document.querySelector('#main li.item .item-content')?.innerText.includes('Body 0')",
    )
    .await;
    review(b, "bookmarks").await;
}

/// The settings pages: OPML import and export, API keys, the users page and the theme.
async fn settings_pages(b: &Browser, base: &str, site: &TestServer) {
    // OPML: import with the per-URL report (one already followed, one refused), export link.
    let opml = tempfile::NamedTempFile::with_suffix(".opml").unwrap();
    std::fs::write(
        opml.path(),
        format!(
            "<?xml version=\"1.0\"?><opml version=\"2.0\"><head><title>t</title></head><body>\
             <outline text=\"news\" type=\"rss\" xmlUrl=\"{}\"/>\
             <outline text=\"bad\" type=\"rss\" xmlUrl=\"ftp://example.com/feed\"/>\
             </body></opml>",
            site.url("/news.xml")
        ),
    )
    .unwrap();
    b.goto(&format!("{base}/settings")).await;
    // This server receives no mail: the newsletters' section says so, from the list's
    // `enabled` (an answer of 200, so the page logs no failed request), with no form.
    b.wait_for(
        "the note that mail is off",
        "document.querySelector('#mail-off')?.textContent.length > 0 && !document.querySelector('#mail-address-form')",
    )
    .await;
    b.type_into("#opml-file", &opml.path().display().to_string())
        .await;
    b.click("#opml-file + button[type=submit]").await;
    let report = b
        .wait_for(
            "the import report",
            "document.querySelector('table.report')?.innerText",
        )
        .await;
    let report = report.as_str().unwrap();
    assert!(
        report.contains("skipped") && report.contains("refused"),
        "{report}"
    );
    assert_eq!(
        b.eval("document.querySelector('a[href=\"/api/v1/opml\"]') !== null")
            .await,
        true
    );
    review(b, "settings").await;

    // Account: an API key is shown once, listed by its prefix, and revoked.
    b.goto(&format!("{base}/account")).await;
    b.type_into("#key-name", "phone app").await;
    b.click("#key-name ~ button[type=submit]").await;
    let key = b
        .wait_for(
            "the new key",
            "document.querySelector('#new-api-key')?.textContent",
        )
        .await;
    assert!(key.as_str().unwrap().starts_with("tdg_"), "{key}");
    // The form proposed an expiry (F23), and the key carries it.
    b.wait_for("the key listed with its expiry", "[...document.querySelectorAll('.settings li.row')].some(li => li.innerText.includes('phone app') && li.innerText.includes('expires'))")
        .await;
    review(b, "account").await;
    b.goto(&format!("{base}/account")).await;
    b.wait_for("the key listed", "[...document.querySelectorAll('.settings li.row')].some(li => li.innerText.includes('phone app'))")
        .await;
    assert_eq!(
        b.eval("document.querySelector('#new-api-key')").await,
        Value::Null,
        "shown only once"
    );
    b.click(".settings li.row .button.danger").await;
    b.click("dialog[open] .button.danger").await;
    b.wait_for("the key revoked", "![...document.querySelectorAll('.settings li.row')].some(li => li.innerText.includes('phone app'))")
        .await;

    // Admin: the users page lists the administrator.
    b.goto(&format!("{base}/admin")).await;
    b.wait_for("the users", "[...document.querySelectorAll('.settings li.row')].some(li => li.innerText.includes('admin'))")
        .await;

    // Theme: dark is saved as a preference, applied before the first paint on reload, and
    // comes back from the server when the browser forgot it.
    b.goto(&format!("{base}/settings")).await;
    b.click("input[name=theme][value=dark]").await;
    b.wait_for(
        "dark applied",
        "document.documentElement.dataset.theme === 'dark'",
    )
    .await;
    b.wait_for("dark saved", "fetch('/api/v1/preferences').then(r => r.json()).then(j => window.__theme = j.preferences.theme) && window.__theme === 'dark'")
        .await;
    b.goto(&format!("{base}/all")).await;
    assert_eq!(
        b.eval("document.documentElement.dataset.theme").await,
        "dark",
        "set by theme.js before the app ran"
    );
    let background = b
        .eval("getComputedStyle(document.body).backgroundColor")
        .await;
    assert_eq!(background, "rgb(18, 20, 24)", "dark background");
    assert_eq!(
        b.eval("document.querySelector('meta[name=theme-color]').content")
            .await,
        "#121418",
        "the title bar follows the theme in use"
    );
    b.eval("(localStorage.clear(), true)").await;
    b.goto(&format!("{base}/all")).await;
    b.wait_for(
        "dark from the preference",
        "document.documentElement.dataset.theme === 'dark'",
    )
    .await;
    b.click("#theme-button").await;
    b.wait_for(
        "cycled to system",
        "document.documentElement.dataset.themeChoice === 'auto'",
    )
    .await;
    b.click("#theme-button").await;
    b.wait_for(
        "cycled to light",
        "document.documentElement.dataset.theme === 'light' \
         && document.querySelector('meta[name=theme-color]').content === '#c2410c'",
    )
    .await;
    b.wait_for("light saved", "fetch('/api/v1/preferences').then(r => r.json()).then(j => window.__theme2 = j.preferences.theme) && window.__theme2 === 'light'")
        .await;
}

/// A stopped feed explained and resumed (by its reader and by an administrator), then unsubscribed.
async fn stopped_feed_then_unsubscribe(b: &Browser, base: &str, site: &TestServer, store: &Store) {
    // A stopped feed shows its error in the left pane and on its page.
    subscribe(b, &site.url("/gone.xml")).await;
    b.wait_for(
        "the gone feed",
        "document.querySelector('h1.list-title').textContent === 'gone'",
    )
    .await;
    let gone = current_feed_id(b).await;
    site.serve("/gone.xml", 404, "text/plain", "no longer here");
    b.goto(&format!("{base}/feeds/{gone}/settings")).await;
    b.click("#refresh-feed").await;
    let icon = b
        .wait_for_within(
            "the stopped icon",
            &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{gone}\"]')?.parentElement.querySelector('.status-stopped')?.title"),
            Duration::from_secs(20),
        )
        .await;
    assert!(icon.as_str().unwrap().contains("Stopped"), "{icon}");
    assert!(
        icon.as_str().unwrap().contains("404"),
        "the last error: {icon}"
    );
    b.goto(&format!("{base}/feeds/{gone}")).await;
    let banner = b
        .wait_for(
            "the feed's banner",
            "document.querySelector('.banner-stopped')?.innerText",
        )
        .await;
    assert!(banner.as_str().unwrap().contains("404"), "{banner}");
    b.click(&format!(
        "a.feed-link[data-key='/feeds/{gone}'] + .status-stopped"
    ))
    .await;
    b.wait_for(
        "the error on tap",
        "document.querySelector('.toast-error')?.innerText.includes('404')",
    )
    .await;

    // The left pane counts the stopped feeds and resumes them all with one button.
    let note = b
        .wait_for(
            "the stopped feeds note",
            "document.querySelector('.stopped-feeds')?.innerText",
        )
        .await;
    assert!(
        note.as_str().unwrap().contains("1 feed is stopped"),
        "{note}"
    );
    site.serve(
        "/gone.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "gone", 2),
    );
    b.click("#resume-all-stopped").await;
    b.wait_for(
        "the resumed toast",
        "[...document.querySelectorAll('#toasts .toast')].some(t => t.innerText.includes('1 feed resumed'))",
    )
    .await;
    b.wait_for(
        "the note and the stopped icon gone",
        &format!("document.querySelector('.stopped-feeds') === null && document.querySelector('a.feed-link[data-key=\"/feeds/{gone}\"]').parentElement.querySelector('.status-stopped') === null"),
    )
    .await;
    let resumed = api_in_page(b, "/subscriptions").await;
    let resumed = resumed["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["feed_id"] == gone)
        .cloned()
        .unwrap();
    assert_eq!(resumed["status"], "active", "{resumed}");
    // An administrator resumes every user's stopped feeds from the Users page.
    store
        .execute_raw(&format!(
            "UPDATE feed_fetch_state SET status = 'stopped' WHERE feed_id = {gone}"
        ))
        .await
        .unwrap();
    b.goto(&format!("{base}/admin")).await;
    b.click("#resume-all-feeds").await;
    let said = b
        .wait_for(
            "the admin's resume",
            "document.querySelector('#resume-all-feeds')?.closest('section')?.querySelector('.success')?.innerText",
        )
        .await;
    assert!(said.as_str().unwrap().contains("1 feed resumed"), "{said}");
    assert_eq!(
        store.feed_fetch_state(gone).await.unwrap().status,
        tidings_store::FetchStatus::Active
    );

    // Unsubscribe, confirmed.
    b.goto(&format!("{base}/feeds/{gone}/settings")).await;
    b.click("#unsubscribe").await;
    b.click("dialog[open] .button.danger").await;
    b.wait_for("back on all items", "location.pathname === '/all'")
        .await;
    b.wait_for(
        "the feed gone from the pane",
        &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{gone}\"]') === null"),
    )
    .await;
    let subscriptions = api_in_page(b, "/subscriptions").await;
    assert_eq!(subscriptions["subscriptions"].as_array().unwrap().len(), 2);
}

/// Changes the server refuses are rolled back with the reason; one that never reaches it is
/// kept and sent later.
async fn refused_changes_roll_back(b: &Browser, base: &str, news: i64) {
    // A refused change is rolled back with the reason: a 429 says when to try again.
    b.goto(&format!("{base}/feeds/{news}?filter=all")).await;
    b.wait_for(
        "the news items",
        "document.querySelectorAll('#main li.item').length === 5",
    )
    .await;
    b.eval(
        "(() => { const real = window.fetch; window.__real = real; window.__mode = '429'; \
         window.__puts = 0; \
         window.fetch = (url, init) => { \
           if (!init || init.method !== 'PUT') return real(url, init); \
           window.__puts += 1; \
           if (window.__mode === 'offline') return Promise.reject(new TypeError('Failed to fetch')); \
           return Promise.resolve(new Response(JSON.stringify({ error: { code: 'rate_limited', \
             category: 'limit', message: 'Too many requests.', action: 'Wait.' } }), \
             { status: 429, headers: { 'Retry-After': '2', 'X-RateLimit-Remaining': '0', \
               'Content-Type': 'application/json' } })); }; \
         return true; })()",
    )
    .await;
    let star = "document.querySelector('#main li.item .star').getAttribute('aria-pressed')";
    assert_eq!(b.eval(star).await, "false");
    b.click("#main li.item .star").await;
    // The spent budget is waited out with one calm notice, the change sent once more, and only
    // when that is refused too is it rolled back with the reason.
    b.wait_for(
        "the calm notice",
        "document.querySelectorAll('#toasts .toast[data-key=rate-limited]').length === 1",
    )
    .await;
    b.wait_for(
        "the 429 explained",
        "document.querySelector('.toast-error')?.innerText.includes('try again in 2 s')",
    )
    .await;
    assert_eq!(b.eval("window.__puts").await, 2, "retried once");
    assert_eq!(b.eval(star).await, "false", "rolled back");
    b.eval("(window.__mode = 'offline', document.querySelectorAll('.toast').forEach(t => t.remove()), true)")
        .await;
    // A change that never reaches the server is kept on this device and sent once it can be
    // (offline reading, issue 34): the star stays, with the offline note.
    b.click("#main li.item .star").await;
    b.wait_for(
        "the offline note",
        "document.querySelector('.offline-banner') !== null",
    )
    .await;
    assert_eq!(b.eval(star).await, "true", "kept for later");
    let id = b
        .eval("Number(document.querySelector('#main li.item').dataset.id)")
        .await;
    b.eval("(window.fetch = window.__real, true)").await;
    b.wait_for_within(
        "the star sent once the server answers",
        "document.querySelector('.offline-banner') === null",
        std::time::Duration::from_secs(40),
    )
    .await;
    let item = api_in_page(b, &format!("/items/{id}")).await;
    assert_eq!(item["item"]["is_starred"], true, "{item}");
}

/// The phone layout: one pane at a time, a back control, touch targets of at least 44 px.
async fn phone_layout(b: &Browser, base: &str, big: i64) {
    // Phone: one pane at a time with a back control, touch targets of at least 44 px.
    b.resize(390, 844).await;
    b.goto(base).await;
    b.wait_for("the feeds pane alone", "getComputedStyle(document.querySelector('#main')).display === 'none' && getComputedStyle(document.querySelector('#feeds')).display !== 'none'")
        .await;
    let width = b.eval("document.documentElement.clientWidth").await;
    assert!(width.as_i64().unwrap() <= 400, "phone viewport: {width}");
    b.click(&format!("a.feed-link[data-key='/feeds/{big}']"))
        .await;
    b.wait_for("the items pane alone", "getComputedStyle(document.querySelector('#feeds')).display === 'none' && document.querySelectorAll('#main li.item').length > 0")
        .await;
    let small = b
        .eval(
            "[...document.querySelectorAll('#main .icon-button, #main .tab, #main .item-toggle, #main .star, .topbar .icon-button, .topbar .button')]\
             .filter(e => e.getClientRects().length)\
             .map(e => { const r = e.getBoundingClientRect(); return [e.className, Math.round(r.width), Math.round(r.height)]; })\
             .filter(([, w, h]) => w < 44 || h < 44)",
        )
        .await;
    assert_eq!(small, json!([]), "touch targets under 44 px");
    let horizontal = b
        .eval("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        .await;
    assert_eq!(horizontal, true, "no sideways scrolling");
    b.click("#main li.item .item-toggle").await;
    b.wait_for(
        "an item open on the phone",
        "document.querySelectorAll('#main .item-toggle[aria-expanded=true]').length === 1",
    )
    .await;
    b.click("#main .only-phone").await;
    b.wait_for("the feeds pane again", "getComputedStyle(document.querySelector('#feeds')).display !== 'none' && getComputedStyle(document.querySelector('#main')).display === 'none'")
        .await;
}

/// Calls the API from inside the page (with its session cookie and Origin) and answers the
/// JSON body, or null for an empty answer.
async fn page_fetch(b: &Browser, method: &str, path: &str, body: Value) -> Value {
    b.js_async_with(
        "const [method, path, body, done] = arguments; \
         const init = { method, headers: { 'Content-Type': 'application/json' } }; \
         if (body !== null) init.body = JSON.stringify(body); \
         fetch('/api/v1' + path, init).then(r => r.text()).then(t => done(t ? JSON.parse(t) : null), e => done(String(e)));",
        vec![json!(method), json!(path), body],
    )
    .await
    .expect("fetch in page")
}

/// An RSS feed with the given items, an hour apart from now; items with `None` as their
/// date have none (tidings marks their date as estimated).
fn demo_rss(title: &str, site: &str, items: &[(&str, &str, Option<i64>)]) -> String {
    let now = chrono::Utc::now();
    let entries: String = items
        .iter()
        .enumerate()
        .map(|(i, (item_title, body, hours))| {
            let date = hours
                .map(|h| {
                    format!(
                        "<pubDate>{}</pubDate>",
                        (now - chrono::Duration::minutes(h * 60 + 7)).to_rfc2822()
                    )
                })
                .unwrap_or_default();
            format!(
                "<item><title>{item_title}</title><link>{site}posts/{i}</link><guid>{site}posts/{i}</guid>\
                 {date}<description><![CDATA[{body}]]></description></item>"
            )
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>{title}</title>\
         <link>{site}</link><description>{title}</description>{entries}</channel></rss>"
    )
}

fn icon_svg(color: &str, letter: char) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\"><rect width=\"16\" height=\"16\" \
         rx=\"3\" fill=\"{color}\"/><text x=\"8\" y=\"12\" font-size=\"11\" font-family=\"sans-serif\" \
         font-weight=\"700\" text-anchor=\"middle\" fill=\"#fff\">{letter}</text></svg>"
    )
}

const LONG_BODY: &str = "<p>The new release cuts cold-start time by a third. Most of the gain \
    comes from loading the index lazily: instead of reading every page at start, the reader maps \
    the file and touches only what the first screen needs.</p><p>We measured it on a small \
    single-board computer and on a laptop. On both, the first screen now appears before the \
    disk has finished spinning up, which is the kind of speed you stop noticing — the point.</p>\
    <blockquote>Fast software is software you forget is there.</blockquote>\
    <p>Upgrading is a matter of replacing the binary; the database migrates itself on the next \
    start, after taking a backup.</p>";

/// Serves one demo site with its feed and icon; answers the feed's URL.
async fn demo_site(
    sites: &mut Vec<TestServer>,
    title: &str,
    color: &str,
    items: &[(&str, &str, Option<i64>)],
) -> String {
    let site = TestServer::start_empty().await;
    let base = format!("{}/", site.base);
    site.serve(
        "/feed.xml",
        200,
        "application/rss+xml",
        demo_rss(title, &base, items),
    );
    site.serve(
        "/favicon.ico",
        200,
        "image/svg+xml",
        icon_svg(color, title.chars().next().unwrap()),
    );
    site.serve(
        "/",
        200,
        "text/html",
        "<html><head></head><body></body></html>",
    );
    let url = site.url("/feed.xml");
    sites.push(site);
    url
}

/// Rewrites `docs/screenshots/*.png`: desktop light, desktop dark, and the phone's two panes,
/// with a small made-up reading list. Run with
/// `cargo test -p tidings-server --test server -- --ignored ui_browser::screenshots`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/screenshots; run on purpose"]
async fn screenshots() {
    if skip_without_browser("ui_browser::screenshots") {
        return;
    }
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/screenshots");
    let db = TestDb::sqlite();
    let (base, store) = start_server(&db).await;
    let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
    store
        .create_user(&tidings_store::NewUser {
            username: "mika".into(),
            password_hash: Some(hash),
            is_admin: true,
        })
        .await
        .unwrap();

    let mut sites = Vec::new();
    let [compiler, sky, kitchen, notes, mirror] = phase_demo_sites(&mut sites).await;

    let b = Browser::start(1280, 800).await;
    sign_in(&b, &base, "mika").await;
    let open =
        phase_subscribe_and_read(&b, &sites, [&compiler, &sky, &kitchen, &notes, &mirror]).await;

    // Both themes in English, then the reader in Japanese and in Simplified Chinese (issue
    // 34; CI installs Noto CJK for them).
    for (theme, language, file) in [
        ("light", "en", "desktop-light.png"),
        ("dark", "en", "desktop-dark.png"),
        ("light", "ja", "desktop-ja.png"),
        ("light", "zh-Hans", "desktop-zh-Hans.png"),
    ] {
        page_fetch(
            &b,
            "PUT",
            "/preferences",
            json!({"theme": theme, "language": language}),
        )
        .await;
        b.eval("(localStorage.clear(), true)").await;
        b.goto(&format!("{base}/all?filter=all&item={open}")).await;
        b.wait_for("the open item", &format!("document.querySelector(\"li.item[data-id='{open}'] .item-content:not(.pending)\") !== null && document.documentElement.dataset.theme === '{theme}' && document.documentElement.lang === '{language}'"))
            .await;
        b.wait_for(
            "the icons",
            "[...document.querySelectorAll('img.favicon')].every(i => i.complete)",
        )
        .await;
        b.eval(
            "(document.activeElement.blur(), document.querySelector('#main').scrollTop = 0, true)",
        )
        .await;
        b.screenshot(&out.join(file)).await;
    }

    page_fetch(
        &b,
        "PUT",
        "/preferences",
        json!({"theme": "light", "language": "auto"}),
    )
    .await;
    b.resize(390, 844).await;
    b.eval("(localStorage.clear(), true)").await;
    b.goto(&base).await;
    b.wait_for("the feeds pane", "document.querySelectorAll('nav#feeds a.feed-link').length > 5 && [...document.querySelectorAll('img.favicon')].every(i => i.complete)")
        .await;
    b.screenshot(&out.join("phone-feeds.png")).await;
    b.goto(&format!("{base}/all?filter=all&item={open}")).await;
    b.wait_for("the open item", &format!("document.querySelector(\"li.item[data-id='{open}'] .item-content:not(.pending)\") !== null"))
        .await;
    b.eval("(window.scrollTo(0, 0), document.activeElement.blur(), true)")
        .await;
    b.screenshot(&out.join("phone-items.png")).await;
    b.quit().await;
    drop(sites);
}

/// The five demo sites of the screenshots, on `sites`: their feeds' addresses.
async fn phase_demo_sites(sites: &mut Vec<TestServer>) -> [String; 5] {
    let compiler = demo_site(
        sites,
        "The Daily Compiler",
        "#2563eb",
        &[
            ("Cold starts, a third faster", LONG_BODY, Some(1)),
            (
                "Reading a profile without guessing",
                "<p>Flame graphs lie less than intuition.</p>",
                Some(3),
            ),
            (
                "Small binaries, on purpose",
                "<p>What we removed, and why nobody missed it.</p>",
                Some(9),
            ),
            (
                "Notes from the release train",
                "<p>Six weeks, three fixes, one regression caught early.</p>",
                Some(30),
            ),
            (
                "Why the index is a B-tree again",
                "<p>We tried something clever. Then we measured.</p>",
                Some(52),
            ),
        ],
    )
    .await;
    let sky = demo_site(
        sites,
        "Night Sky Journal",
        "#7c3aed",
        &[
            (
                "Jupiter at opposition this week",
                "<p>Best seen after midnight, low in the south-east.</p>",
                Some(2),
            ),
            (
                "A beginner's guide to binoculars",
                "<p>10×50 is the sweet spot for most people.</p>",
                Some(20),
            ),
            (
                "The Perseids, counted",
                "<p>Sixty-two meteors in an hour from a dark field.</p>",
                Some(70),
            ),
        ],
    )
    .await;
    let kitchen = demo_site(
        sites,
        "Kitchen Chemistry",
        "#059669",
        &[
            (
                "Why bread goes stale (it is not drying out)",
                "<p>Starch retrogradation, explained with toast.</p>",
                Some(5),
            ),
            (
                "Salt your pasta water — how much, really?",
                "<p>About one percent, and here is the taste test.</p>",
                None,
            ),
            (
                "Caramel without fear",
                "<p>A thermometer and patience beat any trick.</p>",
                Some(44),
            ),
        ],
    )
    .await;
    let notes = demo_site(
        sites,
        "Field Notes",
        "#d97706",
        &[
            (
                "Mapping the old railway path",
                "<p>Eleven kilometres, four bridges, one very confused heron.</p>",
                Some(4),
            ),
            (
                "Moss, up close",
                "<p>A macro lens and a rainy afternoon.</p>",
                Some(27),
            ),
        ],
    )
    .await;
    let mirror = demo_site(
        sites,
        "Old Mirror",
        "#64748b",
        &[("The last post", "<p>Moving house.</p>", Some(400))],
    )
    .await;
    [compiler, sky, kitchen, notes, mirror]
}

/// The demo feeds subscribed in two groups, the mirror gone, some reading done and a star;
/// returns the item the screenshots open.
async fn phase_subscribe_and_read(b: &Browser, sites: &[TestServer], urls: [&String; 5]) -> i64 {
    let [compiler, sky, kitchen, notes, mirror] = urls;

    let science = page_fetch(b, "POST", "/groups", json!({"name": "Science"})).await;
    let science = science["group"]["id"].clone();
    let tech = page_fetch(b, "POST", "/groups", json!({"name": "Tech"})).await;
    let tech = tech["group"]["id"].clone();
    let mut feed_ids = Vec::new();
    for (url, group) in [
        (&compiler, tech.clone()),
        (&sky, science.clone()),
        (&kitchen, science.clone()),
        (&notes, Value::Null),
        (&mirror, tech.clone()),
    ] {
        let mut body = json!({"url": url});
        if !group.is_null() {
            body["group_id"] = group;
        }
        let created = page_fetch(b, "POST", "/subscriptions", body).await;
        assert!(created["subscription"]["id"].is_i64(), "{created}");
        feed_ids.push((
            created["subscription"]["id"].as_i64().unwrap(),
            created["subscription"]["feed_id"].as_i64().unwrap(),
        ));
    }
    // The mirror's site has gone: its feed stops with the 404 as its error.
    sites[4].serve("/feed.xml", 404, "text/plain", "gone");
    let (mirror_sub, _) = feed_ids[4];
    page_fetch(
        b,
        "POST",
        &format!("/subscriptions/{mirror_sub}/refresh"),
        Value::Null,
    )
    .await;
    // Some reading already done: a few read items and a star.
    let items = page_fetch(b, "GET", "/items?filter=all&limit=50", Value::Null).await;
    let items = items["items"].as_array().unwrap().clone();
    let by_title = |t: &str| {
        items
            .iter()
            .find(|i| i["title"] == t)
            .unwrap_or_else(|| panic!("{t}"))["id"]
            .as_i64()
            .unwrap()
    };
    for title in [
        "Moss, up close",
        "The Perseids, counted",
        "Caramel without fear",
    ] {
        page_fetch(
            b,
            "PUT",
            &format!("/items/{}/state", by_title(title)),
            json!({"is_read": true}),
        )
        .await;
    }
    let starred = by_title("A beginner's guide to binoculars");
    page_fetch(
        b,
        "PUT",
        &format!("/items/{starred}/state"),
        json!({"is_starred": true}),
    )
    .await;
    by_title("Cold starts, a third faster")
}

/// The median and the 95th percentile of `samples`.
fn median_p95(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

fn samples(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not samples: {value}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// Measures the UI in the browser with the Performance API on a large data set (the API
/// issue's million items): navigation to the first 50 items painted, expanding an item, and
/// j/k between items. Reported, not asserted. The database comes from
/// `tidings-bench generate`; see `crates/server/ui/BENCHMARKS.md` for the commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs TIDINGS_UI_BENCH_DB, a database made by `tidings-bench generate`"]
async fn performance() {
    if skip_without_browser("ui_browser::performance") {
        return;
    }
    let Ok(url) = std::env::var("TIDINGS_UI_BENCH_DB") else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED ui_browser::performance: TIDINGS_UI_BENCH_DB is not set (see crates/server/ui/BENCHMARKS.md)"
        );
        return;
    };
    let store = Store::connect(&tidings_store::StoreOptions::new(&url))
        .await
        .expect("open the bench database");
    store.migrate().await.expect("migrate");
    let users = store.list_users().await.unwrap();
    let user = users
        .iter()
        .find(|u| u.username.starts_with("bench-"))
        .expect("a bench user: run `tidings-bench generate` first");
    let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
    store.set_password_hash(user.id, &hash).await.unwrap();
    let counts = store.unread_counts(user.id).await.unwrap();
    let unread: i64 = counts.subscriptions.iter().map(|c| c.unread).sum();
    let subscriptions = counts.subscriptions.len();
    let base = start_server_on(store.clone()).await;

    let b = Browser::start(1280, 800).await;
    sign_in(&b, &base, &user.username).await;

    // Navigation → first 50 items painted: a first load, then reloads (assets cached).
    let mut navigation = Vec::new();
    for _ in 0..8 {
        b.goto(&format!("{base}/all?filter=unread")).await;
        let painted = b
            .wait_for_within(
                "the first page painted",
                "performance.getEntriesByName('tidings:first-page-painted')[0]?.startTime",
                Duration::from_secs(60),
            )
            .await;
        assert_eq!(
            b.eval("document.querySelectorAll('#main li.item').length")
                .await,
            50
        );
        navigation.push(painted.as_f64().unwrap());
    }
    let first = navigation.remove(0);

    // Expanding an item: the click handler (script and layout), the next frame, then the
    // full content arriving from the API.
    let expand = b
        .js_async(
            "const done = arguments[arguments.length - 1]; \
             const toggles = [...document.querySelectorAll('#main .item-toggle')].slice(0, 20); \
             const handler = [], frame = [], content = []; let n = 0; \
             function step() { \
               const li = toggles[n].closest('li'); const t0 = performance.now(); \
               toggles[n].click(); handler.push(performance.now() - t0); \
               requestAnimationFrame(() => setTimeout(() => { frame.push(performance.now() - t0); \
                 const wait = () => li.querySelector('.item-content:not(.pending)') \
                   ? (content.push(performance.now() - t0), (++n < toggles.length ? setTimeout(step, 20) : done({handler, frame, content}))) \
                   : setTimeout(wait, 1); wait(); }, 0)); } \
             step();",
        )
        .await
        .expect("expand timing");
    // j/k between items with none open: the key handler, then the next frame.
    b.eval("(document.querySelector('#main .item-toggle[aria-expanded=true]')?.click(), true)")
        .await;
    let moves = b
        .js_async(
            "const done = arguments[arguments.length - 1]; const handler = [], frame = []; let n = 0; \
             function step() { const key = n % 10 < 7 ? 'j' : 'k'; const t0 = performance.now(); \
               document.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true })); \
               handler.push(performance.now() - t0); \
               requestAnimationFrame(() => setTimeout(() => { frame.push(performance.now() - t0); \
                 ++n < 60 ? setTimeout(step, 10) : done({handler, frame}); }, 0)); } \
             step();",
        )
        .await
        .expect("j/k timing");

    let (nav_median, nav_p95) = median_p95(&mut navigation);
    let mut report = format!(
        "UI performance, {subscriptions} subscriptions, {unread} unread items ({url}):\n\
         navigation -> first 50 items painted: first load {first:.0} ms; reloads median \
         {nav_median:.0} ms, p95 {nav_p95:.0} ms ({} loads)\n",
        navigation.len()
    );
    for (label, value, key) in [
        ("expand: click handler", &expand, "handler"),
        ("expand: to the next frame", &expand, "frame"),
        ("expand: full content shown", &expand, "content"),
        ("j/k: key handler", &moves, "handler"),
        ("j/k: to the next frame", &moves, "frame"),
    ] {
        let mut values = samples(&value[key]);
        let (median, p95) = median_p95(&mut values);
        report.push_str(&format!(
            "{label}: median {median:.1} ms, p95 {p95:.1} ms ({} samples)\n",
            values.len()
        ));
    }
    let _ = writeln!(std::io::stderr(), "{report}");
    b.quit().await;
}

/// Creates the user `reader` in `store`, signs in through the page and subscribes to each
/// of `feeds` from the page; answers the user's id and the feeds' ids.
async fn reader_with_feeds(
    store: &Store,
    b: &Browser,
    base: &str,
    feeds: &[String],
) -> (i64, Vec<i64>) {
    let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
    let user = store
        .create_user(&tidings_store::NewUser {
            username: "reader".into(),
            password_hash: Some(hash),
            is_admin: true,
        })
        .await
        .unwrap()
        .id;
    sign_in(b, base, "reader").await;
    let mut ids = Vec::new();
    for url in feeds {
        let created = page_fetch(b, "POST", "/subscriptions", json!({ "url": url })).await;
        let feed = created["subscription"]["feed_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("subscribed to {url}: {created}"));
        ids.push(feed);
    }
    (user, ids)
}

/// Records the status and path of every request the page's code makes from now on, and
/// the most rate-limit notices and error toasts shown at once.
async fn record_requests(b: &Browser) {
    b.eval(
        "(() => { window.__requests = []; window.__maxNotices = 0; window.__errors = 0; \
         const real = window.fetch; \
         window.fetch = (url, init) => real(url, init).then((r) => { \
           window.__requests.push([(init && init.method) || 'GET', String(url), r.status, performance.now()]); return r; }); \
         new MutationObserver(() => { \
           const n = document.querySelectorAll('#toasts .toast[data-key=rate-limited]').length; \
           window.__maxNotices = Math.max(window.__maxNotices, n); \
           window.__errors += document.querySelectorAll('#toasts .toast-error').length; \
         }).observe(document.getElementById('toasts'), { childList: true, subtree: true }); \
         return true; })()",
    )
    .await;
}

/// The user's unread items of a feed, by asking the store (not the rate-limited API).
async fn unread_ids(store: &Store, user: i64, feed: i64) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list_items(
                user,
                &tidings_store::ItemQuery {
                    feed_id: Some(feed),
                    cursor,
                    limit: 200,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        ids.extend(page.items.iter().map(|i| i.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

/// Waits until the store lists exactly `expected` unread items of the feed.
async fn wait_for_unread(store: &Store, user: i64, feed: i64, expected: usize) -> Vec<i64> {
    let started = std::time::Instant::now();
    loop {
        let ids = unread_ids(store, user, feed).await;
        if ids.len() == expected {
            return ids;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{} unread items, expected {expected}",
            ids.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Issue 10: reading at a person's fastest pace (200 j presses at about ten a second on a
/// 400-item feed) under the real per-user limit meets no 429, asks for no item one by one,
/// and every opened item is read on the server. Then, with a tiny limit, a 429 is waited
/// out with one calm notice and the queued read marks are all sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_reading_never_meets_the_rate_limit() {
    if skip_without_browser("ui_browser::fast_reading_never_meets_the_rate_limit") {
        return;
    }
    let site = TestServer::start_empty().await;
    site.serve(
        "/long.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "Long", 400),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_with(store.clone(), RateLimits::standard()).await;
    let b = Browser::start(1280, 860).await;
    phase_read_at_full_pace(&b, &site, &store, &base).await;
    let tight_db = TestDb::sqlite();
    phase_wait_out_a_spent_budget(&b, &site, &tight_db).await;
    b.quit().await;
}

/// 200 j presses at about ten a second under the real limit: no 429, no item asked for one by
/// one, every opened item read on the server.
async fn phase_read_at_full_pace(b: &Browser, site: &TestServer, store: &Store, base: &str) {
    let (user, feeds) = reader_with_feeds(store, b, base, &[site.url("/long.xml")]).await;
    let feed = feeds[0];
    b.goto(&format!("{base}/feeds/{feed}?filter=unread")).await;
    b.wait_for(
        "the first page",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    record_requests(b).await;
    b.press(&["j", "o"]).await;
    let started = std::time::Instant::now();
    let mut pace = tokio::time::interval(Duration::from_millis(100));
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for _ in 0..200 {
        pace.tick().await;
        b.press(&["j"]).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    b.wait_for(
        "the 201st item open",
        "document.querySelectorAll('#main li.item')[200]?.classList.contains('expanded')",
    )
    .await;
    let opened: Vec<i64> = listed_ids(b).await[..201].to_vec();
    let unread = wait_for_unread(store, user, feed, 199).await;
    assert!(
        opened.iter().all(|id| !unread.contains(id)),
        "every opened item is read on the server"
    );
    let requests = b.eval("window.__requests").await;
    let requests = requests.as_array().unwrap();
    let refused: Vec<&Value> = requests.iter().filter(|r| r[2] == 429).collect();
    assert!(refused.is_empty(), "429s: {refused:?}");
    let per_item: Vec<&Value> = requests
        .iter()
        .filter(|r| {
            r[1].as_str()
                .unwrap()
                .trim_start_matches("/api/v1/items/")
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .collect();
    assert!(
        per_item.is_empty(),
        "items asked for one by one: {per_item:?}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "200 j presses in {elapsed:.1} s ({:.1}/s): {} requests",
        200.0 / elapsed,
        requests.len()
    );
    // The claim is about the limiter's one-minute window of 120 requests: no minute of the
    // run, 200 items read, sends half of it. The pace is ten presses a second when the machine
    // is free (20 s, 19 requests in all), under two when CI's other tests share it (112 s once,
    // 88 requests: read marks go out by time, so a slower reader sends more, smaller ones).
    // The bound on the pace only makes sure the reading was brisk (at least one item and a
    // third a second), not a crawl that no limit could catch.
    assert!(
        elapsed < 150.0,
        "the 200 presses came briskly: {elapsed:.1} s"
    );
    let at: Vec<f64> = requests.iter().filter_map(|r| r[3].as_f64()).collect();
    assert_eq!(at.len(), requests.len(), "every request has its time");
    let busiest = (0..at.len())
        .map(|first| {
            at[first..]
                .iter()
                .take_while(|t| **t < at[first] + 60_000.0)
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(
        busiest < 60,
        "reading 200 items stays far below the 120-a-minute budget: {busiest} in the busiest minute of {requests:?}"
    );
    assert_eq!(b.eval("window.__errors").await, 0, "no error shown");
}

/// With a tiny budget spent by the test, the read marks of opened items meet a 429, wait out
/// Retry-After under one notice, and all reach the server.
async fn phase_wait_out_a_spent_budget(b: &Browser, site: &TestServer, tight_db: &TestDb) {
    // A server with a tiny budget: the test spends it, then opens items. Their read marks
    // meet a 429, wait for Retry-After under one notice, and all reach the server.
    let tight_store = tight_db.migrated().await;
    // The window is long enough that the read marks, sent up to 1.5 s after the budget is
    // spent, still meet the spent window: with 5 s, a spend late in the window let the marks
    // land in a fresh one and pass without a 429 (seen once on a loaded machine).
    let tight_window = Duration::from_secs(12);
    let tight = start_server_with(
        tight_store.clone(),
        RateLimits {
            per_user: RateLimiter::new(40, tight_window),
            ..RateLimits::standard()
        },
    )
    .await;
    // Spread over two windows, so that the budget is whole when the reading starts.
    tokio::time::sleep(tight_window).await;
    let (user, feeds) = reader_with_feeds(&tight_store, b, &tight, &[site.url("/long.xml")]).await;
    let feed = feeds[0];
    tokio::time::sleep(tight_window).await;
    b.goto(&format!("{tight}/feeds/{feed}?filter=unread")).await;
    b.wait_for(
        "the first page",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    record_requests(b).await;
    b.press(&["j", "o", "j"]).await;
    let spent = b
        .js_async(
            "const done = arguments[arguments.length - 1]; \
             (async () => { for (let i = 0; i < 100; i++) { \
               const r = await fetch('/api/v1/counts'); \
               if (r.status === 429) { window.__spentAt = window.__requests.length; return i; } } \
               return -1; })().then(done);",
        )
        .await
        .unwrap();
    assert!(spent.as_i64().unwrap() >= 0, "the budget was spent");
    b.press(&["j"]).await;
    b.wait_for(
        "the calm notice",
        "document.querySelectorAll('#toasts .toast[data-key=rate-limited]').length === 1",
    )
    .await;
    let opened: Vec<i64> = listed_ids(b).await[..3].to_vec();
    let unread = wait_for_unread(&tight_store, user, feed, 397).await;
    assert!(
        opened.iter().all(|id| !unread.contains(id)),
        "no read mark lost"
    );
    assert_eq!(
        b.eval("window.__maxNotices").await,
        1,
        "one notice, never a stack"
    );
    assert_eq!(b.eval("window.__errors").await, 0, "no error shown");
    // After the spend, the page's own requests meet the refusal: the first to go (the read
    // marks, or Related asked for after 700 ms open) gets the 429, and every request after it
    // waits out Retry-After, so the marks may be refused and sent again, or held and sent
    // once. Either way a 429 came before the marks' last request, which succeeded.
    let after_spend = b
        .eval("window.__requests.slice(window.__spentAt).map(r => [r[1], r[2]])")
        .await;
    let after_spend = after_spend.as_array().unwrap();
    let first_refusal = after_spend.iter().position(|r| r[1] == 429);
    let last_mark = after_spend
        .iter()
        .rposition(|r| r[0].as_str().unwrap().ends_with("/items/mark-read"));
    assert!(
        matches!((first_refusal, last_mark), (Some(refused), Some(mark)) if refused < mark)
            && after_spend[last_mark.unwrap()][1] == 200,
        "the page met a 429, then its read marks were sent and accepted: {after_spend:?}"
    );
}

/// A podcast feed of one episode with an MP3 enclosure, and a video feed whose item links to
/// YouTube with its thumbnail as an image enclosure; both enclosures live on `site`.
fn media_feeds(site: &TestServer) {
    let now = chrono::Utc::now().to_rfc2822();
    site.serve(
        "/podcast.xml",
        200,
        "application/rss+xml",
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Pod</title>\
             <link>{base}/</link><description>d</description><item><title>Episode 1</title>\
             <link>{base}/ep1</link><guid>ep1</guid><pubDate>{now}</pubDate>\
             <description><![CDATA[<p>Show notes <img alt=\"cover\" src=\"{base}/cover.png\"></p>]]></description>\
             <enclosure url=\"{base}/ep1.mp3\" length=\"48213000\" type=\"audio/mpeg\"/>\
             </item></channel></rss>",
            base = site.base
        ),
    );
    site.serve(
        "/videos.xml",
        200,
        "application/rss+xml",
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Videos</title>\
             <link>{base}/</link><description>d</description><item><title>A video</title>\
             <link>https://www.youtube.com/watch?v=dQw4w9WgXcQ</link><guid>v1</guid>\
             <pubDate>{now}</pubDate><description>About it</description>\
             <enclosure url=\"{base}/thumb.jpg\" length=\"1200\" type=\"image/jpeg\"/>\
             </item></channel></rss>",
            base = site.base
        ),
    );
    site.serve("/thumb.jpg", 200, "image/jpeg", vec![0xff, 0xd8, 0xff]);
    site.serve("/cover.png", 200, "image/png", crate::support::PNG_1X1);
}

/// Issue 10: the reading view. The page never scrolls in the two-pane layout; "Mark all
/// read" in Starred marks only starred items, asks above 20 items and is undone exactly;
/// counts and the list update by themselves behind an "N new items" bar; a podcast gets a
/// player and a YouTube item its thumbnail and a click-to-load player.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_view_in_chromium() {
    if skip_without_browser("ui_browser::reading_view_in_chromium") {
        return;
    }
    let site = feed_site().await;
    media_feeds(&site);
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    // With the media proxy for http: images (the test site is http:, which img-src refuses).
    let base = start_server_configured(
        store.clone(),
        RateLimits {
            per_user: RateLimiter::new(100_000, Duration::from_secs(60)),
            subscribe: RateLimiter::new(1_000, Duration::from_secs(60)),
            ..RateLimits::standard()
        },
        |config, _| {
            config.media_proxy = tidings_server::media::MediaProxy::new(
                tidings_server::media::MediaProxyMode::Insecure,
                None,
            );
        },
    )
    .await;
    let b = Browser::start(1280, 860).await;
    let feeds = [
        site.url("/big.xml"),
        site.url("/news.xml"),
        site.url("/podcast.xml"),
        site.url("/videos.xml"),
    ];
    let (user, ids) = reader_with_feeds(&store, &b, &base, &feeds).await;
    let (big, news, podcast, videos) = (ids[0], ids[1], ids[2], ids[3]);

    // The two panes scroll; the page itself never does.
    b.goto(&format!("{base}/feeds/{big}?filter=unread")).await;
    b.wait_for(
        "the unread list",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    assert_eq!(
        b.eval("document.scrollingElement.scrollHeight === innerHeight")
            .await,
        true,
        "page height {} for a window of {}",
        b.eval("document.scrollingElement.scrollHeight").await,
        b.eval("innerHeight").await
    );

    let big_unread = phase_mark_starred_read(&b, &store, user, &base, big, news).await;
    phase_mark_all_read_and_undo(&b, &store, user, &base, big, &big_unread).await;
    phase_new_items_arrive(&b, &site, &store, &base, news).await;
    phase_podcast_and_video(&b, &site, &base, podcast, videos).await;
    phase_feeds_in_counting_order(&b, &base).await;
    b.quit().await;
}

/// The left pane lists feeds by title as people count, numbers by value and case aside
/// ("Feed 9" before "feed 10"), where sorting as text put "Feed 10" and "Feed 100" first.
async fn phase_feeds_in_counting_order(b: &Browser, base: &str) {
    let subs = page_fetch(b, "GET", "/subscriptions", Value::Null).await;
    let ids: Vec<i64> = subs["subscriptions"]
        .as_array()
        .expect("subscriptions")
        .iter()
        .filter_map(|s| s["id"].as_i64())
        .collect();
    assert_eq!(ids.len(), 4, "{subs}");
    for (id, title) in ids
        .iter()
        .zip(["Feed 100", "feed 10", "Feed 9", "Éclair 2"])
    {
        let patched = page_fetch(
            b,
            "PATCH",
            &format!("/subscriptions/{id}"),
            json!({ "title": title }),
        )
        .await;
        assert_eq!(patched["subscription"]["title"], title, "{patched}");
    }
    b.goto(&format!("{base}/")).await;
    let shown = b
        .wait_for(
            "the renamed feeds in the left pane",
            "(() => { const titles = [...document.querySelectorAll('.group-list .feed-list .feed-title')].map((e) => e.textContent); \
             return titles.length === 4 && titles.includes('Feed 100') ? titles : false; })()",
        )
        .await;
    assert_eq!(shown, json!(["Éclair 2", "Feed 9", "feed 10", "Feed 100"]));
}

/// Two starred items of Big and one of News, marked read in Starred: only those three become
/// read. Returns Big's unread items then.
async fn phase_mark_starred_read(
    b: &Browser,
    store: &Store,
    user: i64,
    base: &str,
    big: i64,
    news: i64,
) -> Vec<i64> {
    // Star two unread items of Big and one of News, then mark all read in Starred: only
    // those three become read.
    let listed = listed_ids(b).await;
    for id in &listed[..2] {
        b.click(&format!("li.item[data-id='{id}'] .star")).await;
    }
    b.goto(&format!("{base}/feeds/{news}?filter=unread")).await;
    b.wait_for(
        "the news items",
        "document.querySelectorAll('#main li.item').length === 5",
    )
    .await;
    let news_first = listed_ids(b).await[0];
    b.click(&format!("li.item[data-id='{news_first}'] .star"))
        .await;
    b.wait_for(
        "three starred",
        "document.querySelector('[data-count=starred]').textContent === '3'",
    )
    .await;
    b.click("a.feed-link[data-key='/all?filter=starred']").await;
    b.wait_for(
        "the starred view",
        "location.search === '?filter=starred' && document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    b.click("#mark-all-read").await;
    b.wait_for(
        "the starred items read",
        "document.querySelectorAll('#main li.item.is-read').length === 3",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('dialog[open]')").await,
        Value::Null,
        "three items need no question"
    );
    let big_unread = wait_for_unread(store, user, big, 158).await;
    assert!(!big_unread.contains(&listed[0]) && !big_unread.contains(&listed[1]));
    wait_for_unread(store, user, news, 4).await;
    big_unread
}

/// 158 items: asked first, then undone exactly.
async fn phase_mark_all_read_and_undo(
    b: &Browser,
    store: &Store,
    user: i64,
    base: &str,
    big: i64,
    big_unread: &[i64],
) {
    // 158 items: asked first, then undone exactly.
    b.goto(&format!("{base}/feeds/{big}?filter=unread")).await;
    b.wait_for(
        "the unread list",
        "document.querySelectorAll('#main li.item').length >= 50",
    )
    .await;
    b.wait_for(
        "the count",
        &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{big}\"] .count').textContent === '158'"),
    )
    .await;
    b.click("#mark-all-read").await;
    let question = b
        .wait_for(
            "the question",
            "document.querySelector('dialog[open]')?.innerText",
        )
        .await;
    assert!(
        question.as_str().unwrap().contains("Mark 158 items read?"),
        "{question}"
    );
    b.click("dialog[open] .button.primary").await;
    wait_for_unread(store, user, big, 0).await;
    b.wait_for(
        "the count gone",
        &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{big}\"] .count').hidden"),
    )
    .await;
    b.click("#toasts .toast[data-key=marked-read] .toast-button")
        .await;
    assert_eq!(wait_for_unread(store, user, big, 158).await, big_unread);
    b.wait_for(
        "the count back",
        &format!("document.querySelector('a.feed-link[data-key=\"/feeds/{big}\"] .count').textContent === '158'"),
    )
    .await;
    b.wait_for(
        "the items unread again",
        "document.querySelectorAll('#main li.item.is-read').length === 0",
    )
    .await;
}

/// New items arrive: the count follows and the list offers them without moving.
async fn phase_new_items_arrive(
    b: &Browser,
    site: &TestServer,
    store: &Store,
    base: &str,
    news: i64,
) {
    // New items arrive: the count follows and the list offers them without moving.
    b.goto(&format!("{base}/feeds/{news}?filter=all")).await;
    b.wait_for(
        "the news items",
        "document.querySelectorAll('#main li.item').length === 5",
    )
    .await;
    let before = listed_ids(b).await;
    site.serve(
        "/news.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "news", 7),
    );
    let fetcher = crate::support::test_fetcher(store.clone(), true);
    fetcher.refresh_feed(news).await.expect("refresh");
    b.eval("(window.dispatchEvent(new Event('focus')), true)")
        .await;
    b.wait_for(
        "the new items bar",
        "document.querySelector('.new-items:not([hidden])')?.innerText.includes('2 new items')",
    )
    .await;
    assert_eq!(sidebar_count(b, news).await, "6");
    assert_eq!(listed_ids(b).await, before, "the list did not move");
    b.click(".new-items button").await;
    b.wait_for(
        "the new items listed",
        "document.querySelectorAll('#main li.item').length === 7",
    )
    .await;
}

/// A podcast's player, and a YouTube item's thumbnail, link and player on request.
async fn phase_podcast_and_video(
    b: &Browser,
    site: &TestServer,
    base: &str,
    podcast: i64,
    videos: i64,
) {
    // A podcast: a player that loads nothing before a click, type, size and download.
    b.goto(&format!("{base}/feeds/{podcast}?filter=all")).await;
    b.click("#main li.item .item-toggle").await;
    let audio = b
        .wait_for(
            "the player",
            "(() => { const a = document.querySelector('#main li.expanded audio'); \
             return a && [a.getAttribute('src'), a.getAttribute('preload'), a.hasAttribute('controls')]; })()",
        )
        .await;
    assert_eq!(audio, json!([site.url("/ep1.mp3"), "none", true]));
    let caption = b
        .eval("document.querySelector('#main li.expanded .enclosure figcaption').innerText")
        .await;
    let caption = caption.as_str().unwrap();
    assert!(
        caption.contains("audio/mpeg") && caption.contains("48.2 MB"),
        "{caption}"
    );
    assert_eq!(
        b.eval(
            "document.querySelector('#main li.expanded a.enclosure-download').getAttribute('href')"
        )
        .await,
        site.url("/ep1.mp3")
    );
    assert_eq!(site.hits("/ep1.mp3"), 0, "nothing loaded before a click");
    // The show notes' http: image shows, through the media proxy.
    b.wait_for(
        "the cover through the proxy",
        &format!(
            "(() => {{ const i = document.querySelector('#main li.expanded .item-content img');              return i && i.src.startsWith('{base}/media?') && i.complete && i.naturalWidth === 1; }})()"
        ),
    )
    .await;
    assert_eq!(site.hits("/cover.png"), 1);

    // A YouTube item: its thumbnail, a link to the video, and a player only on request.
    b.goto(&format!("{base}/feeds/{videos}?filter=all")).await;
    b.eval(
        "(window.__csp = [], document.addEventListener('securitypolicyviolation', \
         (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)), true)",
    )
    .await;
    b.click("#main li.item .item-toggle").await;
    b.wait_for(
        "the thumbnail",
        &format!(
            "document.querySelector('#main li.expanded .video-thumb img')?.getAttribute('src') === '{}'",
            site.url("/thumb.jpg")
        ),
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#main li.expanded .video-link').getAttribute('href')")
            .await,
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('iframe').length").await,
        0
    );
    b.click("#main li.expanded [data-role=embed]").await;
    let frame = b
        .wait_for(
            "the player",
            "document.querySelector('#main li.expanded iframe')?.getAttribute('src')",
        )
        .await;
    assert_eq!(
        frame,
        "https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ?autoplay=1"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // (The test site's thumbnail is http:, which img-src refuses; YouTube's are https:.)
    assert_eq!(
        b.eval("window.__csp.filter(v => v.startsWith('frame-src'))")
            .await,
        json!([]),
        "the CSP allows the embed"
    );
}

/// Search (F35) in the browser: `/` focuses the box, results come as you type (Japanese and
/// full-width included) with highlighted snippets, the list's feed and filter apply, Escape
/// returns to the list, Back works, and bookmarks are searched on their page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_in_chromium() {
    if skip_without_browser("ui_browser::search_in_chromium") {
        return;
    }
    let db = TestDb::sqlite();
    let (base, store) = start_server(&db).await;
    let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
    let user = store
        .create_user(&tidings_store::NewUser {
            username: "yui".into(),
            password_hash: Some(hash),
            is_admin: false,
        })
        .await
        .unwrap()
        .id;
    let mut feeds = Vec::new();
    for url in ["https://news.example/feed", "https://tech.example/feed"] {
        let subscription = store
            .subscribe(
                user,
                &tidings_store::NewSubscription {
                    feed_url: url.into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        feeds.push(subscription.feed_id);
    }
    let now = tidings_store::unix_now();
    let item = |guid: &str, age: i64, title: &str, content: &str| tidings_store::NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(content.into()),
        published: Some(now - age * 60),
        ..Default::default()
    };
    store
        .upsert_items(
            feeds[0],
            &[
                item("n1", 1, "東京の天気", "<p>明日の東京は晴れ。</p>"),
                item(
                    "n2",
                    2,
                    "Wetter in München",
                    "<p>Grüße aus der Straße &lt;b&gt;</p>",
                ),
                item("n3", 3, "Rust の話", "<p>ＲＵＳＴで書く。</p>"),
            ],
            now,
        )
        .await
        .unwrap();
    store
        .upsert_items(
            feeds[1],
            &[item(
                "t1",
                4,
                "Rust 1.94",
                "<p>Rust news from Tokyo (東京).</p>",
            )],
            now,
        )
        .await
        .unwrap();

    let b = Browser::start(1280, 860).await;
    sign_in(&b, &base, "yui").await;
    b.goto(&format!("{base}/all?filter=all")).await;
    b.wait_for(
        "four items",
        "document.querySelectorAll('#main li.item').length === 4",
    )
    .await;

    phase_search_as_you_type(&b).await;
    phase_search_in_a_feed_and_bookmarks(&b, &store, user, &base, &feeds).await;
    b.quit().await;
}

/// `/` focuses the box and typing searches, Japanese included, with highlighted snippets;
/// nothing found says so, and Escape returns to the whole list.
async fn phase_search_as_you_type(b: &Browser) {
    // `/` puts the keyboard in the search box; typing searches after a pause.
    b.eval("document.activeElement && document.activeElement.blur()")
        .await;
    b.press(&["/"]).await;
    assert_eq!(b.eval("document.activeElement.id").await, "search-box");
    b.press(&["r", "u", "s", "t"]).await;
    b.wait_for(
        "the results for rust",
        "location.search.includes('q=rust') && document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    let titles = b
        .eval("[...document.querySelectorAll('#main .item-title')].map(e => e.textContent)")
        .await;
    assert_eq!(titles, json!(["Rust の話", "Rust 1.94"]));
    let snippet = b
        .eval("document.querySelector('#main li.item .search-snippet').innerHTML")
        .await;
    assert_eq!(snippet, "<mark>ＲＵＳＴ</mark>で書く。");
    assert_eq!(
        b.eval("document.activeElement.id").await,
        "search-box",
        "typing keeps the focus"
    );
    assert!(
        b.eval("document.title")
            .await
            .as_str()
            .unwrap()
            .contains("Search: rust"),
        "the title names the search"
    );

    // Japanese without spaces, and the markup in the text stays text.
    b.type_into("#search-box", "東京").await;
    b.wait_for(
        "the results for 東京",
        "document.querySelectorAll('#main li.item').length === 2 && document.title.includes('東京')",
    )
    .await;
    let marks = b
        .eval(
            "[...document.querySelectorAll('#main .search-snippet mark')].map(m => m.textContent)",
        )
        .await;
    assert_eq!(marks, json!(["東京", "東京"]));
    b.type_into("#search-box", "strasse grusse").await;
    b.wait_for(
        "the German item",
        "document.querySelectorAll('#main li.item').length === 1 && document.title.includes('strasse')",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#main .search-snippet').textContent")
            .await,
        "Grüße aus der Straße <b>"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#main .search-snippet b').length")
            .await,
        0
    );

    // Nothing found says so.
    b.type_into("#search-box", "nichts").await;
    let empty = b
        .wait_for(
            "the empty result",
            "(document.querySelector('#main .list-end .empty')?.textContent || '').includes('nichts') \
             && document.querySelector('#main .list-end .empty').textContent",
        )
        .await;
    assert!(empty.as_str().unwrap().contains("nichts"), "{empty}");

    // Escape clears the search: back to the whole list.
    b.press(&["\u{E00C}"]).await;
    b.wait_for(
        "the list again",
        "!location.search.includes('q=') && document.querySelectorAll('#main li.item').length === 4",
    )
    .await;
}

/// The list's feed and filter apply to a search, Back returns to the list without it, and
/// bookmarks are searched on their own page.
async fn phase_search_in_a_feed_and_bookmarks(
    b: &Browser,
    store: &Store,
    user: i64,
    base: &str,
    feeds: &[i64],
) {
    // The list's feed and filter apply to a search.
    b.goto(&format!("{base}/feeds/{}?filter=all", feeds[1]))
        .await;
    b.wait_for(
        "the tech feed",
        "document.querySelectorAll('#main li.item').length === 1",
    )
    .await;
    b.type_into("#search-box", "rust").await;
    b.press(&["\u{E007}"]).await;
    b.wait_for(
        "the feed's result",
        &format!(
            "location.pathname === '/feeds/{}' && location.search.includes('q=rust') \
             && document.querySelectorAll('#main li.item').length === 1",
            feeds[1]
        ),
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#main .item-title').textContent")
            .await,
        "Rust 1.94"
    );
    // Back returns to the feed's list without the search, and the box follows.
    b.eval("history.back()").await;
    b.wait_for(
        "the feed's list",
        "!location.search.includes('q=') && document.querySelector('#search-box').value === ''",
    )
    .await;

    // Bookmarks are searched on their own page.
    for id in store.feed_item_ids(feeds[0]).await.unwrap() {
        store.create_bookmark(user, id).await.unwrap();
    }
    b.goto(&format!("{base}/bookmarks")).await;
    b.wait_for(
        "three bookmarks",
        "document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    b.type_into("#search-box", "munchen").await;
    b.press(&["\u{E007}"]).await;
    b.wait_for(
        "the matching bookmark",
        "location.pathname === '/bookmarks' && document.querySelectorAll('#main li.item').length === 1",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#main .item-title').textContent")
            .await,
        "Wetter in München"
    );
    review(b, "search").await;
}

/// Full text (F6) in the reader: "Load full article" on an item fetches its page and shows the
/// article, a button switches back to the feed's text and again, and the feed settings save
/// the full-text mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_text_in_chromium() {
    if skip_without_browser("ui_browser::full_text_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    site.serve(
        "/news.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "news", 2),
    );
    // The newest item links to /news/0: the saved news page.
    site.serve(
        "/news/0",
        200,
        "text/html; charset=utf-8",
        include_bytes!("../../extract/testdata/news.html").as_slice(),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (_, ids) = reader_with_feeds(&store, &b, &base, &[site.url("/news.xml")]).await;
    let feed = ids[0];
    b.goto(&format!("{base}/feeds/{feed}?filter=all")).await;
    b.wait_for(
        "the news items",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    let first = listed_ids(&b).await[0];
    let item = format!("li.item[data-id='{first}']");
    b.click(&format!("{item} .item-toggle")).await;
    b.wait_for(
        "the feed's text",
        &format!("document.querySelector(\"{item} .item-content\")?.innerText.includes('Body 0')"),
    )
    .await;
    assert_eq!(site.hits("/news/0"), 0, "nothing fetched before the click");
    b.click(&format!("{item} [data-action=load-full-text]"))
        .await;
    let article = b
        .wait_for(
            "the full article",
            &format!("document.querySelector(\"{item} .item-content.full-text\")?.innerText"),
        )
        .await;
    let article = article.as_str().unwrap().to_owned();
    assert!(
        article.contains("The tidal mill at Porthcarrow last turned"),
        "{article}"
    );
    assert!(!article.contains("Most read"), "the sidebar: {article}");
    assert_eq!(site.hits("/news/0"), 1);
    review(&b, "full-text").await;
    // Back to the feed's text, and to the article again, without another request.
    b.click(&format!("{item} [data-action=full-text]")).await;
    b.wait_for(
        "the feed's text again",
        &format!(
            "!document.querySelector(\"{item} .item-content.full-text\") && \
             document.querySelector(\"{item} .item-content\")?.innerText.includes('Body 0') && \
             document.querySelector(\"{item} [data-action=full-text]\").textContent === 'Show full article'"
        ),
    )
    .await;
    b.click(&format!("{item} [data-action=full-text]")).await;
    b.wait_for(
        "the article again",
        &format!("document.querySelector(\"{item} .item-content.full-text\")?.innerText.includes('Porthcarrow')"),
    )
    .await;
    assert_eq!(site.hits("/news/0"), 1);

    // The feed settings save the mode.
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    b.wait_for(
        "the settings",
        "document.querySelector('#feed-full-text') !== null",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#feed-full-text').value")
            .await,
        "auto"
    );
    b.eval("document.querySelector('#feed-full-text').value = 'never'")
        .await;
    b.click("form.form button[type=submit]").await;
    b.wait_for(
        "saved",
        "document.querySelector('.settings .success') !== null",
    )
    .await;
    let subscriptions = api_in_page(&b, "/subscriptions").await;
    assert_eq!(subscriptions["subscriptions"][0]["full_text"], "never");
    b.quit().await;
}

/// Whether the open item's title is really visible: inside the list's visible band and not
/// under the sticky headers (the element at its centre is the title itself).
const OPEN_TITLE_VISIBLE: &str = "(() => {
  const li = document.querySelector('#main li.item.expanded');
  if (!li) return 'nothing open';
  const title = li.querySelector('.item-title').getBoundingClientRect();
  const x = title.left + Math.min(20, title.width / 2), y = title.top + title.height / 2;
  const hit = document.elementFromPoint(x, y);
  if (!hit || !li.querySelector('.item-title').contains(hit)) return 'title covered by ' + (hit && hit.className);
  const body = li.querySelector('.item-body').getBoundingClientRect();
  if (body.top > window.innerHeight - 150) return 'text starts below the fold at ' + body.top;
  return 'visible';
})()";

/// Waits until the item at `index` of the list is the open one, then says whether its title
/// is visible ([`OPEN_TITLE_VISIBLE`]).
async fn open_title_visible(b: &Browser, index: usize) -> Value {
    b.wait_for(
        &format!("item {index} open"),
        &format!(
            "document.querySelectorAll('#main li.item')[{index}]?.classList.contains('expanded')"
        ),
    )
    .await;
    b.eval(OPEN_TITLE_VISIBLE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opened_items_are_never_hidden_under_the_header() {
    if skip_without_browser("ui_browser::opened_items_are_never_hidden_under_the_header") {
        return;
    }
    // Items long enough that an open one fills more than the window.
    let site = TestServer::start_empty().await;
    let paragraphs = "&lt;p&gt;A paragraph of the article, long enough to wrap onto a second \
                      line in a window of ordinary width.&lt;/p&gt;"
        .repeat(30);
    let now = chrono::Utc::now();
    let items: String = (0..20)
        .map(|i| {
            let published = (now - chrono::Duration::hours(i + 1)).to_rfc2822();
            format!(
                "<item><title>Long item {i}</title><link>{0}/long/{i}</link><guid>long-{i}</guid>\
                 <pubDate>{published}</pubDate><description>{paragraphs}</description></item>",
                site.base
            )
        })
        .collect();
    site.serve(
        "/long.xml",
        200,
        "application/rss+xml",
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Long</title>\
             <link>{}/</link>{items}</channel></rss>",
            site.base
        ),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (_, feeds) = reader_with_feeds(&store, &b, &base, &[site.url("/long.xml")]).await;
    b.goto(&format!("{base}/feeds/{}?filter=all", feeds[0]))
        .await;
    b.wait_for(
        "the list",
        "document.querySelectorAll('#main li.item').length >= 20",
    )
    .await;
    // The seventh item sits near the bottom of the window: opened, it comes up whole.
    b.press(&["j", "j", "j", "j", "j", "j", "j", "o"]).await;
    assert_eq!(
        open_title_visible(&b, 6).await,
        "visible",
        "opened near the bottom"
    );
    // Reading on with j: each next item opens with its title in view.
    for index in 7..11 {
        b.press(&["j"]).await;
        assert_eq!(
            open_title_visible(&b, index).await,
            "visible",
            "after j to {index}"
        );
    }
    // And back with k: the item above opens below the header, not under it.
    for index in (7..10).rev() {
        b.press(&["k"]).await;
        assert_eq!(
            open_title_visible(&b, index).await,
            "visible",
            "after k to {index}"
        );
    }
    // Shift+Tab from the open item goes up to the controls of the item above, which sat just
    // above the header's edge: each one focused comes out below the header.
    for step in 0..3 {
        b.press_shifted("\u{E004}").await;
        let focused = b
            .eval(
                "(() => {
                  const el = document.activeElement, box = el.getBoundingClientRect();
                  const header = document.querySelector('.list-header').getBoundingClientRect();
                  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
                  if (!el.closest('#main li.item')) return 'focus left the list: ' + el.outerHTML.slice(0, 80);
                  return box.top >= header.bottom - 1 && hit && el.contains(hit)
                    ? 'visible' : 'under the header: ' + box.top + ' < ' + header.bottom;
                })()",
            )
            .await;
        assert_eq!(focused, "visible", "after Shift+Tab {step}");
    }
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_in_chromium() {
    if skip_without_browser("ui_browser::tags_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    let home = format!("{}/", site.base);
    site.serve(
        "/tech.xml",
        200,
        "application/rss+xml",
        demo_rss(
            "Tech",
            &home,
            &[
                (
                    "Rust compiler gets faster",
                    "<p>The Rust compiler is faster.</p>",
                    Some(1),
                ),
                (
                    "Rust in the Linux kernel",
                    "<p>Rust drivers land in Linux.</p>",
                    Some(2),
                ),
                (
                    "Gardening in spring",
                    "<p>Tomatoes and gardening tips.</p>",
                    Some(3),
                ),
                (
                    "東京都知事選挙の投票率",
                    "<p>投票率は過去最低でした。</p>",
                    Some(4),
                ),
            ],
        ),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (user, ids) = reader_with_feeds(&store, &b, &base, &[site.url("/tech.xml")]).await;
    let feed = ids[0];
    // The worker's tagging job, as `tidings serve` runs it beside the fetcher.
    let fetcher = crate::support::test_fetcher(store.clone(), true);
    let job = Arc::new(tidings_worker::TaggingJob::new(&fetcher));
    tidings_worker::drain_enrichment(job, 1).await.unwrap();

    b.goto(&format!("{base}/feeds/{feed}?filter=all")).await;
    b.wait_for(
        "the items",
        "document.querySelectorAll('#main li.item').length === 4",
    )
    .await;
    // Each item shows its tags as links to their pages.
    let first = listed_ids(&b).await[0];
    let item = format!("li.item[data-id='{first}']");
    let tags = b
        .wait_for(
            "the first item's tags",
            &format!("[...document.querySelectorAll(\"{item} .item-tags a.tag\")].map(a => a.textContent)"),
        )
        .await;
    assert_eq!(tags[0], "rust", "{tags}");
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} .item-tags a.tag\").getAttribute('href')"
        ))
        .await,
        "/tags/rust"
    );
    // The left pane lists the most frequent tags with their counts.
    b.wait_for(
        "the tag list",
        "[...document.querySelectorAll('.tag-cloud a')].some(a => a.dataset.key === '/tags/rust' \
         && a.querySelector('.count').textContent === '2')",
    )
    .await;
    review(&b, "tags-on-items").await;

    // A click on a tag opens its page: the tag's items only, the tag marked in the pane.
    b.click(&format!("{item} .item-tags a.tag")).await;
    b.wait_for(
        "the tag page",
        "location.pathname === '/tags/rust' \
         && document.querySelector('#list-title')?.textContent === 'Tag: rust' \
         && document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    let titles = b
        .eval("[...document.querySelectorAll('#main .item-title')].map(e => e.textContent)")
        .await;
    assert_eq!(
        titles,
        json!(["Rust compiler gets faster", "Rust in the Linux kernel"])
    );
    assert_eq!(
        b.eval("document.querySelector('.tag-cloud a[aria-current=page]')?.dataset.key")
            .await,
        "/tags/rust"
    );
    review(&b, "tag-page").await;
    // Mark all read on a tag's page marks its items only.
    b.click("#mark-all-read").await;
    b.wait_for(
        "the tag's items read",
        "document.querySelectorAll('#main li.item.is-read').length === 2",
    )
    .await;
    let unread = wait_for_unread(&store, user, feed, 2).await;
    assert_eq!(unread.len(), 2, "the other items stay unread");

    // A Japanese tag from the pane, and its page loaded directly by its address.
    b.goto(&format!("{base}/all?filter=all")).await;
    b.wait_for(
        "the Japanese tag",
        "document.querySelector('.tag-cloud a[data-key=\"/tags/%E6%8A%95%E7%A5%A8%E7%8E%87\"]') !== null",
    )
    .await;
    b.click(".tag-cloud a[data-key='/tags/%E6%8A%95%E7%A5%A8%E7%8E%87']")
        .await;
    b.wait_for(
        "the Japanese tag's page",
        "document.querySelector('#list-title')?.textContent === 'Tag: 投票率' \
         && document.querySelectorAll('#main li.item').length === 1",
    )
    .await;
    b.goto(&format!("{base}/tags/Rust?filter=all")).await;
    b.wait_for(
        "the tag page by its address, in another spelling",
        "document.querySelector('#list-title')?.textContent === 'Tag: rust' \
         && document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    b.quit().await;
}

/// Waits up to 10 s for `check` to hold, polling.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, check: impl Fn() -> F) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Usage counts (F45) in Chromium: opening an item's original link and a search typed in the
/// box are counted (the search once, not each keystroke's), and show on the administrator's
/// Users page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_counts_in_chromium() {
    if skip_without_browser("ui_browser::usage_counts_in_chromium") {
        return;
    }
    let db = TestDb::sqlite();
    let (base, store) = start_server(&db).await;
    let site = TestServer::start_empty().await;
    site.serve(
        "/story",
        200,
        "text/html",
        "<html><body>The story</body></html>",
    );
    let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
    let root = store
        .create_user(&tidings_store::NewUser {
            username: "root".into(),
            password_hash: Some(hash),
            is_admin: true,
        })
        .await
        .unwrap()
        .id;
    let feed = store
        .subscribe(
            root,
            &tidings_store::NewSubscription {
                feed_url: "https://usage.example/feed".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .feed_id;
    let now = tidings_store::unix_now();
    let item = |guid: &str, age: i64, title: &str, path: &str| tidings_store::NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        url: Some(site.url(path)),
        content: Some(format!("<p>{title}: the details.</p>")),
        published: Some(now - age * 60),
        ..Default::default()
    };
    store
        .upsert_items(
            feed,
            &[
                item("u1", 1, "Rust 2027 is out", "/story"),
                item("u2", 2, "Gardening news", "/garden"),
            ],
            now,
        )
        .await
        .unwrap();

    let b = Browser::start(1280, 860).await;
    sign_in(&b, &base, "root").await;
    b.goto(&format!("{base}/all?filter=all")).await;
    b.wait_for(
        "two items",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    // Open the first item, then its original link: the page opens in a new tab…
    b.click("#main li.item .item-toggle").await;
    b.click("#main li.item [data-role=original]").await;
    eventually("the story page opened", || async {
        site.hits("/story") == 1
    })
    .await;
    // …and the click is counted beside it.
    let today = tidings_store::usage_day(now);
    eventually("the click counted", || async {
        store
            .top_usage(tidings_store::UsageKind::Click, today, today, 10)
            .await
            .unwrap()
            .len()
            == 1
    })
    .await;

    // A search typed in two goes ("ru", its results, then "rust"): only the one that stayed
    // on screen counts, once, in its normalized spelling.
    b.eval("document.activeElement && document.activeElement.blur()")
        .await;
    b.press(&["/"]).await;
    b.press(&["R", "u"]).await;
    b.wait_for(
        "the results for Ru",
        "location.search.includes('q=Ru') && !location.search.includes('q=Rus')",
    )
    .await;
    b.press(&["s", "t"]).await;
    b.wait_for(
        "the results for Rust",
        "location.search.includes('q=Rust') && document.querySelectorAll('#main li.item').length === 1",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let searches = store
        .top_usage(tidings_store::UsageKind::Search, today, today, 10)
        .await
        .unwrap();
    assert_eq!(
        searches,
        [tidings_store::UsageCount {
            key: "rust".into(),
            count: 1
        }]
    );

    // The administrator's page shows both.
    b.goto(&format!("{base}/admin")).await;
    let report = b
        .wait_for(
            "the usage report",
            "(() => { const r = document.querySelector('#usage-report'); \
             return r && r.querySelector('ol') ? r.innerText : false; })()",
        )
        .await;
    let report = report.as_str().unwrap();
    assert!(
        report.contains("1 links opened, 0 tag pages viewed, 1 searches"),
        "{report}"
    );
    assert!(report.contains("Rust 2027 is out · 1"), "{report}");
    assert!(report.contains("rust · 1"), "{report}");
    assert!(!report.contains("Gardening"), "{report}");
    review(&b, "usage-counts").await;
    b.quit().await;
}

/// The scraped-source dialog (F7) on the saved Webflow page, served locally with its asset
/// host pointed at the test server: an item selector that matches nothing and a title
/// selector that matches nothing inside the items are named in the dialog, the right
/// configuration previews the page's four posts, **Subscribe** saves it and the reader lists
/// them; **Edit scraper** in the source's settings opens the same dialog on its configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrape_dialog_in_chromium() {
    if skip_without_browser("ui_browser::scrape_dialog_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    let saved = include_str!("../../scrape/testdata/webflow-blog.html")
        .replace("https://assets-global.website-files.example", &site.base);
    site.serve("/blog", 200, "text/html; charset=utf-8", saved);
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    reader_with_feeds(&store, &b, &base, &[]).await;
    b.goto(&format!("{base}/")).await;
    b.wait_for(
        "the reader",
        "document.querySelector('#subscribe-button') !== null",
    )
    .await;

    phase_selector_errors(&b, &site).await;
    phase_preview(&b, &site).await;
    phase_subscribe_and_edit(&b, &base).await;
    b.quit().await;
}

/// From the subscribe dialog to the scrape dialog with the address carried over; selectors
/// that match nothing are named in the error.
async fn phase_selector_errors(b: &Browser, site: &TestServer) {
    // From the subscribe dialog to the scrape dialog, with the address carried over.
    b.click("#subscribe-button").await;
    b.type_into("#subscribe-url", &site.url("/blog")).await;
    b.click("#scrape-instead").await;
    b.wait_for(
        "the scrape dialog",
        "document.querySelector('#scrape-item_selector') !== null",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#scrape-url').value").await,
        site.url("/blog")
    );
    assert_eq!(
        b.eval("document.querySelector('#scrape-kind').value").await,
        "html"
    );
    // The Next.js and Remix fields are hidden for a plain HTML page.
    assert_eq!(
        b.eval("document.querySelector('#scrape-data_key').closest('.scrape-field').hidden")
            .await,
        true
    );

    // An item selector that matches nothing: the error names it.
    let error_text = "document.querySelector('dialog .inline-error')?.innerText";
    b.type_into("#scrape-item_selector", ".post-card").await;
    b.click("#scrape-preview").await;
    let error = b.wait_for("the item selector's error", error_text).await;
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("item_selector `.post-card` matched nothing"),
        "{error}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('dialog .scrape-items li').length")
            .await,
        0
    );

    // The right items, but a title selector that matches nothing inside any of them.
    b.eval("document.querySelector('#scrape-item_selector').value = ''")
        .await;
    b.type_into("#scrape-item_selector", ".w-dyn-items .w-dyn-item")
        .await;
    b.type_into("#scrape-title_selector", "h2.post-title").await;
    b.click("#scrape-preview").await;
    let error = b
        .wait_for(
            "the title selector's error",
            &format!("{error_text}?.includes('title_selector') && {error_text}"),
        )
        .await;
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("title_selector `h2.post-title` matched nothing"),
        "{error}"
    );
}

/// The whole configuration: the preview lists the four posts with their dates and links.
async fn phase_preview(b: &Browser, site: &TestServer) {
    // The whole configuration: the preview lists the four posts with their dates and links.
    b.eval("document.querySelector('#scrape-title_selector').value = ''")
        .await;
    for (field, value) in [
        ("title_selector", ".blog-title"),
        ("url_selector", "a.blog-card"),
        ("date_selector", ".blog-date"),
        ("date_format", "%B %d, %Y"),
        ("summary_selector", ".blog-summary"),
    ] {
        b.type_into(&format!("#scrape-{field}"), value).await;
    }
    b.click("#scrape-preview").await;
    b.wait_for(
        "the preview",
        "document.querySelectorAll('dialog .scrape-items li').length === 4",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('dialog .inline-error')")
            .await,
        Value::Null,
        "the earlier error is gone"
    );
    let previewed = b
        .eval("[...document.querySelectorAll('dialog .scrape-items li strong')].map(s => s.textContent)")
        .await;
    assert_eq!(
        previewed,
        json!([
            "How we cut cold starts by 80%",
            "Introducing shared workspaces",
            "PostgreSQL partitioning in practice",
            "We're hiring in Lisbon & Berlin"
        ])
    );
    let first = b
        .eval("document.querySelector('dialog .scrape-items li').innerText")
        .await;
    let first = first.as_str().unwrap();
    // The page's relative link, resolved against its address.
    assert!(
        first.contains(&site.url("/blog/how-we-cut-cold-starts-by-80")),
        "{first}"
    );
    assert!(first.contains("2024"), "the date is shown: {first}");
    assert!(
        b.eval("document.querySelector('dialog .scrape-preview-title').textContent")
            .await
            .as_str()
            .unwrap()
            .contains("4 items on Blog | Northwind Labs"),
    );
    review(b, "scrape-dialog").await;
    assert!(
        api_in_page(b, "/subscriptions").await["subscriptions"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a preview saves nothing"
    );
}

/// Subscribing lists the source's items and names it in the sidebar; its scraper is edited
/// in the same dialog and saved without a change.
async fn phase_subscribe_and_edit(b: &Browser, base: &str) {
    // Subscribe: the dialog closes on the new source's items, newest first.
    b.click("#scrape-submit").await;
    b.wait_for(
        "the source's items",
        "!document.querySelector('dialog') && location.pathname.startsWith('/feeds/') && \
         document.querySelectorAll('#main li.item').length === 4",
    )
    .await;
    let feed = current_feed_id(b).await;
    let titles = b
        .eval("[...document.querySelectorAll('#main li.item .item-title')].map(t => t.textContent.trim())")
        .await;
    assert_eq!(
        titles,
        json!([
            "How we cut cold starts by 80%",
            "Introducing shared workspaces",
            "PostgreSQL partitioning in practice",
            "We're hiring in Lisbon & Berlin"
        ])
    );
    // The source is in the sidebar under the page's title, and its summary reads as content
    // (sanitized: the page's script is gone).
    b.wait_for(
        "the source in the sidebar",
        &format!(
            "document.querySelector('a.feed-link[data-key=\"/feeds/{feed}\"]')?.textContent.includes('Blog | Northwind Labs')"
        ),
    )
    .await;
    let subscriptions = api_in_page(b, "/subscriptions").await;
    let sub = &subscriptions["subscriptions"][0];
    assert_eq!(sub["feed_id"], feed);
    assert_eq!(sub["scraper"]["item_selector"], ".w-dyn-items .w-dyn-item");
    assert_eq!(sub["scraper"]["date_format"], "%B %d, %Y");
    let second = listed_ids(b).await[1];
    b.click(&format!("li.item[data-id='{second}'] .item-toggle"))
        .await;
    let content = b
        .wait_for(
            "the summary",
            &format!(
                "document.querySelector(\"li.item[data-id='{second}'] .item-content\")?.innerText"
            ),
        )
        .await;
    assert!(
        content.as_str().unwrap().contains("Invite your whole team"),
        "{content}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#main script').length")
            .await,
        0
    );

    // Edit scraper: the same dialog, on the stored configuration, saved without a change.
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    b.click("#edit-scraper").await;
    b.wait_for(
        "the scraper's configuration",
        "document.querySelector('#scrape-item_selector')?.value === '.w-dyn-items .w-dyn-item'",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#scrape-url').disabled")
            .await,
        true
    );
    assert_eq!(
        b.eval("document.querySelector('#scrape-date_format').value")
            .await,
        "%B %d, %Y"
    );
    b.click("#scrape-submit").await;
    b.wait_for("the dialog closed", "!document.querySelector('dialog')")
        .await;
}

/// Bookmark counts beside items, and the Hot view: its sidebar entry, the order by count,
/// the window choice and the empty state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_list_in_chromium() {
    if skip_without_browser("ui_browser::hot_list_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    // 30 items an hour apart: the last ones are older than a day but within a week.
    site.serve(
        "/pop.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "Pop", 30),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (_, _) = reader_with_feeds(&store, &b, &base, &[site.url("/pop.xml")]).await;

    // No counts yet: the Hot view says why it is empty.
    b.click("a.feed-link[href='/hot']").await;
    b.wait_for(
        "the empty hot list",
        "document.querySelector('#main .empty')?.textContent.includes('Nothing hot here yet')",
    )
    .await;
    assert_eq!(b.eval("location.pathname").await, "/hot");

    let listed = api_in_page(&b, "/items?filter=all&limit=100").await;
    let id_of = |title: &str| {
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["title"] == title)
            .and_then(|item| item["id"].as_i64())
            .unwrap_or_else(|| panic!("{title} listed: {listed}"))
    };
    let (three, one, zero, old) = (
        id_of("Pop item 3"),
        id_of("Pop item 1"),
        id_of("Pop item 0"),
        id_of("Pop item 29"),
    );
    let now = chrono::Utc::now().timestamp();
    store
        .save_popularity(
            "hatena",
            "test",
            &[(three, 120), (one, 45), (zero, 0), (old, 500)],
            now - 60,
            0,
        )
        .await
        .unwrap();

    // The counts show beside the items; an item counted 0 shows 0, one never counted nothing.
    b.goto(&format!("{base}/all?filter=all")).await;
    b.wait_for(
        "counts beside items",
        "document.querySelectorAll('#main li.item .popularity').length === 4",
    )
    .await;
    let count_of = |id: i64| {
        format!(
            "document.querySelector('#main li.item[data-id=\"{id}\"] .popularity')?.textContent ?? null"
        )
    };
    assert_eq!(b.eval(&count_of(three)).await, "120");
    assert_eq!(b.eval(&count_of(zero)).await, "0");
    assert_eq!(b.eval(&count_of(id_of("Pop item 2"))).await, Value::Null);

    // The Hot view: the last 24 hours by count, then the week with the older item on top.
    b.click("a.feed-link[href='/hot']").await;
    b.wait_for(
        "the hot list",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    assert_eq!(listed_ids(&b).await, vec![three, one]);
    assert_eq!(
        b.eval("document.querySelector('#list-title').textContent")
            .await,
        "Hot"
    );
    assert_eq!(
        b.eval("document.querySelector('a.feed-link[href=\"/hot\"]').getAttribute('aria-current')")
            .await,
        "page"
    );
    assert_eq!(
        b.eval("document.querySelector('.hot-windows [aria-current=page]').textContent")
            .await,
        "Last 24 hours"
    );
    b.click(".hot-windows a[href*='window=7d']").await;
    b.wait_for(
        "the week's hot list",
        "document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    assert_eq!(listed_ids(&b).await, vec![old, three, one]);
    assert!(
        b.eval("location.search")
            .await
            .as_str()
            .unwrap()
            .contains("window=7d"),
        "the window is in the address, so reload and Back keep it"
    );
    // Opening a hot item shows its text (the list carries summaries only).
    b.press(&["j", "o"]).await;
    b.wait_for(
        "the open hot item",
        "document.querySelector('#main li.item.expanded .item-content')?.textContent.includes('Body 29')",
    )
    .await;
    review(&b, "hot").await;
    b.quit().await;
}

/// WebSub push (F18) on the feed's settings page: a feed whose hub pushes shows "Pushed by its
/// hub — active until …" with its last push; a denial shows the hub's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websub_push_on_the_feed_settings_page_in_chromium() {
    if skip_without_browser("ui_browser::websub_push_on_the_feed_settings_page_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    site.serve(
        "/pushed.xml",
        200,
        "application/rss+xml",
        rss(&site.base, "Pushed", 3),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (_, feeds) = reader_with_feeds(&store, &b, &base, &[site.url("/pushed.xml")]).await;
    let feed = feeds[0];

    // No hub: no Push row.
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    b.wait_for(
        "the status section",
        "document.querySelector('.feed-state') !== null",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#feed-push') === null")
            .await,
        true
    );

    // The hub verified a subscription and pushed once.
    let now = chrono::Utc::now().timestamp();
    let hub = Some(("https://hub.example/", "https://blog.example/feed"));
    store
        .record_websub_discovery(feed, hub, "token", "secret", now)
        .await
        .unwrap();
    store.claim_websub_due("test", now, 1, 60).await.unwrap();
    let request = tidings_store::WebSubRequest {
        mode: tidings_store::WebSubMode::Subscribe,
        hub_url: "https://hub.example/",
        topic_url: "https://blog.example/feed",
        callback_token: "token",
        secret: "secret",
    };
    assert!(
        store
            .websub_request_sent(feed, "test", &request, now)
            .await
            .unwrap()
    );
    assert!(
        store
            .websub_verified(
                "token",
                tidings_store::WebSubMode::Subscribe,
                86_400,
                now,
                now
            )
            .await
            .unwrap()
    );
    store.record_websub_push("token", true, now).await.unwrap();
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    let push = b
        .wait_for(
            "the push row",
            "document.querySelector('#feed-push')?.innerText",
        )
        .await;
    assert!(
        push.as_str()
            .unwrap()
            .starts_with("Pushed by its hub — active until "),
        "{push}"
    );
    let facts = b.eval("document.querySelector('.facts').innerText").await;
    assert!(facts.as_str().unwrap().contains("(1 in all)"), "{facts}");
    review(&b, "websub-push-active").await;

    // The hub denies it: the reason shows.
    assert!(
        store
            .websub_denied("token", Some("not on this hub"), now + 86_400)
            .await
            .unwrap()
    );
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    let push = b
        .wait_for(
            "the denial",
            "document.querySelector('#feed-push.push-denied')?.innerText",
        )
        .await;
    assert_eq!(push, "Refused by the hub: not on this hub");
    b.quit().await;
}

/// Related items (F44): an opened item shows its most similar items (local vectors, as a fresh
/// install makes them) under its text, as links that open the related item in its feed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn related_items_in_chromium() {
    if skip_without_browser("ui_browser::related_items_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    let home = format!("{}/", site.base);
    site.serve(
        "/tech.xml",
        200,
        "application/rss+xml",
        demo_rss(
            "Tech",
            &home,
            &[
                (
                    "Rust compiler release brings faster builds",
                    "<p>The Rust compiler team released faster incremental builds and better borrow checker diagnostics.</p>",
                    Some(1),
                ),
                (
                    "Tomatoes in a small garden",
                    "<p>Plant tomatoes in spring and water them in the morning.</p>",
                    Some(2),
                ),
                (
                    "Faster builds with the new Rust compiler",
                    "<p>Incremental builds in the Rust compiler are faster; the borrow checker explains errors better.</p>",
                    Some(3),
                ),
            ],
        ),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (_, ids) = reader_with_feeds(&store, &b, &base, &[site.url("/tech.xml")]).await;
    let feed = ids[0];
    // The worker's embedding job, as `tidings serve` runs it beside the fetcher.
    let job =
        tidings_worker::EmbeddingJob::new(store.clone(), tidings_embed::LocalEmbedder, "ui", 60);
    tidings_worker::drain_enrichment(Arc::new(job), 1)
        .await
        .unwrap();

    b.goto(&format!("{base}/feeds/{feed}?filter=all")).await;
    b.wait_for(
        "the items",
        "document.querySelectorAll('#main li.item').length === 3",
    )
    .await;
    let first = listed_ids(&b).await[0];
    let item = format!("li.item[data-id='{first}']");
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} .item-title\").textContent"
        ))
        .await,
        "Rust compiler release brings faster builds"
    );
    b.click(&format!("{item} .item-toggle")).await;
    let related = b
        .wait_for(
            "the related items",
            &format!(
                "(() => {{ const s = document.querySelector(\"{item} .related\"); \
                 return s && !s.hidden && [...s.querySelectorAll('a')].map(a => a.textContent); }})()"
            ),
        )
        .await;
    assert_eq!(
        related[0], "Faster builds with the new Rust compiler",
        "{related}"
    );
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} .related h3\").textContent"
        ))
        .await,
        "Related"
    );
    review(&b, "related-items").await;
    // The link opens the related item in its feed, expanded.
    b.click(&format!("{item} .related a")).await;
    b.wait_for(
        "the related item opened",
        "new URLSearchParams(location.search).get('item') !== null \
         && document.querySelector('#main li.item.expanded .item-title')?.textContent \
            === 'Faster builds with the new Rust compiler'",
    )
    .await;
    b.quit().await;
}

/// Sentences that make an item longer than a summary (900 characters by default).
const MILL_STORY: &str = "The council will pay for a new wheel once the volunteers have repaired the mill's stone walls. Local schools plan visits to the mill so that children can watch grain become flour. The mill's old miller, now ninety, has offered to teach the volunteers how the stones are dressed. Engineers surveyed the mill race last winter and found the channel sound after seventy years of silence. A bakery in the harbour has promised to buy the mill's first flour for its bread. The restoration of the mill is expected to bring visitors to Porthcarrow through the summer. Fishermen in the harbour remember their grandparents carrying sacks of grain up the hill to the mill. Once the mill turns again, the volunteers hope to open a small museum of the town's trades beside it. The trust that owns the mill will hold an open day in June for anyone who gave money to the work. Storms damaged the mill's roof in 1987, and tarpaulins kept the rain off the machinery until now.";

/// Summaries (F42) in the reader: a short item offers no "Summarize" (its text is its own
/// summary); a longer opened item has a "Summarize" button; clicking it shows
/// the summary above the content (the built-in summarizer answers at once) and the button
/// goes; the summary stays on reload; the settings save the summarize preference and the
/// feed settings save a feed's mark; the feed settings' pause switch pauses and resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_in_chromium() {
    if skip_without_browser("ui_browser::summaries_in_chromium") {
        return;
    }
    let site = TestServer::start_empty().await;
    // "Mill 0" is longer than a summary; "Mill 1" is shorter, its own summary.
    let items: String = (0..2)
        .map(|i| {
            format!(
                "<item><title>Mill {i}</title><link>{}/mill/{i}</link><guid>mill-{i}</guid>\
                 <description>&lt;p&gt;The harbour town of Porthcarrow voted to restore mill {i}. \
                 The mill last turned in 1950. Volunteers raised the money in two years. \
                 Work starts in spring. {}&lt;/p&gt;</description></item>",
                site.base,
                if i == 0 { MILL_STORY } else { "" }
            )
        })
        .collect();
    site.serve(
        "/mills.xml",
        200,
        "application/rss+xml",
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Mills</title>\
             <link>{}/</link><description>d</description>{items}</channel></rss>",
            site.base
        ),
    );
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    let (_, ids) = reader_with_feeds(&store, &b, &base, &[site.url("/mills.xml")]).await;
    let feed = ids[0];
    phase_summarize_on_demand(&b, &base, feed).await;
    phase_summary_preferences(&b, &base, feed).await;
    phase_pause_switch(&b, &base, feed).await;
    b.quit().await;
}

/// The short item offers no "Summarize"; the long one is summarized on demand, the summary shown
/// above its content, and shown again after a reload without asking.
async fn phase_summarize_on_demand(b: &Browser, base: &str, feed: i64) {
    b.goto(&format!("{base}/feeds/{feed}?filter=all")).await;
    b.wait_for(
        "the items",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    let titled = |title: &str| {
        format!(
            "[...document.querySelectorAll('#main li.item')].find((li) => \
             li.querySelector('.item-title').textContent === '{title}').dataset.id"
        )
    };
    let short: i64 = b
        .eval(&titled("Mill 1"))
        .await
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let first: i64 = b
        .eval(&titled("Mill 0"))
        .await
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // The short item, opened and its text loaded, offers no "Summarize".
    let item = format!("li.item[data-id='{short}']");
    b.click(&format!("{item} .item-toggle")).await;
    b.wait_for(
        "the short item's text",
        &format!(
            "document.querySelector(\"{item} .item-content:not(.pending)\") !== null \
             && document.querySelector(\"{item} [data-action=read]\") !== null"
        ),
    )
    .await;
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} [data-action=summarize]\") === null"
        ))
        .await,
        true
    );
    let item = format!("li.item[data-id='{first}']");
    b.click(&format!("{item} .item-toggle")).await;
    b.wait_for(
        "the Summarize button",
        &format!("document.querySelector(\"{item} [data-action=summarize]\") !== null"),
    )
    .await;
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} .item-summary\") === null"
        ))
        .await,
        true
    );
    b.click(&format!("{item} [data-action=summarize]")).await;
    let text = b
        .wait_for(
            "the summary",
            &format!("document.querySelector(\"{item} .item-summary p\")?.innerText"),
        )
        .await;
    assert!(text.as_str().unwrap().contains("Porthcarrow"), "{text}");
    // Above the content, and the button is gone.
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} .item-summary\").nextElementSibling.classList.contains('item-content')"
        ))
        .await,
        true
    );
    assert_eq!(
        b.eval(&format!(
            "document.querySelector(\"{item} [data-action=summarize]\") === null"
        ))
        .await,
        true
    );
    review(b, "summary").await;
    let detail = api_in_page(b, &format!("/items/{first}")).await;
    assert_eq!(detail["item"]["generated_summary"]["provider"], "local");
    // Listed with it after a reload: shown when the item is opened, without asking again.
    b.goto(&format!("{base}/feeds/{feed}?filter=all")).await;
    b.wait_for(
        "the items again",
        "document.querySelectorAll('#main li.item').length === 2",
    )
    .await;
    b.click(&format!("{item} .item-toggle")).await;
    b.wait_for(
        "the stored summary",
        &format!(
            "document.querySelector(\"{item} .item-summary p\")?.innerText.includes('Porthcarrow')"
        ),
    )
    .await;
}

/// The summarize preference in the settings, and the feed's own mark in its settings, are saved.
async fn phase_summary_preferences(b: &Browser, base: &str, feed: i64) {
    // The preference in the settings.
    b.goto(&format!("{base}/settings")).await;
    b.wait_for(
        "the settings",
        "document.querySelector('#pref-summarize')?.value === 'on_demand'",
    )
    .await;
    b.eval(
        "(() => { const s = document.querySelector('#pref-summarize'); s.value = 'chosen'; \
         s.dispatchEvent(new Event('change')); })()",
    )
    .await;
    let mut saved = Value::Null;
    for _ in 0..50 {
        saved = api_in_page(b, "/preferences").await;
        if saved["preferences"]["summarize"] == "chosen" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(saved["preferences"]["summarize"], "chosen", "{saved}");
    // The feed's mark in its settings.
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    b.wait_for(
        "the feed settings",
        "document.querySelector('#feed-summarize')?.checked === false",
    )
    .await;
    b.click("#feed-summarize").await;
    b.click("form.form button[type=submit]").await;
    b.wait_for(
        "saved",
        "document.querySelector('.settings .success') !== null",
    )
    .await;
    let subscriptions = api_in_page(b, "/subscriptions").await;
    assert_eq!(subscriptions["subscriptions"][0]["summarize"], true);
}

/// The feed settings' "Pause fetching" switch pauses the user's subscription at once, and
/// the feed list shows it paused until it is switched back.
async fn phase_pause_switch(b: &Browser, base: &str, feed: i64) {
    b.goto(&format!("{base}/feeds/{feed}/settings")).await;
    b.wait_for(
        "the pause switch, off",
        "document.querySelector('#feed-paused')?.checked === false",
    )
    .await;
    b.click("#feed-paused").await;
    b.wait_for(
        "the feed shown paused in the list",
        &format!(
            "document.querySelector(\"li.feed-paused a[href='/feeds/{feed}']\") !== null \
             && document.querySelector('li.feed-paused .status-paused') !== null"
        ),
    )
    .await;
    let subscriptions = api_in_page(b, "/subscriptions").await;
    assert_eq!(subscriptions["subscriptions"][0]["suspended"], true);
    b.click("#feed-paused").await;
    b.wait_for(
        "the feed no longer paused",
        "document.querySelector('li.feed-paused') === null",
    )
    .await;
    let subscriptions = api_in_page(b, "/subscriptions").await;
    assert_eq!(subscriptions["subscriptions"][0]["suspended"], false);
}

/// A notification channel's row on the Notifications page.
fn channel_row(id: i64) -> String {
    format!("#channels li.channel[data-id='{id}']")
}

/// The text of the element matching `css`, once there is one with some.
async fn text_of(b: &Browser, css: &str) -> String {
    let selector = serde_json::to_string(css).unwrap();
    let text = b
        .wait_for(
            css,
            &format!("document.querySelector({selector})?.innerText"),
        )
        .await;
    text.as_str().unwrap().to_string()
}

/// Brings `css` to the middle of the screen, as a person scrolls to it, then clicks it:
/// WebDriver scrolls only until it is inside the window, where the sticky header may cover it.
async fn click_centered(b: &Browser, css: &str) {
    let selector = serde_json::to_string(css).unwrap();
    b.wait_for(
        css,
        &format!(
            "(() => {{ const e = document.querySelector({selector}); \
             e?.scrollIntoView({{block: 'center'}}); return e !== null; }})()"
        ),
    )
    .await;
    b.click(css).await;
}

// The Notifications page (F43) against a Discord stand-in on 127.0.0.1: a Discord URL of the
// wrong form is refused with the form it should have; the right one lists the channel with
// its token hidden; Send test reaches the stand-in and says so, and a refusal shows its
// status and message; the delivery log lists both tests; editing the rules (a feed ticked,
// words typed) reaches the API and keeps the URL; deleting empties the list. On a phone the
// page fits the screen.
on_both_engines!(notifications_in_chromium, |db| {
    if skip_without_browser("ui_browser::notifications_in_chromium") {
        return;
    }
    let discord = DiscordStandIn::default();
    let discord_base = discord.start().await;
    let store = db.migrated().await;
    let base = start_server_configured(
        store.clone(),
        RateLimits {
            per_user: RateLimiter::new(100_000, Duration::from_secs(60)),
            ..RateLimits::standard()
        },
        |_, worker| worker.notifications.endpoints.discord = discord_base.parse().unwrap(),
    )
    .await;
    let site = feed_site().await;
    let b = Browser::start(1280, 860).await;
    let (_, feeds) = reader_with_feeds(&store, &b, &base, &[site.url("/news.xml")]).await;
    let feed = feeds[0];

    phase_a_wrong_address_is_refused_saying_what_to_do(&b, &base).await;
    let id = phase_a_discord_channel_added_and_listed_without_its_token(&b).await;
    let row = &channel_row(id);
    phase_send_test_delivers_and_shows_a_refusal(&b, &discord, row).await;
    phase_the_delivery_log_newest_first(&b, row).await;
    phase_edit_ticks_a_feed_and_words_and_keeps_the_address(&b, id, feed).await;
    phase_on_a_phone_the_page_fits(&b, &base, row).await;
    phase_delete_after_a_confirmation(&b, &discord, row).await;
    phase_a_generic_channels_secret_is_shown_once(&b, &base).await;
    b.quit().await;
});

/// The notifications page opens with no channels and the form; an address that is not
/// Discord's is refused saying what to do, and nothing is saved.
async fn phase_a_wrong_address_is_refused_saying_what_to_do(b: &Browser, base: &str) {
    b.goto(&format!("{base}/notifications")).await;
    b.wait_for(
        "the empty list and the form",
        "document.querySelector('#channels')?.innerText.includes('No channels yet') \
         && document.querySelector('#new-channel-url') !== null",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('.tab[aria-current=page]').textContent")
            .await,
        "Notifications"
    );
    let add = "form.channel-form button[type=submit]";
    b.type_into("#new-channel-name", "News").await;
    b.type_into(
        "#new-channel-url",
        "https://example.com/api/webhooks/42/secret-token",
    )
    .await;
    b.click(add).await;
    let error = text_of(b, "form.channel-form .inline-error").await;
    assert!(error.contains("Check your input"), "{error}");
    assert!(
        error.contains("https://discord.com/api/webhooks/{id}/{token}"),
        "{error}"
    );
    assert!(error.contains("Copy the webhook URL again"), "{error}");
    review(b, "notifications-refused").await;
    assert_eq!(api_in_page(b, "/webhooks").await["webhooks"], json!([]));
}

/// A Discord channel is added and listed with its name, kind and rules, never its token; the
/// form is fresh for the next. Returns its id.
async fn phase_a_discord_channel_added_and_listed_without_its_token(b: &Browser) -> i64 {
    let add = "form.channel-form button[type=submit]";
    b.type_into(
        "#new-channel-url",
        "https://discord.com/api/webhooks/42/secret-token",
    )
    .await;
    b.click(add).await;
    b.wait_for(
        "the channel listed",
        "document.querySelectorAll('#channels li.channel').length === 1",
    )
    .await;
    let listed = api_in_page(b, "/webhooks").await;
    let id = listed["webhooks"][0]["id"].as_i64().unwrap();
    assert_eq!(listed["webhooks"][0]["name"], "News");
    let row = &channel_row(id);
    let text = b
        .eval(&format!("document.querySelector(\"{row}\").innerText"))
        .await;
    let text = text.as_str().unwrap();
    assert!(text.contains("News") && text.contains("Discord"), "{text}");
    assert!(text.contains("discord.com/api/…"), "{text}");
    assert!(text.contains("every new item"), "{text}");
    assert!(!text.contains("secret-token"), "the token shows: {text}");
    // The form is fresh for the next channel.
    assert_eq!(
        b.eval("document.querySelector('#new-channel-url').value")
            .await,
        ""
    );
    review(b, "notifications").await;

    id
}

/// Send test: the stand-in gets Discord's message and the page says it went; a webhook deleted
/// at Discord's end shows the refusal's status and message.
async fn phase_send_test_delivers_and_shows_a_refusal(
    b: &Browser,
    discord: &DiscordStandIn,
    row: &str,
) {
    // Send test: the stand-in gets Discord's message, the page says it went.
    click_centered(b, &format!("{row} [data-action=test]")).await;
    let sent = text_of(b, &format!("{row} .channel-more .success")).await;
    assert!(sent.starts_with("Test sent (HTTP 204)"), "{sent}");
    assert_eq!(*discord.webhooks.lock().unwrap(), ["42/secret-token"]);
    assert_eq!(
        discord.received.lock().unwrap()[0]["content"],
        "Test message from tidings: this channel works."
    );
    // A webhook deleted at Discord's end: the refusal's status and message.
    *discord.gone.lock().unwrap() = true;
    click_centered(b, &format!("{row} [data-action=test]")).await;
    let refused = text_of(b, &format!("{row} .channel-more .inline-error")).await;
    assert!(refused.contains("Not delivered"), "{refused}");
    assert!(
        refused.contains("The webhook answered HTTP 404"),
        "{refused}"
    );
    assert!(refused.contains("Unknown Webhook"), "{refused}");
    assert_eq!(discord.received.lock().unwrap().len(), 2);
}

/// The delivery log of the channel's row, newest first.
async fn phase_the_delivery_log_newest_first(b: &Browser, row: &str) {
    // The delivery log, newest first.
    click_centered(b, &format!("{row} [data-action=log]")).await;
    let rows = b
        .wait_for(
            "the delivery log",
            &format!(
                "(() => {{ const rows = [...document.querySelectorAll(\"{row} table tbody tr\")]; \
                 return rows.length === 2 && rows.map((r) => [...r.cells].slice(1, 4).map((c) => c.textContent)); }})()"
            ),
        )
        .await;
    assert_eq!(
        rows,
        json!([["failed (test)", "404", "0"], ["sent (test)", "204", "0"]])
    );
    review(b, "notifications-log").await;
}

/// Edit: a feed ticked and words typed are saved as the rules; the address is kept.
async fn phase_edit_ticks_a_feed_and_words_and_keeps_the_address(b: &Browser, id: i64, feed: i64) {
    let row = &channel_row(id);
    // Edit: a feed ticked and words typed; the address is kept.
    click_centered(b, &format!("{row} [data-action=edit]")).await;
    click_centered(b, &format!("{row} input[name=feed][value='{feed}']")).await;
    b.type_into(&format!("#channel-{id}-words"), "outage, 東京都")
        .await;
    review(b, "notifications-edit").await;
    click_centered(b, &format!("{row} button[type=submit]")).await;
    b.wait_for(
        "the new rules on the row",
        &format!("document.querySelector(\"{row} .channel-facts\")?.innerText.includes('words: outage, 東京都')"),
    )
    .await;
    let saved = api_in_page(b, &format!("/webhooks/{id}")).await;
    assert_eq!(
        saved["webhook"]["rules"]["feed_ids"],
        json!([feed]),
        "{saved}"
    );
    assert_eq!(saved["webhook"]["rules"]["group_ids"], json!([]), "{saved}");
    assert_eq!(
        saved["webhook"]["rules"]["keywords"],
        json!(["outage", "東京都"]),
        "{saved}"
    );
    assert_eq!(
        saved["webhook"]["url"],
        "https://discord.com/api/webhooks/42/secret-token"
    );
    assert_eq!(saved["webhook"]["enabled"], true);
}

/// On a phone the page fits: nothing wider than the screen, the log open.
async fn phase_on_a_phone_the_page_fits(b: &Browser, base: &str, row: &str) {
    // On a phone the page fits: nothing wider than the screen.
    b.resize(360, 740).await;
    b.goto(&format!("{base}/notifications")).await;
    b.wait_for(
        "the channel on a phone",
        &format!("document.querySelector(\"{row}\") !== null"),
    )
    .await;
    click_centered(b, &format!("{row} [data-action=log]")).await;
    b.wait_for(
        "the log on a phone",
        &format!("document.querySelector(\"{row} table\") !== null"),
    )
    .await;
    assert_eq!(
        b.eval(
            "document.documentElement.scrollWidth <= window.innerWidth \
             && [...document.querySelectorAll('.tabs')].every((t) => t.scrollWidth <= t.clientWidth)"
        )
        .await,
        true
    );
    review(b, "notifications-phone").await;
    b.resize(1280, 860).await;
}

/// Delete, after a confirmation: the list is empty and nothing more was sent.
async fn phase_delete_after_a_confirmation(b: &Browser, discord: &DiscordStandIn, row: &str) {
    // Delete, after a confirmation.
    click_centered(b, &format!("{row} [data-action=delete]")).await;
    b.click("dialog .button.danger").await;
    b.wait_for(
        "the empty list",
        "document.querySelector('#channels')?.innerText.includes('No channels yet')",
    )
    .await;
    assert_eq!(api_in_page(b, "/webhooks").await["webhooks"], json!([]));
    assert_eq!(discord.received.lock().unwrap().len(), 2);
}

/// A generic channel's signing secret shows in its row once, right after it is added, saying
/// it is not shown again; the API never lists it; "New secret", after a confirmation, shows a
/// new one; the page opened again shows none.
async fn phase_a_generic_channels_secret_is_shown_once(b: &Browser, base: &str) {
    b.eval(
        "(() => { const kind = document.querySelector('#new-channel-kind'); \
         kind.value = 'generic'; kind.dispatchEvent(new Event('change')); return true; })()",
    )
    .await;
    b.type_into("#new-channel-name", "Receiver").await;
    b.type_into("#new-channel-url", "https://hooks.example.com/tidings")
        .await;
    b.click("form.channel-form button[type=submit]").await;
    let shown = "document.querySelector('#channels .channel-secret code')?.textContent";
    b.wait_for(
        "the new channel's secret",
        &format!("({shown} || '').startsWith('whsec_')"),
    )
    .await;
    let first = b.eval(shown).await;
    let notice = text_of(b, "#channels .channel-secret").await;
    assert!(notice.contains("not shown again"), "{notice}");
    let listed = api_in_page(b, "/webhooks").await;
    let channel = &listed["webhooks"][0];
    assert_eq!(channel["signed"], true, "{listed}");
    assert!(channel.get("signing_secret").is_none(), "{listed}");
    let row = channel_row(channel["id"].as_i64().unwrap());

    click_centered(b, &format!("{row} [data-action=secret]")).await;
    b.click("dialog .button.danger").await;
    b.wait_for(
        "a new secret",
        &format!(
            "({shown} || '').startsWith('whsec_') && {shown} !== {}",
            serde_json::to_string(&first).unwrap()
        ),
    )
    .await;

    b.goto(&format!("{base}/notifications")).await;
    b.wait_for(
        "the channel listed again",
        &format!("document.querySelector(\"{row}\") !== null"),
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#channels .channel-secret') === null")
            .await,
        json!(true),
        "the secret is shown once"
    );
}

/// The UI files the page has fetched so far, by name (`settings.js`), from the Performance API.
async fn loaded_ui_files(b: &Browser) -> Vec<String> {
    let names = b
        .eval(
            "performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)\
             .filter(p => p.startsWith('/ui/')).map(p => p.split('/').pop())",
        )
        .await;
    serde_json::from_value(names).expect("a list of names")
}

/// Makes every request whose URL contains one of `parts` fail in the browser, as a lost
/// connection would; an empty list lets everything through again.
async fn block_urls(b: &Browser, parts: &[&str]) {
    b.cdp("Network.enable", json!({}))
        .await
        .expect("Network.enable");
    let urls: Vec<String> = parts.iter().map(|p| format!("*{p}*")).collect();
    b.cdp("Network.setBlockedURLs", json!({ "urls": urls }))
        .await
        .expect("Network.setBlockedURLs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_load_on_demand_in_chromium() {
    if skip_without_browser("ui_browser::views_load_on_demand_in_chromium") {
        return;
    }
    let db = TestDb::sqlite();
    let (base, store) = start_server(&db).await;
    let site = feed_site().await;
    let b = Browser::start(1280, 860).await;
    let (_, feeds) = reader_with_feeds(&store, &b, &base, &[site.url("/news.xml")]).await;

    // A fresh load of the reader fetches the first screen only, and its keys work.
    b.goto(&format!("{base}/feeds/{}?filter=all", feeds[0]))
        .await;
    b.wait_for(
        "the feed's items",
        "document.querySelectorAll('#main li.item').length === 5",
    )
    .await;
    b.press(&["j", "j"]).await;
    b.wait_for(
        "the second item selected by j j",
        "document.querySelectorAll('#main li.item')[1].classList.contains('selected')",
    )
    .await;
    let loaded = loaded_ui_files(&b).await;
    for name in ["app.js", "item-list.js", "keys.js", "app.css"] {
        assert!(loaded.iter().any(|f| f == name), "{name}: {loaded:?}");
    }
    for name in [
        "settings.js",
        "auth.js",
        "bookmarks.js",
        "subscribe.js",
        "shortcuts.js",
        "summary.js",
    ] {
        assert!(!loaded.iter().any(|f| f == name), "{name}: {loaded:?}");
    }

    // Settings: its module loads when the page is first opened.
    b.click("header a[href='/settings']").await;
    b.wait_for(
        "the settings page",
        "document.querySelector('#page-title')?.textContent === 'Settings'",
    )
    .await;
    assert!(loaded_ui_files(&b).await.iter().any(|f| f == "settings.js"));

    // A view whose module fails to load says so, with what to do and a way to try again.
    block_urls(&b, &["bookmarks.js"]).await;
    b.click("nav#feeds a[href='/bookmarks']").await;
    let error = b
        .wait_for(
            "the error of a view that did not load",
            "document.querySelector('#main .part-error')?.innerText",
        )
        .await;
    review(&b, "part-not-loaded").await;
    let error = error.as_str().unwrap();
    assert!(error.contains("could not be loaded"), "{error}");
    assert!(error.contains("Try again"), "{error}");
    block_urls(&b, &[]).await;
    b.click("#main .part-error button").await;
    b.wait_for(
        "the bookmarks after trying again",
        "document.querySelector('#list-title')?.textContent === 'Bookmarks'",
    )
    .await;

    // A button whose dialog fails to load is not dead: it explains, and works next time.
    block_urls(&b, &["subscribe.js"]).await;
    b.click("#subscribe-button").await;
    let toast = b
        .wait_for(
            "the error toast of a dialog that did not load",
            "document.querySelector('.toast-error')?.innerText",
        )
        .await;
    assert!(
        toast
            .as_str()
            .unwrap()
            .contains("subscribe dialog could not be opened"),
        "{toast}"
    );
    block_urls(&b, &[]).await;
    b.click("#subscribe-button").await;
    b.wait_for(
        "the subscribe dialog after trying again",
        "document.querySelector('dialog #subscribe-url') !== null",
    )
    .await;
    b.press(&["\u{E00C}"]).await;

    // Offline, a part already loaded still opens, and so does one not loaded yet: the
    // service worker keeps every file of this build (a part that cannot be loaded at all
    // explains itself, as the blocked one above did).
    b.wait_for(
        "the service worker controls the page",
        "navigator.serviceWorker.controller !== null",
    )
    .await;
    set_offline(&b, true).await;
    b.press(&["?"]).await;
    b.wait_for(
        "the shortcuts offline, never loaded before",
        "document.querySelector('dialog.shortcuts[open]') !== null",
    )
    .await;
    b.press(&["\u{E00C}"]).await;
    b.click("#subscribe-button").await;
    b.wait_for(
        "the subscribe dialog offline",
        "document.querySelector('dialog[open] #subscribe-url') !== null",
    )
    .await;
    b.press(&["\u{E00C}"]).await;
    set_offline(&b, false).await;
    b.press(&["?"]).await;
    b.wait_for(
        "the shortcuts back online",
        "document.querySelector('dialog.shortcuts[open]') !== null",
    )
    .await;
    b.quit().await;
}

/// Takes the browser off the network (as a lost connection would, `navigator.onLine` too)
/// or back on, and waits until the page sees it.
async fn set_offline(b: &Browser, offline: bool) {
    b.cdp(
        "Network.emulateNetworkConditions",
        json!({
            "offline": offline,
            "latency": 0,
            "downloadThroughput": -1,
            "uploadThroughput": -1,
        }),
    )
    .await
    .expect("Network.emulateNetworkConditions");
    b.wait_for(
        "the page to see the connection change",
        &format!("navigator.onLine === {}", !offline),
    )
    .await;
}

#[tokio::test]
async fn modules_loaded_on_demand_are_cached_and_under_the_policy() {
    let db = TestDb::sqlite();
    let (base, _store) = start_server(&db).await;
    let version = tidings_server::ui::asset_version();
    let http = reqwest::Client::new();
    // The address of a first try and of a try again after a failed load (lazy.js).
    for path in ["settings.js", "settings.js?retry=1", "bookmarks.js"] {
        let response = http
            .get(format!("{base}/ui/{version}/{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        assert_eq!(
            header("cache-control"),
            "public, max-age=31536000, immutable",
            "{path}"
        );
        assert!(
            header("content-type").starts_with("text/javascript"),
            "{path}"
        );
        assert_eq!(
            header("content-security-policy"),
            tidings_server::middleware::CONTENT_SECURITY_POLICY,
            "{path}"
        );
    }
}

/// An OPML import in the browser (issue 32): the page shows the import's progress while the
/// feeds are held back by their server, then the per-URL report once they answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opml_import_shows_progress_then_the_report() {
    if skip_without_browser("ui_browser::opml_import_shows_progress_then_the_report") {
        return;
    }
    // Feeds that answer only once the test adds permits to the gate.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = Arc::clone(&gate);
    let router = axum::Router::new().route(
        "/held/{name}",
        axum::routing::get(
            move |axum::extract::Path(name): axum::extract::Path<String>| {
                let held = Arc::clone(&held);
                async move {
                    if let Ok(permit) = held.acquire().await {
                        permit.forget();
                    }
                    (
                        [("content-type", "application/rss+xml")],
                        rss("http://127.0.0.1", &name, 2),
                    )
                }
            },
        ),
    );
    let site = TestServer::start(router).await;
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    reader_with_feeds(&store, &b, &base, &[]).await;
    let opml = tempfile::NamedTempFile::with_suffix(".opml").unwrap();
    let outlines: String = (0..3)
        .map(|n| {
            format!(
                "<outline text=\"held {n}\" xmlUrl=\"{}\"/>",
                site.url(&format!("/held/{n}"))
            )
        })
        .collect();
    std::fs::write(
        opml.path(),
        format!(
            "<?xml version=\"1.0\"?><opml version=\"2.0\"><body>{outlines}\
             <outline text=\"bad\" xmlUrl=\"ftp://example.com/feed\"/></body></opml>"
        ),
    )
    .unwrap();
    b.goto(&format!("{base}/settings")).await;
    b.type_into("#opml-file", &opml.path().display().to_string())
        .await;
    b.click("#opml-file + button[type=submit]").await;
    let shown = b
        .wait_for(
            "the progress while the feeds are held",
            "document.querySelector('progress.import-progress') && \
             document.querySelector('.opml-report')?.innerText.includes('checked 1 of 4')",
        )
        .await;
    assert_eq!(shown, true);
    review(&b, "opml-import-progress").await;
    gate.add_permits(1);
    b.wait_for(
        "the progress moving",
        "document.querySelector('.opml-report')?.innerText.includes('checked 2 of 4')",
    )
    .await;
    gate.add_permits(2);
    let report = b
        .wait_for(
            "the report",
            "document.querySelector('table.report')?.innerText",
        )
        .await;
    let report = report.as_str().unwrap();
    assert!(
        report.contains("held 0") && report.contains("added") && report.contains("refused"),
        "{report}"
    );
    let summary = b
        .eval("document.querySelector('.opml-report p')?.innerText")
        .await;
    assert!(
        summary
            .as_str()
            .is_some_and(|s| s.contains("3 added") && s.contains("of 4 feeds")),
        "{summary}"
    );
    assert_eq!(
        b.eval("document.querySelector('progress.import-progress')")
            .await,
        Value::Null,
        "the progress gives way to the report"
    );
    // The new feeds are in the sidebar.
    b.wait_for(
        "the imported feeds listed",
        "document.querySelectorAll('nav#feeds a.feed-link[data-key^=\"/feeds/\"]').length === 3",
    )
    .await;
    review(&b, "opml-import-report").await;
    b.quit().await;
}

/// A Miniflux stand-in for the import form: its feed list (alpha of `feeds`, in "News")
/// answers only once the test adds a permit to the gate; no entries.
async fn held_miniflux(feeds: &TestServer) -> (TestServer, Arc<tokio::sync::Semaphore>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = Arc::clone(&gate);
    let list = json!([{"id": 1, "feed_url": feeds.url("/alpha"), "site_url": "",
                       "title": "Alpha", "category": {"id": 2, "title": "News"}}])
    .to_string();
    let json_answer = |body: String| ([("content-type", "application/json")], body);
    let router = axum::Router::new()
        .route(
            "/v1/me",
            axum::routing::get(move || async move { json_answer("{}".into()) }),
        )
        .route(
            "/v1/feeds",
            axum::routing::get(move || {
                let (held, list) = (Arc::clone(&held), list.clone());
                async move {
                    if let Ok(permit) = held.acquire().await {
                        permit.forget();
                    }
                    json_answer(list)
                }
            }),
        )
        .route(
            "/v1/entries",
            axum::routing::get(move || async move {
                json_answer(r#"{"total": 0, "entries": []}"#.into())
            }),
        );
    (TestServer::start(router).await, gate)
}

/// The import from another reader in the browser (issue 32): the Settings form, labelled and
/// reachable, takes a Miniflux address and key, clears the key, shows that it is reading the
/// other reader while its server holds the answer, then the report per kind, and the new feed
/// is in the sidebar; the form fits a phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_import_shows_progress_then_the_report() {
    if skip_without_browser("ui_browser::reader_import_shows_progress_then_the_report") {
        return;
    }
    let feeds = TestServer::start(axum::Router::new().route(
        "/{name}",
        axum::routing::get(
            |axum::extract::Path(name): axum::extract::Path<String>| async move {
                (
                    [("content-type", "application/rss+xml")],
                    rss("http://127.0.0.1", &name, 2),
                )
            },
        ),
    ))
    .await;
    let (miniflux, gate) = held_miniflux(&feeds).await;
    let db = TestDb::sqlite();
    let store = db.migrated().await;
    let base = start_server_on(store.clone()).await;
    let b = Browser::start(1280, 860).await;
    reader_with_feeds(&store, &b, &base, &[]).await;
    b.goto(&format!("{base}/settings")).await;
    b.wait_for(
        "the import form",
        "!!document.querySelector('#reader-import-form')",
    )
    .await;
    b.eval(
        "(() => { const s = document.querySelector('#import-source'); s.value = 'miniflux'; \
         s.dispatchEvent(new Event('change')); })()",
    )
    .await;
    // Every control shown has a label and is reached with Tab.
    let unlabelled = b
        .eval(
            "[...document.querySelectorAll('#reader-import-form input, #reader-import-form select')]\
             .filter(e => !e.closest('[hidden]') && (e.labels.length === 0 || e.tabIndex < 0))\
             .map(e => e.id)",
        )
        .await;
    assert_eq!(unlabelled, json!([]));
    assert_eq!(
        b.eval("document.querySelector('#import-login').closest('[hidden]') !== null")
            .await,
        true,
        "a Miniflux import asks for no password"
    );
    b.type_into("#import-url", &miniflux.base).await;
    b.type_into("#import-key", "the-miniflux-key").await;
    b.click("#reader-import-form button[type=submit]").await;
    b.wait_for(
        "the reading phase while Miniflux holds its answer",
        "document.querySelector('#reader-import-status')?.innerText.includes('Reading your history')",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelector('#import-key').value").await,
        "",
        "the key is not kept in the page"
    );
    review(&b, "reader-import-progress").await;
    gate.add_permits(1);
    let report = b
        .wait_for(
            "the report",
            "document.querySelector('#reader-import-report')?.innerText",
        )
        .await;
    let rows = b
        .eval(
            "[...document.querySelectorAll('#reader-import-report tbody tr')]\
             .map(r => [r.dataset.kind, ...[...r.cells].slice(1).map(c => c.innerText)])",
        )
        .await;
    assert_eq!(
        rows[0],
        json!(["subscriptions", "1", "0", "0", "0"]),
        "{report}"
    );
    assert_eq!(rows[1], json!(["folders", "1", "0", "0", "0"]), "{report}");
    b.wait_for(
        "the imported feed listed",
        "document.querySelectorAll('nav#feeds a.feed-link[data-key^=\"/feeds/\"]').length === 1",
    )
    .await;
    review(&b, "reader-import-report").await;
    // On a phone the form and its report fit the screen's width.
    b.resize(390, 844).await;
    let overflow = b
        .eval(
            "[...document.querySelectorAll('#reader-import-form, #reader-import-status')]\
             .some(e => e.getBoundingClientRect().right > window.innerWidth + 1)",
        )
        .await;
    assert_eq!(overflow, false);
    b.quit().await;
}
