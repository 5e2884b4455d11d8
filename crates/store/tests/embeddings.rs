//! Related items (F44) on both engines: items are queued for vectors by the embedding job
//! itself (new items first, then older ones newest first), claimed with leases, stored with
//! their model and a seq the server's index reads on from; failures wait and are dropped
//! after too many; a new model embeds everything again; reads for a user only ever return
//! items of their subscriptions.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    EmbeddingJob, ItemVector, MAX_EMBEDDING_ATTEMPTS, NewItem, Store, StoreError, StoredCode,
};

fn item(guid: &str, title: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://example.com/{guid}")),
        title: Some(title.into()),
        summary: Some(format!("<p>About {title}</p>")),
        published: Some(published),
        ..NewItem::default()
    }
}

/// A vector and code standing for an item: its id in every byte.
fn vector_of(job: &EmbeddingJob) -> ItemVector {
    ItemVector {
        item_id: job.item_id,
        vector: vec![job.item_id as u8; 4],
        code: vec![job.item_id as u8; 32],
    }
}

async fn ids(store: &Store, feed: i64) -> Vec<i64> {
    let mut ids = store.feed_item_ids(feed).await.unwrap();
    ids.sort();
    ids
}

/// The id of `feed`'s item with `guid`.
async fn id_of(store: &Store, user_id: i64, feed: i64, guid: &str) -> i64 {
    for id in store.feed_item_ids(feed).await.unwrap() {
        if store.item(user_id, id).await.unwrap().guid.as_deref() == Some(guid) {
            return id;
        }
    }
    panic!("no item {guid}");
}

