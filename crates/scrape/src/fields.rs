//! What every kind of page shares: the raw fields of an item, and turning them into the feed
//! model's items (links resolved, dates read, one item per identity).

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use tidings_feed::text::{collapse_whitespace, plain_text, text_to_html};
use tidings_feed::{Item, ItemDraft};
use url::Url;

use crate::config::Checked;
use crate::error::ScrapeError;

/// The most items taken from one page; a listing page has far fewer, and the bound keeps a
/// misconfigured selector (`div`) from storing thousands of items.
pub const MAX_ITEMS: usize = 500;

/// How far into a page its `<meta charset>` is looked for (HTML says within 1024 bytes).
const CHARSET_WINDOW: usize = 1024;

/// An item's fields as found on the page, before they are read.
#[derive(Debug, Default)]
pub(crate) struct RawItem {
    pub title: Option<String>,
    pub link: Option<String>,
    pub date: Option<RawDate>,
    /// HTML.
    pub summary: Option<String>,
}

/// A date as the page gives it.
#[derive(Debug)]
pub(crate) enum RawDate {
    Text(String),
    /// Unix seconds, or milliseconds when larger than any date in seconds.
    Number(f64),
}

/// The charset a page names in its first bytes (`<meta charset="…">` or the `http-equiv`
/// form), for pages served without one in their `Content-Type`.
pub(crate) fn meta_charset(bytes: &[u8]) -> Option<String> {
    let head = &bytes[..bytes.len().min(CHARSET_WINDOW)];
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'', ' ']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_owned())
}

/// The page's `<title>` as plain text.
pub(crate) fn page_title(document: &scraper::Html) -> Option<String> {
    let selector = scraper::Selector::parse("title").ok()?;
    let element = document.select(&selector).next()?;
    let text = collapse_whitespace(&element.text().collect::<String>());
    (!text.is_empty()).then_some(text)
}

/// Turns a title found as text into the plain text the model holds.
pub(crate) fn title_text(raw: &str) -> Option<String> {
    plain_text(raw)
}

/// Turns a summary found in JSON into HTML: markup is kept (the sanitizer cleans it), plain
/// text keeps its paragraphs and is escaped.
pub(crate) fn json_summary_html(raw: &str) -> Option<String> {
    // A tag starts with `<` and a letter, `/` or `!`; "a < b" is text.
    let looks_like_markup = raw.contains('>')
        && raw.split('<').skip(1).any(|rest| {
            rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/' || c == '!')
        });
    if looks_like_markup {
        let trimmed = raw.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_owned())
    } else {
        text_to_html(raw)
    }
}

/// Builds the items: links resolved (an item keeps no link that is not http(s)), dates read,
/// items without a title and a link dropped, each identity once.
pub(crate) fn finish(
    raw: Vec<RawItem>,
    config: &Checked,
    page_url: Option<&Url>,
) -> Result<Vec<Item>, ScrapeError> {
    let found = raw.len();
    let mut dates_found = None;
    let mut dates_read = 0usize;
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    for raw_item in raw {
        let url = raw_item
            .link
            .as_deref()
            .and_then(|link| resolve_link(link, page_url, config.url_prefix.as_ref()));
        let title = raw_item.title.as_deref().and_then(title_text);
        if url.is_none() && title.is_none() {
            continue;
        }
        let published = match &raw_item.date {
            None => None,
            Some(date) => {
                if dates_found.is_none() {
                    dates_found = Some(match date {
                        RawDate::Text(text) => text.clone(),
                        RawDate::Number(number) => number.to_string(),
                    });
                }
                let read = read_date(date, config.date_format.as_deref());
                dates_read += usize::from(read.is_some());
                read
            }
        };
        let item = ItemDraft {
            url,
            title,
            published,
            summary: raw_item.summary,
            content_base: page_url.cloned(),
            ..ItemDraft::default()
        }
        .finish();
        if seen.insert(item.identity().key.clone()) {
            items.push(item);
        }
    }
    if let Some(example) = dates_found
        && dates_read == 0
    {
        return Err(ScrapeError::UnreadableDates {
            example,
            how: match &config.date_format {
                Some(format) => format!("with date_format `{format}`"),
                None => "as a date (set date_format, e.g. `%B %d, %Y`)".to_owned(),
            },
        });
    }
    if items.is_empty() {
        return Err(ScrapeError::NoUsableItems(format!(
            "{found} items were found, but none has a title or an http(s) link: check \
             title_selector and url_selector"
        )));
    }
    Ok(items)
}

