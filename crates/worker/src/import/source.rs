//! What the clients of other readers' APIs share: one HTTP client, and the errors that say
//! what went wrong and what to do.

use std::time::Duration;

use super::HistoryError;

/// How long one request to the other reader may take (a page of a large account's items can
/// be slow to build).
const TIMEOUT: Duration = Duration::from_secs(120);

/// Items read from one reader at most, so that a huge account cannot exhaust memory.
pub const MAX_ITEMS: usize = 200_000;

/// The HTTP client of an import. It talks to the server the person names (their old reader,
/// often on their own network), so it is not the feeds' guarded client; the server's import
/// job checks the address with the feeds' guard before it starts one.
pub(crate) fn http_client() -> Result<reqwest::Client, HistoryError> {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("tidings/", env!("CARGO_PKG_VERSION"), " (import)"))
        .build()
        .map_err(|error| HistoryError::Source(format!("no HTTP client: {error}")))
}

/// The error of a request that got no answer.
pub(crate) fn unreachable(url: &str, error: &reqwest::Error) -> HistoryError {
    HistoryError::Source(format!(
        "{url} could not be reached: {error}; check the address and that the server is up"
    ))
}

/// The JSON of an answer, or an error naming the URL.
pub(crate) async fn json_of(
    url: &str,
    response: reqwest::Response,
) -> Result<serde_json::Value, HistoryError> {
    response
        .json()
        .await
        .map_err(|error| HistoryError::Source(format!("{url} answered no JSON: {error}")))
}
