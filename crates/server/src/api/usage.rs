//! Usage counts without personal data (F45): the reader reports that an item's original link
//! was opened or that a search settled, the server adds one to that day's count, and
//! administrators read the top items, tags and searches of a day or a range of days.
//!
//! Nothing here keeps who: the user is checked (a click counts only on an item of the user's
//! feeds) and forgotten. Searches are counted when the reader says the search settled, not in
//! `GET /items`: search-as-you-type sends a request for `r`, `ru`, `rus` and `rust`, and
//! infinite scroll one per page, and only the client knows which of them was the search the
//! person meant. The server cannot tell without remembering who typed what, which is what
//! these counts must not do.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use tidings_store::{MAX_PAGE_SIZE, UsageKind};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::{AdminAuth, Auth};
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path, Query};
use crate::base::search::parse_q;
use crate::base::state::AppState;
use crate::base::usage::today;

/// The longest range of days one report covers.
pub const MAX_REPORT_DAYS: i64 = 366;
/// Entries of each top list, by default.
pub const DEFAULT_TOP: i64 = 20;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(count_click))
        .routes(routes!(count_search))
        .routes(routes!(usage_report))
}

/// Count that the user opened the item's original link (one more click on the item today).
/// Only items of the user's own feeds count; who clicked is not kept. With
/// `TIDINGS_USAGE_COUNTS=false` nothing is stored and the answer is the same.
#[utoipa::path(post, path = "/items/{id}/click", tag = "usage",
    params(("id" = i64, Path, description = "The item's id")),
    responses(
        (status = 204, description = "Counted (or counting is off)"),
        (status = 404, description = "No such item among the user's subscriptions", body = ErrorBody),
    ))]
async fn count_click(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    if state.config.usage_counts {
        state
            .store
            .count_item_click(today(), auth.user.id, id)
            .await?;
    } else {
        // The same answer whether counting is on: 404 for an item that is not the user's.
        state.store.item(auth.user.id, id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A search the reader settled on.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettledSearch {
    /// The search as typed, in the language of `GET /items?q=`.
    pub q: String,
}

/// Count a search the reader settled on: the query is normalized as search reads it (case,
/// width and accents folded, words and phrases written one way), so `Rust` and `rust ` count
/// as one. Clients call this once per search the person meant (the web UI: when the results
/// stayed on screen for two seconds, or on Enter), not per keystroke or per page; `GET
/// /items?q=` counts nothing. With `TIDINGS_USAGE_COUNTS=false` nothing is stored.
#[utoipa::path(post, path = "/usage/searches", tag = "usage", request_body = SettledSearch,
    responses(
        (status = 204, description = "Counted (or counting is off)"),
        (status = 400, description = "Not a search `GET /items?q=` would accept", body = ErrorBody),
    ))]
async fn count_search(
    State(state): State<AppState>,
    _auth: Auth,
    Json(body): Json<SettledSearch>,
) -> ApiResult<StatusCode> {
    let query = parse_q(Some(&body.q))?.ok_or_else(|| {
        ApiError::validation(
            "q is empty: there is no search to count.",
            "Send the search the reader made, e.g. {\"q\": \"rust\"}.",
        )
    })?;
    if state.config.usage_counts {
        state
            .store
            .count_usage(today(), UsageKind::Search, &query.canonical())
            .await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Which days a report covers.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UsageReportParams {
    /// The last day of the report, `YYYY-MM-DD` in UTC (default: today).
    #[param(format = Date)]
    pub day: Option<String>,
    /// How many days, ending with `day`, the report adds up (1 to 366, default 1).
    pub days: Option<i64>,
    /// Entries of each top list (1 to 200, default 20).
    pub limit: Option<i64>,
}

/// Uses of each kind over the report's days.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageTotals {
    /// Original links opened.
    pub clicks: i64,
    /// Tag pages viewed.
    pub tag_views: i64,
    /// Searches made.
    pub searches: i64,
}

/// An item whose original link was opened.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClickedItemView {
    /// The item's id.
    pub item_id: i64,
    /// Its title (null when it has none or is no longer stored).
    pub title: Option<String>,
    /// Its link (null when it is no longer stored).
    pub url: Option<String>,
    /// Whether the item was deleted since (retention, an unfollowed feed); its count stays.
    pub deleted: bool,
    /// Times its link was opened.
    pub clicks: i64,
}

/// A tag whose page was viewed.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagViewsView {
    /// The tag's name.
    pub tag: String,
    /// Times its page was viewed.
    pub views: i64,
}

/// A search that was made.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchCountView {
    /// The search, normalized (lower case, accents and widths folded, one spelling).
    pub query: String,
    /// Times it was made.
    pub searches: i64,
}

