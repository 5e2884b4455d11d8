//! Tags with scores (F41): the user's most frequent tags, and the items with a tag (the tag
//! page). Items carry their own tags wherever they are listed (`crate::api::items`).

use axum::extract::State;
use serde::{Deserialize, Serialize};
use tidings_store::MAX_TOP_TAGS;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path, Query};
use crate::base::item_list::{self, ItemListParams};
use crate::base::items::ItemList;
use crate::base::state::AppState;
use crate::base::time::parse_time;

/// Tags `GET /tags` lists when `limit` is not given.
pub const DEFAULT_TOP_TAGS: i64 = 50;
/// How far back `GET /tags` counts when `since` is not given: 30 days.
pub const DEFAULT_TOP_TAGS_DAYS: i64 = 30;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(top_tags))
        .routes(routes!(tag_items))
}

/// The parameters of the top tags.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TopTagsParams {
    /// Count the items published at or after this time (RFC 3339); by default the last 30
    /// days.
    pub since: Option<String>,
    /// Tags to list, 1 to 200 (default 50).
    pub limit: Option<i64>,
}

/// A tag and how many of the user's items have it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagCountView {
    /// The tag's name (`GET /tags/{tag}/items` lists its items).
    pub name: String,
    /// Items of the user's subscriptions with the tag, published since the time asked about.
    pub count: i64,
}

/// The user's most frequent tags.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagList {
    /// Most items first, then by name.
    pub tags: Vec<TagCountView>,
}

/// The most frequent tags among the items of the user's own subscriptions, published since a
/// time (the last 30 days by default), most items first.
#[utoipa::path(get, path = "/tags", tag = "items", params(TopTagsParams),
    responses(
        (status = 200, body = TagList),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
    ))]
async fn top_tags(
    State(state): State<AppState>,
    auth: Auth,
    Query(params): Query<TopTagsParams>,
) -> ApiResult<Json<TagList>> {
    let limit = params.limit.unwrap_or(DEFAULT_TOP_TAGS);
    if !(1..=MAX_TOP_TAGS).contains(&limit) {
        return Err(ApiError::validation(
            format!("limit must be 1 to {MAX_TOP_TAGS}, not {limit}"),
            "Ask for at most 200 tags.",
        ));
    }
    let since = match params.since.as_deref() {
        Some(text) => parse_time("since", text)?,
        None => tidings_store::unix_now() - DEFAULT_TOP_TAGS_DAYS * 86_400,
    };
    let tags = state
        .store
        .top_tags(auth.user.id, Some(since), limit)
        .await?
        .into_iter()
        .map(|tag| TagCountView {
            name: tag.name,
            count: tag.count,
        })
        .collect();
    Ok(Json(TagList { tags }))
}

/// The user's items with a tag: the parameters and the answer of `GET /items` (filters,
/// search, `include=content`, cursor pagination), over the items tagged `tag`. The name is
/// read as tags are named (case, full-width forms and spacing do not matter); a tag no item
/// has lists nothing. Opening a known tag's page (its first page) counts one view of the tag
/// for the day (usage counts, F45: no record of who).
#[utoipa::path(get, path = "/tags/{tag}/items", tag = "items",
    params(("tag" = String, Path, description = "The tag's name"), ItemListParams),
    responses(
        (status = 200, body = ItemList),
        (status = 404, description = "The feed or group is not the user's", body = ErrorBody),
        (status = 400, description = "An empty tag, or a malformed parameter", body = ErrorBody),
    ))]
async fn tag_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(tag): Path<String>,
    Query(params): Query<ItemListParams>,
) -> ApiResult<Json<ItemList>> {
    let name = tidings_tags::normalize_tag(&tag).ok_or_else(|| {
        ApiError::validation(
            "The tag's name is empty.",
            "Name a tag, e.g. /api/v1/tags/rust/items; GET /api/v1/tags lists them.",
        )
    })?;
    let tag_id = state.store.tag_id(&name).await?;
    // A view of the page is its first page (F45); later pages are the same view scrolled.
    let first_page = params.cursor.is_none();
    // A name no item ever had lists nothing, through the same checks of the parameters: ids
    // start at 1 on both engines, so 0 names no tag.
    let listed = item_list::list(&state, &auth, params, Some(tag_id.unwrap_or(0))).await?;
    if first_page && tag_id.is_some() {
        crate::base::usage::count_tag_view(&state, &name).await;
    }
    Ok(listed)
}
