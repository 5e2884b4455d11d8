//! Sentence splitting for every script tidings reads.
//!
//! Japanese and Chinese end sentences with `。！？` (and their half-width forms) and need no
//! space after them; space-separated scripts end them with `.!?` followed by a space. A line
//! break always ends a sentence, since article text keeps one paragraph or heading per line.
//! Closing quotes and brackets after the terminator (`」』”"')）]`) stay with their sentence.

/// One sentence of a text: its byte range in the text, trimmed of surrounding white space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sentence {
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just past its last character.
    pub end: usize,
}

impl Sentence {
    /// The sentence's text within `text`, the string it was split from.
    pub fn text<'a>(&self, text: &'a str) -> &'a str {
        &text[self.start..self.end]
    }
}

/// Terminators that end a sentence wherever they stand (CJK punctuation needs no space after).
fn is_cjk_terminator(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '｡' | '‼' | '⁇')
}

/// Terminators that end a sentence when white space (or the end) follows.
fn is_spaced_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '．')
}

/// Characters that close a quotation or a bracket and belong to the sentence they end.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '」' | '』' | '”' | '’' | '"' | '\'' | ')' | '）' | ']' | '】' | '〕' | '》' | '〉'
    )
}

/// Japanese quotation brackets: a `。` inside them ends the quotation, not the sentence
/// (`「便利になった。」と話す。` is one sentence).
fn opens_quotation(c: char) -> bool {
    matches!(c, '「' | '『')
}

fn closes_quotation(c: char) -> bool {
    matches!(c, '」' | '』')
}

/// A quotation left open longer than this many characters is taken as a stray bracket, so
/// that one unmatched `「` does not join the rest of the text into one sentence.
const MAX_QUOTATION_CHARS: usize = 200;

/// Words after which a period does not end a sentence (compared lower-cased, without the dot).
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "cf", "al",
    "fig", "no", "vol", "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "approx", "dept", "est", "u.s", "u.k", "z.b", "bzw",
    "usw", "ca", "nr",
];

/// Whether the word that ends just before byte `dot` of `text` is an abbreviation or an
/// initial (`J.`), after which a period does not end the sentence.
fn ends_with_abbreviation(text: &str, dot: usize) -> bool {
    let before = &text[..dot];
    let word_start = before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace() || matches!(c, '(' | '"' | '“' | '\''))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &before[word_start..];
    if word.is_empty() {
        return false;
    }
    let mut letters = word.chars();
    // A single capital letter is an initial ("J. R. R. Tolkien").
    if let (Some(first), None) = (letters.next(), letters.next())
        && first.is_uppercase()
    {
        return true;
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

/// Splits `text` into its sentences, in order. Empty stretches (white space, lone
/// punctuation) are not sentences.
pub fn split_sentences(text: &str) -> Vec<Sentence> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    // Where the innermost open quotation started (an index into `chars`), if one is open.
    let mut open_quotations: Vec<usize> = Vec::new();
    while i < chars.len() {
        let (at, c) = chars[i];
        let mut end_here = None;
        if opens_quotation(c) {
            open_quotations.push(i);
        } else if closes_quotation(c) {
            open_quotations.pop();
        }
        open_quotations.retain(|&opened| i - opened <= MAX_QUOTATION_CHARS);
        let quoted = !open_quotations.is_empty();
        if c == '\n' || c == '\r' {
            open_quotations.clear();
            end_here = Some(at);
        } else if quoted && is_cjk_terminator(c) {
            // The end of a quoted sentence; the sentence around it goes on.
        } else if is_cjk_terminator(c) || is_spaced_terminator(c) {
            // Take repeated terminators ("?!", "。。") and the closers after them.
            let mut j = i + 1;
            while j < chars.len()
                && (is_cjk_terminator(chars[j].1) || is_spaced_terminator(chars[j].1))
            {
                j += 1;
            }
            while j < chars.len() && is_closer(chars[j].1) {
                j += 1;
            }
            let after = chars.get(j).map(|&(_, c)| c);
            let ends = if is_cjk_terminator(c) {
                true
            } else {
                let followed_by_space_or_end = after.is_none_or(char::is_whitespace);
                // "3.5", "example.com", "e.g." inside a sentence, "Dr. Smith".
                followed_by_space_or_end
                    && !(c == '.' && j == i + 1 && ends_with_abbreviation(text, at))
            };
            if ends {
                let end = chars.get(j).map_or(text.len(), |&(b, _)| b);
                push_trimmed(text, start, end, &mut sentences);
                start = end;
                i = j;
                continue;
            }
        }
        if let Some(at) = end_here {
            push_trimmed(text, start, at, &mut sentences);
            start = at + c.len_utf8();
        }
        i += 1;
    }
    push_trimmed(text, start, text.len(), &mut sentences);
    sentences
}

