//! NewsFlash's Fever account through `fever_api`, in the order of news-flash 4.0.1
//! `src/feed_api_impls/fever/mod.rs` (login, `initial_sync`, `sync`, `get_articles`,
//! `set_article_read`, `set_article_marked`): the id lists, then the items 50 ids at a time
//! (`with_ids`), and `items` without arguments for the latest ones.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use fever_api::FeverApi;
use fever_api::models::{Feeds, Groups, Item, ItemStatus, SavedItems, UnreadItems};
use reqwest::Client;

use tidings_testkit::on_both_engines;

use super::{Local, NewsFlash, User, World};

/// `with_ids` takes at most 50 ids (fever_api refuses more).
const BATCH: usize = 50;

/// A Fever account of NewsFlash.
pub struct Fever {
    api: Arc<FeverApi>,
    http: Client,
    local: Local,
    /// The feeds' ids, as NewsFlash keeps only items of feeds it knows (or saved ones).
    feed_ids: HashSet<u64>,
}

impl Fever {
    /// Keeps the feeds by title with their group's name.
    fn take_lists(&mut self, groups: Groups, feeds: Feeds) {
        let titles: HashMap<u64, String> =
            groups.groups.into_iter().map(|g| (g.id, g.title)).collect();
        let group_of: HashMap<u64, String> = feeds
            .feeds_groups
            .iter()
            .flat_map(|fg| {
                fg.feed_ids
                    .iter()
                    .map(|f| (*f, titles[&fg.group_id].clone()))
            })
            .collect();
        self.feed_ids = feeds.feeds.iter().map(|f| f.id).collect();
        self.local.feeds = feeds
            .feeds
            .into_iter()
            .map(|f| (f.title, group_of.get(&f.id).cloned()))
            .collect();
    }

    /// The items with these ids, 50 a request. NewsFlash drops a batch that fails; here it
    /// fails the test.
    async fn items_with(&self, ids: Vec<u64>) -> Vec<Item> {
        let mut items = Vec::new();
        for chunk in ids.chunks(BATCH) {
            let batch = self
                .api
                .get_items_with(chunk.to_vec(), &self.http)
                .await
                .unwrap_or_else(|e| panic!("items&with_ids={chunk:?}: {e:?}"));
            items.extend(batch.items);
        }
        items
    }

    /// Takes items of known feeds (or saved ones) with the flags they carry.
    fn take(&mut self, items: Vec<Item>) {
        for item in items {
            if self.feed_ids.contains(&item.feed_id) || item.is_saved {
                self.local
                    .take(item.id.to_string(), item.url, item.is_read, item.is_saved);
            }
        }
    }

    async fn mark(&self, ids: &[String], status: ItemStatus) {
        for id in ids {
            let id: u64 = id.parse().unwrap();
            self.api
                .mark_item(status, id, &self.http)
                .await
                .unwrap_or_else(|e| panic!("mark=item&id={id}: {e:?}"));
        }
    }
}

/// The app's ids (decimal strings) as Fever's numbers.
fn numbers<'a>(ids: impl IntoIterator<Item = &'a String>) -> Vec<u64> {
    ids.into_iter().map(|id| id.parse().unwrap()).collect()
}

fn texts(unread: UnreadItems) -> BTreeSet<String> {
    unread.unread_item_ids.iter().map(u64::to_string).collect()
}

fn texts_saved(saved: SavedItems) -> BTreeSet<String> {
    saved.saved_item_ids.iter().map(u64::to_string).collect()
}

impl NewsFlash for Fever {
    async fn sign_in(world: &World, who: &User) -> Fever {
        let url = url::Url::parse(&format!("{}/fever/", world.app.base)).unwrap();
        let api = FeverApi::new(&url, who.name, &who.key);
        let http = Client::new();
        let valid = api
            .valid_credentials(&http)
            .await
            .unwrap_or_else(|e| panic!("api: {e:?}"));
        assert!(valid, "Fever refused {}'s key", who.name);
        Fever {
            api: Arc::new(api),
            http,
            local: Local::default(),
            feed_ids: HashSet::new(),
        }
    }

    async fn initial_sync(&mut self) {
        // Groups, feeds, both id lists and the latest items at once.
        let (groups, feeds, saved, unread, latest) = tokio::try_join!(
            self.api.get_groups(&self.http),
            self.api.get_feeds(&self.http),
            self.api.get_saved_items(&self.http),
            self.api.get_unread_items(&self.http),
            self.api.get_items(&self.http),
        )
        .unwrap_or_else(|e| panic!("the first sync's lists: {e:?}"));
        self.take_lists(groups, feeds);
        let saved = self.items_with(saved.saved_item_ids).await;
        let unread = self.items_with(unread.unread_item_ids).await;
        for items in [saved, unread, latest.items] {
            self.take(items);
        }
    }

    async fn sync(&mut self) {
        let (groups, feeds, unread, saved) = tokio::try_join!(
            self.api.get_groups(&self.http),
            self.api.get_feeds(&self.http),
            self.api.get_unread_items(&self.http),
            self.api.get_saved_items(&self.http),
        )
        .unwrap_or_else(|e| panic!("a sync's lists: {e:?}"));
        self.take_lists(groups, feeds);
        let (unread, saved) = (texts(unread), texts_saved(saved));
        let (local_unread, local_saved) = (self.local.unread_ids(), self.local.starred_ids());
        // Contents only for ids the app lacks in that state, and the latest items.
        let (missing_unread, missing_saved, latest) = tokio::join!(
            self.items_with(numbers(unread.difference(&local_unread))),
            self.items_with(numbers(saved.difference(&local_saved))),
            self.api.get_items(&self.http),
        );
        let latest = latest.unwrap_or_else(|e| panic!("items: {e:?}"));
        for items in [missing_unread, missing_saved, latest.items] {
            self.take(items);
        }
        for id in local_unread.difference(&unread) {
            self.local.set_read(id, true);
            self.local.set_starred(id, saved.contains(id));
        }
        for id in &saved {
            self.local.set_starred(id, true);
            self.local.set_read(id, !unread.contains(id));
        }
        for id in local_saved.difference(&saved) {
            self.local.set_starred(id, false);
            self.local.set_read(id, !unread.contains(id));
        }
    }

    async fn set_read(&mut self, ids: &[String], read: bool) {
        let status = if read {
            ItemStatus::Read
        } else {
            ItemStatus::Unread
        };
        self.mark(ids, status).await;
        ids.iter().for_each(|id| self.local.set_read(id, read));
    }

    async fn set_starred(&mut self, ids: &[String], starred: bool) {
        let status = if starred {
            ItemStatus::Saved
        } else {
            ItemStatus::Unsaved
        };
        self.mark(ids, status).await;
        ids.iter()
            .for_each(|id| self.local.set_starred(id, starred));
    }

    fn local(&self) -> &Local {
        &self.local
    }
}

on_both_engines!(full_sync_and_marks_both_ways, |db| {
    crate::sync_newsflash::marks_both_ways::<Fever>(db).await;
});

on_both_engines!(a_late_item_arrives_on_the_next_sync, |db| {
    crate::sync_newsflash::late_item::<Fever>(db).await;
});

on_both_engines!(a_shared_feeds_backlog_reaches_a_new_subscriber, |db| {
    crate::sync_newsflash::shared_feeds_backlog::<Fever>(db).await;
});
