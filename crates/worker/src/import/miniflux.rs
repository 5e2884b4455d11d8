//! A Miniflux API v1 client, reading what [`super::apply_history`] imports: the feeds with
//! their categories and settings, every entry with its status and star, and the user's and
//! feeds' block and keep rules ([`super::miniflux_rules`]).
//!
//! The JSON shapes are Miniflux's own (https://miniflux.app/docs/api.html; in miniflux/v2,
//! `client/model.go` and `internal/model/{feed,entry,category}.go`): `GET /v1/feeds` answers
//! a list of feeds, each with its `category`; `GET /v1/entries` answers `{"total", "entries"}`
//! and takes `status` (repeated), `order`, `direction`, `limit` (at most 1000,
//! `internal/model/entry.go`) and `after_entry_id`. Credentials go in `X-Auth-Token`; a refused
//! key is `401 {"error_message": "access unauthorized"}`.

use std::collections::HashMap;

use serde::Deserialize;

use super::HistoryError;
use super::history::{History, HistoryFeed, HistoryItem};
use super::miniflux_rules::{FeedFilters, miniflux_rules};
use super::rules::HistoryRule;
use super::source::{MAX_ITEMS, http_client, json_of, unreachable};
use crate::opml::OpmlSettings;

/// Entries asked for per page (Miniflux answers at most 1000).
const PAGE: usize = 500;

/// A session with a Miniflux server.
#[derive(Debug, Clone)]
pub struct MinifluxClient {
    client: reqwest::Client,
    base: String,
    api_key: String,
}

/// A feed of `GET /v1/feeds`: what the import uses of it.
#[derive(Debug, Deserialize)]
struct Feed {
    id: i64,
    feed_url: String,
    #[serde(default)]
    site_url: String,
    #[serde(default)]
    title: String,
    category: Option<Category>,
    #[serde(default)]
    crawler: bool,
    #[serde(default)]
    scraper_rules: String,
    #[serde(default)]
    rewrite_rules: String,
    #[serde(default)]
    urlrewrite_rules: String,
    #[serde(default)]
    blocklist_rules: String,
    #[serde(default)]
    keeplist_rules: String,
    #[serde(default)]
    block_filter_entry_rules: String,
    #[serde(default)]
    keep_filter_entry_rules: String,
    #[serde(default)]
    user_agent: String,
    #[serde(default)]
    cookie: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    proxy_url: String,
    #[serde(default)]
    fetch_via_proxy: bool,
    #[serde(default)]
    disabled: bool,
}

/// What the import uses of `GET /v1/me`: the user's filter rules (Miniflux 2.2 and later;
/// absent before, so empty).
#[derive(Debug, Default, Deserialize)]
struct Me {
    #[serde(default)]
    block_filter_entry_rules: String,
    #[serde(default)]
    keep_filter_entry_rules: String,
}

/// A feed's category.
#[derive(Debug, Deserialize)]
struct Category {
    #[serde(default)]
    title: String,
}

/// A page of `GET /v1/entries`.
#[derive(Debug, Deserialize)]
struct EntryPage {
    #[serde(default)]
    entries: Vec<Entry>,
}

/// An entry: what the import uses of it.
#[derive(Debug, Deserialize)]
struct Entry {
    id: i64,
    feed_id: i64,
    #[serde(default)]
    status: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
    published_at: Option<String>,
    #[serde(default)]
    starred: bool,
}

