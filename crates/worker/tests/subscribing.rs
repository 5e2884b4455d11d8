//! Subscribing by page URL with a first fetch, and OPML import/export, on SQLite and
//! PostgreSQL against servers on 127.0.0.1.

use tidings_testkit::on_both_engines;

use crate::support::{TestServer, fetcher, rss, user};
use axum::Router;
use axum::routing::get;
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
    // The page and the feed are asked for once each: the check that found the feed is its
    // first fetch.
    assert_eq!(server.hits("/blog/"), 1);
    assert_eq!(
        server.hits("/blog/rss.xml"),
        1,
        "{:?}",
        server.hits_by_path()
    );
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

    // A conventional path that answers with a feed is asked for once too (on a site of its
    // own: every page of the first one would find it).
    let server = TestServer::start(
        Router::new()
            .route(
                "/plain/",
                get(|| async { "<html><body>no links</body></html>" }),
            )
            .route("/feed", get(|| async { rss("plain", 2) })),
    )
    .await;
    let probed = subscribe_with_discovery(
        &fetcher,
        alice,
        &SubscribeRequest {
            url: server.url("/plain/"),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(probed.subscription.feed_url, server.url("/feed"));
    assert_eq!(probed.first_fetch.expect("fetched").items_inserted, 2);
    assert_eq!(server.hits("/feed"), 1, "{:?}", server.hits_by_path());
});

/// A local site for imports: RSS feeds at `/feeds/{name}`, a page at `/page`, and 404
/// elsewhere.
async fn import_site() -> TestServer {
    let router =
        Router::new()
            .route(
                "/feeds/{name}",
                get(
                    |axum::extract::Path(name): axum::extract::Path<String>| async move {
                        rss(&name, 2)
                    },
                ),
            )
            .route(
                "/page",
                get(|| async { "<html><body>not a feed</body></html>" }),
            );
    TestServer::start(router).await
}

on_both_engines!(an_import_costs_one_request_per_feed, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    // Feeds whose channel links a site page on this server, which links an icon: the favicon
    // lookup is one site page and one icon for all of them.
    let router = Router::new()
        .route(
            "/feeds/{name}",
            get(
                |axum::extract::Path(name): axum::extract::Path<String>,
                 headers: axum::http::HeaderMap| async move {
                    let host = headers
                        .get("host")
                        .and_then(|h| h.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    rss(&name, 3).replace(
                        "<link>https://site.example/</link>",
                        &format!("<link>http://{host}/site</link>"),
                    )
                },
            ),
        )
        .route(
            "/site",
            get(|| async {
                axum::response::Html(
                    "<html><head><link rel=\"icon\" href=\"/icon.png\"></head></html>",
                )
            }),
        )
        .route(
            "/icon.png",
            get(|| async {
                (
                    [("content-type", "image/png")],
                    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
                )
            }),
        );
    let site = TestServer::start(router).await;
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];
    let outlines: String = names
        .iter()
        .map(|name| {
            format!(
                "<outline text=\"{name}\" xmlUrl=\"{}\"/>",
                site.url(&format!("/feeds/{name}"))
            )
        })
        .collect();
    let document = format!("<opml version=\"2.0\"><body>{outlines}</body></opml>");
    let fetcher = crate::support::fetcher_with(
        &store,
        crate::support::local_client(std::time::Duration::from_secs(5)),
        |config| config.favicons = true,
    );
    let report = import_opml(
        &fetcher,
        alice,
        document.as_bytes(),
        &ImportOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(report.added, names.len(), "{report:?}");
    // Each feed's items are stored by the import itself, from the check's response.
    for name in names {
        let feed_id = store
            .feed_id_by_url(&site.url(&format!("/feeds/{name}")))
            .await
            .unwrap()
            .expect("subscribed");
        assert_eq!(store.count_items(feed_id).await.unwrap(), 3, "feed {name}");
        let state = store.feed_fetch_state(feed_id).await.unwrap();
        assert!(state.last_success_at.is_some(), "feed {name}: {state:?}");
    }
    // The worker finds nothing due: the check was the first refresh.
    let worker = tidings_worker::Worker::new(fetcher.clone());
    assert_eq!(worker.run_once().await.unwrap(), vec![]);
    fetcher.wait_for_favicons().await;
    for name in names {
        assert_eq!(
            site.hits(&format!("/feeds/{name}")),
            1,
            "{:?}",
            site.hits_by_path()
        );
    }
    // Favicons are looked up after the import, once for the site all the feeds share.
    assert_eq!(site.hits("/site"), 1, "{:?}", site.hits_by_path());
    assert_eq!(site.hits("/icon.png"), 1, "{:?}", site.hits_by_path());
    assert_eq!(site.total_hits(), names.len() + 2);
    let feed_id = store
        .feed_id_by_url(&site.url("/feeds/a"))
        .await
        .unwrap()
        .unwrap();
    let icon = store.favicon(feed_id).await.unwrap().expect("stored");
    assert_eq!(icon.mime_type.as_deref(), Some("image/png"));
});

