//! Channel kinds, their URL forms, and where Discord and Slack are reached.

use url::{Position, Url};

/// The longest webhook URL accepted.
pub const MAX_URL_CHARS: usize = 2048;
/// Discord's webhook host, the default of [`Endpoints::discord`].
pub const DISCORD_BASE_URL: &str = "https://discord.com";
/// Slack's incoming-webhook host, the default of [`Endpoints::slack`].
pub const SLACK_BASE_URL: &str = "https://hooks.slack.com";
/// The host names Discord's webhook URLs are given with (the app copies `discord.com`; older
/// webhooks and the test clients use the others).
const DISCORD_HOSTS: [&str; 6] = [
    "discord.com",
    "discordapp.com",
    "ptb.discord.com",
    "canary.discord.com",
    "ptb.discordapp.com",
    "canary.discordapp.com",
];
/// Slack's incoming-webhook host.
const SLACK_HOST: &str = "hooks.slack.com";

/// What speaks at the other end of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A Discord channel's webhook: embeds.
    Discord,
    /// A Slack incoming webhook: `text` and blocks.
    Slack,
    /// Any HTTP(S) endpoint that takes tidings' own JSON.
    Generic,
}

impl Kind {
    /// The kind's name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Discord => "discord",
            Kind::Slack => "slack",
            Kind::Generic => "generic",
        }
    }

    /// The kind named `name` (as [`Kind::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Kind> {
        match name {
            "discord" => Some(Kind::Discord),
            "slack" => Some(Kind::Slack),
            "generic" => Some(Kind::Generic),
            _ => None,
        }
    }
}

/// Why a webhook URL was refused. The messages say what the URL should look like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not a URL at all.
    #[error("the webhook URL is not a URL: {0}")]
    Invalid(String),
    /// Longer than [`MAX_URL_CHARS`].
    #[error("the webhook URL is longer than {MAX_URL_CHARS} characters")]
    TooLong,
    /// Neither http nor https (or http for Discord and Slack, which only take https).
    #[error("the webhook URL must start with {expected}, not {scheme}://")]
    Scheme {
        /// The scheme given.
        scheme: String,
        /// What the kind takes.
        expected: &'static str,
    },
    /// `user:password@` in the URL.
    #[error("the webhook URL must not carry a user name or password")]
    Credentials,
    /// A Discord channel whose URL is not Discord's.
    #[error(
        "a Discord webhook URL looks like https://discord.com/api/webhooks/{{id}}/{{token}} \
         (Server Settings → Integrations → Webhooks → Copy Webhook URL); {0}"
    )]
    Discord(String),
    /// A Slack channel whose URL is not Slack's.
    #[error(
        "a Slack webhook URL looks like https://hooks.slack.com/services/T…/B…/… \
         (an app's Incoming Webhooks page); {0}"
    )]
    Slack(String),
}

/// Checks a channel's URL against its kind's form and answers it parsed. Generic URLs are any
/// http(s) URL; whether their address may be reached is the SSRF guard's decision, at each
/// delivery (a name may resolve elsewhere tomorrow).
pub fn validate_url(kind: Kind, raw: &str) -> Result<Url, UrlError> {
    let raw = raw.trim();
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(UrlError::TooLong);
    }
    let url = Url::parse(raw).map_err(|e| UrlError::Invalid(format!("{e}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Credentials);
    }
    let expected = match kind {
        Kind::Generic => "http:// or https://",
        Kind::Discord | Kind::Slack => "https://",
    };
    let scheme_ok = match kind {
        Kind::Generic => matches!(url.scheme(), "http" | "https"),
        Kind::Discord | Kind::Slack => url.scheme() == "https",
    };
    if !scheme_ok {
        return Err(UrlError::Scheme {
            scheme: url.scheme().to_owned(),
            expected,
        });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::Invalid("it has no host".into()));
    }
    match kind {
        Kind::Generic => {}
        Kind::Discord => check_discord(&url)?,
        Kind::Slack => check_slack(&url)?,
    }
    Ok(url)
}

