//! Times as the APIs show and read them: RFC 3339 in UTC, to the second.

use crate::base::error::{ApiError, ApiResult};

/// Formats Unix seconds as RFC 3339 UTC, the API's time format.
pub fn time(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Parses an RFC 3339 query or body time into Unix seconds, as a validation error.
pub(crate) fn parse_time(name: &str, text: &str) -> ApiResult<i64> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp())
        .map_err(|_| {
            ApiError::validation(
                format!("{name} {text:?} is not an RFC 3339 time"),
                "Use a time such as 2026-01-31T08:00:00Z.",
            )
        })
}
