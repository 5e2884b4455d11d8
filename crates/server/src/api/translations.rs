//! Translations (issue 37) for the reader: "Translate" on an item, the cached translation on
//! `GET /items/{id}?translated=true`, and the language a user's translations go into. The
//! work is the worker crate's ([`tidings_worker::Translator`]): its provider, breaker,
//! budgets and cache; this module only answers.

use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiResult, ErrorBody};
use crate::base::extract::{Json, Path};
use crate::base::items::proxy_images;
use crate::base::state::AppState;
use crate::base::translations::{TranslationView, target_language, translate_error};

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(translate_item))
}

/// What to translate into.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TranslateRequest {
    /// The language to translate into, a BCP 47 tag (`en`, `ja`, `zh-Hans`, `pt-BR`); the
    /// user's language when absent: their language setting, else the browser's
    /// (`Accept-Language`), else English.
    #[schema(example = "en")]
    pub to: Option<String>,
}

/// Translate the item's title and text. A translation made before into the same language
/// answers at once (translations are kept per item and language, and shared by every user).
/// Otherwise the provider the server is configured with is asked (up to 30 s, retries
/// included); each request counts against the user's and the server's daily translation
/// budgets, and once one is spent the answer is 429 `translation_budget_spent` with
/// `Retry-After` until the next UTC day.
#[utoipa::path(post, path = "/items/{id}/translate", tag = "items",
    request_body = TranslateRequest,
    params(("id" = i64, Path, description = "The item's id")),
    responses(
        (status = 200, description = "The translation", body = TranslationView),
        (status = 400, description = "Not a language tag (`invalid_request`), or the item has nothing to translate or the provider refused it (`translation_failed`)", body = ErrorBody),
        (status = 404, description = "No such item among the user's subscriptions", body = ErrorBody),
        (status = 409, description = "Translation is off on this server (`translation_off`): the message names the setting", body = ErrorBody),
        (status = 502, description = "The provider failed or could not be reached, after retries (`translation_provider_failed`)", body = ErrorBody),
        (status = 503, description = "The provider's circuit breaker is open or the provider is slow (`translation_pending`: ask again shortly), or the database is unreachable (`database_unavailable`); try again after Retry-After seconds when given", body = ErrorBody,
            headers(("Retry-After" = i64, description = "Seconds to wait before asking again"))),
    ))]
async fn translate_item(
    State(state): State<AppState>,
    auth: Auth,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Json(body): Json<TranslateRequest>,
) -> ApiResult<Json<TranslationView>> {
    // Only items of the user's own subscriptions.
    state.store.item(auth.user.id, id).await?;
    let target = target_language(&state, auth.user.id, &headers, body.to.as_deref()).await?;
    let translator = state.fetcher.translator();
    match translator.translate(id, &target, auth.user.id).await {
        Ok(translation) => {
            let mut view = TranslationView::from(translation);
            proxy_images(&state, &mut view.content);
            Ok(Json(view))
        }
        Err(error) => Err(translate_error(error)),
    }
}
