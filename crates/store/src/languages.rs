//! The language of each item and feed (issue 37): decided by `tidings_text::language` as items
//! are stored (their title and the first words of their text, weighed against what the item
//! and its feed declare), kept in `items.language` and `feeds.language`, and given to items
//! stored before migration 47 by a resumable backfill (`language_backfill`).

use tidings_text::language::{self, Guess};

use crate::{Result, Store, with_db};

/// How many of a feed's newest items its language is judged by: enough that one item in
/// another language does not flip it, few enough that the feed can change language.
pub(crate) const FEED_LANGUAGE_ITEMS: i64 = 50;

/// What one item of a batch brings to its language.
pub(crate) struct ItemLanguageInput<'a> {
    /// Its title.
    pub(crate) title: Option<&'a str>,
    /// The plain text of its content (else summary).
    pub(crate) body: &'a str,
    /// The language the item itself declares.
    pub(crate) declared: Option<&'a str>,
}

/// What the text of each item of a batch says of its language ([`language::detect`]).
pub(crate) fn guesses(items: &[ItemLanguageInput<'_>]) -> Vec<Option<Guess>> {
    items
        .iter()
        .map(|item| language::detect(&language::item_text(item.title, item.body)))
        .collect()
}

/// Whether a guess of the batch needs the feed's language to be decided (Han-only text, a few
/// words): then the store reads the feed's stored language when the fetch declares none.
pub(crate) fn needs_context(guesses: &[Option<Guess>]) -> bool {
    guesses.iter().flatten().any(|g| g.han_only || !g.reliable)
}

/// The languages of a batch of one feed's items, in order, from their [`guesses`].
/// `feed_declared` is the feed's declared language (or, without one, its stored language).
/// The batch's own majority, checked against it, is the feed's language for the items
/// detection cannot place alone (Han-only titles, a few words).
pub(crate) fn batch_languages(
    items: &[ItemLanguageInput<'_>],
    guesses: &[Option<Guess>],
    feed_declared: Option<&str>,
) -> Vec<Option<String>> {
    let sure: Vec<Option<String>> = items
        .iter()
        .zip(guesses)
        .map(|(item, guess)| {
            // Only sure guesses vote for the feed's language.
            let sure = guess.filter(|g| g.reliable);
            language::resolve(sure, item.declared.or(feed_declared), None)
        })
        .collect();
    let context = language::feed_language(feed_declared, sure.iter().flatten().map(String::as_str));
    items
        .iter()
        .zip(guesses)
        .map(|(item, guess)| {
            language::resolve(*guess, item.declared.or(feed_declared), context.as_deref())
        })
        .collect()
}

/// Sets, on the transaction `$tx`, the language of feed `$feed_id` from its declared language
/// (`$declared`, else its stored one) and its newest items' ([`language::feed_language`]).
macro_rules! refresh_feed_language_on {
    ($tx:expr, $feed_id:expr, $declared:expr) => {{
        let (feed_id, declared): (i64, Option<&str>) = ($feed_id, $declared);
        let stored: Option<String> = sqlx::query_scalar("SELECT language FROM feeds WHERE id = $1")
            .bind(feed_id)
            .fetch_optional(&mut *$tx)
            .await?
            .flatten();
        let recent: Vec<Option<String>> = sqlx::query_scalar(
            "SELECT language FROM items WHERE feed_id = $1
             ORDER BY published_at DESC, id DESC LIMIT $2",
        )
        .bind(feed_id)
        .bind(crate::languages::FEED_LANGUAGE_ITEMS)
        .fetch_all(&mut *$tx)
        .await?;
        let language = tidings_text::language::feed_language(
            declared.or(stored.as_deref()),
            recent.iter().flatten().map(String::as_str),
        );
        if language.is_some() && language != stored {
            sqlx::query("UPDATE feeds SET language = $2 WHERE id = $1")
                .bind(feed_id)
                .bind(&language)
                .execute(&mut *$tx)
                .await?;
        }
    }};
}
pub(crate) use refresh_feed_language_on;

impl Store {
    /// Whether the schema has the language columns (migration 47); remembered once it does.
    pub(crate) async fn languages_ready(&self) -> bool {
        self.schema_ready(
            &self.languages_ready,
            "SELECT COUNT(*) FROM language_backfill WHERE id < 0",
        )
        .await
    }

    /// The column an item's language is read from: `i.language`, or a text `NULL` on a schema
    /// older than migration 47.
    pub(crate) async fn language_column(&self) -> &'static str {
        if self.languages_ready().await {
            "i.language"
        } else {
            "CAST(NULL AS TEXT)"
        }
    }

    /// The language the store keeps for feed `feed_id` (see `refresh_feed_language_on`).
    pub(crate) async fn stored_feed_language(&self, feed_id: i64) -> Result<Option<String>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, Option<String>>("SELECT language FROM feeds WHERE id = $1")
                .bind(feed_id)
                .fetch_optional(db)
                .await?
                .flatten()
        }))
    }
}
