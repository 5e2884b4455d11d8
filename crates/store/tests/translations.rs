//! Translations (issue 37) on both engines: kept per item and language (sanitized text from
//! outside without control characters), searchable in both languages, the background queue of
//! subscriptions marked "always translate" (claimed once, retried, given up for good), the
//! per-day request counts of the budgets, and who pays.

use tidings_store::{
    BudgetKind, ItemFilter, ItemQuery, ItemSearch, ItemTranslation, NewItem, Store,
};
use tidings_testkit::{add_user, follow, on_both_engines};
use tidings_text::SearchQuery;

const NOW: i64 = 1_700_000_000;

fn item(guid: &str, title: &str, text: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(format!("<p>{text}</p>")),
        published: Some(NOW),
        ..NewItem::default()
    }
}

fn translation(item_id: i64, language: &str, title: &str, content: &str) -> ItemTranslation {
    ItemTranslation {
        item_id,
        language: language.into(),
        title: Some(title.into()),
        content: Some(content.into()),
        source_language: Some("ja".into()),
        provider: "deepl".into(),
        model: None,
        created_at: NOW,
        stale: false,
    }
}

async fn hits(store: &Store, user: i64, query: &str) -> usize {
    let search = ItemSearch {
        query: SearchQuery::parse(query).unwrap(),
        listing: ItemQuery {
            filter: ItemFilter::All,
            limit: 50,
            ..ItemQuery::default()
        },
        by_relevance: false,
        offset: 0,
    };
    store.search_items(user, &search).await.unwrap().hits.len()
}

on_both_engines!(
    translations_are_kept_and_searchable_in_both_languages,
    |db| {
        let store = db.migrated().await;
        let ann = add_user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
        store
            .upsert_items(
                feed,
                &[item("a", "東京タワーの夜景", "東京都の観光スポット")],
                NOW,
            )
            .await
            .unwrap();
        let id = store.feed_item_ids(feed).await.unwrap()[0];
        assert_eq!(store.item_translation(id, "en").await.unwrap(), None);
        assert_eq!(hits(&store, ann, "lighthouse").await, 0);
        assert_eq!(hits(&store, ann, "東京").await, 1);

        let saved = translation(
            id,
            "en",
            "Tokyo Tower at night\u{0}",
            "<p>A lighthouse of Tokyo</p>",
        );
        assert!(store.save_translation(&saved).await.unwrap());
        let kept = store.item_translation(id, "en").await.unwrap().unwrap();
        assert_eq!(
            kept.title.as_deref(),
            Some("Tokyo Tower at night"),
            "control characters go"
        );
        assert_eq!(
            kept.content.as_deref(),
            Some("<p>A lighthouse of Tokyo</p>")
        );
        assert_eq!(kept.source_language.as_deref(), Some("ja"));
        // Found by the translation's words and still by the original's.
        assert_eq!(hits(&store, ann, "lighthouse").await, 1);
        assert_eq!(hits(&store, ann, "東京").await, 1);
        // A second language keeps the first one's words; saving again replaces.
        let french = translation(id, "fr", "La tour de Tokyo", "<p>Un phare</p>");
        assert!(store.save_translation(&french).await.unwrap());
        assert_eq!(hits(&store, ann, "phare").await, 1);
        assert_eq!(hits(&store, ann, "lighthouse").await, 1);
        assert_eq!(
            store.item_translation_languages(id).await.unwrap(),
            vec!["en".to_owned(), "fr".to_owned()]
        );
        // An item deleted meanwhile: nothing stored.
        assert!(
            !store
                .save_translation(&translation(id + 1000, "en", "x", "y"))
                .await
                .unwrap()
        );

        // The provider's requests per day, within the budget.
        assert!(store.take_translation_request(5, "deepl", 2).await.unwrap());
        assert!(store.take_translation_request(5, "deepl", 2).await.unwrap());
        assert!(!store.take_translation_request(5, "deepl", 2).await.unwrap());
        assert_eq!(store.translation_requests_on(5, "deepl").await.unwrap(), 2);
        assert!(
            store.take_translation_request(6, "deepl", 0).await.unwrap(),
            "0: no limit"
        );
        // The per-user budget counts translations apart from summaries.
        assert!(
            store
                .take_user_requests(5, ann, BudgetKind::Translation, 1, 1)
                .await
                .unwrap()
        );
        assert!(
            !store
                .take_user_requests(5, ann, BudgetKind::Translation, 1, 1)
                .await
                .unwrap()
        );
        assert!(
            store
                .take_user_requests(5, ann, BudgetKind::Summary, 1, 1)
                .await
                .unwrap()
        );
    }
);