on_both_engines!(
    an_import_subscribes_feeds_others_fetch_without_a_request,
    |db| {
        let store = db.migrated().await;
        let (alice, bob) = (user(&store, "alice").await, user(&store, "bob").await);
        let site = import_site().await;
        let document = |names: &[&str]| {
            let outlines: String = names
                .iter()
                .map(|name| {
                    let url = site.url(&format!("/feeds/{name}"));
                    format!("<outline text=\"{name}\" xmlUrl=\"{url}\"/>")
                })
                .collect();
            format!("<opml version=\"2.0\"><body>{outlines}</body></opml>")
        };
        let fetcher = fetcher(&store);
        let options = ImportOptions::default();
        let first = import_opml(
            &fetcher,
            alice,
            document(&["a", "b", "c"]).as_bytes(),
            &options,
        )
        .await
        .unwrap();
        assert_eq!(first.added, 3, "{first:?}");
        let feed = async |name: &str| {
            let url = site.url(&format!("/feeds/{name}"));
            store.feed_id_by_url(&url).await.unwrap().unwrap()
        };
        // b's last fetch failed, and c's last success was two days ago (a worker stopped):
        // both are checked again, as a feed nobody follows is.
        store
            .execute_raw(&format!(
                "UPDATE feed_fetch_state SET consecutive_failures = 1 WHERE feed_id = {}",
                feed("b").await
            ))
            .await
            .unwrap();
        store
            .execute_raw(&format!(
                "UPDATE feed_fetch_state SET last_success_at = last_success_at - 2 * 86400
             WHERE feed_id = {}",
                feed("c").await
            ))
            .await
            .unwrap();
        let names = ["a", "b", "c", "d"];
        let second = import_opml(&fetcher, bob, document(&names).as_bytes(), &options)
            .await
            .unwrap();
        assert_eq!(second.added, 4, "{second:?}");
        assert!(
            second.entries.iter().all(|e| e.reason.is_none()),
            "{second:?}"
        );
        let hits: Vec<usize> = names
            .iter()
            .map(|name| site.hits(&format!("/feeds/{name}")))
            .collect();
        assert_eq!(
            hits,
            [1, 2, 2, 1],
            "a fetched once, for alice: {:?}",
            site.hits_by_path()
        );
        // Bob reads a's stored items at once, as its subscription's backlog, in its group.
        let a = feed("a").await;
        let subscriptions = store.list_subscriptions(bob).await.unwrap();
        assert!(
            subscriptions.iter().any(|s| s.feed_id == a),
            "{subscriptions:?}"
        );
        let titles =
            tidings_testkit::listed_titles(&store, bob, tidings_store::ItemFilter::All).await;
        for name in names {
            for i in 0..2 {
                let title = format!("Item {i} {name}");
                assert!(titles.contains(&title), "{title} in {titles:?}");
            }
        }
    }
);

/// What an import stopped by a limit of 2 subscriptions says: what happened, and what to do
/// (who can raise the limit, and that importing the same file again is safe).
const LIMIT_NOTICE_SAYS: [&str; 3] = [
    "limit of 2 subscriptions",
    "TIDINGS_MAX_SUBSCRIPTIONS",
    "same file again",
];

