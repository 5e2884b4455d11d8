//! Popularity (F40) on both engines: counts unknown until fetched (never 0 by default), the
//! calls a worker claims (distinct links, at most so many, never-counted first, stale ones
//! after the TTL, only recent items of followed feeds), the source's pace kept in the database
//! (spacing, calls per cycle, the lease, back-off after failures), and the hot list.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    HotQuery, ItemFilter, ItemQuery, NewItem, PopularityCall, PopularityDue, PopularityPace, Store,
};

/// A Unix time the tests' items are published around.
const T: i64 = 1_700_000_000;
/// The tests' clock for calls, in milliseconds.
const NOW_MS: i64 = T * 1000;

const PACE: PopularityPace = PopularityPace {
    spacing_ms: 5_000,
    cycle_ms: 600_000,
    max_calls_per_cycle: 100,
    lease_ms: 300_000,
};

fn due(max_urls: usize) -> PopularityDue {
    PopularityDue {
        stale_before: T - 24 * 3600,
        published_since: T - 30 * 86_400,
        max_urls,
    }
}

fn item(guid: &str, url: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(url.into()),
        title: Some(format!("Item {guid}")),
        published: Some(published),
        ..NewItem::default()
    }
}

/// Stores `items` in `feed`, one at a time, and answers their ids in the same order.
async fn add_items(store: &Store, feed: i64, items: &[NewItem]) -> Vec<i64> {
    let mut ids = Vec::new();
    for new in items {
        let before = store.feed_item_ids(feed).await.unwrap();
        store
            .upsert_items(feed, std::slice::from_ref(new), T)
            .await
            .expect("upsert");
        let after = store.feed_item_ids(feed).await.unwrap();
        let added: Vec<i64> = after
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect();
        assert_eq!(added.len(), 1, "one new item");
        ids.push(added[0]);
    }
    ids
}

async fn claim(
    store: &Store,
    now_ms: i64,
    pace: &PopularityPace,
    max: usize,
) -> Option<PopularityCall> {
    store
        .claim_popularity_call("hatena", "w1", now_ms, pace, &due(max))
        .await
        .expect("claim")
}

/// The ids of a hot list page.
async fn hot_ids(store: &Store, user_id: i64, query: &HotQuery) -> Vec<i64> {
    let page = store.hot_items(user_id, query).await.unwrap();
    page.items.iter().map(|hot| hot.item.id).collect()
}

/// A store with ann following `https://news.example/feed`: ann, her subscription, the feed.
async fn ann_follows_news(db: &tidings_testkit::TestDb) -> (Store, i64, i64, i64) {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (subscription, feed) = follow(&store, ann, "https://news.example/feed").await;
    (store, ann, subscription, feed)
}

fn urls(call: &PopularityCall) -> Vec<&str> {
    call.links.iter().map(|l| l.url.as_str()).collect()
}

on_both_engines!(counts_are_unknown_until_fetched_and_zero_is_a_count, |db| {
    let (store, _, _, feed) = ann_follows_news(db).await;
    let ids = add_items(
        &store,
        feed,
        &[
            item("a", "https://news.example/a", T - 10),
            item("b", "https://news.example/b", T - 20),
        ],
    )
    .await;
    assert!(
        store.popularity_of(&ids).await.unwrap().is_empty(),
        "nothing known yet"
    );

    let call = claim(&store, NOW_MS, &PACE, 50)
        .await
        .expect("both are due");
    assert_eq!(
        urls(&call),
        ["https://news.example/a", "https://news.example/b"]
    );
    // The source counted a, and did not list b: b has no bookmarks, which is a count.
    store
        .save_popularity(
            "hatena",
            "w1",
            &[(ids[0], 7), (ids[1], 0)],
            T,
            NOW_MS + 5_000,
        )
        .await
        .unwrap();
    let known = store.popularity_of(&ids).await.unwrap();
    assert_eq!(known[&ids[0]].count, 7);
    assert_eq!(known[&ids[1]].count, 0);
    assert_eq!(known[&ids[1]].fetched_at, T);

    // A new item is unknown while the others are known.
    let later = add_items(&store, feed, &[item("c", "https://news.example/c", T - 5)]).await;
    let known = store.popularity_of(&[ids[0], later[0]]).await.unwrap();
    assert!(known.contains_key(&ids[0]));
    assert!(!known.contains_key(&later[0]));
});

