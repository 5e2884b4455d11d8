//! The fetch worker's store methods (fetching.rs) on SQLite and PostgreSQL: raw bodies,
//! favicons, fetch state, moving and merging feeds, retention, job leases, OPML history.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    Favicon, FeedBody, FeedMove, FetchStatus, NewItem, OpmlImportRecord, SiteFaviconClaim, unix_now,
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
        charset: Some("Shift_JIS".into()),
        source_url: Some("https://cdn.a.example/feed.xml".into()),
        etag: Some("\"v1\"".into()),
        last_modified: Some("Mon, 02 Jun 2025 10:00:00 GMT".into()),
        sha256: "aa".repeat(32),
        compression: "zlib".into(),
        raw_size: Some(4000),
        parse_error: None,
        body: vec![0, 1, 2, 255],
    };
    store.save_feed_body(feed, &first).await.unwrap();
    assert_eq!(store.feed_body(feed).await.unwrap(), Some(first.clone()));
    // One per feed: the next body replaces every field, validators included.
    let second = FeedBody {
        fetched_at: 200,
        content_type: None,
        charset: None,
        etag: None,
        sha256: "bb".repeat(32),
        body: vec![9; 1000],
        ..first.clone()
    };
    store.save_feed_body(feed, &second).await.unwrap();
    assert_eq!(
        store.feed_body_sha256(feed).await.unwrap(),
        Some("bb".repeat(32))
    );
    assert_eq!(store.feed_body(feed).await.unwrap(), Some(second.clone()));

    // The identical body fetched again moves the fetch time and validators only; another
    // digest touches nothing.
    assert!(
        store
            .touch_feed_body(feed, &"bb".repeat(32), 300, Some("\"v2\""), None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .touch_feed_body(feed, &"cc".repeat(32), 400, None, None)
            .await
            .unwrap()
    );
    let touched = store.feed_body(feed).await.unwrap().unwrap();
    assert_eq!(
        (
            touched.fetched_at,
            touched.etag.as_deref(),
            touched.last_modified
        ),
        (300, Some("\"v2\""), None)
    );
    assert_eq!(touched.body, second.body);

    // A body that did not parse is kept, but is no reason to skip parsing its copy.
    let broken = FeedBody {
        sha256: "dd".repeat(32),
        parse_error: Some("not a feed: an HTML page\0".into()),
        ..second.clone()
    };
    store.save_feed_body(feed, &broken).await.unwrap();
    assert_eq!(store.feed_body_sha256(feed).await.unwrap(), None);
    assert_eq!(
        store
            .feed_body(feed)
            .await
            .unwrap()
            .unwrap()
            .parse_error
            .as_deref(),
        Some("not a feed: an HTML page"),
        "control characters are stripped"
    );
    assert!(
        store
            .set_feed_body_parse_error(feed, &"dd".repeat(32), None)
            .await
            .unwrap()
    );
    assert_eq!(
        store.feed_body_sha256(feed).await.unwrap(),
        Some("dd".repeat(32))
    );
    assert!(
        !store
            .set_feed_body_parse_error(feed, &"ee".repeat(32), Some("x"))
            .await
            .unwrap(),
        "a body replaced meanwhile is left alone"
    );

    store.delete_feed_body(feed).await.unwrap();
    assert_eq!(store.feed_body(feed).await.unwrap(), None);
});

