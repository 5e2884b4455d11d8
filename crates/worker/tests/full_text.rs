//! Full text (F6) against real HTTP servers on 127.0.0.1, on SQLite and PostgreSQL: a feed of
//! teasers gets its articles from the saved pages, long items and `never` subscriptions are
//! left alone, failing pages are tried again or recorded, the feed's fetch never waits for
//! an article page, saved real-world pages give their articles, which search finds, and an
//! article remakes its teaser's tags and related-items vector. By default `auto` fetches no
//! import's backlog, only the new items of feeds a subscriber reads, and each site's pages
//! are bounded per day (issue 38); the tests of the short-item rule itself ask for it.

use tidings_testkit::on_both_engines;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{TestServer, fetcher, fetcher_with, local_client, user};
use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use tidings_embed::LocalEmbedder;
use tidings_store::{
    FullTextAuto, FullTextMode, ItemFilter, ItemQuery, ItemSearch, Store, SubscriptionChanges,
};
use tidings_testkit::follow;
use tidings_text::SearchQuery;
use tidings_worker::Fetcher;
use tidings_worker::{EmbeddingJob, FullTextJob, TaggingJob, drain_enrichment};

const NEWS: &[u8] = include_bytes!("../../extract/testdata/news.html");
const BLOG: &[u8] = include_bytes!("../../extract/testdata/blog.html");
const JAPANESE_SJIS: &[u8] = include_bytes!("../../extract/testdata/japanese-sjis.html");

/// An RSS feed on `base` whose items link to the site's pages: three teasers (news, blog,
/// the Shift_JIS page), one long item, one item whose page is missing, one whose server fails.
fn teaser_feed(base: &str) -> String {
    let long = "<p>A feed that gives the whole article in its description.</p>".repeat(40);
    let items = [
        (
            "news",
            "/news/uk/tidal-mill",
            "Harbour town votes to restore its tidal mill.".to_owned(),
        ),
        (
            "blog",
            "/2025/02/sqlite-growth/",
            "Why my SQLite database stopped growing.".to_owned(),
        ),
        (
            "ja",
            "/news/20250310_toshokan.html",
            "廃校が図書館に生まれ変わる".to_owned(),
        ),
        ("long", "/long", long),
        ("gone", "/gone", "A teaser whose page is gone.".to_owned()),
        (
            "busy",
            "/busy",
            "A teaser whose server is overloaded.".to_owned(),
        ),
    ];
    rss_of(base, &items)
}

/// An RSS feed of teasers `(guid, path on base, description)`.
fn rss_of(base: &str, items: &[(&str, &str, String)]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
         <title>Teasers</title><link>https://site.example/</link>",
    );
    for (guid, path, description) in items {
        out.push_str(&format!(
            "<item><title>{guid}</title><link>{base}{path}</link><guid>{guid}</guid>\
             <description><![CDATA[{description}]]></description></item>"
        ));
    }
    out.push_str("</channel></rss>");
    out
}

async fn site() -> TestServer {
    let page = |body: &'static [u8], content_type: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, content_type)], body) })
    };
    let router = Router::new()
        .route(
            "/news/uk/tidal-mill",
            page(NEWS, "text/html; charset=utf-8"),
        )
        .route("/2025/02/sqlite-growth/", page(BLOG, "text/html"))
        .route(
            "/news/20250310_toshokan.html",
            page(JAPANESE_SJIS, "text/html"),
        )
        .route("/long", page(NEWS, "text/html"))
        .route("/gone", get(|| async { StatusCode::NOT_FOUND }))
        .route("/busy", get(|| async { StatusCode::SERVICE_UNAVAILABLE }));
    TestServer::start(router).await
}

/// The teaser feed of `site`, served apart so that the site's requests are the pages only.
async fn feed_server(site: &TestServer) -> TestServer {
    serve_feed(teaser_feed(&format!("http://{}", site.addr))).await
}

/// Serves `feed` at `/feed.xml`.
async fn serve_feed(feed: String) -> TestServer {
    TestServer::start(Router::new().route(
        "/feed.xml",
        get(move || {
            let feed = feed.clone();
            async move { ([(header::CONTENT_TYPE, "application/rss+xml")], feed) }
        }),
    ))
    .await
}

