//! Duplicates across feeds (issue 35), on both engines: a story that arrives from several
//! feeds is clustered once, each subscriber is shown one copy (the earliest published, or
//! their preferred feed's), listings and counts collapse it per preference, read marks reach
//! every copy, and the per-feed "never merge" and an unsubscribe list the copies again.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    ItemFilter, ItemQuery, MarkReadScope, NewItem, PreferenceChanges, Store, SubscriptionChanges,
    SyncIds, SyncOrder, SyncQuery, unix_now,
};

/// A wire story's text, long enough for the texts to be compared.
const WIRE_TEXT: &str = "<p>The central bank left its main interest rate unchanged on Thursday, \
    saying inflation had cooled faster than expected over the summer while the labour market \
    stayed tight. Policymakers voted seven to two to hold the rate, and the governor told \
    reporters that cuts would depend on wage growth in the coming months.</p>";

/// An item with a link, title and text, published an hour ago.
fn story(guid: &str, url: &str, title: &str, text: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(url.into()),
        title: Some(title.into()),
        content: Some(text.into()),
        published: Some(unix_now() - 3600),
        ..NewItem::default()
    }
}

/// The wire's story under `url`, as feed item `guid`.
fn bank(guid: &str, url: &str) -> NewItem {
    story(guid, url, "Bank holds rates as inflation cools", WIRE_TEXT)
}

async fn store_items(store: &Store, feed_id: i64, items: &[NewItem]) -> u64 {
    store
        .store_fetch(feed_id, items, unix_now(), &Default::default())
        .await
        .unwrap()
        .clustered
}

/// The ids the user's listing shows (all items, newest first).
async fn listed(store: &Store, user_id: i64, collapse: bool) -> Vec<i64> {
    let query = ItemQuery {
        filter: ItemFilter::All,
        limit: 100,
        collapse,
        ..ItemQuery::default()
    };
    let page = store.list_items(user_id, &query).await.unwrap();
    let mut ids: Vec<i64> = page.items.iter().map(|i| i.id).collect();
    ids.sort_unstable();
    ids
}

async fn unread_listed(store: &Store, user_id: i64) -> Vec<i64> {
    let query = ItemQuery {
        filter: ItemFilter::Unread,
        limit: 100,
        collapse: true,
        ..ItemQuery::default()
    };
    let page = store.list_items(user_id, &query).await.unwrap();
    let mut ids: Vec<i64> = page.items.iter().map(|i| i.id).collect();
    ids.sort_unstable();
    ids
}

async fn total_unread(store: &Store, user_id: i64) -> i64 {
    let counts = store.unread_counts(user_id).await.unwrap();
    counts.subscriptions.iter().map(|c| c.unread).sum()
}

async fn item_id(store: &Store, feed_id: i64) -> i64 {
    store.feed_item_ids(feed_id).await.unwrap()[0]
}

async fn set_duplicates(store: &Store, user_id: i64, subscription: i64, choice: &str) {
    let changes = SubscriptionChanges {
        duplicates: Some(choice.into()),
        ..SubscriptionChanges::default()
    };
    let updated = store
        .update_subscription(user_id, subscription, &changes)
        .await
        .unwrap();
    assert_eq!(updated.duplicates, choice);
}

