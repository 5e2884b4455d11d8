//! Full text for tidings (F6): the main content of an article page, as safe HTML.
//!
//! Pure: bytes and the page's URL in, sanitized article out; the worker fetches the page
//! through the guarded client and stores the result. The steps:
//!
//! 1. decode the bytes: a byte order mark, else the HTTP `charset`, else the page's own
//!    `<meta charset>` or `<meta http-equiv="Content-Type">`, else UTF-8 when the bytes are
//!    UTF-8, else the Japanese legacy encodings, else windows-1252 ([`decode_page`]);
//! 2. find the article with readability (the `dom_smoothie` port of Mozilla's algorithm):
//!    navigation, sidebars, footers and comments scored out;
//! 3. sanitize it with the feed sanitizer, so it is as safe as any feed content, with
//!    relative links resolved against the page's URL.
//!
//! ```
//! use tidings_extract::{extract, text_chars};
//! use tidings_feed::Sanitizer;
//!
//! let page = format!(
//!     "<html><head><title>Tides</title></head><body><nav><a href='/'>Home</a></nav>\
//!      <article><h1>Tides</h1>{}</article><footer>© Example</footer></body></html>",
//!     "<p>The moon pulls the sea toward it, and the earth turns beneath the bulge.</p>".repeat(12)
//! );
//! let url = url::Url::parse("https://example.com/tides").unwrap();
//! let article = extract(page.as_bytes(), &url, None, &Sanitizer::default()).unwrap();
//! assert!(article.html.contains("The moon pulls the sea"));
//! assert!(!article.text.contains("Home"));
//! assert_eq!(article.text_chars, text_chars(&article.html));
//! ```

#![warn(missing_docs)]

pub mod coverage;

use std::borrow::Cow;

use encoding_rs::Encoding;
use tidings_feed::Sanitizer;
use tidings_feed::encoding::decode_document;
use tidings_feed::text::html_to_text;
use url::Url;

/// Elements a page may have before extraction refuses it: far past any article (a long news
/// page has 3,000–6,000), and a bound on the work one page can cost.
pub const MAX_ELEMENTS: usize = 60_000;

/// Element depth kept for extraction: the sanitizer's (see [`extract`]).
pub const MAX_DEPTH: usize = tidings_feed::sanitize::MAX_NESTING_DEPTH;

/// How far into a page its `<meta charset>` is looked for. The HTML standard's prescan reads
/// 1,024 bytes; pages with long `<head>`s put it later, so a little more is read.
const META_WINDOW: usize = 4096;

/// An article found in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// The article's title as the page gives it, when it has one.
    pub title: Option<String>,
    /// The article's content, sanitized like feed content.
    pub html: String,
    /// The content as plain text, whitespace collapsed.
    pub text: String,
    /// Characters of `text`: what the threshold and the comparison with the feed count.
    pub text_chars: usize,
    /// The encoding the page was read with (`Shift_JIS`, `UTF-8`…).
    pub encoding: &'static str,
}

/// Why a page gave no article.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// The page's URL is not an absolute http(s) URL.
    #[error("the page URL must be an absolute http(s) URL: {0}")]
    BadUrl(String),
    /// Too many elements to look at.
    #[error("the page has too many elements to extract an article from (more than {0})")]
    TooLarge(usize),
    /// Readability found no main content (a home page, a search page, a login wall).
    #[error("no article found in the page")]
    NoArticle,
    /// The extractor failed on this page; the page is at fault, nothing else is.
    #[error("the article could not be extracted: {0}")]
    Failed(String),
}

/// Characters of text in an HTML fragment: tags removed, entities decoded, whitespace
/// collapsed. The measure of "short" content and of which of two contents is longer.
pub fn text_chars(html: &str) -> usize {
    html_to_text(html).map_or(0, |text| text.chars().count())
}

