//! Reading on both engines: listings and their cursors, the read watermark and the maintained
//! unread counters, mark-read with and without "before", bookmarks, preferences, updated
//! since.

use tidings_testkit::{add_user as user, follow as subscribe, on_both_engines};

use std::collections::HashSet;

use tidings_store::{
    ItemFilter, ItemOrder, ItemQuery, MarkReadScope, NewItem, PreferenceChanges, Store, StoreError,
};

fn item(guid: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://example.com/{guid}")),
        title: Some(format!("Item {guid}")),
        content: Some(format!("<p>content {guid}</p>")),
        summary: Some(format!("summary {guid}")),
        published: Some(published),
        ..NewItem::default()
    }
}

/// Inserts items `from..to` of a feed, item n published at `base + n * 60`.
async fn add_items(store: &Store, feed_id: i64, prefix: &str, range: std::ops::Range<i64>) {
    let base = 1_700_000_000;
    let items: Vec<NewItem> = range
        .map(|n| item(&format!("{prefix}-{n}"), base + n * 60))
        .collect();
    store.upsert_items(feed_id, &items, base).await.unwrap();
}

fn query(filter: ItemFilter) -> ItemQuery {
    ItemQuery {
        filter,
        limit: 200,
        ..ItemQuery::default()
    }
}

/// Every item of the user's listing, page after page.
async fn all_pages(store: &Store, user_id: i64, mut q: ItemQuery) -> Vec<i64> {
    let mut ids = Vec::new();
    loop {
        let page = store.list_items(user_id, &q).await.unwrap();
        ids.extend(page.items.iter().map(|i| i.id));
        match page.next_cursor {
            Some(cursor) => q.cursor = Some(cursor),
            None => return ids,
        }
    }
}

/// The maintained counters agree with the items the listing calls unread, per feed.
async fn assert_counts_consistent(store: &Store, user_id: i64) {
    let counts = store.unread_counts(user_id).await.unwrap();
    for count in &counts.subscriptions {
        let listed = all_pages(
            store,
            user_id,
            ItemQuery {
                feed_id: Some(count.feed_id),
                ..query(ItemFilter::All)
            },
        )
        .await;
        let mut unread = 0;
        for id in listed {
            if !store.item(user_id, id).await.unwrap().is_read {
                unread += 1;
            }
        }
        assert_eq!(count.unread, unread, "feed {}", count.feed_id);
        let unread_listed = all_pages(
            store,
            user_id,
            ItemQuery {
                feed_id: Some(count.feed_id),
                ..query(ItemFilter::Unread)
            },
        )
        .await;
        assert_eq!(unread_listed.len() as i64, unread, "feed {}", count.feed_id);
        let sub = store
            .subscription(user_id, count.subscription_id)
            .await
            .unwrap();
        assert_eq!(sub.unread_count, unread);
    }
}

fn unread_of(counts: &tidings_store::UnreadCounts, feed_id: i64) -> i64 {
    counts
        .subscriptions
        .iter()
        .find(|c| c.feed_id == feed_id)
        .map(|c| c.unread)
        .unwrap()
}