/// The usage counts of a range of days: totals and the most used items, tags and searches.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageReport {
    /// Whether this server counts now (`TIDINGS_USAGE_COUNTS`). Counts made before it was
    /// turned off stay until they are pruned.
    pub enabled: bool,
    /// How many days counts are kept (`TIDINGS_USAGE_RETENTION_DAYS`).
    pub retention_days: i64,
    /// The report's first day, `YYYY-MM-DD` (UTC).
    pub first_day: String,
    /// The report's last day, `YYYY-MM-DD` (UTC).
    pub last_day: String,
    /// Uses of each kind over the days.
    pub totals: UsageTotals,
    /// The items whose links were opened most, most first.
    pub items: Vec<ClickedItemView>,
    /// The tags whose pages were viewed most, most first.
    pub tags: Vec<TagViewsView>,
    /// The searches made most, most first.
    pub searches: Vec<SearchCountView>,
}

/// The day number of a `YYYY-MM-DD` date.
fn parse_day(text: &str) -> ApiResult<i64> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .ok()
        .filter(|date| date.to_string() == text.trim())
        .map(|date| date.signed_duration_since(NaiveDate::default()).num_days())
        .ok_or_else(|| {
            ApiError::validation(
                format!("day {text:?} is not a date written YYYY-MM-DD"),
                "Use a day such as 2026-01-31, or leave day out for today.",
            )
        })
}

/// The `YYYY-MM-DD` of a day number.
fn format_day(day: i64) -> String {
    (NaiveDate::default() + chrono::Duration::days(day)).to_string()
}

/// The usage counts of a day, or of `days` days ending with `day`: totals, and the items
/// (with their titles), tags and searches used most (administrators only). The counts say
/// how often, never who.
#[utoipa::path(get, path = "/admin/usage", tag = "admin", params(UsageReportParams),
    responses(
        (status = 200, body = UsageReport),
        (status = 403, description = "Not an administrator", body = ErrorBody),
    ))]
async fn usage_report(
    State(state): State<AppState>,
    _admin: AdminAuth,
    Query(params): Query<UsageReportParams>,
) -> ApiResult<Json<UsageReport>> {
    let last = match params.day.as_deref() {
        Some(day) => parse_day(day)?,
        None => today(),
    };
    let days = params.days.unwrap_or(1);
    if !(1..=MAX_REPORT_DAYS).contains(&days) {
        return Err(ApiError::validation(
            format!("days must be 1 to {MAX_REPORT_DAYS}, not {days}"),
            "Ask for one day (days=1), a week (7) or a month (30).",
        ));
    }
    let limit = params.limit.unwrap_or(DEFAULT_TOP);
    if !(1..=MAX_PAGE_SIZE).contains(&limit) {
        return Err(ApiError::validation(
            format!("limit must be 1 to {MAX_PAGE_SIZE}, not {limit}"),
            "Ask for fewer entries, e.g. limit=20.",
        ));
    }
    let first = last - days + 1;
    let store = &state.store;
    let totals = store.usage_totals(first, last).await?;
    let total = |kind| totals.get(&kind).copied().unwrap_or(0);
    let items = store.top_clicked_items(first, last, limit).await?;
    let tags = store
        .top_usage(UsageKind::TagView, first, last, limit)
        .await?;
    let searches = store
        .top_usage(UsageKind::Search, first, last, limit)
        .await?;
    Ok(Json(UsageReport {
        enabled: state.config.usage_counts,
        retention_days: i64::from(state.config.usage_retention_days),
        first_day: format_day(first),
        last_day: format_day(last),
        totals: UsageTotals {
            clicks: total(UsageKind::Click),
            tag_views: total(UsageKind::TagView),
            searches: total(UsageKind::Search),
        },
        items: items
            .into_iter()
            .map(|item| ClickedItemView {
                item_id: item.item_id,
                title: item.title,
                url: item.url,
                deleted: !item.exists,
                clicks: item.count,
            })
            .collect(),
        tags: tags
            .into_iter()
            .map(|tag| TagViewsView {
                tag: tag.key,
                views: tag.count,
            })
            .collect(),
        searches: searches
            .into_iter()
            .map(|search| SearchCountView {
                query: search.key,
                searches: search.count,
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_read_and_written_as_dates() {
        assert_eq!(parse_day("1970-01-01").unwrap(), 0);
        assert_eq!(parse_day("2026-11-25").unwrap(), 20_782);
        assert_eq!(format_day(20_782), "2026-11-25");
        assert_eq!(format_day(0), "1970-01-01");
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "yesterday",
            "",
            "2026-1-5",
            "+2026-01-05",
        ] {
            assert!(parse_day(bad).is_err(), "{bad:?}");
        }
    }
}
