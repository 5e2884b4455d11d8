//! Raw feed bodies (F8) on SQLite and PostgreSQL against real HTTP servers on 127.0.0.1: what
//! a fetch keeps (validators, charset, the URL that answered; on 200, not on 304; parse
//! failures too), and `Fetcher::reparse_feed` re-deriving items from the kept body without a
//! request, decoding and resolving links exactly as the fetch did.

use tidings_testkit::on_both_engines;

use std::sync::{Arc, Mutex};

use crate::support::{TestServer, fetcher, follow, rss, user};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use tidings_store::Store;
use tidings_worker::{FetchResult, Fetcher, ReparseError, body};

async fn refresh(fetcher: &Fetcher, feed: i64) -> tidings_worker::FeedReport {
    fetcher.refresh_feed(feed).await.expect("refresh")
}

/// A reparse's (new, updated, unchanged) items.
fn counts(report: &tidings_worker::ReparseReport) -> (u64, u64, u64) {
    (
        report.items_inserted,
        report.items_updated,
        report.items_unchanged,
    )
}

/// The feed's items as `(identity, title, link, content)`, by identity.
async fn items(store: &Store, user: i64, feed: i64) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for id in store.feed_item_ids(feed).await.unwrap() {
        let item = store.item(user, id).await.unwrap();
        out.push((
            item.guid.unwrap_or_default(),
            item.title.unwrap_or_default(),
            item.url.unwrap_or_default(),
            item.content.or(item.summary).unwrap_or_default(),
        ));
    }
    out.sort();
    out
}

/// What an older parser would have stored: other titles and content hashes (the store
/// compares hashes to tell an update).
async fn age_items(store: &Store, feed: i64) {
    store
        .execute_raw(&format!(
            "UPDATE items SET title = 'as an old parser read it', content_hash = 'old'
             WHERE feed_id = {feed}"
        ))
        .await
        .unwrap();
}

on_both_engines!(
    the_body_is_kept_with_its_validators_on_200_and_not_on_304,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        // What the server answers: (etag, body); a matching If-None-Match gets a 304.
        let raw = rss("a", 3);
        let current: Arc<Mutex<(String, String)>> =
            Arc::new(Mutex::new(("\"v1\"".into(), raw.clone())));
        let served = Arc::clone(&current);
        let router = Router::new().route(
            "/feed",
            get(move |headers: HeaderMap| {
                let (etag, body) = served.lock().unwrap().clone();
                async move {
                    if headers
                        .get(header::IF_NONE_MATCH)
                        .and_then(|v| v.to_str().ok())
                        == Some(etag.as_str())
                    {
                        return StatusCode::NOT_MODIFIED.into_response();
                    }
                    (
                        [
                            (header::ETAG, etag.as_str()),
                            (header::LAST_MODIFIED, "Mon, 02 Jun 2025 10:00:00 GMT"),
                            (header::CONTENT_TYPE, "application/rss+xml; charset=utf-8"),
                        ],
                        body,
                    )
                        .into_response()
                }
            }),
        );
        let server = TestServer::start(router).await;
        let feed = follow(&store, alice, &server.url("/feed")).await;
        let fetcher = fetcher(&store);
        assert_eq!(refresh(&fetcher, feed).await.result, FetchResult::Parsed);
        let kept = store.feed_body(feed).await.unwrap().expect("kept on 200");
        assert_eq!(kept.etag.as_deref(), Some("\"v1\""));
        assert_eq!(
            kept.last_modified.as_deref(),
            Some("Mon, 02 Jun 2025 10:00:00 GMT")
        );
        assert_eq!(kept.content_type.as_deref(), Some("application/rss+xml"));
        assert_eq!(kept.charset.as_deref(), Some("utf-8"));
        assert_eq!(
            kept.source_url.as_deref(),
            Some(server.url("/feed").as_str())
        );
        assert_eq!(kept.parse_error, None);
        assert_eq!(kept.raw_size, Some(raw.len() as i64));
        assert_eq!(kept.compression, body::CODEC);
        assert!(kept.body.len() < raw.len());

        // A 304 writes nothing.
        store
            .execute_raw(&format!(
                "UPDATE feed_bodies SET fetched_at = 1 WHERE feed_id = {feed}"
            ))
            .await
            .unwrap();
        let report = refresh(&fetcher, feed).await;
        assert_eq!(report.result, FetchResult::NotModified, "{report}");
        assert_eq!(store.feed_body(feed).await.unwrap().unwrap().fetched_at, 1);

        // The same body under a new ETag: a 200 whose bytes are kept already; only the fetch
        // time and validators move.
        current.lock().unwrap().0 = "\"v2\"".into();
        let report = refresh(&fetcher, feed).await;
        assert_eq!(report.result, FetchResult::Unchanged, "{report}");
        let touched = store.feed_body(feed).await.unwrap().unwrap();
        assert!(touched.fetched_at > 1);
        assert_eq!(touched.etag.as_deref(), Some("\"v2\""));
        assert_eq!(touched.body, kept.body);

        // A body that does not parse replaces it (a parser fix may read it later), and its
        // identical copy is parsed again, failing again, rather than skipped as unchanged.
        *current.lock().unwrap() = ("\"v3\"".into(), "<html><body>gone</body></html>".into());
        let before = items(&store, alice, feed).await;
        for _ in 0..2 {
            // A new ETag each time, so that no 304 answers.
            let etag = format!("\"v3-{}\"", rand_suffix());
            current.lock().unwrap().0 = etag;
            let report = refresh(&fetcher, feed).await;
            assert_eq!(report.result, FetchResult::ParseFailed, "{report}");
            let kept = store.feed_body(feed).await.unwrap().unwrap();
            assert!(kept.parse_error.is_some(), "{kept:?}");
            assert_eq!(
                body::decompress(&kept.compression, &kept.body).unwrap(),
                b"<html><body>gone</body></html>"
            );
        }
        assert_eq!(
            store.feed_fetch_state(feed).await.unwrap().parse_failures,
            2
        );
        assert_eq!(items(&store, alice, feed).await, before);
        let report = fetcher.reparse_feed(feed).await.unwrap();
        assert!(!report.is_success());
        assert!(report.to_string().contains("does not parse"), "{report}");
    }
);

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

