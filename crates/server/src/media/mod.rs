//! The opt-in media proxy (`TIDINGS_MEDIA_PROXY`, F5, F51): images in items' HTML are
//! rewritten to `/media?url=…&sig=…` on this server, which fetches them through the
//! SSRF-guarded client. `http:` images then show on an HTTPS deployment without mixed-content
//! blocking, and image hosts see the server's address, never the readers'.
//!
//! Only URLs the server signed are fetched (HMAC-SHA256 with a key of the process, or of the
//! deployment with `TIDINGS_MEDIA_PROXY_KEY`), so the route is no open proxy. Answers are
//! images only (by type or by their bytes), at most [`MAX_MEDIA_BYTES`], cached by browsers for
//! a day, and served under a sandboxing Content-Security-Policy (an SVG cannot run script).

pub mod route;

use sha2::{Digest, Sha256};

/// The largest image the proxy passes on.
pub const MAX_MEDIA_BYTES: usize = 5 * 1024 * 1024;

/// Images fetched at once through the proxy; more wait their turn.
const CONCURRENT_FETCHES: usize = 16;

/// What the browser may do with a proxied answer: show it, nothing else.
const MEDIA_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/// Which images the proxy serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MediaProxyMode {
    /// None: items' images load from where they are (the default).
    #[default]
    Off,
    /// Only `http:` images, which an HTTPS page would block.
    Insecure,
    /// Every image, so that no image host learns readers' addresses.
    All,
}

impl MediaProxyMode {
    /// Reads `off`, `http` or `all`.
    pub fn parse(text: &str) -> Option<MediaProxyMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "no" | "" => Some(MediaProxyMode::Off),
            "http" => Some(MediaProxyMode::Insecure),
            "all" => Some(MediaProxyMode::All),
            _ => None,
        }
    }
}

/// The media proxy's settings: its mode and the key its URLs are signed with.
#[derive(Clone)]
pub struct MediaProxy {
    /// Which images go through the proxy.
    pub mode: MediaProxyMode,
    key: [u8; 32],
}

impl std::fmt::Debug for MediaProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaProxy")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Default for MediaProxy {
    fn default() -> MediaProxy {
        MediaProxy::new(MediaProxyMode::Off, None)
    }
}

impl MediaProxy {
    /// A proxy in `mode`, signing with a key derived from `secret`, or with a random key of
    /// this process (signed URLs then last until the next start).
    pub fn new(mode: MediaProxyMode, secret: Option<&str>) -> MediaProxy {
        let key = match secret {
            Some(secret) => Sha256::digest(secret.as_bytes()).into(),
            None => rand::random::<[u8; 32]>(),
        };
        MediaProxy { mode, key }
    }

    /// The signature of `url`, in hex.
    pub fn sign(&self, url: &str) -> String {
        hex::encode(hmac_sha256(&self.key, url.as_bytes()))
    }

    /// Whether `signature` is this server's for `url` (compared in constant time).
    pub fn verify(&self, url: &str, signature: &str) -> bool {
        let Ok(given) = hex::decode(signature.trim()) else {
            return false;
        };
        let expected = hmac_sha256(&self.key, url.as_bytes());
        given.len() == expected.len()
            && given
                .iter()
                .zip(expected.iter())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }

    /// Whether an image at `url` goes through the proxy in `mode`.
    fn wants(mode: MediaProxyMode, url: &str) -> bool {
        let lower = url.trim_start().get(..8).unwrap_or("").to_ascii_lowercase();
        match mode {
            MediaProxyMode::Off => false,
            MediaProxyMode::Insecure => lower.starts_with("http://"),
            MediaProxyMode::All => lower.starts_with("http://") || lower.starts_with("https://"),
        }
    }

    /// The proxy's address for the image at `url`.
    pub fn proxied(&self, base: &url::Url, url: &str) -> String {
        let mut target = base.join("/media").unwrap_or_else(|_| base.clone());
        target
            .query_pairs_mut()
            .append_pair("url", url)
            .append_pair("sig", &self.sign(url));
        target.to_string()
    }