fn host_of(url: &Url) -> String {
    url.host_str()
        .unwrap_or_default()
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

fn check_discord(url: &Url) -> Result<(), UrlError> {
    let host = host_of(url);
    if !DISCORD_HOSTS.contains(&host.as_str()) {
        return Err(UrlError::Discord(format!("this one's host is {host}")));
    }
    if url.port().is_some() {
        return Err(UrlError::Discord("this one names a port".into()));
    }
    let segments: Vec<&str> = url.path().trim_end_matches('/').split('/').collect();
    // "", "api", ["v10",] "webhooks", id, token
    let rest: &[&str] = match segments.as_slice() {
        ["", "api", "webhooks", rest @ ..] => rest,
        ["", "api", version, "webhooks", rest @ ..]
            if version.strip_prefix('v').is_some_and(is_digits) =>
        {
            rest
        }
        _ => {
            return Err(UrlError::Discord(
                "this one's path does not start with /api/webhooks/".into(),
            ));
        }
    };
    match rest {
        [id, token] if is_digits(id) && is_token(token) => {}
        _ => {
            return Err(UrlError::Discord(
                "this one's path does not end with a numeric id and a token".into(),
            ));
        }
    }
    // Discord takes `thread_id` (post into a thread) and `wait`; nothing else means anything.
    if let Some((name, _)) = url
        .query_pairs()
        .find(|(name, _)| name != "thread_id" && name != "wait")
    {
        return Err(UrlError::Discord(format!(
            "its query parameter {name} is not one Discord takes"
        )));
    }
    Ok(())
}

fn check_slack(url: &Url) -> Result<(), UrlError> {
    let host = host_of(url);
    if host != SLACK_HOST {
        return Err(UrlError::Slack(format!("this one's host is {host}")));
    }
    if url.port().is_some() {
        return Err(UrlError::Slack("this one names a port".into()));
    }
    let segments: Vec<&str> = url.path().trim_end_matches('/').split('/').collect();
    match segments.as_slice() {
        ["", "services", team, bot, token]
            if [team, bot, token]
                .iter()
                .all(|s| is_token(s) && !s.contains('-')) => {}
        ["", "services", ..] => Err(UrlError::Slack(
            "this one's path does not have the three parts after /services/".into(),
        ))?,
        _ => Err(UrlError::Slack(
            "this one's path does not start with /services/".into(),
        ))?,
    }
    if url.query().is_some() {
        return Err(UrlError::Slack("this one has a query".into()));
    }
    Ok(())
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.len() <= 25 && text.bytes().all(|b| b.is_ascii_digit())
}

fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 200
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Where Discord and Slack are reached. A channel's URL keeps the form the service gave
/// (`https://discord.com/api/webhooks/…`); deliveries go to the same path and query under
/// these bases, which are the services' own by default. Pointing them elsewhere serves tests
/// (stand-in servers on 127.0.0.1) and installations that must go through a relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// Discord's base (`TIDINGS_WEBHOOK_DISCORD_BASE_URL`), [`DISCORD_BASE_URL`] by default.
    pub discord: Url,
    /// Slack's base (`TIDINGS_WEBHOOK_SLACK_BASE_URL`), [`SLACK_BASE_URL`] by default.
    pub slack: Url,
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            discord: Url::parse(DISCORD_BASE_URL).expect("a valid constant URL"),
            slack: Url::parse(SLACK_BASE_URL).expect("a valid constant URL"),
        }
    }
}

impl Endpoints {
    /// Where a delivery to `url` (already validated for `kind`) is sent: the same path and
    /// query under the kind's base; a generic URL as it is.
    pub fn delivery_url(&self, kind: Kind, url: &Url) -> Url {
        let base = match kind {
            Kind::Generic => return url.clone(),
            Kind::Discord => &self.discord,
            Kind::Slack => &self.slack,
        };
        let prefix = base.path().trim_end_matches('/');
        let joined = format!(
            "{}{prefix}{}",
            &base[..Position::BeforePath],
            &url[Position::BeforePath..]
        );
        Url::parse(&joined).unwrap_or_else(|_| url.clone())
    }

    /// The bases that are not the services' own, for the guard: the operator chose them, so a
    /// stand-in on an IP address may be reached even on a private network.
    pub fn operator_hosts(&self) -> Vec<&Url> {
        let defaults = Endpoints::default();
        [
            (&self.discord, &defaults.discord),
            (&self.slack, &defaults.slack),
        ]
        .into_iter()
        .filter(|(set, default)| set != default)
        .map(|(set, _)| set)
        .collect()
    }
}

