//! Tags with scores (F41) on both engines: new and changed items are queued in the write that
//! stores them, claimed with leases, tagged, re-tagged when their text changes (and not from
//! stale text), listed by tag and counted per user; deleted items drop their tags; items from
//! before tags existed are queued by a resumable backfill.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{ItemFilter, ItemQuery, ItemTag, NewItem, Store, TagCount, TagJob, TaggedItem};

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

fn tag(name: &str, score: f64) -> ItemTag {
    ItemTag {
        name: name.into(),
        score,
    }
}

fn count(name: &str, count: i64) -> TagCount {
    TagCount {
        name: name.into(),
        count,
    }
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

/// The titles of a user's items with the tag `name`, newest first.
async fn titles_tagged(store: &Store, user_id: i64, name: &str) -> Vec<String> {
    let Some(tag_id) = store.tag_id(name).await.unwrap() else {
        return Vec::new();
    };
    let page = store
        .list_items(
            user_id,
            &ItemQuery {
                tag_id: Some(tag_id),
                filter: ItemFilter::All,
                limit: 50,
                ..ItemQuery::default()
            },
        )
        .await
        .unwrap();
    page.items.into_iter().filter_map(|i| i.title).collect()
}

/// Tags each claimed item with `tags(title)`; returns how many items' tags were stored.
async fn save(store: &Store, jobs: &[TagJob], tags: impl Fn(&str) -> Vec<ItemTag>) -> u64 {
    let tagged: Vec<TaggedItem> = jobs
        .iter()
        .map(|job| TaggedItem {
            item_id: job.item_id,
            version: job.version,
            tags: tags(job.title.as_deref().unwrap_or_default()),
        })
        .collect();
    store.save_item_tags(&tagged).await.unwrap()
}

/// Claims everything due at `now` and tags each item with `tags(title)`.
async fn tag_all(store: &Store, now: i64, tags: impl Fn(&str) -> Vec<ItemTag>) -> u64 {
    let jobs = store.claim_tag_jobs("test", now, 100, 60).await.unwrap();
    save(store, &jobs, tags).await
}

/// Tags from a title's words: each word a tag, the first scoring 1.
fn words(title: &str) -> Vec<ItemTag> {
    title
        .split(' ')
        .enumerate()
        .map(|(n, word)| tag(&word.to_lowercase(), 1.0 / (n as f64 + 1.0)))
        .collect()
}

on_both_engines!(items_are_tagged_listed_and_counted_per_user, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, news) = follow(&store, ann, "https://news.example/feed").await;
    let (_, blog) = follow(&store, bob, "https://blog.example/feed").await;
    store
        .upsert_items(
            news,
            &[
                item("a", "Rust WebAssembly", 1_000),
                item("b", "Rust compiler", 2_000),
            ],
            100,
        )
        .await
        .unwrap();
    store
        .upsert_items(blog, &[item("c", "Rust gardening", 1_500)], 100)
        .await
        .unwrap();
    // New items are queued by the write that stores them.
    assert_eq!(store.tag_queue_len().await.unwrap(), 3);
    let jobs = store.claim_tag_jobs("w1", 200, 10, 60).await.unwrap();
    assert_eq!(jobs.len(), 3);
    assert!(
        jobs.iter()
            .all(|j| j.summary.as_deref().unwrap().starts_with("<p>About"))
    );
    // Leased: another worker gets nothing until the lease ends.
    assert!(
        store
            .claim_tag_jobs("w2", 230, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(save(&store, &jobs, words).await, 3);
    assert_eq!(store.tag_queue_len().await.unwrap(), 0);

    let (a, b) = (
        id_of(&store, ann, news, "a").await,
        id_of(&store, ann, news, "b").await,
    );
    let tags = store.tags_of_items(&[a, b]).await.unwrap();
    assert_eq!(tags[&a], [tag("rust", 1.0), tag("webassembly", 0.5)]);
    assert_eq!(tags[&b], [tag("rust", 1.0), tag("compiler", 0.5)]);

    // Counts and listings are per user: ann's news, bob's blog.
    assert_eq!(
        store.top_tags(ann, None, 10).await.unwrap(),
        [
            count("rust", 2),
            count("compiler", 1),
            count("webassembly", 1)
        ]
    );
    assert_eq!(
        store.top_tags(bob, None, 10).await.unwrap(),
        [count("gardening", 1), count("rust", 1)]
    );
    assert_eq!(
        store.top_tags(ann, None, 1).await.unwrap(),
        [count("rust", 2)]
    );
    // Only items published since a time.
    assert_eq!(
        store.top_tags(ann, Some(1_500), 10).await.unwrap(),
        [count("compiler", 1), count("rust", 1)]
    );
    assert_eq!(
        titles_tagged(&store, ann, "rust").await,
        ["Rust compiler", "Rust WebAssembly"]
    );
    assert_eq!(
        titles_tagged(&store, ann, "webassembly").await,
        ["Rust WebAssembly"]
    );
    assert_eq!(titles_tagged(&store, bob, "rust").await, ["Rust gardening"]);
    assert!(titles_tagged(&store, bob, "compiler").await.is_empty());
    assert!(titles_tagged(&store, ann, "unknown").await.is_empty());

    phase_changes_and_retention(&store, (ann, bob), news, (a, b)).await;
});

/// An unchanged item is not queued again, a changed one is; tags of outdated text are not kept;
/// an item with nothing to tag keeps none; retention takes the tags with the items.
async fn phase_changes_and_retention(
    store: &Store,
    (ann, bob): (i64, i64),
    news: i64,
    (a, b): (i64, i64),
) {
    // An unchanged item is not queued again; a changed one is, and gets new tags.
    store
        .upsert_items(news, &[item("a", "Rust WebAssembly", 1_000)], 300)
        .await
        .unwrap();
    assert_eq!(store.tag_queue_len().await.unwrap(), 0);
    store
        .upsert_items(news, &[item("a", "Zig WebAssembly", 1_000)], 300)
        .await
        .unwrap();
    assert_eq!(store.tag_queue_len().await.unwrap(), 1);
    assert_eq!(tag_all(store, 400, words).await, 1);
    assert_eq!(
        store.tags_of_items(&[a]).await.unwrap()[&a],
        [tag("zig", 1.0), tag("webassembly", 0.5)]
    );
    assert_eq!(
        store.top_tags(ann, None, 10).await.unwrap(),
        [
            count("compiler", 1),
            count("rust", 1),
            count("webassembly", 1),
            count("zig", 1)
        ]
    );

    // Tags found from text that changed meanwhile are not kept: the item stays queued and
    // its newer text is tagged next.
    store
        .upsert_items(news, &[item("b", "Rust linker", 2_000)], 500)
        .await
        .unwrap();
    let stale = store.claim_tag_jobs("w1", 600, 10, 60).await.unwrap();
    assert_eq!(stale.len(), 1);
    store
        .upsert_items(news, &[item("b", "Go linker", 2_000)], 610)
        .await
        .unwrap();
    let outdated = TaggedItem {
        item_id: stale[0].item_id,
        version: stale[0].version,
        tags: words("Rust linker"),
    };
    assert_eq!(store.save_item_tags(&[outdated]).await.unwrap(), 0);
    assert_eq!(store.tag_queue_len().await.unwrap(), 1);
    // The change gave up the lease: it is claimed at once, not after the lease.
    assert_eq!(tag_all(store, 620, words).await, 1);
    assert_eq!(titles_tagged(store, ann, "go").await, ["Go linker"]);
    assert!(titles_tagged(store, ann, "compiler").await.is_empty());

    // An item with nothing to tag keeps no tags; names are unique per item.
    store
        .upsert_items(news, &[item("d", "x", 3_000)], 700)
        .await
        .unwrap();
    assert_eq!(
        tag_all(store, 800, |_| vec![tag("dup", 0.5), tag("dup", 0.4)]).await,
        1
    );
    let d = id_of(store, ann, news, "d").await;
    assert_eq!(
        store.tags_of_items(&[d]).await.unwrap()[&d],
        [tag("dup", 0.5)]
    );

    // Retention deletes items: their tags go with them, and the counts follow.
    let deleted = store.delete_expired_items(i64::MAX, 0, 900).await.unwrap();
    assert_eq!(deleted, 4);
    assert!(store.tags_of_items(&[a, b, d]).await.unwrap().is_empty());
    assert!(store.top_tags(ann, None, 10).await.unwrap().is_empty());
    assert!(store.top_tags(bob, None, 10).await.unwrap().is_empty());
    assert!(titles_tagged(store, ann, "zig").await.is_empty());
}

/// As if every item predated migration 20: nothing queued, the backfill's cursor over all.
async fn as_if_before_tags(store: &Store) {
    store.execute_raw("DELETE FROM tag_jobs").await.unwrap();
    store
        .execute_raw(
            "UPDATE tag_backfill SET next_item_id = (SELECT MIN(id) FROM items),
                                     last_item_id = (SELECT MAX(id) FROM items)",
        )
        .await
        .unwrap();
}

on_both_engines!(
    items_from_before_tags_are_queued_by_a_resumable_backfill,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
        let items: Vec<NewItem> = (0..5)
            .map(|n| item(&format!("i{n}"), &format!("Item{n} text"), 1_000 + n))
            .collect();
        store.upsert_items(feed, &items, 100).await.unwrap();
        as_if_before_tags(&store).await;
        assert_eq!(store.tag_queue_len().await.unwrap(), 0);
        // A batch at a time, its progress stored: a restart resumes where this stopped.
        assert_eq!(store.queue_tag_backfill(2, 200).await.unwrap(), 2);
        assert_eq!(store.tag_queue_len().await.unwrap(), 2);
        let reopened = db.open().await;
        assert_eq!(reopened.queue_tag_backfill(2, 200).await.unwrap(), 2);
        assert_eq!(reopened.queue_tag_backfill(2, 200).await.unwrap(), 1);
        assert_eq!(reopened.queue_tag_backfill(2, 200).await.unwrap(), 0);
        assert_eq!(store.tag_queue_len().await.unwrap(), 5);
        as_if_before_tags(&store).await;
        // The claim itself backfills when the queue runs short.
        let mut tagged = 0;
        for round in 0..10 {
            let jobs = store.claim_tag_jobs("w", 300 + round, 2, 60).await.unwrap();
            if jobs.is_empty() {
                break;
            }
            tagged += save(&store, &jobs, words).await;
        }
        assert_eq!(tagged, 5);
        assert_eq!(store.tag_queue_len().await.unwrap(), 0);
        assert_eq!(
            store.top_tags(ann, None, 10).await.unwrap(),
            [
                count("text", 5),
                count("item0", 1),
                count("item1", 1),
                count("item2", 1),
                count("item3", 1),
                count("item4", 1)
            ]
        );
        reopened.close().await;
    }
);

