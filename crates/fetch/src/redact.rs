//! Credentials out of URLs before they are logged or shown (issue 31): feed URLs carry private
//! tokens in their query or user part, webhook URLs carry the webhook's secret in their path,
//! database URLs their password. One helper, here at the bottom of the crates that fetch, so
//! that the worker, the server, the store and the command line redact alike.

use url::Url;

/// What stands in for a hidden value.
const HIDDEN: &str = "***";

/// Path segments after which a webhook's path holds its secret: Discord's
/// `/api/webhooks/ID/TOKEN`, Slack's `/services/T…/B…/SECRET`, and the `hooks`/`webhook`
/// paths many services use (`/hooks/TOKEN`).
const WEBHOOK_MARKERS: [&str; 5] = ["webhooks", "webhook", "hooks", "hook", "services"];

/// `url` with its credentials hidden, for logs and messages: a password (or a user name
/// without one) becomes `***`, so does the value of every query parameter (private feeds put
/// tokens under any name: `?u=`, `?feed_key=`; the names stay, to tell URLs apart), and the
/// last path segment after a webhook marker (`/api/webhooks/1/***`).
/// Text that is not a URL keeps its shape with whatever sits between `://` and `@` hidden.
pub fn redact_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(parsed) => redact_parsed(parsed),
        Err(_) => redact_unparsed(url),
    }
}

fn redact_parsed(mut url: Url) -> String {
    if url.password().is_some() {
        let _ = url.set_password(Some(HIDDEN));
    } else if !url.username().is_empty() {
        let _ = url.set_username(HIDDEN);
    }
    if url.query().is_some() {
        let pairs: Vec<(String, &str)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if value.is_empty() { "" } else { HIDDEN };
                (name.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    if let Some(path) = redacted_webhook_path(url.path()) {
        url.set_path(&path);
    }
    url.to_string().replace("%2A%2A%2A", HIDDEN)
}

/// The path with its last segment hidden when a webhook marker comes before it.
fn redacted_webhook_path(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('/').collect();
    let marker = segments
        .iter()
        .position(|s| WEBHOOK_MARKERS.contains(&s.to_ascii_lowercase().as_str()))?;
    let last = segments.iter().rposition(|s| !s.is_empty())?;
    if last <= marker {
        return None;
    }
    let mut kept: Vec<&str> = segments;
    kept[last] = HIDDEN;
    Some(kept.join("/"))
}

/// Not parseable as a URL: hide whatever stands between "scheme://" and the last "@" (past
/// the user name, when there is a password).
fn redact_unparsed(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            let user = credentials
                .find(':')
                .map_or(String::new(), |colon| format!("{}:", &credentials[..colon]));
            format!("{}{user}{HIDDEN}{}", &url[..scheme_end + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn credentials_are_hidden_wherever_they_sit() {
        let cases = [
            (
                "https://ann:hunter2@example.com/feed?token=s3cret#x",
                "https://ann:***@example.com/feed?token=***#x",
            ),
            (
                "https://ghp_abc123@example.com/feed",
                "https://***@example.com/feed",
            ),
            (
                "https://example.com/feed?u=k1&X-Private-Token=t2&empty=",
                "https://example.com/feed?u=***&X-Private-Token=***&empty=",
            ),
            (
                "https://discord.com/api/webhooks/123/AbC-dEf_123?thread_id=5",
                "https://discord.com/api/webhooks/123/***?thread_id=***",
            ),
            (
                "https://hooks.slack.com/services/T1/B2/secret",
                "https://hooks.slack.com/services/T1/B2/***",
            ),
            (
                "http://10.0.0.5:8080/hooks/abcdef",
                "http://10.0.0.5:8080/hooks/***",
            ),
            (
                "https://example.com/feed.xml",
                "https://example.com/feed.xml",
            ),
            (
                "https://example.com/webhooks/",
                "https://example.com/webhooks/",
            ),
            (
                "postgres://tidings:pw@db:5432/tidings",
                "postgres://tidings:***@db:5432/tidings",
            ),
            (
                "postgres://tidings@db/tidings?password=pw",
                "postgres://***@db/tidings?password=***",
            ),
            ("sqlite://u:p@ss@", "sqlite://u:***@"),
            ("not a url", "not a url"),
        ];
        for (url, redacted) in cases {
            assert_eq!(redact_url(url), redacted, "{url}");
        }
    }
}
