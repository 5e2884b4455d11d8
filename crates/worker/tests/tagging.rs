//! Tags (F41) through the worker, against a real feed server on 127.0.0.1, on SQLite and
//! PostgreSQL: a fetch queues its new items, the tagging job finds their keyphrases (English
//! and Japanese), a changed item is tagged again from its new text, and retention takes the
//! tags with the items.

use tidings_testkit::on_both_engines;

use std::sync::{Arc, Mutex};

use crate::support::{TestServer, fetcher, user};
use axum::Router;
use axum::http::header;
use axum::routing::get;
use tidings_store::Store;
use tidings_testkit::follow;
use tidings_worker::{TaggingJob, drain_enrichment};

fn rss(items: &[(&str, &str, &str)]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
         <title>News</title><link>https://news.example/</link>",
    );
    for (guid, title, description) in items {
        out.push_str(&format!(
            "<item><title>{title}</title><link>https://news.example/{guid}</link>\
             <guid>{guid}</guid><description><![CDATA[{description}]]></description></item>"
        ));
    }
    out.push_str("</channel></rss>");
    out
}

const RUST: (&str, &str, &str) = (
    "rust",
    "Rust 1.80 stabilizes LazyLock",
    "<p>The <b>Rust</b> team released Rust 1.80. <i>LazyLock</i> replaces lazy_static in \
     many programs.</p>",
);
const JAPANESE: (&str, &str, &str) = (
    "ja",
    "東京都知事選挙の投票率が過去最低に",
    "<p>東京都知事選挙の投票率は、前回の選挙を大きく下回りました。</p>",
);

/// The tag names of the item with `guid`, best first.
async fn tags_of(store: &Store, user_id: i64, feed: i64, guid: &str) -> Vec<String> {
    for id in store.feed_item_ids(feed).await.unwrap() {
        if store.item(user_id, id).await.unwrap().guid.as_deref() == Some(guid) {
            let mut tags = store.tags_of_items(&[id]).await.unwrap();
            return tags
                .remove(&id)
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.name)
                .collect();
        }
    }
    panic!("no item {guid}");
}

on_both_engines!(
    fetched_items_are_tagged_and_retagged_when_they_change,
    |db| {
        let store = db.migrated().await;
        let feed_body = Arc::new(Mutex::new(rss(&[RUST, JAPANESE])));
        let served = Arc::clone(&feed_body);
        let server = TestServer::start(Router::new().route(
            "/feed.xml",
            get(move || {
                let body = served.lock().unwrap().clone();
                async move { ([(header::CONTENT_TYPE, "application/rss+xml")], body) }
            }),
        ))
        .await;
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, &server.url("/feed.xml")).await;
        let fetcher = fetcher(&store);
        let report = fetcher.refresh_feed(feed).await.expect("refresh");
        assert_eq!(report.items_inserted, 2);
        assert_eq!(store.tag_queue_len().await.unwrap(), 2);

        let job = Arc::new(TaggingJob::new(&fetcher));
        assert_eq!(drain_enrichment(Arc::clone(&job), 2).await.unwrap(), 1);
        assert_eq!(store.tag_queue_len().await.unwrap(), 0);
        let rust = tags_of(&store, ann, feed, "rust").await;
        assert_eq!(rust[0], "rust", "{rust:?}");
        assert!(rust.contains(&"lazylock".to_owned()), "{rust:?}");
        assert!(!rust.iter().any(|t| t == "the" || t == "b"), "{rust:?}");
        let ja = tags_of(&store, ann, feed, "ja").await;
        assert!(ja.contains(&"投票率".to_owned()), "{ja:?}");
        assert!(ja.contains(&"東京都知事選挙".to_owned()), "{ja:?}");
        let top = store.top_tags(ann, None, 50).await.unwrap();
        assert!(
            top.iter().any(|t| t.name == "rust" && t.count == 1),
            "{top:?}"
        );

        // The item changes: the fetch queues it again and its tags follow the new text.
        *feed_body.lock().unwrap() = rss(&[
            (
                "rust",
                "Kubernetes operators in Go",
                "<p>Writing Kubernetes operators with controller-runtime.</p>",
            ),
            JAPANESE,
        ]);
        let report = fetcher.refresh_feed(feed).await.expect("refresh");
        assert_eq!(report.items_updated, 1);
        assert_eq!(store.tag_queue_len().await.unwrap(), 1);
        drain_enrichment(Arc::clone(&job), 2).await.unwrap();
        let changed = tags_of(&store, ann, feed, "rust").await;
        assert!(changed.contains(&"kubernetes".to_owned()), "{changed:?}");
        assert!(!changed.contains(&"rust".to_owned()), "{changed:?}");

        // Retention deletes the items, and their tags with them.
        let ids = store.feed_item_ids(feed).await.unwrap();
        assert_eq!(store.delete_expired_items(i64::MAX, 0, 0).await.unwrap(), 2);
        assert!(store.tags_of_items(&ids).await.unwrap().is_empty());
        assert!(store.top_tags(ann, None, 50).await.unwrap().is_empty());
    }
);
