//! Tags for tidings (F41): the keyphrases of an item, each with a score in 0–1, found without
//! any outside service. Pure: no I/O.
//!
//! - **Words:** the title and the text are read in NFKC (full-width `ＲＵＳＴ` is `Rust`,
//!   half-width `ｶﾀｶﾅ` is `カタカナ`). Space-separated languages are split into words at
//!   anything that is neither a letter nor a digit (`node.js`, `state-of-the-art` and `don't`
//!   stay whole); runs of Japanese (and other CJK) are split into words by TinySegmenter
//!   (Taku Kudo's compact segmenter; its 25 KB model is compiled in, no dictionary). Korean is
//!   written with spaces and read as words.
//! - **Candidates:** phrases of up to three words (four CJK words, joined without spaces) with
//!   no stop word, punctuation or URL inside. Stop words are English, German and French
//!   function words and the words every web page has (`via`, `https`); in Japanese, words of
//!   with hiragana (particles, endings, verbs) and a few generic nouns. Numbers, one-letter
//!   words, counts and dates in kanji (`一週間`, `三月二十日`) and, alone, English words that
//!   look like a past tense (`waited`, unless capitalized mid-sentence) are never tags. A phrase
//!   of several words must appear twice (the title counts).
//! - **Score:** per document, statistical (no corpus needed, so the same item gets the same
//!   tags on every worker): how often the phrase appears, an appearance in the title counting
//!   [`TITLE_WEIGHT`] times, a bonus for appearing early, for longer phrases and for words
//!   capitalized mid-sentence (names, German nouns), then divided by the best phrase's, so
//!   the best tag of an item scores 1.
//! - **Choice:** the [`MAX_TAGS`] best (or fewer) scoring at least [`MIN_SCORE`]; a phrase that
//!   never appears outside a chosen longer one is left out (`東京都` beside `東京都知事`).
//! - **Names** ([`normalize_tag`]): NFKC, case-folded, spaces collapsed, at most
//!   [`MAX_TAG_CHARS`] characters.

#![warn(missing_docs)]

mod extract;
mod name;
mod pos;
mod segment;
mod stopwords;

pub use extract::{
    Keyphrase, MAX_INPUT_CHARS, MAX_TAGS, MIN_SCORE, TITLE_WEIGHT, extract_keyphrases,
    extract_keyphrases_in,
};
pub use name::{MAX_TAG_CHARS, normalize_tag};
pub use stopwords::is_stop_word;
