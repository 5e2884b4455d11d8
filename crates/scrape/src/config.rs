//! A scraped source's configuration: which kind of page it is and where its items are.
//!
//! The fields are those of the catchup-feed seed's `ScraperConfig` (`item_selector`,
//! `title_selector`, `url_selector`, `date_selector`, `date_format`, `data_key`,
//! `context_key`, `url_prefix`), plus `summary_selector`. For the JSON kinds (Next.js and
//! Remix) the four field selectors are key paths inside each item instead of CSS selectors.

use chrono::format::{Item as FormatItem, StrftimeItems};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::ScrapeError;

/// The longest selector, key path or date format accepted: real ones are a few dozen
/// characters, and the bound keeps a configuration's cost small.
pub const MAX_SELECTOR_LEN: usize = 500;

/// The longest `url_prefix` accepted.
pub const MAX_URL_PREFIX_LEN: usize = 2048;

/// Where a page keeps its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ScrapeKind {
    /// Plain HTML (Webflow and the like): items found with CSS selectors.
    #[default]
    Html,
    /// A Next.js page: items in the JSON of `<script id="__NEXT_DATA__">`.
    Nextjs,
    /// A Remix page: items in a route's loader data in `window.__remixContext`.
    Remix,
}

impl ScrapeKind {
    /// The word used in the configuration and stored as the feed's format.
    pub fn as_str(self) -> &'static str {
        match self {
            ScrapeKind::Html => "html",
            ScrapeKind::Nextjs => "nextjs",
            ScrapeKind::Remix => "remix",
        }
    }
}

/// How to read items from one page. Absent fields are `None` (written as `null`); see
/// docs/scraped-sources.md for each kind.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ScrapeConfig {
    /// `html`, `nextjs` or `remix`.
    pub kind: ScrapeKind,
    /// html: the CSS selector of one item (required), e.g. `.w-dyn-item`.
    pub item_selector: Option<String>,
    /// The item's title. html: a CSS selector inside the item (default: the link's text).
    /// nextjs/remix: a key path inside the item (default `title`).
    pub title_selector: Option<String>,
    /// The item's link. html: a CSS selector inside the item whose `href` is taken (default:
    /// the item itself when it is a link, else its first link). nextjs/remix: a key path
    /// (default: the first of `url`, `link`, `href`, `slug`).
    pub url_selector: Option<String>,
    /// The item's date. html: a CSS selector (its `datetime` attribute, else its text).
    /// nextjs/remix: a key path (default: the first of `date`, `publishedAt`, `published_at`,
    /// `createdAt`); a number is read as Unix seconds, or milliseconds when it is that large.
    pub date_selector: Option<String>,
    /// The date's format in `strftime` notation (e.g. `%B %d, %Y` for "March 5, 2024");
    /// without it, the feed parser's lenient reading (RFC 3339, RFC 822, `2024年3月5日`…).
    pub date_format: Option<String>,
    /// The item's summary. html: a CSS selector whose inner HTML is taken (sanitized like
    /// any feed content). nextjs/remix: a key path (default: the first of `excerpt`,
    /// `description`, `summary`).
    pub summary_selector: Option<String>,
    /// nextjs: the key path to the item list inside `__NEXT_DATA__` (required), e.g.
    /// `props.pageProps.posts`. remix: the key path to it inside the route's loader data
    /// (absent when the loader data is the list itself).
    pub data_key: Option<String>,
    /// remix: the route whose loader data holds the items, a key of
    /// `__remixContext.state.loaderData` (required), e.g. `routes/blog._index`.
    pub context_key: Option<String>,
    /// Put before relative links instead of resolving them against the page's URL, e.g.
    /// `https://example.com/blog/` for slugs such as `my-post`.
    pub url_prefix: Option<String>,
}

/// A configuration checked by [`ScrapeConfig::validate`], with blank fields dropped.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub kind: ScrapeKind,
    pub item_selector: Option<String>,
    pub title: Option<String>,
    pub url: Option<String>,
    pub date: Option<String>,
    pub date_format: Option<String>,
    pub summary: Option<String>,
    pub data_key: Option<String>,
    pub context_key: Option<String>,
    pub url_prefix: Option<Url>,
}