/// A fetcher with the `auto` rule of every short item (`TIDINGS_FULL_TEXT_AUTO=short`), which
/// the tests of fetching and extracting use so that a first fetch queues its teasers.
fn short_fetcher(store: &Store) -> Fetcher {
    fetcher_with(store, local_client(Duration::from_secs(5)), |config| {
        config.full_text_auto = FullTextAuto::Short;
    })
}

/// A site whose every page is the saved news article.
async fn news_site() -> TestServer {
    TestServer::start(Router::new().route(
        "/{*path}",
        get(|| async { ([(header::CONTENT_TYPE, "text/html")], NEWS) }),
    ))
    .await
}

/// Serves on `feeds` at `/{name}.xml` the teasers `0..to` whose pages are on `site` at
/// `/{name}/{i}`.
fn serve_teasers(feeds: &TestServer, site: &TestServer, name: &str, to: usize) {
    let items: Vec<(String, String, String)> = (0..to)
        .map(|i| {
            (
                format!("{name}-{i}"),
                format!("/{name}/{i}"),
                "A teaser.".to_owned(),
            )
        })
        .collect();
    let items: Vec<(&str, &str, String)> = items
        .iter()
        .map(|(guid, path, text)| (guid.as_str(), path.as_str(), text.clone()))
        .collect();
    let feed = rss_of(&format!("http://{}", site.addr), &items);
    feeds.serve(&format!("/{name}.xml"), 200, "application/rss+xml", feed);
}

/// The id of the item with `guid` in `feed`.
async fn item_id(store: &Store, user_id: i64, feed: i64, guid: &str) -> i64 {
    for id in store.feed_item_ids(feed).await.unwrap() {
        if store.item(user_id, id).await.unwrap().guid.as_deref() == Some(guid) {
            return id;
        }
    }
    panic!("no item {guid}");
}

on_both_engines!(
    an_import_fetches_no_backlog_and_a_read_feed_gets_its_new_articles,
    |db| {
        let store = db.migrated().await;
        let site = news_site().await;
        let feeds = TestServer::start_empty().await;
        let ann = user(&store, "ann").await;
        // An import of five feeds of twelve teasers each, in the default `auto` mode.
        let fetcher = fetcher(&store);
        let mut followed = Vec::new();
        for n in 0..5 {
            let name = format!("f{n}");
            serve_teasers(&feeds, &site, &name, 12);
            let (_, feed) = follow(&store, ann, &feeds.url(&format!("/{name}.xml"))).await;
            let report = fetcher.refresh_feed(feed).await.expect("refresh");
            assert_eq!(report.items_inserted, 12);
            followed.push(feed);
        }
        let job = Arc::new(FullTextJob::new(fetcher.clone()));
        assert_eq!(
            store.full_text_queue_len().await.unwrap(),
            0,
            "no backlog queued"
        );
        drain_enrichment(Arc::clone(&job), 4).await.unwrap();
        assert_eq!(
            site.total_hits(),
            0,
            "no article page fetched for the backlog"
        );

        // Ann reads two of the first feed's items; both feeds then publish a new teaser.
        // Times are kept in seconds, and a read in the second its item was stored is taken
        // for one the rules made at arrival, which is no reading: a person reads later.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        for guid in ["f0-3", "f0-7"] {
            let id = item_id(&store, ann, followed[0], guid).await;
            store
                .set_item_state(ann, id, Some(true), None)
                .await
                .unwrap();
        }
        serve_teasers(&feeds, &site, "f0", 13);
        serve_teasers(&feeds, &site, "f1", 13);
        for feed in &followed[..2] {
            fetcher.refresh_feed(*feed).await.expect("refresh");
        }
        assert_eq!(store.full_text_queue_len().await.unwrap(), 1);
        drain_enrichment(Arc::clone(&job), 4).await.unwrap();
        assert_eq!(site.hits("/f0/12"), 1, "the read feed's new item");
        assert_eq!(site.total_hits(), 1, "nothing of the feed nobody read");
        let (_, article) = article_of(&store, ann, followed[0], "f0-12").await;
        assert!(article.expect("the article").contains("tidal mill"));
        let (_, none) = article_of(&store, ann, followed[1], "f1-12").await;
        assert_eq!(none, None);
    }
);

