//! A parsed fetch stored in one transaction (issue 14) on both engines: its items (every field,
//! through PostgreSQL's one-statement insert too), search index rows and tag jobs, the feed's
//! metadata and raw body, the new items' full-text queueing by the subscribers' modes, their
//! summary queueing, the feed's WebSub hub and favicon, and the outcome with the lease's
//! release.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    BodyWrite, Enclosure, Favicon, FeedBody, FeedMetadata, FetchRecord, FetchStatus, FetchWrites,
    FullTextAuto, FullTextMode, ItemFilter, ItemQuery, ItemSearch, NewItem, PreferenceChanges,
    ShortText, Store, SubscriptionChanges, WebSubDiscovery,
};
use tidings_text::SearchQuery;

const NOW: i64 = 1_700_000_000;

/// An item with every field set, so that a column stored in the wrong place shows.
fn full_item(n: usize, summary: &str) -> NewItem {
    NewItem {
        guid: Some(format!("urn:item:{n}")),
        url: Some(format!("https://news.example/{n}")),
        title: Some(format!("Heron {n} sighted")),
        author: Some(format!("Author {n}")),
        content: Some(format!("<p>Content {n}</p>")),
        summary: Some(summary.to_owned()),
        published: Some(NOW - 3_600 - n as i64),
        updated: Some(NOW - 60 - n as i64),
        enclosures: vec![Enclosure {
            url: format!("https://news.example/{n}.mp3"),
            mime_type: Some("audio/mpeg".into()),
            length: Some(1_000 + n as i64),
        }],
        categories: vec![format!("birds-{n}"), "nature".into()],
        thumbnail_url: Some(format!("https://img.example/{n}.jpg")),
        identity_key: None,
        language: None,
    }
}

/// An item with nothing but a title and a summary: no guid, link, date or author.
fn bare_item(title: &str) -> NewItem {
    NewItem {
        title: Some(title.into()),
        summary: Some(format!("About {title}")),
        ..NewItem::default()
    }
}

fn record(checked_at: i64) -> FetchRecord {
    FetchRecord {
        checked_at,
        success: true,
        status: FetchStatus::Active,
        status_reason: None,
        next_check_at: checked_at + 3_600,
        http_status: Some(200),
        error: None,
        consecutive_failures: 0,
        parse_failures: 0,
        etag: Some("\"v1\"".into()),
        last_modified: None,
        cache_control: None,
        expires_at: None,
        retry_after_until: None,
    }
}

fn raw_body(sha256: &str) -> FeedBody {
    FeedBody {
        fetched_at: NOW,
        content_type: Some("application/rss+xml".into()),
        charset: Some("utf-8".into()),
        source_url: Some("https://news.example/feed".into()),
        etag: Some("\"v1\"".into()),
        last_modified: None,
        sha256: sha256.into(),
        compression: "zlib".into(),
        raw_size: Some(1_234),
        parse_error: None,
        body: vec![1, 2, 3, 4],
    }
}

/// Short text: the summary is under 40 characters.
fn is_short(item: &NewItem) -> bool {
    item.summary.as_deref().unwrap_or("").chars().count() < 40
}

async fn set_mode(store: &Store, user_id: i64, subscription: i64, mode: FullTextMode) {
    let changes = SubscriptionChanges {
        full_text: Some(mode),
        ..SubscriptionChanges::default()
    };
    store
        .update_subscription(user_id, subscription, &changes)
        .await
        .expect("update");
}

/// How many of the user's items match `words`, over every page.
async fn search_count(store: &Store, user_id: i64, words: &str) -> usize {
    let mut search = ItemSearch {
        query: SearchQuery::parse(words).unwrap(),
        listing: ItemQuery {
            filter: ItemFilter::All,
            limit: 100,
            ..ItemQuery::default()
        },
        by_relevance: false,
        offset: 0,
    };
    let mut count = 0;
    loop {
        let page = store.search_items(user_id, &search).await.expect("search");
        count += page.hits.len();
        match page.next_cursor {
            Some(cursor) => search.listing.cursor = Some(cursor),
            None => return count,
        }
    }
}

