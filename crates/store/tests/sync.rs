//! The sync APIs' queries on both engines: every filter and order of a sync listing, counts,
//! keyset paging while items arrive, states of many items, item labels, Fever key digests.

use tidings_testkit::{
    ITEMS_BASE, TestDb, add_items, add_user as user, follow, follow_on_old_schema, numbered_item,
    on_both_engines,
};

use tidings_store::{ApiKeyScope, MarkReadScope, Store, StoreError, SyncIds, SyncOrder, SyncQuery};

const BASE: i64 = ITEMS_BASE;

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
        .map(|r| r.id)
        .collect();
    let from_items: Vec<i64> = items.iter().map(|i| i.sync_id).collect();
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

    phase_read_and_starred(&store, ann, (feed_a, feed_b), &by_id, &bob_items).await;
});

/// Read and starred, through ids, the watermark and explicit unread rows; then the items per
/// feed.
async fn phase_read_and_starred(
    store: &Store,
    ann: i64,
    (feed_a, feed_b): (i64, i64),
    by_id: &[i64],
    bob_items: &[i64],
) {
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
    assert_eq!(ids(store, ann, &read).await, vec![by_id[0], by_id[1]]);
    let unread = SyncQuery {
        read: Some(false),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(store.count_sync_items(ann, &unread).await.unwrap(), 6);
    let starred = SyncQuery {
        starred: Some(true),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(ids(store, ann, &starred).await, vec![by_id[2]]);
    let not_starred = SyncQuery {
        starred: Some(false),
        ..all(SyncOrder::IdAscending)
    };
    assert_eq!(store.count_sync_items(ann, &not_starred).await.unwrap(), 7);
    store
        .mark_read(ann, &MarkReadScope::Feed(feed_a), None)
        .await
        .unwrap();
    store
        .set_items_state(ann, &[by_id[3]], Some(false), None)
        .await
        .unwrap();
    let still_unread = ids(store, ann, &unread).await;
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
}

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
                let Some(&tidings_store::SyncRef {
                    id: last_id,
                    published_at: last_published,
                    ..
                }) = page.last()
                else {
                    break;
                };
                seen.extend(page.iter().map(|r| r.id));
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
                            numbered_item(&format!("{prefix}-new"), BASE + 100_000 + round),
                            numbered_item(&format!("{prefix}-old"), BASE - 100_000 - round),
                            numbered_item(&format!("{prefix}-same"), last_published),
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
    // A page of items carries the same labels, sorted, and its group's name (the Google
    // Reader API's categories), in the one statement of its listing.
    let page = store
        .sync_items(ann, &all(SyncOrder::IdAscending))
        .await
        .unwrap();
    let labels_of = |id: i64| {
        page.iter()
            .find(|r| r.item.id == id)
            .map(|r| r.labels.clone())
            .unwrap()
    };
    assert_eq!(labels_of(items[0]), ["Later"]);
    assert_eq!(labels_of(items[1]), ["Later", "Work"]);
    assert!(labels_of(items[2]).is_empty(), "bob's label is his own");
    let groups = store.list_groups(ann).await.unwrap();
    for row in &page {
        let group = groups.iter().find(|g| g.id == row.group_id).unwrap();
        assert_eq!(row.group_name, group.name);
    }
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

/// Fails with `what` unless `sql` (a `SELECT COUNT(*)`) counts nothing: the insert into a
/// column that must be 0 is refused otherwise.
async fn assert_none(store: &Store, sql: &str, what: &str) {
    store
        .execute_raw(&format!(
            "DROP TABLE IF EXISTS none_left;
             CREATE TABLE none_left (n BIGINT CHECK (n = 0));
             INSERT INTO none_left {sql};"
        ))
        .await
        .expect(what);
}

on_both_engines!(item_labels_leave_with_their_item_user_or_feed, |db| {
    // PostgreSQL's label rows have no foreign keys (version 55): triggers delete them with
    // their item, user or feed instead of the cascades (SQLite's keep their cascades).
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, feed) = follow(&store, ann, "https://a.example/feed").await;
    follow(&store, bob, "https://a.example/feed").await;
    let (_, other) = follow(&store, ann, "https://b.example/feed").await;
    add_items(&store, other, "b", 0..2).await;
    add_items(&store, feed, "a", 0..3).await;
    let of_feed = |feed_id| SyncQuery {
        feed_id: Some(feed_id),
        ..all(SyncOrder::IdAscending)
    };
    let items = ids(&store, ann, &of_feed(feed)).await;
    let others = ids(&store, ann, &of_feed(other)).await;
    for &id in &items {
        assert!(store.add_item_label(ann, id, "Later").await.unwrap());
        assert!(store.add_item_label(bob, id, "Later").await.unwrap());
    }
    for &id in &others {
        assert!(store.add_item_label(ann, id, "Else").await.unwrap());
    }

    // The newest item goes, and its labels with it: SQLite gives its id to the next item,
    // which must not inherit them.
    let newest = *items.iter().max().unwrap();
    store
        .execute_raw(&format!("DELETE FROM items WHERE id = {newest}"))
        .await
        .unwrap();
    add_items(&store, feed, "c", 0..1).await;
    let left: Vec<i64> = items.iter().copied().filter(|&id| id != newest).collect();
    let next: Vec<i64> = ids(&store, ann, &of_feed(feed))
        .await
        .into_iter()
        .filter(|id| !left.contains(id))
        .collect();
    assert_eq!(
        next.len(),
        1,
        "the new item (on SQLite, under the deleted one's id)"
    );
    for who in [ann, bob] {
        assert!(store.item_labels(who, &[newest]).await.unwrap().is_empty());
        assert!(store.item_labels(who, &next).await.unwrap().is_empty());
        assert_eq!(store.item_labels(who, &left).await.unwrap().len(), 2);
    }

    // A user's labels go with the user.
    store.delete_user(bob).await.unwrap();
    assert_none(
        &store,
        &format!("SELECT COUNT(*) FROM item_labels WHERE user_id = {bob}"),
        "no label of a deleted user is left",
    )
    .await;

    // A feed's items go with the feed (a cascade), and their labels with them.
    store
        .execute_raw(&format!("DELETE FROM feeds WHERE id = {other}"))
        .await
        .unwrap();
    assert_none(
        &store,
        "SELECT COUNT(*) FROM item_labels WHERE label = 'Else'",
        "no label of a deleted feed's item is left",
    )
    .await;
    assert_eq!(store.list_item_labels(ann).await.unwrap(), ["Later"]);
    assert_eq!(store.item_labels(ann, &left).await.unwrap().len(), 2);
});

on_both_engines!(
    a_label_put_while_its_item_is_deleted_is_not_left_behind,
    |db| {
        // Without a foreign key (PostgreSQL, version 55), a label written while another
        // transaction deletes its item must wait for it (the item's row is locked as the key
        // locked it; SQLite has one writer) and then find no item, rather than write a row for
        // an item that is gone.
        use sqlx::Connection;
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://a.example/feed").await;
        add_items(&store, feed, "a", 0..2).await;
        let items = ids(&store, ann, &all(SyncOrder::IdAscending)).await;
        let gone = items[0];
        let delete = format!("DELETE FROM items WHERE id = {gone}");
        let label = {
            let store = store.clone();
            move || tokio::spawn(async move { store.add_item_label(ann, gone, "Later").await })
        };
        let url = db.url();
        let added = if url.starts_with("sqlite:") {
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::raw_sql("BEGIN IMMEDIATE")
                .execute(&mut conn)
                .await
                .unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(delete))
                .execute(&mut conn)
                .await
                .unwrap();
            let added = label();
            tokio::time::sleep(std::time::Duration::from_millis(700)).await;
            sqlx::raw_sql("COMMIT").execute(&mut conn).await.unwrap();
            added.await.unwrap()
        } else {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(delete))
                .execute(&mut *tx)
                .await
                .unwrap();
            let added = label();
            tokio::time::sleep(std::time::Duration::from_millis(700)).await;
            assert!(!added.is_finished(), "the label waits for the deletion");
            tx.commit().await.unwrap();
            added.await.unwrap()
        };
        assert!(!added.unwrap(), "the item is gone");
        assert_none(
            &store,
            "SELECT COUNT(*) FROM item_labels",
            "no label of a deleted item is left",
        )
        .await;
        assert!(store.add_item_label(ann, items[1], "Later").await.unwrap());
    }
);

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
    // The digest is what a Fever client presents: no column may hold it as it is.
    assert_eq!(rows_holding(db, &store, "api_keys", digest).await, 0);
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

