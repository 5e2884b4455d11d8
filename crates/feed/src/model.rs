//! The one normalized model every feed format is read into.

use chrono::{DateTime, Utc};
use url::Url;

use crate::identity::{ItemIdentity, item_identity};
use crate::text::{html_to_text, plain_text};

/// The family of format a feed was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedFormat {
    /// RSS 0.90, 0.91, 0.92, 1.0 (RDF) or 2.0.
    Rss,
    /// Atom 0.3 or 1.0.
    Atom,
    /// JSON Feed 1.0 or 1.1.
    Json,
}

/// The exact format and version a feed was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FeedVersion {
    /// RSS 0.90 (RDF based, Netscape namespace).
    Rss090,
    /// RSS 0.91 (Netscape or UserLand).
    Rss091,
    /// RSS 0.92 (and the rare 0.93 / 0.94).
    Rss092,
    /// RSS 1.0 (RDF).
    Rss10,
    /// RSS 2.0, also the default for an `<rss>` root without a known version.
    Rss20,
    /// Atom 0.3 (pre-standard).
    Atom03,
    /// Atom 1.0 (RFC 4287).
    Atom10,
    /// JSON Feed 1.0.
    Json10,
    /// JSON Feed 1.1.
    Json11,
}

impl FeedVersion {
    /// The family this version belongs to.
    pub fn format(self) -> FeedFormat {
        match self {
            FeedVersion::Rss090
            | FeedVersion::Rss091
            | FeedVersion::Rss092
            | FeedVersion::Rss10
            | FeedVersion::Rss20 => FeedFormat::Rss,
            FeedVersion::Atom03 | FeedVersion::Atom10 => FeedFormat::Atom,
            FeedVersion::Json10 | FeedVersion::Json11 => FeedFormat::Json,
        }
    }
}

/// A parsed feed, normalized: plain-text titles, absolute http(s) URLs, UTC times, HTML bodies
/// (not yet sanitized; see [`Feed::sanitize_html`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Feed {
    /// The format and version the feed was written in.
    pub version: FeedVersion,
    /// The feed's title as plain text.
    pub title: Option<String>,
    /// The web site the feed belongs to (RSS `link`, Atom `alternate` link, JSON
    /// `home_page_url`).
    pub site_url: Option<String>,
    /// The feed's own URL as it states it (Atom `self` link, JSON `feed_url`).
    pub feed_url: Option<String>,
    /// The feed's description or subtitle as plain text.
    pub description: Option<String>,
    /// The feed's language tag, as written.
    pub language: Option<String>,
    /// An icon or logo URL the feed names.
    pub icon: Option<String>,
    /// When the feed says it was last updated.
    pub updated: Option<DateTime<Utc>>,
    /// The feed-level authors (names, or e-mail addresses when no name is given).
    pub authors: Vec<String>,
    /// WebSub hubs the feed advertises.
    pub hubs: Vec<String>,
    /// The items (RSS items, Atom entries, JSON Feed items) in document order.
    pub items: Vec<Item>,
    /// Set when the document was damaged (truncated or malformed XML, size bounds) and only the
    /// part before the damage was read.
    pub warning: Option<String>,
}

impl Feed {
    /// The format family of the feed.
    pub fn format(&self) -> FeedFormat {
        self.version.format()
    }

    /// Replaces every item's `summary` and `content` with its sanitized form, relative URLs
    /// resolved against the item's [`Item::content_base`], and keeps its `thumbnail` only when
    /// it passes the sanitizer's image rule. Item identities are unaffected.
    pub fn sanitize_html(&mut self, sanitizer: &crate::sanitize::Sanitizer) {
        sanitize_items(&mut self.items, sanitizer);
    }
}

/// What [`Feed::sanitize_html`] does to a feed's items, for items that come from elsewhere
/// (a scraped page): `summary` and `content` sanitized with relative URLs resolved against
/// [`Item::content_base`], `thumbnail` kept only when it passes the image rule. Identities are
/// unaffected.
pub fn sanitize_items(items: &mut [Item], sanitizer: &crate::sanitize::Sanitizer) {
    let clean = |html: &str, base: Option<&Url>| {
        let clean = sanitizer.clean(html, base);
        (!clean.trim().is_empty()).then_some(clean)
    };
    for item in items {
        let base = item.content_base.as_ref();
        // Content falls back to the summary, so both are often the same text: clean it once.
        let same = item.summary == item.content;
        item.content = item.content.as_deref().and_then(|html| clean(html, base));
        item.summary = if same {
            item.content.clone()
        } else {
            item.summary.as_deref().and_then(|html| clean(html, base))
        };
        item.thumbnail = item
            .thumbnail
            .as_deref()
            .and_then(|url| sanitizer.image_url(url));
    }
}

