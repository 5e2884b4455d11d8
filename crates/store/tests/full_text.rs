//! Full text (F6) on both engines: subscription modes and the feed's strongest one, the
//! queue (candidates, claims with leases, retries), articles stored apart from the feed's
//! content, and their removal with their items; an article much longer than its teaser has
//! the item tagged and embedded again from it; what the `auto` mode queues (an import's
//! backlog never, the new items of feeds a subscriber reads) and the per-site page budget.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    FetchWrites, FullTextAuto, FullTextMode, FullTextOutcome, ItemVector, MarkReadScope, NewItem,
    ShortText, Store, SubscriptionChanges, TaggedItem,
};

fn item(guid: &str, url: Option<&str>, summary: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: url.map(str::to_owned),
        title: Some(format!("Item {guid}")),
        summary: Some(summary.into()),
        published: Some(1_700_000_000),
        ..NewItem::default()
    }
}

async fn set_mode(store: &Store, user_id: i64, subscription: i64, mode: FullTextMode) {
    let changes = SubscriptionChanges {
        full_text: Some(mode),
        ..SubscriptionChanges::default()
    };
    let updated = store
        .update_subscription(user_id, subscription, &changes)
        .await
        .expect("update");
    assert_eq!(updated.full_text, mode);
}

on_both_engines!(
    modes_default_to_auto_and_the_feed_takes_the_strongest,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (ann_sub, feed) = follow(&store, ann, "https://news.example/feed").await;
        assert_eq!(
            store.subscription(ann, ann_sub).await.unwrap().full_text,
            FullTextMode::Auto
        );
        assert_eq!(
            store.feed_full_text_mode(feed).await.unwrap(),
            FullTextMode::Auto
        );
        set_mode(&store, ann, ann_sub, FullTextMode::Never).await;
        assert_eq!(
            store.feed_full_text_mode(feed).await.unwrap(),
            FullTextMode::Never
        );
        let (bob_sub, _) = follow(&store, bob, "https://news.example/feed").await;
        set_mode(&store, bob, bob_sub, FullTextMode::Always).await;
        assert_eq!(
            store.feed_full_text_mode(feed).await.unwrap(),
            FullTextMode::Always
        );
        // Changing the mode leaves the other settings alone, and listing shows it.
        let listed = store.list_subscriptions(ann).await.unwrap();
        assert_eq!(listed[0].full_text, FullTextMode::Never);
        assert_eq!(listed[0].interval_minutes, 60);
        // Another user's subscription is not found.
        let changes = SubscriptionChanges {
            full_text: Some(FullTextMode::Always),
            ..SubscriptionChanges::default()
        };
        assert!(
            store
                .update_subscription(ann, bob_sub, &changes)
                .await
                .is_err()
        );
        // A feed nobody follows gets nothing.
        store.unsubscribe(ann, ann_sub).await.unwrap();
        store.unsubscribe(bob, bob_sub).await.unwrap();
        assert_eq!(
            store.feed_full_text_mode(feed).await.unwrap(),
            FullTextMode::Never
        );
    }
);