/// Counts the rows of `table` where any column, read as text and in lower case, equals
/// `value` in lower case: whether a secret is stored as it is.
async fn rows_holding(
    db: &tidings_testkit::TestDb,
    store: &Store,
    table: &str,
    value: &str,
) -> i64 {
    use sqlx::Connection;
    let value = value.to_ascii_lowercase();
    let mut found = 0;
    for column in store.table_columns(table).await.unwrap() {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE LOWER(CAST({column} AS TEXT)) = $1");
        let sql = sqlx::AssertSqlSafe(sql);
        let url = db.url();
        found += if url.starts_with("sqlite:") {
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let count: i64 = sqlx::query_scalar(sql)
                .bind(&value)
                .fetch_one(&mut conn)
                .await
                .unwrap();
            count
        } else {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let count: i64 = sqlx::query_scalar(sql)
                .bind(&value)
                .fetch_one(&mut conn)
                .await
                .unwrap();
            count
        };
    }
    found
}

on_both_engines!(stored_fever_digests_are_hashed_by_the_upgrade, |db| {
    let store = db.open().await;
    store.migrate_to(31).await.unwrap();
    // A key made before the upgrade: its md5 digests stored as they are, as version 31 did.
    let digest = "0123456789abcdef0123456789abcdef";
    let folded = "fedcba9876543210fedcba9876543210";
    store
        .execute_raw(&format!(
            "INSERT INTO users (id, username, username_key, password_hash, is_admin, created_at,
                                updated_at)
             VALUES (7, 'Ann', 'ann', 'h', FALSE, 0, 0);
             INSERT INTO api_keys (id, user_id, name, key_prefix, key_hash, scope, created_at,
                                   fever_hash, fever_hash_folded)
             VALUES (3, 7, 'app', 'tdg_abc', 'sha-of-key', 'read', 0, '{digest}', '{folded}');
             INSERT INTO api_keys (id, user_id, name, key_prefix, key_hash, scope, created_at)
             VALUES (4, 7, 'web', 'tdg_def', 'sha-of-other', 'read', 0)"
        ))
        .await
        .unwrap();
    assert_eq!(rows_holding(db, &store, "api_keys", digest).await, 1);
    store
        .migrate()
        .await
        .expect("the upgrade hashes the digests");
    assert_eq!(rows_holding(db, &store, "api_keys", digest).await, 0);
    assert_eq!(rows_holding(db, &store, "api_keys", folded).await, 0);
    // Both digests still sign in, in either case, and nothing else does.
    for presented in [digest, folded, &digest.to_ascii_uppercase()] {
        let found = store.authenticate_fever_key(presented).await.unwrap();
        assert_eq!(found.map(|a| a.api_key), Some(Some((3, ApiKeyScope::Read))));
    }
    let other = "00000000000000000000000000000000";
    assert!(store.authenticate_fever_key(other).await.unwrap().is_none());
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
    // As (feed, newest unread), by feed.
    let newest_unread_per_feed = async |user| {
        let mut feeds: Vec<(i64, i64)> = store
            .unread_feeds(user)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|f| Some((f.feed_id, f.newest_unread?)))
            .collect();
        feeds.sort_unstable();
        feeds
    };
    let newest_a = |ids: &[(i64, i64)]| ids.iter().find(|(f, _)| *f == feed_a).map(|(_, p)| *p);
    let all = newest_unread_per_feed(ann).await;
    // In the subscription list's order (here by URL), with their unread counts.
    let listed: Vec<(i64, i64)> = (store.unread_feeds(ann).await.unwrap())
        .iter()
        .map(|f| (f.feed_id, f.unread))
        .collect();
    assert_eq!(listed, vec![(feed_a, 5), (feed_b, 3), (feed_c, 2)]);
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
        newest_a(&newest_unread_per_feed(ann).await),
        Some(BASE + 3 * 60)
    );
    // A feed read through: gone; another user's state is theirs.
    store
        .mark_read(ann, &MarkReadScope::Feed(feed_c), None)
        .await
        .unwrap();
    let after = newest_unread_per_feed(ann).await;
    assert!(after.iter().all(|(f, _)| *f != feed_c), "{after:?}");
    assert_eq!(
        newest_a(&newest_unread_per_feed(bob).await),
        Some(BASE + 4 * 60)
    );
});