/// One item of a feed.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The feed's own id for the item (RSS `guid`, RSS 1.0 `rdf:about`, Atom `id`, JSON `id`).
    pub guid: Option<String>,
    /// The item's web page, absolute (RSS `link` or a permalink `guid`, Atom `alternate` link,
    /// JSON `url` or `external_url`).
    pub url: Option<String>,
    /// The title as plain text.
    pub title: Option<String>,
    /// The authors' names (or e-mail addresses when no name is given).
    pub authors: Vec<String>,
    /// When the item was published; its update time when the feed gives only that.
    pub published: Option<DateTime<Utc>>,
    /// When the item was last updated.
    pub updated: Option<DateTime<Utc>>,
    /// The short form as HTML (RSS `description`, Atom `summary`, JSON `summary`).
    pub summary: Option<String>,
    /// The full body as HTML (RSS `content:encoded` over `description`, Atom `content` over
    /// `summary`, JSON `content_html` over `content_text`).
    pub content: Option<String>,
    /// The URL relative links in `summary` and `content` are resolved against: the `xml:base`
    /// in effect, else the item's URL, else the feed's URL.
    pub content_base: Option<Url>,
    /// Categories and tags, de-duplicated, in document order.
    pub categories: Vec<String>,
    /// Enclosures: RSS `enclosure`, Atom `enclosure` links, `media:content`, JSON
    /// `attachments`.
    pub enclosures: Vec<Enclosure>,
    /// An image that stands for the item (a video's still, an episode's artwork), absolute:
    /// the largest `media:thumbnail` (in the item, a `media:group` or a `media:content`), else
    /// an image `media:content`, else `itunes:image`; JSON Feed `image`, else `banner_image`.
    /// [`Feed::sanitize_html`] keeps it only when it passes the sanitizer's image rule (https,
    /// or http rewritten to https when configured), so it can be shown as it is.
    pub thumbnail: Option<String>,
    /// The language the item itself declares, as written (Atom `xml:lang` on the entry or its
    /// content, RSS `dc:language` in the item, JSON Feed 1.1 `language`); the feed's is
    /// [`Feed::language`]. A declaration to check, not to trust: see `tidings_text::language`.
    pub language: Option<String>,
    pub(crate) identity: ItemIdentity,
}

impl Item {
    /// The item's identity within its feed (F4), computed from the values as parsed (before
    /// sanitizing), so it does not change when the sanitizer's policy does.
    pub fn identity(&self) -> &ItemIdentity {
        &self.identity
    }

    /// The authors joined with ", ", if any.
    pub fn author(&self) -> Option<String> {
        (!self.authors.is_empty()).then(|| self.authors.join(", "))
    }
}

/// The fields of an item before its identity is computed: what every reader of a source
/// (the feed parsers, the page scraper of `tidings-scrape`) fills in, so that
/// [`ItemDraft::finish`] applies one identity rule to all of them.
#[derive(Debug, Default)]
pub struct ItemDraft {
    /// See [`Item::guid`].
    pub guid: Option<String>,
    /// See [`Item::url`].
    pub url: Option<String>,
    /// See [`Item::title`].
    pub title: Option<String>,
    /// See [`Item::authors`].
    pub authors: Vec<String>,
    /// See [`Item::published`].
    pub published: Option<DateTime<Utc>>,
    /// See [`Item::updated`].
    pub updated: Option<DateTime<Utc>>,
    /// See [`Item::summary`].
    pub summary: Option<String>,
    /// See [`Item::content`].
    pub content: Option<String>,
    /// See [`Item::content_base`].
    pub content_base: Option<Url>,
    /// See [`Item::categories`].
    pub categories: Vec<String>,
    /// See [`Item::enclosures`].
    pub enclosures: Vec<Enclosure>,
    /// See [`Item::thumbnail`].
    pub thumbnail: Option<String>,
    /// See [`Item::language`].
    pub language: Option<String>,
}

impl ItemDraft {
    /// Completes the item: published falls back to updated, content to summary, and the
    /// identity is computed from the summary's text (or the content's when there is none).
    pub fn finish(mut self) -> Item {
        if self.published.is_none() {
            self.published = self.updated;
        }
        if self.content.is_none() {
            self.content.clone_from(&self.summary);
        }
        let summary_text = self
            .summary
            .as_deref()
            .or(self.content.as_deref())
            .and_then(html_to_text);
        let identity = item_identity(
            self.guid.as_deref(),
            self.url.as_deref(),
            self.title.as_deref(),
            self.published,
            summary_text.as_deref(),
        );
        Item {
            guid: self.guid,
            url: self.url,
            title: self.title,
            authors: self.authors,
            published: self.published,
            updated: self.updated,
            summary: self.summary,
            content: self.content,
            content_base: self.content_base,
            categories: self.categories,
            enclosures: self.enclosures,
            thumbnail: self.thumbnail,
            language: self.language,
            identity,
        }
    }

    /// Adds a category unless it is blank or already there.
    pub fn add_category(&mut self, raw: &str) {
        if let Some(category) = plain_text(raw)
            && !self.categories.contains(&category)
        {
            self.categories.push(category);
        }
    }

    /// Adds an author unless blank or already there.
    pub fn add_author(&mut self, name: Option<String>) {
        if let Some(name) = name
            && !self.authors.contains(&name)
        {
            self.authors.push(name);
        }
    }

    /// Adds an enclosure unless its URL is already there (then missing fields are filled in).
    pub fn add_enclosure(&mut self, enclosure: Enclosure) {
        match self.enclosures.iter_mut().find(|e| e.url == enclosure.url) {
            Some(existing) => {
                if existing.mime_type.is_none() {
                    existing.mime_type = enclosure.mime_type;
                }
                if existing.length.is_none() {
                    existing.length = enclosure.length;
                }
            }
            None => self.enclosures.push(enclosure),
        }
    }
}

/// A file attached to an item: podcast audio, a video, an image.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Enclosure {
    /// Absolute http(s) URL of the file.
    pub url: String,
    /// Its MIME type, when the feed states it.
    pub mime_type: Option<String>,
    /// Its size in bytes, when the feed states a positive one.
    pub length: Option<u64>,
}
