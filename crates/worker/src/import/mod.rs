//! Importing a user's history from another reader (F37): subscriptions with their titles and
//! folders, starred items, read marks and item labels, from a Google Reader API server
//! ([`greader`]) or a file ([`file`]: OPML, or a Google Reader Takeout / FreshRSS / Inoreader
//! starred-items JSON).
//!
//! Every source is read into one [`History`], which [`apply_history`] maps onto tidings:
//! new subscriptions go through the OPML import (so each new feed gets its first fetch the
//! normal way), then each item of the history is matched to the item tidings has in the same
//! feed (by guid, then link). What is already so is left alone, so importing twice changes
//! nothing; a dry run counts what would change and writes nothing. A starred item tidings
//! does not have (its feed is gone, could not be fetched, or no longer lists it) is kept as a
//! bookmark with the other reader's title, content and date (F34).
//!
//! This module sits on [`crate::opml`] and the store only, so that the server can run the same
//! import as a job.

pub mod file;
pub mod greader;
mod history;

pub use file::read_history_file;
pub use greader::GReaderClient;
pub use history::{History, HistoryFeed, HistoryItem};

use std::collections::{HashMap, HashSet};

use tidings_store::{DetachedBookmark, Store, StoreError};

use crate::Fetcher;
use crate::opml::{ImportOptions, ImportStatus, OpmlFeed, build_opml, import_opml};

/// What an import did (or, in a dry run, would do) to one kind of thing.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct KindReport {
    /// Added or changed.
    pub added: usize,
    /// Already so in tidings: nothing to do.
    pub unchanged: usize,
    /// Kept another way (a starred item kept as a bookmark).
    pub kept_as_bookmark: usize,
    /// Not imported; `reasons` says why.
    pub failed: usize,
    /// One line per thing not imported.
    pub reasons: Vec<String>,
}

impl KindReport {
    fn fail(&mut self, reason: String) {
        self.failed += 1;
        self.reasons.push(reason);
    }
}

/// The report of a history import, per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HistoryReport {
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Subscriptions.
    pub subscriptions: KindReport,
    /// Folders (tidings' groups).
    pub folders: KindReport,
    /// Starred items.
    pub starred: KindReport,
    /// Read (and unread) marks of items tidings has.
    pub read_marks: KindReport,
    /// Item labels.
    pub labels: KindReport,
}

impl HistoryReport {
    /// Whether everything was imported (nothing failed).
    pub fn complete(&self) -> bool {
        self.kinds().iter().all(|(_, kind)| kind.failed == 0)
    }

