//! The HTML sanitizer (F5): an allowlist on ammonia, with our URL policy.
//!
//! Feed HTML is untrusted. Only the elements and attributes below survive; every URL must be
//! http(s) after the HTML parser has decoded entities and the URL parser has removed the tabs
//! and newlines browsers ignore; images and media must be https (or are rewritten to https when
//! configured); relative URLs are made absolute against the item's base; links open in a new tab
//! without an opener or referrer. The output is a fixed point: sanitizing it again changes
//! nothing, which the tests and the fuzz target check.
//!
//! Nesting deeper than [`MAX_NESTING_DEPTH`] is flattened before the HTML reaches ammonia's
//! tree builder (whose work per tag grows with the depth, so 100,000 nested `<div>`s took 43 s):
//! the tags beyond that depth are dropped and their text kept, so the time is linear in the
//! input.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use url::Url;

use crate::markup::{RAW_TEXT, TokenKind, VOID, name_in, tokens};
use crate::urls::web_url;

/// Elements nested deeper than this lose their tags (their text stays): no real article comes
/// near it, and it bounds the sanitizer's work per tag.
pub const MAX_NESTING_DEPTH: usize = 128;

/// Elements that survive, with their content.
const ALLOWED_TAGS: &[&str] = &[
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
const ALLOWED_ATTRIBUTES: &[(&str, &[&str])] = &[
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

/// Elements removed together with everything inside them: active content, embedded documents,
/// forms, foreign markup (svg, math) and the raw-text elements used for mutation XSS.
const REMOVED_WITH_CONTENT: &[&str] = &[
    "script",
    "style",
    "template",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "applet",
    "noscript",
    "noembed",
    "noframes",
    "textarea",
    "select",
    "option",
    "form",
    "svg",
    "math",
    "title",
    "head",
    "xmp",
    "plaintext",
    "canvas",
    "dialog",
    "button",
    "input",
];

thread_local! {
    /// The base URL of the call in progress. ammonia's attribute filter is fixed when the
    /// builder is built, while the base changes per item; building an ammonia builder per item
    /// would cost more than the sanitizing itself.
    static CURRENT_BASE: RefCell<Option<Url>> = const { RefCell::new(None) };
    /// Whether the attribute filter dropped an attribute in the call in progress: ammonia
    /// removes such attributes with `swap_remove`, which reorders the rest, so the output is
    /// sanitized once more to reach the canonical order (and stay a fixed point).
    static FILTER_DROPPED: Cell<bool> = const { Cell::new(false) };
}

/// Options of the sanitizer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SanitizeOptions {
    /// Rewrite `http:` image and media URLs to `https:` instead of dropping them.
    pub rewrite_http_media_to_https: bool,
    /// Keep `http:` image and media URLs as they are: the server's media proxy
    /// (`TIDINGS_MEDIA_PROXY`) serves them over its own origin. Wins over the rewrite.
    pub keep_http_media: bool,
}

/// A configured sanitizer; build it once and reuse it (it is `Send + Sync`).
pub struct Sanitizer {
    builder: ammonia::Builder<'static>,
    options: SanitizeOptions,
}

impl std::fmt::Debug for Sanitizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sanitizer").finish_non_exhaustive()
    }
}

impl Default for Sanitizer {
    fn default() -> Self {
        Sanitizer::new(SanitizeOptions::default())
    }
}

impl Sanitizer {
    /// Builds a sanitizer with the allowlist and the given options.
    pub fn new(options: SanitizeOptions) -> Sanitizer {
        let mut builder = ammonia::Builder::empty();
        builder
            .tags(ALLOWED_TAGS.iter().copied().collect())
            .tag_attributes(
                ALLOWED_ATTRIBUTES
                    .iter()
                    .map(|(tag, attrs)| (*tag, attrs.iter().copied().collect::<HashSet<_>>()))
                    .collect::<HashMap<_, _>>(),
            )
            .generic_attributes(HashSet::new())
            .clean_content_tags(REMOVED_WITH_CONTENT.iter().copied().collect())
            .url_schemes(["http", "https"].into_iter().collect())
            .strip_comments(true)
            .link_rel(Some("noopener noreferrer"))
            .set_tag_attribute_value("a", "target", "_blank")
            .set_tag_attribute_value("audio", "controls", "controls")
            .set_tag_attribute_value("video", "controls", "controls")
            // The attribute filter resolves relative URLs itself (it must apply the https rule
            // to the resolved URL); whatever is still relative afterwards is dropped.
            .url_relative(ammonia::UrlRelative::Custom(Box::new(drop_relative_url)))
            .attribute_filter(move |element, attribute, value| {
                filter_attribute(options, element, attribute, value)
            });
        Sanitizer { builder, options }
    }

