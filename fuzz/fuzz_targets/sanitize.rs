//! Arbitrary HTML through the sanitizer: no panic, no script or handler survives, the output
//! is a fixed point, and the fast paths give what the full sanitizer gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidings_feed::{SanitizeOptions, Sanitizer};
use url::Url;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let html = String::from_utf8_lossy(bytes);
    let sanitizer = Sanitizer::new(SanitizeOptions {
        rewrite_http_media_to_https: selector & 1 == 1,
        keep_http_media: selector & 2 == 2,
    });
    let base = Url::parse("https://fuzz.example/a/b").expect("static URL");
    let base = (selector & 2 == 2).then_some(&base);
    let once = sanitizer.clean(&html, base);
    assert_eq!(once, sanitizer.clean_with_ammonia(&html, base), "fast path, input {html:?}");
    let lowered = once.to_ascii_lowercase();
    assert!(!lowered.contains("<script"), "{once}");
    assert!(!lowered.contains("<iframe"), "{once}");
    assert!(!lowered.contains("<svg"), "{once}");
    assert!(!lowered.contains("<style"), "{once}");
    assert!(!lowered.contains(" on") || !lowered.contains("=\"") || !has_handler(&lowered), "{once}");
    assert_eq!(sanitizer.clean(&once, base), once, "input {html:?}");
});

/// Whether an attribute named on… appears in a tag (attribute names follow a space inside
/// a tag; text content is escaped, so `<` only starts tags).
fn has_handler(html: &str) -> bool {
    let mut in_tag = false;
    let mut in_quotes = false;
    let bytes = html.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' if !in_quotes => in_tag = true,
            b'>' if !in_quotes => in_tag = false,
            b'"' if in_tag => in_quotes = !in_quotes,
            b' ' if in_tag && !in_quotes && bytes[i + 1..].starts_with(b"on") => return true,
            _ => {}
        }
    }
    false
}
