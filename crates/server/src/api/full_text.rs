//! Full text (F6) for the reader: an item's article page fetched on demand ("load full
//! article"), through the same guarded client and per-host limiter as the worker's.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use tidings_worker::{LoadError, PageError};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(load_full_content))
}

/// An item's article, extracted from its page.
#[derive(Debug, Serialize, ToSchema)]
pub struct FullContentView {
    /// The item's id.
    pub item_id: i64,
    /// The article's main content, sanitized like feed content (HTML).
    pub full_content: String,
    /// When the page was fetched.
    pub full_content_fetched_at: String,
    /// The page the article came from, after redirects.
    pub source_url: String,
    /// Characters of the article's text.
    pub text_chars: i64,
}

/// The answer when an item's page gives no article.
fn page_error(error: PageError) -> ApiError {
    match error {
        // 400s, as for a subscription's address that leads to no feed: what the request asks
        // for cannot be done (the API answers no 422, and a 5xx would say the server failed).
        PageError::NoLink | PageError::BadLink(_) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "no_article_link",
            ErrorCategory::Validation,
            error.to_string(),
            "This item links to no page; its feed's text is all there is.",
        ),
        other => ApiError::new(
            StatusCode::BAD_REQUEST,
            "full_text_unavailable",
            ErrorCategory::Feed,
            format!("The full article could not be loaded: {other}."),
            "Open the original page instead, or try again later.",
        ),
    }
}

/// Load the item's full article now: its page is fetched (through the outbound address guard,
/// with the usual time-out, size and redirect limits), its main content extracted and
/// sanitized, stored beside the feed's content and answered. The item's `full_content` then
/// carries it. A failure is answered and changes nothing.
#[utoipa::path(post, path = "/items/{id}/full-content", tag = "items",
    params(("id" = i64, Path, description = "The item's id")),
    responses(
        (status = 200, description = "The article, stored", body = FullContentView),
        (status = 404, description = "No such item among the user's subscriptions", body = ErrorBody),
        (status = 400, description = "The item has no link to a page (`no_article_link`), or its page could not be fetched or held no article (`full_text_unavailable`, category `feed`)", body = ErrorBody),
    ))]
async fn load_full_content(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<FullContentView>> {
    // Only items of the user's own subscriptions.
    state.store.item(auth.user.id, id).await?;
    let found = match state.fetcher.load_full_text(id).await {
        Ok(found) => found,
        Err(LoadError::Page(error)) => return Err(page_error(error)),
        Err(LoadError::Store(error)) => return Err(error.into()),
    };
    let stored = state.store.full_content(id).await?;
    let mut content = Some(found.article.html);
    crate::base::items::proxy_images(&state, &mut content);
    Ok(Json(FullContentView {
        item_id: id,
        full_content: content.unwrap_or_default(),
        full_content_fetched_at: time(stored.map_or_else(
            || chrono::Utc::now().timestamp(),
            |stored| stored.fetched_at,
        )),
        source_url: found.source_url.to_string(),
        text_chars: found.article.text_chars as i64,
    }))
}
