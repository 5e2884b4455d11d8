//! Bookmarks (F34): a snapshot of an item (title, link, content, feed name, date) that stays
//! when the item or its feed is deleted.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_store::Bookmark;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiResult, ErrorBody};
use crate::base::extract::{Json, Path, Query};
use crate::base::search;
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_bookmarks, create_bookmark))
        .routes(routes!(get_bookmark, delete_bookmark))
}

/// A bookmark's snapshot.
#[derive(Debug, Serialize, ToSchema)]
pub struct BookmarkView {
    /// The bookmark's id.
    pub id: i64,
    /// The item it was taken from; null once that item is deleted.
    pub item_id: Option<i64>,
    /// The item's title.
    pub title: Option<String>,
    /// The item's link.
    pub url: Option<String>,
    /// The feed's name as the user saw it.
    pub feed_title: Option<String>,
    /// When the item was published.
    pub published_at: Option<String>,
    /// When it was bookmarked.
    pub created_at: String,
    /// The item's language as it was when bookmarked, a BCP 47 tag (`en`, `ja`), or null
    /// when nothing told (issue 37).
    #[schema(example = "ja")]
    pub language: Option<String>,
    /// The sanitized content; only in the single-bookmark answers, not in the list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl BookmarkView {
    fn new(bookmark: Bookmark, with_content: bool) -> BookmarkView {
        BookmarkView {
            id: bookmark.id,
            item_id: bookmark.item_id,
            title: bookmark.title,
            url: bookmark.url,
            feed_title: bookmark.feed_title,
            published_at: bookmark.published_at.map(time),
            created_at: time(bookmark.created_at),
            language: bookmark.language,
            content: if with_content { bookmark.content } else { None },
        }
    }
}

/// The bookmarks.
#[derive(Debug, Serialize, ToSchema)]
pub struct BookmarkList {
    /// Newest first, without content.
    pub bookmarks: Vec<BookmarkView>,
}

/// A bookmark, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct BookmarkEnvelope {
    /// The bookmark, with its content.
    pub bookmark: BookmarkView,
}

/// The item to bookmark.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBookmark {
    /// An item of one of the user's subscriptions.
    pub item_id: i64,
}

/// The parameters of the bookmark list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BookmarkListParams {
    /// Only bookmarks whose snapshot (title and text) matches this search, in the language of
    /// `GET /items?q=` (words, `"phrases"`, `-excluded`).
    pub q: Option<String>,
}

/// The signed-in user's bookmarks, or with `q` those whose snapshot matches the search.
#[utoipa::path(get, path = "/bookmarks", tag = "bookmarks", params(BookmarkListParams),
    responses(
        (status = 200, body = BookmarkList),
        (status = 401, body = ErrorBody),
        (status = 400, description = "A malformed search", body = ErrorBody),
    ))]
async fn list_bookmarks(
    State(state): State<AppState>,
    auth: Auth,
    Query(params): Query<BookmarkListParams>,
) -> ApiResult<Json<BookmarkList>> {
    let bookmarks = match search::parse_q(params.q.as_deref())? {
        Some(query) => state.store.search_bookmarks(auth.user.id, &query).await?,
        None => state.store.list_bookmarks(auth.user.id).await?,
    };
    Ok(Json(BookmarkList {
        bookmarks: bookmarks
            .into_iter()
            .map(|b| BookmarkView::new(b, false))
            .collect(),
    }))
}

/// Bookmark an item: 201 with the snapshot, or 200 with the existing bookmark when the item
/// is bookmarked already.
#[utoipa::path(post, path = "/bookmarks", tag = "bookmarks", request_body = CreateBookmark,
    responses(
        (status = 201, description = "Bookmarked", body = BookmarkEnvelope),
        (status = 200, description = "Already bookmarked", body = BookmarkEnvelope),
        (status = 404, description = "No such item of the user's", body = ErrorBody),
    ))]
async fn create_bookmark(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<CreateBookmark>,
) -> ApiResult<(StatusCode, Json<BookmarkEnvelope>)> {
    let (bookmark, created) = state
        .store
        .create_bookmark(auth.user.id, body.item_id)
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(BookmarkEnvelope {
            bookmark: BookmarkView::new(bookmark, true),
        }),
    ))
}

/// One bookmark with its content.
#[utoipa::path(get, path = "/bookmarks/{id}", tag = "bookmarks",
    params(("id" = i64, Path, description = "The bookmark's id")),
    responses((status = 200, body = BookmarkEnvelope), (status = 404, body = ErrorBody)))]
async fn get_bookmark(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<BookmarkEnvelope>> {
    let bookmark = state.store.bookmark(auth.user.id, id).await?;
    Ok(Json(BookmarkEnvelope {
        bookmark: BookmarkView::new(bookmark, true),
    }))
}

/// Delete a bookmark.
#[utoipa::path(delete, path = "/bookmarks/{id}", tag = "bookmarks",
    params(("id" = i64, Path, description = "The bookmark's id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn delete_bookmark(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.delete_bookmark(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