/// An item's link as an absolute http(s) URL: relative links go after `prefix` when one is
/// configured, else are resolved against the page's URL.
pub(crate) fn resolve_link(
    raw: &str,
    page_url: Option<&Url>,
    prefix: Option<&Url>,
) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.starts_with('#') {
        return None;
    }
    let url = match Url::parse(raw) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => match prefix {
            // A scheme-relative link names its host: the page's scheme completes it.
            Some(_) if raw.starts_with("//") => page_url?.join(raw).ok()?,
            Some(prefix) => {
                let prefix = prefix.as_str();
                let joined = if prefix.ends_with('/') && raw.starts_with('/') {
                    format!("{prefix}{}", &raw[1..])
                } else {
                    format!("{prefix}{raw}")
                };
                Url::parse(&joined).ok()?
            }
            None => page_url?.join(raw).ok()?,
        },
        Err(_) => return None,
    };
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

/// Reads a date with the configured `strftime` format (with a zone, else as UTC, else a
/// date alone at midnight UTC), or leniently like feed dates when there is none.
pub(crate) fn read_date(date: &RawDate, format: Option<&str>) -> Option<DateTime<Utc>> {
    match date {
        RawDate::Number(number) => {
            if !number.is_finite() {
                return None;
            }
            // Seconds until the year 5138; larger numbers are milliseconds.
            let seconds = if number.abs() >= 1e11 {
                number / 1000.0
            } else {
                *number
            };
            DateTime::from_timestamp(seconds as i64, 0)
        }
        RawDate::Text(text) => {
            let text = collapse_whitespace(text);
            match format {
                None => tidings_feed::parse_date(&text),
                Some(format) => DateTime::parse_from_str(&text, format)
                    .map(|at| at.with_timezone(&Utc))
                    .ok()
                    .or_else(|| {
                        NaiveDateTime::parse_from_str(&text, format)
                            .ok()
                            .map(|at| at.and_utc())
                    })
                    .or_else(|| {
                        NaiveDate::parse_from_str(&text, format)
                            .ok()
                            .and_then(|day| day.and_hms_opt(0, 0, 0))
                            .map(|at| at.and_utc())
                    }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_against_the_page_or_after_the_prefix() {
        let page = Url::parse("https://example.com/blog/").unwrap();
        let prefix = Url::parse("https://example.com/posts/").unwrap();
        assert_eq!(
            resolve_link("/a", Some(&page), None).as_deref(),
            Some("https://example.com/a")
        );
        assert_eq!(
            resolve_link("b", Some(&page), None).as_deref(),
            Some("https://example.com/blog/b")
        );
        assert_eq!(
            resolve_link("my-post", Some(&page), Some(&prefix)).as_deref(),
            Some("https://example.com/posts/my-post")
        );
        assert_eq!(
            resolve_link("/my-post", Some(&page), Some(&prefix)).as_deref(),
            Some("https://example.com/posts/my-post")
        );
        assert_eq!(
            resolve_link("//cdn.example.net/x", Some(&page), Some(&prefix)).as_deref(),
            Some("https://cdn.example.net/x")
        );
        assert_eq!(resolve_link("javascript:alert(1)", Some(&page), None), None);
        assert_eq!(resolve_link("#top", Some(&page), None), None);
        assert_eq!(resolve_link("/a", None, None), None);
    }

    #[test]
    fn dates_read_with_a_format_or_leniently() {
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert_eq!(
            read_date(&RawDate::Text("March 5, 2024".into()), Some("%B %d, %Y")),
            Some(at("2024-03-05T00:00:00Z"))
        );
        assert_eq!(
            read_date(
                &RawDate::Text("05.03.2024 14:30".into()),
                Some("%d.%m.%Y %H:%M")
            ),
            Some(at("2024-03-05T14:30:00Z"))
        );
        assert_eq!(
            read_date(&RawDate::Text("2024-03-05T10:00:00+09:00".into()), None),
            Some(at("2024-03-05T01:00:00Z"))
        );
        assert_eq!(
            read_date(&RawDate::Number(1_709_596_800_000.0), None),
            Some(at("2024-03-05T00:00:00Z"))
        );
        assert_eq!(
            read_date(&RawDate::Number(1_709_596_800.0), None),
            Some(at("2024-03-05T00:00:00Z"))
        );
        assert_eq!(read_date(&RawDate::Text("soon".into()), Some("%Y")), None);
        assert_eq!(read_date(&RawDate::Number(f64::NAN), None), None);
    }

    #[test]
    fn the_meta_charset_is_found() {
        assert_eq!(
            meta_charset(b"<html><head><meta charset=\"Shift_JIS\">").as_deref(),
            Some("shift_jis")
        );
        assert_eq!(
            meta_charset(
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=euc-jp\">"
            )
            .as_deref(),
            Some("euc-jp")
        );
        assert_eq!(meta_charset(b"<html><head><title>x</title>"), None);
    }
}