on_both_engines!(counters_follow_states_watermarks_and_deletions, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed) = subscribe(&store, ann, "https://a.example/feed").await;
    add_items(&store, feed, "a", 0..10).await;
    // Bob subscribes after the items exist: his counter starts from a count.
    subscribe(&store, bob, "https://a.example/feed").await;
    let counts = store.unread_counts(ann).await.unwrap();
    assert_eq!(unread_of(&counts, feed), 10);
    assert_eq!(
        unread_of(&store.unread_counts(bob).await.unwrap(), feed),
        10
    );

    let ids = store.feed_item_ids(feed).await.unwrap(); // newest first
    store
        .set_item_state(ann, ids[0], Some(true), None)
        .await
        .unwrap();
    // Idempotent.
    store
        .set_item_state(ann, ids[0], Some(true), None)
        .await
        .unwrap();
    store
        .set_item_state(ann, ids[1], None, Some(true))
        .await
        .unwrap();
    let counts = store.unread_counts(ann).await.unwrap();
    assert_eq!(unread_of(&counts, feed), 9);
    assert_eq!(counts.starred, 1);
    assert_eq!(
        unread_of(&store.unread_counts(bob).await.unwrap(), feed),
        10,
        "states are per user"
    );
    assert_counts_consistent(&store, ann).await;

    // Mark read before the 6th item's date: items 0..=4 (ids[9]..=ids[5]) become read.
    let sixth = store.item(ann, ids[4]).await.unwrap().published_at;
    let marked = store
        .mark_read(ann, &MarkReadScope::Feed(feed), Some(sixth))
        .await
        .unwrap();
    assert_eq!(marked, 5);
    assert!(store.item(ann, ids[5]).await.unwrap().is_read);
    assert!(!store.item(ann, ids[4]).await.unwrap().is_read);
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 4);
    assert_counts_consistent(&store, ann).await;

    // Unread again under the watermark, then starred: starring keeps it unread.
    store
        .set_item_state(ann, ids[9], Some(false), None)
        .await
        .unwrap();
    store
        .set_item_state(ann, ids[8], None, Some(true))
        .await
        .unwrap();
    assert!(store.item(ann, ids[8]).await.unwrap().is_read);
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 5);
    assert_counts_consistent(&store, ann).await;

    // A late item dated under the watermark arrives: it is unread, not hidden.
    store
        .upsert_items(feed, &[item("late", 1_700_000_000 + 30)], 1_800_000_000)
        .await
        .unwrap();
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 6);
    assert_counts_consistent(&store, ann).await;

    // Everything read; an old watermark never moves back.
    let marked = store
        .mark_read(ann, &MarkReadScope::All, None)
        .await
        .unwrap();
    assert_eq!(marked, 6);
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 0);
    let marked = store
        .mark_read(ann, &MarkReadScope::Feed(feed), Some(1))
        .await
        .unwrap();
    assert_eq!(marked, 0);
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 0);
    assert_counts_consistent(&store, ann).await;
    let page = store
        .list_items(ann, &query(ItemFilter::Unread))
        .await
        .unwrap();
    assert!(page.items.is_empty());

    // Deleting items (retention keeps starred ones) keeps every counter exact.
    add_items(&store, feed, "b", 20..25).await;
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 5);
    let deleted = store
        .delete_expired_items(1_900_000_000, 0, 1_900_000_000)
        .await
        .unwrap();
    assert!(deleted > 0);
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 0);
    // Bob read nothing: the two items kept because Ann starred them are unread for him.
    assert_eq!(unread_of(&store.unread_counts(bob).await.unwrap(), feed), 2);
    assert_counts_consistent(&store, ann).await;
    assert_counts_consistent(&store, bob).await;
});

