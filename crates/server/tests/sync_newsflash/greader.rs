//! NewsFlash's FreshRSS account (Google Reader API) through `greader_api`, in the order of
//! news-flash 4.0.1 `src/feed_api_impls/freshrss/mod.rs` (login, `initial_sync`, `sync`,
//! `set_article_read`, `set_article_marked`) and `src/util/greader/mod.rs` (stream paging,
//! id lists, item conversion).

use std::collections::BTreeSet;

use chrono::Utc;
use greader_api::models::{AuthInput, GoogleAuthInput, Item, StreamQuery};
use greader_api::{AuthData, GReaderApi};
use reqwest::Client;

use tidings_testkit::on_both_engines;

use super::{Local, NewsFlash, User, World};

const READING_LIST: &str = "user/-/state/com.google/reading-list";
const READ: &str = "user/-/state/com.google/read";
const STARRED: &str = "user/-/state/com.google/starred";
/// NewsFlash pages contents 1000 items at a time (`page_budget.rs`) and ids 10000; 50 here,
/// so that the test's 125 items take several pages and the continuation is followed.
const PAGE: u64 = 50;
/// The long form's prefix, which NewsFlash turns into the decimal id it stores.
const LONG_ID: &str = "tag:google.com,2005:reader/item/";

/// A FreshRSS account of NewsFlash.
pub struct FreshRss {
    api: GReaderApi,
    http: Client,
    local: Local,
}

/// Which part of a stream to read, as NewsFlash's `ArticleQuery` says it.
#[derive(Clone, Copy, Default)]
struct Query<'a> {
    stream: Option<&'a str>,
    exclude: Option<&'a str>,
    include: Option<&'a str>,
    limit: Option<u64>,
    newer_than: Option<chrono::DateTime<Utc>>,
}

impl FreshRss {
    /// Every page of a stream's contents (`stream/contents` with `n`, `c`, `xt`, `it`, `ot`).
    async fn contents(&self, query: Query<'_>) -> Vec<Item> {
        let mut items = Vec::new();
        let mut continuation: Option<String> = None;
        let mut left = query.limit;
        loop {
            let amount = match left {
                Some(0) => break,
                Some(n) => n.min(PAGE),
                None => PAGE,
            };
            let page = StreamQuery {
                stream_id: query.stream,
                amount: Some(amount),
                continuation: continuation.as_deref(),
                exclude_stream: query.exclude,
                include_stream: query.include,
                newer_than: query.newer_than,
                ..Default::default()
            };
            let stream = self
                .api
                .stream_contents(&page, &self.http)
                .await
                .unwrap_or_else(|e| panic!("stream/contents {:?}: {e:?}", query.stream));
            let received = stream.items.len() as u64;
            items.extend(stream.items);
            left = left.map(|n| n.saturating_sub(received));
            // NewsFlash also stops at an empty page that still has a continuation.
            match stream.continuation {
                Some(next) if received > 0 => continuation = Some(next),
                _ => break,
            }
        }
        items
    }

    /// Every page of a stream's ids (`stream/items/ids` with `s`, `n`, `c`, `xt`).
    async fn ids(&self, stream: &str, exclude: Option<&str>) -> BTreeSet<String> {
        let mut ids = BTreeSet::new();
        let mut continuation: Option<String> = None;
        loop {
            let page = StreamQuery {
                stream_id: Some(stream),
                amount: Some(PAGE),
                continuation: continuation.as_deref(),
                exclude_stream: exclude,
                ..Default::default()
            };
            let refs = self
                .api
                .items_ids(&page, &self.http)
                .await
                .unwrap_or_else(|e| panic!("stream/items/ids {stream}: {e:?}"));
            ids.extend(refs.item_refs.unwrap_or_default().into_iter().map(|r| r.id));
            match refs.continuation {
                Some(next) => continuation = Some(next),
                None => return ids,
            }
        }
    }

    /// The subscriptions and labels: feeds with their first category.
    async fn lists(&mut self) {
        let (feeds, _tags) = tokio::try_join!(
            self.api.subscription_list(&self.http),
            self.api.tag_list(&self.http)
        )
        .unwrap_or_else(|e| panic!("subscription/list, tag/list: {e:?}"));
        self.local.feeds = feeds
            .subscriptions
            .into_iter()
            .map(|f| (f.title, f.categories.into_iter().next().map(|c| c.label)))
            .collect();
    }

    /// Takes items as NewsFlash converts them: the decimal id, read and starred from the
    /// categories, the link from `alternate`.
    fn take(&mut self, items: Vec<Item>) {
        for item in items {
            let id = match item.id.strip_prefix(LONG_ID) {
                Some(hex) => i64::from_str_radix(hex, 16)
                    .unwrap_or_else(|e| panic!("item id {}: {e}", item.id))
                    .to_string(),
                None => item.id.clone(),
            };
            let url = item
                .alternate
                .first()
                .map(|a| a.href.clone())
                .unwrap_or_else(|| panic!("item {id} has no link"));
            let read = item.categories.iter().any(|c| c.ends_with("/read"));
            let starred = item.categories.iter().any(|c| c.ends_with("/starred"));
            self.local.take(id, url, read, starred);
        }
    }