    /// An absolute image URL as an `<img src>` would be kept: https, or http rewritten to https
    /// when configured; `None` otherwise.
    pub fn image_url(&self, url: &str) -> Option<String> {
        let url = web_url(None, url)?;
        media_url_of(self.options, url).map(String::from)
    }

    /// Sanitizes an HTML fragment. Relative URLs are resolved against `base` (dropped when there
    /// is none or it is not http(s)).
    pub fn clean(&self, html: &str, base: Option<&Url>) -> String {
        struct ResetBase;
        impl Drop for ResetBase {
            fn drop(&mut self) {
                CURRENT_BASE.with(|b| b.borrow_mut().take());
            }
        }
        let base = base
            .filter(|b| matches!(b.scheme(), "http" | "https"))
            .cloned();
        CURRENT_BASE.with(|b| *b.borrow_mut() = base);
        let _reset = ResetBase;
        FILTER_DROPPED.with(|d| d.set(false));
        let flat = flatten_deep_nesting(html, MAX_NESTING_DEPTH);
        let flattened = matches!(flat, Cow::Owned(_));
        let once = self.builder.clean(&flat).to_string();
        let needs_second_pass = FILTER_DROPPED.with(Cell::get)
            || (flattened
                && matches!(
                    flatten_deep_nesting(&once, MAX_NESTING_DEPTH),
                    Cow::Owned(_)
                ));
        if !needs_second_pass {
            return once;
        }
        // Every URL left is absolute and passed the policy, so this pass drops nothing and
        // only puts the attributes in their canonical order (or, after flattening, removes
        // the depth the tree builder's repairs may have added back).
        let again = flatten_deep_nesting(&once, MAX_NESTING_DEPTH);
        self.builder.clean(&again).to_string()
    }
}

