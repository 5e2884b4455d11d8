//! The fetch worker's store methods (fetching.rs) on SQLite and PostgreSQL: raw bodies,
//! favicons, fetch state, moving and merging feeds, retention, job leases, OPML history.

mod common;

use common::{add_user as user, follow};

use tidings_store::{
    Favicon, FeedBody, FeedMove, FetchStatus, NewItem, OpmlImportRecord, unix_now,
};

fn item(guid: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://example.com/{guid}")),
        title: Some(format!("Title {guid}")),
        content: Some("<p>body</p>".into()),
        published: Some(published),
        ..Default::default()
    }
}

on_both_engines!(raw_bodies_are_kept_and_replaced, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (_, feed) = follow(&store, alice, "https://a.example/feed").await;
    assert_eq!(store.feed_body_sha256(feed).await.unwrap(), None);
    assert_eq!(store.feed_body(feed).await.unwrap(), None);
    let first = FeedBody {
        fetched_at: 100,
        content_type: Some("application/rss+xml".into()),
        sha256: "aa".repeat(32),
        compression: "zlib".into(),
        body: vec![0, 1, 2, 255],
    };
    store.save_feed_body(feed, &first).await.unwrap();
    assert_eq!(store.feed_body(feed).await.unwrap(), Some(first.clone()));
    let second = FeedBody {
        fetched_at: 200,
        content_type: None,
        sha256: "bb".repeat(32),
        body: vec![9; 1000],
        ..first
    };
    store.save_feed_body(feed, &second).await.unwrap();
    assert_eq!(
        store.feed_body_sha256(feed).await.unwrap(),
        Some("bb".repeat(32))
    );
    assert_eq!(store.feed_body(feed).await.unwrap(), Some(second));
});

on_both_engines!(favicons_record_hits_and_misses, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (_, feed) = follow(&store, alice, "https://a.example/feed").await;
    assert_eq!(store.favicon_fetched_at(feed).await.unwrap(), None);
    let missing = Favicon {
        mime_type: None,
        data: None,
        source_url: None,
        fetched_at: 10,
    };
    store.save_favicon(feed, &missing).await.unwrap();
    assert_eq!(store.favicon_fetched_at(feed).await.unwrap(), Some(10));
    assert_eq!(store.favicon(feed).await.unwrap(), Some(missing));
    let found = Favicon {
        mime_type: Some("image/png".into()),
        data: Some(b"\x89PNG".to_vec()),
        source_url: Some("https://a.example/favicon.ico".into()),
        fetched_at: 20,
    };
    store.save_favicon(feed, &found).await.unwrap();
    assert_eq!(store.favicon(feed).await.unwrap(), Some(found));
    store
        .set_feed_icon_url(feed, Some("https://a.example/logo.png"))
        .await
        .unwrap();
});

on_both_engines!(fetch_state_is_readable_by_id_and_url, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (_, feed) = follow(&store, alice, "https://a.example/feed").await;
    assert_eq!(
        store
            .feed_id_by_url("https://a.example/feed")
            .await
            .unwrap(),
        Some(feed)
    );
    assert_eq!(
        store.feed_id_by_url("https://nope.example/").await.unwrap(),
        None
    );
    let state = store.feed_fetch_state(feed).await.unwrap();
    assert_eq!(state.url, "https://a.example/feed");
    assert_eq!(state.status, FetchStatus::Active);
    assert_eq!(state.subscribers, 1);
    assert_eq!(state.lease_until, None);
    assert!(store.feed_fetch_state(feed + 1000).await.is_err());
});

on_both_engines!(a_moved_feed_is_renamed_when_the_url_is_free, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (_, feed) = follow(&store, alice, "http://old.example/feed").await;
    let now = unix_now();
    assert_eq!(
        store
            .move_feed(feed, "http://old.example/feed", now)
            .await
            .unwrap(),
        FeedMove::Unchanged
    );
    assert_eq!(
        store
            .move_feed(feed, "https://new.example/feed", now)
            .await
            .unwrap(),
        FeedMove::Renamed
    );
    assert_eq!(
        store.feed_fetch_state(feed).await.unwrap().url,
        "https://new.example/feed"
    );
    assert!(store.move_feed(feed, " ", now).await.is_err());
    assert!(
        store
            .move_feed(feed + 99, "https://x.example/", now)
            .await
            .is_err()
    );
});

