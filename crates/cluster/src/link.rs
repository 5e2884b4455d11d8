//! Canonical URLs: one spelling for every address of the same page, so that an item's link, its
//! `<link rel=canonical>` and a guid that is a URL can be compared across feeds.
//!
//! What is folded, in order:
//! - **Redirectors** that carry their target in the URL ([`crate::redirect`]) are replaced by
//!   the target (up to three levels); redirectors that need a request to resolve (`t.co`,
//!   `feedproxy.google.com`, `bit.ly`) stay as they are, since this crate does no I/O.
//! - **Scheme:** `http` and `https` are one (the result is written `https://`); other schemes
//!   (`mailto:`, `tag:`, `urn:`) are not pages and give no canonical URL.
//! - **Host:** lower case (the parser does it), a trailing dot and the `www.`, `www2.`, `m.`,
//!   `mobile.` and `amp.` prefixes removed (when a registrable name is left), user and password
//!   dropped, ports 80 and 443 dropped.
//! - **AMP:** a trailing `/amp` segment, a leading `/amp/` segment, `.amp.html` (as `.html`), a
//!   trailing `.amp`, and the `amp`, `amp=1`, `outputType=amp` query parameters.
//! - **Path:** empty segments collapsed, a trailing `/` and a trailing `index.html`,
//!   `index.htm` or `index.php` removed, percent escapes of unreserved characters decoded and
//!   the others' hex digits in upper case (`%e6` is `%E6`). The path's case is kept: servers
//!   tell `/News` from `/news`.
//! - **Query:** tracking parameters ([`is_tracking_parameter`]) removed, the others (`?id=`,
//!   `?p=`, `?v=`) kept and sorted, so their order does not matter.
//! - **Fragment:** removed, except a `#!` route of a script-driven site, which names the page.

use url::Url;

use crate::redirect::redirect_target;

/// How many redirectors inside one another are followed.
const MAX_REDIRECTS: usize = 3;

/// The longest URL read, in bytes: feeds do not need more, and a bound keeps the work bounded.
const MAX_URL_BYTES: usize = 4096;

/// The canonical form of `raw` (see the [module docs](self)), or `None` when it is not an
/// absolute `http`/`https` URL.
pub fn canonical_url(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_URL_BYTES {
        return None;
    }
    let mut url = Url::parse(raw).ok()?;
    for _ in 0..MAX_REDIRECTS {
        if !is_web(&url) {
            return None;
        }
        match redirect_target(&url) {
            Some(target) => url = target,
            None => break,
        }
    }
    if !is_web(&url) {
        return None;
    }
    let host = canonical_host(url.host_str()?)?;
    let path = canonical_path(url.path());
    let query = canonical_query(&url);
    let fragment = url
        .fragment()
        .filter(|f| f.starts_with('!') && f.len() > 1)
        .map(|f| format!("#{f}"))
        .unwrap_or_default();
    let port = match url.port() {
        Some(80) | Some(443) | None => String::new(),
        Some(port) => format!(":{port}"),
    };
    Some(format!("https://{host}{port}{path}{query}{fragment}"))
}

/// Whether a canonical URL (as [`canonical_url`] gives it) names a site rather than a page: its
/// path is empty and it has no query. Feeds that give every item the site's home page as its
/// link exist, so such a URL is no evidence that two items are one story.
pub fn is_site_root(canonical: &str) -> bool {
    let rest = canonical.strip_prefix("https://").unwrap_or(canonical);
    match rest.find('/') {
        None => true,
        Some(at) => rest[at..] == *"/",
    }
}

/// Whether `url` is a web page address (`http` or `https` with a host).
fn is_web(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(|h| !h.is_empty())
}

/// The host without a trailing dot and without the prefixes that name another copy of the same
/// site (`www.`, `m.`, `amp.`), as long as a name with a dot is left.
fn canonical_host(host: &str) -> Option<String> {
    let mut host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    loop {
        let stripped = ["www.", "www2.", "m.", "mobile.", "amp."]
            .iter()
            .find_map(|prefix| host.strip_prefix(prefix))
            .filter(|rest| rest.contains('.'));
        match stripped {
            Some(rest) => host = rest.to_string(),
            None => return Some(host),
        }
    }
}

