//! A small, linear HTML tag scanner, tokenizing the way a browser's tokenizer does for what
//! matters here: where a tag starts and ends (a `>` inside a quoted attribute value does not end
//! it), comments, and the raw-text elements (`script`, `style`…) whose content is not markup.
//!
//! Two callers need tags without a DOM: deciding whether a title-like value is markup or text
//! that merely mentions a tag (`Why <dialog> beats modals`), and bounding the nesting depth
//! of HTML before it reaches the sanitizer's tree builder.

/// What a stretch of the input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind<'a> {
    /// Character data (also the content of raw-text elements).
    Text,
    /// A start tag, with its name as written and whether it has attributes.
    Start {
        name: &'a str,
        has_attributes: bool,
        self_closing: bool,
    },
    /// An end tag, with its name as written.
    End { name: &'a str },
    /// A comment, a doctype, a processing instruction or another `<!…>` / `<?…>` construct.
    Comment,
    /// A tag the input ends inside of (an unclosed quote or no `>`): a browser drops it with
    /// everything after it.
    Unclosed,
}

/// One token and the input it covers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind<'a>,
    pub text: &'a str,
}

/// Elements whose content is raw text up to their end tag.
pub(crate) const RAW_TEXT: &[&str] = &[
    "iframe", "noembed", "noframes", "noscript", "script", "style", "textarea", "title", "xmp",
];

/// Elements whose start tag closes an open `<p>` (in button scope) in HTML's tree building.
pub(crate) const CLOSES_P: &[&str] = &[
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

/// Elements that never have content or an end tag.
pub(crate) const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// HTML element names, current and obsolete, sorted for binary search.
const KNOWN_ELEMENTS: &[&str] = &[
    "a",
    "abbr",
    "acronym",
    "address",
    "applet",
    "area",
    "article",
    "aside",
    "audio",
    "b",
    "base",
    "basefont",
    "bdi",
    "bdo",
    "big",
    "blink",
    "blockquote",
    "body",
    "br",
    "button",
    "canvas",
    "caption",
    "center",
    "cite",
    "code",
    "col",
    "colgroup",
    "data",
    "datalist",
    "dd",
    "del",
    "details",
    "dfn",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "fieldset",
    "figcaption",
    "figure",
    "font",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "i",
    "iframe",
    "img",
    "input",
    "ins",
    "kbd",
    "label",
    "legend",
    "li",
    "link",
    "main",
    "map",
    "mark",
    "marquee",
    "math",
    "menu",
    "meta",
    "meter",
    "nav",
    "nobr",
    "noembed",
    "noframes",
    "noscript",
    "object",
    "ol",
    "optgroup",
    "option",
    "output",
    "p",
    "param",
    "picture",
    "plaintext",
    "pre",
    "progress",
    "q",
    "rp",
    "rt",
    "ruby",
    "s",
    "samp",
    "script",
    "search",
    "section",
    "select",
    "slot",
    "small",
    "source",
    "span",
    "strike",
    "strong",
    "style",
    "sub",
    "summary",
    "sup",
    "svg",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "time",
    "title",
    "tr",
    "track",
    "tt",
    "u",
    "ul",
    "var",
    "video",
    "wbr",
    "xmp",
];

/// Whether `name` (any case) is one of `list` (lower case).
pub(crate) fn name_in(name: &str, list: &[&str]) -> bool {
    list.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Whether `name` is an HTML element, or clearly meant as markup: a custom element
/// (`my-widget`) or a prefixed one (`o:p`, as word processors write).
pub(crate) fn is_known_element(name: &str) -> bool {
    if name.contains(['-', ':']) {
        return true;
    }
    if name.len() > 10 {
        return false;
    }
    let mut lower = [0u8; 10];
    for (slot, byte) in lower.iter_mut().zip(name.bytes()) {
        *slot = byte.to_ascii_lowercase();
    }
    let Ok(lower) = std::str::from_utf8(&lower[..name.len()]) else {
        return false;
    };
    KNOWN_ELEMENTS.binary_search(&lower).is_ok()
}

/// The tokens of `html`, in order, covering all of it.
pub(crate) fn tokens(html: &str) -> Tokens<'_> {
    Tokens {
        html,
        position: 0,
        raw_text_end: None,
    }
}

/// The iterator of [`tokens`].
pub(crate) struct Tokens<'a> {
    html: &'a str,
    position: usize,
    /// Inside a raw-text element: the name whose end tag ends the raw text.
    raw_text_end: Option<&'a str>,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let html = self.html;
        let start = self.position;
        if start >= html.len() {
            return None;
        }
        let rest = &html[start..];
        if let Some(name) = self.raw_text_end.take() {
            let end = find_end_tag(rest, name).unwrap_or(rest.len());
            if end > 0 {
                self.position += end;
                return Some(Token {
                    kind: TokenKind::Text,
                    text: &rest[..end],
                });
            }
        }
        let bytes = rest.as_bytes();
        if bytes[0] == b'<'
            && let Some((kind, len)) = markup_at(rest)
        {
            self.position += len;
            if let TokenKind::Start { name, .. } = kind
                && name_in(name, RAW_TEXT)
            {
                self.raw_text_end = Some(name);
            }
            return Some(Token {
                kind,
                text: &rest[..len],
            });
        }
        // Text runs to the next `<` that starts markup.
        let mut end = 1;
        loop {
            match memchr(b'<', &bytes[end..]) {
                None => {
                    end = bytes.len();
                    break;
                }
                Some(offset) => {
                    end += offset;
                    if markup_at(&rest[end..]).is_some() {
                        break;
                    }
                    end += 1;
                }
            }
        }
        self.position += end;
        Some(Token {
            kind: TokenKind::Text,
            text: &rest[..end],
        })
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Where the end tag `</name` (any case, followed by a delimiter) starts in `text`.
fn find_end_tag(text: &str, name: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = memchr(b'<', &bytes[from..]) {
        let at = from + offset;
        let after = &bytes[at + 1..];
        if after.first() == Some(&b'/')
            && after.len() > name.len()
            && after[1..=name.len()].eq_ignore_ascii_case(name.as_bytes())
            && after
                .get(name.len() + 1)
                .is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b'/' | b'>'))
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The markup token starting at `text` (which starts with `<`) and its length, or `None` when
/// this `<` is a literal less-than sign.
fn markup_at(text: &str) -> Option<(TokenKind<'_>, usize)> {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'<') {
        return None;
    }
    match bytes.get(1)? {
        b'!' => {
            let len = if let Some(body) = text.strip_prefix("<!--") {
                body.find("-->").map_or(text.len(), |e| e + 7)
            } else {
                text.find('>').map_or(text.len(), |e| e + 1)
            };
            Some((TokenKind::Comment, len))
        }
        b'?' => Some((
            TokenKind::Comment,
            text.find('>').map_or(text.len(), |e| e + 1),
        )),
        b'/' => match bytes.get(2)? {
            b if b.is_ascii_alphabetic() => Some(match scan_tag(text, 2) {
                Some((name, len, _, _)) => (TokenKind::End { name }, len),
                None => (TokenKind::Unclosed, text.len()),
            }),
            b'>' => Some((TokenKind::Comment, 3)),
            _ => Some((
                TokenKind::Comment,
                text.find('>').map_or(text.len(), |e| e + 1),
            )),
        },
        b if b.is_ascii_alphabetic() => Some(match scan_tag(text, 1) {
            Some((name, len, has_attributes, self_closing)) => (
                TokenKind::Start {
                    name,
                    has_attributes,
                    self_closing,
                },
                len,
            ),
            None => (TokenKind::Unclosed, text.len()),
        }),
        _ => None,
    }
}

