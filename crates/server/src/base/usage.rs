//! The day usage counts go to, and the count of a tag page's view, which the tag listing makes
//! as it answers (the counts' routes and report are `crate::api::usage`'s).

use tidings_store::{UsageKind, unix_now, usage_day};

use crate::base::state::AppState;

/// Today's day number (UTC), the day a count made now goes to.
pub(crate) fn today() -> i64 {
    usage_day(unix_now())
}

/// Counts one view of a tag's page today, when counting is on. A failure to count is logged,
/// not answered: the page the reader asked for matters more than its count.
pub async fn count_tag_view(state: &AppState, tag: &str) {
    if !state.config.usage_counts {
        return;
    }
    if let Err(error) = state
        .store
        .count_usage(today(), UsageKind::TagView, tag)
        .await
    {
        tracing::warn!(%error, "a tag page view could not be counted");
    }
}
