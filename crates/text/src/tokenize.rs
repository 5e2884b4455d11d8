//! Splitting normalized text into search tokens: words, and CJK character bigrams.

use unicode_normalization::char::is_combining_mark;

use crate::normalize::{normalize_unit, units};

/// The longest token, in characters; longer words are cut to this (queries are cut the same
/// way, so they still match).
pub const MAX_TOKEN_CHARS: usize = 100;

/// The most tokens indexed for one text. PostgreSQL keeps positions up to 16,383, so both
/// engines index the same first tokens of a very long text: half of this inline, and at most
/// as many trailing run ends.
pub const MAX_INDEX_TOKENS: usize = 16_000;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A word of a space-separated script (or digits).
    Word,
    /// A CJK run of one character.
    Unigram,
    /// Two adjacent characters of a CJK run.
    Bigram,
}

/// A token with where it came from in the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The normalized token.
    pub text: String,
    /// What kind of token it is.
    pub kind: TokenKind,
    /// Byte offset in the original text where it starts.
    pub start: usize,
    /// Byte offset in the original text where it ends.
    pub end: usize,
    /// For a bigram: it is the last of its CJK run, so its second character ends the run.
    pub ends_run: bool,
}

/// Whether `c` (normalized) belongs to a script written without spaces that is indexed by
/// bigrams: Han ideographs, hiragana, katakana (with the prolonged sound mark) and Hangul.
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3005}' | '\u{3007}' | '\u{303B}'       // 々 〇 〻
        | '\u{3041}'..='\u{309F}'                 // hiragana
        | '\u{30A0}'..='\u{30FA}' | '\u{30FC}'..='\u{30FF}' // katakana (without the ・ dot)
        | '\u{31F0}'..='\u{31FF}'                 // katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}'                 // Han extension A
        | '\u{4E00}'..='\u{9FFF}'                 // Han unified ideographs
        | '\u{F900}'..='\u{FAFF}'                 // Han compatibility ideographs
        | '\u{20000}'..='\u{3FFFF}'               // Han extensions B and later
        | '\u{1100}'..='\u{11FF}'                 // Hangul jamo
        | '\u{3130}'..='\u{318F}'                 // Hangul compatibility jamo
        | '\u{A960}'..='\u{A97F}' | '\u{D7B0}'..='\u{D7FF}' // Hangul jamo extensions
        | '\u{AC00}'..='\u{D7AF}'                 // Hangul syllables
    )
}

/// Whether `c` (normalized) is part of a word.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_combining_mark(c)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Cjk,
    Word,
    Separator,
}

fn class(c: char) -> Class {
    if is_cjk(c) {
        Class::Cjk
    } else if is_word_char(c) {
        Class::Word
    } else {
        Class::Separator
    }
}

/// Splits `text` into its tokens, in order: words, and for each CJK run its bigrams (or the
/// character alone when the run is one character). Offsets point into `text`.
pub fn tokenize(text: &str) -> Vec<Token> {
    // Normalized characters with the byte range of the unit each came from.
    let mut chars: Vec<(char, usize, usize)> = Vec::with_capacity(text.len());
    for (start, end) in units(text) {
        let unit = &text[start..end];
        // Plain ASCII needs no tables: fold it directly (most text is mostly ASCII).
        if unit.len() == 1 {
            let c = unit.as_bytes()[0].to_ascii_lowercase() as char;
            chars.push((c, start, end));
            continue;
        }
        for c in normalize_unit(unit).chars() {
            chars.push((c, start, end));
        }
    }
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let kind = class(chars[i].0);
        let mut j = i + 1;
        while j < chars.len() && class(chars[j].0) == kind {
            j += 1;
        }
        let run = &chars[i..j];
        match kind {
            Class::Separator => {}
            Class::Word => tokens.push(Token {
                text: run.iter().take(MAX_TOKEN_CHARS).map(|c| c.0).collect(),
                kind: TokenKind::Word,
                start: run[0].1,
                end: run[run.len() - 1].2,
                ends_run: false,
            }),
            Class::Cjk if run.len() == 1 => tokens.push(Token {
                text: run[0].0.to_string(),
                kind: TokenKind::Unigram,
                start: run[0].1,
                end: run[0].2,
                ends_run: false,
            }),
            Class::Cjk => {
                for (k, pair) in run.windows(2).enumerate() {
                    tokens.push(Token {
                        text: [pair[0].0, pair[1].0].iter().collect(),
                        kind: TokenKind::Bigram,
                        start: pair[0].1,
                        end: pair[1].2,
                        ends_run: k + 2 == run.len(),
                    });
                }
            }
        }
        i = j;
    }
    tokens
}

