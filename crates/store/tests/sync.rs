//! The sync APIs' queries on both engines: every filter and order of a sync listing, counts,
//! keyset paging while items arrive, states of many items, item labels, Fever key digests.

mod common;

use common::{add_user as user, follow};

use tidings_store::{ApiKeyScope, MarkReadScope, NewItem, Store, StoreError, SyncOrder, SyncQuery};

const BASE: i64 = 1_700_000_000;

fn item(guid: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(format!("Item {guid}")),
        content: Some(format!("<p>{guid}</p>")),
        published: Some(published),
        ..NewItem::default()
    }
}

/// Items `range` of a feed, item n published at `BASE + n * 60`.
async fn add_items(store: &Store, feed_id: i64, prefix: &str, range: std::ops::Range<i64>) {
    let items: Vec<NewItem> = range
        .map(|n| item(&format!("{prefix}-{n}"), BASE + n * 60))
        .collect();
    store.upsert_items(feed_id, &items, BASE).await.unwrap();
}

fn all(order: SyncOrder) -> SyncQuery {
    SyncQuery {
        order,
        limit: 1000,
        ..SyncQuery::default()
    }
}

async fn ids(store: &Store, user_id: i64, query: &SyncQuery) -> Vec<i64> {
    let items = store.sync_items(user_id, query).await.unwrap();
    let only_ids: Vec<i64> = store
        .sync_item_ids(user_id, query)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let from_items: Vec<i64> = items.iter().map(|i| i.item.id).collect();
    assert_eq!(from_items, only_ids, "items and ids agree");
    from_items
}

