//! Tag names: one spelling for every way of typing a tag.

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;

/// The longest tag name, in characters.
pub const MAX_TAG_CHARS: usize = 50;

/// A tag's name as it is stored and looked up: NFKC, fully case-folded (`ß` = `ss`, `Rust` =
/// `rust`), control characters dropped, runs of white space made one space, trimmed, and cut
/// to [`MAX_TAG_CHARS`] characters. `None` when nothing is left.
pub fn normalize_tag(name: &str) -> Option<String> {
    let folded: String = name.nfkc().default_case_fold().nfkc().collect();
    let mut out = String::with_capacity(folded.len());
    let mut chars = 0;
    for word in folded
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
    {
        if chars > 0 {
            if chars + 1 >= MAX_TAG_CHARS {
                break;
            }
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars == MAX_TAG_CHARS {
                break;
            }
            out.push(c);
            chars += 1;
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_width_case_and_space() {
        assert_eq!(
            normalize_tag("  Rust  Lang\t").as_deref(),
            Some("rust lang")
        );
        assert_eq!(normalize_tag("ＲＵＳＴ").as_deref(), Some("rust"));
        assert_eq!(normalize_tag("Straße").as_deref(), Some("strasse"));
        assert_eq!(normalize_tag("ｶﾀｶﾅ").as_deref(), Some("カタカナ"));
        assert_eq!(normalize_tag("a\u{0}b").as_deref(), Some("a b"));
        assert_eq!(normalize_tag(" \t\n"), None);
        assert_eq!(normalize_tag(""), None);
    }

    #[test]
    fn names_are_cut_to_the_limit() {
        let long = "x".repeat(80);
        assert_eq!(normalize_tag(&long).unwrap().chars().count(), MAX_TAG_CHARS);
        let words = "word ".repeat(30);
        let cut = normalize_tag(&words).unwrap();
        assert!(cut.chars().count() <= MAX_TAG_CHARS);
        assert!(!cut.ends_with(' '));
        let kanji = "漢".repeat(60);
        assert_eq!(
            normalize_tag(&kanji).unwrap().chars().count(),
            MAX_TAG_CHARS
        );
    }
}