/// The page as text: see the crate's documentation for the order of the clues. Never fails;
/// undecodable bytes become U+FFFD.
pub fn decode_page<'a>(
    bytes: &'a [u8],
    http_charset: Option<&str>,
) -> (Cow<'a, str>, &'static Encoding) {
    let meta = meta_charset(bytes);
    let from_http = http_charset
        .map(clean_label)
        .and_then(|label| Encoding::for_label(label.as_bytes()).map(|e| (label, e)));
    let declared = match from_http {
        // Servers label everything ISO-8859-1 by default; a page that says UTF-8 and is UTF-8
        // is believed over that default, as the feed decoder does with XML declarations.
        Some((_, encoding))
            if (encoding == encoding_rs::WINDOWS_1252 || encoding.name() == "US-ASCII")
                && meta.as_deref() == Some("UTF-8")
                && std::str::from_utf8(bytes).is_ok() =>
        {
            meta.as_deref()
        }
        Some((label, _)) => Some(label),
        None => meta.as_deref(),
    };
    let decoded = decode_document(bytes, declared);
    (decoded.text, decoded.encoding)
}

fn clean_label(label: &str) -> &str {
    label.trim().trim_matches(['"', '\''])
}

/// The charset a page declares in its first bytes: `<meta charset="…">`, or the `charset`
/// parameter of `<meta http-equiv="Content-Type" content="…">`. Only labels the Encoding
/// standard knows count; UTF-16 declared in ASCII bytes is read as UTF-8, as browsers do.
pub fn meta_charset(bytes: &[u8]) -> Option<String> {
    let window = &bytes[..bytes.len().min(META_WINDOW)];
    // ASCII-only view: the markup that declares a charset is ASCII in every encoding the prescan
    // applies to, and lower-casing it makes the search case-insensitive.
    let lower: Vec<u8> = window.iter().map(u8::to_ascii_lowercase).collect();
    let mut from = 0;
    while let Some(at) = find(&lower[from..], b"<meta") {
        let start = from + at;
        let end = lower[start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(label) = charset_in_tag(tag) {
            let encoding = Encoding::for_label(label)?;
            let name = if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
                "utf-8"
            } else {
                encoding.name()
            };
            return Some(name.to_owned());
        }
        from = end.max(start + 1);
        if from >= lower.len() {
            break;
        }
    }
    None
}

