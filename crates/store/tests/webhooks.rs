//! Notification channels (F43) on both engines: channels are the user's own, their rules name
//! only the user's feeds and groups; the matcher queues new items (never the past, never a
//! new subscription's backlog) by feed, group and keyword (Japanese included) and waits out
//! PostgreSQL's commit lag; messages are claimed with leases, paced, retried, dropped when
//! stale, and every outcome lands in a log trimmed to its newest rows.

use tidings_testkit::{add_user as user, follow, on_both_engines};

use tidings_notify::{Kind, Rules};
use tidings_store::{
    DELIVERY_LOG_KEEP, DeliveryRecord, MAX_WEBHOOKS_PER_USER, MatchSettings, NewItem, NewWebhook,
    Store, StoreError, WebhookChanges,
};

const DISCORD: &str = "https://discord.com/api/webhooks/1/token";

fn channel(name: &str, rules: Rules) -> NewWebhook {
    NewWebhook {
        kind: Kind::Discord,
        name: name.into(),
        url: DISCORD.into(),
        rules,
        enabled: true,
    }
}

fn item(guid: &str, title: &str, text: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://example.com/{guid}")),
        title: Some(title.into()),
        content: Some(format!("<p>{text}</p>")),
        published: Some(published),
        ..NewItem::default()
    }
}

fn settings() -> MatchSettings {
    MatchSettings {
        batch: 3,
        lag_seconds: 30,
        max_age_seconds: 24 * 3600,
        lease_seconds: 60,
    }
}

/// Runs the matcher at `now` until it has nothing more; answers the rows queued.
async fn match_all(store: &Store, now: i64) -> u64 {
    let mut queued = 0;
    loop {
        let step = store.match_new_items("m", now, &settings()).await.unwrap();
        queued += step.queued;
        if !step.more {
            return queued;
        }
    }
}

/// The titles queued for a channel, oldest first (as a claim reads them, up to 10).
async fn queued_titles(store: &Store, owner: &str, webhook_id: i64, now_ms: i64) -> Vec<String> {
    let messages = store
        .claim_webhook_messages(owner, now_ms, 100, 60, 24 * 3600)
        .await
        .unwrap();
    messages
        .into_iter()
        .filter(|m| m.webhook_id == webhook_id)
        .flat_map(|m| m.items.into_iter().filter_map(|i| i.title))
        .collect()
}

on_both_engines!(
    channels_belong_to_their_user_and_name_only_their_sources,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (_, news) = follow(&store, ann, "https://news.example/feed").await;
        let (_, bobs) = follow(&store, bob, "https://bob.example/feed").await;
        let rules = Rules {
            feed_ids: vec![news],
            keywords: vec!["rust".into()],
            ..Rules::default()
        };
        let created = store
            .create_webhook(ann, &channel(" Team ", rules.clone()), 100)
            .await
            .unwrap();
        assert_eq!(created.name, "Team");
        assert_eq!(created.rules, rules);
        assert_eq!(
            (created.kind, created.enabled, created.queued),
            (Kind::Discord, true, 0)
        );

        let foreign = Rules {
            feed_ids: vec![bobs],
            ..Rules::default()
        };
        let error = store
            .create_webhook(ann, &channel("x", foreign), 100)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StoreError::Invalid(m) if m == &format!("feed {bobs} is not one of your subscriptions")),
            "{error}"
        );
        let groups = Rules {
            group_ids: vec![999_999],
            ..Rules::default()
        };
        assert!(matches!(
            store.create_webhook(ann, &channel("x", groups), 100).await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            store
                .create_webhook(ann, &channel("  ", Rules::default()), 100)
                .await,
            Err(StoreError::Invalid(_))
        ));

        // Bob sees none of Ann's channel.
        assert!(matches!(
            store.webhook(bob, created.id).await,
            Err(StoreError::NotFound(_))
        ));
        assert!(store.webhooks(bob).await.unwrap().is_empty());
        assert!(matches!(
            store
                .update_webhook(bob, created.id, &WebhookChanges::default(), 1)
                .await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.delete_webhook(bob, created.id).await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.webhook_deliveries(bob, created.id, 10).await,
            Err(StoreError::NotFound(_))
        ));

        let changed = store
            .update_webhook(
                ann,
                created.id,
                &WebhookChanges {
                    name: Some("Renamed".into()),
                    rules: Some(Rules::default()),
                    enabled: Some(false),
                    url: None,
                },
                200,
            )
            .await
            .unwrap();
        assert_eq!((changed.name.as_str(), changed.enabled), ("Renamed", false));
        assert_eq!((changed.rules, changed.updated_at), (Rules::default(), 200));
        assert_eq!(changed.url, DISCORD);

        for n in 1..MAX_WEBHOOKS_PER_USER {
            store
                .create_webhook(ann, &channel(&format!("c{n}"), Rules::default()), 100)
                .await
                .unwrap();
        }
        assert!(matches!(
            store
                .create_webhook(ann, &channel("one too many", Rules::default()), 100)
                .await,
            Err(StoreError::LimitReached { .. })
        ));
        assert_eq!(
            store.webhooks(ann).await.unwrap().len() as i64,
            MAX_WEBHOOKS_PER_USER
        );
        store.delete_webhook(ann, created.id).await.unwrap();
        assert!(matches!(
            store.webhook(ann, created.id).await,
            Err(StoreError::NotFound(_))
        ));
    }
);