fn all_newest() -> SyncQuery {
    all(SyncOrder::NewestFirst)
}

/// Every one of the user's items in arrival order, as (sync id, item id, arrival time).
async fn arrivals(store: &Store, user_id: i64) -> Vec<(i64, i64, i64)> {
    let query = SyncQuery {
        ids_are: SyncIds::Arrival,
        ..all(SyncOrder::IdAscending)
    };
    let listed = ids(store, user_id, &query).await;
    let refs = store.sync_item_ids(user_id, &query).await.unwrap();
    assert_eq!(refs.len(), listed.len());
    let seen: Vec<(i64, i64, i64)> = refs
        .iter()
        .map(|r| (r.id, r.item_id, r.arrived_us))
        .collect();
    for pair in seen.windows(2) {
        assert!(pair[0].0 < pair[1].0, "sync ids rise: {seen:?}");
        assert!(pair[0].2 <= pair[1].2, "arrival times never fall: {seen:?}");
    }
    // Exactly the items the user can see, each once.
    let visible = store
        .count_sync_items(user_id, &SyncQuery::default())
        .await
        .unwrap();
    assert_eq!(
        seen.len() as i64,
        visible,
        "one arrival row per visible item"
    );
    seen
}

/// The sync ids above `mark`, as an app paging up from its high-water mark sees them.
async fn above(store: &Store, user_id: i64, mark: i64) -> Vec<i64> {
    let query = SyncQuery {
        ids_are: SyncIds::Arrival,
        id_above: Some(mark),
        ..all(SyncOrder::IdAscending)
    };
    store
        .sync_item_ids(user_id, &query)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.item_id)
        .collect()
}