/// A URL with its secret part hidden, for logs and the API's lists: webhook URLs carry their
/// token in the path, and whoever holds the URL may post to the channel.
pub fn redact(url: &Url) -> String {
    let path = url.path();
    let keep = path.rfind('/').map_or(path.len(), |slash| slash + 1);
    let hidden = path.len() > keep;
    format!(
        "{}{}{}",
        &url[..Position::BeforePath],
        &path[..keep],
        if hidden { "…" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discord_urls_are_checked_with_messages_that_say_what_is_wrong() {
        let good = "https://discord.com/api/webhooks/123456789012345678/AbC-dEf_123";
        assert!(validate_url(Kind::Discord, good).is_ok());
        assert!(validate_url(Kind::Discord, "https://discordapp.com/api/webhooks/1/x").is_ok());
        assert!(validate_url(Kind::Discord, "https://discord.com/api/v10/webhooks/1/x/").is_ok());
        assert!(
            validate_url(
                Kind::Discord,
                "https://discord.com/api/webhooks/1/x?thread_id=5"
            )
            .is_ok()
        );
        let cases = [
            (
                "http://discord.com/api/webhooks/1/x",
                "must start with https://",
            ),
            (
                "https://evil.example/api/webhooks/1/x",
                "host is evil.example",
            ),
            (
                "https://discord.com/webhooks/1/x",
                "does not start with /api/webhooks/",
            ),
            (
                "https://discord.com/api/webhooks/abc/x",
                "numeric id and a token",
            ),
            (
                "https://discord.com/api/webhooks/1",
                "numeric id and a token",
            ),
            (
                "https://discord.com/api/webhooks/1/x?foo=1",
                "parameter foo",
            ),
            (
                "https://u:p@discord.com/api/webhooks/1/x",
                "user name or password",
            ),
            ("https://discord.com:8443/api/webhooks/1/x", "names a port"),
            ("discord.com/api/webhooks/1/x", "not a URL"),
        ];
        for (url, expected) in cases {
            let error = validate_url(Kind::Discord, url).unwrap_err().to_string();
            assert!(error.contains(expected), "{url}: {error}");
        }
    }

    #[test]
    fn slack_urls_are_checked() {
        let good = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXX";
        assert!(validate_url(Kind::Slack, good).is_ok());
        for (url, expected) in [
            ("https://hooks.slack.com/services/T0/B0", "three parts"),
            (
                "https://hooks.slack.com/triggers/T0/B0/x",
                "start with /services/",
            ),
            ("https://slack.com/services/T0/B0/x", "host is slack.com"),
            ("http://hooks.slack.com/services/T0/B0/x", "https://"),
            ("https://hooks.slack.com/services/T0/B0/x?a=b", "query"),
        ] {
            let error = validate_url(Kind::Slack, url).unwrap_err();
            if let UrlError::Slack(_) = error {
                assert!(
                    error.to_string().contains("hooks.slack.com/services"),
                    "{error}"
                );
            }
            let error = error.to_string();
            assert!(error.contains(expected), "{url}: {error}");
        }
    }

    #[test]
    fn generic_urls_take_any_http_url() {
        assert!(validate_url(Kind::Generic, "http://10.0.0.5:8080/hook?x=1").is_ok());
        assert!(validate_url(Kind::Generic, " https://example.com/h ").is_ok());
        let error = validate_url(Kind::Generic, "ftp://example.com/").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the webhook URL must start with http:// or https://, not ftp://"
        );
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(validate_url(Kind::Generic, &long), Err(UrlError::TooLong));
    }

    #[test]
    fn deliveries_go_to_the_configured_base_with_the_channel_path() {
        let url = validate_url(
            Kind::Discord,
            "https://discord.com/api/webhooks/1/tok?thread_id=9",
        )
        .unwrap();
        let defaults = Endpoints::default();
        assert_eq!(defaults.delivery_url(Kind::Discord, &url), url);
        assert!(defaults.operator_hosts().is_empty());
        let stand_in = Endpoints {
            discord: Url::parse("http://127.0.0.1:4000/discord/").unwrap(),
            slack: Url::parse("http://127.0.0.1:4001").unwrap(),
        };
        assert_eq!(
            stand_in.delivery_url(Kind::Discord, &url).as_str(),
            "http://127.0.0.1:4000/discord/api/webhooks/1/tok?thread_id=9"
        );
        let slack = validate_url(Kind::Slack, "https://hooks.slack.com/services/T1/B2/c3").unwrap();
        assert_eq!(
            stand_in.delivery_url(Kind::Slack, &slack).as_str(),
            "http://127.0.0.1:4001/services/T1/B2/c3"
        );
        let generic = Url::parse("https://example.com/hook").unwrap();
        assert_eq!(stand_in.delivery_url(Kind::Generic, &generic), generic);
        assert_eq!(stand_in.operator_hosts().len(), 2);
    }

    #[test]
    fn redacted_urls_hide_the_token() {
        let url = Url::parse("https://discord.com/api/webhooks/1/secret-token").unwrap();
        assert_eq!(redact(&url), "https://discord.com/api/webhooks/1/…");
        let url = Url::parse("https://example.com/").unwrap();
        assert_eq!(redact(&url), "https://example.com/");
    }
}
