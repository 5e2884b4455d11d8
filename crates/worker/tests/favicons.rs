//! Favicons cost no request in a feed's first fetch: they are looked up in the background once
//! per site, counted by a real server on 127.0.0.1, on SQLite and PostgreSQL.

use tidings_testkit::on_both_engines;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::support::{TestServer, fetcher_with, follow, local_client, user};
use axum::Router;
use axum::extract::Path;
use axum::http::header;
use axum::routing::get;
use tidings_worker::{
    FetchResult, Fetcher, SubscribeRequest, Subscribed, subscribe_with_discovery,
};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\nrest-of-image";

/// A site whose feeds link to its home page, which links its icon.
async fn site() -> TestServer {
    let base: Arc<OnceLock<String>> = Arc::default();
    let base_in_feed = Arc::clone(&base);
    let router = Router::new()
        .route(
            "/feed/{n}",
            get(move |Path(n): Path<usize>| {
                let base = base_in_feed.get().cloned().unwrap_or_default();
                async move {
                    format!(
                        "<rss version=\"2.0\"><channel><title>Feed {n}</title>\
                         <link>{base}/</link><item><guid>{n}-1</guid><title>x</title></item>\
                         </channel></rss>"
                    )
                }
            }),
        )
        .route(
            "/",
            get(|| async {
                // Slow enough that another process asking meanwhile finds the site claimed.
                tokio::time::sleep(Duration::from_millis(300)).await;
                "<html><head><link rel=\"icon\" href=\"/icon.png\"></head></html>"
            }),
        )
        .route(
            "/icon.png",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG) }),
        );
    let server = TestServer::start(router).await;
    base.set(server.url("")).unwrap();
    server
}

on_both_engines!(feeds_of_one_site_share_one_favicon_lookup, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let server = site().await;
    let mut feeds = Vec::new();
    for n in 0..10 {
        feeds.push(follow(&store, alice, &server.url(&format!("/feed/{n}"))).await);
    }
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
        config.favicons = true;
    });
    fetcher
        .refresh_feeds(feeds.clone(), |_, report| {
            assert_eq!(report.unwrap().result, FetchResult::Parsed);
        })
        .await;
    fetcher.wait_for_favicons().await;
    // One request per feed, and one lookup for the whole site (page and icon), not two
    // extra requests per feed.
    for n in 0..10 {
        assert_eq!(server.hits(&format!("/feed/{n}")), 1);
    }
    assert_eq!(server.hits("/"), 1);
    assert_eq!(server.hits("/icon.png"), 1);
    assert_eq!(server.total_hits(), 12);
    for feed in &feeds {
        let favicon = store.favicon(*feed).await.unwrap().expect("stored");
        assert_eq!(favicon.data.as_deref(), Some(PNG), "feed {feed}");
        assert_eq!(favicon.source_url, Some(server.url("/icon.png")));
    }
    assert_eq!(fetcher.metrics().snapshot().favicons_found, 1);

    // A new subscription on the same site a moment later reuses the lookup: one request.
    let later = follow(&store, alice, &server.url("/feed/10")).await;
    let report = fetcher.refresh_feed(later).await.unwrap();
    assert_eq!(report.result, FetchResult::Parsed);
    fetcher.wait_for_favicons().await;
    assert_eq!(server.total_hits(), 13);
    let favicon = store.favicon(later).await.unwrap().expect("stored");
    assert_eq!(favicon.data.as_deref(), Some(PNG));

    // Fresh favicons are not looked for again on the next fetch.
    fetcher.refresh_feed(feeds[0]).await.unwrap();
    fetcher.wait_for_favicons().await;
    assert_eq!(server.total_hits(), 14);
});

on_both_engines!(each_site_gets_its_own_lookup, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (first, second) = (site().await, site().await);
    let mut feeds = Vec::new();
    for n in 0..3 {
        feeds.push(follow(&store, alice, &first.url(&format!("/feed/{n}"))).await);
        feeds.push(follow(&store, alice, &second.url(&format!("/feed/{n}"))).await);
    }
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
        config.favicons = true;
    });
    fetcher.refresh_feeds(feeds.clone(), |_, _| {}).await;
    fetcher.wait_for_favicons().await;
    for server in [&first, &second] {
        assert_eq!(server.hits("/"), 1);
        assert_eq!(server.hits("/icon.png"), 1);
        assert_eq!(server.total_hits(), 5);
    }
    for feed in &feeds {
        let favicon = store.favicon(*feed).await.unwrap().expect("stored");
        assert_eq!(favicon.data.as_deref(), Some(PNG));
    }
});

