//! Which new items a channel gets: feeds, groups and keywords.
//!
//! An item matches when it passes both parts: the *source* part (the channel names no feed
//! and no group, or the item's feed is one of its feeds, or the user's subscription to it is in
//! one of its groups) and the *keyword* part (no keywords, or any one keyword appears in the
//! item's title or text). Keywords go through the search tokenizer of `tidings-text`, so they
//! match the way search does: whole words, case and width folded (`ＲＵＳＴ` is `rust`),
//! diacritics ignored, and Japanese (no spaces) by character bigrams, so `東京都` matches
//! `東京都庁の発表` but `rust` does not match `rustacean`.

use serde::{Deserialize, Serialize};
use tidings_text::{TokenKind, tokenize};

/// The most keywords a channel may have.
pub const MAX_KEYWORDS: usize = 50;
/// The longest keyword, in characters.
pub const MAX_KEYWORD_CHARS: usize = 100;
/// The most feeds, or groups, a channel may name.
pub const MAX_SOURCES: usize = 500;

/// A channel's rules, as the API takes and answers them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Feed ids (of the user's subscriptions) whose new items the channel gets.
    #[serde(default)]
    pub feed_ids: Vec<i64>,
    /// Group ids whose subscriptions' new items the channel gets.
    #[serde(default)]
    pub group_ids: Vec<i64>,
    /// Words or phrases; an item matches when any one appears in its title or text.
    #[serde(default)]
    pub keywords: Vec<String>,
}

/// Why rules were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    /// More than [`MAX_KEYWORDS`] keywords.
    #[error("a channel takes at most {MAX_KEYWORDS} keywords")]
    TooManyKeywords,
    /// A keyword longer than [`MAX_KEYWORD_CHARS`].
    #[error("keyword {0:?} is longer than {MAX_KEYWORD_CHARS} characters")]
    KeywordTooLong(String),
    /// A keyword with no letter or digit (punctuation only), which could never match.
    #[error("keyword {0:?} has no letter or digit, so it would never match")]
    EmptyKeyword(String),
    /// More than [`MAX_SOURCES`] feeds or groups.
    #[error("a channel names at most {MAX_SOURCES} feeds and {MAX_SOURCES} groups")]
    TooManySources,
}

impl Rules {
    /// The rules cleaned up (keywords trimmed, duplicates dropped, ids sorted) and checked.
    pub fn normalized(mut self) -> Result<Rules, RulesError> {
        if self.feed_ids.len() > MAX_SOURCES || self.group_ids.len() > MAX_SOURCES {
            return Err(RulesError::TooManySources);
        }
        self.feed_ids.sort_unstable();
        self.feed_ids.dedup();
        self.group_ids.sort_unstable();
        self.group_ids.dedup();
        let mut keywords: Vec<String> = Vec::with_capacity(self.keywords.len());
        for keyword in self.keywords {
            let keyword = keyword.trim().to_owned();
            if keyword.is_empty() || keywords.contains(&keyword) {
                continue;
            }
            if keyword.chars().count() > MAX_KEYWORD_CHARS {
                return Err(RulesError::KeywordTooLong(keyword));
            }
            if Keyword::new(&keyword).is_none() {
                return Err(RulesError::EmptyKeyword(keyword));
            }
            keywords.push(keyword);
        }
        if keywords.len() > MAX_KEYWORDS {
            return Err(RulesError::TooManyKeywords);
        }
        self.keywords = keywords;
        Ok(self)
    }

    /// Whether the source part passes for an item of `feed_id`, whose subscription is in
    /// `group_id`.
    pub fn source_matches(&self, feed_id: i64, group_id: i64) -> bool {
        (self.feed_ids.is_empty() && self.group_ids.is_empty())
            || self.feed_ids.contains(&feed_id)
            || self.group_ids.contains(&group_id)
    }

    /// The keywords, tokenized once for many items.
    pub fn compiled_keywords(&self) -> Vec<Keyword> {
        self.keywords
            .iter()
            .filter_map(|k| Keyword::new(k))
            .collect()
    }
}

/// A keyword as a run of search tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyword {
    tokens: Vec<String>,
    /// A single CJK character: it matches any token that holds it (as search's prefix does).
    single_character: bool,
}

