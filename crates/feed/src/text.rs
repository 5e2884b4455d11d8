//! Text helpers shared by the parsers: HTML entity decoding, markup stripping, whitespace
//! collapsing and HTML escaping.
//!
//! Feeds put HTML entities (`&nbsp;`, `&hellip;`) where only XML's five are defined, escape HTML
//! twice, and put markup into titles. These helpers turn such values into what a person should
//! read, without ever failing.

use std::borrow::Cow;

use html5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};

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

/// Removes tags, comments and the content of `script` / `style` from `text`, leaving its
/// characters (entities are not decoded here). Tags become a space so words do not merge.
pub fn strip_markup(text: &str) -> Cow<'_, str> {
    if !looks_like_markup(text) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied_from = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' || !starts_markup(&bytes[i + 1..]) {
            i += 1;
            continue;
        }
        out.push_str(&text[copied_from..i]);
        let rest = &text[i..];
        let end = if rest.starts_with("<!--") {
            rest.find("-->").map(|e| e + 3)
        } else {
            let lower_name: String = rest[1..]
                .bytes()
                .take_while(u8::is_ascii_alphanumeric)
                .take(8)
                .map(|b| b.to_ascii_lowercase() as char)
                .collect();
            if lower_name == "script" || lower_name == "style" {
                let closing = format!("</{lower_name}");
                find_ascii_case_insensitive(rest, &closing).map(|start| {
                    rest[start..]
                        .find('>')
                        .map_or(rest.len(), |e| start + e + 1)
                })
            } else {
                rest.find('>').map(|e| e + 1)
            }
        };
        // An unclosed tag runs to the end of the text, as in a browser.
        let consumed = end.unwrap_or(rest.len());
        out.push(' ');
        i += consumed;
        copied_from = i;
    }
    out.push_str(&text[copied_from.min(text.len())..]);
    Cow::Owned(out)
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

/// Turns a title-like value into plain text: markup stripped, entities decoded once, whitespace
/// collapsed. Empty results become `None`.
pub fn plain_text(raw: &str) -> Option<String> {
    let stripped = strip_markup(raw);
    let decoded = decode_entities(&stripped);
    let text = collapse_whitespace(&decoded);
    (!text.is_empty()).then_some(text)
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
        assert_eq!(strip_markup("a < b and <b>bold</b>"), "a < b and  bold ");
        assert_eq!(strip_markup("x<script>alert(1)</script>y"), "x y");
        assert_eq!(strip_markup("x<!-- c -->y"), "x y");
        assert_eq!(strip_markup("x<b"), "x ");
        assert_eq!(strip_markup("x<STYLE>p{}</style"), "x ");
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