on_both_engines!(a_sites_daily_budget_stops_the_auto_pages, |db| {
    let store = db.migrated().await;
    let site = news_site().await;
    let feeds = TestServer::start_empty().await;
    let ann = user(&store, "ann").await;
    serve_teasers(&feeds, &site, "news", 5);
    let (sub, feed) = follow(&store, ann, &feeds.url("/news.xml")).await;
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
        config.full_text_auto = FullTextAuto::Short;
        config.full_text_host_daily_pages = 2;
    });
    fetcher.refresh_feed(feed).await.expect("refresh");
    assert_eq!(store.full_text_queue_len().await.unwrap(), 5);
    let job = Arc::new(FullTextJob::new(fetcher.clone()));
    drain_enrichment(Arc::clone(&job), 1).await.unwrap();
    // Two pages of the site today; the other three are left out (not waiting for tomorrow)
    // with nothing recorded, and counted.
    assert_eq!(site.total_hits(), 2);
    assert_eq!(store.full_text_queue_len().await.unwrap(), 0);
    let mut left_out = Vec::new();
    for i in 0..5 {
        let (id, article) = article_of(&store, ann, feed, &format!("news-{i}")).await;
        if store.full_content(id).await.unwrap().is_none() {
            left_out.push(id);
        } else {
            assert!(article.is_some());
        }
    }
    assert_eq!(left_out.len(), 3);
    assert_eq!(fetcher.metrics().snapshot().full_text_over_budget, 3);
    // The reader's "load full article" is not counted against the budget.
    fetcher.load_full_text(left_out[0]).await.expect("loaded");
    assert_eq!(site.total_hits(), 3);
    // `always` is not bounded: its subscriber asked for every page.
    let always = SubscriptionChanges {
        full_text: Some(FullTextMode::Always),
        ..SubscriptionChanges::default()
    };
    store.update_subscription(ann, sub, &always).await.unwrap();
    serve_teasers(&feeds, &site, "news", 7);
    fetcher.refresh_feed(feed).await.expect("refresh");
    drain_enrichment(job, 1).await.unwrap();
    assert_eq!(site.total_hits(), 5);
});

/// The stored article of the item with `guid`, by the user's view of the feed.
async fn article_of(store: &Store, user_id: i64, feed: i64, guid: &str) -> (i64, Option<String>) {
    let id = item_id(store, user_id, feed, guid).await;
    let full = store.full_content(id).await.unwrap();
    (id, full.and_then(|f| f.content))
}