/// Drops the start and end tags of elements nested deeper than `max_depth` (and the content of
/// raw-text elements such as `script` there), keeping everything else as written. Linear: the
/// open elements tracked are at most `max_depth`. The depth is counted as a browser would build
/// the tree, closing the elements HTML closes implicitly (`<p>` before a block, `<li>` before
/// the next one, table cells and rows), so unclosed paragraphs do not count as nesting.
pub fn flatten_deep_nesting(html: &str, max_depth: usize) -> Cow<'_, str> {
    if html.bytes().filter(|&b| b == b'<').count() <= max_depth {
        return Cow::Borrowed(html);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut position = 0;
    let mut open: Vec<&str> = Vec::with_capacity(max_depth);
    // Start tags dropped beyond the depth and not yet closed, by lower-case name.
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut drop_raw_text = false;
    for token in tokens(html) {
        let start = position;
        position += token.text.len();
        let keep = match token.kind {
            TokenKind::Text => !std::mem::take(&mut drop_raw_text),
            TokenKind::Start { name, .. } => {
                drop_raw_text = false;
                if name_in(name, VOID) {
                    true
                } else {
                    close_implied(&mut open, name);
                    if open.len() < max_depth {
                        open.push(name);
                        true
                    } else {
                        *dropped.entry(name.to_ascii_lowercase()).or_default() += 1;
                        drop_raw_text = is_raw_text(name);
                        false
                    }
                }
            }
            TokenKind::End { name } => {
                drop_raw_text = false;
                let lower = name.to_ascii_lowercase();
                match dropped.get_mut(&lower) {
                    Some(count) if *count > 0 => {
                        *count -= 1;
                        false
                    }
                    _ => {
                        if let Some(index) = open.iter().rposition(|o| o.eq_ignore_ascii_case(name))
                        {
                            open.truncate(index);
                        }
                        true
                    }
                }
            }
            TokenKind::Comment | TokenKind::Unclosed => {
                drop_raw_text = false;
                true
            }
        };
        if !keep {
            out.push_str(&html[copied..start]);
            copied = position;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(html);
    }
    out.push_str(&html[copied..]);
    Cow::Owned(out)
}

fn is_raw_text(name: &str) -> bool {
    name_in(name, RAW_TEXT)
}

/// Closes, in `open`, what a start tag `name` closes implicitly in HTML.
fn close_implied(open: &mut Vec<&str>, name: &str) {
    const SCOPE: &[&str] = &[
        "table", "td", "th", "caption", "button", "marquee", "object", "applet", "template", "html",
    ];
    const CLOSES_P: &[&str] = &[
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "dd",
        "dt",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "ul",
    ];
    let close = |open: &mut Vec<&str>, targets: &[&str], stops: &[&str]| {
        for index in (0..open.len()).rev() {
            if name_in(open[index], targets) {
                open.truncate(index);
                return;
            }
            if name_in(open[index], stops) {
                return;
            }
        }
    };
    if name_in(name, CLOSES_P) {
        close(open, &["p"], SCOPE);
    }
    if name.eq_ignore_ascii_case("li") {
        close(open, &["li"], &["ul", "ol", "menu", "table", "td", "th"]);
    } else if name_in(name, &["dt", "dd"]) {
        close(open, &["dt", "dd"], &["dl", "table", "td", "th"]);
    } else if name_in(name, &["td", "th"]) {
        close(open, &["td", "th"], &["tr", "table"]);
    } else if name.eq_ignore_ascii_case("tr") {
        close(open, &["tr"], &["table"]);
    } else if name.eq_ignore_ascii_case("option") {
        close(open, &["option"], &["select"]);
    }
}

/// Sanitizes with the default options: a shortcut for one-off calls.
pub fn sanitize_html(html: &str, base: Option<&Url>) -> String {
    Sanitizer::default().clean(html, base)
}

/// Relative URLs left after the attribute filter could not be resolved: drop them.
fn drop_relative_url(_: &str) -> Option<Cow<'_, str>> {
    None
}

/// The URL policy, applied to attributes that passed the allowlist.
fn filter_attribute<'a>(
    options: SanitizeOptions,
    element: &str,
    attribute: &str,
    value: &'a str,
) -> Option<Cow<'a, str>> {
    let kept = apply_url_policy(options, element, attribute, value);
    if kept.is_none() {
        FILTER_DROPPED.with(|d| d.set(true));
    }
    kept
}

fn apply_url_policy<'a>(
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