on_both_engines!(mark_read_by_ids_group_and_isolation, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let eve = user(&store, "eve").await;
    let group = store.create_group(ann, "News").await.unwrap();
    let (sub_a, feed_a) = subscribe(&store, ann, "https://a.example/feed").await;
    let (_, feed_b) = subscribe(&store, ann, "https://b.example/feed").await;
    store
        .update_subscription(
            ann,
            sub_a,
            &tidings_store::SubscriptionChanges {
                group_id: Some(group.id),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    add_items(&store, feed_a, "a", 0..5).await;
    add_items(&store, feed_b, "b", 0..5).await;
    let a_ids = store.feed_item_ids(feed_a).await.unwrap();
    let b_ids = store.feed_item_ids(feed_b).await.unwrap();

    // Ids of another user's feed are ignored, not marked.
    let (_, eve_feed) = subscribe(&store, eve, "https://e.example/feed").await;
    add_items(&store, eve_feed, "e", 0..2).await;
    let eve_ids = store.feed_item_ids(eve_feed).await.unwrap();
    let marked = store
        .mark_read(
            ann,
            &MarkReadScope::Ids(vec![b_ids[0], b_ids[1], b_ids[1], eve_ids[0]]),
            None,
        )
        .await
        .unwrap();
    assert_eq!(marked, 2);
    assert!(!store.item(eve, eve_ids[0]).await.unwrap().is_read);
    assert!(matches!(
        store.item(ann, eve_ids[0]).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store
            .mark_read(ann, &MarkReadScope::Feed(eve_feed), None)
            .await,
        Err(StoreError::NotFound(_))
    ));
    let eve_group = store.default_group_id(eve).await.unwrap();
    assert!(matches!(
        store
            .mark_read(ann, &MarkReadScope::Group(eve_group), None)
            .await,
        Err(StoreError::NotFound(_))
    ));

    let marked = store
        .mark_read(ann, &MarkReadScope::Group(group.id), None)
        .await
        .unwrap();
    assert_eq!(marked, 5);
    let counts = store.unread_counts(ann).await.unwrap();
    assert_eq!(unread_of(&counts, feed_a), 0);
    assert_eq!(unread_of(&counts, feed_b), 3);
    assert!(store.item(ann, a_ids[4]).await.unwrap().is_read);
    assert_counts_consistent(&store, ann).await;

    // Group and feed scopes of listings.
    let in_group = all_pages(
        &store,
        ann,
        ItemQuery {
            group_id: Some(group.id),
            ..query(ItemFilter::All)
        },
    )
    .await;
    assert_eq!(in_group, a_ids);
    assert!(matches!(
        store
            .list_items(
                ann,
                &ItemQuery {
                    group_id: Some(eve_group),
                    ..query(ItemFilter::All)
                }
            )
            .await,
        Err(StoreError::NotFound(_))
    ));
});

on_both_engines!(pages_neither_skip_nor_repeat_while_items_arrive, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed_a) = subscribe(&store, ann, "https://a.example/feed").await;
    let (_, feed_b) = subscribe(&store, ann, "https://b.example/feed").await;
    add_items(&store, feed_a, "a", 0..60).await;
    add_items(&store, feed_b, "b", 0..60).await; // same dates as feed a: ties broken by id
    let before: HashSet<i64> = all_pages(&store, ann, query(ItemFilter::All))
        .await
        .into_iter()
        .collect();
    assert_eq!(before.len(), 120);

    for (filter, order) in [
        (ItemFilter::All, ItemOrder::NewestFirst),
        (ItemFilter::Unread, ItemOrder::NewestFirst),
        (ItemFilter::All, ItemOrder::OldestFirst),
        (ItemFilter::Unread, ItemOrder::OldestFirst),
    ] {
        let mut q = ItemQuery {
            filter,
            order,
            limit: 25,
            ..ItemQuery::default()
        };
        let mut seen = Vec::new();
        let mut round = 0;
        loop {
            let page = store.list_items(ann, &q).await.unwrap();
            assert!(page.items.len() <= 25);
            seen.extend(page.items.iter().map(|i| i.id));
            // New items arrive between pages: newer than everything, and dated in the middle.
            round += 1;
            let prefix = format!("new-{filter:?}-{order:?}-{round}");
            add_items(&store, feed_a, &prefix, 1000..1002).await;
            store
                .upsert_items(
                    feed_b,
                    &[item(&format!("{prefix}-mid"), 1_700_000_000 + 30 * 60 + 7)],
                    1_700_000_000,
                )
                .await
                .unwrap();
            match page.next_cursor {
                Some(cursor) => q.cursor = Some(cursor),
                None => break,
            }
        }
        let unique: HashSet<i64> = seen.iter().copied().collect();
        assert_eq!(
            unique.len(),
            seen.len(),
            "{filter:?} {order:?}: repeated items"
        );
        assert!(
            before.is_subset(&unique),
            "{filter:?} {order:?}: skipped items"
        );
        let dates: Vec<(i64, i64)> = {
            let mut v = Vec::new();
            for id in &seen {
                v.push((store.item(ann, *id).await.unwrap().published_at, *id));
            }
            v
        };
        let mut sorted = dates.clone();
        sorted.sort();
        if order == ItemOrder::NewestFirst {
            sorted.reverse();
        }
        assert_eq!(dates, sorted, "{filter:?} {order:?}: out of order");
    }

    // since / until and the starred filter.
    let base = 1_700_000_000;
    let page = store
        .list_items(
            ann,
            &ItemQuery {
                feed_id: Some(feed_b),
                since: Some(base + 10 * 60),
                until: Some(base + 20 * 60),
                ..query(ItemFilter::All)
            },
        )
        .await
        .unwrap();
    assert_eq!(page.items.len(), 10);
    assert!(page.next_cursor.is_none());
    let some = *before.iter().next().unwrap();
    store
        .set_item_state(ann, some, None, Some(true))
        .await
        .unwrap();
    let starred = store
        .list_items(ann, &query(ItemFilter::Starred))
        .await
        .unwrap();
    assert_eq!(
        starred.items.iter().map(|i| i.id).collect::<Vec<_>>(),
        vec![some]
    );
    assert!(starred.items[0].is_starred);
});