on_both_engines!(queue_claim_retry_and_store_apart_from_the_feed, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    let first_fetch = 1_700_000_100;
    store
        .upsert_items(
            feed,
            &[
                item("a", Some("https://news.example/a"), "Teaser A"),
                item("b", Some("https://news.example/b"), "Teaser B"),
                item("c", None, "No link"),
            ],
            first_fetch,
        )
        .await
        .unwrap();
    // Only the items this fetch stored, with a link.
    let mut candidates = store.full_text_candidates(feed, first_fetch).await.unwrap();
    candidates.sort_by(|a, b| a.summary.cmp(&b.summary));
    assert_eq!(candidates.len(), 2);
    assert_eq!(candidates[0].summary.as_deref(), Some("Teaser A"));
    assert!(
        store
            .full_text_candidates(feed, first_fetch + 1)
            .await
            .unwrap()
            .is_empty()
    );
    let ids: Vec<i64> = candidates.iter().map(|c| c.item_id).collect();
    assert_eq!(store.queue_full_text(&ids, first_fetch).await.unwrap(), 2);
    // Queued once; queued items are no candidates any more.
    assert_eq!(store.queue_full_text(&ids, first_fetch).await.unwrap(), 0);
    assert!(
        store
            .full_text_candidates(feed, first_fetch)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.full_text_queue_len().await.unwrap(), 2);

    // Claims: one worker gets both; another finds nothing while the leases last.
    let now = first_fetch + 10;
    let mut jobs = store
        .claim_full_text_jobs("w1", now, 10, 300)
        .await
        .unwrap();
    // RETURNING gives no order.
    jobs.sort_by(|a, b| a.url.cmp(&b.url));
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].item_id, ids[0]);
    assert_eq!(jobs[0].url.as_deref(), Some("https://news.example/a"));
    assert_eq!(jobs[0].attempts, 1);
    assert_eq!(jobs[0].mode, FullTextMode::Auto);
    assert_eq!(jobs[0].feed_id, feed);
    assert!(
        store
            .claim_full_text_jobs("w2", now, 10, 300)
            .await
            .unwrap()
            .is_empty()
    );
    // An expired lease is claimed again, counting the attempt.
    let again = store
        .claim_full_text_jobs("w2", now + 301, 1, 300)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 2);

    // A retry waits until its time.
    store
        .retry_full_text(ids[1], now + 900, "HTTP 503")
        .await
        .unwrap();
    assert!(
        store
            .claim_full_text_jobs("w3", now + 899, 10, 300)
            .await
            .unwrap()
            .iter()
            .all(|j| j.item_id != ids[1])
    );
    let retried = store
        .claim_full_text_jobs("w3", now + 900, 10, 300)
        .await
        .unwrap();
    assert!(retried.iter().any(|j| j.item_id == ids[1]));

    phase_outcomes_and_sources(&store, ann, &ids, now).await;
});

/// Outcomes are stored apart from the feed's content and replaced by later ones, and an
/// on-demand load finds the item's link and its feed's proxy.
async fn phase_outcomes_and_sources(store: &Store, ann: i64, ids: &[i64], now: i64) {
    // Outcomes: one article kept, one page shorter than the feed.
    let article = "<p>The whole article, with a NUL\u{0} removed.</p>";
    assert!(
        store
            .save_full_text(
                ids[0],
                &FullTextOutcome::Extracted {
                    content: article.into(),
                    text_chars: 40,
                    source_url: "https://news.example/a?amp=0".into(),
                },
                now + 20,
            )
            .await
            .unwrap()
    );
    store
        .save_full_text(
            ids[1],
            &FullTextOutcome::Shorter {
                text_chars: 5,
                source_url: "https://news.example/b".into(),
            },
            now + 21,
        )
        .await
        .unwrap();
    assert_eq!(store.full_text_queue_len().await.unwrap(), 0);
    let kept = store.full_content(ids[0]).await.unwrap().expect("a row");
    assert_eq!(
        kept.content.as_deref(),
        Some("<p>The whole article, with a NUL removed.</p>")
    );
    assert_eq!(kept.fetched_at, now + 20);
    assert_eq!(kept.outcome, "extracted");
    let shorter = store.full_content(ids[1]).await.unwrap().expect("a row");
    assert_eq!(shorter.content, None);
    assert_eq!(shorter.outcome, "shorter");
    // The feed's own content is untouched: the two are kept apart.
    let stored = store.item(ann, ids[0]).await.unwrap();
    assert_eq!(stored.summary.as_deref(), Some("Teaser A"));
    // The listing's bodies carry the article beside the content.
    let bodies = store.item_bodies(ann, ids).await.unwrap();
    assert_eq!(
        bodies[&ids[0]].full_content.as_deref(),
        kept.content.as_deref()
    );
    assert_eq!(bodies[&ids[1]].full_content, None);
    // A later outcome replaces the earlier one (the reader's "load full article").
    store
        .save_full_text(
            ids[1],
            &FullTextOutcome::Extracted {
                content: "<p>B in full</p>".into(),
                text_chars: 9,
                source_url: "https://news.example/b".into(),
            },
            now + 30,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .full_content(ids[1])
            .await
            .unwrap()
            .unwrap()
            .content
            .as_deref(),
        Some("<p>B in full</p>")
    );
    // The source for an on-demand load: the item's link and its feed's proxy.
    let source = store
        .full_text_source(ids[0])
        .await
        .unwrap()
        .expect("exists");
    assert_eq!(source.url.as_deref(), Some("https://news.example/a"));
    assert_eq!(source.proxy_url, None);
    assert!(store.full_text_source(i64::MAX).await.unwrap().is_none());
}