impl MinifluxClient {
    /// A client of the Miniflux at `base` (its root, such as `https://miniflux.example`; a
    /// trailing `/v1` is taken off) with an API key; through `guard` when given (see
    /// [`super::HistorySource::read`]).
    pub fn new(
        base: &str,
        api_key: &str,
        guard: Option<&tidings_fetch::GuardedClient>,
    ) -> Result<MinifluxClient, HistoryError> {
        let base = base.trim().trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base).to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(HistoryError::Source(format!(
                "{base:?} is not a web address: give the Miniflux server's address, such as \
                 https://miniflux.example"
            )));
        }
        Ok(MinifluxClient {
            client: http_client(&base, guard)?,
            base,
            api_key: api_key.trim().to_owned(),
        })
    }

    /// GETs `/v1/{path}` as JSON; a refused key and a missing API say what to do.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, HistoryError> {
        let url = format!("{}/v1/{path}", self.base);
        let response = self
            .client
            .get(&url)
            .query(query)
            .header("X-Auth-Token", &self.api_key)
            .send()
            .await
            .map_err(|error| unreachable(&url, &error))?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(HistoryError::Source(format!(
                "{} refused the API key (HTTP {status}): check it, or create one in Miniflux \
                 under Settings > API Keys > Create a new API key",
                self.base
            )));
        }
        if status == reqwest::StatusCode::NOT_FOUND && path == "me" {
            return Err(HistoryError::Source(format!(
                "{url} answered HTTP 404: is {} a Miniflux server? Give its root address, the \
                 one you open in the browser (the API is under /v1)",
                self.base
            )));
        }
        if !status.is_success() {
            return Err(HistoryError::Source(format!(
                "{url} answered HTTP {status}"
            )));
        }
        let value = json_of(&url, response).await?;
        serde_json::from_value(value).map_err(|error| {
            HistoryError::Source(format!(
                "{url} answered JSON that is not Miniflux's: {error}"
            ))
        })
    }

    /// Reads the account's feeds and every entry it has (read, unread, starred). The key is
    /// checked first (`/v1/me`), so that a wrong one is told before anything else.
    pub async fn history(&self) -> Result<History, HistoryError> {
        let me: Me = self.get("me", &[]).await?;
        let mut feeds: Vec<Feed> = self.get("feeds", &[]).await?;
        feeds.retain(|feed| {
            feed.feed_url.starts_with("http://") || feed.feed_url.starts_with("https://")
        });
        let mut history = History {
            rules: account_rules(&me, &feeds),
            ..History::default()
        };
        let mut by_id: HashMap<i64, (String, String)> = HashMap::new();
        for feed in feeds {
            by_id.insert(feed.id, (feed.feed_url.clone(), feed.title.clone()));
            history.feeds.push(history_feed(feed));
        }
        let mut seen = HashMap::new();
        let mut after: Option<i64> = None;
        let mut read = 0;
        loop {
            let mut query = vec![
                ("status", "read".to_owned()),
                ("status", "unread".to_owned()),
                ("order", "id".to_owned()),
                ("direction", "asc".to_owned()),
                ("limit", PAGE.to_string()),
            ];
            if let Some(after) = after {
                query.push(("after_entry_id", after.to_string()));
            }
            let page: EntryPage = self.get("entries", &query).await?;
            let count = page.entries.len();
            let last = page.entries.iter().map(|entry| entry.id).max();
            for entry in page.entries {
                history.add_item(history_item(entry, &by_id), &mut seen);
            }
            read += count;
            // Until an empty page: a server may answer fewer than asked for (its own limit)
            // before the end. One that ignores `after_entry_id` would answer the same page
            // for ever, and is left there.
            let moved_on = last.is_some_and(|last| after.is_none_or(|after| last > after));
            if count == 0 || !moved_on || read >= MAX_ITEMS {
                return Ok(history);
            }
            after = last;
        }
    }
}

/// The account's block and keep rules, the user's and each feed's, as tidings rules.
fn account_rules(me: &Me, feeds: &[Feed]) -> Vec<HistoryRule> {
    let filters: Vec<FeedFilters<'_>> = feeds
        .iter()
        .map(|feed| FeedFilters {
            feed_url: &feed.feed_url,
            title: if feed.title.trim().is_empty() {
                &feed.feed_url
            } else {
                &feed.title
            },
            blocklist: &feed.blocklist_rules,
            keeplist: &feed.keeplist_rules,
            block_lines: &feed.block_filter_entry_rules,
            keep_lines: &feed.keep_filter_entry_rules,
        })
        .collect();
    miniflux_rules(
        &me.block_filter_entry_rules,
        &me.keep_filter_entry_rules,
        &filters,
    )
}