on_both_engines!(
    raw_bodies_are_listed_counted_and_deleted_with_their_feed,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let mut feeds = Vec::new();
        for n in 0..5 {
            let (sub, feed) = follow(&store, alice, &format!("https://f{n}.example/feed")).await;
            feeds.push((sub, feed));
        }
        assert_eq!(
            store.feed_body_totals().await.unwrap(),
            tidings_store::FeedBodyTotals {
                feeds: 5,
                ..Default::default()
            }
        );
        // Bodies for four feeds of five; one of them did not parse, one predates raw sizes.
        for (n, &(_, feed)) in feeds.iter().enumerate().take(4) {
            let body = FeedBody {
                fetched_at: 100,
                sha256: format!("{n:064}"),
                compression: "zlib".into(),
                raw_size: (n != 3).then_some(1000),
                parse_error: (n == 2).then(|| "not a feed".to_owned()),
                body: vec![7; 10 + n],
                ..Default::default()
            };
            store.save_feed_body(feed, &body).await.unwrap();
        }
        assert_eq!(
            store.feed_body_totals().await.unwrap(),
            tidings_store::FeedBodyTotals {
                feeds: 5,
                bodies: 4,
                unparsed: 1,
                compressed_bytes: 10 + 11 + 12 + 13,
                raw_bytes: 3000,
            }
        );
        // Keyset pages of the feeds with a body.
        let with_body: Vec<i64> = feeds.iter().take(4).map(|&(_, id)| id).collect();
        assert_eq!(
            store.feeds_with_bodies(0, 3).await.unwrap(),
            with_body[..3].to_vec()
        );
        assert_eq!(
            store.feeds_with_bodies(with_body[2], 3).await.unwrap(),
            vec![with_body[3]]
        );
        assert!(
            store
                .feeds_with_bodies(with_body[3], 3)
                .await
                .unwrap()
                .is_empty()
        );

        // A feed deleted (nobody follows it past the grace period) takes its body along.
        let (sub, gone) = feeds[0];
        store.unsubscribe(alice, sub).await.unwrap();
        store
            .execute_raw(&format!(
                "UPDATE feeds SET orphaned_at = {} WHERE id = {gone}",
                unix_now() - 8 * 86_400
            ))
            .await
            .unwrap();
        assert_eq!(
            store
                .delete_orphan_feeds(unix_now() - 7 * 86_400)
                .await
                .unwrap(),
            1
        );
        assert_eq!(store.feed_body(gone).await.unwrap(), None);
        let totals = store.feed_body_totals().await.unwrap();
        assert_eq!((totals.feeds, totals.bodies), (4, 3));
        assert_eq!(
            store.feeds_with_bodies(0, 10).await.unwrap(),
            with_body[1..].to_vec()
        );
    }
);

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

