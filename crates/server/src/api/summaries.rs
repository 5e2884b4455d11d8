//! Summaries (F42) for the reader: "Summarize" on an item, and the stored summary on every
//! item the API lists or shows. The work is the worker crate's ([`tidings_worker::Summarizer`]):
//! its queue, retries, breaker and budget; this module only answers.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use tidings_worker::Requested;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::items::GeneratedSummaryView;
use crate::base::state::AppState;
use crate::base::translations::{SummaryTranslationView, target_language, translate_error};

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(summarize_item))
}

/// The answer to "Summarize".
#[derive(Debug, Serialize, ToSchema)]
pub struct SummarizeResult {
    /// The summary; null while it is queued.
    pub generated_summary: Option<GeneratedSummaryView>,
    /// `done`, or `queued` (the item's `generated_summary` carries it once made).
    pub status: &'static str,
    /// Why it is queued (a slow or failing provider, its breaker open, its daily budget
    /// spent), when known.
    pub reason: Option<String>,
    /// With `translated=true`: the summary in the language asked (`to`, else the user's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translation: Option<SummaryTranslationView>,
}

/// What "Summarize" adds to the summary.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SummarizeParams {
    /// `true`: the answer carries the summary in the reader's language too (`translation`),
    /// translated by the translation provider (`TIDINGS_TRANSLATE_PROVIDER`) and kept per
    /// item and language; the summary itself when the item is in that language already.
    pub translated: Option<bool>,
    /// The language, a BCP 47 tag; the user's when absent: their language setting, else the
    /// browser's (`Accept-Language`), else English.
    pub to: Option<String>,
}

/// The statuses of [`SummarizeResult`].
pub const SUMMARIZE_STATUSES: [&str; 2] = ["done", "queued"];

/// Summarize the item now. An item summarized before answers its summary at once (summaries
/// are made once and kept). Otherwise the configured provider is asked: the built-in one
/// answers at once; a remote one gets up to 20 s (retries included), after which the answer is
/// 202 with `status: queued` and the summary arrives on the item later (poll
/// `GET /items/{id}`). A provider that keeps failing, whose breaker is open or whose daily
/// budget is spent also answers 202: the item waits in the queue. An item whose text is no
/// longer than a summary (`TIDINGS_SUMMARY_TARGET_CHARS`) is its own summary: 400
/// `too_short_to_summarize`, and no provider is asked. With `translated=true` the summary
/// comes in the reader's language too (`translation`): translated once per item and language
/// by the translation provider, and charged to the user's translation budget; the translation
/// errors are those of `POST /items/{id}/translate`.
#[utoipa::path(post, path = "/items/{id}/summarize", tag = "items",
    params(("id" = i64, Path, description = "The item's id"), SummarizeParams),
    responses(
        (status = 200, description = "The summary", body = SummarizeResult),
        (status = 202, description = "Queued: the provider is slow or failing for now; the item carries the summary once made", body = SummarizeResult),
        (status = 400, description = "The item cannot be summarized: it has no text, or the provider refused it (`summary_unavailable`), or its text is no longer than a summary (`too_short_to_summarize`)", body = ErrorBody),
        (status = 404, description = "No such item among the user's subscriptions", body = ErrorBody),
        (status = 409, description = "With `translated=true`: translation is off on this server (`translation_off`)", body = ErrorBody),
        (status = 429, description = "With `translated=true`: a daily translation budget is spent (`translation_budget_spent`)", body = ErrorBody),
        (status = 502, description = "With `translated=true`: the translation provider failed (`translation_provider_failed`)", body = ErrorBody),
        (status = 503, description = "With `translated=true`: the translation provider's breaker is open or it is slow (`translation_pending`), or the database is unreachable", body = ErrorBody,
            headers(("Retry-After" = i64, description = "Seconds to wait before asking again"))),
    ))]
async fn summarize_item(
    State(state): State<AppState>,
    auth: Auth,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Query(params): Query<SummarizeParams>,
) -> ApiResult<(StatusCode, Json<SummarizeResult>)> {
    // Only items of the user's own subscriptions.
    let item = state.store.item(auth.user.id, id).await?;
    // A bad language is refused before anything is asked of a provider.
    let target = match params.translated {
        Some(true) => {
            Some(target_language(&state, auth.user.id, &headers, params.to.as_deref()).await?)
        }
        _ => None,
    };
    let summarizer = state.fetcher.summarizer();
    match summarizer.request_by(id, auth.user.id).await? {
        Requested::Done(summary) => {
            let translation = match &target {
                Some(target) => Some(
                    state
                        .fetcher
                        .translator()
                        .translate_summary(&summary, item.language.as_deref(), target, auth.user.id)
                        .await
                        .map_err(translate_error)?
                        .into(),
                ),
                None => None,
            };
            Ok((
                StatusCode::OK,
                Json(SummarizeResult {
                    generated_summary: Some(summary.into()),
                    status: "done",
                    reason: None,
                    translation,
                }),
            ))
        }
        Requested::Queued(reason) => Ok((
            StatusCode::ACCEPTED,
            Json(SummarizeResult {
                generated_summary: None,
                status: "queued",
                reason,
                translation: None,
            }),
        )),
        Requested::TooShort(chars) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "too_short_to_summarize",
            ErrorCategory::Validation,
            format!(
                "This item is too short to summarize: its text has {chars} characters, no more \
                 than a summary's {}.",
                summarizer.config().target_chars
            ),
            "Read the item itself: it is as short as its summary would be.",
        )),
        Requested::Failed(why) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "summary_unavailable",
            ErrorCategory::Validation,
            format!("This item cannot be summarized: {why}."),
            "Read the item itself; an administrator can check the summary provider's settings.",
        )),
    }
}