    /// The proxy's address for an image URL outside HTML (an item's thumbnail), when the
    /// mode sends that image through the proxy; `None` leaves the URL as it is.
    pub fn proxied_if_wanted(&self, base: &url::Url, url: &str) -> Option<String> {
        self.proxied_in(self.mode, base, url)
    }

    /// As [`MediaProxy::proxied_if_wanted`], for the images `mode` sends through the proxy
    /// rather than those of the configured mode.
    pub fn proxied_in(&self, mode: MediaProxyMode, base: &url::Url, url: &str) -> Option<String> {
        Self::wants(mode, url).then(|| self.proxied(base, url))
    }

    /// `html` with the `src` and `srcset` of its images pointing at the proxy; `None` when
    /// nothing changed. The HTML is the sanitizer's output, so attribute values are quoted.
    pub fn rewrite_html(&self, base: &url::Url, html: &str) -> Option<String> {
        self.rewrite_html_in(self.mode, base, html)
    }

    /// As [`MediaProxy::rewrite_html`], for the images `mode` sends through the proxy: a device
    /// keeping items for offline reading asks for every image through it (`images=proxied`),
    /// whatever the configured mode, so that it can keep them from this server's origin.
    pub fn rewrite_html_in(
        &self,
        mode: MediaProxyMode,
        base: &url::Url,
        html: &str,
    ) -> Option<String> {
        if mode == MediaProxyMode::Off {
            return None;
        }
        let mut out = String::new();
        let mut copied = 0;
        let mut search = 0;
        while let Some(found) = find_ascii_ci(&html[search..], "<img") {
            let start = search + found;
            let after = start + 4;
            search = after;
            if !html[after..].starts_with(|c: char| c.is_ascii_whitespace() || c == '/') {
                continue;
            }
            for attribute in img_attributes(html, after) {
                let name = &html[attribute.name.0..attribute.name.1];
                let raw = unescape(attribute.value);
                let new_value = if name.eq_ignore_ascii_case("src") && Self::wants(mode, &raw) {
                    self.proxied(base, raw.trim())
                } else if name.eq_ignore_ascii_case("srcset") {
                    let rewritten = self.rewrite_srcset(mode, base, &raw);
                    if rewritten == raw {
                        continue;
                    }
                    rewritten
                } else {
                    continue;
                };
                out.push_str(&html[copied..attribute.value_start]);
                out.push_str(&escape(&new_value));
                copied = attribute.value_start + attribute.value.len();
            }
        }
        if copied == 0 {
            return None;
        }
        out.push_str(&html[copied..]);
        Some(out)
    }

