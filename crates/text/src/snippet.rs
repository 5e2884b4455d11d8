//! Short excerpts of a text around what a search matched, with the matches marked.

use crate::query::SearchQuery;
use crate::tokenize::tokenize;

/// A piece of a snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Plain text (not escaped).
    pub text: String,
    /// Whether it is a match to highlight.
    pub highlighted: bool,
}

/// How many characters a snippet shows before its first match.
const LEAD_CHARS: usize = 40;

/// An excerpt of about `max_chars` characters of `text` starting shortly before the first
/// token a required term of `query` looks for, with those tokens highlighted. When nothing
/// matches (the hit was in the title), the excerpt is the text's beginning. A cut end is
/// marked with `…`. Empty text gives no segments.
pub fn snippet(text: &str, query: &SearchQuery, max_chars: usize) -> Vec<Segment> {
    let tokens = tokenize(text);
    let matched: Vec<(usize, usize)> = tokens
        .iter()
        .filter(|t| query.highlights(&t.text))
        .map(|t| (t.start, t.end))
        .collect();
    let first = matched.first().map_or(0, |m| m.0);
    // Start a little before the first match (at most a quarter of the snippet), at a word
    // boundary if one is near.
    let lead = LEAD_CHARS.min(max_chars / 4).max(1);
    let mut start = text[..first]
        .char_indices()
        .rev()
        .nth(lead - 1)
        .map_or(0, |(i, _)| i);
    if start > 0
        && let Some(space) = text[start..first].find(char::is_whitespace)
    {
        start += space + 1;
    }
    let end = text[start..]
        .char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(i, _)| start + i);

    let mut segments = Vec::new();
    let mut push = |piece: &str, highlighted: bool| {
        if piece.is_empty() {
            return;
        }
        match segments.last_mut() {
            Some(Segment {
                text,
                highlighted: h,
            }) if *h == highlighted => text.push_str(piece),
            _ => segments.push(Segment {
                text: piece.to_string(),
                highlighted,
            }),
        }
    };
    if start > 0 {
        push("…", false);
    }
    let mut at = start;
    for (m_start, m_end) in matched {
        // Overlapping bigrams extend the previous highlight.
        let m_start = m_start.max(at);
        if m_end <= m_start || m_start >= end {
            continue;
        }
        let m_end = m_end.min(end);
        push(&text[at..m_start], false);
        push(&text[m_start..m_end], true);
        at = m_end;
    }
    push(&text[at..end], false);
    if end < text.len() {
        push("…", false);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(segments: &[Segment]) -> String {
        segments
            .iter()
            .map(|s| {
                if s.highlighted {
                    format!("[{}]", s.text)
                } else {
                    s.text.clone()
                }
            })
            .collect()
    }

    fn q(text: &str) -> SearchQuery {
        SearchQuery::parse(text).unwrap()
    }

    #[test]
    fn marks_matches() {
        let s = snippet("Rust is fast. rust is safe.", &q("RUST"), 200);
        assert_eq!(render(&s), "[Rust] is fast. [rust] is safe.");
        let s = snippet("今日は東京都に行きます", &q("東京都"), 200);
        assert_eq!(render(&s), "今日は[東京都]に行きます");
        let s = snippet("Ein Gruß aus Köln", &q("koln gruss"), 200);
        assert_eq!(render(&s), "Ein [Gruß] aus [Köln]");
        let s = snippet("ｶﾀｶﾅとカタカナ", &q("カタカナ"), 200);
        assert_eq!(render(&s), "[ｶﾀｶﾅ]と[カタカナ]");
        let s = snippet("東京と京都", &q("東"), 200);
        assert_eq!(render(&s), "[東京]と京都");
    }

    #[test]
    fn excluded_words_are_not_marked() {
        let s = snippet("rust and java", &q("rust -java"), 200);
        assert_eq!(render(&s), "[rust] and java");
    }

    #[test]
    fn cuts_around_the_first_match() {
        let text = format!(
            "{} needle {}",
            "lorem ipsum ".repeat(20),
            "dolor sit ".repeat(20)
        );
        let s = render(&snippet(&text, &q("needle"), 60));
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("[needle]"), "{s}");
        assert!(s.chars().count() <= 64, "{s}");
        // No match: the beginning.
        let s = render(&snippet(&text, &q("absent"), 20));
        assert!(s.starts_with("lorem") && s.ends_with('…'), "{s}");
        assert!(snippet("", &q("x"), 20).is_empty());
    }

    #[test]
    fn multibyte_cut_is_on_char_boundaries() {
        let text = "日本語".repeat(100) + "検索" + &"テキスト".repeat(100);
        let s = render(&snippet(&text, &q("検索"), 30));
        assert!(s.contains("[検索]"), "{s}");
    }
}