on_both_engines!(
    teasers_get_their_articles_and_the_rest_is_left_alone,
    |db| {
        let store = db.migrated().await;
        let site = site().await;
        let feeds = feed_server(&site).await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
        let fetcher = short_fetcher(&store);
        let report = fetcher.refresh_feed(feed).await.expect("refresh");
        assert_eq!(report.items_inserted, 6);
        // The fetch only queued the teasers with a link; no article page was requested yet.
        assert_eq!(store.full_text_queue_len().await.unwrap(), 5);
        assert_eq!(
            site.total_hits(),
            0,
            "the feed's fetch does not fetch pages"
        );

        let job = Arc::new(FullTextJob::new(fetcher.clone()));
        drain_enrichment(Arc::clone(&job), 4).await.unwrap();

        let (_, news) = article_of(&store, ann, feed, "news").await;
        let news = news.expect("the news article");
        assert!(
            news.contains("The tidal mill at Porthcarrow last turned"),
            "{news}"
        );
        assert!(
            !news.contains("Seal pup rescued"),
            "the sidebar is not kept: {news}"
        );
        assert!(!news.contains("<script"), "sanitized: {news}");
        let (_, blog) = article_of(&store, ann, feed, "blog").await;
        assert!(
            blog.expect("the blog post")
                .contains("Free pages are not lost pages")
        );
        let (_, ja) = article_of(&store, ann, feed, "ja").await;
        let ja = ja.expect("the Japanese article");
        assert!(
            ja.contains("瀬戸内海に浮かぶ人口およそ三百人の大浜島"),
            "{ja}"
        );
        // The feed's own content stays as it was.
        let (news_id, _) = article_of(&store, ann, feed, "news").await;
        let item = store.item(ann, news_id).await.unwrap();
        assert_eq!(
            item.summary.as_deref(),
            Some("Harbour town votes to restore its tidal mill.")
        );
        // The long item was not queued in the auto mode: its page was never asked for.
        assert_eq!(site.hits("/long"), 0);
        let (long_id, long) = article_of(&store, ann, feed, "long").await;
        assert_eq!(long, None);
        assert!(store.full_content(long_id).await.unwrap().is_none());
        // A missing page is recorded as failed at once, and not asked for again.
        let (gone_id, _) = article_of(&store, ann, feed, "gone").await;
        let gone = store
            .full_content(gone_id)
            .await
            .unwrap()
            .expect("recorded");
        assert_eq!(gone.outcome, "failed");
        assert_eq!(
            gone.error.as_deref(),
            Some("the article page answered HTTP 404")
        );
        assert_eq!(site.hits("/gone"), 1);
        // An overloaded server is tried again later: still queued, nothing recorded yet.
        let (busy_id, _) = article_of(&store, ann, feed, "busy").await;
        assert!(store.full_content(busy_id).await.unwrap().is_none());
        assert_eq!(store.full_text_queue_len().await.unwrap(), 1);
        assert_eq!(site.hits("/busy"), 1);
        let snapshot = fetcher.metrics().snapshot();
        assert_eq!(snapshot.full_text_extracted, 3);
        assert_eq!(snapshot.full_text_failed, 1);
    }
);

on_both_engines!(
    an_article_makes_the_tags_and_the_related_vector_of_its_teaser,
    |db| {
        let store = db.migrated().await;
        let site = site().await;
        let feeds = feed_server(&site).await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
        let fetcher = short_fetcher(&store);
        fetcher.refresh_feed(feed).await.expect("refresh");
        let (news, _) = article_of(&store, ann, feed, "news").await;

        // Tagged and embedded from the teasers first, before any article came.
        let tagging = Arc::new(TaggingJob::new(&fetcher));
        drain_enrichment(Arc::clone(&tagging), 2).await.unwrap();
        let embedding = Arc::new(EmbeddingJob::new(store.clone(), LocalEmbedder, "w1", 60));
        drain_enrichment(Arc::clone(&embedding), 1).await.unwrap();
        let teaser_tags = tag_names(&store, news).await;
        assert!(
            !teaser_tags.iter().any(|t| t == "porthcarrow"),
            "{teaser_tags:?}"
        );
        let teaser_vector = store.item_vector(ann, news).await.unwrap().unwrap().vector;
        assert_eq!(store.tag_queue_len().await.unwrap(), 0);
        assert_eq!(store.embedding_queue_len().await.unwrap(), 0);

        // The articles of the three teasers arrive, each many times its teaser: their tags
        // and vectors are made again, from the article.
        drain_enrichment(Arc::new(FullTextJob::new(fetcher.clone())), 4)
            .await
            .unwrap();
        assert_eq!(store.tag_queue_len().await.unwrap(), 3);
        assert_eq!(store.embedding_queue_len().await.unwrap(), 3);
        drain_enrichment(Arc::clone(&tagging), 2).await.unwrap();
        drain_enrichment(Arc::clone(&embedding), 1).await.unwrap();
        let article_tags = tag_names(&store, news).await;
        assert!(
            article_tags.iter().any(|t| t == "porthcarrow"),
            "{article_tags:?}"
        );
        let item = store.item(ann, news).await.unwrap();
        let (_, article) = article_of(&store, ann, feed, "news").await;
        let text = tidings_feed::text::html_to_text(&article.unwrap());
        let expected = tidings_embed::quantize(&LocalEmbedder.vector(&tidings_embed::item_text(
            item.title.as_deref(),
            text.as_deref(),
        )));
        let article_vector = store.item_vector(ann, news).await.unwrap().unwrap().vector;
        assert_ne!(article_vector, teaser_vector);
        assert_eq!(article_vector, expected);
    }
);

