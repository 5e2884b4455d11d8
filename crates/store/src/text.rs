//! Text from feeds and files is stored without control characters. PostgreSQL refuses a NUL in
//! a text column (the whole write fails), and the other C0 controls are never meaningful in a
//! title or an article: removing them here, on the write path, makes every engine keep the
//! same text and no feed fail to store because of one stray byte.

use std::borrow::Cow;

use crate::items::{Enclosure, NewItem};

/// Whether a character is removed from stored feed text: the C0 controls other than tab,
/// line feed and carriage return (which articles hold), and DEL.
pub fn is_stripped_char(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}')
}

/// `text` without the characters of [`is_stripped_char`]; borrowed when it holds none.
pub fn strip_control_chars(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_stripped_char) {
        Cow::Owned(text.chars().filter(|c| !is_stripped_char(*c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

fn needs_cleaning(text: Option<&str>) -> bool {
    text.is_some_and(|t| t.chars().any(is_stripped_char))
}

fn clean(text: &Option<String>) -> Option<String> {
    text.as_deref().map(|t| strip_control_chars(t).into_owned())
}

/// An item with the control characters removed from every text field; borrowed when it holds
/// none (the usual case, which costs one scan and no copy).
pub(crate) fn clean_item(item: &NewItem) -> Cow<'_, NewItem> {
    let dirty = [
        &item.guid,
        &item.url,
        &item.title,
        &item.author,
        &item.content,
        &item.summary,
        &item.thumbnail_url,
    ]
    .into_iter()
    .any(|field| needs_cleaning(field.as_deref()))
        || item.categories.iter().any(|c| needs_cleaning(Some(c)))
        || item
            .enclosures
            .iter()
            .any(|e| needs_cleaning(Some(&e.url)) || needs_cleaning(e.mime_type.as_deref()));
    if !dirty {
        return Cow::Borrowed(item);
    }
    Cow::Owned(NewItem {
        guid: clean(&item.guid),
        url: clean(&item.url),
        title: clean(&item.title),
        author: clean(&item.author),
        content: clean(&item.content),
        summary: clean(&item.summary),
        thumbnail_url: clean(&item.thumbnail_url),
        published: item.published,
        updated: item.updated,
        enclosures: item
            .enclosures
            .iter()
            .map(|e| Enclosure {
                url: strip_control_chars(&e.url).into_owned(),
                mime_type: clean(&e.mime_type),
                length: e.length,
            })
            .collect(),
        categories: item
            .categories
            .iter()
            .map(|c| strip_control_chars(c).into_owned())
            .collect(),
        identity_key: item.identity_key.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_go_and_line_breaks_stay() {
        assert_eq!(strip_control_chars("a\u{0}b\u{1b}c\u{7f}"), "abc");
        assert_eq!(
            strip_control_chars("line\nnext\ttab\r"),
            "line\nnext\ttab\r"
        );
        assert!(matches!(strip_control_chars("clean é"), Cow::Borrowed(_)));
        let item = NewItem {
            title: Some("t\u{0}".into()),
            categories: vec!["c\u{1}".into()],
            ..NewItem::default()
        };
        let cleaned = clean_item(&item);
        assert_eq!(cleaned.title.as_deref(), Some("t"));
        assert_eq!(cleaned.categories, vec!["c".to_string()]);
        let clean = NewItem::default();
        assert!(matches!(clean_item(&clean), Cow::Borrowed(_)));
    }
}