on_both_engines!(articles_and_jobs_go_with_their_items, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (sub, feed) = follow(&store, ann, "https://blog.example/feed").await;
    store
        .upsert_items(feed, &[item("x", Some("https://blog.example/x"), "t")], 100)
        .await
        .unwrap();
    store
        .upsert_items(feed, &[item("y", Some("https://blog.example/y"), "t")], 200)
        .await
        .unwrap();
    let ids = store.feed_item_ids(feed).await.unwrap();
    assert_eq!(ids.len(), 2);
    store
        .save_full_text(
            ids[0],
            &FullTextOutcome::Failed {
                error: "HTTP 404".into(),
            },
            300,
        )
        .await
        .unwrap();
    store.queue_full_text(&ids[1..], 300).await.unwrap();
    // An item deleted meanwhile: the outcome is skipped, not an error.
    assert!(
        !store
            .save_full_text(
                i64::MAX,
                &FullTextOutcome::Failed { error: "x".into() },
                300
            )
            .await
            .unwrap()
    );
    // The feed goes when its last subscriber leaves and retention collects it: articles
    // and jobs go with its items.
    store.unsubscribe(ann, sub).await.unwrap();
    store.delete_orphan_feeds(i64::MAX).await.unwrap();
    assert_eq!(store.full_text_queue_len().await.unwrap(), 0);
    assert!(store.full_content(ids[0]).await.unwrap().is_none());
});

on_both_engines!(a_large_first_fetch_is_queued_whole, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://big.example/feed").await;
    let first_fetch = 1_700_000_000;
    let items: Vec<NewItem> = (0..1_100)
        .map(|n| {
            let url = format!("https://big.example/{n}");
            item(&format!("g{n}"), Some(&url), "Teaser")
        })
        .collect();
    store.upsert_items(feed, &items, first_fetch).await.unwrap();
    let mut ids: Vec<i64> = store
        .full_text_candidates(feed, first_fetch)
        .await
        .unwrap()
        .iter()
        .map(|c| c.item_id)
        .collect();
    assert_eq!(ids.len(), 1_100);
    // Queued in several statements; some already queued, an id that is no item is skipped.
    assert_eq!(
        store
            .queue_full_text(&ids[..10], first_fetch)
            .await
            .unwrap(),
        10
    );
    ids.push(i64::MAX);
    assert_eq!(
        store.queue_full_text(&ids, first_fetch).await.unwrap(),
        1_090
    );
    assert_eq!(store.full_text_queue_len().await.unwrap(), 1_100);
    assert!(
        store
            .full_text_candidates(feed, first_fetch)
            .await
            .unwrap()
            .is_empty()
    );
});