/// The path with its AMP marks, empty segments, index file and trailing slash removed, and its
/// percent escapes in one spelling; `/` when nothing is left.
fn canonical_path(path: &str) -> String {
    let mut segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(canonical_escapes)
        .collect();
    if segments.len() > 1 && segments.first().is_some_and(|s| s == "amp") {
        segments.remove(0);
    }
    if segments.len() > 1 && segments.last().is_some_and(|s| s == "amp") {
        segments.pop();
    }
    if let Some(last) = segments.last_mut() {
        if let Some(stem) = last.strip_suffix(".amp.html") {
            *last = format!("{stem}.html");
        } else if let Some(stem) = last.strip_suffix(".amp") {
            *last = stem.to_string();
        }
    }
    if segments
        .last()
        .is_some_and(|s| matches!(s.as_str(), "index.html" | "index.htm" | "index.php"))
    {
        segments.pop();
    }
    segments.retain(|s| !s.is_empty());
    format!("/{}", segments.join("/"))
}

/// A path segment with the escapes of unreserved characters decoded (`%7E` is `~`) and the hex
/// digits of the other escapes in upper case, so that two encoders' spellings meet.
fn canonical_escapes(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = String::with_capacity(segment.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit));
        match escape {
            Some(hex) => {
                let value = hex_value(hex[0]) * 16 + hex_value(hex[1]);
                if value.is_ascii_alphanumeric() || b"-._~".contains(&value) {
                    out.push(char::from(value));
                } else {
                    out.push('%');
                    out.push(char::from(hex[0].to_ascii_uppercase()));
                    out.push(char::from(hex[1].to_ascii_uppercase()));
                }
                i += 3;
            }
            None => {
                // The parser leaves only ASCII in a path, so a byte is a character here; a
                // non-ASCII byte (never expected) is escaped rather than dropped.
                if bytes[i].is_ascii() {
                    out.push(char::from(bytes[i]));
                } else {
                    out.push_str(&format!("%{:02X}", bytes[i]));
                }
                i += 1;
            }
        }
    }
    out
}

/// The value of one hex digit (the caller checked it is one).
fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        b'A'..=b'F' => digit - b'A' + 10,
        _ => 0,
    }
}

/// The query without tracking and AMP parameters, the rest sorted, with its `?`; empty when
/// nothing is left.
fn canonical_query(url: &Url) -> String {
    let mut kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(name, value)| !is_tracking_parameter(name) && !is_amp_parameter(name, value))
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    if kept.is_empty() {
        return String::new();
    }
    kept.sort();
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in &kept {
        if value.is_empty() {
            // `?123` and `?123=` are one page; written without the `=`, as sites link them.
            serializer.append_key_only(name);
        } else {
            serializer.append_pair(name, value);
        }
    }
    format!("?{}", serializer.finish())
}

/// Whether a query parameter only says how the reader arrived (campaigns, click ids, share
/// buttons, mailing lists, analytics) and not which page it is.
pub fn is_tracking_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    const PREFIXES: &[&str] = &["utm_", "_hs", "guce_", "oly_", "at_", "wt_", "wt.", "pk_"];
    const NAMES: &[&str] = &[
        "fbclid",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "igshid",
        "mc_cid",
        "mc_eid",
        "mkt_tok",
        "ref",
        "ref_src",
        "ref_url",
        "referer",
        "referrer",
        "_ga",
        "_gl",
        "cmpid",
        "ncid",
        "ocid",
        "smid",
        "smtyp",
        "partner",
        "emc",
        "xtor",
        "s_cid",
        "s_kwcid",
        "sr_share",
        "soc_src",
        "soc_trk",
        "fb_action_ids",
        "fb_action_types",
        "fb_ref",
        "fb_source",
        "action_object_map",
        "action_type_map",
        "action_ref_map",
        "__twitter_impression",
        "spm",
        "share",
        "rss",
        "feed",
        "from_rss",
        "rb_clickid",
        "vero_id",
        "trk",
        "sc_campaign",
        "sc_channel",
        "itm_source",
        "itm_medium",
        "itm_campaign",
    ];
    PREFIXES.iter().any(|prefix| name.starts_with(prefix)) || NAMES.contains(&name.as_str())
}