on_both_engines!(reparse_rederives_items_without_a_request, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new().route("/feed", get(|| async { rss("r", 4) }));
    let server = TestServer::start(router).await;
    let feed = follow(&store, alice, &server.url("/feed")).await;
    let fetcher = fetcher(&store);
    assert_eq!(refresh(&fetcher, feed).await.items_inserted, 4);
    let fetched = items(&store, alice, feed).await;
    let hits = server.total_hits();

    // Nothing changed: the same items, all unchanged.
    let report = fetcher.reparse_feed(feed).await.unwrap();
    assert_eq!(counts(&report), (0, 0, 4), "{report}");
    assert_eq!(items(&store, alice, feed).await, fetched);

    // Items stored by an older parser, and one it missed: updated and inserted again.
    age_items(&store, feed).await;
    let missed = store.feed_item_ids(feed).await.unwrap()[0];
    store
        .execute_raw(&format!("DELETE FROM items WHERE id = {missed}"))
        .await
        .unwrap();
    let report = fetcher.reparse_feed(feed).await.unwrap();
    assert_eq!(counts(&report), (1, 3, 0), "{report}");
    assert!(
        report.to_string().contains("reparsed, 1 new, 3 updated"),
        "{report}"
    );
    assert_eq!(items(&store, alice, feed).await, fetched);
    assert_eq!(server.total_hits(), hits, "reparsing fetched nothing");
    // The lease is given back: the worker can fetch the feed at once.
    assert_eq!(
        store.feed_fetch_state(feed).await.unwrap().lease_until,
        None
    );
});

on_both_engines!(reparse_decodes_and_resolves_links_as_the_fetch_did, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    // KOI8-R bytes whose XML declaration lies (ISO-8859-1): the HTTP charset wins, and
    // must still win when the kept body is read again. The feed answers through a
    // temporary redirect, and its links are relative to the URL that answered.
    let xml = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss version=\"2.0\"><channel>\
            <title>Лента</title><link>./</link>\
            <item><title>Привет мир</title><link>post.html</link><guid>k-1</guid>\
            <description>Текст</description></item></channel></rss>";
    let (koi8, _, _) = encoding_rs::KOI8_R.encode(xml);
    let koi8 = koi8.into_owned();
    let router = Router::new()
        .route(
            "/feed",
            get(|| async { Redirect::temporary("/deep/feed.xml") }),
        )
        .route(
            "/deep/feed.xml",
            get(move || {
                let koi8 = koi8.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/rss+xml; charset=KOI8-R")],
                        koi8,
                    )
                }
            }),
        );
    let server = TestServer::start(router).await;
    let feed = follow(&store, alice, &server.url("/feed")).await;
    let fetcher = fetcher(&store);
    assert_eq!(refresh(&fetcher, feed).await.items_inserted, 1);
    let fetched = items(&store, alice, feed).await;
    assert_eq!(fetched[0].1, "Привет мир");
    assert_eq!(fetched[0].2, server.url("/deep/post.html"));
    let kept = store.feed_body(feed).await.unwrap().unwrap();
    assert_eq!(kept.charset.as_deref(), Some("KOI8-R"));
    assert_eq!(
        kept.source_url.as_deref(),
        Some(server.url("/deep/feed.xml").as_str())
    );

    let report = fetcher.reparse_feed(feed).await.unwrap();
    assert_eq!(
        (report.items_updated, report.items_unchanged),
        (0, 1),
        "{report}"
    );
    assert_eq!(items(&store, alice, feed).await, fetched);
});

