//! Summaries in the reader's language (issue 37): an item's generated summary, stored once in
//! the article's language, translated by the translation provider into another language and
//! kept per item and language, shared by every reader like the item's translations.

use crate::{Result, Store, with_db};

/// An item's summary in another language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryTranslation {
    /// The item's id.
    pub item_id: i64,
    /// The language it was translated into, a BCP 47 tag.
    pub language: String,
    /// The summary, translated (plain text).
    pub text: String,
    /// The language it was translated from, when the provider or the item said.
    pub source_language: Option<String>,
    /// Who translated it: `libretranslate`, `deepl`, `openai` or `anthropic`.
    pub provider: String,
    /// The model, for the model providers.
    pub model: Option<String>,
    /// When the summary it translates was made (its `created_at`): a summary made again
    /// since (from the full article) leaves this one out of date.
    pub summary_created_at: i64,
    /// When it was stored (Unix seconds).
    pub created_at: i64,
}

impl Store {
    /// The translation into `language` of `item_id`'s summary as it is now: `None` when there
    /// is none, or only one of a summary made again since. The caller checks that the user may
    /// see the item.
    pub async fn summary_translation(
        &self,
        item_id: i64,
        language: &str,
    ) -> Result<Option<SummaryTranslation>> {
        #[allow(clippy::type_complexity)]
        let row: Option<(String, Option<String>, String, Option<String>, i64, i64)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT t.text, t.source_language, t.provider, t.model,
                            t.summary_created_at, t.created_at
                     FROM summary_translations t
                     JOIN item_summaries s ON s.item_id = t.item_id
                     WHERE t.item_id = $1 AND t.language = $2
                       AND t.summary_created_at = s.created_at",
                )
                .bind(item_id)
                .bind(language)
                .fetch_optional(db)
                .await?
            });
        Ok(row.map(
            |(text, source_language, provider, model, summary_created_at, created_at)| {
                SummaryTranslation {
                    item_id,
                    language: language.to_owned(),
                    text,
                    source_language,
                    provider,
                    model,
                    summary_created_at,
                    created_at,
                }
            },
        ))
    }

    /// Stores a summary's translation, replacing one into the same language; answers `false`
    /// when the item was deleted meanwhile.
    pub async fn save_summary_translation(&self, translation: &SummaryTranslation) -> Result<bool> {
        // Stored like any text from outside: without control characters (PostgreSQL refuses
        // a NUL).
        let text = crate::text::strip_control_chars(&translation.text);
        let stored = with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO summary_translations
                    (item_id, language, text, source_language, provider, model,
                     summary_created_at, created_at)
                 SELECT id, $2, $3, $4, $5, $6, $7, $8 FROM items WHERE id = $1
                 ON CONFLICT (item_id, language) DO UPDATE SET text = excluded.text,
                    source_language = excluded.source_language, provider = excluded.provider,
                    model = excluded.model, summary_created_at = excluded.summary_created_at,
                    created_at = excluded.created_at",
            )
            .bind(translation.item_id)
            .bind(&translation.language)
            .bind(text.as_ref())
            .bind(translation.source_language.as_deref())
            .bind(&translation.provider)
            .bind(translation.model.as_deref())
            .bind(translation.summary_created_at)
            .bind(translation.created_at)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(stored > 0)
    }
}
