//! One spelling per search: the canonical text of a parsed query, so that searches which find
//! the same items (`Rust`, `rust `, `ＲＵＳＴ`) can be counted together (usage counts, F45).

use crate::query::{SearchQuery, SearchTerm};
use crate::tokenize::is_cjk;

impl SearchQuery {
    /// The query written back in the search language from its tokens: normalized words
    /// (case, width and accents folded) separated by single spaces, a term of several tokens
    /// in double quotes, `-` before excluded terms, CJK bigrams joined back into their run
    /// (`東京 京都` is written `東京都`), and a term repeated with the same sign left out.
    /// Parsing the result gives the same query, so two searches have the same canonical text
    /// exactly when they look for the same tokens in the same order.
    pub fn canonical(&self) -> String {
        let mut written: Vec<String> = Vec::with_capacity(self.terms.len());
        for (index, term) in self.terms.iter().enumerate() {
            if self.terms[..index].contains(term) {
                continue;
            }
            written.push(write_term(term));
        }
        written.join(" ")
    }
}

/// One term in the search language.
fn write_term(term: &SearchTerm) -> String {
    let mut text = String::new();
    let mut previous: Option<&str> = None;
    for token in &term.tokens {
        match previous {
            Some(before) if continues_run(before, token) => {
                // The next bigram of the same run adds its second character only.
                text.extend(token.chars().last());
            }
            Some(_) => {
                text.push(' ');
                text.push_str(token);
            }
            None => text.push_str(token),
        }
        previous = Some(token);
    }
    let sign = if term.negated { "-" } else { "" };
    if text.contains(' ') {
        format!("{sign}\"{text}\"")
    } else {
        format!("{sign}{text}")
    }
}

/// Whether `token` is the bigram that follows the bigram `before` in one CJK run: both are two
/// CJK characters and they overlap by one.
fn continues_run(before: &str, token: &str) -> bool {
    let bigram = |text: &str| {
        let mut chars = text.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some(first), Some(second), None) if is_cjk(first) && is_cjk(second) => {
                Some((first, second))
            }
            _ => None,
        }
    };
    matches!((bigram(before), bigram(token)), (Some((_, last)), Some((first, _))) if last == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        SearchQuery::parse(text).unwrap().canonical()
    }

    #[test]
    fn spellings_of_one_search_have_one_canonical_text() {
        for spelling in [
            "Rust",
            "rust ",
            "  RUST",
            "ＲＵＳＴ",
            "rust rust",
            "Rust RUST",
        ] {
            assert_eq!(canonical(spelling), "rust", "{spelling:?}");
        }
        assert_eq!(canonical("Café  Müller"), "cafe muller");
        assert_eq!(canonical("東京都"), "東京都");
        assert_eq!(canonical("ｶﾀｶﾅ"), "カタカナ");
        assert_eq!(canonical("東"), "東");
    }

    #[test]
    fn phrases_and_exclusions_are_kept() {
        assert_eq!(
            canonical(r#"Rust  "Async   Runtime" -Java -"big data""#),
            r#"rust "async runtime" -java -"big data""#
        );
        // A word of several tokens is a phrase; an unclosed quote runs to the end.
        assert_eq!(canonical("e-mail"), r#""e mail""#);
        assert_eq!(canonical(r#"rust "web server"#), r#"rust "web server""#);
        // The same word excluded and required are different terms.
        assert_eq!(canonical("rust -rust"), "rust -rust");
        // Mixed scripts in one phrase.
        assert_eq!(canonical("Rustで書く"), r#""rust で書く""#);
        assert_eq!(canonical(r#""東京 京""#), r#""東京 京""#);
    }

    #[test]
    fn the_canonical_text_parses_to_the_same_query() {
        for text in [
            "Rust",
            r#"Rust  "async runtime" -java -"big data" 東京都 東"#,
            "e-mail ｶﾀｶﾅ",
            r#""東京 京都""#,
            r#""東京 京""#,
            "Rustで書く 東京京都",
            "straße café -ñandú",
            r#"-"a b" c"#,
            "한국어 검색",
        ] {
            let query = SearchQuery::parse(text).unwrap();
            let again = SearchQuery::parse(&query.canonical()).unwrap();
            assert_eq!(again, query, "{text:?} → {:?}", query.canonical());
            assert_eq!(again.canonical(), query.canonical(), "{text:?}");
        }
    }
}
