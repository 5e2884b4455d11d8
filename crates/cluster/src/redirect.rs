//! Known redirectors that carry their target in the URL itself, so that it can be read without
//! a request: search engines' and social sites' click-through links, aggregators' outbound
//! links and the AMP caches. Shorteners (`t.co`, `bit.ly`) and feed proxies
//! (`feedproxy.google.com`) keep the target on their server and are left alone: this crate does
//! no I/O, and the fetcher records the final URL when it follows them.

use url::Url;

/// A redirector: its host (without `www.`), the path it answers on (`None`: any), and the query
/// parameter holding the target.
struct Redirector {
    host: &'static str,
    path: Option<&'static str>,
    parameter: &'static str,
}

/// The redirectors whose target is a query parameter.
const REDIRECTORS: &[Redirector] = &[
    Redirector {
        host: "news.google.com",
        path: None,
        parameter: "url",
    },
    Redirector {
        host: "google.com",
        path: Some("/url"),
        parameter: "q",
    },
    Redirector {
        host: "google.com",
        path: Some("/url"),
        parameter: "url",
    },
    Redirector {
        host: "l.facebook.com",
        path: Some("/l.php"),
        parameter: "u",
    },
    Redirector {
        host: "lm.facebook.com",
        path: Some("/l.php"),
        parameter: "u",
    },
    Redirector {
        host: "l.instagram.com",
        path: None,
        parameter: "u",
    },
    Redirector {
        host: "out.reddit.com",
        path: None,
        parameter: "url",
    },
    Redirector {
        host: "youtube.com",
        path: Some("/redirect"),
        parameter: "q",
    },
    Redirector {
        host: "linkedin.com",
        path: Some("/redir/redirect"),
        parameter: "url",
    },
    Redirector {
        host: "slack-redir.net",
        path: Some("/link"),
        parameter: "url",
    },
    Redirector {
        host: "t.umblr.com",
        path: Some("/redirect"),
        parameter: "z",
    },
    Redirector {
        host: "away.vk.com",
        path: Some("/away.php"),
        parameter: "to",
    },
    Redirector {
        host: "link.zhihu.com",
        path: None,
        parameter: "target",
    },
    Redirector {
        host: "bing.com",
        path: Some("/news/apiclick.aspx"),
        parameter: "url",
    },
    Redirector {
        host: "duckduckgo.com",
        path: Some("/l/"),
        parameter: "uddg",
    },
    Redirector {
        host: "steamcommunity.com",
        path: Some("/linkfilter/"),
        parameter: "url",
    },
];

/// The target `url` redirects to, when `url` is a known redirector carrying an absolute web
/// URL; `None` for anything else.
pub(crate) fn redirect_target(url: &Url) -> Option<Url> {
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    let raw = amp_cache_target(host, url)
        .or_else(|| whole_query_target(host, url))
        .or_else(|| parameter_target(host, url))?;
    let target = Url::parse(&raw).ok()?;
    matches!(target.scheme(), "http" | "https").then_some(target)
}

/// The target of a redirector that names it in a query parameter.
fn parameter_target(host: &str, url: &Url) -> Option<String> {
    let path = url.path();
    REDIRECTORS
        .iter()
        .filter(|r| r.host == host && r.path.is_none_or(|p| p == path))
        .find_map(|r| {
            url.query_pairs()
                .find(|(name, _)| name == r.parameter)
                .map(|(_, value)| value.into_owned())
        })
}

/// The target of `href.li/?https://…`, whose whole query is the target.
fn whole_query_target(host: &str, url: &Url) -> Option<String> {
    (host == "href.li")
        .then(|| url.query())
        .flatten()
        .filter(|q| q.starts_with("http"))
        .map(str::to_string)
}

/// The page an AMP cache serves: `<anything>.cdn.ampproject.org/c/s/example.com/path` (`/c/`
/// for http, `/v/` for a viewer) and `google.com/amp/s/example.com/path`.
fn amp_cache_target(host: &str, url: &Url) -> Option<String> {
    let path = url.path();
    let rest = if host.ends_with(".cdn.ampproject.org") {
        ["/c/", "/v/", "/i/"]
            .iter()
            .find_map(|prefix| path.strip_prefix(prefix))?
    } else if host == "google.com" {
        path.strip_prefix("/amp/")?
    } else {
        return None;
    };
    let (scheme, rest) = match rest.strip_prefix("s/") {
        Some(rest) => ("https", rest),
        None => ("http", rest),
    };
    if rest.is_empty() {
        return None;
    }
    let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("{scheme}://{rest}{query}"))
}
