//! Another reader's filters imported as rules (issue 33), on both engines: Miniflux's block
//! and keep rules from recorded API answers (`testdata/miniflux/*-rules.json`), FreshRSS' read
//! filters from an OPML its own export wrote (`testdata/freshrss/filters.opml`). A dry run
//! names the rules it would add and writes nothing; the import makes them, runs them on the
//! new feeds' first items, reports what does not map, and a second run adds nothing; then
//! items that arrive are hidden, kept or marked read as the other reader did.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::get;
use tidings_store::{ItemFilter, Store};
use tidings_testkit::{listed_titles, on_both_engines};
use tidings_worker::{
    HistoryOptions, HistoryReport, MinifluxClient, apply_history, read_history_file,
};

use crate::support::{TestServer, fetcher, user};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");

/// One item of a test feed: title, link path, author, category.
type Entry = (&'static str, &'static str, &'static str, &'static str);

/// A feed's name and its items.
type Feed = (String, Vec<Entry>);

/// Feeds whose items the test changes: `/{name}.xml` serves the RSS of `feeds[name]`.
#[derive(Clone, Default)]
struct Feeds(Arc<Mutex<Vec<Feed>>>);

impl Feeds {
    fn set(&self, name: &str, entries: &[Entry]) {
        let mut feeds = self.0.lock().unwrap();
        feeds.retain(|(n, _)| n != name);
        feeds.push((name.to_owned(), entries.to_vec()));
    }

    fn rss(&self, name: &str) -> String {
        let feeds = self.0.lock().unwrap();
        let entries = feeds
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone());
        let now = chrono::Utc::now();
        let items: String = entries
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, (title, path, author, category))| {
                let date = (now - chrono::Duration::minutes(i as i64 + 1)).to_rfc2822();
                format!(
                    "<item><title>{title}</title><link>http://127.0.0.1/{path}</link>\
                     <guid>{path}</guid><pubDate>{date}</pubDate>\
                     <dc:creator>{author}</dc:creator><category>{category}</category>\
                     <description>About {title}</description></item>"
                )
            })
            .collect();
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\" \
             xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><channel><title>{name}</title>\
             <link>http://127.0.0.1/</link>{items}</channel></rss>"
        )
    }

    fn server(&self) -> Router {
        let feeds = self.clone();
        Router::new().route(
            "/{file}",
            get(move |Path(file): Path<String>| async move {
                let name = file.trim_end_matches(".xml");
                ([("content-type", "application/rss+xml")], feeds.rss(name))
            }),
        )
    }
}