on_both_engines!(concurrent_claims_never_hand_out_more_than_asked, |db| {
    // Several workers claim from one queue while its rows keep changing (items re-queued by
    // new text, leases running out). PostgreSQL once returned more rows than a claim's limit
    // here, and a worker that asked for one unit got three.
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://busy.example/feed").await;
    let items: Vec<NewItem> = (0..200)
        .map(|n| item(&format!("i{n}"), &format!("Item {n}"), 1_000 + n))
        .collect();
    store.upsert_items(feed, &items, 100).await.unwrap();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let requeue = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                round += 1;
                let changed: Vec<NewItem> = (0..200)
                    .step_by(3)
                    .map(|n| item(&format!("i{n}"), &format!("Item {n} v{round}"), 1_000 + n))
                    .collect();
                store.upsert_items(feed, &changed, 100).await.unwrap();
            }
        })
    };
    let mut claimers = Vec::new();
    for worker in 0..8 {
        let store = store.clone();
        claimers.push(tokio::spawn(async move {
            let mut most = 0;
            for round in 0..150 {
                let limit = 1 + (worker + round) % 3;
                // Each round is a second later, so leases of a second end all the time.
                let now = 10_000 + round as i64;
                let jobs = store
                    .claim_tag_jobs(&format!("w{worker}"), now, limit as i64, 1)
                    .await
                    .unwrap();
                assert!(
                    jobs.len() <= limit,
                    "worker {worker} asked for {limit} and got {}",
                    jobs.len()
                );
                most = most.max(jobs.len());
            }
            most
        }));
    }
    let mut most = 0;
    for claimer in claimers {
        most = most.max(claimer.await.unwrap());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    requeue.await.unwrap();
    assert!(
        most > 0,
        "no claim got anything: the test claimed from an empty queue"
    );
});

