//! Usage counts (F45) on both engines: one row per day, kind and key counted by upserts that
//! lose nothing under concurrency, clicks counted only on items the clicker follows, top lists
//! over a range of days, pruning by day, and a table that has nowhere to keep a person.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{NewItem, StoreError, UsageCount, UsageKind, unix_now, usage_day};

fn count(key: &str, count: i64) -> UsageCount {
    UsageCount {
        key: key.into(),
        count,
    }
}

on_both_engines!(uses_are_counted_per_day_kind_and_key, |db| {
    let store = db.migrated().await;
    let today = usage_day(unix_now());
    for _ in 0..3 {
        store
            .count_usage(today, UsageKind::Search, "rust")
            .await
            .unwrap();
    }
    store
        .count_usage(today, UsageKind::Search, "async")
        .await
        .unwrap();
    // The same key of another kind, and on another day, is another count.
    store
        .count_usage(today, UsageKind::TagView, "rust")
        .await
        .unwrap();
    for _ in 0..2 {
        store
            .count_usage(today - 1, UsageKind::Search, "async")
            .await
            .unwrap();
    }
    assert_eq!(
        store
            .top_usage(UsageKind::Search, today, today, 10)
            .await
            .unwrap(),
        [count("rust", 3), count("async", 1)]
    );
    assert_eq!(
        store
            .top_usage(UsageKind::Search, today - 1, today - 1, 10)
            .await
            .unwrap(),
        [count("async", 2)]
    );
    // Over both days the counts add up; equal counts go by key; the limit applies.
    assert_eq!(
        store
            .top_usage(UsageKind::Search, today - 1, today, 10)
            .await
            .unwrap(),
        [count("async", 3), count("rust", 3)]
    );
    assert_eq!(
        store
            .top_usage(UsageKind::Search, today - 1, today, 1)
            .await
            .unwrap(),
        [count("async", 3)]
    );
    assert_eq!(
        store
            .top_usage(UsageKind::TagView, today, today, 10)
            .await
            .unwrap(),
        [count("rust", 1)]
    );
    let totals = store.usage_totals(today, today).await.unwrap();
    assert_eq!(totals.get(&UsageKind::Search), Some(&4));
    assert_eq!(totals.get(&UsageKind::TagView), Some(&1));
    assert_eq!(totals.get(&UsageKind::Click), None);
    // Nothing counted on a day without use.
    assert!(
        store
            .top_usage(UsageKind::Search, today + 1, today + 5, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A very long key is cut, not refused.
    let long = "x".repeat(2000);
    store
        .count_usage(today, UsageKind::Search, &long)
        .await
        .unwrap();
    let top = store
        .top_usage(UsageKind::Search, today, today, 10)
        .await
        .unwrap();
    assert!(
        top.iter()
            .any(|c| c.key.chars().count() == tidings_store::MAX_USAGE_KEY_CHARS)
    );
});

on_both_engines!(concurrent_counts_lose_no_increment, |db| {
    let store = db.migrated().await;
    let today = usage_day(unix_now());
    // Many increments of one new key at once: the first ones race to insert the row.
    let mut tasks = Vec::new();
    for task in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..25 {
                store
                    .count_usage(today, UsageKind::Search, "hot")
                    .await
                    .unwrap();
                let own = format!("task {task}");
                if n % 5 == 0 {
                    store
                        .count_usage(today, UsageKind::Search, &own)
                        .await
                        .unwrap();
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let top = store
        .top_usage(UsageKind::Search, today, today, 100)
        .await
        .unwrap();
    assert_eq!(top[0], count("hot", 200));
    assert_eq!(top.len(), 9);
    assert!(top[1..].iter().all(|c| c.count == 5), "{top:?}");
});

on_both_engines!(clicks_count_on_items_the_clicker_follows, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    let now = unix_now();
    let items: Vec<NewItem> = (0..2)
        .map(|n| NewItem {
            guid: Some(format!("g{n}")),
            title: Some(format!("Story {n}")),
            url: Some(format!("https://news.example/{n}")),
            published: Some(now - n),
            ..NewItem::default()
        })
        .collect();
    store.upsert_items(feed, &items, now).await.unwrap();
    let ids = store.feed_item_ids(feed).await.unwrap();
    let (newest, older) = (ids[0], ids[1]);
    let today = usage_day(now);
    for _ in 0..2 {
        store.count_item_click(today, ann, older).await.unwrap();
    }
    store.count_item_click(today, ann, newest).await.unwrap();
    // Bob follows no feed with these items, and no item has this id: nothing is counted.
    for (user_id, item_id) in [(bob, newest), (ann, older + 1000)] {
        assert!(matches!(
            store.count_item_click(today, user_id, item_id).await,
            Err(StoreError::NotFound(_))
        ));
    }
    let top = store.top_clicked_items(today, today, 10).await.unwrap();
    assert_eq!(top.len(), 2, "{top:?}");
    assert_eq!((top[0].item_id, top[0].count), (older, 2));
    assert_eq!(top[0].title.as_deref(), Some("Story 1"));
    assert_eq!(top[0].url.as_deref(), Some("https://news.example/1"));
    assert!(top[0].exists);
    assert_eq!((top[1].item_id, top[1].count), (newest, 1));
    // An item deleted since keeps its count, without a title.
    store
        .execute_raw(&format!("DELETE FROM items WHERE id = {older}"))
        .await
        .unwrap();
    let top = store.top_clicked_items(today, today, 10).await.unwrap();
    assert_eq!((top[0].item_id, top[0].count), (older, 2));
    assert!(!top[0].exists);
    assert_eq!(top[0].title, None);
    assert_eq!(
        store.usage_totals(today, today).await.unwrap()[&UsageKind::Click],
        3
    );
});

on_both_engines!(pruning_deletes_the_days_before_the_first_kept, |db| {
    let store = db.migrated().await;
    let today = usage_day(unix_now());
    for day in [today - 100, today - 91, today - 90, today] {
        store
            .count_usage(day, UsageKind::Search, "rust")
            .await
            .unwrap();
        store
            .count_usage(day, UsageKind::TagView, "rust")
            .await
            .unwrap();
    }
    assert_eq!(store.prune_usage_counts(today - 90).await.unwrap(), 4);
    assert_eq!(store.prune_usage_counts(today - 90).await.unwrap(), 0);
    assert_eq!(
        store
            .top_usage(UsageKind::Search, today - 1000, today, 10)
            .await
            .unwrap(),
        [count("rust", 2)]
    );
    assert!(
        store
            .top_usage(UsageKind::Search, today - 1000, today - 91, 10)
            .await
            .unwrap()
            .is_empty()
    );
});

on_both_engines!(the_counts_table_has_no_room_for_a_person, |db| {
    let store = db.migrated().await;
    // Exactly the day, what was used and how often: no user, address, session or time.
    assert_eq!(
        store.table_columns("usage_counts").await.unwrap(),
        ["day", "kind", "key", "count"]
    );
    // The check itself sees columns (a table that does have a user).
    assert!(
        store
            .table_columns("item_states")
            .await
            .unwrap()
            .contains(&"user_id".to_string())
    );
});
