//! WebSub discovery (F18): which hub a feed (or page) advertises and which URL is its topic.
//!
//! A publisher names its hubs (`rel="hub"`) and its canonical topic URL (`rel="self"`) in HTTP
//! `Link` headers, in the feed itself (Atom `<link>`, RSS `<atom:link>`, JSON Feed `hubs`) or
//! in an HTML page's `<link>` elements. The W3C WebSub recommendation has the subscriber look
//! at the headers first and at the document only in their absence, and subscribe to the `self`
//! URL, which may differ from the URL fetched. Pure: the fetcher hands in what it received.

use url::Url;

use crate::model::Feed;
use crate::urls::web_url;

/// The hub and topic to subscribe to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSubLinks {
    /// The hub's URL (the first one advertised, from the headers when they name any).
    pub hub: String,
    /// The topic: the advertised `self` URL, or the URL fetched when none is advertised.
    pub topic: String,
}

/// The `rel="hub"` and `rel="self"` links of one source (the headers, or the document).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdvertisedLinks {
    /// Hub URLs, absolute http(s), in order, without repeats.
    pub hubs: Vec<String>,
    /// The first `self` URL, absolute http(s).
    pub self_url: Option<String>,
}

impl AdvertisedLinks {
    /// What a parsed feed advertises: its hubs and its `self` link (Atom, RSS `atom:link`, JSON
    /// Feed `hubs` and `feed_url`), resolved by the parser already.
    pub fn of_feed(feed: &Feed) -> AdvertisedLinks {
        let mut links = AdvertisedLinks::default();
        for hub in &feed.hubs {
            links.add_hub(web_url(None, hub));
        }
        links.self_url = feed
            .feed_url
            .as_deref()
            .and_then(|url| web_url(None, url))
            .map(String::from);
        links
    }

    /// What HTTP `Link` header values advertise (several headers may be given joined by ", "
    /// as HTTP allows), relative URLs resolved against `base` (the URL that answered).
    pub fn of_link_header(value: &str, base: &Url) -> AdvertisedLinks {
        let mut links = AdvertisedLinks::default();
        for (target, rels) in parse_link_header(value) {
            let url = web_url(Some(base), &target);
            if rels.iter().any(|rel| rel == "hub") {
                links.add_hub(url.clone());
            }
            if rels.iter().any(|rel| rel == "self") && links.self_url.is_none() {
                links.self_url = url.map(String::from);
            }
        }
        links
    }

    /// What an HTML page's `<link rel="hub">` and `<link rel="self">` elements advertise,
    /// relative URLs resolved against its `<base href>` or `page_url`.
    pub fn of_html(body: &[u8], page_url: &Url) -> AdvertisedLinks {
        let text = crate::encoding::decode_document(body, None).text;
        let (elements, base_href) = crate::discover::link_elements(&text);
        let base = base_href
            .as_deref()
            .and_then(|href| page_url.join(href).ok())
            .unwrap_or_else(|| page_url.clone());
        let mut links = AdvertisedLinks::default();
        for (rel, href) in elements {
            let rels: Vec<String> = rel
                .split_ascii_whitespace()
                .map(str::to_ascii_lowercase)
                .collect();
            let url = web_url(Some(&base), &href);
            if rels.iter().any(|r| r == "hub") {
                links.add_hub(url.clone());
            }
            if rels.iter().any(|r| r == "self") && links.self_url.is_none() {
                links.self_url = url.map(String::from);
            }
        }
        links
    }

    fn add_hub(&mut self, url: Option<Url>) {
        if let Some(url) = url.map(String::from)
            && !self.hubs.contains(&url)
        {
            self.hubs.push(url);
        }
    }
}

/// The hub and topic of a fetched resource, `None` when no hub is advertised. The headers
/// come first (a hub or `self` they name wins over the document's), then the document; a
/// topic not advertised anywhere is the URL that answered, `fetched_url`.
pub fn websub_links(
    headers: &AdvertisedLinks,
    document: &AdvertisedLinks,
    fetched_url: &Url,
) -> Option<WebSubLinks> {
    let hub = headers.hubs.first().or_else(|| document.hubs.first())?;
    let topic = headers
        .self_url
        .as_ref()
        .or(document.self_url.as_ref())
        .cloned()
        .unwrap_or_else(|| fetched_url.to_string());
    Some(WebSubLinks {
        hub: hub.clone(),
        topic,
    })
}