/// Scans a tag whose name starts at `name_start`: the name, the tag's length, whether it has
/// attributes and whether it ends with `/>`. Attribute values in quotes may hold `>`. A tag
/// the input ends inside of is `None`.
fn scan_tag(text: &str, name_start: usize) -> Option<(&str, usize, bool, bool)> {
    let bytes = text.as_bytes();
    let is_delimiter = |b: u8| b.is_ascii_whitespace() || b == b'/' || b == b'>';
    let mut i = name_start;
    while i < bytes.len() && !is_delimiter(bytes[i]) {
        i += 1;
    }
    let name = &text[name_start..i];
    let mut has_attributes = false;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        match bytes.get(i)? {
            b'>' => return Some((name, i + 1, has_attributes, false)),
            b'/' => {
                if bytes.get(i + 1) == Some(&b'>') {
                    return Some((name, i + 2, has_attributes, true));
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        // An attribute name: up to whitespace, `/`, `>` or `=` (its first character may be `=`).
        has_attributes = true;
        i += 1;
        while i < bytes.len() && !is_delimiter(bytes[i]) && bytes[i] != b'=' {
            i += 1;
        }
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        match bytes.get(i)? {
            quote @ (b'"' | b'\'') => {
                let close = memchr(*quote, &bytes[i + 1..])?;
                i += close + 2;
            }
            _ => {
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(html: &str) -> Vec<(String, &str)> {
        tokens(html)
            .map(|t| {
                let kind = match t.kind {
                    TokenKind::Text => "text".to_owned(),
                    TokenKind::Start { name, .. } => format!("<{name}>"),
                    TokenKind::End { name } => format!("</{name}>"),
                    TokenKind::Comment => "comment".to_owned(),
                    TokenKind::Unclosed => "unclosed".to_owned(),
                };
                (kind, t.text)
            })
            .collect()
    }

    #[test]
    fn tokens_cover_the_input_and_respect_quotes() {
        let html = "a < b <p title=\"x > y\" class='c>d' data=e>t</p><!-- c > d -->x<br/>";
        let got = kinds(html);
        let joined: String = got.iter().map(|(_, t)| *t).collect();
        assert_eq!(joined, html);
        assert_eq!(
            got.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["text", "<p>", "text", "</p>", "comment", "text", "<br>"]
        );
        assert_eq!(got[1].1, "<p title=\"x > y\" class='c>d' data=e>");
    }

    #[test]
    fn raw_text_is_not_markup_and_unclosed_tags_are_text() {
        let got = kinds("<script>if (a<b) x = '</p>'</script>y<b");
        assert_eq!(got[1], ("text".to_owned(), "if (a<b) x = '</p>'"));
        assert_eq!(got[2].0, "</script>");
        assert_eq!(got[3], ("text".to_owned(), "y"));
        assert_eq!(got[4], ("unclosed".to_owned(), "<b"));
        assert_eq!(kinds("<a title=\"never closed>x")[0].0, "unclosed");
    }

    #[test]
    fn known_elements() {
        assert!(is_known_element("DIALOG"));
        assert!(is_known_element("o:p"));
        assert!(is_known_element("my-widget"));
        assert!(!is_known_element("dialogue"));
        assert!(!is_known_element("jane@example.com"));
        let mut sorted = KNOWN_ELEMENTS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, KNOWN_ELEMENTS);
    }
}
