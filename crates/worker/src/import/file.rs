//! History files: OPML (subscriptions and folders, and FreshRSS' read filters of its feeds), or a starred-items JSON in the Google
//! Reader format (Google Reader Takeout's `starred.json`, FreshRSS' and Inoreader's JSON
//! exports), told apart by their content.

use std::collections::HashMap;

use serde_json::Value;

use super::freshrss_rules::freshrss_read_rules;
use super::history::{History, HistoryFeed, greader_item};
use crate::opml::parse_opml;

/// Reads a history file. Every item of a starred-items JSON counts as starred, whatever its
/// categories say (these files are the starred list); its read marks are kept when present.
pub fn read_history_file(bytes: &[u8]) -> Result<History, String> {
    let start = bytes.iter().position(|byte| {
        !byte.is_ascii_whitespace() && *byte != 0xEF && *byte != 0xBB && *byte != 0xBF
    });
    match start.map(|index| bytes[index]) {
        Some(b'{') => starred_json(bytes),
        Some(b'<') => {
            let document = parse_opml(bytes).map_err(|error| error.to_string())?;
            let rules = document
                .feeds
                .iter()
                .flat_map(|feed| {
                    let title = feed.title.as_deref().unwrap_or(&feed.xml_url);
                    freshrss_read_rules(&feed.xml_url, title, &feed.read_filters)
                })
                .collect();
            Ok(History {
                feeds: document
                    .feeds
                    .into_iter()
                    .map(|feed| HistoryFeed {
                        url: feed.xml_url,
                        title: feed.title,
                        folder: feed.group,
                        site_url: feed.html_url,
                        // A tidings export's own settings come back with its feeds.
                        settings: feed.settings,
                        unsupported_settings: Vec::new(),
                    })
                    .collect(),
                items: Vec::new(),
                rules,
            })
        }
        _ => Err(
            "the file is neither OPML nor a starred-items JSON (Google Reader Takeout, \
                  FreshRSS or Inoreader export)"
                .to_owned(),
        ),
    }
}

fn starred_json(bytes: &[u8]) -> Result<History, String> {
    let document: Value = serde_json::from_slice(bytes)
        .map_err(|error| format!("the file is not valid JSON: {error}"))?;
    let items = document.get("items").and_then(Value::as_array).ok_or(
        "the JSON has no \"items\" list: not a Google Reader Takeout, FreshRSS or Inoreader \
         starred-items export",
    )?;
    let mut history = History::default();
    let mut seen = HashMap::new();
    for value in items {
        if let Some(mut item) = greader_item(value, &HashMap::new()) {
            item.starred = true;
            history.add_item(item, &mut seen);
        }
    }
    Ok(history)
}