on_both_engines!(
    a_batch_keeps_its_current_items_and_skips_the_changed_ones,
    |db| {
        // The tagging job stores a batch of items at once: the items whose text changed after
        // the claim are skipped and stay queued, the others get their tags, and tag names shared
        // by several items of the batch are one tag.
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://wire.example/feed").await;
        let items: Vec<NewItem> = (0..30)
            .map(|n| item(&format!("w{n}"), &format!("Wire story {n}"), 1_000 + n))
            .collect();
        store.upsert_items(feed, &items, 100).await.unwrap();
        let jobs = store.claim_tag_jobs("w", 200, 100, 60).await.unwrap();
        assert_eq!(jobs.len(), 30);
        // Two items change after the claim.
        store
            .upsert_items(
                feed,
                &[
                    item("w3", "Wire story 3 corrected", 1_003),
                    item("w17", "Wire story 17 corrected", 1_017),
                ],
                210,
            )
            .await
            .unwrap();
        // Eight tags an item, the first two shared by all: 240 rows in one batch.
        let saved = save(&store, &jobs, |title| {
            let mut tags = vec![tag("wire", 0.9), tag("story", 0.8)];
            tags.extend((0..6).map(|n| tag(&format!("{title} {n}").to_lowercase(), 0.5)));
            tags
        })
        .await;
        assert_eq!(saved, 28);
        assert_eq!(store.tag_queue_len().await.unwrap(), 2);
        let changed = [
            id_of(&store, ann, feed, "w3").await,
            id_of(&store, ann, feed, "w17").await,
        ];
        let kept = id_of(&store, ann, feed, "w5").await;
        let tags = store
            .tags_of_items(&[changed[0], changed[1], kept])
            .await
            .unwrap();
        assert!(
            !tags.contains_key(&changed[0]) && !tags.contains_key(&changed[1]),
            "{tags:?}"
        );
        assert_eq!(tags[&kept].len(), 8);
        assert_eq!(tags[&kept][0], tag("wire", 0.9));
        assert_eq!(titles_tagged(&store, ann, "wire").await.len(), 28);
        assert_eq!(
            store.top_tags(ann, None, 2).await.unwrap(),
            [count("story", 28), count("wire", 28)]
        );
        // The changed items are tagged from their newer text next.
        assert_eq!(tag_all(&store, 300, words).await, 2);
        assert_eq!(titles_tagged(&store, ann, "corrected").await.len(), 2);
    }
);