on_both_engines!(opml_import_reports_each_url_and_export_round_trips, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let site = import_site().await;
    let document = format!(
        r#"<?xml version="1.0"?>
<opml version="2.0"><head><title>Mine</title></head><body>
  <outline text="Top" xmlUrl="{top}"/>
  <outline text="Tech">
    <outline text="Rust &amp; more" title="Rust" xmlUrl="{rust}" htmlUrl="https://rust.example/"/>
    <outline text="Rust again" xmlUrl="{rust}"/>
  </outline>
  <outline text="Metadata" xmlUrl="http://169.254.169.254/latest"/>
  <outline text="Broken" xmlUrl="not a url"/>
  <outline text="Gone" xmlUrl="{gone}"/>
  <outline text="A page" xmlUrl="{page}"/>
  <outline text="{third}" xmlUrl="{third}"/>
</body></opml>"#,
        top = site.url("/feeds/top"),
        rust = site.url("/feeds/rust"),
        gone = site.url("/gone.xml"),
        page = site.url("/page"),
        third = site.url("/feeds/third"),
    );
    let options = ImportOptions {
        file_name: Some("mine.opml".into()),
        max_subscriptions: Some(2),
        ..ImportOptions::default()
    };
    let fetcher = fetcher(&store);
    let report = import_opml(&fetcher, alice, document.as_bytes(), &options)
        .await
        .unwrap();
    let statuses: Vec<(&str, ImportStatus)> = report
        .entries
        .iter()
        .map(|e| (e.url.as_str(), e.status))
        .collect();
    let (top, rust, gone, page, third) = (
        site.url("/feeds/top"),
        site.url("/feeds/rust"),
        site.url("/gone.xml"),
        site.url("/page"),
        site.url("/feeds/third"),
    );
    assert_eq!(
        statuses,
        vec![
            (top.as_str(), ImportStatus::Added),
            (rust.as_str(), ImportStatus::Added),
            (rust.as_str(), ImportStatus::Skipped),
            ("http://169.254.169.254/latest", ImportStatus::Refused),
            ("not a url", ImportStatus::Refused),
            // Fetched once to check: a 404 and a page are no feeds to subscribe to.
            (gone.as_str(), ImportStatus::Failed),
            (page.as_str(), ImportStatus::Failed),
            // The limit of two is reached.
            (third.as_str(), ImportStatus::Refused),
        ]
    );
    let reason = |n: usize| report.entries[n].reason.clone().unwrap_or_default();
    assert!(reason(3).contains("169.254.169.254"), "{}", reason(3));
    assert_eq!(reason(5), "the server answered HTTP 404");
    assert!(
        reason(6).starts_with("not a feed: this is an HTML page"),
        "said once: {}",
        reason(6)
    );
    assert_eq!(reason(7), "over the limit of 2 subscriptions");
    assert_eq!(
        (report.added, report.skipped, report.refused, report.failed),
        (2, 1, 3, 2)
    );
    assert_eq!(report.over_subscription_limit, 1);
    let notice = report.limit_notice(&options).unwrap();
    for part in LIMIT_NOTICE_SAYS {
        assert!(notice.contains(part), "{notice}");
    }
    // Titles are the outlines' (not the URL).
    let subscriptions = store.list_subscriptions(alice).await.unwrap();
    let mut titles: Vec<Option<String>> = subscriptions
        .iter()
        .map(|s| s.custom_title.clone())
        .collect();
    titles.sort();
    assert_eq!(titles, [Some("Rust".to_owned()), Some("Top".to_owned())]);
    let history = store.list_opml_imports(alice).await.unwrap();
    assert_eq!(history[0].id, report.import_id);
    assert_eq!((history[0].added, history[0].failed), (2, 5));
    assert!(history[0].report.contains("HTTP 404"));
    let groups = store.list_groups(alice).await.unwrap();
    assert!(groups.iter().any(|g| g.name == "Tech"));

    // Importing the same file again adds nothing new but what the limit refused.
    let again = import_opml(
        &fetcher,
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
    // An outline named by its own URL gives no title.
    let third_subscription = store
        .list_subscriptions(alice)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.feed_url == third)
        .unwrap();
    assert_eq!(third_subscription.custom_title, None);

    let exported = export_opml(&store, alice, "Alice").await.unwrap();
    let read_back = parse_opml(exported.as_bytes()).unwrap();
    let mut feeds: Vec<(String, Option<String>, Option<String>)> = read_back
        .feeds
        .into_iter()
        .map(|f| (f.xml_url, f.title, f.group))
        .collect();
    feeds.sort();
    let mut expected = vec![
        (
            rust.clone(),
            Some("Rust".to_owned()),
            Some("Tech".to_owned()),
        ),
        // Fetched by the import (its check was its first refresh), so named by its title.
        (third.clone(), Some("Feed third".to_owned()), None),
        (top.clone(), Some("Top".to_owned()), None),
    ];
    expected.sort();
    assert_eq!(feeds, expected);
    assert!(
        import_opml(&fetcher, alice, b"<rss/>", &options)
            .await
            .is_err()
    );
});

