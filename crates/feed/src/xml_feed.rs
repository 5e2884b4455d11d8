//! RSS (0.90, 0.91, 0.92, 1.0, 2.0) and Atom (0.3, 1.0) from the XML tree into the model.

use chrono::{DateTime, Utc};
use url::Url;

use crate::date::parse_date;
use crate::error::ParseError;
use crate::model::{Enclosure, Feed, FeedVersion, Item, ItemDraft};
use crate::text::{
    collapse_whitespace, html_to_text, is_clearly_markup, plain_text, text_to_html,
    unescape_double_escaped_html,
};
use crate::urls::{apply_xml_base, web_url};
use crate::xml::{Document, Element, Node, Ns};

/// Namespaces RSS elements appear in: none (0.9x, 2.0), RSS 1.0 and RSS 0.90.
const RSS: &[Ns] = &[Ns::None, Ns::Rss10, Ns::Rss090];
/// Atom 1.0 and 0.3.
const ATOM: &[Ns] = &[Ns::Atom, Ns::Atom03];
const ATOM10: &[Ns] = &[Ns::Atom];
const DC: &[Ns] = &[Ns::Dc];
const DCTERMS: &[Ns] = &[Ns::DcTerms];
const MEDIA: &[Ns] = &[Ns::Media];
const ITUNES: &[Ns] = &[Ns::Itunes];
const CONTENT: &[Ns] = &[Ns::Content];
const XHTML: &[Ns] = &[Ns::Xhtml];

/// The base URL in effect at an element, and whether an `xml:base` set it (as opposed to the
/// feed's own URL).
#[derive(Debug, Clone, Default)]
struct Base {
    url: Option<Url>,
    explicit: bool,
}

impl Base {
    fn enter(&self, element: &Element) -> Base {
        match element.attr_ns(Ns::Xml, "base") {
            Some(value) => Base {
                url: apply_xml_base(self.url.as_ref(), Some(value)),
                explicit: true,
            },
            None => self.clone(),
        }
    }

    fn resolve(&self, value: &str) -> Option<String> {
        web_url(self.url.as_ref(), value).map(String::from)
    }
}

/// Turns an XML document into a feed, or says why it is not one.
pub(crate) fn extract(mut document: Document, feed_url: Option<&Url>) -> Result<Feed, ParseError> {
    if document.root.name == "feed" && document.root.ns == Ns::None {
        // An Atom feed that forgot its namespace: its unqualified elements are Atom's.
        let ns = if document.root.attr("version").map(str::trim) == Some("0.3") {
            Ns::Atom03
        } else {
            Ns::Atom
        };
        adopt_namespace(&mut document.root, ns);
    }
    let root = &document.root;
    if let Some(reason) = not_a_feed_reason(root) {
        return Err(ParseError::NotAFeed(reason));
    }
    let base = Base {
        url: feed_url.cloned(),
        explicit: false,
    }
    .enter(root);
    let mut feed = match (root.name.as_str(), root.ns) {
        ("rss", _) => rss(root, rss_version(root), &base),
        ("RDF", _) => {
            let version = if root.elements().any(|e| e.ns == Ns::Rss090) {
                FeedVersion::Rss090
            } else {
                FeedVersion::Rss10
            };
            rss(root, version, &base)
        }
        // An RSS channel without its <rss> wrapper: read it rather than refuse it.
        ("channel", Ns::None) => rss(root, FeedVersion::Rss20, &base),
        ("feed", Ns::Atom) => atom(root, FeedVersion::Atom10, &base),
        ("feed", Ns::Atom03) => atom(root, FeedVersion::Atom03, &base),
        (name, _) if name.eq_ignore_ascii_case("html") => {
            return Err(ParseError::NotAFeed(
                "this is an HTML page (look for its feeds with discovery)".to_owned(),
            ));
        }
        (name, _) => {
            return Err(ParseError::NotAFeed(format!(
                "the XML root element is <{}>, not <rss>, <rdf:RDF> or <feed>",
                truncate(name, 40)
            )));
        }
    };
    feed.warning = document.warning;
    Ok(feed)
}

