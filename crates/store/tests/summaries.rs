//! Summaries (F42) on both engines: which new items are queued (the users' preferences and
//! the subscriptions' marks), the queue (claims with leases, the reader's claim of one item,
//! retries, releases that do not count an attempt), summaries stored once and never replaced,
//! the text each item is summarized from, and the per-day request budget.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_store::{
    FullTextOutcome, NewItem, PreferenceChanges, Store, StoreError, SubscriptionChanges,
};

fn item(guid: &str, content: Option<&str>, summary: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://news.example/{guid}")),
        title: Some(format!("Item {guid}")),
        content: content.map(str::to_owned),
        summary: Some(summary.into()),
        published: Some(1_700_000_000),
        ..NewItem::default()
    }
}

async fn prefer(store: &Store, user_id: i64, mode: &str) {
    let changes = PreferenceChanges {
        summarize: Some(mode.into()),
        ..PreferenceChanges::default()
    };
    let preferences = store.update_preferences(user_id, &changes).await.unwrap();
    assert_eq!(preferences.summarize, mode);
}

/// The feed's item ids in the order of their titles ("Item a", "Item b"…).
async fn ids_of(store: &Store, user_id: i64, feed: i64) -> Vec<i64> {
    let mut titled = Vec::new();
    for id in store.feed_item_ids(feed).await.unwrap() {
        titled.push((store.item(user_id, id).await.unwrap().title, id));
    }
    titled.sort();
    titled.into_iter().map(|(_, id)| id).collect()
}

on_both_engines!(new_items_are_queued_as_their_subscribers_want, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    // The default is on demand: nothing queued.
    assert_eq!(store.preferences(ann).await.unwrap().summarize, "on_demand");
    let bad = PreferenceChanges {
        summarize: Some("sometimes".into()),
        ..PreferenceChanges::default()
    };
    assert!(matches!(
        store.update_preferences(ann, &bad).await,
        Err(StoreError::Invalid(message)) if message.contains("on_demand, all or chosen")
    ));
    let (ann_sub, feed) = follow(&store, ann, "https://news.example/feed").await;
    let (bob_sub, _) = follow(&store, bob, "https://news.example/feed").await;
    let (_, other_feed) = follow(&store, bob, "https://other.example/feed").await;
    let fetch = 1_700_000_100;
    store
        .upsert_items(feed, &[item("a", Some("<p>A</p>"), "a")], fetch)
        .await
        .unwrap();
    assert_eq!(store.queue_new_summaries(feed, fetch).await.unwrap(), 0);

    // Bob chooses feeds, but has not marked this one.
    prefer(&store, bob, "chosen").await;
    assert_eq!(store.queue_new_summaries(feed, fetch).await.unwrap(), 0);
    let mark = SubscriptionChanges {
        summarize: Some(true),
        ..SubscriptionChanges::default()
    };
    let marked = store
        .update_subscription(bob, bob_sub, &mark)
        .await
        .unwrap();
    assert!(marked.summarize);
    assert!(!store.subscription(ann, ann_sub).await.unwrap().summarize);
    // Only the items of that fetch, once.
    assert_eq!(store.queue_new_summaries(feed, fetch + 1).await.unwrap(), 0);
    assert_eq!(store.queue_new_summaries(feed, fetch).await.unwrap(), 1);
    assert_eq!(store.queue_new_summaries(feed, fetch).await.unwrap(), 0);
    assert_eq!(store.summary_queue_len().await.unwrap(), 1);

    // Ann wants all: her feeds' next items are queued whatever the marks.
    prefer(&store, ann, "all").await;
    let unmark = SubscriptionChanges {
        summarize: Some(false),
        ..SubscriptionChanges::default()
    };
    store
        .update_subscription(bob, bob_sub, &unmark)
        .await
        .unwrap();
    let second = fetch + 60;
    store
        .upsert_items(feed, &[item("b", None, "b")], second)
        .await
        .unwrap();
    assert_eq!(store.queue_new_summaries(feed, second).await.unwrap(), 1);
    // A feed only Bob follows, not marked: nothing.
    store
        .upsert_items(other_feed, &[item("x", None, "x")], second)
        .await
        .unwrap();
    assert_eq!(
        store.queue_new_summaries(other_feed, second).await.unwrap(),
        0
    );
    // Listing shows the mark; the other settings are untouched.
    let listed = store.list_subscriptions(bob).await.unwrap();
    assert!(
        listed
            .iter()
            .all(|s| !s.summarize && s.interval_minutes == 60)
    );
});

