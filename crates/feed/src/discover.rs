//! Feed discovery from a web page (F2): the page's `<link rel="alternate">` and `rel="feed"`
//! candidates, ranked, then the conventional paths for the fetcher to try. Pure: the caller
//! fetches the page and then the candidates.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use url::Url;

use crate::encoding::decode_document;
use crate::model::FeedFormat;
use crate::text::plain_text;
use crate::urls::web_url;

/// Paths where sites commonly serve their feed, tried in this order after the page's own
/// candidates.
pub const CONVENTIONAL_PATHS: &[&str] = &[
    "/feed",
    "/rss",
    "/atom.xml",
    "/feed.xml",
    "/index.xml",
    "/rss.xml",
];

/// What kind of feed a candidate announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CandidateKind {
    /// `application/atom+xml`.
    Atom,
    /// `application/rss+xml` or `application/rdf+xml`.
    Rss,
    /// `application/feed+json`.
    Json,
    /// Not announced (a `rel="feed"` link without a type, or a conventional path).
    Unknown,
}

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateSource {
    /// The input was itself a feed: its URL is the answer.
    TheInputIsAFeed,
    /// A `<link>` element of the page.
    LinkElement,
    /// A conventional path on the page's site, to be tried.
    ConventionalPath,
}

/// One URL to try as a feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCandidate {
    /// Absolute http(s) URL.
    pub url: String,
    /// The kind it announces.
    pub kind: CandidateKind,
    /// The `title` attribute of its link element, as plain text.
    pub title: Option<String>,
    /// Where it came from.
    pub source: CandidateSource,
}

/// Finds the feeds of a page, best first: the page's link candidates ranked same host >
/// Atom > RSS > JSON > document order, de-duplicated and absolute, then the conventional paths
/// not already listed. When the body is itself a feed, its URL is the only answer.
pub fn discover(body: &[u8], page_url: &Url) -> Vec<FeedCandidate> {
    if let Ok(feed) = crate::parse(
        body,
        &crate::ParseOptions {
            feed_url: Some(page_url.clone()),
            ..Default::default()
        },
    ) {
        let kind = match feed.format() {
            FeedFormat::Atom => CandidateKind::Atom,
            FeedFormat::Rss => CandidateKind::Rss,
            FeedFormat::Json => CandidateKind::Json,
        };
        return vec![FeedCandidate {
            url: page_url.to_string(),
            kind,
            title: feed.title,
            source: CandidateSource::TheInputIsAFeed,
        }];
    }
    let text = decode_document(body, None).text;
    let scan = scan_links(&text);
    let base = scan
        .base_href
        .as_deref()
        .and_then(|href| page_url.join(href).ok())
        .unwrap_or_else(|| page_url.clone());
    let mut ranked: Vec<(bool, CandidateKind, usize, FeedCandidate)> = Vec::new();
    for (index, link) in scan.links.iter().enumerate() {
        let Some(kind) = candidate_kind(link) else {
            continue;
        };
        let Some(url) = web_url(Some(&base), &link.href) else {
            continue;
        };
        let same_host = url.host_str() == page_url.host_str();
        ranked.push((
            !same_host,
            kind,
            index,
            FeedCandidate {
                url: url.into(),
                kind,
                title: link.title.as_deref().and_then(plain_text),
                source: CandidateSource::LinkElement,
            },
        ));
    }
    ranked.sort_by_key(|(other_host, kind, index, _)| (*other_host, *kind, *index));
    let mut candidates: Vec<FeedCandidate> = Vec::new();
    for (_, _, _, candidate) in ranked {
        if !candidates.iter().any(|c| c.url == candidate.url) {
            candidates.push(candidate);
        }
    }
    for path in CONVENTIONAL_PATHS {
        if let Ok(url) = page_url.join(path)
            && !candidates.iter().any(|c| c.url == url.as_str())
        {
            candidates.push(FeedCandidate {
                url: url.into(),
                kind: CandidateKind::Unknown,
                title: None,
                source: CandidateSource::ConventionalPath,
            });
        }
    }
    candidates
}

/// A `<link>` element's relevant attributes.
#[derive(Debug, Default)]
struct LinkElement {
    rel: String,
    kind: String,
    href: String,
    title: Option<String>,
}

/// Whether a link element announces a feed, and which kind.
fn candidate_kind(link: &LinkElement) -> Option<CandidateKind> {
    let rels: Vec<String> = link
        .rel
        .split_ascii_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let is_alternate = rels.iter().any(|r| r == "alternate");
    let is_feed = rels.iter().any(|r| r == "feed");
    if (!is_alternate && !is_feed) || rels.iter().any(|r| r == "stylesheet") {
        return None;
    }
    let mime = link
        .kind
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let kind = match mime.as_str() {
        "application/atom+xml" | "application/x-atom+xml" | "application/x.atom+xml" => {
            CandidateKind::Atom
        }
        "application/rss+xml"
        | "application/x-rss+xml"
        | "application/rdf+xml"
        | "application/rss" => CandidateKind::Rss,
        "application/feed+json" => CandidateKind::Json,
        // rel="feed" names a feed whatever (or whether) a type is given; a plain alternate
        // with another type is a translation, a print version, an API endpoint.
        _ if is_feed && !mime.starts_with("text/html") => CandidateKind::Unknown,
        _ => return None,
    };
    Some(kind)
}