/// Puts every element without a namespace into `ns` (iteratively: the tree is bounded, but this
/// must not depend on it).
fn adopt_namespace(root: &mut Element, ns: Ns) {
    let mut stack: Vec<&mut Element> = vec![root];
    while let Some(element) = stack.pop() {
        if element.ns == Ns::None {
            element.ns = ns;
        }
        for child in &mut element.children {
            if let Node::Element(child) = child {
                stack.push(child);
            }
        }
    }
}

/// Why a document whose root looks like a feed is not one, or `None` when it is.
fn not_a_feed_reason(root: &Element) -> Option<String> {
    let has_rss_parts =
        |e: &Element| e.child(RSS, "channel").is_some() || e.child(RSS, "item").is_some();
    match (root.name.as_str(), root.ns) {
        ("rss", _) if !has_rss_parts(root) => Some(
            "the <rss> element holds neither a <channel> nor items, so there is nothing to read"
                .to_owned(),
        ),
        ("RDF", _) if !has_rss_parts(root) => Some(
            "this RDF document has no RSS 1.0 <channel> or <item>: it is RDF, but not an RSS feed"
                .to_owned(),
        ),
        ("feed", Ns::Other) => Some(
            "the root element is <feed> in a namespace that is neither Atom 1.0 \
             (http://www.w3.org/2005/Atom) nor Atom 0.3 (http://purl.org/atom/ns#)"
                .to_owned(),
        ),
        _ => None,
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

fn rss_version(root: &Element) -> FeedVersion {
    match root.attr("version").map(str::trim) {
        Some("0.91") => FeedVersion::Rss091,
        Some("0.92" | "0.93" | "0.94") => FeedVersion::Rss092,
        Some("0.90" | "0.9") => FeedVersion::Rss090,
        _ => FeedVersion::Rss20,
    }
}

fn empty_feed(version: FeedVersion) -> Feed {
    Feed {
        version,
        title: None,
        site_url: None,
        feed_url: None,
        description: None,
        language: None,
        icon: None,
        updated: None,
        authors: Vec::new(),
        hubs: Vec::new(),
        items: Vec::new(),
        warning: None,
    }
}

fn text_of(parent: &Element, namespaces: &[Ns], name: &str) -> Option<String> {
    parent.children_named(namespaces, name).find_map(|e| {
        let text = e.text();
        let trimmed = text.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_owned())
    })
}

fn date_of(parent: &Element, candidates: &[(&[Ns], &str)]) -> Option<DateTime<Utc>> {
    candidates.iter().find_map(|(namespaces, name)| {
        parent
            .children_named(namespaces, name)
            .find_map(|e| parse_date(&e.text()))
    })
}

// ---------------------------------------------------------------------------------------------
// RSS

fn rss(root: &Element, version: FeedVersion, root_base: &Base) -> Feed {
    let mut feed = empty_feed(version);
    let channel = root.child(RSS, "channel").unwrap_or(root);
    let mut base = root_base.enter(channel);
    feed.title = text_of(channel, RSS, "title")
        .or_else(|| text_of(channel, DC, "title"))
        .and_then(|t| plain_text(&t));
    feed.site_url = text_of(channel, RSS, "link")
        .and_then(|l| base.resolve(&l))
        .or_else(|| atom_link(channel, &base, &["alternate"]));
    if base.url.is_none() {
        // Without the document's own URL, relative links resolve against the feed's link.
        base.url = feed.site_url.as_deref().and_then(|u| Url::parse(u).ok());
    }
    feed.feed_url = atom_link(channel, &base, &["self"]);
    feed.hubs = atom_links(channel, &base, "hub");
    feed.description = text_of(channel, RSS, "description")
        .or_else(|| text_of(channel, DC, "description"))
        .or_else(|| text_of(channel, ITUNES, "summary"))
        .and_then(|d| plain_text(&d));
    feed.language = text_of(channel, RSS, "language").or_else(|| text_of(channel, DC, "language"));
    feed.icon = channel
        .child(RSS, "image")
        .and_then(|image| text_of(image, RSS, "url"))
        .and_then(|u| base.resolve(&u))
        .or_else(|| {
            channel
                .child(ITUNES, "image")
                .and_then(|i| i.attr("href"))
                .and_then(|u| base.resolve(u))
        });
    feed.updated = date_of(
        channel,
        &[
            (RSS, "lastBuildDate"),
            (RSS, "pubDate"),
            (DC, "date"),
            (ATOM10, "updated"),
            (DCTERMS, "modified"),
        ],
    );
    for (namespaces, name) in [(RSS, "managingEditor"), (DC, "creator"), (ITUNES, "author")] {
        for element in channel.children_named(namespaces, name) {
            if let Some(author) = person_from_rss(&element.text())
                && !feed.authors.contains(&author)
            {
                feed.authors.push(author);
            }
        }
    }
    // RSS 0.90 and 1.0 put items beside the channel; some feeds put them inside anyway.
    let items = channel.children_named(RSS, "item").chain(
        if std::ptr::eq(channel, root) {
            None
        } else {
            Some(root)
        }
        .into_iter()
        .flat_map(|r| r.children_named(RSS, "item")),
    );
    feed.items = items
        .filter(|e| e.closed)
        .map(|e| rss_item(e, &base))
        .collect();
    feed
}

fn rss_item(item: &Element, channel_base: &Base) -> Item {
    let base = channel_base.enter(item);
    let mut draft = ItemDraft::default();
    let guid_element = item.child(RSS, "guid");
    draft.guid = guid_element
        .map(Element::text)
        .map(|g| g.trim().to_owned())
        .filter(|g| !g.is_empty())
        .or_else(|| {
            item.attr_ns(Ns::Rdf, "about")
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty())
        });
    let is_permalink = guid_element
        .and_then(|g| g.attr("isPermaLink"))
        .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"));
    draft.url = item
        .children_named(RSS, "link")
        .find_map(|l| base.enter(l).resolve(&l.text()))
        .or_else(|| atom_link(item, &base, &["alternate"]))
        .or_else(|| {
            // A guid is the item's permalink unless it says otherwise; only an absolute http(s)
            // guid can serve, since a relative one was never meant as a link.
            let guid = draft.guid.as_deref().filter(|_| is_permalink)?;
            web_url(None, guid).map(String::from)
        });
    draft.language = text_of(item, DC, "language");
    let media = media_of(item, &base);
    draft.title = text_of(item, RSS, "title")
        .or_else(|| text_of(item, DC, "title"))
        .and_then(|t| plain_text(&t))
        .or_else(|| media.title.clone());
    let description = item
        .child(RSS, "description")
        .or_else(|| item.child(DC, "description"));
    let encoded = item.child(CONTENT, "encoded");
    let xhtml_body = item.child(XHTML, "body");
    draft.summary = description
        .and_then(rss_body)
        .or_else(|| item.child(ITUNES, "summary").and_then(rss_body))
        .or_else(|| media.description.clone());
    draft.content = encoded.and_then(rss_body).or_else(|| {
        xhtml_body
            .map(|b| b.inner_html_based(base.enter(b).url.as_ref()))
            .filter(|h| !h.trim().is_empty())
    });
    let explicit_base = [encoded, xhtml_body, description]
        .into_iter()
        .flatten()
        .map(|e| base.enter(e))
        .find(|b| b.explicit && b.url.is_some())
        .or_else(|| base.explicit.then(|| base.clone()));
    draft.content_base = content_base(explicit_base.as_ref(), draft.url.as_deref(), channel_base);
    draft.published = date_of(
        item,
        &[
            (RSS, "pubDate"),
            (DC, "date"),
            (DCTERMS, "issued"),
            (DCTERMS, "created"),
            (ATOM10, "published"),
        ],
    );
    draft.updated = date_of(item, &[(ATOM10, "updated"), (DCTERMS, "modified")]);
    for (namespaces, name) in [(RSS, "author"), (DC, "creator"), (ITUNES, "author")] {
        for element in item.children_named(namespaces, name) {
            draft.add_author(person_from_rss(&element.text()));
        }
    }
    for (namespaces, name) in [(RSS, "category"), (DC, "subject")] {
        for element in item.children_named(namespaces, name) {
            draft.add_category(&element.text());
        }
    }
    for element in item.children_named(RSS, "enclosure") {
        if let Some(url) = element.attr("url").and_then(|u| base.resolve(u)) {
            draft.add_enclosure(Enclosure {
                url,
                mime_type: mime(element.attr("type")),
                length: length(element.attr("length")),
            });
        }
    }
    add_atom_enclosures(item, &base, &mut draft);
    media.add_to(&mut draft);
    draft.finish()
}