on_both_engines!(
    late_items_and_shared_backlogs_arrive_above_every_mark,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (_, feed_a) = follow(&store, ann, "https://a.example/feed").await;
        let (_, feed_c) = follow(&store, bob, "https://c.example/feed").await;
        add_items(&store, feed_a, "a", 0..6).await;
        add_items(&store, feed_c, "c", 0..3).await;
        let first = arrivals(&store, ann).await;
        assert_eq!(first.len(), 6);
        let ann_mark = first.last().unwrap().0;

        // An item fetched now but dated before everything ann has: above her mark all the same.
        store
            .upsert_items(feed_a, &[numbered_item("late", BASE - 86_400)], BASE)
            .await
            .unwrap();
        let late = store.feed_item_ids(feed_a).await.unwrap();
        let late_id = *late.iter().max().unwrap();
        assert_eq!(above(&store, ann, ann_mark).await, vec![late_id]);
        let second = arrivals(&store, ann).await;
        assert_eq!(
            &second[..6],
            &first[..],
            "ids already handed out never change"
        );
        // `ot` from the late item's arrival finds it.
        let late_arrival = second.last().unwrap().2;
        let from = SyncQuery {
            ids_are: SyncIds::Arrival,
            arrived_from_us: Some(late_arrival),
            ..all(SyncOrder::IdAscending)
        };
        let found: Vec<i64> = store
            .sync_item_ids(ann, &from)
            .await
            .unwrap()
            .iter()
            .map(|r| r.item_id)
            .collect();
        assert_eq!(found, vec![late_id]);

        // Bob follows ann's feed: its seven items are his backlog, above everything he had,
        // oldest published first; ann's ids stay as they were.
        let bob_mark = arrivals(&store, bob).await.last().unwrap().0;
        let (bob_sub_a, _) = follow(&store, bob, "https://a.example/feed").await;
        let backlog = above(&store, bob, bob_mark).await;
        assert_eq!(backlog.len(), 7);
        assert_eq!(backlog[0], late_id, "the oldest published first");
        assert_eq!(arrivals(&store, ann).await, second);
        let bob_rows = arrivals(&store, bob).await;
        // A sync id names an item for its own user only.
        let bob_backlog_ids: Vec<i64> = bob_rows[3..].iter().map(|r| r.0).collect();
        assert!(
            store
                .items_of_sync_ids(ann, &bob_backlog_ids)
                .await
                .unwrap()
                .is_empty()
        );
        let mapped = store
            .items_of_sync_ids(bob, &bob_backlog_ids)
            .await
            .unwrap();
        assert_eq!(mapped.len(), 7);

        // A new item of the shared feed: one id for both, above both marks.
        let (ann_mark, bob_mark) = (second.last().unwrap().0, bob_rows.last().unwrap().0);
        add_items(&store, feed_a, "a", 6..7).await;
        let new_id = *store
            .feed_item_ids(feed_a)
            .await
            .unwrap()
            .iter()
            .max()
            .unwrap();
        assert_eq!(above(&store, ann, ann_mark).await, vec![new_id]);
        assert_eq!(above(&store, bob, bob_mark).await, vec![new_id]);
        let ann_last = *arrivals(&store, ann).await.last().unwrap();
        let bob_last = *arrivals(&store, bob).await.last().unwrap();
        assert_eq!(ann_last.0, bob_last.0);

        // Unsubscribing takes the feed's items away; following again brings them back above.
        store.unsubscribe(bob, bob_sub_a).await.unwrap();
        assert_eq!(arrivals(&store, bob).await.len(), 3);
        follow(&store, bob, "https://a.example/feed").await;
        assert_eq!(above(&store, bob, bob_last.0).await.len(), 8);
        arrivals(&store, bob).await;

        // Read and starred states and marks by item id are the same whatever the id space.
        store
            .mark_read(ann, &MarkReadScope::Ids(vec![late_id]), None)
            .await
            .unwrap();
        let unread = SyncQuery {
            ids_are: SyncIds::Arrival,
            read: Some(false),
            ..all(SyncOrder::IdAscending)
        };
        assert_eq!(store.count_sync_items(ann, &unread).await.unwrap(), 7);

        // Deleting a user or an item takes their rows with them.
        store
            .execute_raw(&format!("DELETE FROM items WHERE id = {new_id}"))
            .await
            .unwrap();
        assert_eq!(arrivals(&store, ann).await.len(), 7);
        store.delete_user(bob).await.unwrap();
        // (The CHECK fails the insert when any row of bob's is left.)
        store
            .execute_raw(&format!(
                "CREATE TABLE left_rows (n BIGINT CHECK (n = 0));
             INSERT INTO left_rows SELECT COUNT(*) FROM user_items WHERE user_id = {bob};"
            ))
            .await
            .expect("no arrival row of a deleted user is left");
    }
);

