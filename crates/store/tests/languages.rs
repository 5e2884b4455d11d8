//! The language of each item and feed (issue 37) on both engines: decided as items are stored
//! (detected, weighed against the item's and the feed's declarations), updated with changed
//! items, listed with every item and subscription, and given to items stored before languages
//! were kept by a resumable backfill.

use tidings_store::{FeedMetadata, FetchWrites, ItemFilter, ItemQuery, NewItem, Store};
use tidings_testkit::{add_user, follow, on_both_engines};

const NOW: i64 = 1_700_000_000;

/// An item with a title and a paragraph, `age` seconds old.
fn item(guid: &str, age: i64, title: &str, text: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(format!("<p>{text}</p>")),
        published: Some(NOW - age),
        ..NewItem::default()
    }
}

const JA: (&str, &str) = (
    "データベースを一台のサーバーに移した理由",
    "昨年はロードバランサーの後ろで三台のデータベースサーバーを動かしていました。動いてはいたものの、更新のたびに週末が丸ごとつぶれていました。",
);
const ZH: (&str, &str) = (
    "我们为什么把数据库迁移到一台服务器上",
    "去年我们在负载均衡器后面运行了三台数据库服务器。虽然能用，但每次升级都要花掉整个周末。",
);
const EN: (&str, &str) = (
    "Why our team moved the database to a single server",
    "We spent most of last year running three database servers behind a load balancer, and every upgrade took a weekend.",
);

/// The (guid-less) titles and languages the user's listing shows, newest first.
async fn listed(store: &Store, user: i64) -> Vec<(String, Option<String>)> {
    let page = store
        .list_items(
            user,
            &ItemQuery {
                filter: ItemFilter::All,
                limit: 100,
                ..ItemQuery::default()
            },
        )
        .await
        .unwrap();
    page.items
        .into_iter()
        .map(|i| (i.title.unwrap_or_default(), i.language))
        .collect()
}

/// Stores `items` in `feed` as a fetch that declares `language` for the feed.
async fn fetch(store: &Store, feed: i64, items: &[NewItem], language: Option<&str>) {
    let writes = FetchWrites {
        metadata: Some(FeedMetadata {
            title: Some("A feed"),
            language,
            ..FeedMetadata::default()
        }),
        ..FetchWrites::default()
    };
    store.store_fetch(feed, items, NOW, &writes).await.unwrap();
}

on_both_engines!(
    items_get_their_detected_language_and_feeds_the_majority,
    |db| {
        let store = db.migrated().await;
        let ann = add_user(&store, "ann").await;
        let (sub, feed) = follow(&store, ann, "https://blog.example/feed").await;
        // A blog engine's default declaration over Japanese posts: the posts outvote it.
        fetch(
            &store,
            feed,
            &[
                item("1", 10, JA.0, JA.1),
                item(
                    "2",
                    20,
                    "首相、経済対策を発表",
                    "首相は本日、新たな経済対策を発表しました。",
                ),
                item("3", 30, EN.0, EN.1),
            ],
            Some("en-US"),
        )
        .await;
        let rows = listed(&store, ann).await;
        let languages: Vec<Option<&str>> = rows.iter().map(|(_, l)| l.as_deref()).collect();
        // The English post agrees with the declaration and keeps its region.
        assert_eq!(
            languages,
            [Some("ja"), Some("ja"), Some("en-US")],
            "{rows:?}"
        );
        assert_eq!(
            store
                .subscription(ann, sub)
                .await
                .unwrap()
                .language
                .as_deref(),
            Some("ja")
        );
        // A Han-only title with no text of its own follows the feed: Japanese, not Chinese.
        fetch(&store, feed, &[item("4", 5, "東京大学入学式", "")], None).await;
        assert_eq!(listed(&store, ann).await[0].1.as_deref(), Some("ja"));
        // The single item's view says the same.
        let id = store.feed_item_ids(feed).await.unwrap()[0];
        assert_eq!(
            store.item(ann, id).await.unwrap().language.as_deref(),
            Some("ja")
        );
    }
);

on_both_engines!(
    declarations_that_agree_are_kept_and_contradicted_ones_lose,
    |db| {
        let store = db.migrated().await;
        let ann = add_user(&store, "ann").await;
        let (sub, feed) = follow(&store, ann, "https://news.example.tw/feed").await;
        let mut german_declared_japanese = item("2", 20, JA.0, JA.1);
        german_declared_japanese.language = Some("de".into());
        let mut declared_en_gb = item("3", 30, EN.0, EN.1);
        declared_en_gb.language = Some("en_GB".into());
        fetch(
            &store,
            feed,
            &[
                item("1", 10, ZH.0, ZH.1),
                german_declared_japanese,
                declared_en_gb,
            ],
            Some("zh-tw"),
        )
        .await;
        let languages: Vec<Option<String>> = listed(&store, ann)
            .await
            .into_iter()
            .map(|(_, l)| l)
            .collect();
        assert_eq!(
            languages,
            [
                Some("zh-TW".into()),
                Some("ja".into()),
                Some("en-GB".into())
            ]
        );
        assert_eq!(
            store
                .subscription(ann, sub)
                .await
                .unwrap()
                .language
                .as_deref(),
            Some("zh-TW")
        );
    }
);