on_both_engines!(bookmarks_survive_item_and_feed_deletion, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let eve = user(&store, "eve").await;
    let (sub, feed) = subscribe(&store, ann, "https://a.example/feed").await;
    store
        .update_subscription(
            ann,
            sub,
            &tidings_store::SubscriptionChanges {
                title: Some(Some("My feed".into())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    add_items(&store, feed, "a", 0..2).await;
    let ids = store.feed_item_ids(feed).await.unwrap();
    let (first, created) = store.create_bookmark(ann, ids[0]).await.unwrap();
    assert!(created);
    let (again, created) = store.create_bookmark(ann, ids[0]).await.unwrap();
    assert!(!created);
    assert_eq!(again.id, first.id);
    assert_eq!(first.feed_title.as_deref(), Some("My feed"));
    assert_eq!(first.content.as_deref(), Some("<p>content a-1</p>"));
    let (second, _) = store.create_bookmark(ann, ids[1]).await.unwrap();
    assert!(matches!(
        store.create_bookmark(eve, ids[0]).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.bookmark(eve, first.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete_bookmark(eve, first.id).await,
        Err(StoreError::NotFound(_))
    ));

    // The item goes (retention would keep it; a direct delete stands for any other way).
    store
        .execute_raw(&format!("DELETE FROM items WHERE id = {}", ids[0]))
        .await
        .unwrap();
    let kept = store.bookmark(ann, first.id).await.unwrap();
    assert_eq!(kept.item_id, None);
    assert_eq!(kept.title, first.title);
    assert_eq!(kept.url, first.url);
    // Then the whole feed.
    store.unsubscribe(ann, sub).await.unwrap();
    store
        .execute_raw(&format!("DELETE FROM feeds WHERE id = {feed}"))
        .await
        .unwrap();
    let listed = store.list_bookmarks(ann).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|b| b.item_id.is_none()));
    assert_eq!(
        listed.iter().find(|b| b.id == second.id).unwrap().title,
        second.title
    );
    store.delete_bookmark(ann, first.id).await.unwrap();
    assert_eq!(store.list_bookmarks(ann).await.unwrap().len(), 1);
});

on_both_engines!(preferences_are_validated, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let defaults = store.preferences(ann).await.unwrap();
    assert_eq!(defaults.theme, "auto");
    assert_eq!(defaults.page_size, 50);
    let changed = store
        .update_preferences(
            ann,
            &PreferenceChanges {
                theme: Some("dark".into()),
                page_size: Some(100),
                show_images: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.theme, "dark");
    assert_eq!(changed.page_size, 100);
    assert!(!changed.show_images);
    assert!(changed.mark_read_on_open);
    assert!(!changed.mark_read_on_scroll, "off until chosen");
    let scrolled = PreferenceChanges {
        mark_read_on_scroll: Some(true),
        ..Default::default()
    };
    assert!(
        store
            .update_preferences(ann, &scrolled)
            .await
            .unwrap()
            .mark_read_on_scroll
    );
    for bad in [
        PreferenceChanges {
            theme: Some("neon".into()),
            ..Default::default()
        },
        PreferenceChanges {
            page_size: Some(5),
            ..Default::default()
        },
        PreferenceChanges {
            default_view: Some("magazine".into()),
            ..Default::default()
        },
        PreferenceChanges {
            language: Some("ja; DROP".into()),
            ..Default::default()
        },
        PreferenceChanges {
            language: Some(String::new()),
            ..Default::default()
        },
    ] {
        assert!(matches!(
            store.update_preferences(ann, &bad).await,
            Err(StoreError::Invalid(_))
        ));
    }
    assert_eq!(store.preferences(ann).await.unwrap().theme, "dark");
    // The UI's language (issue 34): `auto` until chosen, kept as given, the rest unchanged.
    assert_eq!(defaults.language, "auto");
    let chosen = store
        .update_preferences(
            ann,
            &PreferenceChanges {
                language: Some("zh-Hans".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(chosen.language, "zh-Hans");
    assert_eq!(chosen.theme, "dark");
    assert_eq!(store.preferences(ann).await.unwrap().language, "zh-Hans");
});

on_both_engines!(updated_feeds_since_a_time, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (sub_a, feed_a) = subscribe(&store, ann, "https://a.example/feed").await;
    let (_, feed_b) = subscribe(&store, ann, "https://b.example/feed").await;
    store
        .upsert_items(feed_a, &[item("a1", 100)], 1_000)
        .await
        .unwrap();
    store
        .upsert_items(feed_b, &[item("b1", 100)], 1_000)
        .await
        .unwrap();
    store
        .upsert_items(feed_a, &[item("a2", 200), item("a3", 300)], 2_000)
        .await
        .unwrap();
    let updated = store.updated_feeds(ann, 1_500).await.unwrap();
    assert_eq!(updated.len(), 1);
    assert_eq!(updated[0].subscription_id, sub_a);
    assert_eq!(updated[0].new_items, 2);
    assert_eq!(updated[0].last_arrived_at, 2_000);
    assert_eq!(updated[0].unread, 3);
    assert_eq!(store.updated_feeds(ann, 500).await.unwrap().len(), 2);
    assert!(store.updated_feeds(ann, 2_000).await.unwrap().is_empty());
});

/// A transaction open on a second connection to the test database, held while the store works.
/// On SQLite it is `BEGIN IMMEDIATE`, taking the write lock as a mark-read or a fetch would.
enum RawTx {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl RawTx {
    async fn begin(db: &tidings_testkit::TestDb) -> RawTx {
        use sqlx::Connection;
        let url = db.url();
        let mut tx = if url.starts_with("sqlite:") {
            RawTx::Sqlite(sqlx::SqliteConnection::connect(&url).await.unwrap())
        } else {
            RawTx::Postgres(sqlx::PgConnection::connect(&url).await.unwrap())
        };
        let begin = match tx {
            RawTx::Sqlite(_) => "BEGIN IMMEDIATE",
            RawTx::Postgres(_) => "BEGIN",
        };
        tx.run(begin).await;
        tx
    }

    async fn run(&mut self, sql: &str) {
        let sql = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()));
        match self {
            RawTx::Sqlite(conn) => sql.execute(conn).await.map(drop),
            RawTx::Postgres(conn) => sql.execute(conn).await.map(drop),
        }
        .expect("raw statement");
    }
}

/// How long the store gets to reach the lock the open transaction holds.
const LET_IT_BLOCK: std::time::Duration = std::time::Duration::from_millis(400);

on_both_engines!(an_item_arriving_during_a_mark_read_is_not_hidden, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (subscription, feed) = subscribe(&store, ann, "https://a.example/feed").await;
    let base = 1_700_000_000;
    add_items(&store, feed, "a", 0..2).await;

    // A mark-read is moving the watermark far ahead and has not committed yet...
    let mut marking = RawTx::begin(db).await;
    marking
        .run(&format!(
            "UPDATE subscriptions SET read_before = {} WHERE id = {subscription}",
            base + 10_000
        ))
        .await;
    // ...when a fetch brings a late item dated under that watermark.
    let fetch = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .upsert_items(feed, &[item("late", base + 5_000)], base + 20_000)
                .await
        }
    });
    tokio::time::sleep(LET_IT_BLOCK).await;
    marking.run("COMMIT").await;
    fetch.await.unwrap().unwrap();

    // The user never saw the late item: it stays unread, and the counter says so.
    let unread = all_pages(&store, ann, query(ItemFilter::Unread)).await;
    assert_eq!(unread.len(), 1, "the late item is unread: {unread:?}");
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 1);
    assert_counts_consistent(&store, ann).await;
});