on_both_engines!(
    a_merged_feed_brings_its_items_to_the_other_feeds_readers,
    |db| {
        let store = db.migrated().await;
        let (alice, carol) = (user(&store, "alice").await, user(&store, "carol").await);
        let (_, old) = follow(&store, alice, "http://old.example/feed").await;
        let (_, new) = follow(&store, carol, "https://new.example/feed").await;
        add_items(&store, old, "o", 0..3).await;
        add_items(&store, new, "n", 0..2).await;
        let carol_mark = arrivals(&store, carol).await.last().unwrap().0;
        let alice_mark = arrivals(&store, alice).await.last().unwrap().0;
        store
            .move_feed(old, "https://new.example/feed", BASE)
            .await
            .unwrap();
        // Carol now sees the old feed's three items, above her mark; alice sees the new feed's
        // two (her subscription moved), above hers.
        assert_eq!(above(&store, carol, carol_mark).await.len(), 3);
        assert_eq!(above(&store, alice, alice_mark).await.len(), 5);
        assert_eq!(arrivals(&store, carol).await.len(), 5);
        assert_eq!(arrivals(&store, alice).await.len(), 5);
    }
);

on_both_engines!(items_stored_before_the_upgrade_keep_their_ids, |db| {
    let store = db.open().await;
    store.migrate_to(29).await.unwrap();
    let ann = user(&store, "ann").await;
    let feed = follow_on_old_schema(&store, ann, "https://a.example/feed").await;
    add_items(&store, feed, "a", 0..4).await;
    let before: Vec<i64> = store.feed_item_ids(feed).await.unwrap();
    store.migrate().await.unwrap();
    // Apps synced before the upgrade hold item ids: they stay the items' sync ids.
    let after = arrivals(&store, ann).await;
    let mut expected = before.clone();
    expected.sort();
    assert_eq!(after.iter().map(|r| r.0).collect::<Vec<_>>(), expected);
    assert!(after.iter().all(|r| r.0 == r.1));
    // What arrives next comes above them.
    add_items(&store, feed, "a", 4..5).await;
    let next = arrivals(&store, ann).await;
    assert_eq!(next.len(), 5);
    assert!(next[4].0 > *expected.last().unwrap());
});