    /// The kinds with their names, in the order they are printed.
    pub fn kinds(&self) -> [(&'static str, &KindReport); 5] {
        [
            ("subscriptions", &self.subscriptions),
            ("folders", &self.folders),
            ("starred", &self.starred),
            ("read marks", &self.read_marks),
            ("labels", &self.labels),
        ]
    }
}

/// Why a history import could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The other reader could not be read (a network error, refused credentials, an answer
    /// that is not what its API documents).
    #[error("{0}")]
    Source(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How [`apply_history`] behaves.
#[derive(Debug, Clone, Default)]
pub struct HistoryOptions {
    /// Count what would change, write nothing, fetch nothing.
    pub dry_run: bool,
    /// The user's subscription limit, as for an OPML import.
    pub max_subscriptions: Option<i64>,
    /// Where the history came from, for the OPML import's history record.
    pub source_name: Option<String>,
}

/// Imports `history` for `user_id`: folders, subscriptions (through the OPML import, so each
/// new feed is fetched once), then stars, read marks and labels of the items tidings has;
/// starred items it does not have become bookmarks. Idempotent.
pub async fn apply_history(
    fetcher: &Fetcher,
    user_id: i64,
    history: &History,
    options: &HistoryOptions,
) -> Result<HistoryReport, HistoryError> {
    let store = fetcher.store();
    let mut report = HistoryReport {
        dry_run: options.dry_run,
        ..HistoryReport::default()
    };
    import_folders(
        store,
        user_id,
        history,
        options.dry_run,
        &mut report.folders,
    )
    .await?;
    let (feeds, pending) =
        import_subscriptions(fetcher, user_id, history, options, &mut report).await?;
    let mut bookmarks: HashSet<(Option<String>, Option<String>)> = store
        .list_bookmarks(user_id)
        .await?
        .into_iter()
        .map(|bookmark| (bookmark.url, bookmark.title))
        .collect();
    let folders: HashSet<String> = history
        .feeds
        .iter()
        .filter_map(|feed| feed.folder.as_deref())
        .map(str::to_lowercase)
        .collect();
    for item in &history.items {
        if item
            .feed_url
            .as_ref()
            .is_some_and(|url| pending.contains(url))
        {
            predict_new_item(item, &labels_of(item, &folders), &mut report);
            continue;
        }
        let found = match item.feed_url.as_deref().and_then(|url| feeds.get(url)) {
            Some(&feed_id) => store.find_feed_item(feed_id, &item.keys()).await?,
            None => None,
        };
        let labels = labels_of(item, &folders);
        match found {
            Some(item_id) => {
                apply_item(store, user_id, item_id, item, &labels, options, &mut report).await?;
            }
            None => {
                if item.starred {
                    keep_as_bookmark(store, user_id, item, options, &mut bookmarks, &mut report)
                        .await?;
                }
                for label in labels {
                    report.labels.fail(format!(
                        "{label:?} on {}: tidings does not have the item{}",
                        item.describe(),
                        if item.starred {
                            " (kept as a bookmark, which has no labels)"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
    }
    Ok(report)
}

/// The item's labels that are not the folder names a server also lists on items (FreshRSS
/// labels every item with its feed's folder).
fn labels_of<'a>(item: &'a HistoryItem, folders: &HashSet<String>) -> Vec<&'a String> {
    item.labels
        .iter()
        .filter(|label| !folders.contains(&label.to_lowercase()))
        .collect()
}

/// In a dry run, what an item of a feed that would be subscribed would get: the feed's items
/// are only known after its first fetch, which a dry run does not make, so the item is
/// counted as if tidings will have it (new items are unread: only read marks change).
fn predict_new_item(item: &HistoryItem, labels: &[&String], report: &mut HistoryReport) {
    if item.starred {
        report.starred.added += 1;
    }
    match item.read {
        Some(true) => report.read_marks.added += 1,
        Some(false) => report.read_marks.unchanged += 1,
        None => {}
    }
    report.labels.added += labels.len();
}

/// Creates the history's folders that the user has no group for yet.
async fn import_folders(
    store: &Store,
    user_id: i64,
    history: &History,
    dry_run: bool,
    report: &mut KindReport,
) -> Result<(), StoreError> {
    let mut existing: HashSet<String> = store
        .list_groups(user_id)
        .await?
        .into_iter()
        .map(|group| group.name.to_lowercase())
        .collect();
    for folder in history
        .feeds
        .iter()
        .filter_map(|feed| feed.folder.as_deref())
    {
        if existing.contains(&folder.to_lowercase()) {
            report.unchanged += 1;
            continue;
        }
        if !dry_run {
            match store.create_group(user_id, folder).await {
                Ok(_) => {}
                Err(StoreError::Invalid(reason)) => {
                    report.fail(format!("folder {folder:?}: {reason}"));
                    continue;
                }
                Err(error) => return Err(error),
            }
        }
        existing.insert(folder.to_lowercase());
        report.added += 1;
    }
    Ok(())
}

/// Subscribes to the history's feeds the user does not have yet, through the OPML import;
/// answers the user's feeds by URL (as the history and tidings write them) after it, and, in
/// a dry run, the URLs that would be subscribed.
async fn import_subscriptions(
    fetcher: &Fetcher,
    user_id: i64,
    history: &History,
    options: &HistoryOptions,
    report: &mut HistoryReport,
) -> Result<(HashMap<String, i64>, HashSet<String>), HistoryError> {
    let store = fetcher.store();
    let subscribed: HashSet<String> = store
        .list_subscriptions(user_id)
        .await?
        .into_iter()
        .map(|subscription| subscription.feed_url)
        .collect();
    let mut new_feeds: Vec<OpmlFeed> = Vec::new();
    for feed in &history.feeds {
        if subscribed.contains(&feed.url) || new_feeds.iter().any(|new| new.xml_url == feed.url) {
            report.subscriptions.unchanged += 1;
        } else {
            new_feeds.push(OpmlFeed {
                xml_url: feed.url.clone(),
                title: feed.title.clone(),
                html_url: feed.site_url.clone(),
                group: feed.folder.clone(),
                // Another reader's history carries none of tidings' own settings.
                settings: crate::opml::OpmlSettings::default(),
            });
        }
    }
    let mut feeds: HashMap<String, i64> = HashMap::new();
    let mut pending = HashSet::new();
    if options.dry_run {
        report.subscriptions.added += new_feeds.len();
        pending.extend(new_feeds.iter().map(|feed| feed.xml_url.clone()));
    } else if !new_feeds.is_empty() {
        let document = build_opml("import", &new_feeds, chrono::Utc::now());
        let opml_options = ImportOptions {
            file_name: options.source_name.clone(),
            max_subscriptions: options.max_subscriptions,
            ..ImportOptions::default()
        };
        let imported = import_opml(fetcher, user_id, document.as_bytes(), &opml_options)
            .await
            .map_err(|error| match error {
                crate::ImportError::Store(error) => HistoryError::Store(error),
                other => HistoryError::Source(other.to_string()),
            })?;
        let ids: HashMap<i64, i64> = store
            .list_subscriptions(user_id)
            .await?
            .into_iter()
            .map(|subscription| (subscription.id, subscription.feed_id))
            .collect();
        for entry in imported.entries {
            match (entry.status, entry.subscription_id) {
                (ImportStatus::Added, Some(id)) => {
                    report.subscriptions.added += 1;
                    if let Some(&feed_id) = ids.get(&id) {
                        feeds.insert(entry.url, feed_id);
                    }
                }
                (ImportStatus::Skipped, _) => report.subscriptions.unchanged += 1,
                _ => report.subscriptions.fail(format!(
                    "{}: {}",
                    entry.url,
                    entry.reason.as_deref().unwrap_or("not subscribed")
                )),
            }
        }
    }
    for subscription in store.list_subscriptions(user_id).await? {
        feeds.insert(subscription.feed_url, subscription.feed_id);
    }
    Ok((feeds, pending))
}

/// Applies one matched item's star, read mark and labels where they differ.
async fn apply_item(
    store: &Store,
    user_id: i64,
    item_id: i64,
    item: &HistoryItem,
    labels: &[&String],
    options: &HistoryOptions,
    report: &mut HistoryReport,
) -> Result<(), StoreError> {
    let current = store.item(user_id, item_id).await?;
    let star = (item.starred && !current.is_starred).then_some(true);
    let read = item.read.filter(|&read| read != current.is_read);
    if item.starred {
        match star {
            Some(_) => report.starred.added += 1,
            None => report.starred.unchanged += 1,
        }
    }
    if item.read.is_some() {
        match read {
            Some(_) => report.read_marks.added += 1,
            None => report.read_marks.unchanged += 1,
        }
    }
    if !options.dry_run && (star.is_some() || read.is_some()) {
        store.set_item_state(user_id, item_id, read, star).await?;
    }
    if labels.is_empty() {
        return Ok(());
    }
    let have: HashSet<String> = store
        .item_labels(user_id, &[item_id])
        .await?
        .into_iter()
        .map(|(_, label)| label)
        .collect();
    for label in labels {
        if have.contains(label.as_str()) {
            report.labels.unchanged += 1;
        } else if options.dry_run {
            report.labels.added += 1;
        } else {
            match store.add_item_label(user_id, item_id, label).await {
                Ok(_) => report.labels.added += 1,
                Err(StoreError::Invalid(reason)) => {
                    report
                        .labels
                        .fail(format!("{label:?} on {}: {reason}", item.describe()));
                }
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

/// Keeps a starred item tidings does not have as a bookmark, unless it is one already.
async fn keep_as_bookmark(
    store: &Store,
    user_id: i64,
    item: &HistoryItem,
    options: &HistoryOptions,
    bookmarks: &mut HashSet<(Option<String>, Option<String>)>,
    report: &mut HistoryReport,
) -> Result<(), StoreError> {
    let key = (item.link.clone(), item.title.clone());
    if bookmarks.contains(&key) {
        report.starred.unchanged += 1;
        return Ok(());
    }
    if !options.dry_run {
        let snapshot = DetachedBookmark {
            url: item.link.clone(),
            title: item.title.clone(),
            content: item.content.clone(),
            feed_title: item.feed_title.clone().or_else(|| item.feed_url.clone()),
            published_at: item.published_at,
        };
        store.create_detached_bookmark(user_id, &snapshot).await?;
    }
    bookmarks.insert(key);
    report.starred.kept_as_bookmark += 1;
    Ok(())
}
