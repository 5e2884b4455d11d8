//! A reader's history as every source is read into it, and the Google Reader item format that
//! the API, Google Takeout, FreshRSS and Inoreader exports share.

use std::collections::HashMap;

use serde_json::Value;

use super::rules::HistoryRule;
use crate::opml::OpmlSettings;

/// A subscription of the other reader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFeed {
    /// The feed's URL.
    pub url: String,
    /// The title the user saw.
    pub title: Option<String>,
    /// The folder it was in.
    pub folder: Option<String>,
    /// The site it belongs to.
    pub site_url: Option<String>,
    /// The settings tidings has an equivalent for (the Miniflux API's crawler is full text
    /// for every item); given to the subscription when the import adds it.
    pub settings: OpmlSettings,
    /// The names of the feed's settings that tidings has no equivalent for (a user agent,
    /// scraper or rewrite rules, a cookie), reported and not imported. Names only: some of
    /// their values are secrets.
    pub unsupported_settings: Vec<String>,
}

/// The names other readers give the folder a feed is in when the user chose none. FreshRSS
/// names its default category in the user's language (`gen.short.default_category` of its
/// `app/i18n/*/gen.php`; the English one is also what its database is created with); Miniflux
/// creates "All" with every user, in English whatever the language
/// (`internal/storage/user.go`). Such a feed goes to tidings' default group, not to a group
/// of that name.
const DEFAULT_FOLDERS: [&str; 21] = [
    "Uncategorized",
    "All",
    // FreshRSS, by language.
    "Sem categoria",
    "Brak kategorii",
    "未分類",
    "Unkategorisiert",
    "دسته بندی نشده",
    "분류 없음",
    "Sin categorizar",
    "Nezařazeno",
    "Без категории",
    "Sans catégorie",
    "Kategória nélküli",
    "Neklasificēts",
    "Bez kategórie",
    "Senza categoria",
    "Pas triat",
    "ללא קטגוריה",
    "Kategorisiz",
    "Niet ingedeeld",
    "未分类",
];

/// Whether `name` is another reader's name for "no folder", in any case.
pub(crate) fn is_default_folder(name: &str) -> bool {
    let name = name.trim().to_lowercase();
    DEFAULT_FOLDERS
        .iter()
        .any(|default| default.trim().to_lowercase() == name)
}

/// An item of the other reader's history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryItem {
    /// The URL of the feed it came from, when known.
    pub feed_url: Option<String>,
    /// The feed's title there.
    pub feed_title: Option<String>,
    /// The item's guid in its feed, when the source says it.
    pub guid: Option<String>,
    /// Its link.
    pub link: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its content (or summary).
    pub content: Option<String>,
    /// Its publication time (Unix seconds).
    pub published_at: Option<i64>,
    /// Whether it is starred.
    pub starred: bool,
    /// Whether it is read; `None` when the source does not say.
    pub read: Option<bool>,
    /// Its labels.
    pub labels: Vec<String>,
}

impl HistoryItem {
    /// The guid and link, to find tidings' copy of the item by.
    pub fn keys(&self) -> Vec<&str> {
        [self.guid.as_deref(), self.link.as_deref()]
            .into_iter()
            .flatten()
            .collect()
    }

    /// The item as a report names it.
    pub fn describe(&self) -> String {
        match (&self.title, &self.link) {
            (Some(title), _) => format!("{title:?}"),
            (None, Some(link)) => link.clone(),
            (None, None) => "an item without title or link".to_owned(),
        }
    }
}

/// Everything read from the other reader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Its subscriptions.
    pub feeds: Vec<HistoryFeed>,
    /// Its starred items and the items whose read state it knows.
    pub items: Vec<HistoryItem>,
    /// Its filters (Miniflux's block and keep rules, FreshRSS' filter actions), as tidings
    /// rules or with why they do not map.
    pub rules: Vec<HistoryRule>,
}

impl History {
    /// Adds `item`, or merges it into the same item read before (the starred stream and the
    /// reading list both list a starred item).
    pub(crate) fn add_item(&mut self, item: HistoryItem, seen: &mut HashMap<String, usize>) {
        let key = format!(
            "{}\n{}",
            item.feed_url.as_deref().unwrap_or_default(),
            item.keys().join("\n")
        );
        match seen.get(&key) {
            Some(&index) => {
                let earlier = &mut self.items[index];
                earlier.starred |= item.starred;
                earlier.read = earlier.read.or(item.read);
                for label in item.labels {
                    if !earlier.labels.contains(&label) {
                        earlier.labels.push(label);
                    }
                }
            }
            None => {
                seen.insert(key, self.items.len());
                self.items.push(item);
            }
        }
    }
}

/// The state name of a read item in Google Reader categories.
const READ: &str = "/state/com.google/read";
/// The state name of a starred item.
const STARRED: &str = "/state/com.google/starred";

/// Reads one item of a Google Reader stream (`items[]` of `stream/contents`, of Takeout's
/// `starred.json`, of FreshRSS' and Inoreader's JSON exports). `feed_urls` maps stream ids
/// (`feed/<id>`) to feed URLs for servers whose stream ids are not `feed/<url>`. Items
/// without a link or title are kept; ones that are not objects are `None`.
pub(crate) fn greader_item(
    value: &Value,
    feed_urls: &HashMap<String, String>,
) -> Option<HistoryItem> {
    let object = value.as_object()?;
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let origin = object.get("origin");
    let stream = origin.and_then(|origin| text(origin.get("streamId")));
    let feed_url = stream.as_deref().and_then(|stream| {
        feed_urls.get(stream).cloned().or_else(|| {
            stream
                .strip_prefix("feed/")
                .filter(|url| url.starts_with("http://") || url.starts_with("https://"))
                .map(str::to_owned)
        })
    });
    let link = ["canonical", "alternate"].iter().find_map(|key| {
        object
            .get(*key)
            .and_then(Value::as_array)
            .and_then(|links| links.first())
            .and_then(|link| text(link.get("href")))
    });
    let content = ["content", "summary"]
        .iter()
        .find_map(|key| object.get(*key).and_then(|body| text(body.get("content"))));
    let categories: Vec<&str> = object
        .get("categories")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let labels = categories
        .iter()
        .filter_map(|category| category.split_once("/label/").map(|(_, name)| name))
        .filter(|name| !name.trim().is_empty())
        .map(str::to_owned)
        .collect();
    Some(HistoryItem {
        feed_url,
        feed_title: origin.and_then(|origin| text(origin.get("title"))),
        guid: None,
        link,
        title: text(object.get("title")),
        content,
        published_at: object.get("published").and_then(Value::as_i64),
        starred: categories
            .iter()
            .any(|category| category.ends_with(STARRED)),
        read: categories
            .iter()
            .any(|category| category.ends_with(READ))
            .then_some(true),
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_localized_default_category_is_no_folder() {
        // FreshRSS in French, German, Russian, Japanese and Persian (with its stray space).
        for name in [
            "Sans catégorie",
            "unkategorisiert",
            "БЕЗ КАТЕГОРИИ",
            "未分類",
            " دسته بندی نشده",
            "Uncategorized",
            "All",
        ] {
            assert!(is_default_folder(name), "{name}");
        }
        for name in ["News", "Catégorie", "Allgemein"] {
            assert!(!is_default_folder(name), "{name}");
        }
    }
}