on_both_engines!(a_moved_feed_merges_into_the_feed_that_has_its_url, |db| {
    let store = db.migrated().await;
    let (alice, bob, carol) = (
        user(&store, "alice").await,
        user(&store, "bob").await,
        user(&store, "carol").await,
    );
    let now = unix_now();
    let (_, old) = follow(&store, alice, "http://old.example/feed").await;
    follow(&store, bob, "http://old.example/feed").await;
    let (carol_sub, new) = follow(&store, carol, "https://new.example/feed").await;
    // Bob follows both: he keeps the subscription he had to the remaining feed.
    let (bob_new_sub, _) = follow(&store, bob, "https://new.example/feed").await;
    // "shared" is in both feeds; "only-old" moves over.
    store
        .upsert_items(
            old,
            &[item("shared", now - 10), item("only-old", now - 5)],
            now,
        )
        .await
        .unwrap();
    store
        .upsert_items(new, &[item("shared", now - 10)], now)
        .await
        .unwrap();
    let old_items = store.feed_item_ids(old).await.unwrap();
    let shared_new = store.feed_item_ids(new).await.unwrap()[0];
    // Alice read and starred both items of the old feed, and bookmarked the shared one.
    for id in &old_items {
        store
            .set_item_state(alice, *id, Some(true), Some(true))
            .await
            .unwrap();
    }
    store
        .execute_raw(&format!(
            "INSERT INTO bookmarks (user_id, item_id, title, created_at)
             SELECT {alice}, id, title, {now} FROM items WHERE feed_id = {old}
               AND identity_key = (SELECT identity_key FROM items WHERE id = {shared_new})"
        ))
        .await
        .unwrap();

    let moved = store
        .move_feed(old, "https://new.example/feed", now)
        .await
        .unwrap();
    assert_eq!(
        moved,
        FeedMove::Merged {
            into: new,
            subscriptions_moved: 1,
            items_moved: 1
        }
    );
    assert!(
        store.feed_fetch_state(old).await.is_err(),
        "old feed deleted"
    );
    assert_eq!(store.count_items(new).await.unwrap(), 2);
    let state = store.feed_fetch_state(new).await.unwrap();
    assert_eq!(state.subscribers, 3);
    // Alice's states followed both the moved item and the duplicate's twin.
    for id in store.feed_item_ids(new).await.unwrap() {
        let seen = store.item(alice, id).await.unwrap();
        assert!(seen.is_read && seen.is_starred, "item {id}");
    }
    // Bob's own subscription to the remaining feed is the one kept; Carol's is untouched.
    let bob_subs = store.list_subscriptions(bob).await.unwrap();
    assert_eq!(bob_subs.len(), 1);
    assert_eq!(bob_subs[0].id, bob_new_sub);
    assert_eq!(
        store.list_subscriptions(carol).await.unwrap()[0].id,
        carol_sub
    );
    // The bookmark points at the remaining copy of its item: with stars gone, retention
    // deletes everything old except that item.
    store
        .execute_raw("UPDATE item_states SET is_starred = FALSE")
        .await
        .unwrap();
    store.delete_items_older_than(i64::MAX).await.unwrap();
    assert_eq!(store.feed_item_ids(new).await.unwrap(), vec![shared_new]);
});

