//! One feed builder for the tests: an RSS 2.0 channel ([`Rss`]) of items ([`Item`]), and the
//! shapes the suites use most, built with it.

use chrono::{DateTime, Utc};

/// An RSS 2.0 channel being built.
#[derive(Clone, Debug, Default)]
pub struct Rss {
    title: String,
    link: Option<String>,
    description: Option<String>,
    items: Vec<Item>,
}

/// One item of an [`Rss`] channel. Text fields are XML already (escape HTML with [`escape`]).
#[derive(Clone, Debug, Default)]
pub struct Item {
    /// The title.
    pub title: String,
    /// The link, if any.
    pub link: Option<String>,
    /// The guid.
    pub guid: String,
    /// The publication time, if any.
    pub published: Option<DateTime<Utc>>,
    /// The description (escaped HTML, as feeds carry it), if any.
    pub description: Option<String>,
}

impl Rss {
    /// A channel titled `title`.
    pub fn new(title: &str) -> Rss {
        Rss {
            title: title.to_owned(),
            ..Rss::default()
        }
    }

    /// The channel's site link.
    pub fn link(mut self, link: impl Into<String>) -> Rss {
        self.link = Some(link.into());
        self
    }

    /// The channel's description.
    pub fn description(mut self, description: impl Into<String>) -> Rss {
        self.description = Some(description.into());
        self
    }

    /// Adds `item` after the others.
    pub fn item(mut self, item: Item) -> Rss {
        self.items.push(item);
        self
    }

    /// The document.
    pub fn build(&self) -> String {
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
             <title>{}</title>",
            self.title
        );
        if let Some(link) = &self.link {
            out.push_str(&format!("<link>{link}</link>"));
        }
        if let Some(description) = &self.description {
            out.push_str(&format!("<description>{description}</description>"));
        }
        for item in &self.items {
            out.push_str(&item.build());
        }
        out.push_str("</channel></rss>");
        out
    }
}

impl Item {
    fn build(&self) -> String {
        let mut out = format!("<item><title>{}</title>", self.title);
        if let Some(link) = &self.link {
            out.push_str(&format!("<link>{link}</link>"));
        }
        out.push_str(&format!("<guid>{}</guid>", self.guid));
        if let Some(published) = self.published {
            out.push_str(&format!("<pubDate>{}</pubDate>", published.to_rfc2822()));
        }
        if let Some(description) = &self.description {
            out.push_str(&format!("<description>{description}</description>"));
        }
        out.push_str("</item>");
        out
    }
}

/// `text` escaped for XML character data (so HTML can be carried in a description).
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A feed `title` of `n` items, published an hour apart up to now (newest first, as most feeds
/// list them). Its site and item links point at `site` (a local server), so that nothing a
/// worker follows from it (the site page, its favicon) leaves the machine.
pub fn rss(site: &str, title: &str, n: usize) -> String {
    let now = Utc::now().timestamp();
    let items: Vec<(String, i64)> = (0..n)
        .map(|i| (i.to_string(), now - (i as i64 + 1) * 3600))
        .collect();
    rss_dated(site, title, &items)
}

/// A feed `title` of `items` (a name, the publication time in Unix seconds), in that order:
/// item `n` is titled `{title} item {n}`, has the guid `{title}-{n}` and links to
/// `{site}/{title}/{n}`.
pub fn rss_dated(site: &str, title: &str, items: &[(String, i64)]) -> String {
    let mut feed = Rss::new(title).link(format!("{site}/")).description("d");
    for (n, published) in items {
        feed = feed.item(Item {
            title: format!("{title} item {n}"),
            link: Some(format!("{site}/{title}/{n}")),
            guid: format!("{title}-{n}"),
            published: Some(DateTime::from_timestamp(*published, 0).unwrap_or_default()),
            description: Some(escape(&format!("<p>Body {n}</p>"))),
        });
    }
    feed.build()
}

/// A feed of `items` (guid, title, description as XML) linking to `{site}/{guid}`, published
/// an hour apart, newest first.
pub fn rss_items(site: &str, items: &[(&str, &str, &str)]) -> String {
    let now = Utc::now();
    let mut feed = Rss::new("t").link(format!("{site}/"));
    for (n, (guid, title, description)) in items.iter().enumerate() {
        feed = feed.item(Item {
            title: (*title).to_owned(),
            link: Some(format!("{site}/{guid}")),
            guid: (*guid).to_owned(),
            published: Some(now - chrono::Duration::hours(n as i64 + 1)),
            description: Some((*description).to_owned()),
        });
    }
    feed.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_keep_their_order_and_fields() {
        let feed = rss_dated(
            "http://site",
            "news",
            &[("1".into(), 0), ("2".into(), 3600)],
        );
        let first = feed.find("<guid>news-1</guid>").expect("first item");
        let second = feed.find("<guid>news-2</guid>").expect("second item");
        assert!(first < second, "{feed}");
        assert!(feed.contains("<link>http://site/news/2</link>"), "{feed}");
        assert!(feed.contains("&lt;p&gt;Body 1&lt;/p&gt;"), "{feed}");
        assert!(
            feed.contains("<pubDate>Thu, 1 Jan 1970 01:00:00 +0000</pubDate>"),
            "{feed}"
        );
    }
}