/// Adds `text[start..end]` trimmed, if anything with a letter or digit is left.
fn push_trimmed(text: &str, start: usize, end: usize, sentences: &mut Vec<Sentence>) {
    let piece = &text[start..end];
    let leading = piece.len() - piece.trim_start().len();
    let trimmed = piece.trim();
    if trimmed.chars().any(char::is_alphanumeric) {
        let start = start + leading;
        sentences.push(Sentence {
            start,
            end: start + trimmed.len(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<&str> {
        split_sentences(text).iter().map(|s| s.text(text)).collect()
    }

    #[test]
    fn english_sentences_end_at_a_terminator_and_a_space() {
        assert_eq!(
            texts("Rust 1.90 is out. It is faster! Is it? Yes…  Try it"),
            [
                "Rust 1.90 is out.",
                "It is faster!",
                "Is it?",
                "Yes…",
                "Try it"
            ]
        );
    }

    #[test]
    fn abbreviations_initials_numbers_and_hosts_do_not_end_a_sentence() {
        assert_eq!(
            texts(
                "Dr. Smith met J. R. R. Tolkien at example.com on Jan. 5, e.g. at 3.5 p.m. Then he left."
            ),
            [
                "Dr. Smith met J. R. R. Tolkien at example.com on Jan. 5, e.g. at 3.5 p.m.",
                "Then he left."
            ]
        );
    }

    #[test]
    fn japanese_sentences_need_no_space_and_keep_their_quotes() {
        assert_eq!(
            texts("東京で新しい駅が開業した。利用者は「便利になった。」と話す。次は大阪！本当？"),
            [
                "東京で新しい駅が開業した。",
                "利用者は「便利になった。」と話す。",
                "次は大阪！",
                "本当？"
            ]
        );
    }

    #[test]
    fn a_stray_quotation_bracket_does_not_join_the_rest_of_the_text() {
        let text = format!("「開いたまま。{}。次の文。", "長い".repeat(150));
        let sentences = texts(&text);
        assert_eq!(sentences.last(), Some(&"次の文。"), "{sentences:?}");
        assert_eq!(
            texts("「開いたまま。\n次の行。"),
            ["「開いたまま。", "次の行。"]
        );
    }

    #[test]
    fn quotes_after_the_terminator_stay_with_the_sentence() {
        assert_eq!(
            texts("He said \"stop.\" She left. (It was late.) End"),
            ["He said \"stop.\"", "She left.", "(It was late.)", "End"]
        );
    }

    #[test]
    fn line_breaks_end_sentences_and_empty_pieces_are_dropped() {
        assert_eq!(
            texts("A heading\n\nFirst line. Second line.\r\n  — \n最後の行"),
            ["A heading", "First line.", "Second line.", "最後の行"]
        );
        assert!(split_sentences("").is_empty());
        assert!(split_sentences("  \n . … \n").is_empty());
    }

    #[test]
    fn mixed_japanese_and_english() {
        assert_eq!(
            texts("Rustの新版が出た。The release notes are long. 詳しくは公式サイトへ。"),
            [
                "Rustの新版が出た。",
                "The release notes are long.",
                "詳しくは公式サイトへ。"
            ]
        );
    }
}