/// A Miniflux feed as the history has it: its category as folder, its crawler as full text
/// for every item, *disabled* as a paused subscription, and the names of the settings tidings
/// has no equivalent for.
fn history_feed(feed: Feed) -> HistoryFeed {
    let mut unsupported: Vec<String> = Vec::new();
    let mut note = |set: bool, name: &str| {
        if set {
            unsupported.push(name.to_owned());
        }
    };
    let filled = |text: &str| !text.trim().is_empty();
    // tidings finds an article's main text itself: a selector of the page's content has no
    // place to go, nor have rules that rewrite entries. (Block and keep rules become rules:
    // `account_rules`.)
    note(filled(&feed.scraper_rules), "scraper rules");
    note(filled(&feed.rewrite_rules), "rewrite rules");
    note(filled(&feed.urlrewrite_rules), "URL rewrite rules");
    note(filled(&feed.user_agent), "user agent");
    note(filled(&feed.cookie), "cookie");
    note(filled(&feed.username), "feed credentials");
    note(filled(&feed.proxy_url) || feed.fetch_via_proxy, "proxy");
    let folder = feed
        .category
        .map(|category| category.title)
        .filter(|title| !title.trim().is_empty());
    HistoryFeed {
        url: feed.feed_url,
        title: Some(feed.title).filter(|title| !title.trim().is_empty()),
        folder,
        site_url: Some(feed.site_url).filter(|url| !url.trim().is_empty()),
        settings: OpmlSettings {
            full_text: feed.crawler.then(|| "always".to_owned()),
            suspended: feed.disabled.then_some(true),
            ..OpmlSettings::default()
        },
        unsupported_settings: unsupported,
    }
}

/// A Miniflux entry as the history has it, matched by its link (the API gives no guid). Its
/// content is kept only when it is starred: only a starred entry can become a bookmark, and
/// a large account's other entries would otherwise all be held at once.
fn history_item(entry: Entry, feeds: &HashMap<i64, (String, String)>) -> HistoryItem {
    let feed = feeds.get(&entry.feed_id);
    HistoryItem {
        feed_url: feed.map(|(url, _)| url.clone()),
        feed_title: feed
            .map(|(_, title)| title.clone())
            .filter(|title| !title.is_empty()),
        guid: None,
        link: Some(entry.url).filter(|url| !url.trim().is_empty()),
        title: Some(entry.title).filter(|title| !title.trim().is_empty()),
        content: Some(entry.content).filter(|content| entry.starred && !content.is_empty()),
        published_at: entry
            .published_at
            .as_deref()
            .and_then(|date| chrono::DateTime::parse_from_rfc3339(date).ok())
            .map(|date| date.timestamp()),
        starred: entry.starred,
        read: Some(entry.status == "read"),
        labels: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn unsupported_names(feeds: &[HistoryFeed]) -> HashSet<&str> {
        feeds
            .iter()
            .flat_map(|feed| feed.unsupported_settings.iter().map(String::as_str))
            .collect()
    }

    #[test]
    fn feeds_keep_category_crawler_and_name_what_has_no_equivalent() {
        let feed: Feed = serde_json::from_value(serde_json::json!({
            "id": 3, "feed_url": "https://a.example/feed", "site_url": "https://a.example/",
            "title": "A", "category": {"id": 1, "title": "Tech"}, "crawler": true,
            "scraper_rules": "article", "user_agent": "Mozilla", "password": "secret",
            "username": "me", "disabled": false
        }))
        .unwrap();
        let feed = history_feed(feed);
        assert_eq!(feed.folder.as_deref(), Some("Tech"));
        assert_eq!(feed.settings.full_text.as_deref(), Some("always"));
        assert_eq!(
            unsupported_names(std::slice::from_ref(&feed)),
            HashSet::from(["scraper rules", "user agent", "feed credentials"])
        );
        assert!(!format!("{feed:?}").contains("secret"));
    }

    #[test]
    fn only_starred_entries_keep_their_content() {
        let feeds = HashMap::from([(3, ("https://a.example/feed".to_owned(), "A".to_owned()))]);
        let entry = |starred| Entry {
            id: 1,
            feed_id: 3,
            status: "read".into(),
            title: "T".into(),
            url: "https://a.example/1".into(),
            content: "<p>x</p>".into(),
            published_at: Some("2024-05-01T10:00:00Z".into()),
            starred,
        };
        let item = history_item(entry(true), &feeds);
        assert_eq!(item.content.as_deref(), Some("<p>x</p>"));
        assert_eq!(item.published_at, Some(1_714_557_600));
        assert_eq!(item.read, Some(true));
        assert_eq!(item.feed_url.as_deref(), Some("https://a.example/feed"));
        assert_eq!(history_item(entry(false), &feeds).content, None);
    }
}
