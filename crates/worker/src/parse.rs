//! Reading a fetched body into what the store keeps: a feed parsed by `tidings-feed`, or a
//! scraped source's page read by `tidings-scrape` with its stored configuration, sanitized
//! either way and mapped to the store's items.

use tidings_feed::{ParseOptions, Sanitizer};
use tidings_scrape::{ScrapeConfig, ScrapeOptions};
use tidings_store::{FeedMetadata, NewItem};
use url::Url;

/// A parsed (or scraped), sanitized feed, ready to store.
pub(crate) struct ParsedFeed {
    pub(crate) title: Option<String>,
    pub(crate) site_url: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) format: &'static str,
    /// The language the feed declares, as written (issue 37).
    pub(crate) language: Option<String>,
    pub(crate) icon: Option<String>,
    /// The icon links of the page that was read, when it is the site's page itself (a scraped
    /// source): the favicon lookup uses them instead of fetching it again.
    pub(crate) page_icons: Option<Vec<Url>>,
    pub(crate) items: Vec<NewItem>,
    /// The WebSub hubs and `self` URL the document names (F18).
    pub(crate) advertised: tidings_feed::AdvertisedLinks,
}

impl ParsedFeed {
    /// What the feed says about itself, as the store keeps it.
    pub(crate) fn metadata(&self) -> FeedMetadata<'_> {
        FeedMetadata {
            title: self.title.as_deref(),
            site_url: self.site_url.as_deref(),
            description: self.description.as_deref(),
            format: Some(self.format),
            language: self.language.as_deref(),
        }
    }
}

/// Parses, sanitizes and maps to the store's items. Every item is kept whatever its date: a
/// quiet feed's old items are its newest (retention's deletions are kept deleted by the
/// store's tombstones, not by dates).
pub(crate) fn parse_and_sanitize(
    body: &[u8],
    options: &ParseOptions,
    sanitizer: &Sanitizer,
) -> Result<ParsedFeed, String> {
    let mut feed = tidings_feed::parse(body, options).map_err(|e| e.to_string())?;
    if let Some(warning) = &feed.warning {
        tracing::debug!(url = ?options.feed_url.as_ref().map(|url| tidings_fetch::redact_url(url.as_str())), warning, "damaged feed read partly");
    }
    feed.sanitize_html(sanitizer);
    let items = new_items(&feed.items);
    Ok(ParsedFeed {
        title: feed.title.clone(),
        site_url: feed.site_url.clone(),
        description: feed.description.clone(),
        format: match feed.format() {
            tidings_feed::FeedFormat::Rss => "rss",
            tidings_feed::FeedFormat::Atom => "atom",
            tidings_feed::FeedFormat::Json => "json",
        },
        language: feed.language.clone(),
        icon: feed.icon.clone(),
        page_icons: None,
        items,
        advertised: tidings_feed::AdvertisedLinks::of_feed(&feed),
    })
}

/// The store's items for sanitized model items (a feed's or a scraped page's).
pub(crate) fn new_items(items: &[tidings_feed::Item]) -> Vec<NewItem> {
    items
        .iter()
        .map(|item| NewItem {
            guid: item.guid.clone(),
            url: item.url.clone(),
            title: item.title.clone(),
            author: item.author(),
            content: item.content.clone(),
            summary: item.summary.clone(),
            published: item.published.map(|at| at.timestamp()),
            updated: item.updated.map(|at| at.timestamp()),
            enclosures: item
                .enclosures
                .iter()
                .map(|enclosure| tidings_store::Enclosure {
                    url: enclosure.url.clone(),
                    mime_type: enclosure.mime_type.clone(),
                    length: enclosure.length.and_then(|l| i64::try_from(l).ok()),
                })
                .collect(),
            categories: item.categories.clone(),
            thumbnail_url: item.thumbnail.clone(),
            identity_key: Some(item.identity().key.clone()),
            language: item.language.clone(),
        })
        .collect()
}

/// Reads a stored configuration.
pub fn parse_config_json(text: &str) -> Result<ScrapeConfig, String> {
    serde_json::from_str(text)
        .map_err(|error| format!("the scraped source's configuration is unreadable: {error}"))
}

/// The fetch round's reading of a scraped source's page: scrape with the stored
/// configuration, sanitize, map to the store's items, as a feed's are.
pub(crate) fn scrape_and_sanitize(
    body: &[u8],
    page_url: &Url,
    charset: Option<String>,
    config_text: &str,
    sanitizer: &Sanitizer,
) -> Result<ParsedFeed, String> {
    let config = parse_config_json(config_text)?;
    let options = ScrapeOptions {
        page_url: Some(page_url.clone()),
        http_charset: charset,
        ..ScrapeOptions::default()
    };
    let mut page = tidings_scrape::scrape(body, &options, &config)
        .map_err(|error| format!("scraping the page failed: {error}"))?;
    tidings_feed::sanitize_items(&mut page.items, sanitizer);
    // The page is the source's site: its icon links are read here, so that the favicon
    // lookup does not fetch the page a second time.
    let text = tidings_feed::encoding::decode_document(body, options.http_charset.as_deref()).text;
    Ok(ParsedFeed {
        title: page.title,
        site_url: Some(page_url.to_string()),
        description: None,
        format: config.kind.as_str(),
        language: None,
        icon: None,
        page_icons: Some(crate::favicon::icon_links(&text, page_url)),
        items: new_items(&page.items),
        // A page may advertise a WebSub hub in its <link> elements (websub.rocks 101).
        advertised: tidings_feed::AdvertisedLinks::of_html(body, page_url),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_items_carry_the_parsers_identity() {
        // Items with neither guid nor link, whose summaries the sanitizer changes.
        let rss = "<rss version=\"2.0\"><channel><title>q</title>\
            <item><title>A</title><description>&lt;p&gt;x &lt;script&gt;y&lt;/script&gt;&lt;img src=\"http://h.example/i.png\"&gt;&lt;/p&gt;</description></item>\
            <item><description>only &lt;b&gt;text&lt;/b&gt;</description></item>\
            <item><guid>g</guid><title>C</title></item></channel></rss>";
        let options = ParseOptions::default();
        let parsed =
            parse_and_sanitize(rss.as_bytes(), &options, &Sanitizer::default()).expect("parses");
        let feed = tidings_feed::parse(rss.as_bytes(), &options).expect("parses");
        let keys: Vec<Option<&str>> = parsed
            .items
            .iter()
            .map(|i| i.identity_key.as_deref())
            .collect();
        let expected: Vec<Option<&str>> = feed
            .items
            .iter()
            .map(|i| Some(i.identity().key.as_str()))
            .collect();
        assert_eq!(keys, expected);
        assert_eq!(keys.len(), 3);
    }
}
