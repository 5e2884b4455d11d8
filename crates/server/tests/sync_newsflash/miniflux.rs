//! NewsFlash's Miniflux account through `miniflux_api`, in the order of news-flash 4.0.1
//! `src/feed_api_impls/miniflux/mod.rs` (login, `initial_sync`, `sync`, `get_articles`,
//! `set_article_read`, `set_article_marked`): categories and feeds, unread and starred entries
//! 100 at a time by offset (newest published first), the latest read ones, and marks as a
//! status update and bookmark toggles.

use std::collections::BTreeSet;

use miniflux_api::MinifluxApi;
use miniflux_api::models::{Entry, EntryFilter, EntryID, EntryStatus, OrderBy, OrderDirection};
use reqwest::Client;

use tidings_testkit::on_both_engines;

use super::{Local, NewsFlash, User, World};

/// Entries per request, as NewsFlash asks them.
const BATCH: i64 = 100;
/// How many read entries a sync asks for (NewsFlash's "sync amount" setting).
const SYNC_AMOUNT: i64 = 100;

/// A Miniflux account of NewsFlash.
pub struct Miniflux {
    api: MinifluxApi,
    http: Client,
    local: Local,
}

/// The newest `limit` read entries (NewsFlash's `recent_read_query`).
fn recent_read(limit: i64) -> EntryFilter {
    EntryFilter::default()
        .status(EntryStatus::Read)
        .limit(limit)
        .order(OrderBy::PublishedAt)
        .direction(OrderDirection::Desc)
}

impl Miniflux {
    /// Every entry of a query, 100 at a time by offset until a short page; answers them and
    /// the ids seen.
    async fn entries(&self, query: EntryFilter) -> (Vec<Entry>, BTreeSet<String>) {
        let mut entries = Vec::new();
        let mut offset = 0;
        loop {
            let page = query
                .clone()
                .offset(offset)
                .limit(BATCH)
                .order(OrderBy::PublishedAt)
                .direction(OrderDirection::Desc);
            let batch = self
                .api
                .get_entries(&page, &self.http)
                .await
                .unwrap_or_else(|e| panic!("entries at {offset}: {e:?}"));
            let count = batch.len();
            entries.extend(batch);
            if count < BATCH as usize {
                let seen = entries.iter().map(|e| e.id.to_string()).collect();
                return (entries, seen);
            }
            offset += BATCH;
        }
    }

    /// The categories and feeds: feeds by title with their category's name.
    async fn lists(&mut self) {
        let (_categories, feeds) = tokio::try_join!(
            self.api.get_categories(&self.http),
            self.api.get_feeds(&self.http)
        )
        .unwrap_or_else(|e| panic!("categories, feeds: {e:?}"));
        self.local.feeds = feeds
            .into_iter()
            .map(|f| (f.title, Some(f.category.title)))
            .collect();
    }

    fn take(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            let read = entry.status == EntryStatus::Read;
            self.local
                .take(entry.id.to_string(), entry.url, read, entry.starred);
        }
    }

    fn entry_ids(ids: &[String]) -> Vec<EntryID> {
        ids.iter().map(|id| EntryID(id.parse().unwrap())).collect()
    }
}

impl NewsFlash for Miniflux {
    async fn sign_in(world: &World, who: &User) -> Miniflux {
        let url = url::Url::parse(&world.app.base).unwrap();
        // NewsFlash offers a password (HTTP Basic) and a token login: ann uses the first, bob
        // the second, the API key being the password or the token.
        let api = if who.name == "ann" {
            MinifluxApi::new(&url, who.name.into(), who.key.clone())
        } else {
            MinifluxApi::new_from_token(&url, who.key.clone()).unwrap()
        };
        let http = Client::new();
        let me = api
            .get_current_user(&http)
            .await
            .unwrap_or_else(|e| panic!("me: {e:?}"));
        assert_eq!(me.username, who.name);
        Miniflux {
            api,
            http,
            local: Local::default(),
        }
    }

    async fn initial_sync(&mut self) {
        self.lists().await;
        let ((starred, _), (unread, _)) = tokio::join!(
            self.entries(EntryFilter::default().starred(true)),
            self.entries(EntryFilter::default().status(EntryStatus::Unread)),
        );
        let read = self
            .api
            .get_entries(&recent_read(100), &self.http)
            .await
            .unwrap_or_else(|e| panic!("recent read entries: {e:?}"));
        for entries in [starred, unread, read] {
            self.take(entries);
        }
    }

    async fn sync(&mut self) {
        self.lists().await;
        let recent = recent_read(SYNC_AMOUNT);
        let ((unread, unread_ids), (starred, starred_ids), recent) = tokio::join!(
            self.entries(EntryFilter::default().status(EntryStatus::Unread)),
            self.entries(EntryFilter::default().starred(true)),
            self.api.get_entries(&recent, &self.http),
        );
        let recent = recent.unwrap_or_else(|e| panic!("recent read entries: {e:?}"));
        // The local sets are read before this sync's entries are stored.
        let (local_unread, local_starred) = (self.local.unread_ids(), self.local.starred_ids());
        self.take(recent);
        self.take(unread);
        self.take(starred);
        // What the app shows unread or starred that the server no longer does.
        for id in local_unread.difference(&unread_ids) {
            self.local.set_read(id, true);
            self.local.set_starred(id, starred_ids.contains(id));
        }
        for id in local_starred.difference(&starred_ids) {
            self.local.set_starred(id, false);
            self.local.set_read(id, !unread_ids.contains(id));
        }
    }

    async fn set_read(&mut self, ids: &[String], read: bool) {
        let status = if read {
            EntryStatus::Read
        } else {
            EntryStatus::Unread
        };
        self.api
            .update_entries_status(Self::entry_ids(ids), status, &self.http)
            .await
            .unwrap_or_else(|e| panic!("PUT entries {ids:?}: {e:?}"));
        ids.iter().for_each(|id| self.local.set_read(id, read));
    }

    async fn set_starred(&mut self, ids: &[String], starred: bool) {
        // NewsFlash is handed only articles whose flag changes, so it toggles each.
        for id in Self::entry_ids(ids) {
            self.api
                .toggle_bookmark(id, &self.http)
                .await
                .unwrap_or_else(|e| panic!("bookmark {id}: {e:?}"));
        }
        ids.iter()
            .for_each(|id| self.local.set_starred(id, starred));
    }

    fn local(&self) -> &Local {
        &self.local
    }
}

on_both_engines!(full_sync_and_marks_both_ways, |db| {
    crate::sync_newsflash::marks_both_ways::<Miniflux>(db).await;
});

on_both_engines!(a_late_item_arrives_on_the_next_sync, |db| {
    crate::sync_newsflash::late_item::<Miniflux>(db).await;
});

on_both_engines!(a_shared_feeds_backlog_reaches_a_new_subscriber, |db| {
    crate::sync_newsflash::shared_feeds_backlog::<Miniflux>(db).await;
});