/// The charset label in one lower-cased `<meta …` tag, when it declares one.
fn charset_in_tag(tag: &[u8]) -> Option<&[u8]> {
    let at = find(tag, b"charset")?;
    let rest = &tag[at + b"charset".len()..];
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b"=")?
        .trim_ascii_start();
    let quote = *rest.first()?;
    let value = if quote == b'"' || quote == b'\'' {
        &rest[1..]
    } else {
        rest
    };
    let len = value
        .iter()
        .position(|&b| b == b'"' || b == b'\'' || b == b';' || b == b'/' || b.is_ascii_whitespace())
        .unwrap_or(value.len());
    let label = &value[..len];
    (!label.is_empty()).then_some(label)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Finds the article in `page` (the body of `url`, with the `charset` of its `Content-Type`
/// when it had one) and sanitizes it with `sanitizer`. An article whose text is empty counts
/// as none.
pub fn extract(
    page: &[u8],
    url: &Url,
    http_charset: Option<&str>,
    sanitizer: &Sanitizer,
) -> Result<Article, ExtractError> {
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(ExtractError::BadUrl(url.to_string()));
    }
    let (text, encoding) = decode_page(page, http_charset);
    let config = dom_smoothie::Config {
        max_elements_to_parse: MAX_ELEMENTS,
        ..dom_smoothie::Config::default()
    };
    // Readability and its DOM recurse over the tree: a page nested thousands deep would
    // overflow the stack (an abort, which no unwinding catches). Elements past the sanitizer's
    // depth lose their tags, as in feed content; real articles sit far shallower.
    let flat = tidings_feed::sanitize::flatten_deep_nesting(&text, MAX_DEPTH);
    let html: &str = &flat;
    // The extractor is a large port of heuristics over arbitrary pages: a bug of its own on
    // some page must cost that page its full text, never the worker.
    let found = std::panic::catch_unwind(|| {
        let mut readability =
            dom_smoothie::Readability::new(html, Some(url.as_str()), Some(config))?;
        readability.parse()
    });
    let article = match found {
        Ok(Ok(article)) => article,
        Ok(Err(dom_smoothie::ReadabilityError::TooManyElements(_, limit))) => {
            return Err(ExtractError::TooLarge(limit));
        }
        Ok(Err(dom_smoothie::ReadabilityError::BadDocumentURL)) => {
            return Err(ExtractError::BadUrl(url.to_string()));
        }
        Ok(Err(dom_smoothie::ReadabilityError::GrabFailed)) => return Err(ExtractError::NoArticle),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the extractor stopped on this page".to_owned());
            return Err(ExtractError::Failed(message));
        }
    };
    let clean = sanitizer.clean(&article.content, Some(url));
    let Some(text) = html_to_text(&clean) else {
        return Err(ExtractError::NoArticle);
    };
    let title = tidings_feed::text::plain_text(&article.title);
    Ok(Article {
        title,
        text_chars: text.chars().count(),
        html: clean,
        text,
        encoding: encoding.name(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_charset_reads_both_forms() {
        assert_eq!(
            meta_charset(b"<html><head><META CharSet=\"Shift_JIS\">").as_deref(),
            Some("Shift_JIS")
        );
        assert_eq!(
            meta_charset(
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=euc-jp\">"
            )
            .as_deref(),
            Some("EUC-JP")
        );
        assert_eq!(
            meta_charset(b"<meta charset=utf-16>").as_deref(),
            Some("utf-8")
        );
        assert_eq!(
            meta_charset(b"<meta name=\"viewport\" content=\"width=1\">"),
            None
        );
        assert_eq!(meta_charset(b"<meta charset=\"klingon\">"), None);
        assert_eq!(meta_charset(b"<meta charset="), None);
        assert_eq!(meta_charset(b""), None);
    }

    #[test]
    fn http_charset_wins_over_meta_and_a_bad_label_is_ignored() {
        let page = "<meta charset=\"shift_jis\"><p>é</p>";
        let latin1 = encoding_rs::WINDOWS_1252.encode(page).0;
        let (text, encoding) = decode_page(&latin1, Some("iso-8859-1"));
        assert!(text.contains("<p>é</p>"), "{text}");
        assert_eq!(encoding.name(), "windows-1252");
        let sjis = encoding_rs::SHIFT_JIS
            .encode("<meta charset=\"shift_jis\"><p>日本</p>")
            .0;
        let (text, encoding) = decode_page(&sjis, Some("no-such-charset"));
        assert!(text.contains("日本"), "{text}");
        assert_eq!(encoding.name(), "Shift_JIS");
    }

    #[test]
    fn a_server_default_latin1_label_yields_to_a_true_utf8_meta() {
        let page = "<meta charset=\"utf-8\"><p>café</p>";
        let (text, encoding) = decode_page(page.as_bytes(), Some("ISO-8859-1"));
        assert!(text.contains("café"), "{text}");
        assert_eq!(encoding.name(), "UTF-8");
    }

    #[test]
    fn refuses_urls_that_are_not_web_pages() {
        let url = Url::parse("mailto:someone@example.com").unwrap();
        let error = extract(b"<p>x</p>", &url, None, &Sanitizer::default()).unwrap_err();
        assert!(matches!(error, ExtractError::BadUrl(_)), "{error}");
    }

    #[test]
    fn text_chars_counts_characters_not_bytes_or_tags() {
        assert_eq!(text_chars("<p>日本語</p>"), 3);
        assert_eq!(text_chars("<p>a  <b>b</b>\n c &amp;</p>"), 7);
        assert_eq!(text_chars(""), 0);
    }
}