on_both_engines!(
    site_favicons_are_claimed_once_and_reused_while_fresh,
    |db| {
        let store = db.migrated().await;
        let site = "site https://a.example";
        let (now, max_age, claim) = (1_700_000_000, 30 * 86_400, 120);
        let fresh_since = now - max_age;
        // Never looked up: the first asker claims it, a second one finds it busy.
        assert_eq!(store.site_favicon(site).await.unwrap(), None);
        assert_eq!(
            store
                .claim_site_favicon(site, now, fresh_since, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Claimed
        );
        assert_eq!(
            store
                .claim_site_favicon(site, now + 1, fresh_since + 1, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Busy
        );
        assert_eq!(store.site_favicon(site).await.unwrap(), None);
        // A claim that expired (its process died) can be taken over.
        assert_eq!(
            store
                .claim_site_favicon(site, now + claim, fresh_since + claim, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Claimed
        );
        let found = Favicon {
            mime_type: Some("image/png".into()),
            data: Some(b"\x89PNG".to_vec()),
            source_url: Some("https://a.example/icon.png".into()),
            fetched_at: now + claim + 5,
        };
        store.save_site_favicon(site, &found).await.unwrap();
        assert_eq!(store.site_favicon(site).await.unwrap(), Some(found.clone()));
        // Fresh: every later asker reuses it, with no claim.
        let later = now + claim + 10;
        assert_eq!(
            store
                .claim_site_favicon(site, later, later - max_age, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Fresh(found.clone())
        );
        // Another site is its own.
        assert_eq!(
            store
                .claim_site_favicon("site https://b.example", later, later - max_age, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Claimed
        );
        // Stale: claimed again; a lookup that found nothing is recorded as such.
        let stale = found.fetched_at + max_age + 1;
        assert_eq!(
            store
                .claim_site_favicon(site, stale, stale - max_age, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Claimed
        );
        let missing = Favicon {
            mime_type: None,
            data: None,
            source_url: None,
            fetched_at: stale,
        };
        store.save_site_favicon(site, &missing).await.unwrap();
        assert_eq!(
            store
                .claim_site_favicon(site, stale + 1, stale + 1 - max_age, claim)
                .await
                .unwrap(),
            SiteFaviconClaim::Fresh(missing)
        );
        // Retention removes sites not looked up since a time, unless claimed at that moment.
        assert_eq!(
            store
                .delete_stale_site_favicons(stale + 1, stale + 1)
                .await
                .unwrap(),
            2,
            "a.example's row (looked up at {stale}) and b.example's (claimed, never looked up)"
        );
        assert_eq!(store.site_favicon(site).await.unwrap(), None);
    }
);

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
    // The old address stays known to its subscribers (a history import finds it by it); a
    // move back makes it the feed's own again.
    assert_eq!(
        store.subscription_other_urls(alice).await.unwrap(),
        vec![(feed, "http://old.example/feed".to_owned())]
    );
    store
        .move_feed(feed, "http://old.example/feed", now)
        .await
        .unwrap();
    assert_eq!(
        store.subscription_other_urls(alice).await.unwrap(),
        vec![(feed, "https://new.example/feed".to_owned())]
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
    // Its address is the remaining feed's former one.
    assert_eq!(
        store.subscription_other_urls(alice).await.unwrap(),
        vec![(new, "http://old.example/feed".to_owned())]
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
    store
        .delete_expired_items(i64::MAX, 0, unix_now())
        .await
        .unwrap();
    assert_eq!(store.feed_item_ids(new).await.unwrap(), vec![shared_new]);
});

/// `count` items of a feed, the newest dated `newest` and each a day older than the last.
fn dated_items(tag: &str, count: i64, newest: i64) -> Vec<NewItem> {
    (0..count)
        .map(|n| item(&format!("{tag}-{n}"), newest - n * 86_400))
        .collect()
}

/// The item ids of a feed by guid, through a subscriber's view.
async fn ids_by_guid(
    store: &tidings_store::Store,
    user: i64,
    feed: i64,
) -> std::collections::HashMap<String, i64> {
    let mut by_guid = std::collections::HashMap::new();
    for id in store.feed_item_ids(feed).await.unwrap() {
        let seen = store.item(user, id).await.unwrap();
        by_guid.insert(seen.guid.clone().unwrap(), id);
    }
    by_guid
}

on_both_engines!(
    retention_counts_age_from_first_storage_and_keeps_the_newest,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let (_, feed) = follow(&store, alice, "https://a.example/feed").await;
        let (_, other) = follow(&store, alice, "https://b.example/feed").await;
        let now = unix_now();
        let day = 86_400;
        let two_years_ago = now - 730 * day;
        assert_eq!(store.oldest_item_stored_at().await.unwrap(), None);
        // A quiet blog: 60 items, the newest two years old, first stored 200 days ago.
        store
            .upsert_items(feed, &dated_items("q", 60, two_years_ago), now - 200 * day)
            .await
            .unwrap();
        // Two of its oldest items, dated five years back, that tidings stored only yesterday.
        let late = [
            item("late-0", now - 1825 * day),
            item("late-1", now - 1826 * day),
        ];
        store.upsert_items(feed, &late, now - day).await.unwrap();
        // A feed with three items stored long ago: all among its newest, so all kept.
        store
            .upsert_items(
                other,
                &dated_items("o", 3, now - 300 * day),
                now - 300 * day,
            )
            .await
            .unwrap();
        // What retention looks at: first storing, whatever the items' own dates.
        let oldest = store.oldest_item_stored_at().await.unwrap();
        assert_eq!(oldest, Some(now - 300 * day));
        let by_guid = ids_by_guid(&store, alice, feed).await;
        // One old item starred, one bookmarked, both beyond the newest 50.
        store
            .set_item_state(alice, by_guid["q-55"], None, Some(true))
            .await
            .unwrap();
        store
            .execute_raw(&format!(
                "INSERT INTO bookmarks (user_id, item_id, title, created_at)
             VALUES ({alice}, {}, 'kept', {now})",
                by_guid["q-56"]
            ))
            .await
            .unwrap();

        let deleted = store
            .delete_expired_items(now - 180 * day, 50, now)
            .await
            .unwrap();
        // q-50..q-59 are beyond the newest 50; q-55 is starred and q-56 bookmarked.
        assert_eq!(deleted, 8);
        let left = store.feed_item_ids(feed).await.unwrap();
        assert_eq!(left.len(), 54);
        for n in 0..50 {
            assert!(left.contains(&by_guid[&format!("q-{n}")]), "q-{n} kept");
        }
        for kept in ["q-55", "q-56", "late-0", "late-1"] {
            assert!(left.contains(&by_guid[kept]), "{kept} kept");
        }
        for gone in [
            "q-50", "q-51", "q-52", "q-53", "q-54", "q-57", "q-58", "q-59",
        ] {
            assert!(!left.contains(&by_guid[gone]), "{gone} deleted");
        }
        assert_eq!(store.count_items(other).await.unwrap(), 3);
        assert_eq!(store.count_tombstones(feed).await.unwrap(), 8);
        // The reader still lists the quiet feed's items, and its count is exact.
        let counts = store.unread_counts(alice).await.unwrap();
        let unread = counts
            .subscriptions
            .iter()
            .find(|s| s.feed_id == feed)
            .unwrap()
            .unread;
        assert_eq!(unread, 54);
        // Nothing more to do on a second run.
        assert_eq!(
            store
                .delete_expired_items(now - 180 * day, 50, now)
                .await
                .unwrap(),
            0
        );
        // Keeping none: everything stored before the cutoff goes but starred and bookmarked items.
        store
            .delete_expired_items(now - 180 * day, 0, now)
            .await
            .unwrap();
        let left = store.feed_item_ids(feed).await.unwrap();
        let mut expected = vec![
            by_guid["q-55"],
            by_guid["q-56"],
            by_guid["late-0"],
            by_guid["late-1"],
        ];
        expected.sort();
        let mut left_sorted = left.clone();
        left_sorted.sort();
        assert_eq!(left_sorted, expected);
        assert_eq!(store.count_items(other).await.unwrap(), 0);
    }
);

on_both_engines!(
    deleted_items_are_not_stored_again_and_tombstones_stay_bounded,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let (sub, feed) = follow(&store, alice, "https://a.example/feed").await;
        let now = unix_now();
        let day = 86_400;
        let listed = dated_items("t", 20, now - 400 * day);
        store
            .upsert_items(feed, &listed, now - 200 * day)
            .await
            .unwrap();
        assert_eq!(
            store
                .delete_expired_items(now - 180 * day, 5, now)
                .await
                .unwrap(),
            15
        );
        assert_eq!(store.count_tombstones(feed).await.unwrap(), 15);
        let unread_before = store.unread_counts(alice).await.unwrap().subscriptions[0].unread;
        assert_eq!(unread_before, 5);

        // The feed still lists all 20: the deleted ones are recognised, not new unread items.
        let counts = store.upsert_items(feed, &listed, now).await.unwrap();
        assert_eq!((counts.inserted, counts.suppressed), (0, 15));
        assert_eq!(store.count_items(feed).await.unwrap(), 5);
        let counts = store.unread_counts(alice).await.unwrap();
        assert_eq!(counts.subscriptions[0].unread, 5);

        // A new item among them is stored as usual.
        let mut with_new = listed.clone();
        with_new.insert(0, item("t-new", now));
        let counts = store
            .upsert_items(feed, &with_new, now + day)
            .await
            .unwrap();
        assert_eq!((counts.inserted, counts.suppressed), (1, 15));

        // The feed drops its old items. Within the grace period the tombstones stay (a feed read
        // partly once does not bring them back)...
        let newest: Vec<NewItem> = with_new[..6].to_vec();
        store
            .upsert_items(feed, &newest, now + 3 * day)
            .await
            .unwrap();
        assert_eq!(store.count_tombstones(feed).await.unwrap(), 15);
        // ...and once the feed has not listed them for longer, they go.
        store
            .upsert_items(feed, &newest, now + 9 * day)
            .await
            .unwrap();
        assert_eq!(store.count_tombstones(feed).await.unwrap(), 0);

        // Tombstones follow a merged feed, and go with a deleted feed.
        store
            .delete_expired_items(now + 400 * day, 0, now + 9 * day)
            .await
            .unwrap();
        assert_eq!(store.count_tombstones(feed).await.unwrap(), 6);
        let (_, target) = follow(&store, alice, "https://target.example/feed").await;
        let moved = store
            .move_feed(feed, "https://target.example/feed", now + 9 * day)
            .await
            .unwrap();
        assert!(matches!(moved, FeedMove::Merged { into, .. } if into == target));
        assert_eq!(store.count_tombstones(target).await.unwrap(), 6);
        let counts = store
            .upsert_items(target, &newest, now + 10 * day)
            .await
            .unwrap();
        assert_eq!((counts.inserted, counts.suppressed), (0, 6));
        let _ = sub;
        let target_sub = store.list_subscriptions(alice).await.unwrap()[0].id;
        store.unsubscribe(alice, target_sub).await.unwrap();
        store
            .execute_raw(&format!(
                "UPDATE feeds SET orphaned_at = {} WHERE id = {target}",
                now - 8 * day
            ))
            .await
            .unwrap();
        assert_eq!(store.delete_orphan_feeds(now - 7 * day).await.unwrap(), 1);
        assert_eq!(store.count_tombstones(target).await.unwrap(), 0);
    }
);

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

on_both_engines!(
    retention_spans_many_feeds_and_long_backlogs_while_feeds_arrive,
    |db| {
        // More feeds than one of PostgreSQL's transactions takes, and a feed with more
        // expired items than one transaction deletes; two runs at once, and a fetch between.
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let now = unix_now();
        let day = 86_400;
        let mut small = Vec::new();
        for n in 0..300 {
            let (_, feed) = follow(&store, alice, &format!("https://f{n}.example/feed")).await;
            let items = dated_items(&format!("s{n}"), 3, now - 300 * day);
            store
                .upsert_items(feed, &items, now - 200 * day)
                .await
                .unwrap();
            small.push(feed);
        }
        let (_, long) = follow(&store, alice, "https://long.example/feed").await;
        let backlog = dated_items("l", 2_203, now - 300 * day);
        store
            .upsert_items(long, &backlog, now - 200 * day)
            .await
            .unwrap();
        // The last small feed's oldest item starred: kept.
        let starred = ids_by_guid(&store, alice, small[299]).await["s299-2"];
        store
            .set_item_state(alice, starred, None, Some(true))
            .await
            .unwrap();
        // A fetch of the first feed brings its three items again (stored or suppressed,
        // depending on when it runs) and one new one dated long ago.
        let mut refetched = dated_items("s0", 3, now - 300 * day);
        refetched.push(item("s0-new", now - 3_000 * day));
        let (first, second, fetched) = tokio::join!(
            store.delete_expired_items(now - 180 * day, 1, now),
            store.delete_expired_items(now - 180 * day, 1, now),
            store.upsert_items(small[0], &refetched, now),
        );
        let deleted = first.unwrap() + second.unwrap();
        assert_eq!(deleted, 300 * 2 - 1 + 2_202);
        assert_eq!(fetched.unwrap().inserted, 1);
        assert_eq!(store.count_items(long).await.unwrap(), 1);
        assert_eq!(store.count_tombstones(long).await.unwrap(), 2_202);
        for (n, feed) in small.iter().enumerate() {
            let expected = match n {
                0 | 299 => 2,
                _ => 1,
            };
            assert_eq!(
                store.count_items(*feed).await.unwrap(),
                expected,
                "feed {n}"
            );
        }
        let by_guid = ids_by_guid(&store, alice, small[0]).await;
        assert!(by_guid.contains_key("s0-0") && by_guid.contains_key("s0-new"));
        assert_eq!(
            store
                .delete_expired_items(now - 180 * day, 1, now)
                .await
                .unwrap(),
            0
        );
    }
);

/// Retention at scale: `TIDINGS_RETENTION_BENCH_ITEMS` items (default 1,000,000) in 100
/// feeds with one subscriber each, stored over the last 360 days; the run deletes those stored
/// more than 180 days ago beyond each feed's newest 50, with their tombstones. Run with
/// `cargo test --release -p tidings-store --test store -- --ignored fetching::retention_at_scale
/// --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: builds a million items"]
async fn retention_at_scale() {
    let total: i64 = std::env::var("TIDINGS_RETENTION_BENCH_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let mut dbs = vec![tidings_testkit::TestDb::sqlite()];
    if let Some(db) = tidings_testkit::TestDb::postgres("retention_at_scale").await {
        dbs.push(db);
    }
    for db in dbs {
        tidings_testkit::run_on(db, async |db: &tidings_testkit::TestDb| {
            let store = db.migrated().await;
            let alice = user(&store, "alice").await;
            let feeds = 100;
            let per_feed = total / feeds;
            let now = unix_now();
            let day = 86_400;
            let started = std::time::Instant::now();
            for n in 0..feeds {
                let (_, feed) = follow(&store, alice, &format!("https://f{n}.example/feed")).await;
                // Item k of the feed: stored (k / per_feed) of 360 days ago, dated as stored.
                let sql = match store.engine() {
                    tidings_store::Engine::Sqlite => format!(
                        "WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k
                                                 WHERE n + 1 < {per_feed})
                         INSERT INTO items (feed_id, identity_key, published_at, fetched_at,
                                            changed_at, content_hash, title, content)
                         SELECT {feed}, 'g:' || n, {now} - n * 360 * {day} / {per_feed},
                                {now} - n * 360 * {day} / {per_feed}, {now}, 'h',
                                'Item ' || n, '<p>' || hex(randomblob(300)) || '</p>' FROM k"
                    ),
                    tidings_store::Engine::Postgres => format!(
                        "INSERT INTO items (feed_id, identity_key, published_at, fetched_at,
                                            changed_at, content_hash, title, content)
                         SELECT {feed}, 'g:' || n, {now} - n * 360 * {day} / {per_feed},
                                {now} - n * 360 * {day} / {per_feed}, {now}, 'h',
                                'Item ' || n, '<p>' || md5(n::text) || repeat('x', 550) || '</p>'
                         FROM generate_series(0::bigint, {per_feed} - 1) AS n"
                    ),
                };
                store.execute_raw(&sql).await.unwrap();
            }
            let built = started.elapsed();
            let started = std::time::Instant::now();
            let deleted = store
                .delete_expired_items(now - 180 * day, 50, now)
                .await
                .unwrap();
            let took = started.elapsed();
            println!(
                "{}: {total} items built in {:.1} s; retention deleted {deleted} in {:.1} s \
                 ({:.0} items/s)",
                store.engine(),
                built.as_secs_f64(),
                took.as_secs_f64(),
                deleted as f64 / took.as_secs_f64()
            );
            assert!(deleted as i64 >= total / 2 - feeds * 60);
            let started = std::time::Instant::now();
            assert_eq!(
                store
                    .delete_expired_items(now - 180 * day, 50, now)
                    .await
                    .unwrap(),
                0
            );
            println!(
                "{}: a run with nothing to delete took {:.2} s",
                store.engine(),
                started.elapsed().as_secs_f64()
            );
        })
        .await;
    }
}

on_both_engines!(spellings_of_one_feed_url_share_one_feed, |db| {
    let store = db.migrated().await;
    let (alice, bob) = (user(&store, "alice").await, user(&store, "bob").await);
    let (_, feed) = follow(&store, alice, "HTTPS://Example.COM:443/feed.xml#latest").await;
    let (_, same) = follow(&store, bob, "https://example.com/feed.xml?").await;
    assert_eq!(feed, same, "one feed row for both spellings (F10)");
    assert_eq!(
        store.feed_fetch_state(feed).await.unwrap().url,
        "https://example.com/feed.xml"
    );
    assert_eq!(
        store
            .feed_id_by_url("https://example.com:443/%66eed.xml")
            .await
            .unwrap(),
        Some(feed)
    );
    // Another spelling is the same subscription.
    let again = store
        .subscribe(
            alice,
            &tidings_store::NewSubscription {
                feed_url: "https://example.com/feed.xml#comments".into(),
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(again, Err(tidings_store::StoreError::Conflict(_))),
        "{again:?}"
    );
    // A permanent redirect to another spelling of the same URL changes nothing.
    assert_eq!(
        store
            .move_feed(feed, "https://EXAMPLE.com/feed.xml#x", unix_now())
            .await
            .unwrap(),
        FeedMove::Unchanged
    );
    // http and https, another port, another path stay other feeds.
    for other in [
        "http://example.com/feed.xml",
        "https://example.com:8443/feed.xml",
        "https://example.com/Feed.xml",
    ] {
        assert_ne!(follow(&store, alice, other).await.1, feed, "{other}");
    }
});

/// A user's unread items over all their subscriptions, as the counts endpoint gives them.
async fn total_unread(store: &tidings_store::Store, user: i64) -> i64 {
    let counts = store.unread_counts(user).await.unwrap();
    counts.subscriptions.iter().map(|s| s.unread).sum()
}

on_both_engines!(migration_normalizes_feed_urls_and_merges_duplicates, |db| {
    let store = db.migrated().await;
    let (ann, bob) = (user(&store, "ann").await, user(&store, "bob").await);
    let now = unix_now();
    // Feeds stored before URLs were normalized: two spellings of one feed, and a lone one.
    let (ann_keep, keep) = follow(&store, ann, "https://example.com/feed").await;
    let (ann_dup, dup) = follow(&store, ann, "https://placeholder.example/dup").await;
    let (bob_dup, _) = follow(&store, bob, "https://placeholder.example/dup").await;
    let (_, lone) = follow(&store, bob, "https://placeholder.example/lone").await;
    store
        .execute_raw(&format!(
            "UPDATE feeds SET url = 'HTTPS://Example.COM:443/feed?#top' WHERE id = {dup};
             UPDATE feeds SET url = 'http://Lone.example:80?' WHERE id = {lone};"
        ))
        .await
        .unwrap();
    let tech = store.create_group(ann, "Tech").await.unwrap();
    store
        .update_subscription(
            ann,
            ann_dup,
            &tidings_store::SubscriptionChanges {
                title: Some(Some("My feed".into())),
                group_id: Some(tech.id),
                interval_minutes: Some(120),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // "shared" is in both; "a" only in the kept feed, "c" only in the duplicate.
    store
        .upsert_items(keep, &[item("a", now - 30), item("shared", now - 20)], now)
        .await
        .unwrap();
    store
        .upsert_items(dup, &[item("shared", now - 20), item("c", now - 10)], now)
        .await
        .unwrap();
    // Ann read everything of the duplicate by its watermark and starred its "c"; Bob, who
    // follows only the duplicate, starred "shared".
    let dup_ids = ids_by_guid(&store, ann, dup).await;
    store
        .set_item_state(ann, dup_ids["c"], None, Some(true))
        .await
        .unwrap();
    store
        .mark_read(ann, &tidings_store::MarkReadScope::Feed(dup), None)
        .await
        .unwrap();
    store
        .set_item_state(bob, dup_ids["shared"], None, Some(true))
        .await
        .unwrap();
    assert_eq!(total_unread(&store, ann).await, 2);

    // The migration runs again, as on an upgrade from a database stored before it.
    store
        .execute_raw("DELETE FROM schema_migrations WHERE version = 10")
        .await
        .unwrap();
    assert_eq!(store.migrate().await.unwrap(), vec![10]);

    let feeds = store.list_feeds().await.unwrap();
    let urls: Vec<(i64, &str)> = feeds.iter().map(|f| (f.id, f.url.as_str())).collect();
    assert_eq!(
        urls,
        vec![
            (keep, "https://example.com/feed"),
            (lone, "http://lone.example/")
        ]
    );
    // Ann has one subscription left: the one to the remaining feed, which keeps its group
    // and settings and takes the title she gave the other.
    let ann_subs = store.list_subscriptions(ann).await.unwrap();
    assert_eq!(ann_subs.len(), 1, "{ann_subs:?}");
    assert_eq!(ann_subs[0].id, ann_keep);
    assert_eq!(ann_subs[0].feed_id, keep);
    assert_eq!(ann_subs[0].custom_title.as_deref(), Some("My feed"));
    // Bob's subscription moved to the remaining feed.
    let bob_subs = store.list_subscriptions(bob).await.unwrap();
    assert_eq!(bob_subs.len(), 2);
    assert!(
        bob_subs
            .iter()
            .any(|s| s.id == bob_dup && s.feed_id == keep)
    );
    // The items are deduplicated by identity: "a", "shared" and "c", once each.
    assert_eq!(store.count_items(keep).await.unwrap(), 3);
    let ids = ids_by_guid(&store, ann, keep).await;
    // What Ann read in the duplicate stays read, her star stays; "a" was never read.
    let seen = |id| store.item(ann, id);
    assert!(!seen(ids["a"]).await.unwrap().is_read);
    assert!(seen(ids["shared"]).await.unwrap().is_read);
    let c = seen(ids["c"]).await.unwrap();
    assert!(c.is_read && c.is_starred);
    assert_eq!(ann_subs[0].unread_count, 1);
    assert_eq!(total_unread(&store, ann).await, 1);
    // Bob's star followed "shared" to the remaining copy; everything is unread for him.
    assert!(store.item(bob, ids["shared"]).await.unwrap().is_starred);
    let bob_keep = bob_subs.iter().find(|s| s.feed_id == keep).unwrap();
    assert_eq!(bob_keep.unread_count, 3);

    // Run once more on normalized URLs: nothing changes.
    store
        .execute_raw("DELETE FROM schema_migrations WHERE version = 10")
        .await
        .unwrap();
    assert_eq!(store.migrate().await.unwrap(), vec![10]);
    assert_eq!(store.list_feeds().await.unwrap(), feeds);
});