/// The links of an HTTP `Link` header value (RFC 8288): each target with its relation types,
/// lower-cased. Commas inside `<…>` and quoted strings do not split links; a malformed link
/// is skipped, never an error.
pub fn parse_link_header(value: &str) -> Vec<(String, Vec<String>)> {
    let mut links = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        let Some(after_open) = rest.strip_prefix('<') else {
            // Not a link: skip to the next top-level comma, if any.
            match next_top_level_comma(rest) {
                Some(at) => {
                    rest = &rest[at + 1..];
                    continue;
                }
                None => break,
            }
        };
        let Some(close) = after_open.find('>') else {
            break;
        };
        let target = after_open[..close].trim().to_owned();
        let params_start = &after_open[close + 1..];
        let end = next_top_level_comma(params_start).unwrap_or(params_start.len());
        let params = &params_start[..end];
        rest = &params_start[end..];
        let mut rels = Vec::new();
        for param in split_top_level(params, ';') {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            if !name.trim().eq_ignore_ascii_case("rel") || !rels.is_empty() {
                // Only the first rel counts (RFC 8288 §3.3).
                continue;
            }
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            rels = value
                .split_ascii_whitespace()
                .map(str::to_ascii_lowercase)
                .collect();
        }
        links.push((target, rels));
    }
    links
}

/// Where the next comma outside a quoted string is.
fn next_top_level_comma(text: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => return Some(at),
            _ => {}
        }
    }
    None
}

