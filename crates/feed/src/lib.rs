//! Feed understanding for tidings: bytes in, one normalized feed out, with safe HTML.
//!
//! Everything here is pure (no network, no database), so it can be tested exhaustively and
//! fuzzed. The fetcher and the store call into it:
//!
//! - [`parse`] reads RSS 0.90–2.0, RSS 1.0 (RDF), Atom 0.3 / 1.0 and JSON Feed 1.0 / 1.1 in any
//!   encoding into a [`Feed`] (F1);
//! - [`Item::identity`] is the item identity key of F4 (see [`identity`]);
//! - [`Sanitizer`] makes feed HTML safe to show (F5), [`Feed::sanitize_html`] applies it;
//! - [`discover`] finds the feeds of a web page (F2);
//! - [`websub_links`] finds the WebSub hub and topic a feed or page advertises (F18).
//!
//! The parser is our own, on quick-xml, rather than feed-rs: see `BENCHMARKS.md` and the
//! commit introducing it for the measurements and the cases that decided it.

#![warn(missing_docs)]

pub mod date;
pub mod discover;
pub mod encoding;
mod error;
pub mod identity;
mod json_feed;
mod markup;
mod model;
mod policy;
pub mod report;
pub mod sanitize;
mod simple_html;
pub mod text;
mod urls;
pub mod websub;
mod xml;
mod xml_feed;

pub use date::parse_date;
pub use discover::{CandidateKind, CandidateSource, FeedCandidate, discover};
pub use error::ParseError;
pub use identity::{IdentitySource, ItemIdentity, item_identity};
pub use model::{Enclosure, Feed, FeedFormat, FeedVersion, Item, ItemDraft, sanitize_items};
pub use sanitize::{SanitizeOptions, Sanitizer, sanitize_html};
pub use urls::{normalize_feed_url, normalize_feed_url_text};
pub use websub::{AdvertisedLinks, WebSubLinks, websub_links};

use url::Url;

/// The largest document [`parse`] reads by default. The fetcher caps bodies at 5 MB; this
/// leaves room for callers reading files while bounding memory (the tree costs a few times the
/// input).
pub const DEFAULT_MAX_INPUT_BYTES: usize = 32 * 1024 * 1024;

/// How far into a document junk before the XML is skipped (PHP warnings, stray text).
const LEADING_JUNK_WINDOW: usize = 4096;

/// What [`parse`] needs to know besides the bytes.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// The URL the feed was fetched from: relative links are resolved against it (after any
    /// `xml:base`).
    pub feed_url: Option<Url>,
    /// The `charset` of the HTTP `Content-Type`, if the response had one.
    pub http_charset: Option<String>,
    /// Larger documents are refused with [`ParseError::TooLarge`].
    pub max_input_bytes: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            feed_url: None,
            http_charset: None,
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

/// Parses a feed document of any supported format and encoding into the normalized model.
///
/// HTML bodies are returned as the feed wrote them (double escaping undone, Atom text escaped);
/// sanitize them with [`Feed::sanitize_html`] before showing them. A damaged document (truncated
/// or malformed XML) yields what came before the damage, with [`Feed::warning`] set. Never
/// panics, never reads a DTD, never fetches anything.
pub fn parse(bytes: &[u8], options: &ParseOptions) -> Result<Feed, ParseError> {
    if bytes.len() > options.max_input_bytes {
        return Err(ParseError::TooLarge {
            size: bytes.len(),
            limit: options.max_input_bytes,
        });
    }
    let decoded = encoding::decode_document(bytes, options.http_charset.as_deref());
    let text = decoded
        .text
        .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    let feed_url = options.feed_url.as_ref();
    match text.chars().next() {
        None => Err(ParseError::NotAFeed("the document is empty".to_owned())),
        Some('{') => json_feed::parse_json_feed(text, feed_url),
        Some('<') => parse_xml(text, feed_url),
        Some(_) => match find_xml_start(text) {
            Some(start) => parse_xml(&text[start..], feed_url),
            None => Err(ParseError::NotAFeed(format!(
                "the document is neither XML nor JSON (it starts with {:?})",
                text.chars().take(40).collect::<String>()
            ))),
        },
    }
}

/// Where the XML starts when something else comes first.
fn find_xml_start(text: &str) -> Option<usize> {
    let window_end = (0..=LEADING_JUNK_WINDOW.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))?;
    let window = &text[..window_end];
    ["<?xml", "<rss", "<feed", "<rdf:RDF"]
        .iter()
        .filter_map(|marker| window.find(marker))
        .min()
}

fn parse_xml(text: &str, feed_url: Option<&Url>) -> Result<Feed, ParseError> {
    let head: String = text
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    let head = head.trim_start_matches(|c: char| c.is_whitespace());
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        return Err(ParseError::NotAFeed(
            "this is an HTML page (look for its feeds with discovery)".to_owned(),
        ));
    }
    match xml::parse_tree(text) {
        Ok(document) => xml_feed::extract(document, feed_url),
        Err(xml::TreeError::NoRootElement(Some(why))) => Err(ParseError::NotAFeed(format!(
            "the document is not well-formed XML: {why}"
        ))),
        Err(xml::TreeError::NoRootElement(None)) => Err(ParseError::NotAFeed(
            "the XML document has no root element".to_owned(),
        )),
    }
}
