//! Text helpers shared by the parsers: HTML entity decoding, markup stripping, whitespace
//! collapsing and HTML escaping.
//!
//! Feeds put HTML entities (`&nbsp;`, `&hellip;`) where only XML's five are defined, escape HTML
//! twice, and put markup into titles. These helpers turn such values into what a person should
//! read, without ever failing.

use std::borrow::Cow;

use html5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};

use crate::markup::{RAW_TEXT, TokenKind, VOID, is_known_element, name_in, tokens};

/// The longest entity name we look up; HTML's longest is 31 characters plus the semicolon.
const MAX_ENTITY_NAME: usize = 40;

/// Resolves one entity reference body (what stands between `&` and `;`): a character reference
/// (`#233`, `#xE9`) or an XML / HTML named entity. Returns `None` for unknown names.
pub(crate) fn resolve_entity(name: &str) -> Option<Cow<'static, str>> {
    if let Some(number) = name.strip_prefix('#') {
        return Some(Cow::Owned(char_from_reference(number)?.to_string()));
    }
    if name.is_empty() || name.len() > MAX_ENTITY_NAME {
        return None;
    }
    let mut key = String::with_capacity(name.len() + 1);
    key.push_str(name);
    key.push(';');
    let &(first, second) = NAMED_ENTITIES.get(key.as_str())?;
    let mut out = String::with_capacity(8);
    out.extend(char::from_u32(first));
    if second != 0 {
        out.extend(char::from_u32(second));
    }
    Some(Cow::Owned(out))
}

/// Decodes a numeric character reference body (`233` or `xE9`), the way browsers do: invalid
/// code points become U+FFFD and the C1 range maps through windows-1252.
fn char_from_reference(number: &str) -> Option<char> {
    let (digits, radix) = match number.strip_prefix(['x', 'X']) {
        Some(hex) => (hex, 16),
        None => (number, 10),
    };
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let code = u32::from_str_radix(digits, radix).ok()?;
    Some(match code {
        0 => '\u{FFFD}',
        0x80..=0x9F => C1_REPLACEMENTS
            .get((code - 0x80) as usize)
            .copied()
            .flatten()
            .unwrap_or_else(|| char::from_u32(code).unwrap_or('\u{FFFD}')),
        _ => char::from_u32(code).unwrap_or('\u{FFFD}'),
    })
}