on_both_engines!(queue_claims_retries_and_releases, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
    let fetch = 1_700_000_100;
    store
        .upsert_items(
            feed,
            &[
                item("a", Some("<p>Content A</p>"), "Summary A"),
                item("b", Some(""), "Summary B"),
            ],
            fetch,
        )
        .await
        .unwrap();
    let ids = ids_of(&store, ann, feed).await;
    let now = fetch + 10;
    assert_eq!(store.queue_summaries(&ids, now, now).await.unwrap(), 2);
    assert_eq!(store.queue_summaries(&ids, now, now).await.unwrap(), 0);
    // An item that does not exist is not queued.
    assert_eq!(
        store
            .queue_summaries(&[ids[1] + 100], now, now)
            .await
            .unwrap(),
        0
    );

    let mut jobs = store.claim_summary_jobs("w1", now, 10, 300).await.unwrap();
    jobs.sort_by(|a, b| a.title.cmp(&b.title));
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].item_id, ids[0]);
    assert_eq!(jobs[0].attempts, 1);
    assert_eq!(jobs[0].title.as_deref(), Some("Item a"));
    // The text: the content, else (empty content) the summary.
    assert_eq!(jobs[0].html.as_deref(), Some("<p>Content A</p>"));
    assert_eq!(jobs[1].html.as_deref(), Some("Summary B"));
    // Leased: nobody else gets them, not even the reader's claim of one item.
    assert!(
        store
            .claim_summary_jobs("w2", now, 10, 300)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .claim_summary_item(ids[0], "api", now, 300)
            .await
            .unwrap()
            .is_none()
    );

    // A retry waits until its time, and keeps its error.
    store
        .retry_summary(ids[0], now + 600, "HTTP 503")
        .await
        .unwrap();
    let state = store.summary_job_state(ids[0]).await.unwrap().unwrap();
    assert_eq!((state.attempts, state.not_before), (1, now + 600));
    assert_eq!(state.last_error.as_deref(), Some("HTTP 503"));
    assert!(
        store
            .claim_summary_jobs("w2", now + 100, 10, 300)
            .await
            .unwrap()
            .is_empty()
    );
    // …but the reader's claim takes it at once.
    let claimed = store
        .claim_summary_item(ids[0], "api", now + 101, 300)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.attempts, 2);
    // A release (breaker open, budget spent) does not count the attempt, and only the
    // lease's holder may release.
    store
        .release_summary_job(ids[0], "w2", now + 150)
        .await
        .unwrap();
    assert_eq!(
        store
            .summary_job_state(ids[0])
            .await
            .unwrap()
            .unwrap()
            .attempts,
        2
    );
    store
        .release_summary_job(ids[0], "api", now + 150)
        .await
        .unwrap();
    let state = store.summary_job_state(ids[0]).await.unwrap().unwrap();
    assert_eq!((state.attempts, state.not_before), (1, now + 150));
    assert!(
        store
            .claim_summary_jobs("w2", now + 149, 10, 300)
            .await
            .unwrap()
            .is_empty()
    );
    let due = store
        .claim_summary_jobs("w2", now + 150, 10, 300)
        .await
        .unwrap();
    assert_eq!(
        due.iter().map(|j| j.item_id).collect::<Vec<_>>(),
        vec![ids[0]]
    );

    // The article from the page, when one was kept, comes first.
    store
        .save_full_text(
            ids[1],
            &FullTextOutcome::Extracted {
                content: "<p>The whole article.</p>".into(),
                text_chars: 18,
                source_url: "https://news.example/b".into(),
            },
            now,
        )
        .await
        .unwrap();
    let again = store
        .claim_summary_item(ids[1], "w3", now + 400, 300)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.html.as_deref(), Some("<p>The whole article.</p>"));
    store.drop_summary_job(ids[1]).await.unwrap();
    assert!(store.summary_job_state(ids[1]).await.unwrap().is_none());
    assert_eq!(store.summary_queue_len().await.unwrap(), 1);
});

on_both_engines!(summaries_are_stored_once_and_go_with_their_items, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (sub, feed) = follow(&store, ann, "https://news.example/feed").await;
    let fetch = 1_700_000_100;
    store
        .upsert_items(feed, &[item("a", None, "a"), item("b", None, "b")], fetch)
        .await
        .unwrap();
    let ids = ids_of(&store, ann, feed).await;
    store.queue_summaries(&ids, fetch, fetch).await.unwrap();
    let first = store
        .save_summary(
            ids[0],
            "First, with a NUL\u{0}.",
            "openai",
            Some("m1"),
            1200,
            fetch + 5,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.text, "First, with a NUL.");
    assert_eq!(
        (first.provider.as_str(), first.model.as_deref()),
        ("openai", Some("m1"))
    );
    assert_eq!(first.created_at, fetch + 5);
    assert_eq!(first.source_chars, Some(1200));
    // Off the queue with it.
    assert!(store.summary_job_state(ids[0]).await.unwrap().is_none());
    // A second summary (a racing worker) does not replace the first.
    let kept = store
        .save_summary(ids[0], "Second.", "local", None, 2399, fetch + 9)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept, first);
    let all = store.summaries_of_items(&ids).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[&ids[0]], first);
    assert!(store.generated_summary(ids[1]).await.unwrap().is_none());
    // Items with a summary are not queued again by a fetch.
    store.drop_summary_job(ids[1]).await.unwrap();
    prefer(&store, ann, "all").await;
    assert_eq!(store.queue_new_summaries(feed, fetch).await.unwrap(), 1);
    // Deleting the feed's items (unsubscribe + orphan deletion) takes their summaries.
    store.unsubscribe(ann, sub).await.unwrap();
    store.delete_orphan_feeds(i64::MAX).await.unwrap();
    assert!(store.summaries_of_items(&ids).await.unwrap().is_empty());
    assert_eq!(store.summary_queue_len().await.unwrap(), 0);
    // Saving for an item that is gone stores nothing.
    assert!(
        store
            .save_summary(ids[1], "x", "local", None, 1000, fetch)
            .await
            .unwrap()
            .is_none()
    );
});