on_both_engines!(retention_keeps_starred_and_bookmarked_items, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (_, feed) = follow(&store, alice, "https://a.example/feed").await;
    let now = unix_now();
    let day = 86_400;
    let old = now - 200 * day;
    store
        .upsert_items(
            feed,
            &[
                item("old-plain", old),
                item("old-starred", old),
                item("old-bookmarked", old),
                item("recent", now - day),
            ],
            old,
        )
        .await
        .unwrap();
    let ids = store.feed_item_ids(feed).await.unwrap();
    assert_eq!(ids.len(), 4);
    // Identify items by guid through the user's view.
    let mut by_guid = std::collections::HashMap::new();
    for id in &ids {
        let seen = store.item(alice, *id).await.unwrap();
        by_guid.insert(seen.guid.clone().unwrap(), *id);
    }
    store
        .set_item_state(alice, by_guid["old-starred"], None, Some(true))
        .await
        .unwrap();
    store
        .execute_raw(&format!(
            "INSERT INTO bookmarks (user_id, item_id, title, created_at)
             VALUES ({alice}, {}, 'kept', {now})",
            by_guid["old-bookmarked"]
        ))
        .await
        .unwrap();
    let deleted = store
        .delete_items_older_than(now - 180 * day)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let left = store.feed_item_ids(feed).await.unwrap();
    assert!(!left.contains(&by_guid["old-plain"]));
    for kept in ["old-starred", "old-bookmarked", "recent"] {
        assert!(left.contains(&by_guid[kept]), "{kept}");
    }
    assert_eq!(
        store
            .delete_items_older_than(now - 180 * day)
            .await
            .unwrap(),
        0
    );
});

on_both_engines!(orphan_feeds_are_deleted_after_their_grace_period, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let (kept_sub, kept) = follow(&store, alice, "https://kept.example/feed").await;
    let (gone_sub, gone) = follow(&store, alice, "https://gone.example/feed").await;
    let _ = kept_sub;
    store.unsubscribe(alice, gone_sub).await.unwrap();
    let now = unix_now();
    // Orphaned just now: not yet past a 7-day grace period.
    assert_eq!(
        store.delete_orphan_feeds(now - 7 * 86_400).await.unwrap(),
        0
    );
    store
        .execute_raw(&format!(
            "UPDATE feeds SET orphaned_at = {} WHERE id = {gone}",
            now - 8 * 86_400
        ))
        .await
        .unwrap();
    assert_eq!(
        store.delete_orphan_feeds(now - 7 * 86_400).await.unwrap(),
        1
    );
    assert!(store.feed_fetch_state(gone).await.is_err());
    assert!(store.feed_fetch_state(kept).await.is_ok());
});

on_both_engines!(a_daily_job_is_claimed_once_per_period, |db| {
    let store = db.migrated().await;
    let now = unix_now();
    // Eight claimers race for the same run: exactly one wins.
    let mut racers = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        racers.push(tokio::spawn(async move {
            store
                .claim_job("retention", &format!("worker-{i}"), now, 86_400)
                .await
                .unwrap()
        }));
    }
    let mut winners = 0;
    for racer in racers {
        winners += usize::from(racer.await.unwrap());
    }
    assert_eq!(winners, 1);
    let run = store.job_run("retention").await.unwrap().unwrap();
    assert_eq!(run.started_at, now);
    assert_eq!(run.finished_at, None);
    store
        .finish_job("retention", &run.owner, now + 5, "deleted 3 items")
        .await
        .unwrap();
    let run = store.job_run("retention").await.unwrap().unwrap();
    assert_eq!(run.finished_at, Some(now + 5));
    assert_eq!(run.outcome.as_deref(), Some("deleted 3 items"));
    // Not again within the day; again once the day has passed.
    assert!(
        !store
            .claim_job("retention", "late", now + 3600, 86_400)
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_job("retention", "next", now + 86_400, 86_400)
            .await
            .unwrap()
    );
    assert_eq!(store.job_run("other").await.unwrap(), None);
});

on_both_engines!(opml_imports_are_recorded_newest_first, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let record = |created_at, added| OpmlImportRecord {
        id: 0,
        created_at,
        file_name: Some("feeds.opml".into()),
        outlines: 3,
        added,
        skipped: 1,
        failed: 3 - 1 - added,
        report: "[]".into(),
    };
    let first = store
        .record_opml_import(alice, &record(100, 2))
        .await
        .unwrap();
    let second = store
        .record_opml_import(alice, &record(200, 1))
        .await
        .unwrap();
    let history = store.list_opml_imports(alice).await.unwrap();
    assert_eq!(
        history.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![second, first]
    );
    assert_eq!(history[1].added, 2);
    assert_eq!(history[1].file_name.as_deref(), Some("feeds.opml"));
    assert!(store.list_opml_imports(alice + 1).await.unwrap().is_empty());
    assert!(store.database_size_bytes().await.unwrap() > 0);
});