on_both_engines!(a_mark_read_waits_for_an_item_being_stored, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = subscribe(&store, ann, "https://a.example/feed").await;
    let base = 1_700_000_000;
    add_items(&store, feed, "a", 0..2).await;

    // A fetch is storing a new item and has not committed yet...
    let mut fetching = RawTx::begin(db).await;
    fetching
        .run(&format!(
            "INSERT INTO items (feed_id, identity_key, title, published_at, fetched_at,
                                changed_at, content_hash)
             VALUES ({feed}, 'g:in-flight', 'In flight', {p}, {p}, {p}, 'x')",
            p = base + 5_000
        ))
        .await;
    // ...when the user marks the feed read.
    let marking = tokio::spawn({
        let store = store.clone();
        async move { store.mark_read(ann, &MarkReadScope::Feed(feed), None).await }
    });
    tokio::time::sleep(LET_IT_BLOCK).await;
    fetching.run("COMMIT").await;
    marking.await.unwrap().unwrap();

    // The mark-read waited for the item and then took in everything the feed had, the item
    // included; and the counter matches the items' states.
    assert!(
        all_pages(&store, ann, query(ItemFilter::Unread))
            .await
            .is_empty()
    );
    assert_eq!(unread_of(&store.unread_counts(ann).await.unwrap(), feed), 0);
    assert_counts_consistent(&store, ann).await;
});

