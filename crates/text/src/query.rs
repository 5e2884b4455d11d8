//! The search language: words (all must match), `"quoted phrases"`, and `-excluded` words or
//! phrases, tokenized exactly as indexed text is.

use crate::tokenize::{TokenKind, tokenize};

/// The most words and phrases one query may have.
pub const MAX_TERMS: usize = 10;
/// The longest word or phrase, in characters.
pub const MAX_TERM_CHARS: usize = 100;
/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 400;

/// Why a query was refused. The messages say what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The query is longer than [`MAX_QUERY_CHARS`].
    TooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// More than [`MAX_TERMS`] words and phrases.
    TooManyTerms {
        /// How many there were.
        terms: usize,
    },
    /// A word or phrase longer than [`MAX_TERM_CHARS`].
    TermTooLong {
        /// The start of the term.
        term: String,
    },
    /// Nothing to look for: no word with a letter or digit outside the excluded ones.
    NothingToFind,
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::TooLong { chars } => write!(
                f,
                "the search is {chars} characters long; at most {MAX_QUERY_CHARS} are allowed"
            ),
            QueryError::TooManyTerms { terms } => write!(
                f,
                "the search has {terms} words or phrases; at most {MAX_TERMS} are allowed"
            ),
            QueryError::TermTooLong { term } => write!(
                f,
                "the word or phrase {term:?}… is longer than {MAX_TERM_CHARS} characters"
            ),
            QueryError::NothingToFind => f.write_str(
                "the search has no word to look for (only excluded words, or no letters or digits)",
            ),
        }
    }
}

impl std::error::Error for QueryError {}

/// One word or phrase of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerm {
    /// Its tokens, which must appear one after the other.
    pub tokens: Vec<String>,
    /// The last token matches as a prefix: a single CJK character, which matches every
    /// bigram it starts and the run ends indexed alone.
    pub prefix: bool,
    /// Items containing it are left out.
    pub negated: bool,
}

impl SearchTerm {
    /// Whether the term occurs in `tokens` (an index's token stream).
    fn occurs_in(&self, tokens: &[String]) -> bool {
        self.starts(tokens).next().is_some()
    }

    /// How many times the term occurs in `tokens` (an index's token stream): the positions
    /// where all its tokens follow one another.
    pub fn occurrences(&self, tokens: &[String]) -> usize {
        self.starts(tokens).count()
    }

    /// The windows of `tokens` where the term occurs.
    fn starts<'a>(&'a self, tokens: &'a [String]) -> impl Iterator<Item = &'a [String]> + 'a {
        let n = self.tokens.len().max(1);
        tokens.windows(n).filter(move |window| {
            !self.tokens.is_empty()
                && window
                    .iter()
                    .zip(&self.tokens)
                    .enumerate()
                    .all(|(k, (have, want))| {
                        if self.prefix && k + 1 == n {
                            have.starts_with(want.as_str())
                        } else {
                            have == want
                        }
                    })
        })
    }
}

/// A parsed search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The words and phrases, in the order given; at least one is not negated.
    pub terms: Vec<SearchTerm>,
}

impl SearchQuery {
    /// Parses a search: whitespace-separated words (all must match), `"quoted phrases"`, and a
    /// `-` before a word or phrase to exclude it. A word that tokenizes into several tokens
    /// (`e-mail`, `東京都`) is matched as a phrase. Words without a letter or digit are ignored.
    pub fn parse(text: &str) -> Result<SearchQuery, QueryError> {
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(QueryError::TooLong { chars });
        }
        let raw = split_terms(text);
        if raw.len() > MAX_TERMS {
            return Err(QueryError::TooManyTerms { terms: raw.len() });
        }
        let mut terms = Vec::with_capacity(raw.len());
        for (term, negated) in raw {
            if term.chars().count() > MAX_TERM_CHARS {
                return Err(QueryError::TermTooLong {
                    term: term.chars().take(20).collect(),
                });
            }
            let tokens = tokenize(term);
            if tokens.is_empty() {
                continue;
            }
            let prefix = tokens.len() == 1 && tokens[0].kind == TokenKind::Unigram;
            terms.push(SearchTerm {
                tokens: tokens.into_iter().map(|t| t.text).collect(),
                prefix,
                negated,
            });
        }
        if !terms.iter().any(|t| !t.negated) {
            return Err(QueryError::NothingToFind);
        }
        Ok(SearchQuery { terms })
    }

    /// The terms that must occur.
    pub fn required(&self) -> impl Iterator<Item = &SearchTerm> {
        self.terms.iter().filter(|t| !t.negated)
    }

    /// The terms that must not occur.
    pub fn excluded(&self) -> impl Iterator<Item = &SearchTerm> {
        self.terms.iter().filter(|t| t.negated)
    }

    /// Whether a text with this index token stream ([`crate::index_tokens`]) matches: every
    /// required term occurs and no excluded one does. The databases' indexes answer the same;
    /// this is the reference for small collections (bookmarks) and for tests.
    pub fn matches(&self, tokens: &[String]) -> bool {
        self.required().all(|t| t.occurs_in(tokens))
            && !self.excluded().any(|t| t.occurs_in(tokens))
    }

    /// Whether a token of a text is one a required term looks for (for highlighting).
    pub fn highlights(&self, token: &str) -> bool {
        self.required().any(|term| {
            term.tokens.iter().enumerate().any(|(k, want)| {
                if term.prefix && k + 1 == term.tokens.len() {
                    token.starts_with(want.as_str())
                } else {
                    token == want
                }
            })
        })
    }
}

