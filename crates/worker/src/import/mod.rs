//! Importing a user's history from another reader (F37): subscriptions with their titles and
//! folders, starred items, read marks and item labels, from a Google Reader API server
//! ([`greader`]), a Miniflux server ([`miniflux`], with the per-feed settings tidings has) or a
//! file ([`file`]: OPML, or a Google Reader Takeout / FreshRSS / Inoreader starred-items JSON).
//!
//! Every source is read into one [`History`], which [`apply_history`] maps onto tidings:
//! new subscriptions go through the OPML import (so each new feed gets its first fetch the
//! normal way), then each item of the history is matched to the item tidings has in the same
//! feed (by guid, then link). What is already so is left alone, so importing twice changes
//! nothing; a dry run counts what would change and writes nothing. A starred item tidings
//! does not have (its feed is gone, could not be fetched, or no longer lists it) is kept as a
//! bookmark with the other reader's title, content and date (F34).
//!
//! The other reader's filters (Miniflux's block and keep rules, FreshRSS' read filters)
//! become rules ([`rules`]), made after the subscriptions and run once on the new feeds' first
//! items; one the user has already is not made again.
//!
//! This module sits on [`crate::opml`], [`crate::import_job`] and the store only; [`job`] runs
//! the same import as a background job for the server.

pub mod file;
mod freshrss_rules;
pub mod greader;
mod history;
pub mod job;
pub mod miniflux;
mod miniflux_rules;
mod remote;
mod report;
mod rules;
mod source;

pub use file::read_history_file;
pub use greader::GReaderClient;
pub use history::{History, HistoryFeed, HistoryItem};
pub use job::{HISTORY_JOB_KIND, HistoryInput, job_source_parts, start_history_import};
pub use miniflux::MinifluxClient;
pub use remote::HistorySource;
pub use report::KindReport;
pub use rules::HistoryRule;
pub use source::MAX_ITEMS;

use std::collections::{HashMap, HashSet};

use tidings_store::{DetachedBookmark, Store, StoreError};

use crate::Fetcher;
use crate::import_job::JobProgress;
use crate::opml::{
    ImportOptions, ImportStatus, OpmlFeed, OpmlSettings, build_opml, import_opml_with_progress,
};
use history::is_default_folder;
use rules::{RuleFeeds, import_rules};

/// The report of a history import, per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
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
    /// Per-feed settings of new subscriptions (the Miniflux API's, a tidings export's).
    pub settings: KindReport,
    /// Rules made of the other reader's filters (Miniflux's block and keep rules, FreshRSS'
    /// read filters).
    pub rules: KindReport,
}

impl HistoryReport {
    /// Whether everything was imported (nothing failed).
    pub fn complete(&self) -> bool {
        self.kinds().iter().all(|(_, kind)| kind.failed == 0)
    }

    /// The kinds with their names, in the order they are printed.
    pub fn kinds(&self) -> [(&'static str, &KindReport); 7] {
        [
            ("subscriptions", &self.subscriptions),
            ("folders", &self.folders),
            ("starred", &self.starred),
            ("read marks", &self.read_marks),
            ("labels", &self.labels),
            ("settings", &self.settings),
            ("rules", &self.rules),
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

/// Where [`apply_history`] tells how far it is: `(done, total)`, the history's feeds and items
/// counted together.
#[derive(Clone)]
pub struct ProgressSink(pub std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
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
    /// Told how far the import is, when given.
    pub progress: Option<ProgressSink>,
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
    let total = history.feeds.len() + history.items.len();
    let tell = |done: usize| {
        if let Some(ProgressSink(sink)) = &options.progress {
            sink(done, total);
        }
    };
    tell(0);
    let before: HashSet<i64> = if history.rules.is_empty() {
        HashSet::new()
    } else {
        known_feeds(store, user_id).await?.into_values().collect()
    };
    let (feeds, pending) =
        import_subscriptions(fetcher, user_id, history, options, &mut report).await?;
    let where_ = RuleFeeds {
        feeds: &feeds,
        pending: &pending,
    };
    import_rules(
        store,
        user_id,
        &history.rules,
        &where_,
        options.dry_run,
        &mut report.rules,
    )
    .await?;
    if report.rules.added > 0 && !options.dry_run {
        // The new feeds' first fetch came before their rules: run them on what it brought,
        // as if the rules had been there first (the other reader never showed what they
        // hide). The feeds the user had are left as they are.
        let new: HashSet<i64> = feeds
            .values()
            .copied()
            .filter(|f| !before.contains(f))
            .collect();
        for feed_id in new {
            store.run_rules_on_backlog(user_id, feed_id).await?;
        }
    }
    tell(history.feeds.len());
    let mut bookmarks: HashSet<(Option<String>, Option<String>)> = store
        .list_bookmarks(user_id)
        .await?
        .into_iter()
        .map(|bookmark| (bookmark.url, bookmark.title))
        .collect();
    // Every folder name the history uses, the default ones too: servers label items with
    // their feed's folder, which is no label of the user's.
    let folders: HashSet<String> = history
        .feeds
        .iter()
        .filter_map(|feed| feed.folder.as_deref())
        .map(str::to_lowercase)
        .collect();
    let mut stored = HashMap::new();
    for (index, item) in history.items.iter().enumerate() {
        tell(history.feeds.len() + index);
        let found = match locate(store, item, &feeds, &pending, &mut stored).await? {
            Located::Predicted => {
                predict_new_item(item, &labels_of(item, &folders), &mut report);
                continue;
            }
            Located::Found(item_id) => Some(item_id),
            Located::Missing => None,
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
                    // The item is kept, as a bookmark; a bookmark has no labels.
                    for label in labels {
                        report.labels.not_kept(format!(
                            "{label:?} on {}: kept as a bookmark, which has no labels",
                            item.describe()
                        ));
                    }
                } else {
                    for label in labels {
                        report.labels.fail(format!(
                            "{label:?} on {}: tidings does not have the item",
                            item.describe()
                        ));
                    }
                }
            }
        }
    }
    tell(total);
    Ok(report)
}

/// The item's labels that are not the folder names a server also lists on items (FreshRSS
/// labels every item with its feed's folder, "Uncategorized" included).
fn labels_of<'a>(item: &'a HistoryItem, folders: &HashSet<String>) -> Vec<&'a String> {
    item.labels
        .iter()
        .filter(|label| !folders.contains(&label.to_lowercase()) && !is_default_folder(label))
        .collect()
}

