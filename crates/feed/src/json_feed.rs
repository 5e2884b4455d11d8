//! JSON Feed 1.0 and 1.1 into the model.
//!
//! Read through `serde_json::Value` rather than typed structs: real feeds put numbers where
//! strings belong (ids) and strings where numbers belong (sizes), and one odd field must not
//! cost the whole feed.

use serde_json::{Map, Value};
use url::Url;

use crate::date::parse_date;
use crate::error::ParseError;
use crate::model::{Enclosure, Feed, FeedVersion, ItemDraft};
use crate::text::{plain_text, text_to_html, unescape_double_escaped_html};
use crate::urls::web_url;

/// Reads a JSON document as a JSON Feed.
pub(crate) fn parse_json_feed(text: &str, feed_url: Option<&Url>) -> Result<Feed, ParseError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ParseError::NotAFeed(format!(
            "the document looks like JSON but is not valid JSON: {e}"
        ))
    })?;
    let Value::Object(object) = value else {
        return Err(ParseError::NotAFeed(
            "the JSON document is not an object".to_owned(),
        ));
    };
    let version_text = string(&object, "version").unwrap_or_default();
    // The version is what makes JSON a JSON Feed; an API answer with an "items" array is not
    // one, and reading it as an empty feed would hide the mistake.
    if !version_text.contains("jsonfeed.org/version/") {
        let found = match object.get("version") {
            None => "has no \"version\"".to_owned(),
            Some(value) => format!(
                "has \"version\": {}",
                value.to_string().chars().take(60).collect::<String>()
            ),
        };
        return Err(ParseError::NotAFeed(format!(
            "the JSON document is not a JSON Feed: it {found}, where a JSON Feed names \
             https://jsonfeed.org/version/1.1 (or /1)"
        )));
    }
    let version = if version_text.trim_end_matches('/').ends_with("/1") {
        FeedVersion::Json10
    } else {
        FeedVersion::Json11
    };
    // Relative URLs resolve against the feed's own URL, which the feed may state itself.
    let stated_feed_url = string(&object, "feed_url").and_then(|u| web_url(feed_url, &u));
    // Else against the site, so that relative links in a feed read from a file still work.
    let home_page_url = string(&object, "home_page_url").and_then(|u| web_url(feed_url, &u));
    let base = feed_url
        .cloned()
        .or_else(|| stated_feed_url.clone())
        .or_else(|| home_page_url.clone());
    let base = base.as_ref();
    let authors = people(&object);
    let items = match object.get("items") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_object)
            .map(|item| json_item(item, base, &authors))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Feed {
        version,
        title: string(&object, "title").and_then(|t| plain_text(&t)),
        site_url: home_page_url.map(String::from),
        feed_url: stated_feed_url.map(String::from),
        description: string(&object, "description").and_then(|d| plain_text(&d)),
        language: string(&object, "language"),
        icon: string(&object, "icon")
            .or_else(|| string(&object, "favicon"))
            .and_then(|u| web_url(base, &u))
            .map(String::from),
        updated: None,
        authors,
        hubs: match object.get("hubs") {
            Some(Value::Array(hubs)) => hubs
                .iter()
                .filter_map(Value::as_object)
                .filter_map(|hub| string(hub, "url"))
                .filter_map(|u| web_url(base, &u))
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        },
        items,
        warning: None,
    })
}

fn json_item(
    item: &Map<String, Value>,
    base: Option<&Url>,
    feed_authors: &[String],
) -> crate::model::Item {
    let mut draft = ItemDraft {
        guid: string(item, "id"),
        ..ItemDraft::default()
    };
    draft.url = string(item, "url")
        .and_then(|u| web_url(base, &u))
        .or_else(|| string(item, "external_url").and_then(|u| web_url(base, &u)))
        .map(String::from);
    draft.title = string(item, "title").and_then(|t| plain_text(&t));
    draft.language = string(item, "language");
    draft.summary = string(item, "summary").and_then(|s| text_to_html(&s));
    draft.content = string(item, "content_html")
        .map(|h| unescape_double_escaped_html(&h).into_owned())
        .filter(|h| !h.trim().is_empty())
        // Plain text keeps its paragraphs and line breaks.
        .or_else(|| string(item, "content_text").and_then(|t| text_to_html(&t)));
    draft.content_base = draft
        .url
        .as_deref()
        .and_then(|u| Url::parse(u).ok())
        .or_else(|| base.cloned());
    draft.published = string(item, "date_published").and_then(|d| parse_date(&d));
    draft.updated = string(item, "date_modified").and_then(|d| parse_date(&d));
    let authors = people(item);
    draft.authors = if authors.is_empty() {
        feed_authors.to_vec()
    } else {
        authors
    };
    if let Some(Value::Array(tags)) = item.get("tags") {
        for tag in tags.iter().filter_map(Value::as_str) {
            draft.add_category(tag);
        }
    }
    if let Some(Value::Array(attachments)) = item.get("attachments") {
        for attachment in attachments.iter().filter_map(Value::as_object) {
            if let Some(url) = string(attachment, "url").and_then(|u| web_url(base, &u)) {
                draft.add_enclosure(Enclosure {
                    url: url.into(),
                    mime_type: string(attachment, "mime_type"),
                    length: number(attachment, "size_in_bytes"),
                });
            }
        }
    }
    draft.thumbnail = ["image", "banner_image"]
        .iter()
        .find_map(|key| string(item, key).and_then(|u| web_url(base, &u)))
        .map(String::from);
    draft.finish()
}

/// JSON Feed 1.1 `authors` (an array), else 1.0 `author` (one object).
fn people(object: &Map<String, Value>) -> Vec<String> {
    let list: Vec<&Map<String, Value>> = match (object.get("authors"), object.get("author")) {
        (Some(Value::Array(authors)), _) => authors.iter().filter_map(Value::as_object).collect(),
        (_, Some(Value::Object(author))) => vec![author],
        _ => Vec::new(),
    };
    let mut names: Vec<String> = Vec::new();
    for person in list {
        if let Some(name) = string(person, "name")
            .or_else(|| string(person, "url"))
            .and_then(|n| plain_text(&n))
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    names
}

/// A string field; numbers are accepted as strings (numeric ids are common).
fn string(object: &Map<String, Value>, key: &str) -> Option<String> {
    match object.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A positive integer field; numeric strings are accepted.
fn number(object: &Map<String, Value>, key: &str) -> Option<u64> {
    match object.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 1.0 && *f < 1e18)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|&n| n > 0)
}