on_both_engines!(the_pace_holds_spacing_calls_per_cycle_and_the_lease, |db| {
    let (store, _, _, feed) = ann_follows_news(db).await;
    let items: Vec<NewItem> = (0..12)
        .map(|n| {
            item(
                &format!("i{n}"),
                &format!("https://news.example/{n}"),
                T - n,
            )
        })
        .collect();
    add_items(&store, feed, &items).await;
    let pace = PopularityPace {
        max_calls_per_cycle: 2,
        ..PACE
    };

    let first = claim(&store, NOW_MS, &pace, 5).await.expect("due");
    assert_eq!(first.links.len(), 5, "at most max_urls links a call");
    // Newest first.
    assert_eq!(first.links[0].url, "https://news.example/0");
    // While the call is in flight nobody else calls.
    assert!(
        store
            .claim_popularity_call("hatena", "w2", NOW_MS + 60_000, &pace, &due(5))
            .await
            .unwrap()
            .is_none()
    );
    let counts: Vec<(i64, i64)> = first.links.iter().map(|l| (l.item_ids[0], 1)).collect();
    store
        .save_popularity("hatena", "w1", &counts, T, NOW_MS + 5_000)
        .await
        .unwrap();
    // The spacing: not a millisecond early.
    assert!(claim(&store, NOW_MS + 4_999, &pace, 5).await.is_none());
    let second = claim(&store, NOW_MS + 5_000, &pace, 5)
        .await
        .expect("spaced");
    assert_eq!(
        second.links[0].url, "https://news.example/5",
        "the counted ones are not due"
    );
    store
        .save_popularity("hatena", "w1", &[], T, NOW_MS + 10_000)
        .await
        .unwrap();
    // Two calls used the cycle up: items are due but the source waits for the next cycle.
    assert!(claim(&store, NOW_MS + 10_000, &pace, 5).await.is_none());
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.cycle_calls, 2);
    assert_eq!(state.cycle_started_ms, NOW_MS);
    let next_cycle = claim(&store, NOW_MS + 600_000, &pace, 5)
        .await
        .expect("a new cycle");
    assert_eq!(next_cycle.links.len(), 5);
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (state.cycle_calls, state.cycle_started_ms),
        (1, NOW_MS + 600_000)
    );
    assert_eq!(state.lease_owner.as_deref(), Some("w1"));

    // A worker that died mid-call holds the source only until its lease ends.
    assert!(
        store
            .claim_popularity_call("hatena", "w2", NOW_MS + 600_000 + 299_999, &pace, &due(5))
            .await
            .unwrap()
            .is_none()
    );
    let taken = store
        .claim_popularity_call("hatena", "w2", NOW_MS + 900_000, &pace, &due(5))
        .await
        .unwrap();
    assert!(taken.is_some(), "the lease ended");
    // The late worker's result does not release the new holder's lease.
    store
        .save_popularity("hatena", "w1", &[], T, NOW_MS)
        .await
        .unwrap();
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.lease_owner.as_deref(), Some("w2"));
});

on_both_engines!(a_link_shared_by_items_is_asked_once, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, one) = follow(&store, ann, "https://one.example/feed").await;
    let (_, two) = follow(&store, ann, "https://two.example/feed").await;
    let a = add_items(&store, one, &[item("x", "https://story.example/", T - 1)]).await;
    let b = add_items(&store, two, &[item("y", "https://story.example/", T - 2)]).await;
    let call = claim(&store, NOW_MS, &PACE, 50).await.unwrap();
    assert_eq!(urls(&call), ["https://story.example/"]);
    let mut items = call.links[0].item_ids.clone();
    items.sort();
    let mut expected = vec![a[0], b[0]];
    expected.sort();
    assert_eq!(items, expected);
});