/// An RSS body: markup written unescaped is serialized back; escaped markup is taken as HTML,
/// unescaped once more if it was escaped twice.
fn rss_body(element: &Element) -> Option<String> {
    let html = if element.has_element_children() {
        element.inner_html()
    } else {
        let text = element.text();
        unescape_double_escaped_html(&text).into_owned()
    };
    (!html.trim().is_empty()).then_some(html)
}

/// `editor@example.com (Jane Doe)` → `Jane Doe`; `Jane Doe <jane@example.com>` → `Jane Doe`;
/// anything else as plain text.
fn person_from_rss(raw: &str) -> Option<String> {
    let text = plain_text(raw)?;
    if let (Some(open), true) = (text.find('('), text.ends_with(')')) {
        let name = text[open + 1..text.len() - 1].trim();
        if !name.is_empty() && text[..open].contains('@') {
            return Some(name.to_owned());
        }
    }
    if let (Some(open), true) = (text.find('<'), text.ends_with('>')) {
        let name = text[..open].trim().trim_matches('"').trim();
        if !name.is_empty() {
            return Some(name.to_owned());
        }
    }
    Some(text)
}

fn content_base(explicit: Option<&Base>, item_url: Option<&str>, feed_base: &Base) -> Option<Url> {
    explicit
        .and_then(|b| b.url.clone())
        .or_else(|| item_url.and_then(|u| Url::parse(u).ok()))
        .or_else(|| feed_base.url.clone())
}