on_both_engines!(concurrent_imports_never_pass_the_subscription_limit, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let site = import_site().await;
    let fetcher = fetcher(&store);
    // 20 imports at once, 3 different feeds each, against a limit of 7.
    let mut imports = tokio::task::JoinSet::new();
    for n in 0..20 {
        let document = format!(
            "<opml version=\"2.0\"><body>{}</body></opml>",
            (0..3)
                .map(|k| format!(
                    "<outline xmlUrl=\"{}\"/>",
                    site.url(&format!("/feeds/i{n}-{k}"))
                ))
                .collect::<String>()
        );
        let fetcher = fetcher.clone();
        imports.spawn(async move {
            let options = ImportOptions {
                max_subscriptions: Some(7),
                ..ImportOptions::default()
            };
            import_opml(&fetcher, alice, document.as_bytes(), &options)
                .await
                .unwrap()
        });
    }
    let (mut added, mut over) = (0, 0);
    while let Some(report) = imports.join_next().await {
        let report = report.unwrap();
        added += report.added;
        over += report.over_subscription_limit;
    }
    assert_eq!((added, over), (7, 53));
    assert_eq!(store.count_subscriptions(alice).await.unwrap(), 7);
});

on_both_engines!(opml_import_keeps_feeds_whose_failure_may_pass, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new()
        .route("/feeds/ok", get(|| async { rss("ok", 2) }))
        .route(
            "/busy",
            get(|| async {
                (
                    axum::http::StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "3600")],
                    "slow down",
                )
            }),
        )
        .route(
            "/down",
            get(|| async { (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                rss("slow", 1)
            }),
        )
        .route(
            "/gone",
            get(|| async { (axum::http::StatusCode::GONE, "gone") }),
        )
        .route(
            "/page",
            get(|| async { axum::response::Html("<html><body>no feed</body></html>") }),
        );
    let site = TestServer::start(router).await;
    let paths = [
        "/feeds/ok",
        "/busy",
        "/down",
        "/slow",
        "/gone",
        "/missing",
        "/page",
    ];
    let outlines: String = paths
        .iter()
        .map(|path| format!("<outline text=\"{path}\" xmlUrl=\"{}\"/>", site.url(path)))
        .collect::<String>()
        + "<outline text=\"Metadata\" xmlUrl=\"http://169.254.169.254/latest\"/>";
    let document = format!("<opml version=\"2.0\"><body>{outlines}</body></opml>");
    let fetcher = crate::support::fetcher_with(
        &store,
        crate::support::local_client(std::time::Duration::from_secs(1)),
        |_| {},
    );
    let before = chrono::Utc::now().timestamp();
    let report = import_opml(
        &fetcher,
        alice,
        document.as_bytes(),
        &ImportOptions::default(),
    )
    .await
    .unwrap();
    let statuses: Vec<ImportStatus> = report.entries.iter().map(|e| e.status).collect();
    use ImportStatus::{Added, Failed, Refused};
    // 429, 503 and a time-out may pass: subscribed. 410, 404 and a page are no feed.
    assert_eq!(
        statuses,
        [Added, Added, Added, Added, Failed, Failed, Failed, Refused],
        "{report:#?}"
    );
    assert_eq!((report.added, report.failed), (4, 3));
    let entry = |n: usize| &report.entries[n];
    assert_eq!(entry(0).reason, None);
    assert!(
        entry(1)
            .reason
            .as_deref()
            .unwrap()
            .starts_with("the server answered HTTP 429; subscribed anyway"),
        "{:?}",
        entry(1)
    );
    assert!(entry(2).reason.as_deref().unwrap().contains("HTTP 503"));
    assert!(
        entry(3)
            .reason
            .as_deref()
            .unwrap()
            .contains("could not be fetched")
    );
    for n in 4..8 {
        assert!(entry(n).what_to_do.is_some(), "{:?}", entry(n));
    }
    assert!(
        entry(4)
            .what_to_do
            .as_deref()
            .unwrap()
            .contains("new address")
    );
    assert!(
        entry(6)
            .what_to_do
            .as_deref()
            .unwrap()
            .contains("site's address")
    );
    assert!(
        entry(7)
            .what_to_do
            .as_deref()
            .unwrap()
            .contains("administrator")
    );
    // Each kept feed shows its error and waits for the worker's back-off; the 429's
    // Retry-After is honoured. The check was the first fetch: no second request.
    for (path, status) in [("/busy", Some(429)), ("/down", Some(503)), ("/slow", None)] {
        let feed_id = store
            .feed_id_by_url(&site.url(path))
            .await
            .unwrap()
            .expect("subscribed");
        let state = store.feed_fetch_state(feed_id).await.unwrap();
        assert!(state.last_error.is_some(), "{path}: {state:?}");
        assert_eq!(state.last_http_status, status, "{path}: {state:?}");
        assert_eq!(state.consecutive_failures, 1, "{path}: {state:?}");
        assert!(state.next_check_at > before + 60, "{path}: {state:?}");
        assert_eq!(site.hits(path), 1, "{path}");
    }
    let busy = store
        .feed_id_by_url(&site.url("/busy"))
        .await
        .unwrap()
        .unwrap();
    let busy = store.feed_fetch_state(busy).await.unwrap();
    assert!(busy.next_check_at >= before + 3500, "{busy:?}");
    let ok = store
        .feed_id_by_url(&site.url("/feeds/ok"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.count_items(ok).await.unwrap(), 2);
    assert_eq!(store.list_subscriptions(alice).await.unwrap().len(), 4);
});