on_both_engines!(
    only_recent_items_of_followed_feeds_with_web_links_are_due,
    |db| {
        let (store, ann, sub, feed) = ann_follows_news(db).await;
        add_items(
            &store,
            feed,
            &[
                item("old", "https://news.example/old", T - 31 * 86_400),
                item("mail", "mailto:someone@example.com", T - 1),
                item("new", "https://news.example/new", T - 2),
            ],
        )
        .await;
        let call = claim(&store, NOW_MS, &PACE, 50).await.unwrap();
        assert_eq!(urls(&call), ["https://news.example/new"]);
        store
            .save_popularity("hatena", "w1", &[], T, NOW_MS)
            .await
            .unwrap();
        store.unsubscribe(ann, sub).await.unwrap();
        assert!(
            claim(&store, NOW_MS + 5_000, &PACE, 50).await.is_none(),
            "nobody follows the feed"
        );
    }
);

on_both_engines!(
    counts_older_than_the_ttl_are_fetched_again_after_unknown_ones,
    |db| {
        let (store, _, _, feed) = ann_follows_news(db).await;
        let ids = add_items(
            &store,
            feed,
            &[
                item("stale", "https://news.example/stale", T - 100),
                item("fresh", "https://news.example/fresh", T - 200),
                item("never", "https://news.example/never", T - 300),
            ],
        )
        .await;
        // Counted 25 h and 23 h ago (the TTL is 24 h).
        store
            .save_popularity("hatena", "w1", &[(ids[0], 3)], T - 25 * 3600, 0)
            .await
            .unwrap();
        store
            .save_popularity("hatena", "w1", &[(ids[1], 4)], T - 23 * 3600, 0)
            .await
            .unwrap();
        let call = claim(&store, NOW_MS, &PACE, 50).await.unwrap();
        assert_eq!(
            urls(&call),
            ["https://news.example/never", "https://news.example/stale"],
            "never counted first, then the stale one; the fresh one waits"
        );
        // The stale count is shown until the new one arrives.
        assert_eq!(store.popularity_of(&ids).await.unwrap()[&ids[0]].count, 3);
    }
);

on_both_engines!(failed_calls_back_off_and_a_success_resets_them, |db| {
    let (store, _, _, feed) = ann_follows_news(db).await;
    let ids = add_items(&store, feed, &[item("a", "https://news.example/a", T - 1)]).await;
    claim(&store, NOW_MS, &PACE, 50).await.unwrap();
    let (failures, until) = store
        .popularity_call_failed("hatena", "w1", "HTTP 500", |failures| {
            NOW_MS + 5_000 * (1 << failures)
        })
        .await
        .unwrap();
    assert_eq!((failures, until), (1, NOW_MS + 10_000));
    assert!(claim(&store, NOW_MS + 9_999, &PACE, 50).await.is_none());
    claim(&store, NOW_MS + 10_000, &PACE, 50)
        .await
        .expect("after the wait");
    let (failures, until) = store
        .popularity_call_failed("hatena", "w1", "bad\u{0}json", |failures| {
            NOW_MS + 10_000 + 5_000 * (1 << failures)
        })
        .await
        .unwrap();
    assert_eq!((failures, until), (2, NOW_MS + 30_000));
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.last_error.as_deref(), Some("badjson"));
    assert!(
        store.popularity_of(&ids).await.unwrap().is_empty(),
        "a failure stores no count"
    );
    claim(&store, NOW_MS + 30_000, &PACE, 50).await.unwrap();
    store
        .save_popularity("hatena", "w1", &[(ids[0], 2)], T, NOW_MS + 35_000)
        .await
        .unwrap();
    let state = store
        .popularity_source_state("hatena")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((state.failures, state.last_error), (0, None));
    assert_eq!(state.not_before_ms, NOW_MS + 35_000);
});