/// A subscribe to a feed while a fetch of that feed is writing, on PostgreSQL, in the order
/// that deadlocked when the sync clock was taken at insert: the fetch inserts an item; the
/// subscribe locks the feed's row (its upsert) and inserts the subscription; the fetch then
/// updates the feed's row (its metadata). The clock is taken at commit now, so the subscribe
/// commits, the fetch follows, and both users see the new item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_during_a_fetch_of_the_same_feed_does_not_deadlock() {
    use sqlx::Connection;
    let Some(db) = tidings_testkit::TestDb::postgres(module_path!()).await else {
        return;
    };
    tidings_testkit::run_on(db, async |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (_, feed) = follow(&store, ann, "https://shared.example/feed").await;
        add_items(&store, feed, "s", 0..3).await;
        let group = store.default_group_id(bob).await.unwrap();
        let mut fetch = sqlx::PgConnection::connect(&db.url()).await.unwrap();
        let mut subscribe = sqlx::PgConnection::connect(&db.url()).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "BEGIN;
             INSERT INTO items (feed_id, identity_key, title, published_at, fetched_at,
                                changed_at, content_hash)
             VALUES ({feed}, 'late', 'Late', {BASE}, {BASE}, {BASE}, 'h');"
        )))
        .execute(&mut fetch)
        .await
        .unwrap();
        sqlx::raw_sql(
            "BEGIN;
             INSERT INTO feeds (url, created_at, updated_at)
             VALUES ('https://shared.example/feed', 0, 0)
             ON CONFLICT (url) DO UPDATE SET orphaned_at = NULL;",
        )
        .execute(&mut subscribe)
        .await
        .unwrap();
        // The fetch now waits for the subscribe's lock on the feed's row.
        let fetch_done = tokio::spawn(async move {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "UPDATE feeds SET title = 'Shared' WHERE id = {feed}; COMMIT;"
            )))
            .execute(&mut fetch)
            .await
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let subscribed = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "INSERT INTO subscriptions (user_id, feed_id, group_id, created_at)
             VALUES ({bob}, {feed}, {group}, 0);
             COMMIT;"
        )))
        .execute(&mut subscribe)
        .await;
        subscribed.expect("the subscribe commits");
        tokio::time::timeout(std::time::Duration::from_secs(10), fetch_done)
            .await
            .expect("the fetch goes on")
            .unwrap()
            .expect("the fetch commits");
        assert_eq!(arrivals(&store, ann).await.len(), 4);
        assert_eq!(
            arrivals(&store, bob).await.len(),
            4,
            "the backlog and the new item"
        );
    })
    .await;
}

on_both_engines!(
    pages_of_arrival_ids_agree_with_the_rows_across_the_covering_key_upgrade,
    |db| {
        let store = db.open().await;
        store.migrate_to(51).await.unwrap();
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://a.example/feed").await;
        add_items(&store, feed, "a", 0..7).await;
        store.migrate().await.unwrap();
        if let TestDb::Postgres { .. } = db {
            // The arrival key holds the arrival time and the item (migration 52), and the
            // item's feed and date (migration 56): a page of ids is read from the index alone.
            store
                .execute_raw(
                    "DO $$ BEGIN
                       IF (SELECT indnatts FROM pg_index
                           WHERE indexrelid = 'user_items_pkey'::regclass) <> 6 THEN
                         RAISE EXCEPTION 'user_items_pkey does not hold arrived_us, item_id, \
                                          feed_id and published_at';
                       END IF;
                     END $$",
                )
                .await
                .unwrap();
        }
        add_items(&store, feed, "a", 7..12).await;
        for order in [SyncOrder::IdAscending, SyncOrder::IdDescending] {
            for (offset, limit) in [(0, 1000), (0, 5), (5, 5), (10, 5), (12, 5)] {
                let query = SyncQuery {
                    ids_are: SyncIds::Arrival,
                    offset,
                    limit,
                    ..all(order)
                };
                let rows: Vec<(i64, i64)> = store
                    .sync_item_ids(ann, &query)
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| (r.id, r.arrived_us))
                    .collect();
                let page = store.sync_arrival_refs(ann, &query).await.unwrap();
                assert_eq!(page, rows, "{order:?} offset {offset} limit {limit}");
                assert_eq!(page.len(), limit.min(12 - offset).max(0) as usize);
            }
        }
    }
);
