//! Scraped sources for tidings (F7): the items of a web page that has no feed.
//!
//! Pure, like `tidings-feed`: a page's bytes and a [`ScrapeConfig`] in, the feed parser's own
//! [`tidings_feed::Item`]s out (so they get the same identity rule, sanitizing and storage as
//! feed items), or a [`ScrapeError`] that names the selector or key path that found nothing.
//! Three kinds of page (see [`ScrapeKind`]):
//!
//! - plain HTML (Webflow and the like): CSS selectors for the item and its fields;
//! - Next.js: a key path into the JSON of `<script id="__NEXT_DATA__">`;
//! - Remix: a route's key into `window.__remixContext.state.loaderData`, and a key path in it.
//!
//! The fetch worker fetches the page through the guarded client like a feed and hands it here
//! instead of to the feed parser.

#![warn(missing_docs)]

mod config;
mod error;
mod fields;
mod html;
mod json;

pub use config::{MAX_SELECTOR_LEN, MAX_URL_PREFIX_LEN, ScrapeConfig, ScrapeKind};
pub use error::ScrapeError;
pub use fields::MAX_ITEMS;

use tidings_feed::Item;
use url::Url;

/// What [`scrape`] needs to know besides the bytes and the configuration.
#[derive(Debug, Clone)]
pub struct ScrapeOptions {
    /// The URL the page was fetched from (after redirects): relative links are resolved
    /// against it unless the configuration has a `url_prefix`.
    pub page_url: Option<Url>,
    /// The `charset` of the HTTP `Content-Type`, if the response had one.
    pub http_charset: Option<String>,
    /// Larger pages are refused with [`ScrapeError::TooLarge`].
    pub max_input_bytes: usize,
}

impl Default for ScrapeOptions {
    fn default() -> Self {
        ScrapeOptions {
            page_url: None,
            http_charset: None,
            max_input_bytes: tidings_feed::DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

/// The items of a page, as a feed would have given them.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapedPage {
    /// The page's `<title>`, as plain text.
    pub title: Option<String>,
    /// The items in page order, at most [`MAX_ITEMS`], each link once. Their `summary` and
    /// `content` are HTML as found: sanitize them with [`tidings_feed::sanitize_items`].
    pub items: Vec<Item>,
}

/// Reads the items of `bytes`, a page of the kind `config` names. Never panics, never
/// fetches anything. Fails when the configuration is invalid, when a selector or key path
/// that must find something finds nothing (the error names it), or when no item has a title
/// or a link.
pub fn scrape(
    bytes: &[u8],
    options: &ScrapeOptions,
    config: &ScrapeConfig,
) -> Result<ScrapedPage, ScrapeError> {
    let checked = config.checked()?;
    if bytes.len() > options.max_input_bytes {
        return Err(ScrapeError::TooLarge {
            size: bytes.len(),
            limit: options.max_input_bytes,
        });
    }
    let charset = options
        .http_charset
        .clone()
        .or_else(|| fields::meta_charset(bytes));
    let decoded = tidings_feed::encoding::decode_document(bytes, charset.as_deref());
    let document = scraper::Html::parse_document(&decoded.text);
    let title = fields::page_title(&document);
    let raw = match checked.kind {
        ScrapeKind::Html => html::items(&document, &checked)?,
        ScrapeKind::Nextjs => json::next_items(&document, &checked)?,
        ScrapeKind::Remix => json::remix_items(&document, &checked)?,
    };
    let items = fields::finish(raw, &checked, options.page_url.as_ref())?;
    Ok(ScrapedPage { title, items })
}