on_both_engines!(
    the_hot_list_orders_by_count_then_date_within_the_users_items,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (_, news) = follow(&store, ann, "https://news.example/feed").await;
        let (_, blog) = follow(&store, ann, "https://blog.example/feed").await;
        let (_, other) = follow(&store, bob, "https://other.example/feed").await;
        let n = add_items(
            &store,
            news,
            &[
                item("n1", "https://news.example/1", T - 100),
                item("n2", "https://news.example/2", T - 200),
                item("n3", "https://news.example/3", T - 300),
                item("n4", "https://news.example/4", T - 10 * 86_400),
                item("n5", "https://news.example/5", T - 400),
            ],
        )
        .await;
        let b = add_items(
            &store,
            blog,
            &[item("b1", "https://blog.example/1", T - 50)],
        )
        .await;
        let o = add_items(
            &store,
            other,
            &[item("o1", "https://other.example/1", T - 50)],
        )
        .await;
        // n5 stays unknown: it is not listed, not even with min_count 0.
        let counts = [
            (n[0], 5),
            (n[1], 40),
            (n[2], 5),
            (n[3], 99),
            (b[0], 0),
            (o[0], 1000),
        ];
        store
            .save_popularity("hatena", "w", &counts, T, 0)
            .await
            .unwrap();

        let week = |limit: i64| HotQuery {
            listing: ItemQuery {
                filter: ItemFilter::All,
                since: Some(T - 7 * 86_400),
                limit,
                ..ItemQuery::default()
            },
            min_count: 0,
            cursor: None,
        };
        let page = store.hot_items(ann, &week(50)).await.unwrap();
        let listed: Vec<i64> = page.items.iter().map(|h| h.item.id).collect();
        // 40, then the two 5s newest first, then the 0; n4 is outside the week, bob's is not ann's.
        assert_eq!(listed, [n[1], n[0], n[2], b[0]]);
        assert_eq!(page.items[0].popularity.count, 40);
        assert_eq!(page.items[0].popularity.fetched_at, T);
        assert!(page.next_cursor.is_none());

        // Pages of one follow each other without gaps or repeats.
        let mut paged = Vec::new();
        let mut query = week(1);
        loop {
            let page = store.hot_items(ann, &query).await.unwrap();
            paged.extend(page.items.iter().map(|h| h.item.id));
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => break,
            }
        }
        assert_eq!(paged, listed);

        // A minimum count; a month's window; one feed; unread and starred.
        let mut query = week(50);
        query.min_count = 5;
        let listed = hot_ids(&store, ann, &query).await;
        assert_eq!(listed, [n[1], n[0], n[2]]);
        query.listing.since = Some(T - 30 * 86_400);
        let listed = hot_ids(&store, ann, &query).await;
        assert_eq!(listed, [n[3], n[1], n[0], n[2]]);
        let mut query = week(50);
        query.listing.feed_id = Some(blog);
        let listed = hot_ids(&store, ann, &query).await;
        assert_eq!(listed, [b[0]]);
        store
            .set_item_state(ann, n[1], Some(true), Some(true))
            .await
            .unwrap();
        let mut query = week(50);
        query.listing.filter = ItemFilter::Unread;
        let listed = hot_ids(&store, ann, &query).await;
        assert_eq!(listed, [n[0], n[2], b[0]]);
        query.listing.filter = ItemFilter::Starred;
        let listed = hot_ids(&store, ann, &query).await;
        assert_eq!(listed, [n[1]]);
        // Another user's feed is not found.
        let mut query = week(50);
        query.listing.feed_id = Some(other);
        assert!(store.hot_items(ann, &query).await.is_err());
    }
);