/// The tokens an index stores for `text`, in position order: the tokens of [`tokenize`] (at
/// most half of [`MAX_INDEX_TOKENS`]), then the last character of every CJK run of two or more
/// characters, so that one-character searches find characters that end a run. The trailing
/// characters come after everything else, so they never sit between the tokens of a phrase.
pub fn index_tokens(text: &str) -> Vec<String> {
    let mut inline = tokenize(text);
    inline.truncate(MAX_INDEX_TOKENS / 2);
    let run_ends: Vec<String> = inline
        .iter()
        .filter(|t| t.ends_run)
        .filter_map(|t| t.text.chars().last().map(String::from))
        .collect();
    let mut tokens: Vec<String> = inline.into_iter().map(|t| t.text).collect();
    tokens.extend(run_ends);
    tokens
}

/// A field's text tokenized once (a title, an item's text): its tokens as [`index_tokens`] gives
/// them for that text alone, and what [`joined_index_tokens`] needs to give the index tokens of
/// several fields in a row without tokenizing again. Ingest tokenizes an item's title and text
/// once for both the search index and the user's rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldTokens {
    /// The inline tokens (at most half of [`MAX_INDEX_TOKENS`]), then the run ends.
    pub tokens: Vec<String>,
    /// How many of `tokens` are inline.
    inline: usize,
    /// The positions of the inline tokens that end a CJK run of two or more characters.
    ends: Vec<usize>,
}

impl FieldTokens {
    /// Tokenizes `text`; `tokens` is then what [`index_tokens`] gives for it.
    pub fn new(text: &str) -> FieldTokens {
        let mut inline = tokenize(text);
        inline.truncate(MAX_INDEX_TOKENS / 2);
        let ends: Vec<usize> = (0..inline.len()).filter(|&i| inline[i].ends_run).collect();
        let count = inline.len();
        let mut tokens: Vec<String> = inline.into_iter().map(|t| t.text).collect();
        for &i in &ends {
            if let Some(last) = last_char(&tokens[i]) {
                tokens.push(last.to_string());
            }
        }
        FieldTokens {
            tokens,
            inline: count,
            ends,
        }
    }

    /// The inline tokens alone: [`tokenize`]'s tokens of the text (at most half of
    /// [`MAX_INDEX_TOKENS`]), without the run ends the index adds after them.
    pub fn inline(&self) -> &[String] {
        &self.tokens[..self.inline]
    }
}

/// The last character of a token, as a slice of it.
fn last_char(token: &str) -> Option<&str> {
    token.char_indices().last().map(|(at, _)| &token[at..])
}

/// The index tokens of several fields in a row: what [`index_tokens`] gives for their texts
/// joined by newlines (every field's inline tokens, at most half of [`MAX_INDEX_TOKENS`] in
/// all, then the run ends among those), borrowed from the fields' own tokens.
pub fn joined_index_tokens<'a>(fields: &[&'a FieldTokens]) -> Vec<&'a str> {
    let limit = MAX_INDEX_TOKENS / 2;
    let mut joined: Vec<&str> = Vec::new();
    let mut run_ends: Vec<&str> = Vec::new();
    for field in fields {
        let kept = field.inline.min(limit.saturating_sub(joined.len()));
        joined.extend(field.tokens[..kept].iter().map(String::as_str));
        run_ends.extend(
            field
                .ends
                .iter()
                .take_while(|&&i| i < kept)
                .filter_map(|&i| last_char(&field.tokens[i])),
        );
    }
    joined.extend(run_ends);
    joined
}