on_both_engines!(the_daily_budget_is_counted_per_day_and_provider, |db| {
    let store = db.migrated().await;
    let day = 20_000;
    for expected in 1..=3 {
        assert!(store.take_summary_request(day, "openai", 3).await.unwrap());
        assert_eq!(
            store.summary_requests_on(day, "openai").await.unwrap(),
            expected
        );
    }
    assert!(!store.take_summary_request(day, "openai", 3).await.unwrap());
    assert_eq!(store.summary_requests_on(day, "openai").await.unwrap(), 3);
    // Another provider, another day: their own counts.
    assert!(
        store
            .take_summary_request(day, "anthropic", 3)
            .await
            .unwrap()
    );
    assert!(
        store
            .take_summary_request(day + 1, "openai", 3)
            .await
            .unwrap()
    );
    // A budget of 0 allows nothing (the caller passes i64::MAX for "no limit").
    assert!(
        !store
            .take_summary_request(day + 2, "openai", 0)
            .await
            .unwrap()
    );
    assert_eq!(
        store.summary_requests_on(day + 2, "openai").await.unwrap(),
        0
    );
});

on_both_engines!(
    a_summary_of_a_teaser_is_redone_once_when_the_article_arrives,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
        let fetch = 1_700_000_100;
        store
            .upsert_items(
                feed,
                &[
                    item("t", None, "teaser"),
                    item("l", None, "long"),
                    item("o", None, "old"),
                ],
                fetch,
            )
            .await
            .unwrap();
        let ids = ids_of(&store, ann, feed).await;
        let (long, old, teaser) = (ids[0], ids[1], ids[2]);
        for (id, source) in [(teaser, Some(1000)), (long, Some(1000)), (old, None)] {
            store.queue_summaries(&[id], fetch, fetch).await.unwrap();
            store
                .save_summary(
                    id,
                    "From the feed.",
                    "openai",
                    None,
                    source.unwrap_or(1000),
                    fetch,
                )
                .await
                .unwrap();
        }
        // A summary stored before sources were recorded has none, and is left alone.
        store
            .execute_raw(&format!(
                "UPDATE item_summaries SET source_chars = NULL WHERE item_id = {old}"
            ))
            .await
            .unwrap();
        assert_eq!(store.summary_queue_len().await.unwrap(), 0);
        let article = |chars: i64| FullTextOutcome::Extracted {
            content: "<p>The whole article.</p>".into(),
            text_chars: chars,
            source_url: "https://news.example/page".into(),
        };
        // Twice as long as the teaser or more: queued again, once; a little longer: not.
        store
            .save_full_text(teaser, &article(2000), fetch + 60)
            .await
            .unwrap();
        store
            .save_full_text(long, &article(1999), fetch + 60)
            .await
            .unwrap();
        store
            .save_full_text(old, &article(50_000), fetch + 60)
            .await
            .unwrap();
        assert!(store.summary_job_state(teaser).await.unwrap().is_some());
        assert!(store.summary_job_state(long).await.unwrap().is_none());
        assert!(store.summary_job_state(old).await.unwrap().is_none());
        // The new summary, from the article, replaces the teaser's; a racing worker's summary
        // of the teaser does not come back over it.
        let redone = store
            .save_summary(
                teaser,
                "From the article.",
                "openai",
                None,
                2000,
                fetch + 70,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (redone.text.as_str(), redone.source_chars),
            ("From the article.", Some(2000))
        );
        let kept = store
            .save_summary(
                teaser,
                "From the feed again.",
                "openai",
                None,
                1000,
                fetch + 71,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(kept, redone);
        assert_eq!(store.summary_queue_len().await.unwrap(), 0);
        // The same article fetched again queues nothing: the summary was made from it.
        store
            .save_full_text(teaser, &article(2000), fetch + 120)
            .await
            .unwrap();
        assert!(store.summary_job_state(teaser).await.unwrap().is_none());
        // A page that kept no article (shorter than the feed's text) queues nothing either.
        let shorter = FullTextOutcome::Shorter {
            text_chars: 9000,
            source_url: "https://news.example/page".into(),
        };
        store
            .save_full_text(long, &shorter, fetch + 120)
            .await
            .unwrap();
        assert!(store.summary_job_state(long).await.unwrap().is_none());
    }
);