on_both_engines!(new_items_first_then_the_backfill_newest_first, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    // Items stored before any worker chose a model: the backfill's.
    let old: Vec<NewItem> = (0..5)
        .map(|n| item(&format!("old{n}"), &format!("Old {n}"), 1_000 + n))
        .collect();
    store.upsert_items(feed, &old, 100).await.unwrap();
    let old_ids = ids(&store, feed).await;
    // No model yet: nothing is queued.
    assert!(store.embedding_model().await.unwrap().is_none());
    assert!(
        store
            .claim_embedding_jobs("w1", 200, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.use_embedding_model("local-v1").await.unwrap());
    assert!(!store.use_embedding_model("local-v1").await.unwrap());
    assert_eq!(store.embedding_backfill_left().await.unwrap(), 5);
    // New items arrive after the model was chosen.
    store
        .upsert_items(
            feed,
            &[item("new0", "New 0", 3_000), item("new1", "New 1", 3_001)],
            300,
        )
        .await
        .unwrap();
    let new_ids: Vec<i64> = ids(&store, feed)
        .await
        .into_iter()
        .filter(|id| !old_ids.contains(id))
        .collect();

    // The first claim gets the new items, then the old ones newest first.
    let first = store.claim_embedding_jobs("w1", 400, 4, 60).await.unwrap();
    let claimed: Vec<i64> = first.iter().map(|j| j.item_id).collect();
    assert_eq!(claimed, [new_ids[1], new_ids[0], old_ids[4], old_ids[3]]);
    assert!(first.iter().all(|j| j.attempts == 0 && j.title.is_some()));
    assert!(first[0].summary.as_deref().unwrap().contains("New 1"));
    // Leased: another worker gets the rest only.
    let second = store.claim_embedding_jobs("w2", 400, 10, 60).await.unwrap();
    let claimed: Vec<i64> = second.iter().map(|j| j.item_id).collect();
    assert_eq!(claimed, [old_ids[2], old_ids[1], old_ids[0]]);
    assert_eq!(store.embedding_backfill_left().await.unwrap(), 0);
    assert_eq!(store.embedding_queue_len().await.unwrap(), 7);

    let vectors: Vec<ItemVector> = first.iter().map(vector_of).collect();
    assert_eq!(
        store
            .save_embeddings("local-v1", &vectors, 500)
            .await
            .unwrap(),
        4
    );
    // Saved once: a second save of the same (no longer queued) items stores nothing.
    assert_eq!(
        store
            .save_embeddings("local-v1", &vectors, 500)
            .await
            .unwrap(),
        0
    );
    let rest: Vec<ItemVector> = second.iter().map(vector_of).collect();
    assert_eq!(
        store.save_embeddings("local-v1", &rest, 510).await.unwrap(),
        3
    );
    assert_eq!(store.embedding_queue_len().await.unwrap(), 0);
    assert!(
        store
            .claim_embedding_jobs("w1", 600, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );

    // The index reads codes in seq order, on from where it stopped, with the items' feeds.
    let codes = store
        .embedding_codes_after("local-v1", 0, 100)
        .await
        .unwrap();
    assert_eq!(codes.len(), 7);
    assert!(codes.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(
        codes
            .iter()
            .all(|c| c.feed_id == feed && c.code.len() == 32)
    );
    let after = store
        .embedding_codes_after("local-v1", codes[3].seq, 2)
        .await
        .unwrap();
    assert_eq!(after, codes[4..6].to_vec());
    assert!(
        store
            .embedding_codes_after("other", 0, 100)
            .await
            .unwrap()
            .is_empty()
    );

    phase_later_item_and_another_model(&store, feed, &codes).await;
});

/// A new item later is queued and embedded with a seq after every earlier one; another model
/// embeds every item again, newest first, and the old vectors are no longer read.
async fn phase_later_item_and_another_model(store: &Store, feed: i64, codes: &[StoredCode]) {
    // A new item later: queued and embedded, with a seq after every earlier one.
    store
        .upsert_items(feed, &[item("new2", "New 2", 4_000)], 700)
        .await
        .unwrap();
    let jobs = store.claim_embedding_jobs("w1", 800, 10, 60).await.unwrap();
    assert_eq!(jobs.len(), 1);
    let vectors: Vec<ItemVector> = jobs.iter().map(vector_of).collect();
    store
        .save_embeddings("local-v1", &vectors, 800)
        .await
        .unwrap();
    let last = store
        .embedding_codes_after("local-v1", codes[6].seq, 10)
        .await
        .unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].item_id, jobs[0].item_id);

    // Another model: every item is embedded again, newest first; the old vectors are no
    // longer read.
    assert!(store.use_embedding_model("openai:small").await.unwrap());
    let again = store
        .claim_embedding_jobs("w1", 900, 100, 60)
        .await
        .unwrap();
    assert_eq!(again.len(), 8);
    assert!(again.windows(2).all(|w| w[0].item_id > w[1].item_id));
    let vectors: Vec<ItemVector> = again.iter().map(vector_of).collect();
    assert_eq!(
        store
            .save_embeddings("openai:small", &vectors, 900)
            .await
            .unwrap(),
        8
    );
    assert!(
        store
            .embedding_codes_after("local-v1", 0, 100)
            .await
            .unwrap()
            .is_empty()
    );
    let moved: Vec<StoredCode> = store
        .embedding_codes_after("openai:small", last[0].seq, 100)
        .await
        .unwrap();
    assert_eq!(moved.len(), 8);
}

