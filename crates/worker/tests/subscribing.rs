//! Subscribing by page URL with a first fetch, and OPML import/export, on SQLite and
//! PostgreSQL against servers on 127.0.0.1.

#[path = "../../store/tests/common/mod.rs"]
mod common;
mod support;

use axum::Router;
use axum::routing::get;
use support::{TestServer, fetcher, rss, user};
use tidings_fetch::AddressPolicy;
use tidings_worker::{
    FetchResult, ImportOptions, ImportStatus, SubscribeError, SubscribeRequest, export_opml,
    import_opml, parse_opml, subscribe_with_discovery,
};

on_both_engines!(a_page_url_subscribes_to_its_feed_and_fetches_it, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new()
        .route(
            "/blog/",
            get(|| async {
                "<html><head><link rel=\"alternate\" type=\"application/atom+xml\" \
                 href=\"/missing.xml\"><link rel=\"alternate\" type=\"application/rss+xml\" \
                 href=\"/blog/rss.xml\"></head><body>hi</body></html>"
            }),
        )
        .route("/blog/rss.xml", get(|| async { rss("blog", 4) }))
        .route(
            "/nothing",
            get(|| async { "<html><body>no feeds</body></html>" }),
        );
    let server = TestServer::start(router).await;
    let fetcher = fetcher(&store);
    let subscribed = subscribe_with_discovery(
        &fetcher,
        alice,
        &SubscribeRequest {
            url: server.url("/blog/"),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        subscribed.subscription.feed_url,
        server.url("/blog/rss.xml")
    );
    let first = subscribed.first_fetch.expect("fetched at once");
    assert_eq!(first.result, FetchResult::Parsed);
    assert_eq!(first.items_inserted, 4);
    // Atom ranks first but does not load; the RSS feed that does is chosen.
    assert_eq!(server.hits("/missing.xml"), 1);
    let again = subscribe_with_discovery(
        &fetcher,
        alice,
        &SubscribeRequest {
            url: server.url("/blog/rss.xml"),
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(
        again,
        Err(SubscribeError::Store(tidings_store::StoreError::Conflict(
            _
        )))
    ));
    let none = subscribe_with_discovery(
        &fetcher,
        alice,
        &SubscribeRequest {
            url: server.url("/nothing"),
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(none, Err(SubscribeError::NoFeed(_))), "{none:?}");
});

on_both_engines!(opml_import_reports_each_url_and_export_round_trips, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let document = r#"<?xml version="1.0"?>
<opml version="2.0"><head><title>Mine</title></head><body>
  <outline text="Top" xmlUrl="https://top.example/feed"/>
  <outline text="Tech">
    <outline text="Rust" xmlUrl="https://rust.example/feed.xml" htmlUrl="https://rust.example/"/>
    <outline text="Rust again" xmlUrl="https://rust.example/feed.xml"/>
  </outline>
  <outline text="Local" xmlUrl="http://192.168.1.10/feed"/>
  <outline text="Metadata" xmlUrl="http://169.254.169.254/latest"/>
  <outline text="Broken" xmlUrl="not a url"/>
  <outline text="Third" xmlUrl="https://third.example/feed"/>
</body></opml>"#;
    let options = ImportOptions {
        file_name: Some("mine.opml".into()),
        max_subscriptions: Some(2),
        address_policy: AddressPolicy::default(),
        ..ImportOptions::default()
    };
    let report = import_opml(&store, alice, document.as_bytes(), &options)
        .await
        .unwrap();
    let statuses: Vec<(&str, ImportStatus)> = report
        .entries
        .iter()
        .map(|e| (e.url.as_str(), e.status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("https://top.example/feed", ImportStatus::Added),
            ("https://rust.example/feed.xml", ImportStatus::Added),
            ("https://rust.example/feed.xml", ImportStatus::Skipped),
            ("http://192.168.1.10/feed", ImportStatus::Refused),
            ("http://169.254.169.254/latest", ImportStatus::Refused),
            ("not a url", ImportStatus::Refused),
            // The limit of two subscriptions is reached.
            ("https://third.example/feed", ImportStatus::Refused),
        ]
    );
    assert!(
        report.entries[3]
            .reason
            .as_deref()
            .unwrap()
            .contains("192.168.1.10")
    );
    assert!(
        report.entries[6]
            .reason
            .as_deref()
            .unwrap()
            .contains("limit")
    );
    assert_eq!((report.added, report.skipped, report.refused), (2, 1, 4));
    let history = store.list_opml_imports(alice).await.unwrap();
    assert_eq!(history[0].id, report.import_id);
    assert_eq!(history[0].added, 2);
    assert!(history[0].report.contains("192.168.1.10"));
    let groups = store.list_groups(alice).await.unwrap();
    assert!(groups.iter().any(|g| g.name == "Tech"));

    // Importing the same file again adds nothing.
    let again = import_opml(
        &store,
        alice,
        document.as_bytes(),
        &ImportOptions {
            max_subscriptions: None,
            ..options.clone()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        again.entries[0].reason.as_deref(),
        Some("already subscribed")
    );
    assert_eq!(again.added, 1, "only the one the limit refused before");

    let exported = export_opml(&store, alice, "Alice").await.unwrap();
    let read_back = parse_opml(exported.as_bytes()).unwrap();
    let mut feeds: Vec<(String, Option<String>)> = read_back
        .feeds
        .into_iter()
        .map(|f| (f.xml_url, f.group))
        .collect();
    feeds.sort();
    assert_eq!(
        feeds,
        vec![
            (
                "https://rust.example/feed.xml".to_owned(),
                Some("Tech".to_owned())
            ),
            ("https://third.example/feed".to_owned(), None),
            ("https://top.example/feed".to_owned(), None),
        ]
    );
    assert!(
        import_opml(&store, alice, b"<rss/>", &options)
            .await
            .is_err()
    );
});