fn mime(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() < 256)
        .map(str::to_owned)
}

fn length(value: Option<&str>) -> Option<u64> {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
}

/// What Media RSS (and `itunes:image`) say about an item: YouTube's channel feeds, for one,
/// carry their title, description and still only in a `media:group`.
#[derive(Debug, Default)]
struct Media {
    title: Option<String>,
    /// The first `media:description` as HTML.
    description: Option<String>,
    enclosures: Vec<Enclosure>,
    thumbnail: Option<String>,
}

impl Media {
    fn add_to(self, draft: &mut ItemDraft) {
        for enclosure in self.enclosures {
            draft.add_enclosure(enclosure);
        }
        if draft.thumbnail.is_none() {
            draft.thumbnail = self.thumbnail;
        }
    }
}

/// Reads `media:content`, `media:thumbnail`, `media:title` and `media:description` of an item,
/// of its `media:group`s and of the contents inside either, and `itunes:image`.
fn media_of(item: &Element, base: &Base) -> Media {
    let mut media = Media::default();
    let groups = item.children_named(MEDIA, "group");
    let containers: Vec<&Element> = std::iter::once(item).chain(groups).collect();
    let contents: Vec<&Element> = containers
        .iter()
        .flat_map(|c| c.children_named(MEDIA, "content"))
        .collect();
    let described: Vec<&Element> = containers.iter().chain(contents.iter()).copied().collect();
    media.title = described
        .iter()
        .filter_map(|e| e.child(MEDIA, "title"))
        .find_map(|t| plain_text(&t.text()));
    media.description = described
        .iter()
        .filter_map(|e| e.child(MEDIA, "description"))
        .find_map(media_description);
    // The largest thumbnail (by the stated size; the first when none is stated).
    let mut best: Option<(u64, String)> = None;
    for thumbnail in described
        .iter()
        .flat_map(|e| e.children_named(MEDIA, "thumbnail"))
    {
        let Some(url) = thumbnail.attr("url").and_then(|u| base.resolve(u)) else {
            continue;
        };
        let size = length(thumbnail.attr("width")).unwrap_or(0)
            * length(thumbnail.attr("height")).unwrap_or(1);
        if best.as_ref().is_none_or(|(best_size, _)| size > *best_size) {
            best = Some((size, url));
        }
    }
    let mut image_content = None;
    for content in &contents {
        let Some(url) = content.attr("url").and_then(|u| base.resolve(u)) else {
            continue;
        };
        let mime_type = mime(content.attr("type"));
        let is_image = content.attr("medium").map(str::trim) == Some("image")
            || mime_type
                .as_deref()
                .is_some_and(|m| m.starts_with("image/"));
        if is_image && image_content.is_none() {
            image_content = Some(url.clone());
        }
        media.enclosures.push(Enclosure {
            url,
            mime_type,
            length: length(content.attr("fileSize")),
        });
    }
    let itunes_image = item.children_named(ITUNES, "image").find_map(|image| {
        let href = image
            .attr("href")
            .map(str::to_owned)
            .unwrap_or_else(|| image.text());
        base.resolve(&href)
    });
    media.thumbnail = best.map(|(_, url)| url).or(image_content).or(itunes_image);
    media
}