on_both_engines!(
    failed_items_wait_and_are_dropped_after_too_many_attempts,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
        store.use_embedding_model("m").await.unwrap();
        store
            .upsert_items(feed, &[item("a", "A", 1_000), item("b", "B", 1_001)], 100)
            .await
            .unwrap();
        let mut now = 200;
        for attempt in 0..MAX_EMBEDDING_ATTEMPTS {
            let jobs = store.claim_embedding_jobs("w", now, 10, 60).await.unwrap();
            assert_eq!(jobs.len(), 2, "attempt {attempt}");
            assert!(jobs.iter().all(|j| j.attempts == attempt));
            let ids: Vec<i64> = jobs.iter().map(|j| j.item_id).collect();
            let dropped = store.retry_embedding_jobs(&ids, now + 30).await.unwrap();
            // Waiting: not claimed before not_before, even with the lease gone.
            assert!(
                store
                    .claim_embedding_jobs("w", now + 29, 10, 60)
                    .await
                    .unwrap()
                    .is_empty()
                    || dropped == 2
            );
            if attempt + 1 == MAX_EMBEDDING_ATTEMPTS {
                assert_eq!(dropped, 2);
            } else {
                assert_eq!(dropped, 0);
            }
            now += 30;
        }
        assert_eq!(store.embedding_queue_len().await.unwrap(), 0);
        // An expired lease (a worker that died) is claimed again.
        store
            .upsert_items(feed, &[item("c", "C", 2_000)], now)
            .await
            .unwrap();
        assert_eq!(
            store
                .claim_embedding_jobs("dead", now, 10, 60)
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(
            store
                .claim_embedding_jobs("w", now + 59, 10, 60)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .claim_embedding_jobs("w", now + 60, 10, 60)
                .await
                .unwrap()
                .len(),
            1
        );
    }
);

on_both_engines!(reads_for_a_user_see_only_their_subscriptions, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, news) = follow(&store, ann, "https://news.example/feed").await;
    let (bob_sub, blog) = follow(&store, bob, "https://blog.example/feed").await;
    store.use_embedding_model("m").await.unwrap();
    store
        .upsert_items(
            news,
            &[item("a", "Ann's A", 1_000), item("b", "Ann's B", 1_001)],
            100,
        )
        .await
        .unwrap();
    store
        .upsert_items(blog, &[item("c", "Bob's C", 1_002)], 100)
        .await
        .unwrap();
    let (a, b) = (
        id_of(&store, ann, news, "a").await,
        id_of(&store, ann, news, "b").await,
    );
    let c = ids(&store, blog).await[0];
    // Not embedded yet: the item is there, its vector is not.
    assert_eq!(store.item_vector(ann, a).await.unwrap(), None);
    let jobs = store.claim_embedding_jobs("w", 200, 10, 60).await.unwrap();
    let vectors: Vec<ItemVector> = jobs.iter().map(vector_of).collect();
    store.save_embeddings("m", &vectors, 200).await.unwrap();

    let own = store.item_vector(ann, a).await.unwrap().unwrap();
    assert_eq!(own.model, "m");
    assert_eq!(own.vector, vec![a as u8; 4]);
    assert_eq!(own.code, vec![a as u8; 32]);
    // Bob's item is not Ann's to ask about, and the other way round.
    assert!(matches!(
        store.item_vector(ann, c).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.item_vector(bob, a).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.item_vector(ann, 999_999).await,
        Err(StoreError::NotFound(_))
    ));

    let vectors = store.vectors_for_user(ann, "m", &[a, b, c]).await.unwrap();
    let mut seen: Vec<i64> = vectors.keys().copied().collect();
    seen.sort();
    assert_eq!(seen, [a.min(b), a.max(b)]);
    assert!(
        store
            .vectors_for_user(ann, "other", &[a, b])
            .await
            .unwrap()
            .is_empty()
    );

    let titles: Vec<String> = store
        .item_summaries(ann, &[b, c, a])
        .await
        .unwrap()
        .into_iter()
        .filter_map(|i| i.title)
        .collect();
    assert_eq!(titles, ["Ann's B", "Ann's A"]);
    assert_eq!(store.user_feed_ids(ann).await.unwrap(), [news]);

    // Unsubscribed: bob no longer sees his old feed's items or their vectors.
    store.unsubscribe(bob, bob_sub).await.unwrap();
    assert!(matches!(
        store.item_vector(bob, c).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(
        store
            .vectors_for_user(bob, "m", &[c])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.item_summaries(bob, &[c]).await.unwrap().is_empty());
});