/// The tag names of the item `item_id`, best first.
async fn tag_names(store: &Store, item_id: i64) -> Vec<String> {
    let mut tags = store.tags_of_items(&[item_id]).await.unwrap();
    tags.remove(&item_id)
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Saved real-world pages (see `crates/extract/testdata/README.md`): a Herald Sun column, a
/// blog post on ebb.org, a Japanese page in Shift_JIS served without a charset header.
async fn real_site() -> TestServer {
    let page = |body: &'static [u8], content_type: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, content_type)], body) })
    };
    TestServer::start(
        Router::new()
            .route(
                "/news/opinion/angry-media",
                page(
                    include_bytes!("../../extract/testdata/herald-sun/source.html"),
                    "text/html; charset=utf-8",
                ),
            )
            .route(
                "/bkuhn/blog/2019/10/15/fsf-rms.html",
                page(
                    include_bytes!("../../extract/testdata/ebb-org/source.html"),
                    "text/html",
                ),
            )
            .route(
                "/douwa/pc/aesop/01/01.htm",
                page(
                    include_bytes!("../../extract/testdata/hukumusume-sjis/source.html"),
                    "text/html",
                ),
            ),
    )
    .await
}

/// The titles of the user's items that match `query` (all of them, newest first).
async fn found(store: &Store, user_id: i64, query: &str) -> Vec<String> {
    let search = ItemSearch {
        query: SearchQuery::parse(query).unwrap(),
        listing: ItemQuery {
            filter: ItemFilter::All,
            limit: 50,
            ..ItemQuery::default()
        },
        by_relevance: false,
        offset: 0,
    };
    let page = store.search_items(user_id, &search).await.unwrap();
    page.hits
        .into_iter()
        .map(|hit| hit.item.title.unwrap_or_default())
        .collect()
}

on_both_engines!(
    saved_real_pages_give_their_articles_and_search_finds_them,
    |db| {
        let store = db.migrated().await;
        let site = real_site().await;
        let base = format!("http://{}", site.addr);
        let feeds = serve_feed(rss_of(
            &base,
            &[
                (
                    "column",
                    "/news/opinion/angry-media",
                    "A government team tried to allay the media's concerns.".to_owned(),
                ),
                (
                    "post",
                    "/bkuhn/blog/2019/10/15/fsf-rms.html",
                    "On recent controversial events.".to_owned(),
                ),
                (
                    "fable",
                    "/douwa/pc/aesop/01/01.htm",
                    "欲張りなイヌ".to_owned(),
                ),
            ],
        ))
        .await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
        let fetcher = short_fetcher(&store);
        fetcher.refresh_feed(feed).await.expect("refresh");
        assert!(found(&store, ann, "Weisbrot").await.is_empty());
        drain_enrichment(Arc::new(FullTextJob::new(fetcher.clone())), 3)
            .await
            .unwrap();

        // Each article as readability.js has it, without the page's menus and footers.
        let (_, column) = article_of(&store, ann, feed, "column").await;
        let column = column.expect("the column");
        assert!(
            column.contains("The Press Council is concerned the laws would crush"),
            "{column}"
        );
        for other in ["Barefoot Investor", "Login with Facebook", "Most Popular"] {
            assert!(!column.contains(other), "{other} kept: {column}");
        }
        let (_, post) = article_of(&store, ann, feed, "post").await;
        let post = post.expect("the post");
        assert!(
            post.contains("The last 33 days have been unprecedentedly difficult"),
            "{post}"
        );
        for other in ["gpl-compatibility", "Pump.io Social Network"] {
            assert!(!post.contains(other), "{other} kept: {post}");
        }
        let (_, fable) = article_of(&store, ann, feed, "fable").await;
        let fable = fable.expect("the fable");
        assert!(
            fable.contains("肉をくわえたイヌが、橋を渡っていました。"),
            "{fable}"
        );
        assert!(!fable.contains('\u{FFFD}'), "{fable}");

        // Search finds each item by words only its article holds (English words, Japanese
        // bigrams), and not by the navigation the extraction left out.
        assert_eq!(found(&store, ann, "Weisbrot").await, ["column"]);
        assert_eq!(
            found(&store, ann, "\"investigative journalism\"").await,
            ["column"]
        );
        assert_eq!(found(&store, ann, "Epstein gaslighting").await, ["post"]);
        assert_eq!(found(&store, ann, "ポチャン").await, ["fable"]);
        assert_eq!(found(&store, ann, "損をする").await, ["fable"]);
        assert!(found(&store, ann, "Horoscopes").await.is_empty());
        assert!(found(&store, ann, "np-complete").await.is_empty());
    }
);

