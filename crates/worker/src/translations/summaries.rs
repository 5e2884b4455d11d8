//! Summaries in the reader's language (issue 37). A summary is made once per item, in the
//! article's language (the built-in summarizer picks the article's own sentences; the model
//! providers are told to write in the article's language); a reader of another language gets
//! it translated by the translation provider, kept per item and language like the items'
//! translations, and charged to the user's and the installation's translation budgets.

use std::sync::Arc;

use chrono::Utc;
use tidings_store::{GeneratedSummary, SummaryTranslation};
use tidings_text::language::same_language_tags;

use super::{Outcome, TranslateError, TranslationRequest, Translator};

impl Translator {
    /// `summary` (item `summary.item_id`'s, whose language is `item_language`) in `target`,
    /// charged to `user_id`: the summary itself when the item is in that language already
    /// (`en` and `en-GB` are one; nothing asked), the kept translation of this summary, else
    /// one attempt, waited for up to [`super::TranslateConfig::request_wait`] (it goes on
    /// afterwards, and stores its result).
    pub async fn translate_summary(
        self: &Arc<Self>,
        summary: &GeneratedSummary,
        item_language: Option<&str>,
        target: &str,
        user_id: i64,
    ) -> Result<SummaryTranslation, TranslateError> {
        if item_language.is_some_and(|language| same_language_tags(language, target)) {
            return Ok(SummaryTranslation {
                item_id: summary.item_id,
                language: target.to_owned(),
                text: summary.text.clone(),
                source_language: item_language.map(str::to_owned),
                provider: summary.provider.clone(),
                model: summary.model.clone(),
                summary_created_at: summary.created_at,
                created_at: summary.created_at,
            });
        }
        if let Some(found) = self
            .store
            .summary_translation(summary.item_id, target)
            .await?
            && found.summary_created_at == summary.created_at
        {
            return Ok(found);
        }
        if self.provider.is_none() {
            return Err(TranslateError::Off);
        }
        let translator = Arc::clone(self);
        let (summary, target) = (summary.clone(), target.to_owned());
        let source = item_language.map(str::to_owned);
        let attempt = tokio::spawn(async move {
            translator
                .attempt_summary(summary, source, target, user_id)
                .await
        });
        match tokio::time::timeout(self.config.request_wait, attempt).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => Err(TranslateError::Failed(format!(
                "the summary's translation failed: {error}"
            ))),
            Err(_) => Err(TranslateError::Pending),
        }
    }

    /// One request for `summary` into `target`: the summary goes as HTML (escaped, a
    /// paragraph a line), the answer is read back as plain text and stored.
    async fn attempt_summary(
        &self,
        summary: GeneratedSummary,
        source: Option<String>,
        target: String,
        user_id: i64,
    ) -> Result<SummaryTranslation, TranslateError> {
        let Some(provider) = &self.provider else {
            return Err(TranslateError::Off);
        };
        let request = TranslationRequest {
            title: None,
            html: Some(text_to_html(&summary.text)),
            source: source.clone(),
            target: target.clone(),
        };
        let _slot = self.slots.acquire().await;
        let answer = self
            .ask(provider.as_ref(), &request, summary.item_id, Some(user_id))
            .await
            .map_err(Outcome::into_error)?;
        // The provider's answer is untrusted: read as plain text, never shown as HTML.
        let text = answer
            .html
            .as_deref()
            .and_then(tidings_feed::text::html_to_text)
            .filter(|text| !text.trim().is_empty())
            .ok_or_else(|| {
                TranslateError::Failed(format!(
                    "the {} translation provider answered without text",
                    provider.name()
                ))
            })?;
        let translation = SummaryTranslation {
            item_id: summary.item_id,
            language: target,
            text,
            source_language: answer.detected.or(source),
            provider: provider.name().to_owned(),
            model: provider.model().map(str::to_owned),
            summary_created_at: summary.created_at,
            created_at: Utc::now().timestamp(),
        };
        if self.store.save_summary_translation(&translation).await? {
            Ok(translation)
        } else {
            Err(TranslateError::Gone)
        }
    }
}

impl Outcome {
    /// Why an attempt came to nothing (an attempt that stored something is no error).
    fn into_error(self) -> TranslateError {
        match self {
            Outcome::Defer(error, _) | Outcome::Later(error, _) | Outcome::GiveUp(error) => error,
            Outcome::Stored(_) => TranslateError::Failed("nothing to report".into()),
        }
    }
}

/// Plain text as HTML: escaped, each line a paragraph.
fn text_to_html(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let escaped = line
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            format!("<p>{escaped}</p>")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_go_as_escaped_paragraphs() {
        assert_eq!(
            text_to_html("Tom & Jerry <3\n\n second line "),
            "<p>Tom &amp; Jerry &lt;3</p><p>second line</p>"
        );
    }
}