/// A `media:description` as HTML: `type="html"` is HTML, anything else plain text whose line
/// breaks are kept.
fn media_description(element: &Element) -> Option<String> {
    let is_html = element
        .attr("type")
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("html"));
    if is_html {
        rss_body(element)
    } else {
        text_to_html(&element.text())
    }
}

// ---------------------------------------------------------------------------------------------
// Atom links, used by both formats (RSS feeds often carry atom:link)

/// The relation of a link, lower-cased, with the IANA URI form reduced to its name.
fn link_rel(link: &Element) -> String {
    let rel = link
        .attr("rel")
        .map(str::trim)
        .unwrap_or("alternate")
        .to_ascii_lowercase();
    match rel.strip_prefix("http://www.iana.org/assignments/relation/") {
        Some(short) => short.to_owned(),
        None if rel.is_empty() => "alternate".to_owned(),
        None => rel,
    }
}

fn link_href(link: &Element, base: &Base) -> Option<String> {
    let href = link
        .attr("href")
        .map(str::to_owned)
        .unwrap_or_else(|| link.text());
    base.enter(link).resolve(&href)
}

/// The best link with one of `rels`: an HTML one first, then any.
fn atom_link(parent: &Element, base: &Base, rels: &[&str]) -> Option<String> {
    let links: Vec<&Element> = parent
        .children_named(ATOM, "link")
        .filter(|l| rels.contains(&link_rel(l).as_str()))
        .collect();
    let is_html = |l: &Element| {
        l.attr("type").is_none_or(|t| {
            matches!(
                t.trim().to_ascii_lowercase().as_str(),
                "text/html" | "application/xhtml+xml" | ""
            )
        })
    };
    links
        .iter()
        .filter(|l| is_html(l))
        .chain(links.iter())
        .find_map(|l| link_href(l, base))
}

fn atom_links(parent: &Element, base: &Base, rel: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for link in parent
        .children_named(ATOM, "link")
        .filter(|l| link_rel(l) == rel)
    {
        if let Some(href) = link_href(link, base)
            && !out.contains(&href)
        {
            out.push(href);
        }
    }
    out
}

/// The first link that is not about the feed machinery (self, edit, hub…), for entries without
/// an alternate link.
fn atom_other_link(entry: &Element, base: &Base) -> Option<String> {
    const NOT_A_PAGE: [&str; 8] = [
        "self",
        "enclosure",
        "edit",
        "edit-media",
        "hub",
        "replies",
        "license",
        "payment",
    ];
    entry
        .children_named(ATOM, "link")
        .filter(|l| !NOT_A_PAGE.contains(&link_rel(l).as_str()))
        .find_map(|l| link_href(l, base))
}

