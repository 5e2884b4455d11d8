//! The sanitizer's policy, shared by its two paths (ammonia's tree in `sanitize` and the
//! one-pass reader in `simple_html`): which elements and attributes survive, and how the URLs
//! they carry are kept (resolved against the base of the call, http(s) only, media https).

use std::borrow::Cow;
use std::cell::RefCell;

use url::Url;

use crate::urls::web_url;

/// Elements that survive, with their content.
pub(crate) const ALLOWED_TAGS: &[&str] = &[
    "p",
    "br",
    "a",
    "ul",
    "ol",
    "li",
    "blockquote",
    "pre",
    "code",
    "strong",
    "em",
    "b",
    "i",
    "u",
    "s",
    "sub",
    "sup",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "th",
    "td",
    "caption",
    "colgroup",
    "col",
    "figure",
    "figcaption",
    "dl",
    "dt",
    "dd",
    "img",
    "picture",
    "source",
    "audio",
    "video",
];

/// Attributes that survive, per element. No attribute is allowed on every element.
pub(crate) const ALLOWED_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("a", &["href", "title"]),
    (
        "img",
        &["src", "alt", "title", "width", "height", "srcset", "sizes"],
    ),
    ("source", &["src", "srcset", "type", "media", "sizes"]),
    ("audio", &["src"]),
    ("video", &["src", "poster", "width", "height"]),
    ("td", &["colspan", "rowspan"]),
    ("th", &["colspan", "rowspan"]),
    ("col", &["span"]),
    ("colgroup", &["span"]),
    ("ol", &["start"]),
];

/// Options of the sanitizer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SanitizeOptions {
    /// Rewrite `http:` image and media URLs to `https:` instead of dropping them.
    pub rewrite_http_media_to_https: bool,
    /// Keep `http:` image and media URLs as they are: the server's media proxy
    /// (`TIDINGS_MEDIA_PROXY`) serves them over its own origin. Wins over the rewrite.
    pub keep_http_media: bool,
}

thread_local! {
    /// The base URL of the call in progress. ammonia's attribute filter is fixed when the
    /// builder is built, while the base changes per item; building an ammonia builder per item
    /// would cost more than the sanitizing itself.
    static CURRENT_BASE: RefCell<Option<Url>> = const { RefCell::new(None) };
}

/// Sets the base URL of the call in progress for the attribute filter, and clears it when
/// dropped (also on unwinding), so no base leaks into a later call.
pub(crate) struct BaseOfCall;

impl BaseOfCall {
    pub(crate) fn set(base: Option<&Url>) -> BaseOfCall {
        let base = base
            .filter(|b| matches!(b.scheme(), "http" | "https"))
            .cloned();
        CURRENT_BASE.with(|b| *b.borrow_mut() = base);
        BaseOfCall
    }
}

impl Drop for BaseOfCall {
    fn drop(&mut self) {
        CURRENT_BASE.with(|b| b.borrow_mut().take());
    }
}

/// The URL policy of one attribute: its value (URLs resolved, made https when configured), or
/// `None` when it is refused.
pub(crate) fn apply_url_policy<'a>(
    options: SanitizeOptions,
    element: &str,
    attribute: &str,
    value: &'a str,
) -> Option<Cow<'a, str>> {
    match (element, attribute) {
        (_, "href") => resolve(value).map(|u| Cow::Owned(u.into())),
        ("img" | "audio" | "video" | "source", "src") | ("video", "poster") => {
            media_url(options, value).map(|u| Cow::Owned(u.into()))
        }
        (_, "srcset") => filter_srcset(options, value).map(Cow::Owned),
        _ => Some(Cow::Borrowed(value)),
    }
}

fn resolve(value: &str) -> Option<Url> {
    CURRENT_BASE.with(|base| web_url(base.borrow().as_ref(), value))
}

/// Image and media URLs must be https; http is rewritten when configured, else dropped.
fn media_url(options: SanitizeOptions, value: &str) -> Option<Url> {
    media_url_of(options, resolve(value)?)
}

pub(crate) fn media_url_of(options: SanitizeOptions, mut url: Url) -> Option<Url> {
    match url.scheme() {
        "https" => Some(url),
        "http" if options.keep_http_media => Some(url),
        "http" if options.rewrite_http_media_to_https => {
            url.set_scheme("https").ok()?;
            // The default port of http means the default port of https after the rewrite.
            if url.port() == Some(80) {
                url.set_port(None).ok()?;
            }
            Some(url)
        }
        _ => None,
    }
}

/// Keeps the candidates of a `srcset` whose URL passes the media rule and whose descriptor is
/// well formed (`2x`, `640w`, `1.5x` or none).
fn filter_srcset(options: SanitizeOptions, value: &str) -> Option<String> {
    let mut kept: Vec<String> = Vec::new();
    for candidate in value.split(',') {
        let mut parts = candidate.split_whitespace();
        let Some(raw_url) = parts.next() else {
            continue;
        };
        let descriptor = parts.next();
        if parts.next().is_some() || !descriptor.is_none_or(is_srcset_descriptor) {
            continue;
        }
        let Some(url) = media_url(options, raw_url) else {
            continue;
        };
        // A comma inside the URL would split the candidate differently on the next pass.
        let url = url.as_str().replace(',', "%2C");
        kept.push(match descriptor {
            Some(d) => format!("{url} {d}"),
            None => url,
        });
    }
    (!kept.is_empty()).then(|| kept.join(", "))
}

fn is_srcset_descriptor(descriptor: &str) -> bool {
    let Some(number) = descriptor.strip_suffix(['w', 'x']) else {
        return false;
    };
    !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && number.bytes().filter(|&b| b == b'.').count() <= 1
}