on_both_engines!(reparse_errors_say_what_to_do, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new().route("/feed", get(|| async { rss("e", 1) }));
    let server = TestServer::start(router).await;
    let feed = follow(&store, alice, &server.url("/feed")).await;
    let fetcher = fetcher(&store);

    let error = fetcher.reparse_feed(feed).await.unwrap_err();
    assert!(
        matches!(error, ReparseError::NoBody(id) if id == feed),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains(&format!("tidings refresh --feed {feed}")),
        "{error}"
    );
    assert!(matches!(
        fetcher.reparse_feed(feed + 1000).await,
        Err(ReparseError::NotFound(_))
    ));
    assert_eq!(
        store.feed_fetch_state(feed).await.unwrap().lease_until,
        None
    );

    refresh(&fetcher, feed).await;
    // A worker holds the feed: not reparsed under it.
    let now = chrono::Utc::now().timestamp();
    assert!(
        store
            .claim_feed(feed, "another-worker", now, 300)
            .await
            .unwrap()
            .is_some()
    );
    let error = fetcher.reparse_feed(feed).await.unwrap_err();
    assert!(matches!(error, ReparseError::Busy(_)), "{error}");
    assert!(error.to_string().contains("again in a moment"), "{error}");
    store
        .release_feeds("another-worker", &[feed])
        .await
        .unwrap();

    // A damaged row is an error naming the way out, not a panic.
    let garbage = match store.engine() {
        tidings_store::Engine::Sqlite => "X'0011223344'",
        tidings_store::Engine::Postgres => "'\\x0011223344'::bytea",
    };
    store
        .execute_raw(&format!(
            "UPDATE feed_bodies SET body = {garbage} WHERE feed_id = {feed}"
        ))
        .await
        .unwrap();
    let error = fetcher.reparse_feed(feed).await.unwrap_err();
    assert!(matches!(error, ReparseError::Body { .. }), "{error}");
    assert!(
        error.to_string().contains("fetches and keeps a fresh one"),
        "{error}"
    );
});

on_both_engines!(reparse_all_walks_every_feed_with_a_body, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new().route(
        "/feed/{tag}",
        get(|axum::extract::Path(tag): axum::extract::Path<String>| async move { rss(&tag, 2) }),
    );
    let server = TestServer::start(router).await;
    let fetcher = fetcher(&store);
    let mut feeds = Vec::new();
    for n in 0..6 {
        let feed = follow(&store, alice, &server.url(&format!("/feed/f{n}"))).await;
        if n < 5 {
            refresh(&fetcher, feed).await;
        }
        feeds.push(feed);
    }
    for &feed in &feeds[..2] {
        age_items(&store, feed).await;
    }
    let mut seen = Vec::new();
    let tried = fetcher
        .reparse_all(|id, result| seen.push((id, result.expect("reparsed"))))
        .await
        .unwrap();
    assert_eq!(tried, 5);
    seen.sort_by_key(|(id, _)| *id);
    let ids: Vec<i64> = seen.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        feeds[..5].to_vec(),
        "the feed without a body is not tried"
    );
    let updated: Vec<u64> = seen.iter().map(|(_, r)| r.items_updated).collect();
    assert_eq!(updated, vec![2, 2, 0, 0, 0]);
    let totals = store.feed_body_totals().await.unwrap();
    assert_eq!((totals.feeds, totals.bodies), (6, 5));
    assert!(totals.compressed_bytes < totals.raw_bytes);
});