    async fn edit_tag(&self, ids: &[String], add: &[&str], remove: &[&str]) {
        self.api
            .tag_edit(ids, add, remove, &self.http)
            .await
            .unwrap_or_else(|e| panic!("edit-tag {add:?} {remove:?}: {e:?}"));
    }
}

impl NewsFlash for FreshRss {
    async fn sign_in(world: &World, who: &User) -> FreshRss {
        // NewsFlash adds `api/greader.php/` to the address the user types.
        let url = url::Url::parse(&format!("{}/api/greader.php/", world.app.base)).unwrap();
        let api = GReaderApi::new(url, AuthData::Uninitialized);
        let http = Client::new();
        let input = AuthInput::Google(GoogleAuthInput {
            username: who.name.into(),
            password: who.key.clone(),
        });
        let auth = api
            .login(&input, &http)
            .await
            .unwrap_or_else(|e| panic!("ClientLogin: {e:?}"));
        // A login without the auth token is refused by NewsFlash; the post token comes along.
        let AuthData::Google(google) = auth else {
            panic!("not a Google login: {auth:?}")
        };
        assert!(google.auth_token.is_some() && google.post_token.is_some());
        FreshRss {
            api,
            http,
            local: Local::default(),
        }
    }

    async fn initial_sync(&mut self) {
        let now = Utc::now();
        self.lists().await;
        // Unread of the reading list, everything starred, and the newest 100 of all.
        let (unread, starred, latest) = tokio::join!(
            self.contents(Query {
                stream: Some(READING_LIST),
                exclude: Some(READ),
                ..Query::default()
            }),
            self.contents(Query {
                stream: Some(STARRED),
                ..Query::default()
            }),
            self.contents(Query {
                limit: Some(100),
                ..Query::default()
            }),
        );
        for items in [unread, starred, latest] {
            self.take(items);
        }
        self.local.last_sync = Some(now);
    }

    async fn sync(&mut self) {
        let now = Utc::now();
        let last_sync = self.local.last_sync;
        self.lists().await;
        // What arrived since the last sync (`ot`), and the complete unread and starred ids.
        let (new_unread, new_starred, unread, starred) = tokio::join!(
            self.contents(Query {
                stream: Some(READING_LIST),
                exclude: Some(READ),
                newer_than: last_sync,
                ..Query::default()
            }),
            self.contents(Query {
                stream: Some(STARRED),
                newer_than: last_sync,
                ..Query::default()
            }),
            self.ids(READING_LIST, Some(READ)),
            self.ids(STARRED, None),
        );
        // The local sets are read before this sync's articles are stored.
        let (local_unread, local_starred) = (self.local.unread_ids(), self.local.starred_ids());
        self.take(new_unread);
        self.take(new_starred);
        for id in local_unread.difference(&unread) {
            self.local.set_read(id, true);
            self.local.set_starred(id, starred.contains(id));
        }
        for id in unread.difference(&local_unread) {
            self.local.set_read(id, false);
        }
        for id in starred.difference(&local_starred) {
            self.local.set_starred(id, true);
            self.local.set_read(id, !unread.contains(id));
        }
        for id in local_starred.difference(&starred) {
            self.local.set_starred(id, false);
            self.local.set_read(id, !unread.contains(id));
        }
        self.local.last_sync = Some(now);
    }

    async fn set_read(&mut self, ids: &[String], read: bool) {
        if read {
            self.edit_tag(ids, &[READ], &[]).await;
        } else {
            self.edit_tag(ids, &[], &[READ]).await;
        }
        ids.iter().for_each(|id| self.local.set_read(id, read));
    }

    async fn set_starred(&mut self, ids: &[String], starred: bool) {
        if starred {
            self.edit_tag(ids, &[STARRED], &[]).await;
        } else {
            self.edit_tag(ids, &[], &[STARRED]).await;
        }
        ids.iter()
            .for_each(|id| self.local.set_starred(id, starred));
    }

    fn local(&self) -> &Local {
        &self.local
    }
}

on_both_engines!(full_sync_and_marks_both_ways, |db| {
    crate::sync_newsflash::marks_both_ways::<FreshRss>(db).await;
});

on_both_engines!(a_late_item_arrives_on_the_next_sync, |db| {
    crate::sync_newsflash::late_item::<FreshRss>(db).await;
});

on_both_engines!(a_shared_feeds_backlog_reaches_a_new_subscriber, |db| {
    crate::sync_newsflash::shared_feeds_backlog::<FreshRss>(db).await;
});