/// A stand-in Miniflux answering the recorded answers with filters; no entries.
fn miniflux(feeds: &str) -> Router {
    let read = |name: &str, feeds: &str| {
        std::fs::read_to_string(format!("{FIXTURES}/miniflux/{name}"))
            .unwrap()
            .replace("{FEEDS}", feeds)
    };
    let (me, list) = (
        read("me-rules.json", feeds),
        read("feeds-rules.json", feeds),
    );
    let json = [("content-type", "application/json")];
    Router::new()
        .route("/v1/me", get(move |_: HeaderMap| async move { (json, me) }))
        .route(
            "/v1/feeds",
            get(move || async move { (json, list).into_response() }),
        )
        .route(
            "/v1/entries",
            get(move || async move { (json, r#"{"total": 0, "entries": []}"#) }),
        )
}

/// Fetches every feed the user follows.
async fn refresh_all(store: &Store, fetcher: &tidings_worker::Fetcher, user_id: i64) {
    for subscription in store.list_subscriptions(user_id).await.unwrap() {
        fetcher.refresh_feed(subscription.feed_id).await.unwrap();
    }
}

fn counts(report: &HistoryReport) -> (usize, usize, usize, usize) {
    let rules = &report.rules;
    (rules.added, rules.unchanged, rules.not_kept, rules.failed)
}

on_both_engines!(miniflux_block_and_keep_rules_are_imported_and_act, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let feeds = Feeds::default();
    feeds.set(
        "alpha",
        &[
            ("Sponsored: a deal", "a/1", "ann", "news"),
            ("Weekly Podcast", "a/2", "ann", "news"),
            ("News one", "a/3", "ann", "news"),
        ],
    );
    feeds.set(
        "beta",
        &[
            ("Rust news", "b/1", "ann", "lang"),
            ("Go news", "b/2", "ann", "lang"),
            ("Rust by a bot", "b/3", "bot", "lang"),
        ],
    );
    let feed_server = TestServer::start(feeds.server()).await;
    let stand_in = TestServer::start(miniflux(&feed_server.base)).await;
    let fetcher = fetcher(&store);
    let client = MinifluxClient::new(&stand_in.base, "key", None).unwrap();
    let history = client.history().await.unwrap();
    assert_eq!(history.rules.len(), 6, "{:?}", history.rules);

    let dry = HistoryOptions {
        dry_run: true,
        ..HistoryOptions::default()
    };
    let report = apply_history(&fetcher, ann, &history, &dry).await.unwrap();
    assert_eq!(counts(&report), (4, 0, 2, 0), "{report:?}");
    assert!(
        report
            .rules
            .names
            .contains(&"Miniflux, Beta: keep list (?i)rust".to_owned()),
        "{report:?}"
    );
    assert!(store.list_rules(ann).await.unwrap().is_empty());

    let report = apply_history(&fetcher, ann, &history, &HistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(counts(&report), (4, 0, 2, 0), "{report:?}");
    assert!(report.complete(), "{report:?}");
    let notes = report.rules.notes.join("\n");
    assert!(
        notes.contains("EntryURL=\\Q/ads/\\E: tidings cannot run it"),
        "{notes}"
    );
    assert!(
        notes.contains("EntryDate=future: tidings' rules know an age"),
        "{notes}"
    );
    // The first fetch's items were run through the new rules: Miniflux never showed these.
    assert_eq!(
        listed_titles(&store, ann, ItemFilter::All).await,
        ["News one", "Rust news"]
    );

    let again = apply_history(&fetcher, ann, &history, &HistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(counts(&again), (0, 4, 2, 0), "{again:?}");
    assert_eq!(store.list_rules(ann).await.unwrap().len(), 4);

    // New items: the block rules hide theirs (the user's on the title, the feed's list on
    // the category), the keep list hides what it does not catch.
    feeds.set(
        "alpha",
        &[
            ("Sponsored again", "a/4", "ann", "news"),
            ("A talk", "a/5", "ann", "Podcasts"),
            ("News two", "a/6", "ann", "news"),
        ],
    );
    feeds.set(
        "beta",
        &[
            ("Python news", "b/4", "ann", "lang"),
            ("More from the bot", "b/5", "bot", "rust"),
            ("Trust and safety", "b/6", "ann", "lang"),
        ],
    );
    refresh_all(&store, &fetcher, ann).await;
    assert_eq!(
        listed_titles(&store, ann, ItemFilter::All).await,
        ["News one", "News two", "Rust news", "Trust and safety"]
    );
});

on_both_engines!(freshrss_read_filters_are_imported_and_act, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let feeds = Feeds::default();
    feeds.set(
        "alpha",
        &[
            ("Sponsored post", "a/1", "ann", "news"),
            ("Plain news", "a/2", "ann", "news"),
        ],
    );
    feeds.set("beta", &[("Beta news", "b/1", "ann", "news")]);
    let feed_server = TestServer::start(feeds.server()).await;
    let opml = std::fs::read_to_string(format!("{FIXTURES}/freshrss/filters.opml"))
        .unwrap()
        .replace("{FEEDS}", &feed_server.base);
    let history = read_history_file(opml.as_bytes()).unwrap();
    assert_eq!(history.feeds.len(), 2);
    assert_eq!(history.rules.len(), 9, "{:?}", history.rules);
    let fetcher = fetcher(&store);

    let dry = HistoryOptions {
        dry_run: true,
        ..HistoryOptions::default()
    };
    let report = apply_history(&fetcher, ann, &history, &dry).await.unwrap();
    assert_eq!(counts(&report), (7, 0, 2, 0), "{report:?}");
    assert!(
        report
            .rules
            .names
            .contains(&"FreshRSS, alpha: read author:bot".to_owned()),
        "{report:?}"
    );
    assert!(store.list_rules(ann).await.unwrap().is_empty());

    let report = apply_history(&fetcher, ann, &history, &HistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(counts(&report), (7, 0, 2, 0), "{report:?}");
    let notes = report.rules.notes.join("\n");
    assert!(
        notes.contains("read date:P1W: `date:`: tidings' rules have no date ranges"),
        "{notes}"
    );
    assert!(
        notes.contains("cannot exclude by a regular expression"),
        "{notes}"
    );
    let rules = store.list_rules(ann).await.unwrap();
    let promo = rules
        .iter()
        .find_map(|rule| rule.spec.regex.as_ref().filter(|r| r.field == "url"))
        .unwrap();
    assert_eq!(promo.pattern, "promo");
    assert_eq!(
        listed_titles(&store, ann, ItemFilter::Unread).await,
        ["Beta news", "Plain news"]
    );

    let again = apply_history(&fetcher, ann, &history, &HistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(counts(&again), (0, 7, 2, 0), "{again:?}");

    feeds.set(
        "alpha",
        &[
            ("The daily digest", "a/3", "ann", "news"),
            ("The daily digest to keep", "keep/4", "ann", "news"),
            ("Deal of the day", "a/5", "ann", "news"),
            ("Posted by a bot", "a/6", "bot", "news"),
            ("Week in review", "a/7", "ann", "long read"),
            ("Tagged", "a/8", "ann", "ads"),
            ("Something else", "a/9", "ann", "news"),
        ],
    );
    feeds.set(
        "beta",
        &[
            ("A promotion", "promo/2", "ann", "news"),
            ("Beta later", "b/3", "ann", "news"),
        ],
    );
    refresh_all(&store, &fetcher, ann).await;
    assert_eq!(
        listed_titles(&store, ann, ItemFilter::Unread).await,
        [
            "Beta later",
            "Beta news",
            "Plain news",
            "Something else",
            "The daily digest to keep"
        ]
    );
});