/// What the page's markup says about feeds.
#[derive(Debug, Default)]
struct LinkScan {
    links: Vec<LinkElement>,
    base_href: Option<String>,
}

/// A token sink collecting `<link>` and the first `<base href>`, switching the tokenizer into
/// raw-text states where a browser would, so markup inside scripts or comments is not taken
/// for links.
#[derive(Default)]
struct LinkCollector {
    scan: RefCell<LinkScan>,
}

impl TokenSink for LinkCollector {
    type Handle = ();

    fn process_token(&self, token: Token, _line_number: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else {
            return TokenSinkResult::Continue;
        };
        if tag.kind != TagKind::StartTag {
            return TokenSinkResult::Continue;
        }
        match &*tag.name {
            "link" => self.scan.borrow_mut().links.push(link_from(&tag)),
            "base" => {
                let mut scan = self.scan.borrow_mut();
                if scan.base_href.is_none() {
                    scan.base_href = attribute(&tag, "href");
                }
            }
            _ => {}
        }
        match raw_kind(&tag.name) {
            Some(kind) if !tag.self_closing => TokenSinkResult::RawData(kind),
            _ => TokenSinkResult::Continue,
        }
    }
}

/// The tokenizer state the HTML tree builder would switch to after this start tag.
pub(crate) fn raw_kind(name: &str) -> Option<RawKind> {
    match name {
        "script" => Some(RawKind::ScriptData),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(RawKind::Rawtext),
        "title" | "textarea" => Some(RawKind::Rcdata),
        _ => None,
    }
}

fn attribute(tag: &Tag, name: &str) -> Option<String> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| a.value.to_string())
}

fn link_from(tag: &Tag) -> LinkElement {
    LinkElement {
        rel: attribute(tag, "rel").unwrap_or_default(),
        kind: attribute(tag, "type").unwrap_or_default(),
        href: attribute(tag, "href").unwrap_or_default(),
        title: attribute(tag, "title"),
    }
}

/// Every `<link>` element of a page as (rel, href), and its first `<base href>`: WebSub's
/// `rel="hub"` and `rel="self"` discovery reads the same scan.
pub(crate) fn link_elements(html: &str) -> (Vec<(String, String)>, Option<String>) {
    let scan = scan_links(html);
    let links = scan
        .links
        .into_iter()
        .map(|link| (link.rel, link.href))
        .collect();
    (links, scan.base_href)
}

fn scan_links(html: &str) -> LinkScan {
    let tokenizer = Tokenizer::new(LinkCollector::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    tokenizer.sink.scan.take()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(candidates: &[FeedCandidate]) -> Vec<&str> {
        candidates.iter().map(|c| c.url.as_str()).collect()
    }

    #[test]
    fn ranks_same_host_then_atom_rss_json_then_order() {
        let page = Url::parse("https://blog.example/post/1").expect("url");
        let html = r#"<html><head>
            <link rel="alternate" type="application/rss+xml" href="https://other.example/rss">
            <link rel="alternate" type="application/feed+json" href="/feed.json" title="JSON">
            <link rel="alternate" type="application/rss+xml" href="/rss.xml" title="RSS">
            <link rel="alternate" type="application/atom+xml" href="atom.xml" title="Atom">
            <link rel="alternate" type="application/rss+xml" href="https://blog.example/rss.xml">
            <link rel="alternate" hreflang="fr" type="text/html" href="/fr/">
            <link rel="stylesheet alternate" type="application/rss+xml" href="/style">
            <link rel="alternate" type="application/json" href="/wp-json/wp/v2/posts/1">
            <script>document.write('<link rel="alternate" type="application/atom+xml" href="/evil">')</script>
            </head><body></body></html>"#;
        let found = discover(html.as_bytes(), &page);
        assert_eq!(
            urls(&found),
            [
                "https://blog.example/post/atom.xml",
                "https://blog.example/rss.xml",
                "https://blog.example/feed.json",
                "https://other.example/rss",
                "https://blog.example/feed",
                "https://blog.example/rss",
                "https://blog.example/atom.xml",
                "https://blog.example/feed.xml",
                "https://blog.example/index.xml",
            ]
        );
        assert_eq!(found[0].title.as_deref(), Some("Atom"));
        assert_eq!(found[0].source, CandidateSource::LinkElement);
        assert_eq!(found[4].source, CandidateSource::ConventionalPath);
    }

    #[test]
    fn base_href_and_rel_feed() {
        let page = Url::parse("https://a.example/x/y").expect("url");
        let html = r#"<base href="https://cdn.a.example/root/"><link rel="feed" href="f.xml"><a rel="feed" href="/no">"#;
        let found = discover(html.as_bytes(), &page);
        assert_eq!(found[0].url, "https://cdn.a.example/root/f.xml");
        assert_eq!(found[0].kind, CandidateKind::Unknown);
    }

    #[test]
    fn a_feed_is_its_own_answer() {
        let page = Url::parse("https://a.example/feed").expect("url");
        let rss = b"<rss version=\"2.0\"><channel><title>T</title></channel></rss>";
        let found = discover(rss, &page);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].source, CandidateSource::TheInputIsAFeed);
        assert_eq!(found[0].url, "https://a.example/feed");
    }
}
