//! Plain HTML pages (Webflow and the like): items and their fields found by CSS selectors.

use scraper::{ElementRef, Html, Selector};
use tidings_feed::text::collapse_whitespace;

use crate::config::Checked;
use crate::error::ScrapeError;
use crate::fields::{MAX_ITEMS, RawDate, RawItem};

/// A selector from a checked configuration (parsed once already, so this does not fail).
fn selector(field: &'static str, text: &str) -> Result<Selector, ScrapeError> {
    Selector::parse(text).map_err(|error| ScrapeError::InvalidConfig {
        field,
        reason: format!("`{text}` is not a CSS selector: {error}"),
    })
}

/// One configured field selector and whether it matched in any item yet.
struct Field {
    name: &'static str,
    text: String,
    selector: Selector,
    matched: bool,
}

impl Field {
    fn new(name: &'static str, text: &Option<String>) -> Result<Option<Field>, ScrapeError> {
        text.as_deref()
            .map(|text| {
                Ok(Field {
                    name,
                    text: text.to_owned(),
                    selector: selector(name, text)?,
                    matched: false,
                })
            })
            .transpose()
    }

    /// The first element it matches inside `item`.
    fn first<'a>(&mut self, item: &ElementRef<'a>) -> Option<ElementRef<'a>> {
        let found = item.select(&self.selector).next();
        self.matched |= found.is_some();
        found
    }
}

/// The items of an HTML page, with the error naming the selector that matched nothing.
pub(crate) fn items(document: &Html, config: &Checked) -> Result<Vec<RawItem>, ScrapeError> {
    let item_text = config.item_selector.clone().unwrap_or_default();
    let item_selector = selector("item_selector", &item_text)?;
    let links = selector("url_selector", "a[href]")?;
    let mut title = Field::new("title_selector", &config.title)?;
    let mut url = Field::new("url_selector", &config.url)?;
    let mut date = Field::new("date_selector", &config.date)?;
    let mut summary = Field::new("summary_selector", &config.summary)?;
    let elements: Vec<ElementRef> = document.select(&item_selector).take(MAX_ITEMS).collect();
    if elements.is_empty() {
        return Err(ScrapeError::NothingMatched {
            field: "item_selector",
            selector: item_text,
            where_: " on the page".to_owned(),
        });
    }
    let mut raw = Vec::with_capacity(elements.len());
    for element in &elements {
        let link_element = match url.as_mut() {
            Some(field) => field.first(element),
            None if element.attr("href").is_some() => Some(*element),
            None => element.select(&links).next(),
        };
        let link = link_element.and_then(|found| {
            found
                .attr("href")
                .or_else(|| found.select(&links).next().and_then(|a| a.attr("href")))
                .map(str::to_owned)
        });
        let title_text = match title.as_mut() {
            Some(field) => field.first(element).map(text_of),
            None => link_element.map(text_of),
        };
        let date = date
            .as_mut()
            .and_then(|field| field.first(element))
            .and_then(|found| {
                let text = found
                    .attr("datetime")
                    .or_else(|| found.attr("content"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| text_of(found));
                (!text.trim().is_empty()).then_some(RawDate::Text(text))
            });
        let summary = summary
            .as_mut()
            .and_then(|field| field.first(element))
            .map(|found| found.inner_html())
            .filter(|html| !html.trim().is_empty());
        raw.push(RawItem {
            title: title_text,
            link,
            date,
            summary,
        });
    }
    for field in [title, url, date, summary].into_iter().flatten() {
        if !field.matched {
            return Err(ScrapeError::NothingMatched {
                field: field.name,
                selector: field.text,
                where_: format!(
                    " in any of the {} items that item_selector `{item_text}` found",
                    elements.len()
                ),
            });
        }
    }
    Ok(raw)
}

/// An element's text, whitespace collapsed.
fn text_of(element: ElementRef) -> String {
    collapse_whitespace(&element.text().collect::<String>())
}