/// Decodes HTML character references (`&amp;`, `&nbsp;`, `&#8230;`, `&#x2026;`) in `text`.
/// Unknown or malformed references are kept as written.
pub fn decode_entities(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let body_len = after
            .bytes()
            .take(MAX_ENTITY_NAME + 1)
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'#')
            .count();
        let body = &after[..body_len];
        let has_semicolon = after.as_bytes().get(body_len) == Some(&b';');
        let resolved = if has_semicolon || body.starts_with('#') {
            resolve_entity(body)
        } else {
            None
        };
        match resolved {
            Some(value) => {
                out.push_str(&value);
                rest = &after[body_len + usize::from(has_semicolon)..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Whether `<` at this position starts a tag, comment or declaration rather than a literal
/// less-than sign ("a < b").
fn starts_markup(after_lt: &[u8]) -> bool {
    matches!(after_lt.first(), Some(b) if b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?'))
}

/// Whether the text contains something that looks like an HTML tag.
pub(crate) fn looks_like_markup(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr_iter(bytes, b'<').any(|i| starts_markup(&bytes[i + 1..]))
}

fn memchr_iter(bytes: &[u8], needle: u8) -> impl Iterator<Item = usize> + '_ {
    bytes
        .iter()
        .enumerate()
        .filter_map(move |(i, b)| (*b == needle).then_some(i))
}

/// Elements inside a line of text: their tags separate no words.
const INLINE: &[&str] = &[
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em",
    "font", "i", "ins", "kbd", "mark", "nobr", "q", "s", "samp", "small", "span", "strike",
    "strong", "sub", "sup", "time", "tt", "u", "var",
];

/// Removes tags, comments and the content of raw-text elements (`script`, `style`,
/// `textarea`…) from `text`, leaving its
/// characters (entities are not decoded here). Tags of elements that break lines (blocks, `br`,
/// unknown ones) become a space so words do not merge; inline ones (`<b>`, `<a>`…) vanish, so
/// "<em>web</em>." stays "web.". A `>` inside a quoted attribute value does not end a tag.
pub fn strip_markup(text: &str) -> Cow<'_, str> {
    if !looks_like_markup(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut skip_raw_text = false;
    for token in tokens(text) {
        match token.kind {
            TokenKind::Text if skip_raw_text => skip_raw_text = false,
            TokenKind::Text => out.push_str(token.text),
            TokenKind::Start { name, .. } => {
                // The raw text of script, style, textarea… is no reading matter.
                skip_raw_text = name_in(name, RAW_TEXT);
                if !name_in(name, INLINE) {
                    out.push(' ');
                }
            }
            TokenKind::End { name } => {
                skip_raw_text = false;
                if !name_in(name, INLINE) {
                    out.push(' ');
                }
            }
            TokenKind::Comment | TokenKind::Unclosed => {
                skip_raw_text = false;
                out.push(' ');
            }
        }
    }
    Cow::Owned(out)
}

/// Whether a title-like value is clearly markup, as the reference parsers decide it: every tag
/// in it names an HTML element, and at least one thing is unmistakable markup (an end tag
/// matching an earlier start tag, `<br/>`, or a comment). `Why <dialog> beats modals` and
/// `Styling <input type="range">` are text that mentions an element, not markup.
pub(crate) fn is_clearly_markup(text: &str) -> bool {
    if !looks_like_markup(text) {
        return false;
    }
    /// Distinct start tag names remembered; a title has a handful.
    const MAX_REMEMBERED: usize = 64;
    let mut opened: Vec<&str> = Vec::new();
    let mut evidence = false;
    for token in tokens(text) {
        match token.kind {
            TokenKind::Start {
                name, self_closing, ..
            } => {
                if !is_known_element(name) {
                    return false;
                }
                evidence |= self_closing && name_in(name, VOID);
                if opened.len() < MAX_REMEMBERED
                    && !opened.iter().any(|o| o.eq_ignore_ascii_case(name))
                {
                    opened.push(name);
                }
            }
            TokenKind::End { name } => {
                if !is_known_element(name) {
                    return false;
                }
                evidence |= opened.iter().any(|o| o.eq_ignore_ascii_case(name));
            }
            TokenKind::Comment => evidence |= token.text.starts_with("<!--"),
            TokenKind::Text | TokenKind::Unclosed => {}
        }
    }
    evidence
}

fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    let hay = haystack.as_bytes();
    let pat = needle.as_bytes();
    if pat.is_empty() || hay.len() < pat.len() {
        return None;
    }
    (0..=hay.len() - pat.len()).find(|&i| hay[i..i + pat.len()].eq_ignore_ascii_case(pat))
}

/// Collapses runs of whitespace (including no-break spaces) into one space and trims the ends.
pub fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Turns a title-like value (a title, a name, a category) into plain text: markup stripped
/// when it clearly is markup (see [`is_clearly_markup`]; otherwise `<` and `>` are the
/// characters the author wrote), entities decoded once, whitespace collapsed. Empty results
/// become `None`.
pub fn plain_text(raw: &str) -> Option<String> {
    if is_clearly_markup(raw) {
        html_to_text(raw)
    } else {
        finish_text(raw)
    }
}

/// Turns an HTML fragment into plain text: every tag stripped, entities decoded once,
/// whitespace collapsed. Empty results become `None`.
pub fn html_to_text(html: &str) -> Option<String> {
    finish_text(&strip_markup(html))
}

fn finish_text(text: &str) -> Option<String> {
    let decoded = decode_entities(text);
    let text = collapse_whitespace(&decoded);
    (!text.is_empty()).then_some(text)
}

/// Turns plain text into HTML that keeps its shape: blank lines separate paragraphs, single
/// line breaks become `<br>`; one line stays one escaped line. Empty text becomes `None`.
pub fn text_to_html(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if !trimmed.contains(['\n', '\r']) {
        return (!trimmed.is_empty()).then(|| escape_html(trimmed));
    }
    let text = trimmed.replace("\r\n", "\n").replace('\r', "\n");
    let mut html = String::with_capacity(text.len() + 16);
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, html: &mut String| {
        if paragraph.is_empty() {
            return;
        }
        html.push_str("<p>");
        for (index, line) in paragraph.iter().enumerate() {
            if index > 0 {
                html.push_str("<br>");
            }
            html.push_str(&escape_html(line));
        }
        html.push_str("</p>");
        paragraph.clear();
    };
    for line in text.split('\n') {
        let line = line.trim();
        if line.is_empty() {
            flush(&mut paragraph, &mut html);
        } else {
            paragraph.push(line);
        }
    }
    flush(&mut paragraph, &mut html);
    (!html.is_empty()).then_some(html)
}

/// Escapes text so that it can be placed in HTML as character data or a quoted attribute.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Undoes one level of escaping when an HTML body was escaped twice, i.e. it contains no real
/// tags but escaped ones (`&lt;p&gt;`). Bodies with real markup are returned unchanged.
pub fn unescape_double_escaped_html(html: &str) -> Cow<'_, str> {
    if looks_like_markup(html) || !contains_escaped_tag(html) {
        return Cow::Borrowed(html);
    }
    decode_entities(html)
}

/// Whether the text contains `&lt;` followed by a tag name or `/`, then later `&gt;`.
fn contains_escaped_tag(text: &str) -> bool {
    let mut rest = text;
    while let Some(pos) = find_ascii_case_insensitive(rest, "&lt;") {
        let after = &rest[pos + 4..];
        if starts_markup(after.as_bytes()) && find_ascii_case_insensitive(after, "&gt;").is_some() {
            return true;
        }
        rest = after;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_xml_html_and_numeric_entities() {
        assert_eq!(decode_entities("a&nbsp;b&hellip;"), "a\u{a0}b\u{2026}");
        assert_eq!(decode_entities("&#233;&#xE9;&#Xe9;"), "ééé");
        assert_eq!(decode_entities("&#146;"), "\u{2019}");
        assert_eq!(
            decode_entities("&#0;&#xD800;&#x110000;"),
            "\u{FFFD}\u{FFFD}\u{FFFD}"
        );
        assert_eq!(
            decode_entities("AT&amp;T &unknown; & &;"),
            "AT&T &unknown; & &;"
        );
        assert_eq!(decode_entities("&amp"), "&amp");
        assert_eq!(decode_entities("&#99999999999;"), "&#99999999999;");
    }

    #[test]
    fn strips_tags_but_not_less_than_signs() {
        assert_eq!(strip_markup("a < b and <b>bold</b>"), "a < b and bold");
        assert_eq!(strip_markup("<p>a</p><p>b<br>c</p>"), " a  b c ");
        assert_eq!(strip_markup("x<script>alert(1)</script>y"), "x  y");
        assert_eq!(strip_markup("x<!-- c -->y"), "x y");
        assert_eq!(strip_markup("x<b"), "x ");
        assert_eq!(strip_markup("x<STYLE>p{}</style"), "x  ");
        assert_eq!(strip_markup("<a title=\"1 > 0\">y</a>"), "y");
    }

    #[test]
    fn text_that_mentions_a_tag_is_not_markup() {
        assert_eq!(
            plain_text("Why <dialog> beats modals").as_deref(),
            Some("Why <dialog> beats modals")
        );
        assert_eq!(
            plain_text("Styling <input type=\"range\"> & <select>").as_deref(),
            Some("Styling <input type=\"range\"> & <select>")
        );
        assert_eq!(
            plain_text("a <b and c> d <unknown>x</unknown>").as_deref(),
            Some("a <b and c> d <unknown>x</unknown>")
        );
        assert_eq!(
            plain_text("<em>Really</em> <dialog>").as_deref(),
            Some("Really")
        );
        assert_eq!(
            plain_text("<span title=\"a > b\">Hi</span> there").as_deref(),
            Some("Hi there")
        );
        assert_eq!(plain_text("Line<br/>break").as_deref(), Some("Line break"));
        assert_eq!(
            plain_text("Jane Doe <jane@example.com>").as_deref(),
            Some("Jane Doe <jane@example.com>")
        );
        assert_eq!(
            html_to_text("<p>unclosed <b>bold").as_deref(),
            Some("unclosed bold")
        );
    }

    #[test]
    fn plain_text_becomes_paragraphs() {
        assert_eq!(
            text_to_html("First line\r\nsecond <line>\n\n\nNext & last\n").as_deref(),
            Some("<p>First line<br>second &lt;line&gt;</p><p>Next &amp; last</p>")
        );
        assert_eq!(text_to_html(" \n "), None);
        assert_eq!(
            text_to_html(" one <line> ").as_deref(),
            Some("one &lt;line&gt;")
        );
    }

    #[test]
    fn plain_text_combines_the_steps() {
        assert_eq!(
            plain_text("  <b>Hello</b>&nbsp;&amp;\n\t world&hellip; ").as_deref(),
            Some("Hello & world…")
        );
        assert_eq!(plain_text(" <br/> &nbsp; "), None);
    }

    #[test]
    fn double_escaped_html_is_unescaped_once() {
        assert_eq!(
            unescape_double_escaped_html("&lt;p&gt;Hi &amp;amp; bye&lt;/p&gt;"),
            "<p>Hi &amp; bye</p>"
        );
        assert_eq!(
            unescape_double_escaped_html("<p>&lt;b&gt; is bold</p>"),
            "<p>&lt;b&gt; is bold</p>"
        );
        assert_eq!(unescape_double_escaped_html("1 &lt; 2"), "1 &lt; 2");
    }
}