impl ScrapeConfig {
    /// The configuration with its text fields trimmed and blank ones removed: what is stored
    /// and compared.
    pub fn normalized(&self) -> ScrapeConfig {
        let clean = |field: &Option<String>| {
            field
                .as_deref()
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        ScrapeConfig {
            kind: self.kind,
            item_selector: clean(&self.item_selector),
            title_selector: clean(&self.title_selector),
            url_selector: clean(&self.url_selector),
            date_selector: clean(&self.date_selector),
            date_format: clean(&self.date_format),
            summary_selector: clean(&self.summary_selector),
            data_key: clean(&self.data_key),
            context_key: clean(&self.context_key),
            url_prefix: clean(&self.url_prefix),
        }
    }

    /// Checks the configuration without a page: the fields its kind needs are there, those it
    /// does not use are absent, selectors parse, the date format and the URL prefix are valid.
    /// The error names the field.
    pub fn validate(&self) -> Result<(), ScrapeError> {
        self.checked().map(|_| ())
    }

    pub(crate) fn checked(&self) -> Result<Checked, ScrapeError> {
        let config = self.normalized();
        check_lengths(&config)?;
        check_presence(&config)?;
        check_key_paths(&config)?;
        check_date_format(&config)?;
        let url_prefix = url_prefix(&config)?;
        Ok(Checked {
            kind: config.kind,
            item_selector: config.item_selector,
            title: config.title_selector,
            url: config.url_selector,
            date: config.date_selector,
            date_format: config.date_format,
            summary: config.summary_selector,
            data_key: config.data_key,
            context_key: config.context_key,
            url_prefix,
        })
    }
}

/// A configuration error in `field`, saying why.
fn invalid(field: &'static str, reason: String) -> ScrapeError {
    ScrapeError::InvalidConfig { field, reason }
}

/// Every text field within [`MAX_SELECTOR_LEN`] characters and without control characters.
fn check_lengths(config: &ScrapeConfig) -> Result<(), ScrapeError> {
    let fields = [
        ("item_selector", &config.item_selector),
        ("title_selector", &config.title_selector),
        ("url_selector", &config.url_selector),
        ("date_selector", &config.date_selector),
        ("date_format", &config.date_format),
        ("summary_selector", &config.summary_selector),
        ("data_key", &config.data_key),
        ("context_key", &config.context_key),
    ];
    for (field, value) in fields {
        if let Some(value) = value {
            if value.chars().count() > MAX_SELECTOR_LEN {
                return Err(invalid(
                    field,
                    format!("it is longer than {MAX_SELECTOR_LEN} characters"),
                ));
            }
            if value.chars().any(char::is_control) {
                return Err(invalid(field, "it contains control characters".into()));
            }
        }
    }
    Ok(())
}

/// A field the kind needs must be there; one it does not use must not be, so that a
/// configuration never seems to do what it does not. An HTML source's selectors must parse.
fn check_presence(config: &ScrapeConfig) -> Result<(), ScrapeError> {
    let kind = config.kind.as_str();
    let presence = |field: &'static str, value: &Option<String>, needed: bool, note: &str| match (
        needed,
        value.is_some(),
    ) {
        (true, false) => Err(invalid(
            field,
            format!("a {kind} source needs it (for example `{note}`)"),
        )),
        (false, true) => Err(invalid(
            field,
            format!("a {kind} source does not use it ({note})"),
        )),
        _ => Ok(()),
    };
    let required = |field, value, example| presence(field, value, true, example);
    let unused = |field, value, instead| presence(field, value, false, instead);
    if config.kind != ScrapeKind::Remix {
        unused(
            "context_key",
            &config.context_key,
            "it is for remix sources",
        )?;
    }
    match config.kind {
        ScrapeKind::Html => {
            required("item_selector", &config.item_selector, ".w-dyn-item")?;
            unused(
                "data_key",
                &config.data_key,
                "it is for nextjs and remix sources",
            )?;
            for (field, value) in [
                ("item_selector", &config.item_selector),
                ("title_selector", &config.title_selector),
                ("url_selector", &config.url_selector),
                ("date_selector", &config.date_selector),
                ("summary_selector", &config.summary_selector),
            ] {
                if let Some(selector) = value {
                    scraper::Selector::parse(selector).map_err(|error| {
                        invalid(
                            field,
                            format!("`{selector}` is not a CSS selector: {error}"),
                        )
                    })?;
                }
            }
        }
        ScrapeKind::Nextjs => {
            required("data_key", &config.data_key, "props.pageProps.posts")?;
            unused(
                "item_selector",
                &config.item_selector,
                "data_key names the item list",
            )?;
        }
        ScrapeKind::Remix => {
            required("context_key", &config.context_key, "routes/blog._index")?;
            unused(
                "item_selector",
                &config.item_selector,
                "context_key and data_key name the item list",
            )?;
        }
    }
    Ok(())
}

/// The key paths of a Next.js or Remix source: keys joined by dots, none empty.
fn check_key_paths(config: &ScrapeConfig) -> Result<(), ScrapeError> {
    if config.kind != ScrapeKind::Html {
        for (field, value) in [
            ("title_selector", &config.title_selector),
            ("url_selector", &config.url_selector),
            ("date_selector", &config.date_selector),
            ("summary_selector", &config.summary_selector),
            ("data_key", &config.data_key),
        ] {
            if let Some(path) = value
                && path.split('.').any(str::is_empty)
            {
                return Err(invalid(
                    field,
                    format!(
                        "`{path}` is not a key path (keys joined by dots, such as `props.pageProps.posts`)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The date format, when given: a strftime format with at least one field.
fn check_date_format(config: &ScrapeConfig) -> Result<(), ScrapeError> {
    if let Some(format) = &config.date_format {
        let broken = StrftimeItems::new(format).any(|item| matches!(item, FormatItem::Error));
        if broken {
            return Err(invalid(
                "date_format",
                format!("`{format}` is not a strftime format (such as `%B %d, %Y`)"),
            ));
        }
        if !format.contains('%') {
            return Err(invalid(
                "date_format",
                format!("`{format}` has no field such as %Y or %d"),
            ));
        }
    }
    Ok(())
}

/// The URL prefix, when given: an absolute http(s) URL within [`MAX_URL_PREFIX_LEN`] bytes.
fn url_prefix(config: &ScrapeConfig) -> Result<Option<Url>, ScrapeError> {
    match &config.url_prefix {
        None => Ok(None),
        Some(prefix) => {
            if prefix.len() > MAX_URL_PREFIX_LEN {
                return Err(invalid(
                    "url_prefix",
                    format!("it is longer than {MAX_URL_PREFIX_LEN} characters"),
                ));
            }
            let url = Url::parse(prefix).map_err(|error| {
                invalid(
                    "url_prefix",
                    format!("`{prefix}` is not an absolute URL: {error}"),
                )
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(invalid(
                    "url_prefix",
                    format!("`{prefix}` is not an http or https URL"),
                ));
            }
            Ok(Some(url))
        }
    }
}