on_both_engines!(
    a_parsed_fetch_is_stored_with_its_outcome_in_one_call,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (ann_sub, feed) = follow(&store, ann, "https://news.example/feed").await;
        // A new feed is due at once (at the time of subscribing, after NOW).
        let claimed = store
            .claim_due_feeds("w1", tidings_store::unix_now() + 1, 10, 300)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);

        // 150 items (more than one multi-row statement on SQLite), every field set, and two
        // without guid, link or date.
        let long = "A long summary that says much more than forty characters of text.";
        let mut items: Vec<NewItem> = (0..150)
            .map(|n| full_item(n, if n % 2 == 0 { "Short" } else { long }))
            .collect();
        items.push(bare_item("Bare one"));
        items.push(bare_item("Bare two"));
        let short: ShortText = &is_short;
        let kept = raw_body("abc123");
        let outcome = record(NOW);
        // Ann wants every new item summarized (F42).
        store
            .update_preferences(
                ann,
                &PreferenceChanges {
                    summarize: Some("all".into()),
                    ..PreferenceChanges::default()
                },
            )
            .await
            .unwrap();
        // The site's favicon, known from another feed of the site.
        let icon = Favicon {
            mime_type: Some("image/png".into()),
            data: Some(vec![0x89, b'P', b'N', b'G']),
            source_url: Some("https://news.example/favicon.png".into()),
            fetched_at: NOW - 10,
        };
        let writes = FetchWrites {
            metadata: Some(FeedMetadata {
                title: Some("News of birds"),
                site_url: Some("https://news.example/"),
                description: Some("Herons and more"),
                format: Some("rss"),
                language: Some("en"),
            }),
            icon_url: Some("https://news.example/icon.png"),
            favicon: Some(&icon),
            body: Some(BodyWrite::Keep(&kept)),
            full_text: Some(short),
            // The rule of every short item (the default, `read`, queues no first fetch).
            full_text_auto: FullTextAuto::Short,
            summaries: true,
            websub: Some(WebSubDiscovery {
                found: Some(("https://hub.example/", "https://news.example/self")),
                token: "token-1",
                secret: "secret-1",
            }),
            record: Some(("w1", &outcome)),
        };
        let written = store.store_fetch(feed, &items, NOW, &writes).await.unwrap();
        assert_eq!(written.counts.inserted, 152);
        assert!(written.recorded);
        assert_eq!(written.summaries_queued, 152);
        assert_eq!(store.summary_queue_len().await.unwrap(), 152);
        let push = store.websub_subscription(feed).await.unwrap().unwrap();
        assert_eq!(push.hub_url.as_deref(), Some("https://hub.example/"));
        assert_eq!(push.topic_url.as_deref(), Some("https://news.example/self"));
        assert_eq!(push.callback_token, "token-1");
        // The auto mode queues the 75 short items with a link; the bare ones have no link.
        assert_eq!(written.full_text_queued, 75);
        assert_eq!(store.full_text_queue_len().await.unwrap(), 75);
        assert_eq!(store.tag_queue_len().await.unwrap(), 152);

        // Every field of every item as given, in the reader and in the search index.
        let ids = store.feed_item_ids(feed).await.unwrap();
        assert_eq!(ids.len(), 152);
        for id in ids {
            let stored = store.item(ann, id).await.unwrap();
            let Some(guid) = &stored.guid else {
                assert!(
                    stored.is_date_estimated,
                    "a bare item's date is the fetch time"
                );
                assert_eq!(stored.published_at, NOW);
                assert_eq!(stored.url, None);
                continue;
            };
            let n: usize = guid.trim_start_matches("urn:item:").parse().unwrap();
            let given = &items[n];
            assert_eq!(stored.url, given.url, "item {n}");
            assert_eq!(stored.title, given.title, "item {n}");
            assert_eq!(stored.author, given.author, "item {n}");
            assert_eq!(stored.content, given.content, "item {n}");
            assert_eq!(stored.summary, given.summary, "item {n}");
            assert_eq!(Some(stored.published_at), given.published, "item {n}");
            assert!(!stored.is_date_estimated);
            assert_eq!(stored.updated_at, given.updated, "item {n}");
            assert_eq!(stored.fetched_at, NOW);
            assert_eq!(stored.enclosures, given.enclosures, "item {n}");
            assert_eq!(stored.categories, given.categories, "item {n}");
            assert_eq!(stored.thumbnail_url, given.thumbnail_url, "item {n}");
            assert!(!stored.is_read);
        }
        assert_eq!(search_count(&store, ann, "heron").await, 150);
        assert_eq!(search_count(&store, ann, "bare").await, 2);
        // The subscription counts them unread.
        let subscription = store.subscription(ann, ann_sub).await.unwrap();
        assert_eq!(subscription.unread_count, 152);

        // The feed's metadata, body and outcome, and the lease given back.
        let state = store.feed_fetch_state(feed).await.unwrap();
        assert_eq!(state.title.as_deref(), Some("News of birds"));
        assert_eq!(state.last_checked_at, Some(NOW));
        assert_eq!(state.next_check_at, NOW + 3_600);
        assert_eq!(state.etag.as_deref(), Some("\"v1\""));
        assert_eq!(state.lease_until, None);
        assert_eq!(store.feed_body(feed).await.unwrap(), Some(kept.clone()));
        assert_eq!(store.favicon(feed).await.unwrap(), Some(icon));

        phase_next_fetches(&store, ann, ann_sub, feed, &items, short, long, kept).await;
    }
);

