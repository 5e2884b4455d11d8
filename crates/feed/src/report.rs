//! The JSON shape `tidings parse` prints, kept here so the snapshot tests check exactly what
//! the command line shows.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::model::{Enclosure, Feed, FeedFormat};

/// A feed as `tidings parse` prints it.
#[derive(Debug, Serialize)]
pub struct FeedReport {
    /// `rss`, `atom` or `json`.
    pub format: FeedFormat,
    /// The feed's title.
    pub title: Option<String>,
    /// The web site the feed belongs to.
    pub site_url: Option<String>,
    /// The feed's description as plain text.
    pub description: Option<String>,
    /// RFC 3339 UTC.
    pub updated: Option<String>,
    /// The items.
    pub items: Vec<ItemReport>,
}

/// An item as `tidings parse` prints it.
#[derive(Debug, Serialize)]
pub struct ItemReport {
    /// The feed's own id for the item (RSS `guid`, RSS 1.0 `rdf:about`, Atom `id`, JSON
    /// `id`), or `None` when the feed gives none.
    pub id: Option<String>,
    /// The key the store recognizes the item by (F4): `g:`, `l:` or `h:` for an id, a link or
    /// a content hash, then a SHA-256.
    pub identity: String,
    /// The item's web page.
    pub url: Option<String>,
    /// The title as plain text.
    pub title: Option<String>,
    /// The authors joined with ", " (what the store keeps).
    pub author: Option<String>,
    /// The authors, one name each.
    pub authors: Vec<String>,
    /// RFC 3339 UTC.
    pub published: Option<String>,
    /// RFC 3339 UTC.
    pub updated: Option<String>,
    /// HTML (sanitized when the feed was).
    pub summary: Option<String>,
    /// HTML (sanitized when the feed was).
    pub content: Option<String>,
    /// Categories and tags.
    pub categories: Vec<String>,
    /// Enclosures.
    pub enclosures: Vec<Enclosure>,
    /// The item's image (a video's still, an episode's artwork), https.
    pub thumbnail: Option<String>,
}

/// Formats a time as RFC 3339 in UTC with a `Z`, whole seconds.
pub fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl FeedReport {
    /// Builds the report of a feed (sanitize it first with [`Feed::sanitize_html`]).
    pub fn new(feed: &Feed) -> FeedReport {
        FeedReport {
            format: feed.format(),
            title: feed.title.clone(),
            site_url: feed.site_url.clone(),
            description: feed.description.clone(),
            updated: feed.updated.map(rfc3339),
            items: feed
                .items
                .iter()
                .map(|item| ItemReport {
                    id: item.guid.clone(),
                    identity: item.identity().key.clone(),
                    url: item.url.clone(),
                    title: item.title.clone(),
                    author: item.author(),
                    authors: item.authors.clone(),
                    published: item.published.map(rfc3339),
                    updated: item.updated.map(rfc3339),
                    summary: item.summary.clone(),
                    content: item.content.clone(),
                    categories: item.categories.clone(),
                    enclosures: item.enclosures.clone(),
                    thumbnail: item.thumbnail.clone(),
                })
                .collect(),
        }
    }
}
