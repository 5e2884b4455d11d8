//! The search index's write side (F35): the tokens and index value of an item on each engine,
//! and the writing of index rows, which item upserts, full articles and the backfill share. The
//! queries are in `search`.

use std::collections::BTreeMap;

use tidings_feed::text::plain_text;
use tidings_text::{FieldTokens, index_tokens, joined_index_tokens};

use crate::Engine;

/// PostgreSQL keeps at most this many positions of one lexeme in a tsvector.
pub(crate) const MAX_POSITIONS_PER_LEXEME: usize = 256;
/// PostgreSQL's highest tsvector position.
pub(crate) const MAX_POSITION: usize = 16_383;

/// The tokens indexed for an item: its title, then its content (else summary) as text, then
/// the full article extracted from its page (F6), if any.
pub(crate) fn item_tokens(
    title: Option<&str>,
    content: Option<&str>,
    summary: Option<&str>,
    full_text: Option<&str>,
) -> Vec<String> {
    text_tokens(title, &searchable_text(content.or(summary), full_text))
}

/// An item's searchable text after its title: the plain text of its content (else summary),
/// then of its full article. Search hits carry the same text, so that a hit is ranked on the
/// tokens the index holds for it and its snippet can show a match found in the article.
pub(crate) fn searchable_text(body: Option<&str>, full_text: Option<&str>) -> String {
    let body = body.and_then(plain_text).unwrap_or_default();
    match full_text.and_then(plain_text) {
        Some(article) => format!("{body}\n{article}"),
        None => body,
    }
}

/// The tokens of an item's title and its searchable text (as [`item_tokens`] makes it): what
/// the index holds for the item.
pub(crate) fn text_tokens(title: Option<&str>, body: &str) -> Vec<String> {
    index_tokens(&format!("{}\n{body}", title.unwrap_or("")))
}

/// A new or changed item's searchable text, tokenized once: its index value and, for its
/// subscribers' rules, its title's and text's tokens (tokenizing is most of what indexing an
/// item costs, and rules would otherwise do it again in the same fetch).
pub(crate) struct ItemText {
    /// The plain text of its content (else summary), as [`searchable_text`] makes it.
    pub(crate) body: String,
    /// Its title's tokens.
    pub(crate) title: FieldTokens,
    /// Its text's tokens.
    pub(crate) body_tokens: FieldTokens,
}

impl ItemText {
    /// Turns the item's content (else summary) into plain text and tokenizes it and the title.
    pub(crate) fn new(title: Option<&str>, content: Option<&str>, summary: Option<&str>) -> Self {
        let body = searchable_text(content.or(summary), None);
        ItemText {
            title: FieldTokens::new(title.unwrap_or("")),
            body_tokens: FieldTokens::new(&body),
            body,
        }
    }

    /// The item's index value: the same as [`item_index_value`] without a full article.
    pub(crate) fn index_value(&self, engine: Engine) -> String {
        index_value(
            engine,
            &joined_index_tokens(&[&self.title, &self.body_tokens]),
        )
    }
}

/// A PostgreSQL tsvector literal of `tokens` at positions 1, 2, …: each lexeme with its
/// positions, nothing left to a text search parser.
pub(crate) fn tsvector_literal<T: AsRef<str>>(tokens: &[T]) -> String {
    let mut positions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, token) in tokens
        .iter()
        .map(AsRef::as_ref)
        .take(MAX_POSITION)
        .enumerate()
    {
        let list = positions.entry(token).or_default();
        if list.len() < MAX_POSITIONS_PER_LEXEME {
            list.push(i + 1);
        }
    }
    let mut out = String::new();
    for (lexeme, list) in positions {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&quote_lexeme(lexeme));
        out.push(':');
        let list: Vec<String> = list.iter().map(usize::to_string).collect();
        out.push_str(&list.join(","));
    }
    out
}

/// A lexeme quoted for tsvector / tsquery input.
pub(crate) fn quote_lexeme(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
}

