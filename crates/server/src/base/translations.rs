//! What the translation handlers share with the items', summaries' and subscriptions' (issue
//! 37): the API's views of a translation (of an item, of its summary), the language a user's
//! translations go into, and the answer to a translation that failed.

use axum::http::{HeaderMap, StatusCode, header};
use serde::Serialize;
use tidings_store::ItemTranslation;
use tidings_worker::TranslateError;
use utoipa::ToSchema;

use crate::base::error::{ApiError, ApiResult, ErrorCategory};
use crate::base::state::AppState;
use crate::base::time::time;

/// An item's translation.
#[derive(Debug, Serialize, ToSchema)]
pub struct TranslationView {
    /// The title, translated (plain text).
    pub title: Option<String>,
    /// The text, translated: sanitized HTML with the structure of the item's own (its
    /// article from its page when one was kept, else its content).
    pub content: Option<String>,
    /// The language it was translated from, as the provider detected it or the item's
    /// detected language; null when neither said.
    #[schema(example = "ja")]
    pub from: Option<String>,
    /// The language it was translated into.
    #[schema(example = "en")]
    pub to: String,
    /// Who translated it: `libretranslate`, `deepl`, `openai` or `anthropic`.
    #[schema(example = "deepl")]
    pub provider: String,
    /// The model, for `openai` and `anthropic`.
    pub model: Option<String>,
    /// When it was made.
    pub created_at: String,
    /// Whether it was made before the feed last changed the item's text: it translates an
    /// earlier version. `POST /items/{id}/translate` makes a new one (and so does "always
    /// translate" on the item's feed).
    pub stale: bool,
}

impl From<ItemTranslation> for TranslationView {
    fn from(translation: ItemTranslation) -> TranslationView {
        TranslationView {
            title: translation.title,
            content: translation.content,
            from: translation.source_language,
            to: translation.language,
            provider: translation.provider,
            model: translation.model,
            created_at: time(translation.created_at),
            stale: translation.stale,
        }
    }
}

/// The language a user's translation goes into: `given` when there is one (checked), else
/// their language setting, else the first language of the browser's `Accept-Language`, else
/// English.
pub(crate) async fn target_language(
    state: &AppState,
    user_id: i64,
    headers: &HeaderMap,
    given: Option<&str>,
) -> ApiResult<String> {
    if let Some(given) = given {
        return language_tag(given).ok_or_else(|| {
            ApiError::validation(
                format!(
                    "\"{}\" is not a language tag.",
                    given.chars().take(40).collect::<String>()
                ),
                "Give a BCP 47 tag such as en, ja, zh-Hans or pt-BR.",
            )
        });
    }
    let preference = state.store.preferences(user_id).await?.language;
    if let Some(tag) = language_tag(&preference) {
        return Ok(tag);
    }
    let browser = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.split(',')
                .filter_map(|part| part.split(';').next())
                .find_map(|tag| language_tag(tag.trim()))
        });
    Ok(browser.unwrap_or_else(|| "en".to_owned()))
}

