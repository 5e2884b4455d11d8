//! Arbitrary bytes (and, from the seed corpus, mutated real feeds) through the parser and the
//! sanitizer: nothing may panic, and what comes out must keep the model's promises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidings_feed::{ParseOptions, Sanitizer, discover, parse};
use url::Url;

const CHARSETS: [Option<&str>; 5] = [None, Some("Shift_JIS"), Some("EUC-JP"), Some("ISO-8859-1"), Some("utf-16")];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let options = ParseOptions {
        feed_url: Url::parse("https://fuzz.example/dir/feed.xml").ok(),
        http_charset: CHARSETS[usize::from(selector) % CHARSETS.len()].map(str::to_owned),
        ..ParseOptions::default()
    };
    if let Ok(mut feed) = parse(bytes, &options) {
        for item in &feed.items {
            assert_eq!(item.identity().key.len(), 66);
            for url in item.url.iter().chain(item.enclosures.iter().map(|e| &e.url)) {
                assert!(url.starts_with("http://") || url.starts_with("https://"), "{url}");
            }
        }
        feed.sanitize_html(&Sanitizer::default());
        for item in &feed.items {
            if let Some(thumbnail) = &item.thumbnail {
                assert!(thumbnail.starts_with("https://"), "{thumbnail}");
            }
        }
    }
    if selector & 0x80 != 0 {
        let page = Url::parse("https://fuzz.example/page").expect("static URL");
        for candidate in discover(bytes, &page) {
            assert!(candidate.url.starts_with("http"), "{}", candidate.url);
        }
    }
});
