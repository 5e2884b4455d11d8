//! Scraped sources (F7) over the network, on SQLite and PostgreSQL: the saved pages of
//! `crates/scrape/testdata` (Webflow-like HTML, Next.js, Remix) served from 127.0.0.1, read
//! by preview and by the fetch round, with the errors that name the selector at fault.

use tidings_testkit::on_both_engines;

use std::sync::{Arc, Mutex};

use crate::support::{TestServer, fetcher, user};
use axum::Router;
use axum::http::header;
use axum::routing::get;
use tidings_scrape::{ScrapeConfig, ScrapeError, ScrapeKind};
use tidings_store::{ItemQuery, ItemSummary, Store, StoreError};
use tidings_worker::{
    DiscoverError, FetchResult, ScrapeSourceError, ScrapedSourceRequest, preview_scraped,
    reconfigure_scraped, subscribe_scraped,
};

fn saved(name: &str) -> String {
    let path = format!("{}/../scrape/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A site serving the three saved pages, the Webflow one from `webflow` (so tests can change
/// it), all as `text/html`.
async fn site(webflow: Arc<Mutex<String>>) -> TestServer {
    let html = |body: String| ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body);
    let (next, remix) = (saved("nextjs-blog.html"), saved("remix-blog.html"));
    TestServer::start(
        Router::new()
            .route(
                "/blog",
                get(move || {
                    let body = webflow.lock().unwrap().clone();
                    async move { html(body) }
                }),
            )
            .route("/next/blog", get(move || async move { html(next) }))
            .route("/remix/blog/", get(move || async move { html(remix) })),
    )
    .await
}

fn webflow() -> ScrapeConfig {
    ScrapeConfig {
        kind: ScrapeKind::Html,
        item_selector: Some(".w-dyn-items .w-dyn-item".into()),
        title_selector: Some(".blog-title".into()),
        date_selector: Some(".blog-date".into()),
        date_format: Some("%B %d, %Y".into()),
        summary_selector: Some(".blog-summary".into()),
        ..ScrapeConfig::default()
    }
}

fn nextjs(prefix: &str) -> ScrapeConfig {
    ScrapeConfig {
        kind: ScrapeKind::Nextjs,
        data_key: Some("props.pageProps.posts".into()),
        url_selector: Some("slug".into()),
        url_prefix: Some(prefix.into()),
        ..ScrapeConfig::default()
    }
}

fn remix() -> ScrapeConfig {
    ScrapeConfig {
        kind: ScrapeKind::Remix,
        context_key: Some("routes/blog._index".into()),
        data_key: Some("posts".into()),
        url_selector: Some("slug".into()),
        ..ScrapeConfig::default()
    }
}

async fn stored_items(store: &Store, user_id: i64, feed_id: i64) -> Vec<ItemSummary> {
    store
        .list_items(
            user_id,
            &ItemQuery {
                feed_id: Some(feed_id),
                limit: 50,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .items
}

on_both_engines!(previews_read_each_kind_of_page_and_store_nothing, |db| {
    let store = db.migrated().await;
    let server = site(Arc::new(Mutex::new(saved("webflow-blog.html")))).await;
    let fetcher = fetcher(&store);

    let page = preview_scraped(&fetcher, &server.url("/blog"), &webflow())
        .await
        .expect("previews");
    assert_eq!(page.title.as_deref(), Some("Blog | Northwind Labs"));
    let titles: Vec<&str> = page
        .items
        .iter()
        .filter_map(|i| i.title.as_deref())
        .collect();
    assert_eq!(
        titles,
        [
            "How we cut cold starts by 80%",
            "Introducing shared workspaces",
            "PostgreSQL partitioning in practice",
            "We're hiring in Lisbon & Berlin"
        ]
    );
    // Links resolve against the page's URL; summaries are sanitized as they would be stored.
    assert_eq!(
        page.items[0].url.as_deref(),
        Some(server.url("/blog/how-we-cut-cold-starts-by-80").as_str())
    );
    assert_eq!(
        page.items[1].summary.as_deref(),
        Some("Invite your whole team, share dashboards and keep one source of truth.")
    );

    let prefix = "https://lumen.example/blog/";
    let page = preview_scraped(&fetcher, &server.url("/next/blog"), &nextjs(prefix))
        .await
        .expect("previews");
    assert_eq!(page.items.len(), 3);
    assert_eq!(
        page.items[2].url.as_deref(),
        Some("https://lumen.example/blog/tracing-at-scale")
    );

    // Without a prefix, slugs resolve against the page (here a directory).
    let page = preview_scraped(&fetcher, &server.url("/remix/blog/"), &remix())
        .await
        .expect("previews");
    assert_eq!(
        page.items[0].url.as_deref(),
        Some(server.url("/remix/blog/harbor-2-0").as_str())
    );
    assert_eq!(
        page.items[0].title.as_deref(),
        Some("Harbor 2.0: deploy previews for every branch")
    );

    assert!(
        store.list_feeds().await.unwrap().is_empty(),
        "a preview saves nothing"
    );
});

on_both_engines!(
    a_scraped_subscription_stores_the_pages_items_and_follows_changes,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let page = Arc::new(Mutex::new(saved("webflow-blog.html")));
        let server = site(Arc::clone(&page)).await;
        let fetcher = fetcher(&store);

        let source = subscribe_scraped(
            &fetcher,
            alice,
            &ScrapedSourceRequest {
                url: server.url("/blog"),
                config: webflow(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribes");
        let first = source.first_fetch.expect("fetched at once");
        assert_eq!(first.result, FetchResult::Parsed, "{first}");
        assert_eq!(first.items_inserted, 4, "{first}");
        // The preview's fetch is the source's first: the page is asked for once.
        assert_eq!(server.hits("/blog"), 1);
        let feed = source.subscription.feed_id;
        let subscription = store
            .subscription(alice, source.subscription.id)
            .await
            .unwrap();
        assert_eq!(
            subscription.feed_title.as_deref(),
            Some("Blog | Northwind Labs")
        );
        assert!(subscription.scrape_config.unwrap().contains(".blog-title"));

        let items = stored_items(&store, alice, feed).await;
        let newest = &items[0];
        assert_eq!(
            newest.title.as_deref(),
            Some("How we cut cold starts by 80%")
        );
        assert_eq!(
            newest.url.as_deref(),
            Some(server.url("/blog/how-we-cut-cold-starts-by-80").as_str())
        );
        // 2024-03-12T00:00:00Z, from "March 12, 2024".
        assert_eq!(newest.published_at, 1_710_201_600);
        assert!(!newest.is_date_estimated);
        let hiring = items
            .iter()
            .find(|i| i.url.as_deref() == Some("https://jobs.northwind-labs.example/open-roles"))
            .expect("the absolute link is kept");
        assert_eq!(
            hiring.title.as_deref(),
            Some("We're hiring in Lisbon & Berlin")
        );
        let workspaces = items
            .iter()
            .find(|i| i.title.as_deref() == Some("Introducing shared workspaces"))
            .unwrap();
        let body = store.item(alice, workspaces.id).await.unwrap();
        assert!(!body.content.unwrap_or_default().contains("script"));

        // The same page again is skipped as unchanged, like a feed's body.
        let again = fetcher.refresh_feed(feed).await.unwrap();
        assert_eq!(again.result, FetchResult::Unchanged, "{again}");

        // A new post on the page is one new item; the others keep their identity.
        {
            let mut html = page.lock().unwrap();
            *html = html.replacen(
            "<div role=\"listitem\" class=\"blog-item w-dyn-item\">",
            "<div role=\"listitem\" class=\"blog-item w-dyn-item\"><a href=\"/blog/launch-week\" \
             class=\"blog-card w-inline-block\"><div class=\"blog-date\">March 20, 2024</div>\
             <h3 class=\"blog-title\">Launch week recap</h3></a></div>\
             <div role=\"listitem\" class=\"blog-item w-dyn-item\">",
            1,
        );
        }
        let changed = fetcher.refresh_feed(feed).await.unwrap();
        assert_eq!(changed.result, FetchResult::Parsed, "{changed}");
        assert_eq!(
            (changed.items_inserted, changed.items_unchanged),
            (1, 4),
            "{changed}"
        );
        assert_eq!(stored_items(&store, alice, feed).await.len(), 5);
        // Its kept body is the page, which reparsing reads with the source's configuration
        // (as a feed it would not parse), without a request.
        let hits = server.hits("/blog");
        let reparsed = fetcher.reparse_feed(feed).await.unwrap();
        assert_eq!(reparsed.parse_error, None, "{reparsed}");
        assert_eq!(
            (reparsed.items_inserted, reparsed.items_unchanged),
            (0, 5),
            "{reparsed}"
        );
        assert_eq!(server.hits("/blog"), hits);

        // The site is redesigned: the error names the selector that found nothing, and shows
        // as the subscription's last error.
        *page.lock().unwrap() =
            "<html><head><title>Blog</title></head><body><article class=\"post\">\
         <a href=\"/p/1\">New design</a></article></body></html>"
                .to_owned();
        let broken = fetcher.refresh_feed(feed).await.unwrap();
        assert_eq!(broken.result, FetchResult::ParseFailed, "{broken}");
        let error = broken.error.unwrap_or_default();
        assert!(
            error.contains("item_selector `.w-dyn-items .w-dyn-item` matched nothing on the page"),
            "{error}"
        );
        let subscription = store
            .subscription(alice, source.subscription.id)
            .await
            .unwrap();
        assert!(
            subscription
                .last_error
                .unwrap_or_default()
                .contains("item_selector"),
        );

        // Its sole subscriber reconfigures it; the page is read again at once.
        let fixed = reconfigure_scraped(
            &fetcher,
            alice,
            source.subscription.id,
            &ScrapeConfig {
                kind: ScrapeKind::Html,
                item_selector: Some("article.post".into()),
                ..ScrapeConfig::default()
            },
        )
        .await
        .expect("reconfigures");
        let refetch = fixed.first_fetch.expect("fetched");
        assert_eq!(refetch.result, FetchResult::Parsed, "{refetch}");
        assert_eq!(refetch.items_inserted, 1, "{refetch}");
        assert_eq!(fixed.subscription.last_error, None);
    }
);

on_both_engines!(
    a_configuration_that_finds_nothing_is_refused_before_saving,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let server = site(Arc::new(Mutex::new(saved("webflow-blog.html")))).await;
        let fetcher = fetcher(&store);
        let request = |url: String, config: ScrapeConfig| ScrapedSourceRequest {
            url,
            config,
            ..Default::default()
        };

        let error = subscribe_scraped(
            &fetcher,
            alice,
            &request(
                server.url("/blog"),
                ScrapeConfig {
                    title_selector: Some("h2.post-title".into()),
                    ..webflow()
                },
            ),
        )
        .await
        .expect_err("refused");
        assert!(
            matches!(
                &error,
                ScrapeSourceError::Scrape(ScrapeError::NothingMatched {
                    field: "title_selector",
                    ..
                })
            ),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("`h2.post-title` matched nothing"),
            "{error}"
        );

        // A Next.js path that is not there names the missing key.
        let error = subscribe_scraped(
            &fetcher,
            alice,
            &request(
                server.url("/next/blog"),
                ScrapeConfig {
                    data_key: Some("props.pageProps.items".into()),
                    ..nextjs("https://lumen.example/blog/")
                },
            ),
        )
        .await
        .expect_err("refused");
        assert!(error.to_string().contains("has no `items`"), "{error}");

        // An invalid configuration is refused before any request.
        let before = server.total_hits();
        let error = subscribe_scraped(
            &fetcher,
            alice,
            &request(
                server.url("/remix/blog/"),
                ScrapeConfig {
                    context_key: None,
                    ..remix()
                },
            ),
        )
        .await
        .expect_err("refused");
        assert!(
            matches!(
                error,
                ScrapeSourceError::Scrape(ScrapeError::InvalidConfig {
                    field: "context_key",
                    ..
                })
            ),
            "{error}"
        );
        assert_eq!(server.total_hits(), before);

        // A missing page is an HTTP error, and an address the guard refuses never gets a
        // request (the default client allows no loopback).
        let error = subscribe_scraped(&fetcher, alice, &request(server.url("/gone"), webflow()))
            .await
            .expect_err("refused");
        assert!(
            matches!(
                error,
                ScrapeSourceError::Page(DiscoverError::Status { status: 404, .. })
            ),
            "{error}"
        );
        let guarded = tidings_worker::Fetcher::new(
            store.clone(),
            tidings_fetch::GuardedClient::new(tidings_fetch::ClientConfig::default()).unwrap(),
            tidings_worker::WorkerConfig::default(),
        );
        let error = preview_scraped(&guarded, &server.url("/blog"), &webflow())
            .await
            .expect_err("refused");
        assert!(
            matches!(
                error,
                ScrapeSourceError::Page(DiscoverError::Fetch {
                    source: tidings_fetch::FetchError::Refused(_),
                    ..
                })
            ),
            "{error}"
        );
        assert!(store.list_feeds().await.unwrap().is_empty());
        // A feed's subscription cannot be reconfigured as a scraped source.
        let feed_sub = store
            .subscribe(
                alice,
                &tidings_store::NewSubscription {
                    feed_url: server.url("/feed.xml"),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let error = reconfigure_scraped(&fetcher, alice, feed_sub.id, &webflow())
            .await
            .expect_err("refused");
        assert!(
            matches!(error, ScrapeSourceError::Store(StoreError::Invalid(_))),
            "{error}"
        );
    }
);

// A scraped source's page is its site: the favicon lookup takes the icon the page links to
// from the page just read, without asking for the page a second time.
on_both_engines!(the_favicon_comes_from_the_page_already_read, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let page = Arc::new(Mutex::new(String::new()));
    let served = Arc::clone(&page);
    let png: &'static [u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let server = TestServer::start(
        Router::new()
            .route(
                "/blog",
                get(move || {
                    let body = served.lock().unwrap().clone();
                    async move { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body) }
                }),
            )
            .route(
                "/65a1f0c2d4e8b1a2c3d4e5a0/favicon.png",
                get(move || async move { ([(header::CONTENT_TYPE, "image/png")], png) }),
            ),
    )
    .await;
    // The saved page's asset host is this server, so its `shortcut icon` link is local.
    *page.lock().unwrap() = saved("webflow-blog.html").replace(
        "https://assets-global.website-files.example",
        &server.url(""),
    );
    let fetcher = crate::support::fetcher_with(
        &store,
        crate::support::local_client(std::time::Duration::from_secs(5)),
        |config| config.favicons = true,
    );
    let source = subscribe_scraped(
        &fetcher,
        alice,
        &ScrapedSourceRequest {
            url: server.url("/blog"),
            config: webflow(),
            ..Default::default()
        },
    )
    .await
    .expect("subscribes");
    fetcher.wait_for_favicons().await;
    let favicon = store
        .favicon(source.subscription.feed_id)
        .await
        .unwrap()
        .expect("looked up");
    assert_eq!(favicon.mime_type.as_deref(), Some("image/png"));
    assert_eq!(
        favicon.source_url.as_deref(),
        Some(server.url("/65a1f0c2d4e8b1a2c3d4e5a0/favicon.png").as_str())
    );
    assert_eq!(
        server.hits("/blog"),
        1,
        "the page is fetched once: {:?}",
        server.hits_by_path()
    );
    assert_eq!(server.hits("/"), 0, "{:?}", server.hits_by_path());
});