on_both_engines!(a_story_from_two_feeds_is_listed_once_and_read_once, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
    follow(&store, bob, "https://paper.example/feed").await;

    let original = "https://wire.example/2026/11/bank-holds-rates";
    assert_eq!(
        store_items(
            &store,
            wire,
            &[story(
                "w1",
                original,
                "Bank holds rates as inflation cools",
                WIRE_TEXT
            )]
        )
        .await,
        0
    );
    // The paper's copy: http, www, a tracking tail, its own site name in the title.
    let copy = "http://www.wire.example/2026/11/bank-holds-rates/?utm_source=paper&utm_medium=rss";
    assert_eq!(
        store_items(
            &store,
            paper,
            &[story(
                "p1",
                copy,
                "Bank holds rates as inflation cools - Paper",
                WIRE_TEXT
            )]
        )
        .await,
        1
    );
    let (w, p) = (item_id(&store, wire).await, item_id(&store, paper).await);

    // Ann sees the story once, the copy she saw first; every copy without collapsing.
    assert_eq!(listed(&store, ann, true).await, vec![w]);
    assert_eq!(listed(&store, ann, false).await, vec![w, p]);
    assert_eq!(total_unread(&store, ann).await, 1, "counted once");
    let clusters = store.clusters_of(ann, &[w, p]).await.unwrap();
    let cluster = &clusters[&w];
    assert_eq!(cluster.size, 2);
    assert_eq!(cluster.also_in.len(), 1);
    assert_eq!(cluster.also_in[0].item_id, p);
    assert_eq!(cluster.also_in[0].feed_id, paper);
    assert_eq!(clusters[&p].id, cluster.id, "one cluster id for every copy");

    // Bob follows only the paper: no other copy, no cluster, nothing left out.
    assert!(store.clusters_of(bob, &[p]).await.unwrap().is_empty());
    assert_eq!(listed(&store, bob, true).await, vec![p]);

    // Reading the copy shown reads the other (Ann reads by cluster, the default).
    store
        .set_item_state(ann, w, Some(true), None)
        .await
        .unwrap();
    assert!(store.item(ann, p).await.unwrap().is_read);
    assert_eq!(total_unread(&store, ann).await, 0);
    // Bob's copy is his own: unread.
    assert!(!store.item(bob, p).await.unwrap().is_read);
    // Unread again, both; a star stays on the copy starred.
    store
        .set_item_state(ann, p, Some(false), Some(true))
        .await
        .unwrap();
    assert!(!store.item(ann, w).await.unwrap().is_read);
    assert!(!store.item(ann, w).await.unwrap().is_starred);
    assert_eq!(unread_listed(&store, ann).await, vec![w]);

    // A mark-read by ids reaches the copy too, and its undo names both.
    let outcome = store
        .mark_read_undoable(ann, &MarkReadScope::Ids(vec![w]), None)
        .await
        .unwrap();
    assert_eq!(outcome.marked, 2);

    // Reading by copy: only that copy.
    store
        .update_preferences(
            ann,
            &PreferenceChanges {
                duplicates_read: Some("copy".into()),
                ..PreferenceChanges::default()
            },
        )
        .await
        .unwrap();
    store
        .set_item_state(ann, w, Some(false), None)
        .await
        .unwrap();
    assert!(store.item(ann, p).await.unwrap().is_read);
    assert!(
        store
            .update_preferences(
                ann,
                &PreferenceChanges {
                    duplicates_read: Some("feed".into()),
                    ..PreferenceChanges::default()
                },
            )
            .await
            .is_err(),
        "an unknown mode is refused"
    );
});

on_both_engines!(look_alikes_that_are_other_stories_stay_apart, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, a) = follow(&store, ann, "https://a.example/feed").await;
    let (_, b) = follow(&store, ann, "https://b.example/feed").await;
    let part = |n: u32| {
        format!(
            "<p>Part {n} of our series on the river: the towns along its banks, the ferries \
             that still cross it and the people who have run them for three generations, \
             told in their own words.</p>"
        )
    };
    store_items(
        &store,
        a,
        &[story(
            "a1",
            "https://a.example/river-1",
            "Life on the river, part 1",
            &part(1),
        )],
    )
    .await;
    // The same series' next part, elsewhere: a series is never merged.
    assert_eq!(
        store_items(
            &store,
            b,
            &[story(
                "b2",
                "https://b.example/river-2",
                "Life on the river, part 2",
                &part(2)
            )]
        )
        .await,
        0
    );
    // Another outlet's own article on the same event: different texts.
    store_items(
        &store,
        a,
        &[story(
            "a2",
            "https://a.example/bank",
            "Bank holds rates as inflation cools",
            WIRE_TEXT,
        )],
    )
    .await;
    let own = "<p>Rates stay where they are. Our economics editor explains what the decision \
               means for mortgages, savers and the pound, and why two members wanted a cut \
               already this month despite the governor's warning.</p>";
    assert_eq!(
        store_items(
            &store,
            b,
            &[story(
                "b3",
                "https://b.example/rates-explained",
                "Bank holds rates as inflation cools",
                own
            )]
        )
        .await,
        0
    );
    assert_eq!(listed(&store, ann, true).await.len(), 4);
});