on_both_engines!(new_items_are_matched_by_feed_group_and_keyword, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let (_, news) = follow(&store, ann, "https://news.example/feed").await;
    let (blog_subscription, blog) = follow(&store, ann, "https://blog.example/feed").await;
    let (_, bobs) = follow(&store, bob, "https://bob.example/feed").await;
    let t = 1_700_000_000;
    // Stored before any channel: never sent.
    store
        .upsert_items(news, &[item("past", "Rust past", "old", t)], t)
        .await
        .unwrap();
    let group = store.create_group(ann, "Blogs").await.unwrap();
    store
        .update_subscription(
            ann,
            blog_subscription,
            &tidings_store::SubscriptionChanges {
                group_id: Some(group.id),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let all = store
        .create_webhook(ann, &channel("all", Rules::default()), t)
        .await
        .unwrap();
    let only_news = Rules {
        feed_ids: vec![news],
        ..Rules::default()
    };
    let only_news = store
        .create_webhook(ann, &channel("news", only_news), t)
        .await
        .unwrap();
    let blogs = Rules {
        group_ids: vec![group.id],
        ..Rules::default()
    };
    let blogs = store
        .create_webhook(ann, &channel("blogs", blogs), t)
        .await
        .unwrap();
    let tokyo = Rules {
        keywords: vec!["東京都".into(), "memory safety".into()],
        ..Rules::default()
    };
    let tokyo = store
        .create_webhook(ann, &channel("tokyo", tokyo), t)
        .await
        .unwrap();
    let mut off = channel("off", Rules::default());
    off.enabled = false;
    let off = store.create_webhook(ann, &off, t).await.unwrap();
    let bobs_channel = store
        .create_webhook(bob, &channel("bob", Rules::default()), t)
        .await
        .unwrap();

    let fetched = t + 100;
    store
        .upsert_items(
            news,
            &[
                item("a", "東京都が新しい計画を発表", "本文", fetched - 50),
                item("b", "Rust 1.80", "On memory safety, again", fetched - 40),
                item("c", "京都の紅葉", "写真", fetched - 30),
                // Published two days before it was stored: a backlog, not news.
                item(
                    "old",
                    "Rust in 2019",
                    "memory safety",
                    fetched - 2 * 24 * 3600,
                ),
            ],
            fetched,
        )
        .await
        .unwrap();
    store
        .upsert_items(
            blog,
            &[item("d", "Gardening", "東京都の庭", fetched - 20)],
            fetched,
        )
        .await
        .unwrap();
    store
        .upsert_items(
            bobs,
            &[item("e", "Bob's post", "text", fetched - 10)],
            fetched,
        )
        .await
        .unwrap();

    // On PostgreSQL the matcher waits until items are 30 s old (a smaller id may still be
    // committing); SQLite commits in id order and matches at once.
    let early = store
        .match_new_items("m", fetched + 10, &settings())
        .await
        .unwrap();
    match store.engine() {
        tidings_store::Engine::Postgres => assert_eq!((early.items, early.queued), (0, 0)),
        tidings_store::Engine::Sqlite => assert_eq!(early.items, 3),
    }
    // Another worker cannot take the matcher's lease meanwhile (it was released: it can).
    let queued = match_all(&store, fetched + 60).await + early.queued;
    // all: a b c d; news: a b c; blogs: d; tokyo: a b d; bob: e.
    assert_eq!(queued, 4 + 3 + 1 + 3 + 1);
    let now_ms = (fetched + 60) * 1000;
    assert_eq!(
        queued_titles(&store, "w", all.id, now_ms).await,
        [
            "東京都が新しい計画を発表",
            "Rust 1.80",
            "京都の紅葉",
            "Gardening"
        ]
    );
    assert_eq!(store.webhook(ann, only_news.id).await.unwrap().queued, 3);
    assert_eq!(store.webhook(ann, blogs.id).await.unwrap().queued, 1);
    assert_eq!(store.webhook(ann, tokyo.id).await.unwrap().queued, 3);
    assert_eq!(store.webhook(ann, off.id).await.unwrap().queued, 0);
    assert_eq!(store.webhook(bob, bobs_channel.id).await.unwrap().queued, 1);
    // Nothing is queued twice.
    assert_eq!(match_all(&store, fetched + 120).await, 0);
    assert_eq!(store.webhook_queue_len().await.unwrap(), 12);
});

on_both_engines!(messages_are_leased_paced_retried_and_logged, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (subscription, news) = follow(&store, ann, "https://news.example/feed").await;
    let t = 1_700_000_000;
    let hook = store
        .create_webhook(ann, &channel("all", Rules::default()), t)
        .await
        .unwrap();
    let items: Vec<NewItem> = (0..12)
        .map(|n| item(&format!("i{n}"), &format!("Item {n}"), "text", t + n))
        .collect();
    store.upsert_items(news, &items, t + 20).await.unwrap();
    store
        .update_subscription(
            ann,
            subscription,
            &tidings_store::SubscriptionChanges {
                title: Some(Some("My News".into())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(match_all(&store, t + 100).await, 12);

    let now_ms = (t + 100) * 1000;
    let claimed = store
        .claim_webhook_messages("w1", now_ms, 10, 60, 86_400)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let message = &claimed[0];
    assert_eq!(
        (message.webhook_id, message.attempt, message.failures),
        (hook.id, 1, 0)
    );
    assert_eq!(message.items.len(), 10);
    assert_eq!(message.items[0].title.as_deref(), Some("Item 0"));
    assert_eq!(message.items[0].feed_title.as_deref(), Some("My News"));
    assert_eq!(message.items[0].content.as_deref(), Some("<p>text</p>"));
    // Leased: no one else sends to the channel meanwhile.
    assert!(
        store
            .claim_webhook_messages("w2", now_ms, 10, 60, 86_400)
            .await
            .unwrap()
            .is_empty()
    );

    let ids: Vec<i64> = message.items.iter().map(|i| i.item_id).collect();
    let failed = DeliveryRecord {
        webhook_id: hook.id,
        item_ids: ids.clone(),
        done: false,
        failures: 1,
        next_send_ms: now_ms + 10_000,
        breaker_until_ms: None,
        status: "retrying",
        http_status: Some(503),
        error: Some("the webhook answered HTTP 503".into()),
        duration_ms: 12,
        at: t + 100,
    };
    store.record_webhook_delivery("w1", &failed).await.unwrap();
    // Paced: nothing before next_send_ms, then the same items as attempt 2.
    assert!(
        store
            .claim_webhook_messages("w1", now_ms + 9_999, 10, 60, 86_400)
            .await
            .unwrap()
            .is_empty()
    );
    let again = store
        .claim_webhook_messages("w2", now_ms + 10_000, 10, 60, 86_400)
        .await
        .unwrap();
    assert_eq!((again[0].attempt, again[0].failures), (2, 1));
    assert_eq!(
        again[0].items.iter().map(|i| i.item_id).collect::<Vec<_>>(),
        ids
    );
    let sent = DeliveryRecord {
        done: true,
        failures: 0,
        next_send_ms: now_ms + 12_000,
        status: "sent",
        http_status: Some(204),
        error: None,
        at: t + 110,
        ..failed.clone()
    };
    store.record_webhook_delivery("w2", &sent).await.unwrap();
    let after = store.webhook(ann, hook.id).await.unwrap();
    assert_eq!(
        (after.queued, after.failures, after.last_sent_at),
        (2, 0, Some(t + 110))
    );
    let log = store.webhook_deliveries(ann, hook.id, 10).await.unwrap();
    let summary: Vec<(&str, Option<i64>, i64)> = log
        .iter()
        .map(|e| (e.status.as_str(), e.http_status, e.items))
        .collect();
    assert_eq!(
        summary,
        [("sent", Some(204), 10), ("retrying", Some(503), 10)]
    );
    assert_eq!(
        log[1].error.as_deref(),
        Some("the webhook answered HTTP 503")
    );

    // The last two items wait past the queue's age limit: dropped, and the drop logged.
    let later_ms = (t + 100 + 86_400 + 1) * 1000;
    assert!(
        store
            .claim_webhook_messages("w1", later_ms, 10, 60, 86_400)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.webhook(ann, hook.id).await.unwrap().queued, 0);
    let newest = &store.webhook_deliveries(ann, hook.id, 1).await.unwrap()[0];
    assert_eq!((newest.status.as_str(), newest.items), ("dropped", 2));
    assert!(
        newest
            .error
            .as_deref()
            .unwrap()
            .contains("waited longer than 24 hours")
    );

    // The log keeps the newest rows only.
    for n in 0..DELIVERY_LOG_KEEP + 5 {
        store
            .log_webhook_test(hook.id, Ok(204), n, t + 200 + n)
            .await
            .unwrap();
    }
    let log = store.webhook_deliveries(ann, hook.id, 1000).await.unwrap();
    assert_eq!(log.len() as i64, DELIVERY_LOG_KEEP);
    assert!(log.iter().all(|e| e.test && e.status == "sent"));
    assert_eq!(log[0].duration_ms, DELIVERY_LOG_KEEP + 4);

    // Deleting the channel takes its queue and log with it.
    store.delete_webhook(ann, hook.id).await.unwrap();
    assert_eq!(store.webhook_queue_len().await.unwrap(), 0);
});
