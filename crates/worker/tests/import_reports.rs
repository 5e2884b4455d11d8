//! What imports report (issue 32), on both engines: a history import's dry run says what the
//! import would do with stars (an item of a feed the user would subscribe to that tidings
//! already stores for someone else is looked up there, so a star it no longer lists is counted
//! as kept as a bookmark, as the import keeps it), and writes nothing; an OPML feed whose
//! address has moved for good to a feed the user follows is reported as already there.

use axum::Router;
use axum::response::Redirect;
use axum::routing::get;
use tidings_testkit::on_both_engines;

use crate::support::{TestServer, fetcher, follow, rss, user};
use tidings_worker::{
    History, HistoryFeed, HistoryItem, HistoryOptions, ImportOptions, ImportStatus, apply_history,
    import_opml,
};

on_both_engines!(a_dry_run_counts_stars_that_will_be_bookmarks, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let carl = user(&store, "carl").await;
    // Carl follows the shared feed; tidings stores one item of it.
    let shared = follow(&store, carl, "https://shared.example/feed").await;
    let listed = tidings_store::NewItem {
        guid: Some("shared-1".into()),
        url: Some("https://shared.example/1".into()),
        title: Some("Listed".into()),
        published: Some(1_700_000_000),
        ..Default::default()
    };
    store
        .upsert_items(shared, &[listed], 1_700_000_000)
        .await
        .unwrap();
    let starred = |feed: &str, link: &str| HistoryItem {
        feed_url: Some(feed.into()),
        link: Some(link.into()),
        title: Some(link.into()),
        starred: true,
        ..Default::default()
    };
    let history = History {
        feeds: vec![
            HistoryFeed {
                url: "https://shared.example/feed".into(),
                ..Default::default()
            },
            HistoryFeed {
                url: "https://never-fetched.example/feed".into(),
                ..Default::default()
            },
        ],
        items: vec![
            starred("https://shared.example/feed", "https://shared.example/1"),
            starred("https://shared.example/feed", "https://shared.example/old"),
            starred(
                "https://never-fetched.example/feed",
                "https://never-fetched.example/1",
            ),
            starred("https://gone.example/feed", "https://gone.example/1"),
        ],
        rules: Vec::new(),
    };
    let options = HistoryOptions {
        dry_run: true,
        ..HistoryOptions::default()
    };
    let report = apply_history(&fetcher(&store), ann, &history, &options)
        .await
        .unwrap();
    assert_eq!(report.subscriptions.added, 2, "{report:?}");
    // The listed item and the one of a feed tidings never fetched (not known without a
    // fetch) would be starred; the one the shared feed no longer lists and the gone feed's
    // would be kept as bookmarks.
    assert_eq!(
        (report.starred.added, report.starred.kept_as_bookmark),
        (2, 2),
        "{report:?}"
    );
    assert!(store.list_bookmarks(ann).await.unwrap().is_empty());
    assert!(store.list_subscriptions(ann).await.unwrap().is_empty());
});

on_both_engines!(
    a_feed_merged_into_one_the_user_follows_is_already_there,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let site = TestServer::start(
            Router::new()
                .route("/new.xml", get(|| async { rss("new", 2) }))
                .route(
                    "/old.xml",
                    get(|| async { Redirect::permanent("/new.xml") }),
                ),
        )
        .await;
        let fetcher = fetcher(&store);
        let new = follow(&store, ann, &site.url("/new.xml")).await;
        fetcher.refresh_feed(new).await.unwrap();
        let opml = format!(
            "<opml version=\"2.0\"><body><outline text=\"Old\" xmlUrl=\"{}\"/></body></opml>",
            site.url("/old.xml")
        );
        let report = import_opml(&fetcher, ann, opml.as_bytes(), &ImportOptions::default())
            .await
            .unwrap();
        let entry = &report.entries[0];
        assert_eq!(entry.status, ImportStatus::Skipped, "{report:?}");
        assert!(
            entry.reason.as_deref().unwrap().contains("moved for good"),
            "{report:?}"
        );
        assert_eq!((report.added, report.skipped), (0, 1), "{report:?}");
        assert_eq!(store.list_subscriptions(ann).await.unwrap().len(), 1);
    }
);