/// The index value of `tokens` for `engine`: the tokens joined by spaces (SQLite's FTS5 table
/// splits on them), or a tsvector literal.
pub(crate) fn index_value<T: AsRef<str>>(engine: Engine, tokens: &[T]) -> String {
    match engine {
        Engine::Sqlite => {
            let parts: Vec<&str> = tokens.iter().map(AsRef::as_ref).collect();
            parts.join(" ")
        }
        Engine::Postgres => tsvector_literal(tokens),
    }
}

/// An item's translation as its index row holds it: the translated title (plain text) and
/// text (sanitized HTML).
pub(crate) type TranslationText = (Option<String>, Option<String>);

/// The index value of one item, for a batch of [`index_rows_sql`]: its title, content (else
/// summary) and full article, then each of its `translations` (title, then text), so that a
/// translated item is found by words of either language (issue 37).
pub(crate) fn item_index_value(
    engine: Engine,
    title: Option<&str>,
    content: Option<&str>,
    summary: Option<&str>,
    full_text: Option<&str>,
    translations: &[TranslationText],
) -> String {
    let mut tokens = item_tokens(title, content, summary, full_text);
    for (title, content) in translations {
        tokens.extend(text_tokens(
            title.as_deref(),
            &searchable_text(content.as_deref(), None),
        ));
    }
    index_value(engine, &tokens)
}

/// Item ids read per statement by [`translations_of`] (well under SQLite's bound on
/// parameters).
pub(crate) const TRANSLATIONS_READ_PER_STATEMENT: usize = 500;

/// The translations (issue 37) of those of `$ids` that have any, by item id, each item's in
/// the order of their language, read on the transaction `$tx`. Every writer of an item's
/// index row reads them, so that the row keeps the translations' words when the item's text
/// changes or its full article arrives.
macro_rules! translations_of {
    ($tx:expr, $ids:expr) => {{
        let ids: &[i64] = $ids;
        let mut texts: std::collections::HashMap<i64, Vec<crate::search_index::TranslationText>> =
            std::collections::HashMap::new();
        for chunk in ids.chunks(crate::search_index::TRANSLATIONS_READ_PER_STATEMENT) {
            let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let mut read = sqlx::query_as::<_, (i64, Option<String>, Option<String>)>(
                sqlx::AssertSqlSafe(format!(
                    "SELECT item_id, title, content FROM item_translations
                     WHERE item_id IN ({}) ORDER BY item_id, language",
                    placeholders.join(", ")
                )),
            );
            for id in chunk {
                read = read.bind(*id);
            }
            for (id, title, content) in read.fetch_all(&mut *$tx).await? {
                texts.entry(id).or_default().push((title, content));
            }
        }
        texts
    }};
}
pub(crate) use translations_of;

/// Full articles read per statement by [`full_texts_of`] (well under SQLite's bound on
/// parameters).
pub(crate) const FULL_TEXTS_READ_PER_STATEMENT: usize = 500;

/// The full articles (F6) of those of `$ids` that have one, by item id, read on the
/// transaction `$tx`. On PostgreSQL, callers read them in a statement after the one that
/// locked or updated the items, so that an article saved meanwhile (its save locks the item
/// first) is seen once its transaction has committed.
macro_rules! full_texts_of {
    ($tx:expr, $ids:expr) => {{
        let ids: &[i64] = $ids;
        let mut texts: std::collections::HashMap<i64, String> = std::collections::HashMap::new();
        for chunk in ids.chunks(crate::search_index::FULL_TEXTS_READ_PER_STATEMENT) {
            let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let mut read = sqlx::query_as::<_, (i64, String)>(sqlx::AssertSqlSafe(format!(
                "SELECT item_id, content FROM item_full_texts
                 WHERE content IS NOT NULL AND item_id IN ({})",
                placeholders.join(", ")
            )));
            for id in chunk {
                read = read.bind(*id);
            }
            texts.extend(read.fetch_all(&mut *$tx).await?);
        }
        texts
    }};
}
pub(crate) use full_texts_of;

