//! How well an extraction did on a page whose article is known: how much of the article's
//! text it kept, and how much of the page's other text (navigation, sidebars, comments,
//! footers) came with it. The tests on saved pages and `tidings-bench extract` measure with it.
//!
//! Texts are compared as bags of search tokens (`tidings_text::tokenize`: words, and
//! character bigrams for CJK, which has no spaces), so the measure does not depend on
//! whitespace, markup or case, and counts Japanese as fairly as English.

use std::collections::HashMap;

/// Tokens counted in three texts: the article as it should be, the page's whole visible
/// text, and what the extractor gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Coverage {
    /// Tokens of the article.
    pub article_tokens: usize,
    /// Of those, how many the extraction holds.
    pub article_kept: usize,
    /// Tokens of the page that are not the article's (its navigation, sidebars, footers…).
    pub other_tokens: usize,
    /// Tokens of the extraction that are not the article's: text from the rest of the page.
    pub other_kept: usize,
    /// Tokens of the extraction.
    pub extracted_tokens: usize,
}

impl Coverage {
    /// The share of the article's tokens that were kept, 0–1 (1 for an empty article).
    pub fn article_share(&self) -> f64 {
        share(self.article_kept, self.article_tokens)
    }

    /// The share of the page's other tokens that came with the article, 0–1.
    pub fn other_share(&self) -> f64 {
        share(self.other_kept, self.other_tokens)
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

fn bag(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for token in tidings_text::tokenize(text) {
        *counts.entry(token.text).or_insert(0) += 1;
    }
    counts
}

/// Tokens two bags share, each counted as often as it is in both.
fn common(a: &HashMap<String, usize>, b: &HashMap<String, usize>) -> usize {
    a.iter()
        .map(|(token, n)| (*n).min(b.get(token).copied().unwrap_or(0)))
        .sum()
}

/// Measures `extracted` against `article` (the text the page's article really has) within
/// `page` (all of the page's visible text). Plain text in, tags already removed.
pub fn coverage(extracted: &str, article: &str, page: &str) -> Coverage {
    let extracted = bag(extracted);
    let article = bag(article);
    let page = bag(page);
    let total = |bag: &HashMap<String, usize>| bag.values().sum::<usize>();
    let article_kept = common(&extracted, &article);
    let extracted_tokens = total(&extracted);
    Coverage {
        article_tokens: total(&article),
        article_kept,
        other_tokens: total(&page).saturating_sub(common(&page, &article)),
        other_kept: extracted_tokens - article_kept,
        extracted_tokens,
    }
}

/// The visible text of a whole page (scripts, styles and forms' innards left out), as
/// [`coverage`] wants it: the page decoded as [`crate::decode_page`] does and sanitized.
pub fn page_text(
    page: &[u8],
    http_charset: Option<&str>,
    sanitizer: &tidings_feed::Sanitizer,
) -> String {
    let (text, _) = crate::decode_page(page, http_charset);
    let clean = sanitizer.clean(&text, None);
    tidings_feed::text::html_to_text(&clean).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_was_kept_and_what_came_along() {
        let page = "Home News Sport The tide came in. The tide went out. Most read: cats";
        let article = "The tide came in. The tide went out.";
        let got = coverage("News. The tide came in.", article, page);
        assert_eq!(got.article_tokens, 8);
        assert_eq!(got.article_kept, 4);
        assert_eq!(got.other_tokens, 6); // home news sport most read cats
        assert_eq!(got.other_kept, 1); // news
        assert_eq!(got.extracted_tokens, 5);
        assert!((got.article_share() - 0.5).abs() < 1e-9);
        assert!((got.other_share() - 1.0 / 6.0).abs() < 1e-9);
    }

    #[test]
    fn japanese_counts_by_bigrams() {
        let got = coverage("図書館", "図書館が開く", "ニュース図書館が開く");
        assert!(
            got.article_kept > 0 && got.article_kept < got.article_tokens,
            "{got:?}"
        );
        assert_eq!(got.other_kept, 0, "{got:?}");
    }

    #[test]
    fn empty_texts_do_not_divide_by_zero() {
        let got = coverage("", "", "");
        assert_eq!(got.article_share(), 1.0);
        assert_eq!(got.other_share(), 1.0);
    }
}
