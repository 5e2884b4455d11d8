//! A text/plain body made into HTML, for messages without an HTML part.

/// Plain text as HTML: escaped, blank lines making paragraphs, line breaks kept, and
/// `http(s)://` addresses made links (a newsletter's text part is mostly links to click, a
/// confirmation mail's above all). The result is sanitized afterwards like any HTML.
pub fn text_to_html(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let mut html = String::with_capacity(text.len() + text.len() / 8);
    for paragraph in text.split("\n\n").map(|p| p.trim_matches('\n')) {
        if paragraph.trim().is_empty() {
            continue;
        }
        html.push_str("<p>");
        for (i, line) in paragraph.lines().enumerate() {
            if i > 0 {
                html.push_str("<br>\n");
            }
            push_linked(&mut html, line);
        }
        html.push_str("</p>\n");
    }
    html
}

/// Appends `line` escaped, with its web addresses as links.
fn push_linked(html: &mut String, line: &str) {
    let mut rest = line;
    while let Some(start) = find_url(rest) {
        push_escaped(html, &rest[..start]);
        let url_text = &rest[start..];
        let mut end = url_text
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"'))
            .unwrap_or(url_text.len());
        // Punctuation that ends a sentence is not part of the address.
        while end > 0 && url_text[..end].ends_with(['.', ',', ';', ':', '!', '?', ')', ']']) {
            end -= 1;
        }
        let url = &url_text[..end];
        if url.ends_with("://") {
            // A scheme with no address after it ("https://" alone) is text.
            push_escaped(html, url);
            rest = &url_text[url.len()..];
            continue;
        }
        html.push_str("<a href=\"");
        push_escaped(html, url);
        html.push_str("\">");
        push_escaped(html, url);
        html.push_str("</a>");
        rest = &url_text[end..];
    }
    push_escaped(html, rest);
}

/// Where the next `http://` or `https://` starts.
fn find_url(text: &str) -> Option<usize> {
    let https = text.find("https://");
    let http = text.find("http://");
    match (https, http) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Appends `text` with `&`, `<`, `>` and `"` escaped.
pub(crate) fn push_escaped(html: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => html.push_str("&amp;"),
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '"' => html.push_str("&quot;"),
            c => html.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_lines_links_and_escapes() {
        assert_eq!(
            text_to_html(
                "Hello <you> & all,\r\nconfirm at https://ex.com/c?a=1&b=2.\r\n\r\n\r\nBye"
            ),
            "<p>Hello &lt;you&gt; &amp; all,<br>\nconfirm at \
             <a href=\"https://ex.com/c?a=1&amp;b=2\">https://ex.com/c?a=1&amp;b=2</a>.</p>\n\
             <p>Bye</p>\n"
        );
        assert_eq!(text_to_html("see https://."), "<p>see https://.</p>\n");
    }
}