/// [`index_tokens`] joined by spaces: what the SQLite index reads with its `ascii` tokenizer
/// (which splits only at ASCII separators, so every token stays whole).
pub fn index_text(text: &str) -> String {
    index_tokens(text).join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        tokenize(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn fields_tokenized_apart_join_as_their_text_does() {
        let cases = [
            ("Tokyo news", "東京都の天気は晴れ。Rain in 大阪"),
            ("東京都", "京都 and more 日本語のテキスト"),
            ("", "only a body"),
            ("a title only", ""),
            ("한국어 제목", "中文内容 with words"),
        ];
        for (title, body) in cases {
            let (t, b) = (FieldTokens::new(title), FieldTokens::new(body));
            assert_eq!(t.tokens, index_tokens(title), "{title}");
            assert_eq!(
                joined_index_tokens(&[&t, &b]),
                index_tokens(&format!("{title}\n{body}")),
                "{title} / {body}"
            );
        }
        // Past the bound, the joined tokens are cut as the joined text's are.
        let long = "語彙 word ".repeat(MAX_INDEX_TOKENS);
        let (t, b) = (FieldTokens::new("見出し"), FieldTokens::new(&long));
        assert_eq!(
            joined_index_tokens(&[&t, &b]),
            index_tokens(&format!("見出し\n{long}"))
        );
    }

    #[test]
    fn words_of_space_separated_scripts() {
        assert_eq!(texts("Hello, World!"), ["hello", "world"]);
        assert_eq!(texts("  "), Vec::<String>::new());
        assert_eq!(texts(""), Vec::<String>::new());
        assert_eq!(texts("Rust 1.94 is out"), ["rust", "1", "94", "is", "out"]);
        assert_eq!(texts("e-mail don't"), ["e", "mail", "don", "t"]);
        assert_eq!(texts("Grüße aus München"), ["grusse", "aus", "munchen"]);
        assert_eq!(texts("Café crème"), ["cafe", "creme"]);
        assert_eq!(texts("Привет, мир"), ["привет", "мир"]);
        assert_eq!(texts("Καλημέρα κόσμε"), ["καλημερα", "κοσμε"]);
        assert_eq!(texts("مرحبا بالعالم"), ["مرحبا", "بالعالم"]);
        assert_eq!(texts("नमस्ते दुनिया"), ["नमस्ते", "दुनिया"]);
        assert_eq!(texts("ＲＵＳＴ　ｌａｎｇ"), ["rust", "lang"]);
        assert_eq!(texts("snake_case/path"), ["snake", "case", "path"]);
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        assert_eq!(texts("東京"), ["東京"]);
        assert_eq!(texts("東京都"), ["東京", "京都"]);
        assert_eq!(texts("東"), ["東"]);
        assert_eq!(texts("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
        assert_eq!(texts("我爱北京"), ["我爱", "爱北", "北京"]);
        assert_eq!(texts("서울에서"), ["서울", "울에", "에서"]);
        assert_eq!(texts("서울 날씨"), ["서울", "날씨"]);
        // Punctuation ends a run.
        assert_eq!(texts("東京、大阪。"), ["東京", "大阪"]);
        assert_eq!(
            texts("カタカナ・ひらがな"),
            ["カタ", "タカ", "カナ", "ひら", "らが", "がな"]
        );
    }

    #[test]
    fn mixed_japanese_and_english() {
        assert_eq!(texts("Rustで書く"), ["rust", "で書", "書く"]);
        assert_eq!(texts("ＲＵＳＴの本"), ["rust", "の本"]);
        assert_eq!(
            texts("iPhone15を買った"),
            ["iphone15", "を買", "買っ", "った"]
        );
        assert_eq!(texts("第3回"), ["第", "3", "回"]);
    }

    #[test]
    fn half_width_katakana_matches_full_width() {
        assert_eq!(texts("ｶﾀｶﾅ"), texts("カタカナ"));
        assert_eq!(texts("ﾃﾞｰﾀﾍﾞｰｽ"), texts("データベース"));
    }

    #[test]
    fn offsets_point_at_the_original_text() {
        let text = "Ｈｉ, café 東京都";
        let tokens = tokenize(text);
        let spans: Vec<&str> = tokens.iter().map(|t| &text[t.start..t.end]).collect();
        assert_eq!(spans, ["Ｈｉ", "café", "東京", "京都"]);
        assert!(tokens[3].ends_run && !tokens[2].ends_run);
        let text = "ｶﾞｽ";
        let tokens = tokenize(text);
        assert_eq!(tokens[0].text, "ガス");
        assert_eq!(&text[tokens[0].start..tokens[0].end], "ｶﾞｽ");
    }

    #[test]
    fn long_words_are_cut() {
        let long = "a".repeat(300);
        let tokens = tokenize(&long);
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].text.chars().count(), MAX_TOKEN_CHARS);
        assert_eq!(tokens[0].end, 300);
    }

    #[test]
    fn index_appends_run_ends() {
        assert_eq!(
            index_tokens("東京都 and 北京"),
            ["東京", "京都", "and", "北京", "都", "京"]
        );
        assert_eq!(index_tokens("東"), ["東"]);
        assert_eq!(index_text("Hello 世界"), "hello 世界 界");
    }

    #[test]
    fn index_is_capped() {
        let text = "word ".repeat(MAX_INDEX_TOKENS * 2);
        assert_eq!(index_tokens(&text).len(), MAX_INDEX_TOKENS / 2);
        let cjk = "東京".repeat(MAX_INDEX_TOKENS);
        assert!(index_tokens(&cjk).len() <= MAX_INDEX_TOKENS);
    }

    #[test]
    fn separators_only() {
        assert!(tokenize("!!! ... ---").is_empty());
        assert!(tokenize("\u{301}\u{301}").is_empty());
    }
}