fn media_url_of(options: SanitizeOptions, mut url: Url) -> Option<Url> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://example.com/blog/post").expect("base")
    }

    #[test]
    fn keeps_allowed_markup() {
        let out = sanitize_html(
            "<p>Hi <strong>you</strong><br></p><table><tr><td colspan=\"2\">x</td></tr></table>",
            None,
        );
        assert_eq!(
            out,
            "<p>Hi <strong>you</strong><br></p><table><tbody><tr><td colspan=\"2\">x</td></tr></tbody></table>"
        );
    }

    #[test]
    fn links_get_target_and_rel_and_absolute_urls() {
        let out = sanitize_html(
            "<a href=\"../x?a=1&amp;b=2\" onclick=\"x()\">x</a>",
            Some(&base()),
        );
        assert_eq!(
            out,
            "<a href=\"https://example.com/x?a=1&amp;b=2\" target=\"_blank\" rel=\"noopener noreferrer\">x</a>"
        );
        assert_eq!(
            sanitize_html("<a href=\"/x\">x</a>", None),
            "<a target=\"_blank\" rel=\"noopener noreferrer\">x</a>"
        );
    }

    #[test]
    fn images_are_https_only_or_rewritten() {
        assert_eq!(
            sanitize_html("<img src=\"http://a.example/i.png\">", None),
            "<img>"
        );
        assert_eq!(
            sanitize_html(
                "<img src=\"https://a.example/i.png\" alt=\"A\" style=\"x\">",
                None
            ),
            "<img src=\"https://a.example/i.png\" alt=\"A\">"
        );
        let rewriting = Sanitizer::new(SanitizeOptions {
            rewrite_http_media_to_https: true,
            ..SanitizeOptions::default()
        });
        assert_eq!(
            rewriting.clean("<img src=\"http://a.example:80/i.png\">", None),
            "<img src=\"https://a.example/i.png\">"
        );
        // For the server's media proxy, http: images are kept as they are.
        let keeping = Sanitizer::new(SanitizeOptions {
            keep_http_media: true,
            rewrite_http_media_to_https: true,
        });
        assert_eq!(
            keeping.clean(
                "<img src=\"http://a.example/i.png\" srcset=\"http://a.example/2.png 2x\">",
                None
            ),
            "<img src=\"http://a.example/i.png\" srcset=\"http://a.example/2.png 2x\">"
        );
        assert_eq!(
            keeping.clean("<img src=\"javascript:alert(1)\">", None),
            "<img>"
        );
        assert_eq!(
            sanitize_html("<img src=\"i.png\">", Some(&base())),
            "<img src=\"https://example.com/blog/i.png\">"
        );
    }

    #[test]
    fn srcset_is_filtered_per_candidate() {
        let out = sanitize_html(
            "<img srcset=\"a.png 1x, http://b.example/b.png 2x, javascript:alert(1) 3x, https://c.example/c.png 640w, https://d.example/d.png bogus\">",
            Some(&base()),
        );
        assert_eq!(
            out,
            "<img srcset=\"https://example.com/blog/a.png 1x, https://c.example/c.png 640w\">"
        );
    }

    #[test]
    fn media_get_controls_and_https_sources() {
        let out = sanitize_html(
            "<video src=\"http://x.example/v.mp4\" autoplay poster=\"https://x.example/p.png\"><source src=\"https://x.example/v.webm\" type=\"video/webm\"></video>",
            None,
        );
        assert_eq!(
            out,
            "<video poster=\"https://x.example/p.png\" controls=\"controls\"><source src=\"https://x.example/v.webm\" type=\"video/webm\"></video>"
        );
    }

    /// The nesting depth of well-formed HTML, counted like `flatten_deep_nesting` does.
    fn depth(html: &str) -> usize {
        let (mut depth, mut max) = (0usize, 0usize);
        for token in tokens(html) {
            match token.kind {
                TokenKind::Start { name, .. } if !name_in(name, VOID) => {
                    depth += 1;
                    max = max.max(depth);
                }
                TokenKind::End { .. } => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        max
    }

    #[test]
    fn deep_nesting_is_flattened_and_text_kept() {
        let html = format!(
            "{}<p>deep <b>text</b></p>{}",
            "<div><blockquote>".repeat(5_000),
            "</blockquote></div>".repeat(5_000)
        );
        let out = sanitize_html(&html, None);
        assert!(out.contains("deep text"), "{}", &out[out.len() - 200..]);
        assert!(depth(&out) <= MAX_NESTING_DEPTH, "depth {}", depth(&out));
        assert_eq!(sanitize_html(&out, None), out);
        // Unclosed paragraphs, list items and cells are siblings, not nesting.
        let siblings = "<ul>".to_owned() + &"<li><p>item".repeat(1_000) + "</ul>";
        assert_eq!(flatten_deep_nesting(&siblings, 8), siblings);
        let cells = "<table><tr><td>a<td>b".to_owned() + &"<tr><td>c".repeat(500);
        assert!(matches!(flatten_deep_nesting(&cells, 8), Cow::Borrowed(_)));
        // Beyond the depth: tags go, text stays, script content goes with its tags.
        assert_eq!(
            flatten_deep_nesting("<i><i><i><b>x<script>y</script></b></i></i></i>", 2),
            "<i><i>x</i></i>"
        );
    }

    #[test]
    fn output_is_a_fixed_point() {
        let sanitizer = Sanitizer::default();
        for html in [
            "<p>a<a href=\"/x\">b</a><img src=\"/i.png\" srcset=\"/i.png 2x\"></p>",
            "<table><td>x<p>y</table>",
            "<b><p>x</b>y</p>",
            "<a href=x><a href=y>z</a></a>",
        ] {
            let once = sanitizer.clean(html, Some(&base()));
            assert_eq!(sanitizer.clean(&once, Some(&base())), once, "{html}");
        }
    }
}