on_both_engines!(an_export_imported_again_keeps_every_setting, |db| {
    let store = db.migrated().await;
    let (alice, bob) = (user(&store, "alice").await, user(&store, "bob").await);
    let site = import_site().await;
    let document = format!(
        "<opml version=\"2.0\"><body><outline text=\"Tech\">\
         <outline text=\"A\" xmlUrl=\"{}\"/></outline>\
         <outline text=\"B\" xmlUrl=\"{}\"/></body></opml>",
        site.url("/feeds/a"),
        site.url("/feeds/b")
    );
    let fetcher = fetcher(&store);
    let options = ImportOptions::default();
    let first = import_opml(&fetcher, alice, document.as_bytes(), &options).await;
    assert_eq!(first.unwrap().added, 2);
    let a = store.list_subscriptions(alice).await.unwrap();
    let changes = tidings_store::SubscriptionChanges {
        title: Some(Some("Mine".into())),
        interval_minutes: Some(180),
        full_text: Some(tidings_store::FullTextMode::Always),
        summarize: Some(true),
        ..Default::default()
    };
    store
        .update_subscription(alice, a[0].id, &changes)
        .await
        .unwrap();
    // The other keeps the feed's own title (no custom title on either side) and is paused.
    let own_title = tidings_store::SubscriptionChanges {
        title: Some(None),
        suspended: Some(true),
        ..Default::default()
    };
    store
        .update_subscription(alice, a[1].id, &own_title)
        .await
        .unwrap();
    // A scraped source (F7) travels with its configuration.
    let blog = TestServer::start(Router::new().route(
        "/blog",
        get(|| async {
            axum::response::Html(
                "<html><head><title>Blog</title></head><body><article class=\"post\">\
                 <h2><a href=\"/one\">One</a></h2><p>First &amp; only.</p></article></body></html>",
            )
        }),
    ))
    .await;
    tidings_worker::subscribe_scraped(
        &fetcher,
        alice,
        &tidings_worker::ScrapedSourceRequest {
            url: blog.url("/blog"),
            config: tidings_scrape::ScrapeConfig {
                kind: tidings_scrape::ScrapeKind::Html,
                item_selector: Some("article.post".into()),
                ..Default::default()
            },
            title: Some("Scraped".into()),
            interval_minutes: Some(360),
            ..Default::default()
        },
    )
    .await
    .expect("subscribes");
    phase_proxy_is_an_administrators(&store, &fetcher, (alice, bob), a[0].feed_id).await;
    let settings = |subscriptions: Vec<tidings_store::Subscription>,
                    groups: Vec<tidings_store::Group>| {
        let mut out: Vec<_> = subscriptions
            .into_iter()
            .map(|s| {
                let group = groups.iter().find(|g| g.id == s.group_id).unwrap();
                (
                    s.feed_url,
                    s.custom_title,
                    (!group.is_default).then(|| group.name.clone()),
                    s.interval_minutes,
                    s.full_text,
                    s.summarize,
                    s.scrape_config,
                    s.suspended,
                )
            })
            .collect();
        out.sort_by(|x, y| x.0.cmp(&y.0));
        out
    };
    let before = settings(
        store.list_subscriptions(alice).await.unwrap(),
        store.list_groups(alice).await.unwrap(),
    );
    let after = settings(
        store.list_subscriptions(bob).await.unwrap(),
        store.list_groups(bob).await.unwrap(),
    );
    assert!(before.iter().any(|s| s.3 == 180 && s.5), "{before:?}");
    assert!(
        before.iter().any(|s| s.3 == 360 && s.6.is_some()),
        "{before:?}"
    );
    assert!(before.iter().any(|s| s.7), "one is paused: {before:?}");
    assert_eq!(after, before);
});

