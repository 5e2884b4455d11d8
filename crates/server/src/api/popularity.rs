//! Popularity (F40): every item carries its bookmark count (`popularity`, null while unknown),
//! and the hot list orders the user's recent items by that count.

use axum::extract::State;
use serde::Deserialize;
use tidings_store::{HotCursor, HotQuery, ItemFilter, ItemQuery};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Query};
use crate::base::item_list::{page_limit, parse_filter};
use crate::base::items::{
    ItemList, ItemSummaryView, add_generated_summaries, add_tags, add_translated_titles, proxy_item,
};
use crate::base::state::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(hot_items))
}

/// The windows the hot list takes, with their length in seconds.
pub const HOT_WINDOWS: &[(&str, i64)] =
    &[("24h", 86_400), ("7d", 7 * 86_400), ("30d", 30 * 86_400)];
/// The window when none is given.
pub const DEFAULT_HOT_WINDOW: &str = "24h";
/// The minimum count when none is given: an item nobody bookmarked is not hot.
pub const DEFAULT_MIN_COUNT: i64 = 1;
/// The largest minimum count accepted.
pub const MAX_MIN_COUNT: i64 = 1_000_000_000;

/// The window names, for the OpenAPI document.
pub fn window_names() -> Vec<&'static str> {
    HOT_WINDOWS.iter().map(|(name, _)| *name).collect()
}

/// The parameters of the hot list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct HotParams {
    /// Items published in the last `24h` (default), `7d` or `30d`.
    pub window: Option<String>,
    /// Only items with at least this many bookmarks (default 1).
    pub min_count: Option<i64>,
    /// Only this feed's items.
    pub feed_id: Option<i64>,
    /// Only items of this group's subscriptions.
    pub group_id: Option<i64>,
    /// `all` (default here), `unread` or `starred`.
    pub filter: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1 to 200 (default 50).
    pub limit: Option<i64>,
}

fn hot_query(params: HotParams, now: i64) -> ApiResult<HotQuery> {
    let window = params
        .window
        .as_deref()
        .map(str::trim)
        .unwrap_or(DEFAULT_HOT_WINDOW);
    let Some((_, seconds)) = HOT_WINDOWS.iter().find(|(name, _)| *name == window) else {
        return Err(ApiError::validation(
            format!("window must be 24h, 7d or 30d, not {window:?}"),
            "Use window=24h, window=7d or window=30d.",
        ));
    };
    let min_count = params.min_count.unwrap_or(DEFAULT_MIN_COUNT);
    if !(0..=MAX_MIN_COUNT).contains(&min_count) {
        return Err(ApiError::validation(
            format!("min_count must be 0 to {MAX_MIN_COUNT}, not {min_count}"),
            "Use a count such as min_count=5, or 0 to include items nobody bookmarked.",
        ));
    }
    let filter = parse_filter(params.filter.as_deref(), ItemFilter::All)?;
    let limit = page_limit(params.limit)?;
    let cursor = match params.cursor.as_deref() {
        None => None,
        Some(text) => Some(HotCursor::decode(text).ok_or_else(|| {
            ApiError::validation(
                "The cursor is not one this server gave out for the hot list.",
                "Pass next_cursor from the previous page unchanged, or leave it out.",
            )
        })?),
    };
    Ok(HotQuery {
        listing: ItemQuery {
            feed_id: params.feed_id,
            group_id: params.group_id,
            filter,
            since: Some(now - seconds),
            limit,
            ..ItemQuery::default()
        },
        min_count,
        cursor,
    })
}

/// What is hot: the user's items published in the window (`24h`, `7d` or `30d`) whose links
/// were bookmarked at least `min_count` times, most bookmarked first, then newest. Only items
/// with a known count are listed. Takes the listing's `feed_id`, `group_id`, `filter`
/// (default `all` here), `limit` and `cursor`; follow `next_cursor` while `has_more`. The
/// counts come from the worker's count source (`TIDINGS_POPULARITY`); with it off the list is
/// empty.
#[utoipa::path(get, path = "/items/hot", tag = "items", params(HotParams),
    responses(
        (status = 200, body = ItemList),
        (status = 404, description = "The feed or group is not the user's", body = ErrorBody),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
    ))]
async fn hot_items(
    State(state): State<AppState>,
    auth: Auth,
    Query(params): Query<HotParams>,
) -> ApiResult<Json<ItemList>> {
    let query = hot_query(params, chrono::Utc::now().timestamp())?;
    let page = state.store.hot_items(auth.user.id, &query).await?;
    let mut items: Vec<ItemSummaryView> = page
        .items
        .into_iter()
        .map(|hot| {
            let mut item = ItemSummaryView::from(hot.item);
            item.popularity = Some(hot.popularity.into());
            proxy_item(&state, &mut item);
            item
        })
        .collect();
    add_tags(&state, &mut items).await?;
    add_generated_summaries(&state, &mut items).await?;
    add_translated_titles(&state, &auth, &mut items).await?;
    Ok(Json(ItemList {
        has_more: page.next_cursor.is_some(),
        next_cursor: page.next_cursor.map(|cursor| cursor.encode()),
        items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_with_their_defaults() {
        let query = hot_query(HotParams::default(), 1_000_000).unwrap();
        assert_eq!(query.listing.since, Some(1_000_000 - 86_400));
        assert_eq!(query.min_count, 1);
        assert_eq!(query.listing.filter, ItemFilter::All);
        assert_eq!(query.listing.limit, 50);
        let month = HotParams {
            window: Some("30d".into()),
            min_count: Some(0),
            ..HotParams::default()
        };
        assert_eq!(
            hot_query(month, 10_000_000).unwrap().listing.since,
            Some(10_000_000 - 30 * 86_400)
        );
        for bad in [
            HotParams {
                window: Some("1h".into()),
                ..HotParams::default()
            },
            HotParams {
                min_count: Some(-1),
                ..HotParams::default()
            },
            HotParams {
                filter: Some("hot".into()),
                ..HotParams::default()
            },
            HotParams {
                limit: Some(201),
                ..HotParams::default()
            },
            HotParams {
                cursor: Some("abc".into()),
                ..HotParams::default()
            },
        ] {
            assert!(hot_query(bad, 0).is_err());
        }
    }
}