on_both_engines!(a_changed_item_is_detected_again, |db| {
    let store = db.migrated().await;
    let ann = add_user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://changes.example/feed").await;
    store
        .upsert_items(feed, &[item("1", 10, EN.0, EN.1)], NOW)
        .await
        .unwrap();
    assert_eq!(listed(&store, ann).await[0].1.as_deref(), Some("en"));
    // The same item (its guid) rewritten in Chinese.
    store
        .upsert_items(feed, &[item("1", 10, ZH.0, ZH.1)], NOW + 60)
        .await
        .unwrap();
    assert_eq!(listed(&store, ann).await[0].1.as_deref(), Some("zh"));
    // No letters and no declaration: no language, rather than a guess.
    store
        .upsert_items(feed, &[item("2", 5, "2026", "12:30")], NOW + 60)
        .await
        .unwrap();
    assert_eq!(listed(&store, ann).await[0].1, None);
});

on_both_engines!(
    the_backfill_gives_older_items_their_language_and_resumes,
    |db| {
        let store = db.migrated().await;
        let ann = add_user(&store, "ann").await;
        let (sub, feed) = follow(&store, ann, "https://old.example/feed").await;
        let items: Vec<NewItem> = (0..7)
            .map(|n| {
                let (title, text) = [JA, ZH, EN][n % 3];
                item(&n.to_string(), 100 + n as i64, title, text)
            })
            .collect();
        store.upsert_items(feed, &items, NOW).await.unwrap();
        let expected = listed(&store, ann).await;
        assert!(expected.iter().all(|(_, l)| l.is_some()), "{expected:?}");
        // As migration 47 left a database that had these items: no languages, all to do.
        store
            .execute_raw("UPDATE items SET language = NULL")
            .await
            .unwrap();
        store
            .execute_raw("UPDATE feeds SET language = NULL")
            .await
            .unwrap();
        store
            .execute_raw(
                "UPDATE language_backfill SET next_item_id = (SELECT MIN(id) FROM items),
                                         last_item_id = (SELECT MAX(id) FROM items)",
            )
            .await
            .unwrap();
        assert!(listed(&store, ann).await.iter().all(|(_, l)| l.is_none()));
        let first = store.backfill_languages(3).await.unwrap();
        assert_eq!(first.indexed, 3);
        assert!(!first.is_done());
        let given = listed(&store, ann).await;
        assert_eq!(
            given.iter().filter(|(_, l)| l.is_some()).count(),
            3,
            "{given:?}"
        );
        // A restart resumes where it stopped: the rest, then nothing more.
        let mut total = first.indexed;
        loop {
            let step = store.backfill_languages(3).await.unwrap();
            total += step.indexed;
            if step.is_done() {
                break;
            }
        }
        assert_eq!(total, 7);
        assert_eq!(store.backfill_languages(3).await.unwrap().indexed, 0);
        assert_eq!(listed(&store, ann).await, expected);
        assert!(
            store
                .subscription(ann, sub)
                .await
                .unwrap()
                .language
                .is_some()
        );
    }
);

on_both_engines!(bookmarks_keep_their_language, |db| {
    let store = db.migrated().await;
    let ann = add_user(&store, "ann").await;
    let (sub, feed) = follow(&store, ann, "https://news.example/feed").await;
    fetch(
        &store,
        feed,
        &[item("1", 10, JA.0, JA.1), item("2", 20, EN.0, EN.1)],
        None,
    )
    .await;
    let mut bookmarks = Vec::new();
    for id in store.feed_item_ids(feed).await.unwrap() {
        let title = store.item(ann, id).await.unwrap().title;
        bookmarks.push((title, store.create_bookmark(ann, id).await.unwrap().0));
    }
    bookmarks.sort_by(|a, b| a.0.cmp(&b.0));
    let [(_, en), (_, ja)] = <[_; 2]>::try_from(bookmarks).unwrap();
    assert_eq!(ja.language.as_deref(), Some("ja"));
    assert_eq!(en.language.as_deref(), Some("en"));
    // The snapshot keeps it when its item is gone.
    store.unsubscribe(ann, sub).await.unwrap();
    let deleted = store.delete_orphan_feeds(tidings_store::unix_now() + 10);
    assert_eq!(deleted.await.unwrap(), 1);
    let kept = store.bookmark(ann, ja.id).await.unwrap();
    assert_eq!(
        (kept.item_id, kept.language.as_deref()),
        (None, Some("ja")),
        "{kept:?}"
    );
    // A snapshot from another reader is read for its language; one without letters has none.
    let detached = |title: &str, content: &str| tidings_store::DetachedBookmark {
        url: Some(format!("https://elsewhere.example/{}", title.len())),
        title: Some(title.into()),
        content: Some(content.into()),
        ..tidings_store::DetachedBookmark::default()
    };
    let zh = detached(ZH.0, &format!("<p>{}</p>", ZH.1));
    let (zh, _) = store.create_detached_bookmark(ann, &zh).await.unwrap();
    assert_eq!(zh.language.as_deref(), Some("zh"));
    let de = detached(
        "Warum wir die Datenbank auf einen einzigen Server verlegt haben",
        "<p>Im letzten Jahr liefen drei Datenbankserver hinter einem Lastverteiler.</p>",
    );
    let (de, _) = store.create_detached_bookmark(ann, &de).await.unwrap();
    assert_eq!(de.language.as_deref(), Some("de"));
    let digits = detached("2026", "<p>42</p>");
    let (digits, _) = store.create_detached_bookmark(ann, &digits).await.unwrap();
    assert_eq!(digits.language, None);
    let listed: Vec<Option<String>> = store
        .list_bookmarks(ann)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.language)
        .collect();
    assert_eq!(listed.len(), 5);
    assert!(listed.contains(&Some("ja".into())), "{listed:?}");
});
