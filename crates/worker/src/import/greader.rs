//! A Google Reader API client (FreshRSS, Miniflux, Inoreader-compatible servers, another
//! tidings), reading what [`super::apply_history`] imports: subscriptions with folders, the
//! starred stream, and the reading list with each item's read state and labels.

use std::collections::HashMap;

use serde_json::Value;

use super::HistoryError;
use super::history::{History, HistoryFeed, greader_item};
use super::source::{MAX_ITEMS, http_client, json_of, unreachable};

/// Items asked for per page of a stream.
const PAGE: usize = 1000;

/// A signed-in session with a Google Reader API server.
#[derive(Debug, Clone)]
pub struct GReaderClient {
    client: reqwest::Client,
    base: String,
    auth: String,
}

impl GReaderClient {
    /// Signs in at `base` (the API's root, such as `https://rss.example/api/greader.php`) with
    /// `ClientLogin`; through `guard` when given (see [`super::HistorySource::read`]).
    pub async fn login(
        base: &str,
        login: &str,
        password: &str,
        guard: Option<&tidings_fetch::GuardedClient>,
    ) -> Result<GReaderClient, HistoryError> {
        let base = base.trim().trim_end_matches('/').to_owned();
        let client = http_client(&base, guard)?;
        let response = client
            .post(format!("{base}/accounts/ClientLogin"))
            .form(&[("Email", login), ("Passwd", password)])
            .send()
            .await
            .map_err(|error| unreachable(&base, &error))?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        if !status.is_success() {
            return Err(HistoryError::Source(format!(
                "{base} refused the sign-in as {login:?} (HTTP {status}): check the login and \
                 the API password (FreshRSS: Settings > Profile > API password)"
            )));
        }
        let auth = body
            .lines()
            .find_map(|line| line.strip_prefix("Auth="))
            .map(str::trim)
            .filter(|auth| !auth.is_empty())
            .ok_or_else(|| {
                HistoryError::Source(format!(
                    "{base}/accounts/ClientLogin answered no Auth line: is this a Google \
                     Reader API address (FreshRSS: …/api/greader.php)?"
                ))
            })?;
        Ok(GReaderClient {
            client,
            base,
            auth: auth.to_owned(),
        })
    }

    /// GETs `path` (under `/reader/api/0/`) as JSON.
    async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, HistoryError> {
        let url = format!("{}/reader/api/0/{path}", self.base);
        let response = self
            .client
            .get(&url)
            .query(query)
            .query(&[("output", "json")])
            .header("Authorization", format!("GoogleLogin auth={}", self.auth))
            .send()
            .await
            .map_err(|error| unreachable(&url, &error))?;
        let status = response.status();
        if !status.is_success() {
            return Err(HistoryError::Source(format!(
                "{url} answered HTTP {status}"
            )));
        }
        json_of(&url, response).await
    }

    /// Reads the account's subscriptions, starred items and reading list.
    pub async fn history(&self) -> Result<History, HistoryError> {
        let list = self.get("subscription/list", &[]).await?;
        let mut history = History::default();
        let mut feed_urls: HashMap<String, String> = HashMap::new();
        for subscription in list
            .get("subscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some((id, feed)) = subscription_feed(subscription) {
                feed_urls.insert(id, feed.url.clone());
                history.feeds.push(feed);
            }
        }
        let mut seen = HashMap::new();
        for (stream, reading_list) in [
            ("user/-/state/com.google/starred", false),
            ("user/-/state/com.google/reading-list", true),
        ] {
            for value in self.stream(stream).await? {
                let Some(mut item) = greader_item(&value, &feed_urls) else {
                    continue;
                };
                if reading_list {
                    // The reading list holds every item: one without the read state is unread.
                    item.read = Some(item.read.unwrap_or(false));
                }
                history.add_item(item, &mut seen);
            }
        }
        Ok(history)
    }

    /// Every item of `stream`, page after page (up to [`MAX_ITEMS`]).
    async fn stream(&self, stream: &str) -> Result<Vec<Value>, HistoryError> {
        let path = format!("stream/contents/{stream}");
        let mut items = Vec::new();
        let mut continuation: Option<String> = None;
        loop {
            let mut query = vec![("n", PAGE.to_string())];
            if let Some(continuation) = &continuation {
                query.push(("c", continuation.clone()));
            }
            let page = self.get(&path, &query).await?;
            let page_items = page.get("items").and_then(Value::as_array);
            let count = page_items.map_or(0, Vec::len);
            items.extend(page_items.into_iter().flatten().cloned());
            continuation = page
                .get("continuation")
                .and_then(Value::as_str)
                .filter(|next| !next.is_empty())
                .map(str::to_owned);
            if continuation.is_none() || count == 0 || items.len() >= MAX_ITEMS {
                return Ok(items);
            }
        }
    }
}

/// A subscription of `subscription/list`: its stream id and the feed.
fn subscription_feed(subscription: &Value) -> Option<(String, HistoryFeed)> {
    let text = |key: &str| {
        subscription
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let id = text("id")?;
    let url = text("url").or_else(|| id.strip_prefix("feed/").map(str::to_owned))?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return None;
    }
    let folder = subscription
        .get("categories")
        .and_then(Value::as_array)
        .and_then(|categories| categories.first())
        .and_then(|category| {
            category
                .get("label")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| {
                    category
                        .get("id")
                        .and_then(Value::as_str)
                        .and_then(|id| id.split_once("/label/"))
                        .map(|(_, name)| name.to_owned())
                })
        })
        .filter(|name| !name.trim().is_empty());
    Some((
        id,
        HistoryFeed {
            url,
            title: text("title"),
            folder,
            site_url: text("htmlUrl"),
            ..HistoryFeed::default()
        },
    ))
}