on_both_engines!(per_feed_choices_prefer_and_never_merge, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (paper_sub, paper) = follow(&store, ann, "https://paper.example/feed").await;
    let (blog_sub, blog) = follow(&store, ann, "https://blog.example/feed").await;
    set_duplicates(&store, ann, paper_sub, "prefer").await;

    let url = "https://wire.example/2026/11/bank-holds-rates";
    store_items(&store, wire, &[bank("w1", url)]).await;
    store_items(&store, paper, &[bank("p1", url)]).await;
    let (w, p) = (item_id(&store, wire).await, item_id(&store, paper).await);
    // The preferred feed's copy is the one listed, though it came second.
    assert_eq!(listed(&store, ann, true).await, vec![p]);

    // A third copy, from a feed set never to merge: listed on its own, in no cluster.
    set_duplicates(&store, ann, blog_sub, "never").await;
    store_items(&store, blog, &[bank("b1", url)]).await;
    let b = item_id(&store, blog).await;
    assert_eq!(listed(&store, ann, true).await, vec![p, b]);
    assert!(!store.clusters_of(ann, &[b]).await.unwrap().contains_key(&b));
    assert_eq!(store.clusters_of(ann, &[p]).await.unwrap()[&p].size, 2);

    // Setting the paper to never merge lists every copy again.
    set_duplicates(&store, ann, paper_sub, "never").await;
    assert_eq!(listed(&store, ann, true).await, vec![w, p, b]);
    let bad = SubscriptionChanges {
        duplicates: Some("sometimes".into()),
        ..SubscriptionChanges::default()
    };
    assert!(
        store
            .update_subscription(ann, paper_sub, &bad)
            .await
            .is_err()
    );
});

on_both_engines!(
    the_earliest_copy_is_shown_whichever_feed_was_fetched_first,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
        let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
        let url = "https://wire.example/2026/11/bank-holds-rates";
        // The paper reprinted the story an hour after the wire, and was fetched first.
        let mut reprint = bank("p1", url);
        reprint.published = Some(unix_now() - 1800);
        let mut original = bank("w1", url);
        original.published = Some(unix_now() - 5400);
        store_items(&store, paper, &[reprint]).await;
        let p = item_id(&store, paper).await;
        assert_eq!(listed(&store, ann, true).await, vec![p]);
        assert_eq!(store_items(&store, wire, &[original]).await, 1);
        let w = item_id(&store, wire).await;
        // The wire's copy takes the paper's place; the paper's is one click away.
        assert_eq!(listed(&store, ann, true).await, vec![w]);
        assert_eq!(total_unread(&store, ann).await, 1);
        let clusters = store.clusters_of(ann, &[w]).await.unwrap();
        assert_eq!(clusters[&w].also_in[0].item_id, p);
    }
);