/// The folder a history feed goes to: none for another reader's default folder (FreshRSS'
/// "Uncategorized", Miniflux's "All"), whose feeds go to tidings' default group.
fn folder_of(feed: &HistoryFeed) -> Option<&str> {
    feed.folder
        .as_deref()
        .filter(|folder| !folder.trim().is_empty() && !is_default_folder(folder))
}

/// A feed URL as tidings stores it (F10: one spelling per address), to match a history's
/// feed whatever spelling its reader kept.
fn normalized(url: &str) -> String {
    tidings_feed::normalize_feed_url_text(url)
}

/// Where an item of the history is in tidings.
enum Located {
    /// In a feed a dry run would subscribe to and tidings has never fetched: not known
    /// without a fetch, which a dry run does not make.
    Predicted,
    /// This item of the user's feed (or, in a dry run, of the feed tidings already stores for
    /// other users).
    Found(i64),
    /// Not in tidings: its feed is gone, could not be subscribed, or no longer lists it.
    Missing,
}

/// Finds `item` in tidings: in the user's feed, by [`normalized`] URL (`feeds`); in a dry run,
/// for a feed it would subscribe to (`pending`), in that feed as tidings already stores it for
/// other users, so that a dry run says which stars will be kept as bookmarks as the import
/// would. `stored` remembers, per feed, whether tidings stores any item of it (one that has
/// none yet was never fetched: its items are not known either).
async fn locate(
    store: &Store,
    item: &HistoryItem,
    feeds: &HashMap<String, i64>,
    pending: &HashSet<String>,
    stored: &mut HashMap<i64, bool>,
) -> Result<Located, StoreError> {
    let Some(url) = item.feed_url.as_deref().map(normalized) else {
        return Ok(Located::Missing);
    };
    let feed_id = match feeds.get(&url) {
        Some(&feed_id) => feed_id,
        None if pending.contains(&url) => match store.feed_id_by_url(&url).await? {
            Some(feed_id) => feed_id,
            None => return Ok(Located::Predicted),
        },
        None => return Ok(Located::Missing),
    };
    if pending.contains(&url) {
        let has_items = match stored.get(&feed_id) {
            Some(&has_items) => has_items,
            None => !store.feed_item_ids(feed_id).await?.is_empty(),
        };
        stored.insert(feed_id, has_items);
        if !has_items {
            return Ok(Located::Predicted);
        }
    }
    Ok(match store.find_feed_item(feed_id, &item.keys()).await? {
        Some(item_id) if !pending.contains(&url) => Located::Found(item_id),
        // A stored feed the user would subscribe to: it will have the item, unread.
        Some(_) => Located::Predicted,
        None => Located::Missing,
    })
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
    for folder in history.feeds.iter().filter_map(folder_of) {
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

/// Subscribes to the history's feeds the user does not have yet, through the OPML import, with
/// the settings the history carries for them. Answers the feeds the user has after it, by
/// [`normalized`] URL (see [`known_feeds`]), and, in a dry run, the URLs that would be
/// subscribed.
async fn import_subscriptions(
    fetcher: &Fetcher,
    user_id: i64,
    history: &History,
    options: &HistoryOptions,
    report: &mut HistoryReport,
) -> Result<(HashMap<String, i64>, HashSet<String>), HistoryError> {
    let store = fetcher.store();
    let known = known_feeds(store, user_id).await?;
    let mut new_feeds: Vec<OpmlFeed> = Vec::new();
    for feed in &history.feeds {
        let url = normalized(&feed.url);
        if !feed.unsupported_settings.is_empty() {
            report.settings.not_kept(format!(
                "{}: {} (tidings has no such setting)",
                feed.url,
                feed.unsupported_settings.join(", ")
            ));
        }
        if known.contains_key(&url) || new_feeds.iter().any(|new| new.xml_url == url) {
            report.subscriptions.unchanged += 1;
            if feed.settings != OpmlSettings::default() {
                // A subscription already there keeps the settings the user gave it here.
                report.settings.unchanged += 1;
            }
            continue;
        }
        new_feeds.push(OpmlFeed {
            xml_url: url,
            title: feed.title.clone(),
            html_url: feed.site_url.clone(),
            group: folder_of(feed).map(str::to_owned),
            settings: feed.settings.clone(),
            read_filters: Vec::new(),
        });
    }
    let with_settings = |feeds: &mut dyn Iterator<Item = &OpmlFeed>| {
        feeds
            .filter(|feed| feed.settings != OpmlSettings::default())
            .count()
    };
    if options.dry_run {
        report.subscriptions.added += new_feeds.len();
        report.settings.added += with_settings(&mut new_feeds.iter());
        let pending = new_feeds.into_iter().map(|feed| feed.xml_url).collect();
        return Ok((known, pending));
    }
    if new_feeds.is_empty() {
        return Ok((known, HashSet::new()));
    }
    let document = build_opml("import", &new_feeds, chrono::Utc::now());
    let opml_options = ImportOptions {
        file_name: options.source_name.clone(),
        max_subscriptions: options.max_subscriptions,
        ..ImportOptions::default()
    };
    // The new feeds are checked and fetched one by one: the longest part of a large import,
    // told as it goes.
    let checks = JobProgress::new(0);
    let settled_before = history.feeds.len().saturating_sub(new_feeds.len());
    let forward = options
        .progress
        .clone()
        .map(|sink| tell_checks(&checks, sink, settled_before, history));
    let imported = import_opml_with_progress(
        fetcher,
        user_id,
        document.as_bytes(),
        &opml_options,
        &checks,
    )
    .await;
    if let Some(forward) = forward {
        forward.abort();
        let _ = forward.await;
    }
    let imported = imported.map_err(|error| match error {
        crate::ImportError::Store(error) => HistoryError::Store(error),
        other => HistoryError::Source(other.to_string()),
    })?;
    let known = known_feeds(store, user_id).await?;
    for entry in imported.entries {
        let feed = new_feeds.iter().find(|feed| feed.xml_url == entry.url);
        match entry.status {
            ImportStatus::Added if known.contains_key(&normalized(&entry.url)) => {
                report.subscriptions.added += 1;
                report.settings.added += with_settings(&mut feed.into_iter());
            }
            // Subscribed, then merged into a feed the user already had (its address moved
            // there permanently): nothing new.
            ImportStatus::Added | ImportStatus::Skipped => report.subscriptions.unchanged += 1,
            _ => report.subscriptions.fail(format!(
                "{}: {}",
                entry.url,
                entry.reason.as_deref().unwrap_or("not subscribed")
            )),
        }
    }
    Ok((known, HashSet::new()))
}

/// Tells `sink` how far the history import is while the OPML import checks its new feeds:
/// `settled_before` feeds were settled without a check, then one more per feed checked.
fn tell_checks(
    checks: &JobProgress,
    ProgressSink(sink): ProgressSink,
    settled_before: usize,
    history: &History,
) -> tokio::task::JoinHandle<()> {
    let mut changes = checks.subscribe();
    let total = history.feeds.len() + history.items.len();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let checked = changes.borrow_and_update().checked as usize;
            sink(settled_before + checked, total);
        }
    })
}

/// The user's feeds by [`normalized`] URL: each subscription's feed URL, the ones a permanent
/// redirect moved it from, and the one that last answered after redirects where the store
/// kept it.
async fn known_feeds(store: &Store, user_id: i64) -> Result<HashMap<String, i64>, StoreError> {
    let mut known: HashMap<String, i64> = store
        .subscription_other_urls(user_id)
        .await?
        .into_iter()
        .map(|(feed_id, url)| (normalized(&url), feed_id))
        .collect();
    // A feed's own URL wins over another feed's last answering one.
    for subscription in store.list_subscriptions(user_id).await? {
        known.insert(normalized(&subscription.feed_url), subscription.feed_id);
    }
    Ok(known)
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
