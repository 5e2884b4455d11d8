//! Scraped sources (F7) in the store, on SQLite and PostgreSQL: kind and configuration kept
//! with the feed, shared by equal configurations, one configuration per page, reconfigured by
//! the sole subscriber only, and handed to the worker with the claim.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{FeedBody, FetchRecord, FetchStatus, NewSubscription, StoreError, unix_now};

const PAGE: &str = "https://www.northwind.example/blog";
const CONFIG: &str = r#"{"kind":"html","item_selector":".w-dyn-item","title_selector":"h3"}"#;
const OTHER: &str = r#"{"kind":"html","item_selector":".post","title_selector":"h2"}"#;

fn page(url: &str) -> NewSubscription {
    NewSubscription {
        feed_url: url.into(),
        ..Default::default()
    }
}

on_both_engines!(a_scraped_source_keeps_its_configuration, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    // The URL is stored normalized, as a feed's is.
    let sub = store
        .subscribe_scraped(
            alice,
            &page("HTTPS://www.Northwind.example/blog#top"),
            CONFIG,
            None,
        )
        .await
        .expect("subscribes");
    assert_eq!(sub.feed_url, PAGE);
    assert_eq!(sub.scrape_config.as_deref(), Some(CONFIG));
    assert_eq!(
        store
            .subscription(alice, sub.id)
            .await
            .unwrap()
            .scrape_config
            .as_deref(),
        Some(CONFIG)
    );
    // A feed has none.
    let (feed_sub, _) = follow(&store, alice, "https://a.example/feed").await;
    assert_eq!(
        store
            .subscription(alice, feed_sub)
            .await
            .unwrap()
            .scrape_config,
        None
    );
    // The worker's claim carries the configuration, so the page is scraped, not parsed.
    let claimed = store
        .claim_due_feeds("w1", unix_now() + 1, 10, 60)
        .await
        .unwrap();
    let scraped = claimed.iter().find(|d| d.feed_id == sub.feed_id).unwrap();
    assert_eq!(scraped.scrape_config.as_deref(), Some(CONFIG));
    let feed = claimed.iter().find(|d| d.feed_id != sub.feed_id).unwrap();
    assert_eq!(feed.scrape_config, None);
});

on_both_engines!(one_page_has_one_configuration, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let bob = user(&store, "bob").await;
    let carol = user(&store, "carol").await;
    let first = store
        .subscribe_scraped(alice, &page(PAGE), CONFIG, None)
        .await
        .unwrap();
    // The same configuration shares the source (one fetch, one set of items).
    let shared = store
        .subscribe_scraped(bob, &page(PAGE), CONFIG, None)
        .await
        .unwrap();
    assert_eq!(shared.feed_id, first.feed_id);
    // Another configuration for a page others follow is refused, and says why.
    match store
        .subscribe_scraped(carol, &page(PAGE), OTHER, None)
        .await
    {
        Err(StoreError::Conflict(message)) => {
            assert!(message.contains("another configuration"), "{message}")
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // A feed's URL cannot become a scraped source, nor the other way round.
    follow(&store, alice, "https://a.example/feed").await;
    match store
        .subscribe_scraped(carol, &page("https://a.example/feed"), CONFIG, None)
        .await
    {
        Err(StoreError::Conflict(message)) => {
            assert!(message.contains("followed as a feed"), "{message}")
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The subscription limit applies as for feeds.
    assert!(matches!(
        store
            .subscribe_scraped(carol, &page("https://other.example/"), CONFIG, Some(0))
            .await,
        Err(StoreError::LimitReached { .. })
    ));
    // A source nobody follows any more takes the next subscriber's configuration.
    store.unsubscribe(alice, first.id).await.unwrap();
    store.unsubscribe(bob, shared.id).await.unwrap();
    let taken = store
        .subscribe_scraped(carol, &page(PAGE), OTHER, None)
        .await
        .unwrap();
    assert_eq!(taken.feed_id, first.feed_id);
    assert_eq!(taken.scrape_config.as_deref(), Some(OTHER));
});

on_both_engines!(
    the_sole_subscriber_reconfigures_and_the_page_is_read_again,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let bob = user(&store, "bob").await;
        let sub = store
            .subscribe_scraped(alice, &page(PAGE), CONFIG, None)
            .await
            .unwrap();
        let feed = sub.feed_id;
        // A fetch that stored the body and validators, then ten parse failures stopped it.
        store
            .save_feed_body(
                feed,
                &FeedBody {
                    fetched_at: 100,
                    content_type: Some("text/html".into()),
                    charset: None,
                    source_url: None,
                    etag: Some("\"v1\"".into()),
                    last_modified: None,
                    sha256: "aa".repeat(32),
                    compression: "zlib".into(),
                    raw_size: Some(3),
                    parse_error: None,
                    body: vec![1, 2, 3],
                },
            )
            .await
            .unwrap();
        let claimed = store.claim_feed(feed, "w1", unix_now(), 60).await.unwrap();
        assert!(claimed.is_some());
        let now = unix_now();
        store
            .record_fetch(
                feed,
                "w1",
                &FetchRecord {
                    checked_at: now,
                    success: false,
                    status: FetchStatus::Stopped,
                    status_reason: Some("ten parse failures".into()),
                    next_check_at: now,
                    http_status: Some(200),
                    error: Some("item_selector `.x` matched nothing on the page".into()),
                    consecutive_failures: 10,
                    parse_failures: 10,
                    etag: Some("\"v1\"".into()),
                    last_modified: Some("Tue, 12 Mar 2024 09:41:07 GMT".into()),
                    cache_control: None,
                    expires_at: None,
                    retry_after_until: None,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            store.subscription(alice, sub.id).await.unwrap().status,
            FetchStatus::Stopped
        );

        let changed = store
            .update_scrape_config(alice, sub.id, OTHER)
            .await
            .unwrap();
        assert_eq!(changed, feed);
        let after = store.subscription(alice, sub.id).await.unwrap();
        assert_eq!(after.scrape_config.as_deref(), Some(OTHER));
        assert_eq!(after.status, FetchStatus::Active);
        // Nothing left that would skip the page as unchanged.
        assert_eq!(store.feed_body_sha256(feed).await.unwrap(), None);
        let state = store.feed_fetch_state(feed).await.unwrap();
        assert_eq!(state.etag, None);
        assert_eq!(state.last_modified, None);
        assert_eq!(state.parse_failures, 0);
        assert!(state.next_check_at <= unix_now());

        // Once someone else reads it too, its configuration stays.
        store
            .subscribe_scraped(bob, &page(PAGE), OTHER, None)
            .await
            .unwrap();
        match store.update_scrape_config(alice, sub.id, CONFIG).await {
            Err(StoreError::Conflict(message)) => assert!(message.contains("1 other"), "{message}"),
            other => panic!("expected a conflict, got {other:?}"),
        }
        // A feed is not reconfigured, and another user's subscription is not found.
        let (feed_sub, _) = follow(&store, alice, "https://a.example/feed").await;
        assert!(matches!(
            store.update_scrape_config(alice, feed_sub, CONFIG).await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            store.update_scrape_config(bob, sub.id, CONFIG).await,
            Err(StoreError::NotFound(_))
        ));
    }
);