/// `text` split at `separator` outside quoted strings.
fn split_top_level(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("url")
    }

    #[test]
    fn link_headers_with_commas_quotes_and_several_rels() {
        let value = r#"<https://hub.example/a,b>; rel="hub", </feed?x=1>; title="a, b; c"; rel="self alternate", <https://x.example/>; rel=next"#;
        let links = parse_link_header(value);
        assert_eq!(
            links,
            [
                ("https://hub.example/a,b".to_owned(), vec!["hub".to_owned()]),
                (
                    "/feed?x=1".to_owned(),
                    vec!["self".to_owned(), "alternate".to_owned()]
                ),
                ("https://x.example/".to_owned(), vec!["next".to_owned()]),
            ]
        );
        let advertised = AdvertisedLinks::of_link_header(value, &url("https://blog.example/f"));
        assert_eq!(advertised.hubs, ["https://hub.example/a,b"]);
        assert_eq!(
            advertised.self_url.as_deref(),
            Some("https://blog.example/feed?x=1")
        );
    }

    #[test]
    fn malformed_link_headers_give_what_they_can() {
        for value in [
            "",
            "garbage",
            "<unterminated",
            ";;;,,,",
            "<>; rel=hub",
            "<javascript:alert(1)>; rel=hub",
            "<https://ok.example/hub>; REL=HUB, nonsense, <https://x.example/>",
        ] {
            let advertised = AdvertisedLinks::of_link_header(value, &url("https://b.example/"));
            // Never a non-web URL; only the well-formed hub of the last value.
            for hub in &advertised.hubs {
                assert!(hub.starts_with("https://"), "{value}: {hub}");
            }
        }
        let advertised = AdvertisedLinks::of_link_header(
            "<https://ok.example/hub>; REL=HUB, nonsense, <https://x.example/>",
            &url("https://b.example/"),
        );
        assert_eq!(advertised.hubs, ["https://ok.example/hub"]);
    }

    /// websub.rocks 100: the hub and self only in the HTTP headers.
    #[test]
    fn discovery_from_http_headers() {
        let headers = AdvertisedLinks::of_link_header(
            "<https://b.example/blog/100/t>; rel=\"self\", <https://b.example/blog/100/t/hub>; rel=\"hub\"",
            &url("https://b.example/blog/100/t"),
        );
        let found = websub_links(
            &headers,
            &AdvertisedLinks::default(),
            &url("https://b.example/blog/100/t"),
        );
        assert_eq!(
            found,
            Some(WebSubLinks {
                hub: "https://b.example/blog/100/t/hub".into(),
                topic: "https://b.example/blog/100/t".into(),
            })
        );
    }

    /// websub.rocks 101: the hub and self only in an HTML page's link tags.
    #[test]
    fn discovery_from_html_link_tags() {
        let html = br#"<!doctype html><html><head><title>x</title>
            <link rel="hub" href="/hub"><link rel="self" href="https://b.example/blog/101/t">
            <script>document.write('<link rel="hub" href="/evil">')</script>
            </head><body></body></html>"#;
        let page = url("https://b.example/blog/101/t?utm=x");
        let document = AdvertisedLinks::of_html(html, &page);
        assert_eq!(document.hubs, ["https://b.example/hub"]);
        let found = websub_links(&AdvertisedLinks::default(), &document, &page).expect("a hub");
        assert_eq!(found.topic, "https://b.example/blog/101/t");
    }

    /// websub.rocks 102 and 103: Atom `<link>` and RSS `<atom:link>` elements.
    #[test]
    fn discovery_from_atom_and_rss_feeds() {
        let atom = br#"<feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
            <link rel="hub" href="https://hub.example/"/><link rel="self" href="https://b.example/atom"/>
            <link rel="alternate" href="https://b.example/"/></feed>"#;
        let rss = br#"<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>R</title>
            <link>https://b.example/</link>
            <atom:link rel="hub" href="https://hub.example/rss-hub"/>
            <atom:link rel="self" type="application/rss+xml" href="https://b.example/rss"/>
            </channel></rss>"#;
        let fetched = url("https://b.example/fetched");
        for (body, hub, topic) in [
            (&atom[..], "https://hub.example/", "https://b.example/atom"),
            (
                &rss[..],
                "https://hub.example/rss-hub",
                "https://b.example/rss",
            ),
        ] {
            let feed = crate::parse(
                body,
                &crate::ParseOptions {
                    feed_url: Some(fetched.clone()),
                    ..Default::default()
                },
            )
            .expect("parses");
            let found = websub_links(
                &AdvertisedLinks::default(),
                &AdvertisedLinks::of_feed(&feed),
                &fetched,
            );
            assert_eq!(
                found,
                Some(WebSubLinks {
                    hub: hub.into(),
                    topic: topic.into()
                })
            );
        }
    }

    /// websub.rocks 104: the headers win over the document's links.
    #[test]
    fn headers_take_priority_over_the_document() {
        let fetched = url("https://b.example/blog/104/t");
        let headers = AdvertisedLinks::of_link_header(
            "<https://b.example/blog/104/t>; rel=\"self\", <https://b.example/blog/104/t/hub>; rel=\"hub\"",
            &fetched,
        );
        let document = AdvertisedLinks {
            hubs: vec!["https://b.example/blog/104/t/hub?error=wrongtag".into()],
            self_url: Some("https://b.example/other".into()),
        };
        let found = websub_links(&headers, &document, &fetched).expect("a hub");
        assert_eq!(found.hub, "https://b.example/blog/104/t/hub");
        assert_eq!(found.topic, "https://b.example/blog/104/t");
        // A header naming only the hub leaves the document's self in effect.
        let hub_only = AdvertisedLinks {
            self_url: None,
            ..headers
        };
        let found = websub_links(&hub_only, &document, &fetched).expect("a hub");
        assert_eq!(found.topic, "https://b.example/other");
    }

    /// websub.rocks 200: the topic is the advertised self URL, not the URL fetched; without a
    /// self link, the URL fetched; without a hub, nothing.
    #[test]
    fn the_topic_is_the_self_url() {
        let fetched = url("https://b.example/blog/200/t");
        let headers = AdvertisedLinks::of_link_header(
            "<https://b.example/blog/200/t?self=other>; rel=\"self\", <https://b.example/hub>; rel=\"hub\"",
            &fetched,
        );
        let found = websub_links(&headers, &AdvertisedLinks::default(), &fetched).expect("a hub");
        assert_eq!(found.topic, "https://b.example/blog/200/t?self=other");
        let no_self = AdvertisedLinks {
            hubs: vec!["https://b.example/hub".into()],
            self_url: None,
        };
        let found = websub_links(&no_self, &AdvertisedLinks::default(), &fetched).expect("hub");
        assert_eq!(found.topic, "https://b.example/blog/200/t");
        let no_hub = AdvertisedLinks {
            hubs: Vec::new(),
            self_url: Some("https://b.example/x".into()),
        };
        assert_eq!(websub_links(&no_hub, &no_hub, &fetched), None);
    }
}
