//! Pages that carry their data as JSON: Next.js (`__NEXT_DATA__`) and Remix
//! (`window.__remixContext`). A key path leads to the item list; key paths inside each item
//! give its fields.

use scraper::{Html, Selector};
use serde_json::Value;

use crate::config::Checked;
use crate::error::ScrapeError;
use crate::fields::{MAX_ITEMS, RawDate, RawItem, json_summary_html};

/// The keys tried, in order, for a field whose key path is not configured.
const DEFAULT_TITLE: &[&str] = &["title"];
const DEFAULT_URL: &[&str] = &["url", "link", "href", "slug"];
const DEFAULT_DATE: &[&str] = &["date", "publishedAt", "published_at", "createdAt"];
const DEFAULT_SUMMARY: &[&str] = &["excerpt", "description", "summary"];

/// How many keys an error lists when it shows what is there instead.
const KEYS_SHOWN: usize = 12;

/// The items of a Next.js page: `data_key` from the root of `__NEXT_DATA__`.
pub(crate) fn next_items(document: &Html, config: &Checked) -> Result<Vec<RawItem>, ScrapeError> {
    let script = Selector::parse("script#__NEXT_DATA__")
        .ok()
        .and_then(|selector| document.select(&selector).next())
        .ok_or_else(|| {
            ScrapeError::MissingData(
                "the page has no <script id=\"__NEXT_DATA__\">: it is not a Next.js page of the \
                 pages router (App Router pages do not carry it); try the html kind with CSS \
                 selectors"
                    .to_owned(),
            )
        })?;
    let text: String = script.text().collect();
    let data: Value = serde_json::from_str(&text).map_err(|error| {
        ScrapeError::MissingData(format!("__NEXT_DATA__ is not valid JSON: {error}"))
    })?;
    let path = config.data_key.clone().unwrap_or_default();
    let list = follow(&data, &path, "data_key", "in __NEXT_DATA__")?;
    items_of(list, "data_key", &path, config, "in __NEXT_DATA__")
}

/// The items of a Remix page: the loader data of the route `context_key`, then `data_key`
/// inside it when given.
pub(crate) fn remix_items(document: &Html, config: &Checked) -> Result<Vec<RawItem>, ScrapeError> {
    let context = remix_context(document)?;
    let route = config.context_key.clone().unwrap_or_default();
    let loader_data = context
        .get("state")
        .and_then(|state| state.get("loaderData"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ScrapeError::MissingData(
                "window.__remixContext has no state.loaderData (a Remix page streamed with \
                 single fetch keeps its data elsewhere); try the html kind with CSS selectors"
                    .to_owned(),
            )
        })?;
    let Some(route_data) = loader_data.get(&route) else {
        return Err(ScrapeError::NothingMatched {
            field: "context_key",
            selector: route,
            where_: format!(
                " in __remixContext.state.loaderData (its routes: {})",
                key_list(loader_data.keys())
            ),
        });
    };
    let where_ = format!("in the loader data of route `{route}`");
    match config.data_key.as_deref() {
        None => items_of(route_data, "context_key", &route, config, &where_),
        Some(path) => {
            let list = follow(route_data, path, "data_key", &where_)?;
            items_of(list, "data_key", path, config, &where_)
        }
    }
}

/// The object assigned to `window.__remixContext` in one of the page's scripts.
fn remix_context(document: &Html) -> Result<Value, ScrapeError> {
    const MARKER: &str = "__remixContext";
    let missing = || {
        ScrapeError::MissingData(
            "the page has no window.__remixContext: it is not a server-rendered Remix page; \
             try the html kind with CSS selectors"
                .to_owned(),
        )
    };
    let scripts = Selector::parse("script").map_err(|_| missing())?;
    for script in document.select(&scripts) {
        let text: String = script.text().collect();
        let mut from = 0;
        while let Some(at) = text[from..].find(MARKER) {
            let after = from + at + MARKER.len();
            from = after;
            let rest = text[after..].trim_start();
            // The assignment, not a later use such as `__remixContext.p = …`.
            let Some(value) = rest.strip_prefix('=').filter(|r| !r.starts_with('=')) else {
                continue;
            };
            let mut stream = serde_json::Deserializer::from_str(value).into_iter::<Value>();
            return match stream.next() {
                Some(Ok(context)) => Ok(context),
                Some(Err(error)) => Err(ScrapeError::MissingData(format!(
                    "window.__remixContext is not JSON: {error}"
                ))),
                None => Err(missing()),
            };
        }
    }
    Err(missing())
}