/// The statement that writes `rows` index rows at once: `$1`, `$2` the first item's id and
/// value, `$3`, `$4` the second's, and so on (values from [`item_index_value`]).
pub(crate) fn index_rows_sql(engine: Engine, rows: usize) -> String {
    let (head, row, tail) = match engine {
        Engine::Sqlite => (
            "INSERT OR REPLACE INTO item_search (rowid, body) VALUES ",
            "",
            "",
        ),
        Engine::Postgres => (
            "INSERT INTO item_search (item_id, document) VALUES ",
            "::tsvector",
            " ON CONFLICT (item_id) DO UPDATE SET document = EXCLUDED.document",
        ),
    };
    let mut sql = String::from(head);
    for n in 0..rows {
        if n > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("(${}, ${}{row})", 2 * n + 1, 2 * n + 2));
    }
    sql.push_str(tail);
    sql
}

/// Writes `$rows` (item id, value of [`item_index_value`]) to the search index on the
/// transaction `$tx`: a few rows per statement, in the batch sizes of the item inserts, so that
/// each statement shape is prepared once per connection.
macro_rules! write_index_rows {
    ($tx:expr, $engine:expr, $rows:expr) => {{
        let mut rest: &[(i64, &str)] = $rows;
        for size in crate::batch::batches(rest.len()) {
            let (chunk, after) = rest.split_at(size);
            rest = after;
            let mut write = sqlx::query(sqlx::AssertSqlSafe(crate::search_index::index_rows_sql(
                $engine, size,
            )));
            for (id, value) in chunk {
                write = write.bind(*id).bind(*value);
            }
            write.execute(&mut *$tx).await?;
        }
    }};
}
pub(crate) use write_index_rows;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsvector_has_positions() {
        let tokens: Vec<String> = ["b", "a", "b", "it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(tsvector_literal(&tokens), "'a':2 'b':1,3 'it''s':4");
        assert_eq!(tsvector_literal::<&str>(&[]), "");
        let many: Vec<String> = (0..20_000).map(|_| "x".to_string()).collect();
        let literal = tsvector_literal(&many);
        assert_eq!(literal.matches(',').count(), MAX_POSITIONS_PER_LEXEME - 1);
    }

    #[test]
    fn an_item_tokenized_once_has_the_index_value_of_its_text() {
        for engine in [Engine::Sqlite, Engine::Postgres] {
            for (title, content, summary) in [
                (Some("東京の天気"), Some("<p>晴れ <b>sunny</b></p>"), None),
                (None, None, Some("<p>summary only</p>")),
                (Some("Title"), None, None),
            ] {
                assert_eq!(
                    ItemText::new(title, content, summary).index_value(engine),
                    item_index_value(engine, title, content, summary, None, &[])
                );
            }
        }
    }

    #[test]
    fn item_text_is_title_and_content_without_markup() {
        let tokens = item_tokens(
            Some("Rust 東京"),
            Some("<p>Hello <b>wörld</b> &amp; <a href=\"https://x.example/secret\">link</a></p>"),
            Some("ignored summary"),
            None,
        );
        assert_eq!(tokens, ["rust", "東京", "hello", "world", "link", "京"]);
        let tokens = item_tokens(None, None, Some("<p>summary only</p>"), None);
        assert_eq!(tokens, ["summary", "only"]);
        // The full article follows the feed's text; a hit carries the same text.
        let tokens = item_tokens(
            Some("Title"),
            Some("<p>teaser</p>"),
            None,
            Some("<article><p>Whole <i>story</i></p></article>"),
        );
        assert_eq!(tokens, ["title", "teaser", "whole", "story"]);
        assert_eq!(
            text_tokens(
                Some("Title"),
                &searchable_text(Some("<p>teaser</p>"), Some("<p>Whole story</p>"))
            ),
            tokens
        );
    }
}