on_both_engines!(
    a_much_longer_article_is_tagged_and_embedded_again_from_itself,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
        assert!(store.use_embedding_model("local-v1").await.unwrap());
        let fetched = 1_700_000_100;
        store
            .upsert_items(
                feed,
                &[
                    item("a", Some("https://news.example/a"), "A short teaser."),
                    item("b", Some("https://news.example/b"), "Another short teaser."),
                ],
                fetched,
            )
            .await
            .unwrap();
        let mut ids = store.feed_item_ids(feed).await.unwrap();
        // Ordered by guid: "a" first.
        let mut guids = Vec::new();
        for id in &ids {
            guids.push(store.item(ann, *id).await.unwrap().guid);
        }
        if guids[0].as_deref() != Some("a") {
            ids.reverse();
        }
        let (long, slightly) = (ids[0], ids[1]);

        // Tagged and embedded from the teasers first.
        let now = fetched + 10;
        let tag_jobs = store.claim_tag_jobs("w", now, 10, 60).await.unwrap();
        assert_eq!(tag_jobs.len(), 2);
        assert!(tag_jobs.iter().all(|job| job.content.is_none()));
        let tagged: Vec<TaggedItem> = tag_jobs
            .iter()
            .map(|job| TaggedItem {
                item_id: job.item_id,
                version: job.version,
                tags: Vec::new(),
            })
            .collect();
        assert_eq!(store.save_item_tags(&tagged).await.unwrap(), 2);
        let embedding_jobs = store.claim_embedding_jobs("w", now, 10, 60).await.unwrap();
        assert_eq!(embedding_jobs.len(), 2);
        assert!(embedding_jobs.iter().all(|job| job.content.is_none()));
        let vectors: Vec<ItemVector> = embedding_jobs
            .iter()
            .map(|job| ItemVector {
                item_id: job.item_id,
                vector: vec![1; 4],
                code: vec![1; 32],
            })
            .collect();
        assert_eq!(
            store
                .save_embeddings("local-v1", &vectors, now)
                .await
                .unwrap(),
            2
        );
        assert_eq!(store.tag_queue_len().await.unwrap(), 0);
        assert_eq!(store.embedding_queue_len().await.unwrap(), 0);

        // One article is many times its teaser, the other only a little longer.
        let article = "<p>The whole article about tides and harbours. </p>".repeat(10);
        let saved = FullTextOutcome::Extracted {
            content: article.clone(),
            text_chars: 470,
            source_url: "https://news.example/a".into(),
        };
        assert!(store.save_full_text(long, &saved, now + 1).await.unwrap());
        let little = FullTextOutcome::Extracted {
            content: "<p>Another short teaser, and a line.</p>".into(),
            text_chars: 36,
            source_url: "https://news.example/b".into(),
        };
        assert!(
            store
                .save_full_text(slightly, &little, now + 1)
                .await
                .unwrap()
        );

        // Only the first is queued again, and both jobs read the article.
        assert_eq!(store.tag_queue_len().await.unwrap(), 1);
        assert_eq!(store.embedding_queue_len().await.unwrap(), 1);
        let tag_jobs = store.claim_tag_jobs("w", now + 2, 10, 60).await.unwrap();
        assert_eq!(tag_jobs.len(), 1);
        assert_eq!(tag_jobs[0].item_id, long);
        assert_eq!(tag_jobs[0].content.as_deref(), Some(article.as_str()));
        assert_eq!(tag_jobs[0].summary.as_deref(), Some("A short teaser."));
        let embedding_jobs = store
            .claim_embedding_jobs("w", now + 2, 10, 60)
            .await
            .unwrap();
        assert_eq!(embedding_jobs.len(), 1);
        assert_eq!(embedding_jobs[0].item_id, long);
        assert_eq!(embedding_jobs[0].content.as_deref(), Some(article.as_str()));
    }
);

/// Stores `items` as feed `feed`'s fetch at `now` with full text asked for under `rule` (every
/// item short); answers how many were queued for their page.
async fn fetch_short(
    store: &Store,
    feed: i64,
    items: &[NewItem],
    now: i64,
    rule: FullTextAuto,
) -> u64 {
    let short = |_: &NewItem| true;
    let writes = FetchWrites {
        full_text: Some(&short as ShortText),
        full_text_auto: rule,
        ..FetchWrites::default()
    };
    store
        .store_fetch(feed, items, now, &writes)
        .await
        .expect("store the fetch")
        .full_text_queued
}