on_both_engines!(an_items_thumbnail_is_stored_listed_and_updated, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed_id) = subscribe(&store, ann, "https://videos.example/feed").await;
    let still = "https://i.ytimg.example/vi/1/hqdefault.jpg";
    let mut items = vec![
        NewItem {
            thumbnail_url: Some(still.into()),
            ..item("video", 1_700_000_000)
        },
        item("plain", 1_700_000_060),
    ];
    store
        .upsert_items(feed_id, &items, 1_700_000_100)
        .await
        .unwrap();
    let page = store
        .list_items(ann, &query(ItemFilter::All))
        .await
        .unwrap();
    let thumbnails: Vec<Option<&str>> = page
        .items
        .iter()
        .map(|i| i.thumbnail_url.as_deref())
        .collect();
    assert_eq!(thumbnails, [None, Some(still)], "newest first");
    let video = page.items[1].id;
    assert_eq!(
        store
            .item(ann, video)
            .await
            .unwrap()
            .thumbnail_url
            .as_deref(),
        Some(still)
    );
    // A new still is a change of the item; the same one is not.
    let counts = store
        .upsert_items(feed_id, &items, 1_700_000_200)
        .await
        .unwrap();
    assert_eq!((counts.updated, counts.unchanged), (0, 2));
    items[0].thumbnail_url = Some("https://i.ytimg.example/vi/1/maxres.jpg".into());
    let counts = store
        .upsert_items(feed_id, &items, 1_700_000_300)
        .await
        .unwrap();
    assert_eq!((counts.updated, counts.unchanged), (1, 1));
    assert_eq!(
        store
            .item(ann, video)
            .await
            .unwrap()
            .thumbnail_url
            .as_deref(),
        Some("https://i.ytimg.example/vi/1/maxres.jpg")
    );
});

// A listing's bodies (`include=content`) are read by item id with each item's subscription
// checked (issue 38): the user's items come with their content, another user's items are
// left out whatever ids are asked for, and an id that names nothing is ignored.
on_both_engines!(listing_bodies_are_the_users_items_only, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, ann_feed) = subscribe(&store, ann, "https://ann.example/feed").await;
    let (_, bob_feed) = subscribe(&store, bob, "https://bob.example/feed").await;
    add_items(&store, ann_feed, "a", 0..3).await;
    add_items(&store, bob_feed, "b", 0..3).await;
    let ann_ids = all_pages(&store, ann, query(ItemFilter::All)).await;
    let bob_ids = all_pages(&store, bob, query(ItemFilter::All)).await;
    assert_eq!((ann_ids.len(), bob_ids.len()), (3, 3));
    let mut asked: Vec<i64> = ann_ids.iter().chain(&bob_ids).copied().collect();
    asked.push(i64::MAX);
    let bodies = store.item_bodies(ann, &asked).await.unwrap();
    let mut got: Vec<i64> = bodies.keys().copied().collect();
    got.sort();
    let mut expected = ann_ids.clone();
    expected.sort();
    assert_eq!(got, expected, "ann's items only");
    for id in &ann_ids {
        let content = bodies[id].content.as_deref().unwrap_or("");
        assert!(content.starts_with("<p>content a-"), "{content}");
    }
    assert!(store.item_bodies(bob, &ann_ids).await.unwrap().is_empty());
});