/// Follows a key path (keys joined by dots; a number indexes a list). The error names the
/// first key that is missing and what is there instead.
fn follow<'a>(
    root: &'a Value,
    path: &str,
    field: &'static str,
    where_: &str,
) -> Result<&'a Value, ScrapeError> {
    let mut value = root;
    let mut walked = Vec::new();
    for key in path.split('.') {
        let next = match value {
            Value::Object(map) => map.get(key),
            Value::Array(list) => key.parse::<usize>().ok().and_then(|i| list.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            let at = if walked.is_empty() {
                "the top level".to_owned()
            } else {
                format!("`{}`", walked.join("."))
            };
            return Err(ScrapeError::NothingMatched {
                field,
                selector: path.to_owned(),
                where_: format!(" {where_}: {at} has no `{key}`; it is {}", describe(value)),
            });
        };
        walked.push(key);
        value = next;
    }
    Ok(value)
}

/// Reads the item list at `list` (reached by `field` `path`).
fn items_of(
    list: &Value,
    field: &'static str,
    path: &str,
    config: &Checked,
    where_: &str,
) -> Result<Vec<RawItem>, ScrapeError> {
    let Value::Array(entries) = list else {
        return Err(ScrapeError::NotAList {
            field,
            path: path.to_owned(),
            found: describe(list),
        });
    };
    let objects: Vec<&Value> = entries
        .iter()
        .filter(|entry| entry.is_object())
        .take(MAX_ITEMS)
        .collect();
    if objects.is_empty() {
        return Err(ScrapeError::NothingMatched {
            field,
            selector: path.to_owned(),
            where_: format!(
                " {where_}: it leads to {}, with no item objects",
                describe(list)
            ),
        });
    }
    let mut title = Key::new("title_selector", &config.title, DEFAULT_TITLE);
    let mut url = Key::new("url_selector", &config.url, DEFAULT_URL);
    let mut date = Key::new("date_selector", &config.date, DEFAULT_DATE);
    let mut summary = Key::new("summary_selector", &config.summary, DEFAULT_SUMMARY);
    let raw = objects
        .iter()
        .map(|object| RawItem {
            title: title.find(object).and_then(scalar_text),
            link: url.find(object).and_then(scalar_text),
            date: date.find(object).and_then(|value| match value {
                Value::Number(n) => n.as_f64().map(RawDate::Number),
                Value::String(s) if !s.trim().is_empty() => Some(RawDate::Text(s.clone())),
                _ => None,
            }),
            summary: summary
                .find(object)
                .and_then(|value| value.as_str())
                .and_then(json_summary_html),
        })
        .collect();
    for key in [title, url, date, summary] {
        if let Some(configured) = key.configured
            && !key.matched
        {
            return Err(ScrapeError::NothingMatched {
                field: key.field,
                selector: configured,
                where_: format!(
                    " in any of the {} items {where_}; the first item has the keys {}",
                    objects.len(),
                    objects[0]
                        .as_object()
                        .map(|map| key_list(map.keys()))
                        .unwrap_or_default()
                ),
            });
        }
    }
    Ok(raw)
}

/// A field's key path inside each item: the configured one, else the first default present.
struct Key {
    field: &'static str,
    configured: Option<String>,
    defaults: &'static [&'static str],
    matched: bool,
}

impl Key {
    fn new(
        field: &'static str,
        configured: &Option<String>,
        defaults: &'static [&'static str],
    ) -> Key {
        Key {
            field,
            configured: configured.clone(),
            defaults,
            matched: false,
        }
    }

    fn find<'a>(&mut self, object: &'a Value) -> Option<&'a Value> {
        let found = match &self.configured {
            Some(path) => path_value(object, path),
            None => self
                .defaults
                .iter()
                .find_map(|key| object.get(key).filter(|v| !v.is_null())),
        };
        let found = found.filter(|value| !value.is_null());
        self.matched |= found.is_some();
        found
    }
}

/// The value at a key path, if every key is there.
fn path_value<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(root, |value, key| match value {
        Value::Object(map) => map.get(key),
        Value::Array(list) => key.parse::<usize>().ok().and_then(|i| list.get(i)),
        _ => None,
    })
}

/// A string, or a number written out (a numeric slug or id).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// What a JSON value is, for errors: "an object with the keys a, b", "a list of 3", "a string".
fn describe(value: &Value) -> String {
    match value {
        Value::Object(map) if map.is_empty() => "an empty object".to_owned(),
        Value::Object(map) => format!("an object with the keys {}", key_list(map.keys())),
        Value::Array(list) => format!("a list of {}", list.len()),
        Value::String(_) => "a string".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Null => "null".to_owned(),
    }
}

/// Up to [`KEYS_SHOWN`] keys, sorted (whatever order the JSON map keeps), each in backquotes.
fn key_list<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let mut keys: Vec<&String> = keys.collect();
    keys.sort();
    let total = keys.len();
    let mut shown: Vec<String> = keys
        .into_iter()
        .take(KEYS_SHOWN)
        .map(|k| format!("`{k}`"))
        .collect();
    if total > KEYS_SHOWN {
        shown.push(format!("and {} more", total - KEYS_SHOWN));
    }
    shown.join(", ")
}