on_both_engines!(processes_share_a_sites_favicon_through_the_store, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let server = site().await;
    let mut feeds = Vec::new();
    for n in 0..12 {
        feeds.push(follow(&store, alice, &server.url(&format!("/feed/{n}"))).await);
    }
    // Three workers on one database, as three processes: each has its own memory.
    let worker = || {
        fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
            config.favicons = true;
        })
    };
    let workers = [worker(), worker(), worker()];
    let rounds = workers
        .iter()
        .zip(feeds.chunks(4))
        .map(|(fetcher, mine)| async move {
            fetcher
                .refresh_feeds(mine.to_vec(), |_, report| {
                    assert_eq!(report.unwrap().result, FetchResult::Parsed);
                })
                .await;
            fetcher.wait_for_favicons().await;
        });
    futures_util::future::join_all(rounds).await;
    // One lookup for the site in all: the others waited for its result in the store.
    assert_eq!(server.hits("/"), 1, "{:?}", server.hits_by_path());
    assert_eq!(server.hits("/icon.png"), 1);
    assert_eq!(server.total_hits(), 12 + 2);
    for feed in &feeds {
        let favicon = store.favicon(*feed).await.unwrap().expect("stored");
        assert_eq!(favicon.data.as_deref(), Some(PNG), "feed {feed}");
    }
    let found: u64 = workers
        .iter()
        .map(|w| w.metrics().snapshot().favicons_found)
        .sum();
    assert_eq!(found, 1);

    // A new process later, with nothing in memory, reuses the site's stored result.
    let later = follow(&store, alice, &server.url("/feed/12")).await;
    let fresh_process = worker();
    fresh_process.refresh_feed(later).await.unwrap();
    fresh_process.wait_for_favicons().await;
    assert_eq!(server.total_hits(), 15, "{:?}", server.hits_by_path());
    let favicon = store.favicon(later).await.unwrap().expect("stored");
    assert_eq!(favicon.data.as_deref(), Some(PNG));

    // Once the site's result is older than the favicon age, the first feed to notice looks it
    // up again (one lookup), and the next one reuses the new result.
    let month = 31 * 86_400;
    store
        .execute_raw(&format!(
            "UPDATE site_favicons SET fetched_at = fetched_at - {month}"
        ))
        .await
        .unwrap();
    store
        .execute_raw(&format!(
            "UPDATE favicons SET fetched_at = fetched_at - {month}"
        ))
        .await
        .unwrap();
    // (Without a stored body the feeds are parsed again, which is when favicons are checked.)
    store.execute_raw("DELETE FROM feed_bodies").await.unwrap();
    for (n, feed) in feeds[..2].iter().enumerate() {
        let process = worker();
        process.refresh_feed(*feed).await.unwrap();
        process.wait_for_favicons().await;
        assert_eq!(server.hits("/"), 2, "after feed {n}");
        assert_eq!(server.hits("/icon.png"), 2);
    }
    for feed in &feeds[..2] {
        let favicon = store.favicon(*feed).await.unwrap().expect("stored");
        assert!(
            favicon.fetched_at > tidings_store::unix_now() - 60,
            "{favicon:?}"
        );
    }
});

/// Subscribes `user_id` by `url`, as `POST /subscriptions` does.
async fn subscribe_to(fetcher: &Fetcher, user_id: i64, url: &str) -> Subscribed {
    let request = SubscribeRequest {
        url: url.to_owned(),
        ..Default::default()
    };
    subscribe_with_discovery(fetcher, user_id, &request)
        .await
        .unwrap()
}

on_both_engines!(
    subscribing_costs_one_request_per_feed_and_one_lookup_per_site,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let server = site().await;
        let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
            config.favicons = true;
        });
        // By the feed's own URL: discovery's request is the first fetch; nothing is asked twice.
        let subscribed = subscribe_to(&fetcher, alice, &server.url("/feed/1")).await;
        let first = subscribed.first_fetch.expect("fetched at once");
        assert_eq!(first.result, FetchResult::Parsed);
        assert_eq!(first.items_inserted, 1);
        assert_eq!(server.hits("/feed/1"), 1, "{:?}", server.hits_by_path());
        // The fetch was recorded as one: the next one is conditional on what it stored.
        let state = store.feed_fetch_state(first.feed_id).await.unwrap();
        assert!(state.last_checked_at.is_some(), "{state:?}");

        // A second feed of the same site, again by its URL, while the first's favicon lookup may
        // still be running: one request for the feed, and the site is looked up once for both.
        let second = subscribe_to(&fetcher, alice, &server.url("/feed/2")).await;
        assert_eq!(
            second.first_fetch.expect("fetched").result,
            FetchResult::Parsed
        );
        fetcher.wait_for_favicons().await;
        assert_eq!(server.hits("/feed/2"), 1);
        assert_eq!(server.hits("/"), 1, "{:?}", server.hits_by_path());
        assert_eq!(server.hits("/icon.png"), 1);
        assert_eq!(server.total_hits(), 4, "{:?}", server.hits_by_path());
        for feed in [first.feed_id, second.subscription.feed_id] {
            let favicon = store.favicon(feed).await.unwrap().expect("stored");
            assert_eq!(favicon.data.as_deref(), Some(PNG));
        }
    }
);