/// A feed's proxy in an export and an import: only an administrator's export carries it (with
/// the pause and every other setting), a user who is not one imports the file without it and
/// is told why, and an administrator's import sets it.
async fn phase_proxy_is_an_administrators(
    store: &tidings_store::Store,
    fetcher: &tidings_worker::Fetcher,
    (alice, bob): (i64, i64),
    feed_a: i64,
) {
    let options = ImportOptions::default();
    // A feed's proxy is an administrator's setting: only their export carries it.
    let proxy = "http://fetch:hunter2@proxy.example.com:3128/";
    let set_proxy = |proxy: Option<&str>| tidings_store::FeedSettingsChanges {
        suspended: None,
        proxy_url: Some(proxy.map(str::to_owned)),
    };
    store
        .update_feed_settings(feed_a, &set_proxy(Some(proxy)))
        .await
        .unwrap();
    let exported = export_opml(store, alice, "Alice").await.unwrap();
    assert!(
        !exported.contains("hunter2"),
        "not an administrator: {exported}"
    );
    store.set_user_flags(alice, Some(true), None).await.unwrap();
    let exported = export_opml(store, alice, "Alice").await.unwrap();
    assert!(exported.contains("xmlns:tidings="), "{exported}");
    assert!(exported.contains("tidings:scrape="), "{exported}");
    assert!(
        exported.contains("tidings:suspended=\"true\""),
        "{exported}"
    );
    assert!(
        exported.contains(&format!("tidings:proxy=\"{proxy}\"")),
        "{exported}"
    );
    // As in a fresh tidings, the feed has no proxy when the file is imported: a user who is
    // not an administrator does not set it, and the report says why.
    store
        .update_feed_settings(feed_a, &set_proxy(None))
        .await
        .unwrap();
    let again = import_opml(fetcher, bob, exported.as_bytes(), &options).await;
    let again = again.unwrap();
    assert_eq!(again.added, 3, "{again:#?}");
    let proxied = again
        .entries
        .iter()
        .find(|e| e.title.as_deref() == Some("Mine"));
    let reason = proxied.and_then(|e| e.reason.clone()).unwrap_or_default();
    assert!(reason.contains("only an administrator"), "{again:#?}");
    assert!(!format!("{again:?}").contains("hunter2"), "{again:#?}");
    assert_eq!(store.feed_settings(feed_a).await.unwrap().proxy_url, None);
    // An administrator's import sets it.
    let carol = user(store, "carol").await;
    store.set_user_flags(carol, Some(true), None).await.unwrap();
    let by_admin = import_opml(fetcher, carol, exported.as_bytes(), &options).await;
    assert_eq!(by_admin.unwrap().added, 3);
    assert_eq!(
        store
            .feed_settings(feed_a)
            .await
            .unwrap()
            .proxy_url
            .as_deref(),
        Some(proxy)
    );
}