on_both_engines!(filters_orders_offsets_and_counts, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed_a) = follow(&store, ann, "https://a.example/feed").await;
    let (sub_b, feed_b) = follow(&store, ann, "https://b.example/feed").await;
    let (_, feed_c) = follow(&store, bob, "https://c.example/feed").await;
    let group = store.create_group(ann, "Tech").await.unwrap().id;
    store
        .update_subscription(
            ann,
            sub_b,
            &tidings_store::SubscriptionChanges {
                group_id: Some(group),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    add_items(&store, feed_a, "a", 0..6).await;
    add_items(&store, feed_b, "b", 3..5).await;
    add_items(&store, feed_c, "c", 0..3).await;

    let newest = ids(&store, ann, &all(SyncOrder::NewestFirst)).await;
    assert_eq!(newest.len(), 8, "only ann's feeds");
    let oldest = ids(&store, ann, &all(SyncOrder::OldestFirst)).await;
    assert_eq!(oldest, newest.iter().rev().copied().collect::<Vec<_>>());
    let by_id = ids(&store, ann, &all(SyncOrder::IdAscending)).await;
    let mut sorted = by_id.clone();
    sorted.sort();
    assert_eq!(by_id, sorted);
    let mut descending = ids(&store, ann, &all(SyncOrder::IdDescending)).await;
    descending.reverse();
    assert_eq!(descending, by_id);
    let whole = store
        .sync_items(ann, &all(SyncOrder::OldestFirst))
        .await
        .unwrap();
    assert_eq!(whole[0].item.content.as_deref(), Some("<p>a-0</p>"));
    assert_eq!(whole[0].feed_url, "https://a.example/feed");

    let count = |q: SyncQuery| {
        let store = store.clone();
        async move { store.count_sync_items(ann, &q).await.unwrap() }
    };
    assert_eq!(count(all(SyncOrder::NewestFirst)).await, 8);
    let in_feed = SyncQuery {
        feed_id: Some(feed_b),
        ..all(SyncOrder::NewestFirst)
    };
    assert_eq!(count(in_feed.clone()).await, 2);
    let in_group = SyncQuery {
        group_id: Some(group),
        ..all(SyncOrder::NewestFirst)
    };
    assert_eq!(
        ids(&store, ann, &in_group).await,
        ids(&store, ann, &in_feed).await
    );

    // Offset and limit page; the count ignores them.
    let page = SyncQuery {
        offset: 2,
        limit: 3,
        ..all(SyncOrder::OldestFirst)
    };
    assert_eq!(ids(&store, ann, &page).await, oldest[2..5].to_vec());
    assert_eq!(count(page).await, 8);

    // Time windows: from inclusive, before exclusive.
    let window = SyncQuery {
        published_from: Some(BASE + 60),
        published_before: Some(BASE + 3 * 60),
        ..all(SyncOrder::OldestFirst)
    };
    assert_eq!(store.sync_items(ann, &window).await.unwrap().len(), 2);
    // Id windows and lists (ids of other users are not listed).
    let above = SyncQuery {
        id_above: Some(by_id[5]),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(ids(&store, ann, &above).await, by_id[6..].to_vec());
    let below = SyncQuery {
        id_below: Some(by_id[2]),
        ..all(SyncOrder::IdDescending)
    };
    assert_eq!(ids(&store, ann, &below).await, vec![by_id[1], by_id[0]]);
    let bob_items = ids(&store, bob, &all(SyncOrder::IdAscending)).await;
    let listed = SyncQuery {
        ids: Some(vec![by_id[0], bob_items[0]]),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(ids(&store, ann, &listed).await, vec![by_id[0]]);
    let none = SyncQuery {
        ids: Some(vec![]),
        ..all(SyncOrder::IdAscending)
    };
    assert!(ids(&store, ann, &none).await.is_empty());
    let too_many = SyncQuery {
        ids: Some(vec![1; 1001]),
        ..all(SyncOrder::IdAscending)
    };
    assert!(matches!(
        store.sync_items(ann, &too_many).await,
        Err(StoreError::Invalid(_))
    ));

    // Read and starred, through ids, the watermark and explicit unread rows.
    store
        .set_items_state(ann, &[by_id[0], by_id[1], bob_items[0]], Some(true), None)
        .await
        .unwrap();
    store
        .set_items_state(ann, &[by_id[2]], None, Some(true))
        .await
        .unwrap();
    let read = SyncQuery {
        read: Some(true),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(ids(&store, ann, &read).await, vec![by_id[0], by_id[1]]);
    let unread = SyncQuery {
        read: Some(false),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(count(unread.clone()).await, 6);
    let starred = SyncQuery {
        starred: Some(true),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(ids(&store, ann, &starred).await, vec![by_id[2]]);
    let not_starred = SyncQuery {
        starred: Some(false),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(count(not_starred).await, 7);
    store
        .mark_read(ann, &MarkReadScope::Feed(feed_a), None)
        .await
        .unwrap();
    store
        .set_items_state(ann, &[by_id[3]], Some(false), None)
        .await
        .unwrap();
    let still_unread = ids(&store, ann, &unread).await;
    assert_eq!(
        still_unread.len(),
        3,
        "b's two and the one made unread again"
    );
    assert!(still_unread.contains(&by_id[3]));
    let counts = store.unread_counts(ann).await.unwrap();
    assert_eq!(
        counts.subscriptions.iter().map(|c| c.unread).sum::<i64>(),
        3
    );

    // Items per feed.
    let per_feed = store.count_items_per_feed(ann).await.unwrap();
    assert_eq!(per_feed, vec![(feed_a, 6), (feed_b, 2)]);
});

on_both_engines!(
    keyset_pages_neither_skip_nor_repeat_while_items_arrive,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://a.example/feed").await;
        add_items(&store, feed, "a", 0..10).await;
        for order in [SyncOrder::NewestFirst, SyncOrder::OldestFirst] {
            let before = ids(&store, ann, &all(order)).await;
            let mut seen = Vec::new();
            let mut query = SyncQuery {
                limit: 3,
                ..all(order)
            };
            let mut round = 0;
            loop {
                let page = store.sync_item_ids(ann, &query).await.unwrap();
                let Some(&(last_id, last_published)) = page.last() else {
                    break;
                };
                seen.extend(page.iter().map(|(id, _)| *id));
                query.after = Some((last_published, last_id));
                // New items between the first pages: newer, older and at the same time as the
                // page's end (in oldest-first order the newer ones are still ahead, and listed).
                round += 1;
                assert!(round < 20, "paging does not end");
                if round > 3 {
                    continue;
                }
                let prefix = format!("{order:?}-{round}");
                store
                    .upsert_items(
                        feed,
                        &[
                            item(&format!("{prefix}-new"), BASE + 100_000 + round),
                            item(&format!("{prefix}-old"), BASE - 100_000 - round),
                            item(&format!("{prefix}-same"), last_published),
                        ],
                        BASE,
                    )
                    .await
                    .unwrap();
            }
            let mut unique = seen.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), seen.len(), "no item repeated");
            for id in &before {
                assert!(
                    seen.contains(id),
                    "item {id} present at the start was skipped"
                );
            }
        }
    }
);

on_both_engines!(item_labels_are_per_user_renamed_and_deleted, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed) = follow(&store, ann, "https://a.example/feed").await;
    follow(&store, bob, "https://a.example/feed").await;
    let (_, other) = follow(&store, bob, "https://b.example/feed").await;
    add_items(&store, feed, "a", 0..3).await;
    add_items(&store, other, "b", 0..1).await;
    let items = ids(&store, ann, &all(SyncOrder::IdAscending)).await;
    let bobs_own = ids(
        &store,
        bob,
        &SyncQuery {
            feed_id: Some(other),
            ..all(SyncOrder::IdAscending)
        },
    )
    .await;

    assert!(
        store
            .add_item_label(ann, items[0], " Later ")
            .await
            .unwrap()
    );
    assert!(
        store.add_item_label(ann, items[0], "Later").await.unwrap(),
        "idempotent"
    );
    assert!(store.add_item_label(ann, items[1], "Later").await.unwrap());
    assert!(store.add_item_label(ann, items[1], "Work").await.unwrap());
    assert!(store.add_item_label(bob, items[2], "Later").await.unwrap());
    assert!(
        !store
            .add_item_label(ann, bobs_own[0], "Later")
            .await
            .unwrap(),
        "not ann's item"
    );
    assert!(matches!(
        store.add_item_label(ann, items[0], "  ").await,
        Err(StoreError::Invalid(_))
    ));

    let labelled = SyncQuery {
        label: Some("Later".into()),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(ids(&store, ann, &labelled).await, vec![items[0], items[1]]);
    assert_eq!(ids(&store, bob, &labelled).await, vec![items[2]]);
    assert_eq!(
        store.list_item_labels(ann).await.unwrap(),
        ["Later", "Work"]
    );
    assert_eq!(
        store.item_labels(ann, &items).await.unwrap(),
        vec![
            (items[0], "Later".to_string()),
            (items[1], "Later".to_string()),
            (items[1], "Work".to_string())
        ]
    );
    // Renaming onto an existing label merges them.
    store.rename_item_label(ann, "Work", "Later").await.unwrap();
    assert_eq!(store.list_item_labels(ann).await.unwrap(), ["Later"]);
    assert_eq!(store.item_labels(ann, &[items[1]]).await.unwrap().len(), 1);
    store
        .rename_item_label(ann, "Later", "Someday")
        .await
        .unwrap();
    store
        .remove_item_label(ann, items[0], "Someday")
        .await
        .unwrap();
    assert_eq!(
        store.item_labels(ann, &items).await.unwrap(),
        vec![(items[1], "Someday".to_string())]
    );
    assert_eq!(store.delete_item_label(ann, "Someday").await.unwrap(), 1);
    assert!(store.list_item_labels(ann).await.unwrap().is_empty());
    assert_eq!(
        store.list_item_labels(bob).await.unwrap(),
        ["Later"],
        "bob's untouched"
    );
});

on_both_engines!(fever_digests_sign_in_like_their_keys, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let key = store
        .create_api_key(
            ann,
            "app",
            "tdg_abc",
            "sha-of-key",
            ApiKeyScope::ReadWrite,
            None,
        )
        .await
        .unwrap();
    let digest = "0123456789abcdef0123456789ABCDEF";
    assert!(
        store
            .authenticate_fever_key(digest)
            .await
            .unwrap()
            .is_none()
    );
    store.set_api_key_fever_hash(key.id, digest).await.unwrap();
    let found = store
        .authenticate_fever_key(digest)
        .await
        .unwrap()
        .expect("signed in");
    assert_eq!(found.user.id, ann);
    assert_eq!(found.api_key, Some((key.id, ApiKeyScope::ReadWrite)));
    assert!(store.authenticate_fever_key("").await.unwrap().is_none());
    assert!(matches!(
        store.set_api_key_fever_hash(key.id, "not hex").await,
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        store.set_api_key_fever_hash(key.id + 100, digest).await,
        Err(StoreError::NotFound(_))
    ));
    // A revoked key's digest no longer signs in.
    store.revoke_api_key(ann, key.id).await.unwrap();
    assert!(
        store
            .authenticate_fever_key(digest)
            .await
            .unwrap()
            .is_none()
    );
});

on_both_engines!(newest_unread_item_per_feed, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed_a) = follow(&store, ann, "https://a.example/feed").await;
    let (_, feed_b) = follow(&store, ann, "https://b.example/feed").await;
    let (_, feed_c) = follow(&store, ann, "https://c.example/feed").await;
    follow(&store, bob, "https://a.example/feed").await;
    add_items(&store, feed_a, "a", 0..5).await;
    add_items(&store, feed_b, "b", 10..13).await;
    add_items(&store, feed_c, "c", 20..22).await;
    let newest_a = |ids: &[(i64, i64)]| ids.iter().find(|(f, _)| *f == feed_a).map(|(_, p)| *p);
    let all = store.newest_unread_per_feed(ann).await.unwrap();
    assert_eq!(
        all,
        vec![
            (feed_a, BASE + 4 * 60),
            (feed_b, BASE + 12 * 60),
            (feed_c, BASE + 21 * 60)
        ]
    );
    // The newest of a feed read: the newest still unread.
    let a_ids: Vec<i64> = ids(
        &store,
        ann,
        &SyncQuery {
            feed_id: Some(feed_a),
            ..all_newest()
        },
    )
    .await;
    store
        .mark_read(ann, &MarkReadScope::Ids(vec![a_ids[0]]), None)
        .await
        .unwrap();
    assert_eq!(
        newest_a(&store.newest_unread_per_feed(ann).await.unwrap()),
        Some(BASE + 3 * 60)
    );
    // A feed read through: gone; another user's state is theirs.
    store
        .mark_read(ann, &MarkReadScope::Feed(feed_c), None)
        .await
        .unwrap();
    let after = store.newest_unread_per_feed(ann).await.unwrap();
    assert!(after.iter().all(|(f, _)| *f != feed_c), "{after:?}");
    assert_eq!(
        newest_a(&store.newest_unread_per_feed(bob).await.unwrap()),
        Some(BASE + 4 * 60)
    );
});

fn all_newest() -> SyncQuery {
    all(SyncOrder::NewestFirst)
}