    fn rewrite_srcset(&self, mode: MediaProxyMode, base: &url::Url, srcset: &str) -> String {
        srcset
            .split(',')
            .map(|candidate| {
                let candidate = candidate.trim();
                let (url, descriptor) = candidate
                    .split_once(char::is_whitespace)
                    .unwrap_or((candidate, ""));
                if Self::wants(mode, url) {
                    format!("{} {}", self.proxied(base, url), descriptor.trim())
                        .trim_end()
                        .to_string()
                } else {
                    candidate.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// HMAC-SHA256 (RFC 2104) over the workspace's SHA-256.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// The byte offset of `needle` (ASCII, lower case) in `haystack`, ignoring case.
fn find_ascii_ci(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// One attribute of a tag, as found in the HTML.
struct Attribute<'a> {
    /// The name's byte range.
    name: (usize, usize),
    /// Where the value starts (after its quote).
    value_start: usize,
    /// The value as written (quotes excluded, entities kept).
    value: &'a str,
}

/// The attributes of the tag whose name ends at `from`. A `>` inside a quoted value does not
/// end the tag.
fn img_attributes(html: &str, from: usize) -> Vec<Attribute<'_>> {
    let bytes = html.as_bytes();
    let mut attributes = Vec::new();
    let mut i = from;
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] == b'>' {
            return attributes;
        }
        let name_start = i;
        while i < bytes.len()
            && !matches!(bytes[i], b'=' | b'>' | b'/')
            && !bytes[i].is_ascii_whitespace()
        {
            i += 1;
        }
        let name = (name_start, i);
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] != b'=' {
            continue;
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            return attributes;
        }
        let (start, end) = if bytes[i] == b'"' || bytes[i] == b'\'' {
            let quote = bytes[i];
            let start = i + 1;
            let Some(length) = bytes[start..].iter().position(|&b| b == quote) else {
                return attributes;
            };
            i = start + length + 1;
            (start, start + length)
        } else {
            let start = i;
            while i < bytes.len() && bytes[i] != b'>' && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            (start, i)
        };
        attributes.push(Attribute {
            name,
            value_start: start,
            value: &html[start..end],
        });
    }
}

/// An attribute value as text: the entities the sanitizer's serializer writes, undone.
fn unescape(value: &str) -> String {
    value
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// Text as a double-quoted attribute value.
fn escape(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231 uses a 4-byte key; ours are 32 bytes, zero-padded the same.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex::encode(hmac_sha256(&key, b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn signatures_verify_only_for_their_url() {
        let proxy = MediaProxy::new(MediaProxyMode::Insecure, Some("a secret"));
        let signature = proxy.sign("http://a.example/x.png");
        assert!(proxy.verify("http://a.example/x.png", &signature));
        assert!(!proxy.verify("http://a.example/y.png", &signature));
        assert!(!proxy.verify("http://a.example/x.png", "00"));
        assert!(!proxy.verify("http://a.example/x.png", "not hex"));
        let other = MediaProxy::new(MediaProxyMode::Insecure, Some("another"));
        assert!(!other.verify("http://a.example/x.png", &signature));
    }

    #[test]
    fn thumbnails_are_proxied_by_mode() {
        let base: url::Url = "https://reader.example/".parse().unwrap();
        let insecure = MediaProxy::new(MediaProxyMode::Insecure, Some(&"k".repeat(32)));
        let proxied = insecure
            .proxied_if_wanted(&base, "http://img.example/t.jpg")
            .expect("an http thumbnail goes through the proxy");
        assert!(
            proxied.starts_with(
                "https://reader.example/media?url=http%3A%2F%2Fimg.example%2Ft.jpg&sig="
            )
        );
        assert_eq!(
            insecure.proxied_if_wanted(&base, "https://img.example/t.jpg"),
            None
        );
        let off = MediaProxy::new(MediaProxyMode::Off, None);
        assert_eq!(
            off.proxied_if_wanted(&base, "http://img.example/t.jpg"),
            None
        );
    }

    #[test]
    fn images_are_rewritten_by_mode() {
        let base: url::Url = "https://reader.example/".parse().unwrap();
        let proxy = MediaProxy::new(MediaProxyMode::Insecure, Some("k"));
        let html = "<p>a > b</p><img alt=\"x > y\" src=\"http://a.example/p.png?w=1&amp;h=2\">\
                    <img src=\"https://b.example/q.png\"><imgx src=\"http://c/\">\
                    <img srcset=\"http://a.example/1.png 1x, https://b.example/2.png 2x\">";
        let out = proxy.rewrite_html(&base, html).expect("rewritten");
        let signed = proxy.proxied(&base, "http://a.example/p.png?w=1&h=2");
        assert!(
            out.contains(&format!("src=\"{}\"", escape(&signed))),
            "{out}"
        );
        assert!(out.contains("alt=\"x > y\""), "{out}");
        assert!(
            out.contains("src=\"https://b.example/q.png\""),
            "https stays: {out}"
        );
        assert!(out.contains("<imgx src=\"http://c/\">"), "{out}");
        assert!(out.contains(", https://b.example/2.png 2x\""), "{out}");
        assert!(out.contains(&escape(&proxy.proxied(&base, "http://a.example/1.png"))));
        assert_eq!(proxy.rewrite_html(&base, "<p>no images</p>"), None);
        let all = MediaProxy::new(MediaProxyMode::All, Some("k"));
        let out = all
            .rewrite_html(&base, "<img src=\"https://b.example/q.png\">")
            .unwrap();
        assert!(
            out.starts_with("<img src=\"https://reader.example/media?url="),
            "{out}"
        );
        let off = MediaProxy::new(MediaProxyMode::Off, None);
        assert_eq!(off.rewrite_html(&base, html), None);
    }
}