impl Keyword {
    /// The keyword's tokens, or `None` when it has none.
    pub fn new(keyword: &str) -> Option<Keyword> {
        let tokens = tokenize(keyword);
        let single_character = tokens.len() == 1 && tokens[0].kind == TokenKind::Unigram;
        let tokens: Vec<String> = tokens.into_iter().map(|t| t.text).collect();
        (!tokens.is_empty()).then_some(Keyword {
            tokens,
            single_character,
        })
    }

    /// Whether the keyword's tokens appear, in order and next to each other, in `text`'s.
    pub fn found_in(&self, text_tokens: &[String]) -> bool {
        if self.single_character {
            return text_tokens
                .iter()
                .any(|t| t.contains(self.tokens[0].as_str()));
        }
        text_tokens
            .windows(self.tokens.len())
            .any(|window| window == self.tokens.as_slice())
    }
}

/// Whether an item whose title and text give `text_tokens` passes `keywords` (none = all).
pub fn keywords_match(keywords: &[Keyword], text_tokens: &[String]) -> bool {
    keywords.is_empty() || keywords.iter().any(|k| k.found_in(text_tokens))
}

/// The tokens keywords are looked for in: the title's, then the text's.
pub fn item_tokens(title: &str, text: &str) -> Vec<String> {
    let mut tokens: Vec<String> = tokenize(title).into_iter().map(|t| t.text).collect();
    // A phrase must not match across the title's end and the text's start.
    tokens.push(String::new());
    tokens.extend(tokenize(text).into_iter().map(|t| t.text));
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(keywords: &[&str], title: &str, text: &str) -> bool {
        let rules = Rules {
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
            ..Rules::default()
        };
        keywords_match(&rules.compiled_keywords(), &item_tokens(title, text))
    }

    #[test]
    fn keywords_match_whole_words_folded_like_search() {
        assert!(matches(&["rust"], "Rust 1.80 released", ""));
        assert!(matches(&["ＲＵＳＴ"], "rust news", ""));
        assert!(matches(&["cafe"], "", "Le Café de Flore"));
        assert!(!matches(&["rust"], "Rustacean meetup", ""));
        assert!(matches(&["memory safety"], "", "On memory  safety, again"));
        assert!(!matches(&["memory safety"], "", "safety of memory"));
        assert!(!matches(&["end start"], "the end", "start here"));
        assert!(matches(&["go", "rust"], "", "written in Go"));
        assert!(matches(&[], "anything", ""));
    }

    #[test]
    fn japanese_keywords_match_without_spaces() {
        assert!(matches(&["東京都"], "東京都庁が発表", ""));
        assert!(!matches(&["東京都"], "京都の紅葉", ""));
        assert!(matches(&["京都"], "京都の紅葉", ""));
        assert!(matches(
            &["障害"],
            "",
            "本日、大規模な通信障害が発生しました。"
        ));
        assert!(matches(&["雪"], "今日は雪です", ""));
    }

    #[test]
    fn rules_are_cleaned_and_checked() {
        let rules = Rules {
            feed_ids: vec![3, 1, 3],
            group_ids: vec![],
            keywords: vec![" rust ".into(), "rust".into(), "".into()],
        }
        .normalized()
        .unwrap();
        assert_eq!(rules.feed_ids, vec![1, 3]);
        assert_eq!(rules.keywords, vec!["rust"]);
        let error = Rules {
            keywords: vec!["!!!".into()],
            ..Rules::default()
        }
        .normalized()
        .unwrap_err();
        assert_eq!(error, RulesError::EmptyKeyword("!!!".into()));
        let many = Rules {
            keywords: (0..=MAX_KEYWORDS).map(|n| format!("k{n}")).collect(),
            ..Rules::default()
        };
        assert_eq!(many.normalized(), Err(RulesError::TooManyKeywords));
    }

    #[test]
    fn sources_pass_when_unnamed_or_named() {
        let all = Rules::default();
        assert!(all.source_matches(5, 9));
        let feeds = Rules {
            feed_ids: vec![5],
            group_ids: vec![2],
            ..Rules::default()
        };
        assert!(feeds.source_matches(5, 9));
        assert!(feeds.source_matches(6, 2));
        assert!(!feeds.source_matches(6, 9));
    }
}