/// The next fetch without the lease: the items are stored all the same, the outcome is not,
/// nothing is queued twice, and a feed naming no hub forgets it; then the other full-text modes,
/// a body too large to keep, and no full-text request.
#[allow(clippy::too_many_arguments)]
async fn phase_next_fetches(
    store: &Store,
    ann: i64,
    ann_sub: i64,
    feed: i64,
    items: &[NewItem],
    short: ShortText<'_>,
    long: &str,
    kept: FeedBody,
) {
    // The next fetch without the lease (it was given back): the items are stored all the
    // same, the outcome is not, and nothing is queued twice.
    let mut next_items = items.to_vec();
    next_items[0].title = Some("Heron 0 sighted again".into());
    next_items.push(full_item(500, "Short"));
    let later = record(NOW + 60);
    let writes = FetchWrites {
        full_text: Some(short),
        full_text_auto: FullTextAuto::Short,
        summaries: true,
        websub: Some(WebSubDiscovery {
            found: None,
            token: "token-2",
            secret: "secret-2",
        }),
        record: Some(("w1", &later)),
        ..FetchWrites::default()
    };
    let written = store
        .store_fetch(feed, &next_items, NOW + 60, &writes)
        .await
        .unwrap();
    assert!(!written.recorded);
    assert_eq!(
        (
            written.counts.inserted,
            written.counts.updated,
            written.counts.unchanged
        ),
        (1, 1, 151)
    );
    assert_eq!(written.full_text_queued, 1, "only the new item");
    assert_eq!(written.summaries_queued, 1, "only the new item");
    // The feed names no hub any more: the row forgets it (and is due, to unsubscribe).
    let push = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(push.hub_url, None);
    assert_eq!(push.callback_token, "token-1", "the row is the same");
    let state = store.feed_fetch_state(feed).await.unwrap();
    assert_eq!(
        state.last_checked_at,
        Some(NOW),
        "not recorded without the lease"
    );
    assert_eq!(store.feed_body(feed).await.unwrap(), Some(kept));

    // `always` queues long items too; `never` queues nothing. A body too large to keep
    // drops the kept one.
    set_mode(store, ann, ann_sub, FullTextMode::Always).await;
    let queued_before = store.full_text_queue_len().await.unwrap();
    next_items.push(full_item(501, long));
    let written = store
        .store_fetch(
            feed,
            &next_items,
            NOW + 120,
            &FetchWrites {
                full_text: Some(short),
                body: Some(BodyWrite::Drop),
                ..FetchWrites::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((written.counts.inserted, written.full_text_queued), (1, 1));
    assert_eq!(
        store.full_text_queue_len().await.unwrap(),
        queued_before + 1
    );
    assert_eq!(store.feed_body(feed).await.unwrap(), None);
    set_mode(store, ann, ann_sub, FullTextMode::Never).await;
    next_items.push(full_item(502, "Short"));
    let written = store
        .store_fetch(
            feed,
            &next_items,
            NOW + 180,
            &FetchWrites {
                full_text: Some(short),
                ..FetchWrites::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((written.counts.inserted, written.full_text_queued), (1, 0));
    // Without a full-text request nothing is queued, whatever the mode.
    set_mode(store, ann, ann_sub, FullTextMode::Always).await;
    next_items.push(full_item(503, "Short"));
    let written = store
        .upsert_items(feed, &next_items, NOW + 240)
        .await
        .unwrap();
    assert_eq!(written.inserted, 1);
    assert_eq!(
        store.full_text_queue_len().await.unwrap(),
        queued_before + 1
    );
    // Every new item waits for its tags; the changed one is queued again in its place.
    assert_eq!(store.tag_queue_len().await.unwrap(), 152 + 4);
}

on_both_engines!(concurrent_fetches_of_one_feed_store_each_item_once, |db| {
    // Two stores of the same new items at once (two workers after a lease expired): each
    // identity once, counted once, indexed once.
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (ann_sub, feed) = follow(&store, ann, "https://news.example/feed").await;
    let items: Vec<NewItem> = (0..200).map(|n| full_item(n, "Short")).collect();
    let mut tasks = Vec::new();
    for round in 0..4 {
        let store = store.clone();
        let items = items.clone();
        tasks.push(tokio::spawn(async move {
            store.upsert_items(feed, &items, NOW + round).await.unwrap()
        }));
    }
    let mut inserted = 0;
    for task in tasks {
        let counts = task.await.unwrap();
        assert_eq!(counts.inserted + counts.updated + counts.unchanged, 200);
        inserted += counts.inserted;
    }
    assert_eq!(inserted, 200);
    assert_eq!(store.feed_item_ids(feed).await.unwrap().len(), 200);
    assert_eq!(search_count(&store, ann, "heron").await, 200);
    let subscription = store.subscription(ann, ann_sub).await.unwrap();
    assert_eq!(subscription.unread_count, 200);
});