on_both_engines!(a_backlog_and_an_unsubscribe_keep_the_clusters_right, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let cat = user(&store, "cat").await;
    let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
    let url = "https://wire.example/2026/11/bank-holds-rates";
    store_items(&store, wire, &[bank("w1", url)]).await;
    store_items(&store, paper, &[bank("p1", url)]).await;
    let (w, p) = (item_id(&store, wire).await, item_id(&store, paper).await);

    // Cat subscribes to both later: the backlog's copy is shown once for her too.
    follow(&store, cat, "https://wire.example/feed").await;
    let (cat_paper, _) = follow(&store, cat, "https://paper.example/feed").await;
    assert_eq!(listed(&store, cat, true).await, vec![w]);
    assert_eq!(total_unread(&store, cat).await, 1);

    // The sync APIs follow the preference (on by default), or every copy when asked.
    let sync = |collapse: Option<bool>| SyncQuery {
        ids_are: SyncIds::Arrival,
        order: SyncOrder::IdAscending,
        limit: 100,
        collapse,
        ..SyncQuery::default()
    };
    let ids = |refs: Vec<tidings_store::SyncRef>| {
        let mut ids: Vec<i64> = refs.iter().map(|r| r.item_id).collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(
        ids(store.sync_item_ids(cat, &sync(None)).await.unwrap()),
        vec![w]
    );
    assert_eq!(
        ids(store.sync_item_ids(cat, &sync(Some(false))).await.unwrap()),
        vec![w, p]
    );
    assert_eq!(
        store
            .sync_arrival_refs(cat, &sync(None))
            .await
            .unwrap()
            .len(),
        1
    );
    store
        .update_preferences(
            cat,
            &PreferenceChanges {
                collapse_duplicates: Some(false),
                ..PreferenceChanges::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        ids(store.sync_item_ids(cat, &sync(None)).await.unwrap()),
        vec![w, p]
    );
    assert_eq!(
        total_unread(&store, cat).await,
        2,
        "every copy counts when not collapsed"
    );

    // Ann stops following the wire: the paper's copy is hers to see again.
    let wire_sub = store
        .list_subscriptions(ann)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.feed_id == wire)
        .unwrap()
        .id;
    store.unsubscribe(ann, wire_sub).await.unwrap();
    assert_eq!(listed(&store, ann, true).await, vec![p]);
    assert!(store.clusters_of(ann, &[p]).await.unwrap().is_empty());
    let _ = cat_paper;
});

on_both_engines!(old_items_are_not_clustered_and_old_keys_are_pruned, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
    let url = "https://wire.example/2026/11/bank-holds-rates";
    let old = |guid: &str| NewItem {
        published: Some(unix_now() - 60 * 86_400),
        ..story(guid, url, "Bank holds rates as inflation cools", WIRE_TEXT)
    };
    store_items(&store, wire, &[old("w1")]).await;
    assert_eq!(store_items(&store, paper, &[old("p1")]).await, 0);
    assert_eq!(listed(&store, ann, true).await.len(), 2);

    // A recent story's keys live until they are older than the window.
    let (_, blog) = follow(&store, ann, "https://blog.example/feed").await;
    store_items(&store, blog, &[bank("b1", url)]).await;
    assert_eq!(
        store.prune_story_keys(unix_now() - 86_400).await.unwrap(),
        0
    );
    assert_eq!(store.prune_story_keys(unix_now() + 10).await.unwrap(), 1);
    assert_eq!(store.prune_story_keys(unix_now() + 10).await.unwrap(), 0);
});

on_both_engines!(deleted_items_take_their_lookup_keys_along, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (wire_sub, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
    let url = "https://wire.example/2026/11/bank-holds-rates";
    store_items(&store, wire, &[bank("w1", url)]).await;
    let keyed = store.story_key_rows().await.unwrap();
    assert!(keyed > 0, "a recent story stores its keys");
    store_items(
        &store,
        paper,
        &[story(
            "p1",
            "https://paper.example/p1",
            "Storm closes bridges on the coast",
            STORM_TEXT,
        )],
    )
    .await;
    let both = store.story_key_rows().await.unwrap();
    assert!(both > keyed);

    // Retention deletes the paper's item: its keys go with it (there is no foreign key to
    // cascade; a trigger on items does it), and the wire's stay.
    let now = unix_now();
    store
        .execute_raw(&format!(
            "UPDATE items SET fetched_at = {} WHERE feed_id = {paper}",
            now - 400 * 86_400
        ))
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_expired_items(now - 200 * 86_400, 0, now)
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.story_key_rows().await.unwrap(), keyed);

    // The wire's feed deleted when nobody follows it: its items' keys go too (the cascade
    // from feeds to items fires the trigger).
    store.unsubscribe(ann, wire_sub).await.unwrap();
    store
        .execute_raw(&format!(
            "UPDATE feeds SET orphaned_at = {} WHERE id = {wire}",
            now - 400 * 86_400
        ))
        .await
        .unwrap();
    assert_eq!(store.delete_orphan_feeds(now).await.unwrap(), 1);
    assert_eq!(store.story_key_rows().await.unwrap(), 0);

    // A copy of the story arriving later finds nothing of the deleted one.
    let (_, blog) = follow(&store, ann, "https://blog.example/feed").await;
    assert_eq!(store_items(&store, blog, &[bank("b1", url)]).await, 0);
});

