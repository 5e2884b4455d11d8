//! Pausing a subscription and an administrator's feed settings, on both engines: a feed is
//! fetched while one of its subscriptions is not paused, a paused user gets no new items in
//! their arrival order until they resume, and then gets them above what they already had;
//! a suspended feed is fetched for nobody, and its proxy reaches the fetch.

use tidings_testkit::{add_items, add_user as user, follow, on_both_engines};

use tidings_store::{
    FeedSettingsChanges, Store, StoreError, SubscriptionChanges, SyncIds, SyncOrder, SyncQuery,
    unix_now,
};

/// The user's items in arrival order, as (sync id, item id).
async fn arrivals(store: &Store, user_id: i64) -> Vec<(i64, i64)> {
    let query = SyncQuery {
        ids_are: SyncIds::Arrival,
        order: SyncOrder::IdAscending,
        limit: 1000,
        ..SyncQuery::default()
    };
    let rows = store.sync_item_ids(user_id, &query).await.unwrap();
    rows.iter().map(|r| (r.id, r.item_id)).collect()
}

async fn pause(store: &Store, user_id: i64, subscription: i64, suspended: bool) {
    let changes = SubscriptionChanges {
        suspended: Some(suspended),
        ..SubscriptionChanges::default()
    };
    let updated = store
        .update_subscription(user_id, subscription, &changes)
        .await
        .unwrap();
    assert_eq!(updated.suspended, suspended);
}

/// The feeds a worker would claim now (claims and releases them again).
async fn due(store: &Store) -> Vec<i64> {
    let now = unix_now() + 1;
    let claimed = store.claim_due_feeds("probe", now, 100, 60).await.unwrap();
    let ids: Vec<i64> = claimed.iter().map(|d| d.feed_id).collect();
    store.release_feeds("probe", &ids).await.unwrap();
    ids
}

on_both_engines!(
    a_feed_is_fetched_while_one_subscription_is_not_paused,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (ann_sub, feed) = follow(&store, ann, "https://a.example/feed").await;
        assert_eq!(due(&store).await, vec![feed]);

        // Ann alone follows it and pauses: nobody fetches it.
        pause(&store, ann, ann_sub, true).await;
        assert!(store.subscription(ann, ann_sub).await.unwrap().suspended);
        assert_eq!(due(&store).await, Vec::<i64>::new());

        // Bob follows it too: his subscription keeps it fetched, at his own interval.
        let (bob_sub, _) = follow(&store, bob, "https://a.example/feed").await;
        let interval = SubscriptionChanges {
            interval_minutes: Some(30),
            ..SubscriptionChanges::default()
        };
        store
            .update_subscription(ann, ann_sub, &interval)
            .await
            .unwrap();
        let claimed = store
            .claim_due_feeds("w", unix_now() + 1, 10, 60)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(
            claimed[0].interval_minutes, 60,
            "a paused subscription's interval does not set the pace"
        );
        store.release_feeds("w", &[feed]).await.unwrap();

        // Both paused: not fetched; one resumes: fetched again.
        pause(&store, bob, bob_sub, true).await;
        assert_eq!(due(&store).await, Vec::<i64>::new());
        pause(&store, ann, ann_sub, false).await;
        assert_eq!(due(&store).await, vec![feed]);
        // Pausing is the user's own: bob's stays paused, and the list says so.
        let listed = store.list_subscriptions(bob).await.unwrap();
        assert!(listed[0].suspended);
        assert!(!store.list_subscriptions(ann).await.unwrap()[0].suspended);
    }
);

on_both_engines!(
    a_paused_user_gets_new_items_on_resume_above_their_marks,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (ann_sub, feed) = follow(&store, ann, "https://a.example/feed").await;
        follow(&store, bob, "https://a.example/feed").await;
        add_items(&store, feed, "a", 0..3).await;
        let before = arrivals(&store, ann).await;
        assert_eq!(before.len(), 3);

        // Paused, ann gets nothing new; bob, who did not pause, does.
        pause(&store, ann, ann_sub, true).await;
        add_items(&store, feed, "a", 3..5).await;
        assert_eq!(arrivals(&store, ann).await, before);
        assert_eq!(arrivals(&store, bob).await.len(), 5);

        // An app of ann's holds her mark; it sees nothing until she resumes.
        let mark = before.last().unwrap().0;
        // Another of ann's feeds goes on while this one is paused.
        let (_, other) = follow(&store, ann, "https://other.example/feed").await;
        add_items(&store, other, "o", 0..1).await;
        let with_other = arrivals(&store, ann).await;
        assert_eq!(with_other.len(), 4);

        pause(&store, ann, ann_sub, false).await;
        let after = arrivals(&store, ann).await;
        assert_eq!(
            &after[..4],
            &with_other[..],
            "ids already handed out never change"
        );
        assert_eq!(after.len(), 6, "what arrived meanwhile comes at resume");
        let items = store.feed_item_ids(feed).await.unwrap();
        let resumed: Vec<i64> = after[4..].iter().map(|r| r.1).collect();
        assert!(resumed.iter().all(|id| items.contains(id)));
        assert!(
            after[4..]
                .iter()
                .all(|r| r.0 > with_other.last().unwrap().0 && r.0 > mark),
            "the resumed items come above everything the apps already have"
        );

        // Resumed, new items reach her again as they come.
        add_items(&store, feed, "a", 5..6).await;
        assert_eq!(arrivals(&store, ann).await.len(), 7);
        // Resuming twice brings nothing twice.
        pause(&store, ann, ann_sub, false).await;
        assert_eq!(arrivals(&store, ann).await.len(), 7);
    }
);

on_both_engines!(
    a_feed_suspended_by_an_administrator_is_fetched_for_nobody,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://a.example/feed").await;
        let settings = store.feed_settings(feed).await.unwrap();
        assert!(!settings.suspended);
        assert_eq!(settings.proxy_url, None);
        assert_eq!((settings.subscribers, settings.active_subscribers), (1, 1));

        let suspend = FeedSettingsChanges {
            suspended: Some(true),
            proxy_url: Some(Some(" socks5h://user:secret@127.0.0.1:1080 ".into())),
        };
        let settings = store.update_feed_settings(feed, &suspend).await.unwrap();
        assert!(settings.suspended);
        assert_eq!(
            settings.proxy_url.as_deref(),
            Some("socks5h://user:secret@127.0.0.1:1080")
        );
        assert_eq!(due(&store).await, Vec::<i64>::new());

        // Resumed: due at once, and the claim carries the proxy to the fetch.
        let resume = FeedSettingsChanges {
            suspended: Some(false),
            proxy_url: None,
        };
        store.update_feed_settings(feed, &resume).await.unwrap();
        let claimed = store
            .claim_due_feeds("w", unix_now() + 1, 10, 60)
            .await
            .unwrap();
        assert_eq!(
            claimed[0].proxy_url.as_deref(),
            Some("socks5h://user:secret@127.0.0.1:1080")
        );
        store.release_feeds("w", &[feed]).await.unwrap();

        // No proxy any more; an unknown feed is not found.
        let direct = FeedSettingsChanges {
            suspended: None,
            proxy_url: Some(None),
        };
        let settings = store.update_feed_settings(feed, &direct).await.unwrap();
        assert_eq!(settings.proxy_url, None);
        assert!(!settings.suspended);
        assert!(matches!(
            store.update_feed_settings(feed + 100, &direct).await,
            Err(StoreError::NotFound("feed"))
        ));
    }
);