on_both_engines!(never_and_always_follow_the_subscribers, |db| {
    let store = db.migrated().await;
    let site = site().await;
    let feeds = feed_server(&site).await;
    let ann = user(&store, "ann").await;
    let (sub, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
    let never = SubscriptionChanges {
        full_text: Some(FullTextMode::Never),
        ..SubscriptionChanges::default()
    };
    store.update_subscription(ann, sub, &never).await.unwrap();
    short_fetcher(&store)
        .refresh_feed(feed)
        .await
        .expect("refresh");
    assert_eq!(
        store.full_text_queue_len().await.unwrap(),
        0,
        "never: nothing queued"
    );

    // Another subscriber, of another feed with the same items, who wants every article: the
    // long item's page too, but an article no longer than the feed's text is not kept.
    let bob = user(&store, "bob").await;
    let (bob_sub, feed2) = follow(&store, bob, &feeds.url("/feed.xml?again")).await;
    let always = SubscriptionChanges {
        full_text: Some(FullTextMode::Always),
        ..SubscriptionChanges::default()
    };
    store
        .update_subscription(bob, bob_sub, &always)
        .await
        .unwrap();
    let fetcher = short_fetcher(&store);
    fetcher.refresh_feed(feed2).await.expect("refresh");
    assert_eq!(
        store.full_text_queue_len().await.unwrap(),
        6,
        "always: every linked item"
    );
    drain_enrichment(Arc::new(FullTextJob::new(fetcher.clone())), 2)
        .await
        .unwrap();
    let (long_id, long) = article_of(&store, bob, feed2, "long").await;
    assert_eq!(site.hits("/long"), 1);
    // The long item's text (2,400 characters) is shorter than the news article it links to
    // (about 4,000), so the article is kept.
    let full = store
        .full_content(long_id)
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(full.outcome, "extracted");
    assert!(long.expect("kept").contains("tidal mill"));
});

on_both_engines!(the_feeds_fetch_never_waits_for_article_pages, |db| {
    let store = db.migrated().await;
    // Article pages that take two seconds each.
    let slow = TestServer::start(Router::new().route(
        "/{*path}",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            ([(header::CONTENT_TYPE, "text/html")], NEWS)
        }),
    ))
    .await;
    let feeds = feed_server(&slow).await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(10)), |config| {
        config.full_text_concurrency = 2;
        config.full_text_auto = FullTextAuto::Short;
    });
    let worker = tidings_worker::Worker::new(fetcher.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        worker
            .run(async {
                let _ = stopped.await;
            })
            .await;
    });
    let started = Instant::now();
    crate::support::wait_until(Duration::from_secs(10), "the feed's fetch", || async {
        store.count_items(feed).await.unwrap() == 6
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the fetch took {:?}: it waited for a page",
        started.elapsed()
    );
    // Meanwhile the worker's full-text job fetches the five pages, two at a time.
    // (The items are visible a moment before the fetch queues them: wait for the outcomes.)
    crate::support::wait_until(Duration::from_secs(30), "the articles", || async {
        fetcher.metrics().snapshot().full_text_extracted == 5
    })
    .await;
    assert_eq!(store.full_text_queue_len().await.unwrap(), 0);
    let _ = stop.send(());
    running.await.unwrap();
});