fn add_atom_enclosures(parent: &Element, base: &Base, draft: &mut ItemDraft) {
    for link in parent
        .children_named(ATOM, "link")
        .filter(|l| link_rel(l) == "enclosure")
    {
        if let Some(url) = link_href(link, base) {
            draft.add_enclosure(Enclosure {
                url,
                mime_type: mime(link.attr("type")),
                length: length(link.attr("length")),
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Atom

fn atom(root: &Element, version: FeedVersion, base: &Base) -> Feed {
    let mut feed = empty_feed(version);
    let site_url = atom_link(root, base, &["alternate"]);
    let fallback;
    let base = if base.url.is_none() {
        // Without the document's own URL, relative links resolve against the feed's link.
        fallback = Base {
            url: site_url.as_deref().and_then(|u| Url::parse(u).ok()),
            explicit: false,
        };
        &fallback
    } else {
        base
    };
    feed.title = root
        .child(ATOM, "title")
        .and_then(atom_plain_text)
        .or_else(|| text_of(root, DC, "title").and_then(|t| plain_text(&t)));
    feed.site_url = atom_link(root, base, &["alternate"]);
    feed.feed_url = atom_link(root, base, &["self"]);
    feed.hubs = atom_links(root, base, "hub");
    feed.description = root
        .child(ATOM, "subtitle")
        .or_else(|| root.child(ATOM, "tagline"))
        .and_then(atom_plain_text)
        .or_else(|| text_of(root, DC, "description").and_then(|d| plain_text(&d)));
    feed.language = root.attr_ns(Ns::Xml, "lang").map(str::to_owned);
    feed.icon = ["icon", "logo"]
        .iter()
        .find_map(|name| text_of(root, ATOM, name).and_then(|u| base.resolve(&u)));
    feed.updated = date_of(root, &[(ATOM, "updated"), (ATOM, "modified"), (DC, "date")]);
    feed.authors = atom_people(root);
    feed.items = root
        .children_named(ATOM, "entry")
        .filter(|e| e.closed)
        .map(|e| atom_entry(e, base, &feed.authors))
        .collect();
    feed
}

fn atom_entry(entry: &Element, feed_base: &Base, feed_authors: &[String]) -> Item {
    let base = feed_base.enter(entry);
    let mut draft = ItemDraft {
        guid: text_of(entry, ATOM, "id"),
        ..ItemDraft::default()
    };
    let content = entry.child(ATOM, "content");
    // The alternate link, else the out-of-line content's location, else another link.
    draft.url = atom_link(entry, &base, &["alternate"])
        .or_else(|| content.and_then(|c| c.attr("src").and_then(|src| base.enter(c).resolve(src))))
        .or_else(|| atom_other_link(entry, &base));
    let media = media_of(entry, &base);
    draft.title = entry
        .child(ATOM, "title")
        .and_then(atom_plain_text)
        .or_else(|| text_of(entry, DC, "title").and_then(|t| plain_text(&t)))
        .or_else(|| media.title.clone());
    let summary = entry.child(ATOM, "summary");
    draft.summary = summary
        .and_then(|s| atom_html(s, &base))
        .or_else(|| entry.child(DC, "description").and_then(rss_body))
        .or_else(|| media.description.clone());
    draft.content = content.and_then(|c| atom_html(c, &base));
    draft.language = [Some(entry), content]
        .into_iter()
        .flatten()
        .find_map(|e| e.attr_ns(Ns::Xml, "lang"))
        .map(str::to_owned);
    let explicit_base = [content, summary]
        .into_iter()
        .flatten()
        .map(|e| base.enter(e))
        .find(|b| b.explicit && b.url.is_some())
        .or_else(|| base.explicit.then(|| base.clone()));
    draft.content_base = content_base(explicit_base.as_ref(), draft.url.as_deref(), feed_base);
    draft.published = date_of(
        entry,
        &[
            (ATOM, "published"),
            (ATOM, "issued"),
            (ATOM, "created"),
            (DC, "date"),
        ],
    );
    draft.updated = date_of(
        entry,
        &[(ATOM, "updated"), (ATOM, "modified"), (DCTERMS, "modified")],
    );
    let authors = atom_people(entry);
    draft.authors = if authors.is_empty() {
        // RFC 4287 §4.2.1: an entry without an author inherits the feed's.
        entry
            .child(ATOM, "source")
            .map(atom_people)
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| feed_authors.to_vec())
    } else {
        authors
    };
    for dc_creator in entry.children_named(DC, "creator") {
        draft.add_author(person_from_rss(&dc_creator.text()));
    }
    for category in entry.children_named(ATOM, "category") {
        let value = category
            .attr("term")
            .or_else(|| category.attr("label"))
            .map(str::to_owned);
        draft.add_category(&value.unwrap_or_else(|| category.text()));
    }
    for subject in entry.children_named(DC, "subject") {
        draft.add_category(&subject.text());
    }
    add_atom_enclosures(entry, &base, &mut draft);
    media.add_to(&mut draft);
    draft.finish()
}

fn atom_people(parent: &Element) -> Vec<String> {
    let mut people: Vec<String> = Vec::new();
    for author in parent.children_named(ATOM, "author") {
        let name = text_of(author, ATOM, "name")
            .or_else(|| text_of(author, ATOM, "email"))
            .or_else(|| (!author.has_element_children()).then(|| author.text()))
            .and_then(|n| plain_text(&n));
        if let Some(name) = name
            && !people.contains(&name)
        {
            people.push(name);
        }
    }
    people
}

/// The kind of an Atom text or content construct.
enum AtomKind {
    Text,
    Html,
    Xhtml,
    /// Anything else (images, other payloads): nothing to show as text.
    Other,
}

fn atom_kind(element: &Element) -> AtomKind {
    let kind = element
        .attr("type")
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match kind.as_str() {
        // Atom 0.3's mode="escaped" without a type is escaped HTML in practice.
        "" if atom03_mode(element) == Some("escaped") => AtomKind::Html,
        "" | "text" | "text/plain" => AtomKind::Text,
        "html" | "text/html" => AtomKind::Html,
        "xhtml" | "application/xhtml+xml" => AtomKind::Xhtml,
        other if other.starts_with("text/") => AtomKind::Text,
        _ => AtomKind::Other,
    }
}

/// Atom 0.3's `mode` (`xml`, `escaped` or `base64`), trimmed.
fn atom03_mode(element: &Element) -> Option<&str> {
    element.attr("mode").map(str::trim)
}

/// The text of an Atom 0.3 `mode="base64"` construct, decoded (as UTF-8, damaged bytes
/// replaced), or the element's text for any other mode.
fn atom_text(element: &Element) -> Option<String> {
    let text = element.text();
    if atom03_mode(element) != Some("base64") {
        return Some(text);
    }
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    // Feeds wrap the payload over lines and are careless with the padding.
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let compact: String = text.split_whitespace().collect();
    let bytes = LENIENT.decode(compact).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// An Atom text or content construct as HTML; `xml:base` inside XHTML content applies to the
/// links below it.
fn atom_html(element: &Element, base: &Base) -> Option<String> {
    let base = base.enter(element);
    let base = base.url.as_ref();
    let base64 = atom03_mode(element) == Some("base64");
    let html = match atom_kind(element) {
        AtomKind::Other => return None,
        AtomKind::Xhtml if !base64 => {
            let div = element.child(&[Ns::Xhtml, Ns::None, Ns::Atom, Ns::Other], "div");
            let holder = div.unwrap_or(element);
            let text = holder.text();
            if !holder.has_element_children() && is_clearly_markup(&text) {
                // The div holds escaped HTML instead of XHTML elements: it was meant as HTML.
                text
            } else {
                holder.inner_html_based(base)
            }
        }
        // Atom 0.3's mode="xml" (and broken 1.0 feeds) put markup unescaped into the element.
        _ if !base64 && element.has_element_children() => element.inner_html_based(base),
        AtomKind::Html | AtomKind::Xhtml => {
            unescape_double_escaped_html(&atom_text(element)?).into_owned()
        }
        AtomKind::Text => {
            let text = atom_text(element)?;
            // Text that is clearly HTML (a common mislabelling) is read as HTML, as the
            // reference parsers do; real text keeps its line breaks.
            if is_clearly_markup(&text) {
                text
            } else {
                text_to_html(&text)?
            }
        }
    };
    (!html.trim().is_empty()).then_some(html)
}

/// An Atom text construct (a title) as plain text. Plain text is only whitespace-collapsed: its
/// entities were XML's and are already decoded, so decoding again would corrupt "&amp;lt;".
fn atom_plain_text(element: &Element) -> Option<String> {
    match atom_kind(element) {
        AtomKind::Text if !element.has_element_children() => {
            let text = atom_text(element)?;
            if is_clearly_markup(&text) {
                return html_to_text(&text);
            }
            let text = collapse_whitespace(&text);
            (!text.is_empty()).then_some(text)
        }
        AtomKind::Xhtml | AtomKind::Text => html_to_text(&element.inner_html()),
        AtomKind::Html | AtomKind::Other => plain_text(&atom_text(element)?),
    }
}