/// `n` short items of `feed`'s site, numbered from `from`.
fn teasers(site: &str, from: usize, n: usize) -> Vec<NewItem> {
    (from..from + n)
        .map(|i| {
            item(
                &format!("{site}-{i}"),
                Some(&format!("https://{site}.example/{i}")),
                "A teaser.",
            )
        })
        .collect()
}

on_both_engines!(auto_fetches_what_is_read_and_never_a_backlog, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    // An import: ten feeds of 30 teasers each, all in `auto`. Nothing of the backlog is
    // queued by the default rule; the seed's rule (`short`) queued every item.
    let mut feeds = Vec::new();
    for n in 0..10 {
        let (_, feed) = follow(&store, ann, &format!("https://site{n}.example/feed")).await;
        // Each feed's own site, so that no item is a copy of another feed's (issue 35).
        let items = teasers(&format!("a{n}"), 0, 30);
        let queued = fetch_short(&store, feed, &items, 1_000, FullTextAuto::Read).await;
        assert_eq!(queued, 0, "the backlog of feed {n} is not queued");
        feeds.push(feed);
    }
    assert_eq!(store.full_text_queue_len().await.unwrap(), 0);
    let (_, shorts) = follow(&store, bob, "https://short.example/feed").await;
    let queued = fetch_short(
        &store,
        shorts,
        &teasers("s", 0, 30),
        1_000,
        FullTextAuto::Short,
    )
    .await;
    assert_eq!(queued, 30, "`short` keeps the rule of every short item");

    // A new item of a feed nobody reads is not queued either.
    let feed = feeds[0];
    let mut items = teasers("a0", 0, 30);
    items.extend(teasers("a0", 30, 1));
    assert_eq!(
        fetch_short(&store, feed, &items, 2_000, FullTextAuto::Read).await,
        0
    );
    // Three of its 31 items read one by one: under one in ten, still not read.
    let ids = store.feed_item_ids(feed).await.unwrap();
    for id in &ids[..3] {
        store
            .set_item_state(ann, *id, Some(true), None)
            .await
            .unwrap();
    }
    items.extend(teasers("a0", 31, 1));
    assert_eq!(
        fetch_short(&store, feed, &items, 3_000, FullTextAuto::Read).await,
        0
    );
    // A fourth (4 of 32 is one in eight): the feed is read, and its new items are queued.
    store
        .set_item_state(ann, ids[3], Some(true), None)
        .await
        .unwrap();
    items.extend(teasers("a0", 32, 2));
    assert_eq!(
        fetch_short(&store, feed, &items, 4_000, FullTextAuto::Read).await,
        2
    );

    // Marking a whole feed read moves its watermark and does not count as reading it.
    let other = feeds[1];
    store
        .mark_read(ann, &MarkReadScope::Feed(other), None)
        .await
        .unwrap();
    let mut items = teasers("a1", 0, 30);
    items.extend(teasers("a1", 30, 1));
    assert_eq!(
        fetch_short(&store, other, &items, 2_000, FullTextAuto::Read).await,
        0
    );
    // Another subscriber in `never` who reads it does not count either; one in `always`
    // has every new item queued, read or not.
    let (bob_sub, _) = follow(&store, bob, "https://site1.example/feed").await;
    set_mode(&store, bob, bob_sub, FullTextMode::Never).await;
    for id in store.feed_item_ids(other).await.unwrap() {
        store
            .set_item_state(bob, id, Some(true), None)
            .await
            .unwrap();
    }
    items.extend(teasers("a1", 31, 1));
    assert_eq!(
        fetch_short(&store, other, &items, 3_000, FullTextAuto::Read).await,
        0
    );
    set_mode(&store, bob, bob_sub, FullTextMode::Always).await;
    items.extend(teasers("a1", 32, 1));
    assert_eq!(
        fetch_short(&store, other, &items, 4_000, FullTextAuto::Read).await,
        1
    );
});