/// The `-` that excludes the term starting `rest` (a `-` followed by something other than
/// whitespace): whether there was one, and the rest after it. Shared with the rules' query
/// language, which reads terms the same way.
pub fn strip_negation(rest: &str) -> (bool, &str) {
    let negated =
        rest.len() > 1 && rest.starts_with('-') && !rest[1..].starts_with(char::is_whitespace);
    if negated {
        (true, &rest[1..])
    } else {
        (false, rest)
    }
}

/// Splits a query into raw terms with their negation: words at whitespace, phrases between
/// double quotes (an unclosed quote runs to the end), `-` before either negates it.
fn split_terms(text: &str) -> Vec<(&str, bool)> {
    let mut terms = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let negated;
        (negated, rest) = strip_negation(rest);
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            terms.push((&quoted[..end], negated));
            rest = quoted.get(end + 1..).unwrap_or("");
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            terms.push((&rest[..end], negated));
            rest = &rest[end..];
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index_tokens;

    fn term(tokens: &[&str], prefix: bool, negated: bool) -> SearchTerm {
        SearchTerm {
            tokens: tokens.iter().map(|t| t.to_string()).collect(),
            prefix,
            negated,
        }
    }

    #[test]
    fn parses_words_phrases_and_exclusions() {
        let q = SearchQuery::parse(r#"Rust  "async runtime" -java -"big data" 東京都 東"#).unwrap();
        assert_eq!(
            q.terms,
            [
                term(&["rust"], false, false),
                term(&["async", "runtime"], false, false),
                term(&["java"], false, true),
                term(&["big", "data"], false, true),
                term(&["東京", "京都"], false, false),
                term(&["東"], true, false),
            ]
        );
    }

    #[test]
    fn odd_input() {
        assert_eq!(
            SearchQuery::parse("").unwrap_err(),
            QueryError::NothingToFind
        );
        assert_eq!(
            SearchQuery::parse("   ").unwrap_err(),
            QueryError::NothingToFind
        );
        assert_eq!(
            SearchQuery::parse("-rust").unwrap_err(),
            QueryError::NothingToFind
        );
        assert_eq!(
            SearchQuery::parse("!!! ???").unwrap_err(),
            QueryError::NothingToFind
        );
        assert_eq!(
            SearchQuery::parse("\"\"").unwrap_err(),
            QueryError::NothingToFind
        );
        // An unclosed quote runs to the end; a lone dash is not an exclusion.
        let q = SearchQuery::parse("\"open phrase").unwrap();
        assert_eq!(q.terms, [term(&["open", "phrase"], false, false)]);
        let q = SearchQuery::parse("a - b").unwrap();
        assert_eq!(q.terms.len(), 2);
        assert!(q.terms.iter().all(|t| !t.negated));
        // A dash inside a word splits it into a phrase.
        let q = SearchQuery::parse("e-mail").unwrap();
        assert_eq!(q.terms, [term(&["e", "mail"], false, false)]);
        let q = SearchQuery::parse("ＲＵＳＴ").unwrap();
        assert_eq!(q.terms, [term(&["rust"], false, false)]);
    }

    #[test]
    fn limits() {
        let ten = "a b c d e f g h i j";
        assert!(SearchQuery::parse(ten).is_ok());
        assert_eq!(
            SearchQuery::parse(&format!("{ten} k")).unwrap_err(),
            QueryError::TooManyTerms { terms: 11 }
        );
        assert!(SearchQuery::parse(&"x".repeat(100)).is_ok());
        assert!(matches!(
            SearchQuery::parse(&"x".repeat(101)).unwrap_err(),
            QueryError::TermTooLong { .. }
        ));
        assert_eq!(
            SearchQuery::parse(&"ab ".repeat(134)).unwrap_err(),
            QueryError::TooLong { chars: 402 }
        );
        let message = SearchQuery::parse(&"x".repeat(401))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("401") && message.contains("400"),
            "{message}"
        );
    }

    #[test]
    fn matching_follows_the_index() {
        let doc = index_tokens("東京タワーで Rust のカンファレンス。Grüße!");
        let hits = |q: &str| SearchQuery::parse(q).unwrap().matches(&doc);
        assert!(hits("東京"));
        assert!(hits("タワー"));
        assert!(hits("ﾀﾜｰ"));
        assert!(hits("東京タワー"));
        assert!(hits("rust カンファレンス"));
        assert!(hits("RUST"));
        assert!(hits("grusse"));
        assert!(hits("GRÜSSE"));
        assert!(hits("東"));
        assert!(hits("ー"), "a run's last character is found alone");
        assert!(hits("ス"));
        assert!(!hits("京都"));
        assert!(!hits("rust -東京"));
        assert!(hits("rust -大阪"));
        assert!(!hits("\"rust 東京\""));
        assert!(!hits("python"));
        assert!(!hits("大"));
    }
}