/// `text` as a BCP 47 tag in its usual case (`en`, `zh-Hans`, `pt-BR`), `None` when it is
/// not one (or is `auto`, `*`).
pub fn language_tag(text: &str) -> Option<String> {
    let text = text.trim();
    // `auto` and `*` are what providers and browsers say for "any language", not a language.
    if text.len() > 35 || text.eq_ignore_ascii_case("auto") {
        return None;
    }
    // One reading of tags for the whole installation: the items' languages are kept in it.
    tidings_text::language::canonical_tag(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_tags_are_checked_and_cased() {
        assert_eq!(language_tag("EN").as_deref(), Some("en"));
        assert_eq!(language_tag("zh-hans").as_deref(), Some("zh-Hans"));
        assert_eq!(language_tag("pt_br").as_deref(), Some("pt-BR"));
        assert_eq!(language_tag("es-419").as_deref(), Some("es-419"));
        assert_eq!(language_tag("auto"), None);
        assert_eq!(language_tag("*"), None);
        assert_eq!(language_tag("english language"), None);
        assert_eq!(language_tag("e"), None);
        assert_eq!(language_tag("en--US"), None);
        // A three-letter subtag is an extended language (`yue`), written in lower case; a
        // three-digit one a region.
        assert_eq!(language_tag("zh-YUE").as_deref(), Some("zh-yue"));
        assert_eq!(language_tag(" ja ").as_deref(), Some("ja"));
    }
}

/// A generated summary in another language.
#[derive(Debug, Serialize, ToSchema)]
pub struct SummaryTranslationView {
    /// The summary, translated (plain text).
    pub text: String,
    /// The language it was translated from (the article's), when known.
    #[schema(example = "ja")]
    pub from: Option<String>,
    /// The language it is in.
    #[schema(example = "en")]
    pub to: String,
    /// Who translated it (`libretranslate`, `deepl`, `openai`, `anthropic`), or who wrote the
    /// summary when it needed no translation.
    pub provider: String,
    /// The model, for `openai` and `anthropic`.
    pub model: Option<String>,
    /// When it was made.
    pub created_at: String,
}

impl From<tidings_store::SummaryTranslation> for SummaryTranslationView {
    fn from(translation: tidings_store::SummaryTranslation) -> SummaryTranslationView {
        SummaryTranslationView {
            text: translation.text,
            from: translation.source_language,
            to: translation.language,
            provider: translation.provider,
            model: translation.model,
            created_at: time(translation.created_at),
        }
    }
}

/// The API's answer to a translation that failed (of an item or of its summary).
pub(crate) fn translate_error(error: TranslateError) -> ApiError {
    let message = tidings_text_capitalized(&error.to_string());
    match error {
        // A 409 like newsletters' `mail_off`: the server's settings, not the request or a
        // failure, keep it from translating.
        TranslateError::Off => ApiError::new(
            StatusCode::CONFLICT,
            "translation_off",
            ErrorCategory::Validation,
            format!("{message}."),
            "Ask the administrator to set TIDINGS_TRANSLATE_PROVIDER (and its base URL, key \
             or model) and restart the server.",
        ),
        TranslateError::BudgetSpent(_) => {
            let mut answer = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "translation_budget_spent",
                ErrorCategory::Limit,
                format!("{message}."),
                "Read the original, or translate again tomorrow (UTC).",
            );
            answer.retry_after = Some(seconds_to_next_day());
            answer
        }
        TranslateError::Unavailable(_, wait) => {
            let breaker = wait.is_some() && message.contains("circuit breaker");
            let mut answer = ApiError::new(
                if breaker {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::BAD_GATEWAY
                },
                "translation_provider_failed",
                ErrorCategory::System,
                format!("{message}."),
                "Try again later; an administrator can check the translation provider.",
            );
            answer.retry_after = wait.map(|w| w.as_secs().max(1));
            answer
        }
        TranslateError::Pending => {
            let mut answer = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "translation_pending",
                ErrorCategory::System,
                format!("{message}."),
                "Ask again in a minute: the translation is kept once made.",
            );
            answer.retry_after = Some(30);
            answer
        }
        TranslateError::Empty | TranslateError::Failed(_) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "translation_failed",
            ErrorCategory::Validation,
            format!("This item cannot be translated: {message}."),
            "Read the original; an administrator can check the translation provider's \
             settings.",
        ),
        TranslateError::Gone => ApiError::not_found("item"),
        TranslateError::Store(error) => error.into(),
    }
}

/// `text` with its first letter in upper case.
fn tidings_text_capitalized(text: &str) -> String {
    crate::base::error::capitalize(text.trim_end_matches('.'))
}

/// Seconds until the next UTC day, when the budgets start again.
fn seconds_to_next_day() -> u64 {
    let now = chrono::Utc::now().timestamp();
    ((now.div_euclid(86_400) + 1) * 86_400 - now).max(1) as u64
}