on_both_engines!(reads_made_by_rules_are_no_reading, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://rules.example/feed").await;
    // A rule marks every teaser read as it arrives, another hides the sponsored ones: the
    // feed is full of read items nobody looked at.
    for (name, query, action) in [("teasers", "teaser", "read"), ("ads", "sponsored", "hide")] {
        let rule = tidings_store::RuleInput {
            name: name.into(),
            enabled: true,
            position: None,
            spec: tidings_store::RuleSpec {
                query: Some(query.into()),
                actions: vec![action.into()],
                ..tidings_store::RuleSpec::default()
            },
        };
        store.create_rule(ann, &rule).await.unwrap();
    }
    let mut items = teasers("r", 0, 20);
    items.extend((0..10).map(|i| {
        let url = format!("https://r.example/ad{i}");
        item(&format!("ad{i}"), Some(&url), "Sponsored content.")
    }));
    let stories: Vec<NewItem> = (0..5)
        .map(|i| {
            let url = format!("https://r.example/story{i}");
            item(&format!("story{i}"), Some(&url), "A story.")
        })
        .collect();
    items.extend(stories.iter().cloned());
    assert_eq!(
        fetch_short(&store, feed, &items, 1_000, FullTextAuto::Read).await,
        0
    );
    assert_eq!(store.feed_item_ids(feed).await.unwrap().len(), 35);
    // So its new items are not queued: the rules' reads are not the reader's.
    let url = "https://r.example/new";
    items.push(item("new", Some(url), "News of the day."));
    assert_eq!(
        fetch_short(&store, feed, &items, 2_000, FullTextAuto::Read).await,
        0
    );
    // The reader reads four of the stories: four of 36, the feed is read.
    let mut read = 0;
    for id in store.feed_item_ids(feed).await.unwrap() {
        let summary = store.item(ann, id).await.unwrap().summary;
        if read < 4 && summary.is_some_and(|s| s.contains("A story.")) {
            store
                .set_item_state(ann, id, Some(true), None)
                .await
                .unwrap();
            read += 1;
        }
    }
    assert_eq!(read, 4);
    let url = "https://r.example/newer";
    items.push(item("newer", Some(url), "More news."));
    assert_eq!(
        fetch_short(&store, feed, &items, 3_000, FullTextAuto::Read).await,
        1
    );
});

on_both_engines!(a_sites_daily_page_budget_counts_each_host_and_day, |db| {
    let store = db.migrated().await;
    let day = 20_000;
    for _ in 0..3 {
        assert!(
            store
                .take_full_text_page("news.example", day, 3)
                .await
                .unwrap()
        );
    }
    assert!(
        !store
            .take_full_text_page("news.example", day, 3)
            .await
            .unwrap(),
        "the fourth page of the day is over the budget"
    );
    assert!(
        !store
            .take_full_text_page("news.example", day, 3)
            .await
            .unwrap()
    );
    // Another site has its own budget; the next day starts again.
    assert!(
        store
            .take_full_text_page("blog.example", day, 3)
            .await
            .unwrap()
    );
    assert!(
        store
            .take_full_text_page("news.example", day + 1, 3)
            .await
            .unwrap()
    );
    assert!(
        store
            .take_full_text_page("news.example", day + 1, 2)
            .await
            .unwrap()
    );
    assert!(
        !store
            .take_full_text_page("news.example", day + 1, 2)
            .await
            .unwrap()
    );
    // The first page of the new day deleted the earlier days' counts: the old day's count
    // starts again.
    assert!(
        store
            .take_full_text_page("news.example", day, 3)
            .await
            .unwrap()
    );
});
