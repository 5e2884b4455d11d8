//! Text for tidings' full-text search (F35): one tokenizer for every script, the query
//! language, and highlighted snippets. Pure: no I/O.
//!
//! Both storage engines index the same token stream made here ([`index_tokens`]), and queries
//! are tokenized by the same code ([`SearchQuery::parse`]), so SQLite and PostgreSQL find the
//! same items:
//! - **Normalization** ([`normalize`]): NFKC compatibility forms (full-width `ＲＵＳＴ` is `rust`,
//!   half-width `ｶﾀｶﾅ` is `カタカナ`), case folding (`ß` is `ss`), and diacritics removed
//!   (`café` is `cafe`, `Müller` is `muller`).
//! - **Words:** Latin and every other space-separated script are split into words at anything
//!   that is neither a letter, a digit nor a combining mark.
//! - **CJK** (Han, kana, Hangul) has no spaces, so each run of CJK characters becomes its
//!   overlapping character bigrams (`東京都` is `東京 京都`); a two-character word is one bigram,
//!   and a word of more characters is a phrase of bigrams. The last character of each run is
//!   also indexed alone, after the other tokens, so that a one-character query finds every
//!   occurrence (it is searched as a prefix: `東` matches `東京` and a run ending in `東`).
//! - **Relevance** ([`rank`]): BM25 over the same token streams, computed here rather than by
//!   either database, so that both order the same candidates the same way.

#![warn(missing_docs)]

mod canonical;
pub mod language;
mod normalize;
mod query;
mod relevance;
mod snippet;
mod tokenize;

pub use normalize::{normalize, normalize_unit};
pub use query::{
    MAX_QUERY_CHARS, MAX_TERM_CHARS, MAX_TERMS, QueryError, SearchQuery, SearchTerm, strip_negation,
};
pub use relevance::{B, K1, TermStatistics, rank, scores, term_frequencies};
pub use snippet::{Segment, snippet};
pub use tokenize::{
    FieldTokens, MAX_INDEX_TOKENS, MAX_TOKEN_CHARS, Token, TokenKind, index_text, index_tokens,
    is_cjk, joined_index_tokens, tokenize,
};
