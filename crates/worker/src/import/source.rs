//! What the clients of other readers' APIs share: one HTTP client, and the errors that say
//! what went wrong and what to do.

use std::time::Duration;

use tidings_fetch::GuardedClient;

use super::HistoryError;

/// How long one request to the other reader may take (a page of a large account's items can
/// be slow to build).
const TIMEOUT: Duration = Duration::from_secs(120);

/// Items read from one reader at most, so that a huge account cannot exhaust memory.
pub const MAX_ITEMS: usize = 200_000;

/// The HTTP client of an import from the reader at `base`. With `guard` (an import the
/// server runs for a user), the address and every connection go through the feeds' address
/// guard, as a feed's would; without it (the operator's `tidings import`), the reader may be
/// anywhere the operator can reach, their own network included.
pub(crate) fn http_client(
    base: &str,
    guard: Option<&GuardedClient>,
) -> Result<reqwest::Client, HistoryError> {
    let builder = match guard {
        Some(guard) => {
            let url = url::Url::parse(base).map_err(|error| {
                HistoryError::Source(format!("{base:?} is not a web address: {error}"))
            })?;
            guard
                .config()
                .address_policy
                .check_url(&url)
                .map_err(|refusal| {
                    HistoryError::Source(format!(
                        "{base} is not an address this server may reach ({refusal}); if it \
                     should, ask its administrator to allow it"
                    ))
                })?;
            guard.guarded_builder()
        }
        None => reqwest::Client::builder(),
    };
    builder
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