/// Another wire story, on another subject.
const STORM_TEXT: &str = "<p>A storm brought heavy rain and gusts of up to 120 kilometres an \
    hour to the coast overnight, closing two bridges and leaving thousands of homes without \
    power. Ferries stayed in port, and the weather service expects the wind to ease by Sunday \
    evening as the system moves north over the sea.</p>";

on_both_engines!(one_fetch_with_several_copies_shows_each_story_once, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
    let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
    follow(&store, bob, "https://paper.example/feed").await;
    let storm =
        |guid: &str, url: &str| story(guid, url, "Storm closes bridges on the coast", STORM_TEXT);
    let stored = [
        bank("w1", "https://wire.example/bank"),
        storm("w2", "https://wire.example/storm"),
    ];
    assert_eq!(store_items(&store, wire, &stored).await, 0);
    // One fetch of the paper: copies of both stories (clustered in one round), and the bank
    // story a second time under another link (decided after the first copy's writes).
    let fetch = [
        bank("p1", "https://www.wire.example/bank?utm_source=paper"),
        storm("p2", "http://wire.example/storm/"),
        bank("p3", "https://wire.example/bank#again"),
    ];
    assert_eq!(store_items(&store, paper, &fetch).await, 3);
    let wire_ids = store.feed_item_ids(wire).await.unwrap();
    let paper_ids = store.feed_item_ids(paper).await.unwrap();
    assert_eq!(paper_ids.len(), 3);

    // Ann sees each story once, through the wire's copies, and counts two unread.
    let mut expected = wire_ids.clone();
    expected.sort_unstable();
    assert_eq!(listed(&store, ann, true).await, expected);
    assert_eq!(listed(&store, ann, false).await.len(), 5);
    assert_eq!(total_unread(&store, ann).await, 2);
    // Reading the wire's bank story reads the paper's copies of it for Ann, not the storm.
    let mut bank_id = wire_ids[0];
    let mut storm_id = wire_ids[1];
    if store.item(ann, bank_id).await.unwrap().title.as_deref()
        != Some(stored[0].title.as_deref().unwrap())
    {
        std::mem::swap(&mut bank_id, &mut storm_id);
    }
    store
        .mark_read_undoable(ann, &MarkReadScope::Ids(vec![bank_id]), None)
        .await
        .unwrap();
    assert_eq!(unread_listed(&store, ann).await, vec![storm_id]);
    assert_eq!(total_unread(&store, ann).await, 1);
    // Bob follows the paper alone: every copy is his, unread.
    assert_eq!(listed(&store, bob, true).await.len(), 3);
    assert_eq!(total_unread(&store, bob).await, 3);
});

on_both_engines!(
    earlier_copies_in_one_fetch_take_the_stored_ones_place,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, wire) = follow(&store, ann, "https://wire.example/feed").await;
        let (_, paper) = follow(&store, ann, "https://paper.example/feed").await;
        assert_eq!(
            store_items(&store, wire, &[bank("w1", "https://wire.example/bank")]).await,
            0
        );
        let w = item_id(&store, wire).await;
        // The paper had the story an hour before the wire, twice in one fetch: its first copy
        // takes the wire's place; the second, from the same feed, is never merged with the first
        // and stands alone.
        let earlier = |guid: &str, url: &str| NewItem {
            published: Some(unix_now() - 7200),
            ..bank(guid, url)
        };
        let fetch = [
            earlier("p1", "https://www.wire.example/bank?utm_source=paper"),
            earlier("p3", "https://wire.example/bank#again"),
        ];
        assert_eq!(store_items(&store, paper, &fetch).await, 2);
        let shown = listed(&store, ann, true).await;
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(
            !shown.contains(&w),
            "the wire's copy is shown through the paper's"
        );
        assert_eq!(total_unread(&store, ann).await, 2);
    }
);