/// Whether a query parameter asks for the AMP copy of the page (`?amp`, `?amp=1`,
/// `?outputType=amp`).
fn is_amp_parameter(name: &str, value: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let value = value.to_ascii_lowercase();
    (name == "amp" && matches!(value.as_str(), "" | "1" | "true" | "yes"))
        || (name == "outputtype" && value == "amp")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(raw: &str) -> String {
        canonical_url(raw).unwrap_or_else(|| format!("none for {raw}"))
    }

    #[test]
    fn scheme_host_port_and_case_are_one() {
        let expected = "https://example.com/news/story-1";
        for raw in [
            "http://example.com/news/story-1",
            "https://www.example.com/news/story-1",
            "HTTPS://WWW.EXAMPLE.COM/news/story-1",
            "http://m.example.com/news/story-1",
            "https://amp.example.com/news/story-1",
            "https://example.com.:443/news/story-1",
            "http://example.com:80/news/story-1",
            "https://user:secret@example.com/news/story-1",
            "  https://mobile.example.com/news/story-1  ",
        ] {
            assert_eq!(canon(raw), expected, "{raw}");
        }
        // Another port is another server; the path's case is the server's business.
        assert_eq!(
            canon("https://example.com:8080/news/story-1"),
            "https://example.com:8080/news/story-1"
        );
        assert_ne!(canon("https://example.com/News/Story-1"), expected);
        // A prefix is kept when nothing registrable would be left.
        assert_eq!(canon("https://m.com/a"), "https://m.com/a");
        assert_eq!(
            canon("https://www.m.example.org/a"),
            "https://example.org/a"
        );
    }

    #[test]
    fn amp_copies_are_the_page() {
        let expected = "https://example.com/2026/11/story";
        for raw in [
            "https://example.com/2026/11/story/amp",
            "https://example.com/2026/11/story/amp/",
            "https://example.com/amp/2026/11/story",
            "https://example.com/2026/11/story?amp",
            "https://example.com/2026/11/story?amp=1",
            "https://example.com/2026/11/story?outputType=amp",
            "https://example.com/2026/11/story.amp",
            "https://amp.example.com/2026/11/story",
        ] {
            assert_eq!(canon(raw), expected, "{raw}");
        }
        assert_eq!(
            canon("https://example.com/news/story.amp.html"),
            "https://example.com/news/story.html"
        );
        // A page called amp is a page.
        assert_eq!(canon("https://example.com/amp"), "https://example.com/amp");
    }

    #[test]
    fn tracking_parameters_go_and_meaningful_ones_stay() {
        assert_eq!(
            canon(
                "https://example.com/a?utm_source=rss&utm_medium=feed&utm_campaign=x&fbclid=1\
                 &gclid=2&mc_cid=3&mc_eid=4&ref=hn&xtor=RSS-3208&_hsenc=p&smid=tw"
            ),
            "https://example.com/a"
        );
        assert_eq!(
            canon("https://blog.example/?p=123&utm_source=x"),
            "https://blog.example/?p=123"
        );
        assert_eq!(
            canon("https://example.com/view?id=9&page=2&UTM_Medium=x"),
            "https://example.com/view?id=9&page=2"
        );
        // Order does not matter.
        assert_eq!(
            canon("https://example.com/view?page=2&id=9"),
            canon("https://example.com/view?id=9&page=2")
        );
        // Different ids are different pages.
        assert_ne!(
            canon("https://example.com/?p=1"),
            canon("https://example.com/?p=2")
        );
        assert_eq!(
            canon("https://example.com/watch?v=abc"),
            "https://example.com/watch?v=abc"
        );
    }

    #[test]
    fn fragments_slashes_and_index_files_go() {
        let expected = "https://example.com/blog/post";
        for raw in [
            "https://example.com/blog/post/",
            "https://example.com/blog/post#comments",
            "https://example.com/blog//post/#top",
            "https://example.com/blog/post/index.html",
            "https://example.com/blog/post/index.php?",
        ] {
            assert_eq!(canon(raw), expected, "{raw}");
        }
        assert_eq!(canon("https://example.com"), "https://example.com/");
        assert_eq!(
            canon("https://example.com/index.html"),
            "https://example.com/"
        );
        // A hash-bang route names the page.
        assert_eq!(
            canon("https://example.com/#!/post/7"),
            "https://example.com/#!/post/7"
        );
    }

    #[test]
    fn escapes_have_one_spelling() {
        let expected = canon("https://example.jp/記事/東京");
        assert!(expected.contains("%E8%A8%98"), "{expected}");
        assert_eq!(
            canon("https://example.jp/%e8%a8%98%e4%ba%8b/%e6%9d%b1%e4%ba%ac"),
            expected
        );
        assert_eq!(
            canon("https://example.com/%7Euser/a%2Db"),
            "https://example.com/~user/a-b"
        );
    }

    #[test]
    fn redirectors_give_their_target() {
        let expected = "https://example.com/news/story";
        for raw in [
            "https://news.google.com/url?url=https://www.example.com/news/story&ct=ga",
            "https://www.google.com/url?q=https%3A%2F%2Fexample.com%2Fnews%2Fstory%3Futm_source%3Dg&sa=D",
            "https://l.facebook.com/l.php?u=http%3A%2F%2Fexample.com%2Fnews%2Fstory&h=AT0",
            "https://out.reddit.com/t3_abc?url=https%3A%2F%2Fexample.com%2Fnews%2Fstory&token=x",
            "https://www.youtube.com/redirect?q=https://example.com/news/story&event=video",
            "https://link.zhihu.com/?target=https%3A//example.com/news/story",
            "https://example-com.cdn.ampproject.org/c/s/example.com/news/story/amp",
            "https://www.google.com/amp/s/example.com/news/story",
            "https://href.li/?https://example.com/news/story",
            // A redirector inside a redirector.
            "https://www.google.com/url?q=https%3A%2F%2Fl.facebook.com%2Fl.php%3Fu%3Dhttps%253A%252F%252Fexample.com%252Fnews%252Fstory",
        ] {
            assert_eq!(canon(raw), expected, "{raw}");
        }
        // What needs a request to resolve stays itself.
        assert_eq!(canon("https://t.co/AbC123"), "https://t.co/AbC123");
        assert_eq!(
            canon("http://feedproxy.google.com/~r/Example/~3/xyz/story"),
            "https://feedproxy.google.com/~r/Example/~3/xyz/story"
        );
        // A redirector without a web target is itself.
        assert_eq!(
            canon("https://www.google.com/url?q=javascript:alert(1)"),
            "https://google.com/url?q=javascript%3Aalert%281%29"
        );
    }

    #[test]
    fn what_is_not_a_page_has_no_canonical_url() {
        for raw in [
            "",
            "   ",
            "not a url",
            "/relative/path",
            "urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6",
            "tag:example.com,2026:post-1",
            "mailto:editor@example.com",
            "ftp://example.com/file",
            "javascript:alert(1)",
            "https://",
        ] {
            assert_eq!(canonical_url(raw), None, "{raw:?}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(canonical_url(&long), None);
    }

    #[test]
    fn site_roots_are_told_from_pages() {
        assert!(is_site_root("https://example.com/"));
        assert!(is_site_root("https://example.com"));
        assert!(!is_site_root("https://example.com/a"));
        assert!(!is_site_root("https://example.com/?p=1"));
    }
}
