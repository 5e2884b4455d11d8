//! Text from feeds and files is stored without control characters. PostgreSQL refuses a NUL in
//! a text column (the whole write fails), and the other C0 controls are never meaningful in a
//! title or an article: removing them here, on the write path, makes every engine keep the
//! same text and no feed fail to store because of one stray byte.

use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::{NewItem, clean_item};

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