on_both_engines!(marked_subscriptions_queue_their_new_items_once, |db| {
    let store = db.migrated().await;
    let ann = add_user(&store, "ann").await;
    let bob = add_user(&store, "bob").await;
    let (ann_sub, feed) = follow(&store, ann, "https://news.example/feed").await;
    let (bob_sub, _) = follow(&store, bob, "https://news.example/feed").await;
    store
        .upsert_items(
            feed,
            &[item("old", "古い記事", "前からある記事")],
            NOW - 100,
        )
        .await
        .unwrap();
    // Marked from NOW: the older item is not queued, the new ones are.
    store
        .set_subscription_translation(bob, bob_sub, Some("en"), NOW)
        .await
        .unwrap();
    assert_eq!(
        store.subscription_translations(bob).await.unwrap()[&bob_sub],
        "en"
    );
    assert!(
        store
            .subscription_translations(ann)
            .await
            .unwrap()
            .is_empty()
    );
    // Another user's subscription is not one's own.
    assert!(
        store
            .set_subscription_translation(ann, bob_sub, Some("en"), NOW)
            .await
            .is_err()
    );
    store
        .upsert_items(
            feed,
            &[
                item("n1", "新しい記事", "今日の記事"),
                item("n2", "二つ目", "もう一つ"),
            ],
            NOW + 10,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .queue_new_translations(NOW - 1000, NOW + 20)
            .await
            .unwrap(),
        2
    );
    // Queued once, however often it looks.
    assert_eq!(
        store
            .queue_new_translations(NOW - 1000, NOW + 20)
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.translation_queue_len().await.unwrap(), 2);
    let claimed = store
        .claim_translation_jobs("w1", NOW + 20, 10, 60)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2);
    assert!(
        claimed
            .iter()
            .all(|j| j.language == "en" && j.attempts == 1)
    );
    // Leased: another worker gets nothing.
    assert!(
        store
            .claim_translation_jobs("w2", NOW + 20, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    // Who pays: the subscriber who translates into that language (bob), though ann's
    // subscription is older.
    assert_eq!(
        store
            .translation_payer(claimed[0].item_id, "en")
            .await
            .unwrap(),
        Some(bob)
    );
    assert_eq!(
        store
            .translation_payer(claimed[0].item_id, "de")
            .await
            .unwrap(),
        Some(ann)
    );
    let _ = ann_sub;
    outcomes_of_claimed(&store, &claimed).await;
    // Turned off: gone from the user's subscriptions; unsubscribing removes it too.
    store
        .set_subscription_translation(bob, bob_sub, None, NOW)
        .await
        .unwrap();
    assert!(
        store
            .subscription_translations(bob)
            .await
            .unwrap()
            .is_empty()
    );
});

/// One claimed item translated, one failing for now and then given up for good; a reader's
/// own request queued once.
async fn outcomes_of_claimed(store: &Store, claimed: &[tidings_store::TranslationJob]) {
    // One is translated, one fails for now and is due again later, without its attempt when
    // nothing was tried.
    let done = translation(claimed[0].item_id, "en", "New", "<p>Today</p>");
    assert!(store.save_translation(&done).await.unwrap());
    store
        .retry_translation(&claimed[1], NOW + 100, "the breaker is open", false)
        .await
        .unwrap();
    assert_eq!(store.translation_queue_len().await.unwrap(), 1);
    assert!(
        store
            .claim_translation_jobs("w1", NOW + 50, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    let again = store
        .claim_translation_jobs("w1", NOW + 100, 10, 60)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 1, "the released attempt was not counted");
    // Given up: never due, and not queued again.
    store
        .give_up_translation(&again[0], "refused")
        .await
        .unwrap();
    assert_eq!(store.translation_queue_len().await.unwrap(), 0);
    assert_eq!(
        store
            .queue_new_translations(NOW - 1000, NOW + 200)
            .await
            .unwrap(),
        0
    );
    assert!(
        store
            .claim_translation_jobs("w1", NOW + 10_000, 10, 60)
            .await
            .unwrap()
            .is_empty()
    );
    // The reader's own request queues one item.
    assert!(
        store
            .queue_translation(claimed[0].item_id, "de", NOW)
            .await
            .unwrap()
    );
    assert!(
        !store
            .queue_translation(claimed[0].item_id, "de", NOW)
            .await
            .unwrap()
    );
}

on_both_engines!(
    a_changed_item_keeps_its_translations_words_and_is_translated_again,
    |db| {
        let store = db.migrated().await;
        let ann = add_user(&store, "ann").await;
        let (sub, feed) = follow(&store, ann, "https://news.example/feed").await;
        store
            .set_subscription_translation(ann, sub, Some("en"), NOW)
            .await
            .unwrap();
        store
            .upsert_items(
                feed,
                &[item("a", "東京タワーの夜景", "東京都の観光スポット")],
                NOW + 10,
            )
            .await
            .unwrap();
        let id = store.feed_item_ids(feed).await.unwrap()[0];
        assert_eq!(
            store.queue_new_translations(NOW, NOW + 10).await.unwrap(),
            1
        );
        let claimed = store
            .claim_translation_jobs("w1", NOW + 10, 10, 60)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        let mut first = translation(id, "en", "Tokyo Tower at night", "<p>A lighthouse</p>");
        first.created_at = NOW + 20;
        assert!(store.save_translation(&first).await.unwrap());
        assert!(
            !store
                .item_translation(id, "en")
                .await
                .unwrap()
                .unwrap()
                .stale
        );

        // The feed changes the item's text: the row holds the new text and, still, the
        // translation's words; the translation is kept but stale.
        store
            .upsert_items(
                feed,
                &[item(
                    "a",
                    "東京タワーの夜景",
                    "東京都の観光スポットと夜の灯台",
                )],
                NOW + 100,
            )
            .await
            .unwrap();
        assert_eq!(hits(&store, ann, "lighthouse").await, 1);
        assert_eq!(hits(&store, ann, "灯台").await, 1);
        let kept = store.item_translation(id, "en").await.unwrap().unwrap();
        assert!(kept.stale, "made before the change");
        assert_eq!(kept.title.as_deref(), Some("Tokyo Tower at night"));
        // Its full article arriving keeps them too.
        let article = tidings_store::FullTextOutcome::Extracted {
            content: "<p>東京都の観光スポットと夜の灯台、そして港</p>".into(),
            text_chars: 20,
            source_url: "https://news.example/a".into(),
        };
        assert!(store.save_full_text(id, &article, NOW + 110).await.unwrap());
        assert_eq!(hits(&store, ann, "lighthouse").await, 1);
        assert_eq!(hits(&store, ann, "港").await, 1);

        // "Always translate" queues it again, once; a fresh translation replaces the old
        // one's words and is not stale.
        assert_eq!(
            store
                .queue_new_translations(NOW + 50, NOW + 120)
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .queue_new_translations(NOW + 50, NOW + 120)
                .await
                .unwrap(),
            0
        );
        let again = store
            .claim_translation_jobs("w1", NOW + 120, 10, 60)
            .await
            .unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempts, 1, "attempts start over");
        let mut second = translation(id, "en", "Tokyo Tower at night", "<p>A beacon</p>");
        second.created_at = NOW + 130;
        assert!(store.save_translation(&second).await.unwrap());
        assert!(
            !store
                .item_translation(id, "en")
                .await
                .unwrap()
                .unwrap()
                .stale
        );
        assert_eq!(hits(&store, ann, "lighthouse").await, 0);
        assert_eq!(hits(&store, ann, "beacon").await, 1);
        assert_eq!(
            store
                .queue_new_translations(NOW + 50, NOW + 140)
                .await
                .unwrap(),
            0,
            "translated since the change"
        );
    }
);

on_both_engines!(
    summary_translations_are_kept_until_the_summary_changes,
    |db| {
        let store = db.migrated().await;
        let ann = add_user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://news.example/feed").await;
        store
            .upsert_items(
                feed,
                &[item("a", "東京タワー", "東京都の観光スポット")],
                NOW,
            )
            .await
            .unwrap();
        let id = store.feed_item_ids(feed).await.unwrap()[0];
        let summary = store
            .save_summary(id, "東京タワーの夜景。", "local", None, 1000, NOW)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(store.summary_translation(id, "en").await.unwrap(), None);
        let translation = tidings_store::SummaryTranslation {
            item_id: id,
            language: "en".into(),
            text: "Tokyo Tower at night.\u{0}".into(),
            source_language: Some("ja".into()),
            provider: "deepl".into(),
            model: None,
            summary_created_at: summary.created_at,
            created_at: NOW + 1,
        };
        assert!(store.save_summary_translation(&translation).await.unwrap());
        let kept = store.summary_translation(id, "en").await.unwrap().unwrap();
        assert_eq!(kept.text, "Tokyo Tower at night.", "control characters go");
        assert_eq!(kept.source_language.as_deref(), Some("ja"));
        assert_eq!(store.summary_translation(id, "fr").await.unwrap(), None);
        // The summary made again from a text twice as long: the translation is out of date.
        store
            .save_summary(id, "東京タワーと夜景。", "local", None, 3000, NOW + 10)
            .await
            .unwrap();
        assert_eq!(store.summary_translation(id, "en").await.unwrap(), None);
        // An item deleted meanwhile: nothing stored.
        let gone = tidings_store::SummaryTranslation {
            item_id: id + 1000,
            ..translation
        };
        assert!(!store.save_summary_translation(&gone).await.unwrap());
    }
);
