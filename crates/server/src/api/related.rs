//! Related items (F44): the items of the user's subscriptions most similar to an item, by
//! the cosine of their vectors (`crate::related`).

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path, Query};
use crate::base::items::{
    ItemSummaryView, add_popularity, add_tags, add_translated_titles, proxy_item,
};
use crate::base::state::AppState;

/// Related items answered when `limit` is not given.
pub const DEFAULT_RELATED: i64 = 10;
/// The most related items one request answers.
pub const MAX_RELATED: i64 = 50;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(related_items))
}

/// The parameters of related items.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RelatedParams {
    /// Items to answer, 1 to 50 (default 10).
    pub limit: Option<i64>,
}

/// A related item: the listing's fields and how similar it is.
#[derive(Debug, Serialize, ToSchema)]
pub struct RelatedItemView {
    /// The item, as listings show it.
    #[serde(flatten)]
    pub item: ItemSummaryView,
    /// How similar it is to the item asked about: the cosine of their vectors, up to 1.
    pub score: f64,
}

/// Items related to an item.
#[derive(Debug, Serialize, ToSchema)]
pub struct RelatedList {
    /// Most similar first; empty while the item has no vector yet (moments after it arrives).
    pub items: Vec<RelatedItemView>,
}

/// The items of the user's own subscriptions most similar to an item (never the item itself,
/// never another user's items), most similar first, each with its similarity. Vectors come
/// from the configured embeddings provider, or local term vectors by default.
#[utoipa::path(get, path = "/items/{id}/related", tag = "items",
    params(("id" = i64, Path, description = "The item's id"), RelatedParams),
    responses(
        (status = 200, body = RelatedList),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
        (status = 404, description = "The item is not one of the user's", body = ErrorBody),
    ))]
async fn related_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Query(params): Query<RelatedParams>,
) -> ApiResult<Json<RelatedList>> {
    let limit = params.limit.unwrap_or(DEFAULT_RELATED);
    if !(1..=MAX_RELATED).contains(&limit) {
        return Err(ApiError::validation(
            format!("limit must be 1 to {MAX_RELATED}, not {limit}"),
            "Ask for at most 50 related items.",
        ));
    }
    let related = state
        .related
        .find(&state.store, auth.user.id, id, limit as usize)
        .await?;
    let ids: Vec<i64> = related.iter().map(|r| r.item_id).collect();
    let mut items: Vec<ItemSummaryView> = state
        .store
        .item_summaries(auth.user.id, &ids)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    add_tags(&state, &mut items).await?;
    add_popularity(&state, &mut items).await?;
    add_translated_titles(&state, &auth, &mut items).await?;
    let items = items
        .into_iter()
        .filter_map(|mut item| {
            proxy_item(&state, &mut item);
            let score = related.iter().find(|r| r.item_id == item.id)?.score;
            Some(RelatedItemView {
                item,
                score: f64::from(score).clamp(-1.0, 1.0),
            })
        })
        .collect();
    Ok(Json(RelatedList { items }))
}
