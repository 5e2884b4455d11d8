//! URL resolution shared by the parsers, the sanitizer and discovery.

use url::Url;

/// Resolves `value` against `base` (when it is relative) and returns it only when it is an
/// http(s) URL with a host. Surrounding whitespace is ignored.
pub(crate) fn web_url(base: Option<&Url>, value: &str) -> Option<Url> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let url = match Url::parse(value) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => base?.join(value).ok()?,
        Err(_) => return None,
    };
    is_web(&url).then_some(url)
}

/// Whether a URL is http(s) with a host.
pub(crate) fn is_web(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host().is_some()
}

/// Applies an `xml:base` value to the base in effect. A base that cannot be resolved leaves the
/// outer one in effect.
pub(crate) fn apply_xml_base(outer: Option<&Url>, value: Option<&str>) -> Option<Url> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return outer.cloned();
    };
    match Url::parse(value) {
        Ok(url) => Some(url),
        Err(url::ParseError::RelativeUrlWithoutBase) => outer
            .and_then(|o| o.join(value).ok())
            .or_else(|| outer.cloned()),
        Err(_) => outer.cloned(),
    }
}

/// The one spelling of a feed's URL that tidings stores, so that the spellings of one address
/// share one feed row (F10): the url crate's form (scheme and host in lower case, no default
/// port, `/` as the empty path, IP addresses in one notation), without a `#fragment` (never
/// sent to the server), without an empty `?`, and with percent-escapes in upper case and those
/// of unreserved characters (`A–Z a–z 0–9 - . _ ~`) decoded, as RFC 3986 §6.2.2 makes them
/// equivalent. Applying it twice changes nothing.
pub fn normalize_feed_url(url: &Url) -> Url {
    let mut url = url.clone();
    url.set_fragment(None);
    if url.query().is_some_and(str::is_empty) {
        url.set_query(None);
    }
    if url.cannot_be_a_base() {
        return url;
    }
    let path = normalize_percent_escapes(url.path());
    if path != url.path() {
        url.set_path(&path);
    }
    if let Some(query) = url.query() {
        let query = normalize_percent_escapes(query);
        if Some(query.as_str()) != url.query() {
            url.set_query(Some(&query));
        }
    }
    url
}

/// [`normalize_feed_url`] on text: the normalized URL when `text` parses as an absolute URL,
/// else `text` trimmed (the store keeps what it cannot read as it was given).
pub fn normalize_feed_url_text(text: &str) -> String {
    let text = text.trim();
    match Url::parse(text) {
        Ok(url) => normalize_feed_url(&url).into(),
        Err(_) => text.to_owned(),
    }
}

/// Upper-cases the hex digits of every `%XX` escape and decodes those of unreserved
/// characters; everything else is left as it is.
fn normalize_percent_escapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(&high), Some(&low)) = (bytes.get(i + 1), bytes.get(i + 2))
            && let (Some(h), Some(l)) = (hex_value(high), hex_value(low))
        {
            let byte = h * 16 + l;
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push('%');
                out.push(char::from(high.to_ascii_uppercase()));
                out.push(char::from(low.to_ascii_uppercase()));
            }
            i += 3;
            continue;
        }
        // Copy up to the next '%' at once, keeping multi-byte characters whole.
        let next = text[i + 1..].find('%').map_or(text.len(), |at| i + 1 + at);
        out.push_str(&text[i..next]);
        i = next;
    }
    out
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(text: &str) -> String {
        normalize_feed_url_text(text)
    }

    #[test]
    fn spellings_of_one_feed_url_are_one() {
        let canonical = "https://example.com/feed.xml";
        for variant in [
            "https://example.com/feed.xml",
            "https://example.com/feed.xml#top",
            "https://example.com:443/feed.xml",
            "HTTPS://Example.COM/feed.xml",
            "https://example.com/feed.xml?",
            "https://example.com/feed.xml?#",
            "https://example.com/%66eed.xml",
            "  https://EXAMPLE.com:443/feed.xml?#x  ",
        ] {
            assert_eq!(normalized(variant), canonical, "{variant}");
        }
        assert_eq!(normalized("http://example.com:80"), "http://example.com/");
        assert_eq!(
            normalized("http://example.com?a=%2f"),
            "http://example.com/?a=%2F"
        );
        assert_eq!(
            normalized("http://example.com/a%2fb"),
            "http://example.com/a%2Fb"
        );
        assert_eq!(
            normalized("http://[::FFFF:127.0.0.1]:80/x"),
            "http://[::ffff:7f00:1]/x"
        );
    }

    #[test]
    fn what_makes_another_feed_stays() {
        for (a, b) in [
            ("http://example.com/feed", "https://example.com/feed"),
            ("https://example.com:8443/feed", "https://example.com/feed"),
            ("https://example.com/Feed", "https://example.com/feed"),
            ("https://example.com/feed?a=1", "https://example.com/feed"),
            ("https://example.com/feed/", "https://example.com/feed"),
            ("https://example.com/a%2Fb", "https://example.com/a/b"),
        ] {
            assert_ne!(normalized(a), normalized(b), "{a} vs {b}");
        }
    }

    #[test]
    fn normalizing_twice_changes_nothing() {
        for text in [
            "https://example.com/%7e/%e2%82%ac?q=%41%zz%",
            "http://example.com:80/a/../b/./c?#f",
            "https://user:pw@example.com:443/x?y=%3d",
            "https://ex%41mple.com/%",
            "https://bücher.example/ü?ä",
            "not a url",
        ] {
            let once = normalized(text);
            assert_eq!(normalized(&once), once, "{text}");
        }
        assert_eq!(
            normalized("https://example.com/%7e%zz%"),
            "https://example.com/~%zz%"
        );
        assert_eq!(normalized("not a url "), "not a url");
    }
}
