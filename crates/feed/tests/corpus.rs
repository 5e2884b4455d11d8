//! The corpus in `testdata/`: every feed is parsed, sanitized and compared with its snapshot
//! (`tests/snapshots/`), and the cases of issue 3 are asserted explicitly as well, so a change
//! of behaviour fails a named test, not only a snapshot.

use std::path::Path;

use tidings_feed::report::FeedReport;
use tidings_feed::{
    Feed, FeedFormat, FeedVersion, IdentitySource, ParseError, ParseOptions, Sanitizer, parse,
};
use url::Url;

use crate::cpu;

/// The feeds of the corpus with the HTTP charset a server would have sent for them.
const FEEDS: &[(&str, Option<&str>)] = &[
    ("rss090.rdf", None),
    ("rss091.xml", None),
    ("rss092.xml", None),
    ("rss10.rdf", None),
    ("rss20_full.xml", None),
    ("rss20_dates.xml", None),
    ("atom10_full.xml", None),
    ("atom03.xml", None),
    ("jsonfeed10.json", None),
    ("jsonfeed11.json", None),
    ("ja_shift_jis_declared.xml", None),
    ("ja_euc_jp_declared.xml", None),
    ("ja_shift_jis_http_only.xml", Some("Shift_JIS")),
    ("ja_iso_2022_jp.xml", None),
    ("ja_stale_declaration.xml", None),
    ("bom_and_whitespace.xml", None),
    ("utf16le_bom.xml", None),
    ("zh_gb18030.xml", None),
    ("zh_big5.xml", None),
    ("ko_euc_kr.xml", None),
    ("ru_windows_1251.xml", None),
    ("cz_iso_8859_2.xml", None),
    ("fr_windows_1252.xml", None),
    ("de_iso_8859_15.xml", None),
    ("truncated.xml", None),
    ("billion_laughs.xml", None),
    ("xxe.xml", None),
    ("junk_before_xml.xml", None),
    ("undeclared_prefixes.xml", None),
    ("rss20_escaped_markup_titles.xml", None),
    ("youtube_channel.xml", None),
    ("mrss_rss20.xml", None),
    ("dublin_core_rss20.xml", None),
    ("atom_without_namespace.xml", None),
    ("rss091_dtd_entities.xml", None),
    ("atom03_base64_escaped.xml", None),
    ("atom10_xhtml_escaped.xml", None),
    ("rss20_xhtml_body.xml", None),
    ("jsonfeed11_authors_text.json", None),
    ("relative_urls_rss20.xml", None),
    ("relative_urls_atom.xml", None),
];

const FEED_URL: &str = "https://blog.example.com/feed.xml";

fn read(folder: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(folder)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn options(charset: Option<&str>) -> ParseOptions {
    ParseOptions {
        feed_url: Some(Url::parse(FEED_URL).expect("feed url")),
        http_charset: charset.map(str::to_owned),
        ..ParseOptions::default()
    }
}

fn parse_file(name: &str) -> Feed {
    let charset = FEEDS.iter().find(|(n, _)| *n == name).and_then(|(_, c)| *c);
    parse(&read("feeds", name), &options(charset)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn sanitized(name: &str) -> Feed {
    let mut feed = parse_file(name);
    feed.sanitize_html(&Sanitizer::default());
    feed
}

#[test]
fn every_feed_matches_its_snapshot() {
    for (name, _) in FEEDS {
        let feed = sanitized(name);
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_suffix(name.replace('.', "_"));
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_json_snapshot!("feed", FeedReport::new(&feed)));
    }
}

#[test]
fn every_corpus_file_is_listed() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/feeds");
    for entry in std::fs::read_dir(folder).expect("testdata/feeds") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            FEEDS.iter().any(|(n, _)| *n == name),
            "{name} is not in FEEDS"
        );
    }
}

#[test]
fn formats_and_versions_are_recognized() {
    let expected = [
        ("rss090.rdf", FeedVersion::Rss090),
        ("rss091.xml", FeedVersion::Rss091),
        ("rss092.xml", FeedVersion::Rss092),
        ("rss10.rdf", FeedVersion::Rss10),
        ("rss20_full.xml", FeedVersion::Rss20),
        ("atom10_full.xml", FeedVersion::Atom10),
        ("atom03.xml", FeedVersion::Atom03),
        ("jsonfeed10.json", FeedVersion::Json10),
        ("jsonfeed11.json", FeedVersion::Json11),
    ];
    for (name, version) in expected {
        assert_eq!(parse_file(name).version, version, "{name}");
    }
    assert_eq!(parse_file("rss10.rdf").format(), FeedFormat::Rss);
    assert_eq!(parse_file("atom03.xml").format(), FeedFormat::Atom);
    assert_eq!(parse_file("jsonfeed11.json").format(), FeedFormat::Json);
}

#[test]
fn rss_090_and_10_items_sit_beside_the_channel() {
    let feed = parse_file("rss090.rdf");
    assert_eq!(feed.items.len(), 2);
    assert_eq!(
        feed.items[0].url.as_deref(),
        Some("http://www.mozilla.org/status/")
    );
    let feed = parse_file("rss10.rdf");
    assert_eq!(feed.items.len(), 2);
    let first = &feed.items[0];
    assert_eq!(
        first.guid.as_deref(),
        Some("http://xml.example/pub/2000/08/09/xslt/xslt.html")
    );
    assert_eq!(first.authors, ["Bob DuCharme"]);
    assert_eq!(first.categories, ["XSLT"]);
    assert_eq!(
        first.content.as_deref(),
        Some("<p>The <em>full</em> article.</p>")
    );
    assert_eq!(
        first.published.map(|d| d.to_rfc3339()).as_deref(),
        Some("2024-03-05T01:00:00+00:00")
    );
}

#[test]
fn titles_are_entity_decoded_stripped_and_collapsed() {
    let feed = parse_file("rss091.xml");
    assert_eq!(feed.title.as_deref(), Some("WriteTheWeb News"));
    assert_eq!(
        feed.description.as_deref(),
        Some("News for web users that write back…")
    );
    assert_eq!(
        feed.items[0].title.as_deref(),
        Some("Giving the world a pluggable Gnutella… again")
    );
    let feed = parse_file("rss20_full.xml");
    assert_eq!(feed.title.as_deref(), Some("Example Blog"));
    assert_eq!(
        feed.description.as_deref(),
        Some("Posts & notes about things")
    );
    let atom = parse_file("atom10_full.xml");
    assert_eq!(atom.title.as_deref(), Some("Atom Example & co"));
    // type="text" is literal text: its markup-looking characters stay.
    assert_eq!(
        atom.items[0].title.as_deref(),
        Some("Text title with <tags> kept &amp; literal")
    );
    assert_eq!(atom.items[1].title.as_deref(), Some("XHTML title & more"));
}

#[test]
fn content_encoded_wins_and_description_is_the_summary() {
    let feed = parse_file("rss20_full.xml");
    let item = &feed.items[0];
    assert_eq!(item.summary.as_deref(), Some("Short summary."));
    assert!(
        item.content
            .as_deref()
            .is_some_and(|c| c.contains("a relative link"))
    );
}

#[test]
fn escaped_and_double_escaped_descriptions_become_html() {
    let feed = sanitized("rss20_full.xml");
    assert_eq!(
        feed.items[1].content.as_deref(),
        Some("<p>Escaped <b>HTML</b> description</p>")
    );
    assert_eq!(
        feed.items[2].content.as_deref(),
        Some("<p>Double &amp; escaped</p>")
    );
    assert_eq!(
        feed.items[4].content.as_deref(),
        Some("Unescaped <b>markup</b> in a description")
    );
}

#[test]
fn guid_is_permalink_rules() {
    let feed = parse_file("rss20_full.xml");
    assert_eq!(
        feed.items[1].url.as_deref(),
        Some("https://blog.example.com/posts/2")
    );
    assert_eq!(feed.items[1].identity().source, IdentitySource::Guid);
    assert_eq!(
        feed.items[2].url, None,
        "isPermaLink=false guid is not a link"
    );
    assert_eq!(
        feed.items[2].guid.as_deref(),
        Some("https://blog.example.com/posts/3")
    );
}

#[test]
fn links_resolve_against_xml_base_then_feed_url() {
    let feed = sanitized("rss20_full.xml");
    assert_eq!(
        feed.icon.as_deref(),
        Some("https://blog.example.com/logo.png")
    );
    assert_eq!(
        feed.feed_url.as_deref(),
        Some("https://blog.example.com/feed.xml")
    );
    assert_eq!(feed.hubs, ["https://hub.example.com/"]);
    let based = &feed.items[3];
    assert_eq!(
        based.url.as_deref(),
        Some("https://other.example.org/base/relative/page.html")
    );
    assert_eq!(
        based.enclosures[0].url,
        "https://other.example.org/base/audio.mp3"
    );
    assert!(
        based
            .content
            .as_deref()
            .is_some_and(|c| c.contains("href=\"https://other.example.org/base/sub/x.html\""))
    );
    assert!(
        based
            .content
            .as_deref()
            .is_some_and(|c| c.contains("src=\"https://other.example.org/base/pic.jpg\""))
    );
    assert_eq!(
        feed.items[4].url.as_deref(),
        Some("https://blog.example.com/posts/5")
    );
    // Content links resolve against the item's page.
    assert!(
        feed.items[0]
            .content
            .as_deref()
            .is_some_and(|c| c.contains("href=\"https://blog.example.com/post/1\""))
    );
}

#[test]
fn atom_links_content_kinds_and_bases() {
    let feed = sanitized("atom10_full.xml");
    assert_eq!(feed.site_url.as_deref(), Some("https://atom.example.com/"));
    assert_eq!(
        feed.feed_url.as_deref(),
        Some("https://atom.example.com/feed.atom")
    );
    assert_eq!(
        feed.icon.as_deref(),
        Some("https://atom.example.com/favicon.ico")
    );
    assert_eq!(feed.description.as_deref(), Some("A feed & its subtitle"));
    assert_eq!(feed.language.as_deref(), Some("en"));
    let first = &feed.items[0];
    assert_eq!(
        first.url.as_deref(),
        Some("https://atom.example.com/blog/entry-1.html"),
        "html alternate preferred"
    );
    assert_eq!(first.authors, ["Entry Author", "Second Author"]);
    assert_eq!(first.categories, ["atom", "xml"]);
    assert_eq!(
        first.summary.as_deref(),
        Some("Plain &lt;summary&gt; text &amp; more")
    );
    assert_eq!(first.enclosures[0].length, Some(1337));
    assert_eq!(
        first.published.map(|d| d.to_rfc3339()).as_deref(),
        Some("2024-03-05T01:00:00+00:00")
    );
    let second = &feed.items[1];
    assert_eq!(
        second.url.as_deref(),
        Some("https://elsewhere.example.net/x/entry-2")
    );
    assert_eq!(second.authors, ["Feed Author"], "inherited from the feed");
    assert_eq!(
        second.published, second.updated,
        "published falls back to updated"
    );
    let content = second.content.as_deref().unwrap_or_default();
    assert!(
        content.contains("href=\"https://elsewhere.example.net/x/rel/link\""),
        "{content}"
    );
    assert!(
        content.contains("src=\"https://elsewhere.example.net/x/i.png\""),
        "{content}"
    );
    assert!(
        !content.contains("script") && !content.contains("alert"),
        "{content}"
    );
    let third = &feed.items[2];
    assert_eq!(
        third.url.as_deref(),
        Some("https://atom.example.com/blog/entry-3.html"),
        "content src as link"
    );
    assert_eq!(third.content, None);
    assert_eq!(
        feed.items[3].content.as_deref(),
        Some("<p>Line one &lt;not a tag&gt;<br>Line two &amp; three</p>"),
        "text keeps its line breaks"
    );
    assert_eq!(
        feed.items[4].content.as_deref(),
        Some("<p>Summary <i>only</i></p>")
    );
}

#[test]
fn atom_03_modes() {
    let feed = sanitized("atom03.xml");
    assert_eq!(feed.description.as_deref(), Some("An old-style tagline"));
    assert_eq!(
        feed.items[0].content.as_deref(),
        Some("<p>Escaped <b>HTML</b></p>")
    );
    assert_eq!(feed.items[0].categories, ["history"]);
    assert_eq!(feed.items[1].content.as_deref(), Some("<p>Inline</p>"));
    assert_eq!(
        feed.items[0].published.map(|d| d.to_rfc3339()).as_deref(),
        Some("2003-12-13T12:29:29+00:00")
    );
}

#[test]
fn json_feed_fields() {
    let feed = sanitized("jsonfeed10.json");
    assert_eq!(feed.title.as_deref(), Some("JSON Feed 1.0 & friends"));
    assert_eq!(feed.items[0].guid.as_deref(), Some("1"));
    assert_eq!(
        feed.items[0].url.as_deref(),
        Some("https://elsewhere.example.com/a"),
        "external_url"
    );
    assert_eq!(feed.items[0].authors, ["Old Author"]);
    assert_eq!(
        feed.items[0].content.as_deref(),
        Some("<p>Numeric id, text content &lt;b&gt;not markup&lt;/b&gt;<br>second line</p>")
    );
    assert_eq!(
        feed.items[1].url.as_deref(),
        Some("https://blog.example.com/posts/2"),
        "relative to the fetched URL"
    );
    assert_eq!(feed.items[1].categories, ["one", "two"]);
    let feed = sanitized("jsonfeed11.json");
    assert_eq!(feed.hubs, ["https://hub.example.com/"]);
    let item = &feed.items[0];
    assert_eq!(item.authors, ["Item Author", "Co Author"]);
    assert_eq!(
        item.summary.as_deref(),
        Some("A &lt;summary&gt; in plain text")
    );
    assert_eq!(item.enclosures.len(), 1);
    assert_eq!(
        item.thumbnail.as_deref(),
        Some("https://json.example.org/cover.png")
    );
    assert_eq!(item.enclosures[0].length, Some(123_456));
    assert_eq!(feed.items[1].authors, ["Feed Author"]);
    assert_eq!(feed.items[1].published, None, "garbage date is null");
}

#[test]
fn enclosures_from_every_source() {
    let feed = parse_file("rss20_full.xml");
    let urls: Vec<&str> = feed.items[5]
        .enclosures
        .iter()
        .map(|e| e.url.as_str())
        .collect();
    assert_eq!(
        urls,
        [
            "https://cdn.example.com/ep6.mp3",
            "https://cdn.example.com/ep6.mp4",
            "https://cdn.example.com/ep6-hd.mp4",
        ]
    );
    // Thumbnails and artwork are the item's image, not files attached to it: the largest
    // stated thumbnail wins over one of unknown size and over the iTunes artwork.
    assert_eq!(
        feed.items[5].thumbnail.as_deref(),
        Some("https://cdn.example.com/ep6-thumb.jpg")
    );
    assert_eq!(feed.items[5].enclosures[0].length, Some(5_000_000));
    assert_eq!(
        feed.items[5].enclosures[0].mime_type.as_deref(),
        Some("audio/mpeg")
    );
    assert_eq!(feed.items[5].authors, ["The Podcast Team"]);
    let rss092 = parse_file("rss092.xml");
    assert_eq!(
        rss092.items[1].enclosures[0].length, None,
        "length 0 means unknown"
    );
}

#[test]
fn authors_and_categories() {
    let feed = parse_file("rss20_full.xml");
    assert_eq!(feed.items[0].authors, ["Jane Doe"]);
    assert_eq!(feed.items[1].authors, ["Jane Doe"], "email (Name) form");
    assert_eq!(
        feed.items[0].categories,
        ["Rust", "rust", "Feeds & Readers"]
    );
    assert_eq!(parse_file("rss091.xml").authors, ["Ed Itor"]);
}

#[test]
fn identity_falls_back_guid_link_content() {
    let feed = parse_file("rss20_full.xml");
    assert_eq!(feed.items[0].identity().source, IdentitySource::Guid);
    assert_eq!(feed.items[4].identity().source, IdentitySource::Link);
    assert_eq!(feed.items[6].identity().source, IdentitySource::Content);
    // Sanitizing does not change identities.
    let clean = sanitized("rss20_full.xml");
    for (a, b) in feed.items.iter().zip(&clean.items) {
        assert_eq!(a.identity(), b.identity());
    }
}

#[test]
fn dates_in_a_feed_all_normalize_to_utc() {
    let feed = parse_file("rss20_dates.xml");
    let got: Vec<Option<String>> = feed
        .items
        .iter()
        .map(|i| {
            i.published
                .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.fZ").to_string())
        })
        .collect();
    let expected = [
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T01:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T01:00:00Z"),
        Some("2024-03-05T01:00:00Z"),
        Some("2024-03-05T09:00:00Z"),
        Some("2024-03-05T15:00:00Z"),
        Some("2024-03-05T17:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T01:00:00Z"),
        Some("2024-03-05T01:00:00Z"),
        Some("2024-03-05T10:00:00.123Z"),
        Some("2024-03-05T00:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        Some("2024-03-05T10:00:00Z"),
        None,
        None,
        Some("2024-03-05T15:00:00Z"),
    ];
    let expected: Vec<Option<String>> = expected.iter().map(|e| e.map(str::to_owned)).collect();
    assert_eq!(got, expected);
}

#[test]
fn japanese_encodings() {
    for name in [
        "ja_shift_jis_declared.xml",
        "ja_euc_jp_declared.xml",
        "ja_shift_jis_http_only.xml",
        "ja_iso_2022_jp.xml",
        "ja_stale_declaration.xml",
        "bom_and_whitespace.xml",
        "utf16le_bom.xml",
    ] {
        let feed = parse_file(name);
        assert_eq!(feed.title.as_deref(), Some("日本語のブログ"), "{name}");
        assert_eq!(
            feed.items[0].title.as_deref(),
            Some("こんにちは、世界…"),
            "{name}"
        );
        assert_eq!(
            feed.items[0].published.map(|d| d.to_rfc3339()).as_deref(),
            Some("2024-03-05T01:00:00+00:00"),
            "{name}"
        );
    }
    let sjis = parse_file("ja_shift_jis_declared.xml");
    assert_eq!(
        sjis.items[0].summary.as_deref(),
        Some("本文です。「引用」と①②③。")
    );
    // Shift_JIS without any label: sniffed.
    let sniffed =
        parse(&read("feeds", "ja_shift_jis_http_only.xml"), &options(None)).expect("sniffed");
    assert_eq!(sniffed.title.as_deref(), Some("日本語のブログ"));
}

#[test]
fn other_legacy_encodings() {
    let expected = [
        ("zh_gb18030.xml", "中文博客", "简体中文内容"),
        ("zh_big5.xml", "中文部落格", "繁體中文內容"),
        ("ko_euc_kr.xml", "한국어 블로그", "내용입니다"),
        ("ru_windows_1251.xml", "Русский блог", "Содержание"),
        ("cz_iso_8859_2.xml", "Český blog", "Žluťoučký kůň"),
        ("fr_windows_1252.xml", "Café “quotes”", "Crème brûlée"),
        ("de_iso_8859_15.xml", "Preis in €", "Größe"),
    ];
    for (name, title, description) in expected {
        let feed = parse_file(name);
        assert_eq!(feed.title.as_deref(), Some(title), "{name}");
        assert_eq!(
            feed.items[0].summary.as_deref(),
            Some(description),
            "{name}"
        );
    }
}

#[test]
fn truncated_xml_keeps_complete_items() {
    let feed = parse_file("truncated.xml");
    assert_eq!(feed.items.len(), 2);
    assert_eq!(feed.items[1].title.as_deref(), Some("Second complete item"));
    assert!(feed.warning.is_some());
}

#[test]
fn billion_laughs_and_xxe_are_inert() {
    let started = cpu::CpuStopwatch::start();
    let feed = parse_file("billion_laughs.xml");
    let spent = started.elapsed();
    assert!(
        spent < std::time::Duration::from_secs(1),
        "{spent:?} of CPU"
    );
    assert_eq!(feed.title.as_deref(), Some("&lol9;"));
    assert_eq!(feed.items[0].title.as_deref(), Some("&lol9;&lol9;"));
    let feed = parse_file("xxe.xml");
    assert_eq!(feed.title.as_deref(), Some("XXE &xxe;"));
    let report = serde_json::to_string(&FeedReport::new(&sanitized("xxe.xml"))).expect("json");
    assert!(!report.contains("root:"), "no file content may appear");
}

#[test]
fn junk_and_undeclared_prefixes_are_tolerated() {
    assert_eq!(
        parse_file("junk_before_xml.xml").title.as_deref(),
        Some("After junk")
    );
    let feed = parse_file("undeclared_prefixes.xml");
    let item = &feed.items[0];
    assert_eq!(item.content.as_deref(), Some("<p>Full</p>"));
    assert_eq!(item.authors, ["Someone"]);
    assert!(item.published.is_some());
}

#[test]
fn not_feeds_give_a_clear_error() {
    let cases = [
        ("html_page.html", "not a feed: this is an HTML page"),
        ("xhtml_page.xml", "not a feed: this is an HTML page"),
        (
            "sitemap.xml",
            "not a feed: the XML root element is <urlset>",
        ),
        ("garbage.bin", "not a feed: "),
        ("empty.xml", "not a feed: the document is empty"),
        (
            "json_not_feed.json",
            "not a feed: the JSON document is not a JSON Feed: it has no \"version\"",
        ),
        (
            "json_items_without_version.json",
            "not a feed: the JSON document is not a JSON Feed: it has no \"version\"",
        ),
        (
            "json_other_version.json",
            "not a feed: the JSON document is not a JSON Feed: it has \"version\": \"2.3.1\"",
        ),
        (
            "rss_without_channel.xml",
            "not a feed: the <rss> element holds neither a <channel> nor items",
        ),
        (
            "rdf_not_rss.rdf",
            "not a feed: this RDF document has no RSS 1.0 <channel> or <item>",
        ),
        (
            "feed_other_namespace.xml",
            "not a feed: the root element is <feed> in a namespace that is neither Atom",
        ),
        (
            "broken_json.json",
            "not a feed: the document looks like JSON but is not valid JSON",
        ),
        (
            "plain_text.txt",
            "not a feed: the document is neither XML nor JSON",
        ),
    ];
    for (name, prefix) in cases {
        let error = parse(&read("not-feeds", name), &options(None)).expect_err(name);
        let message = error.to_string();
        assert!(message.starts_with(prefix), "{name}: {message}");
        assert!(!message.contains('\n'), "{name}: one line");
        assert!(matches!(error, ParseError::NotAFeed(_)));
    }
}

#[test]
fn size_limit_is_enforced() {
    let options = ParseOptions {
        max_input_bytes: 10,
        ..ParseOptions::default()
    };
    let error = parse(b"<rss><channel></channel></rss>", &options).expect_err("too large");
    assert!(matches!(
        error,
        ParseError::TooLarge {
            size: 30,
            limit: 10
        }
    ));
}

// --- Issue 10 point 3: real-world shapes the reference parsers read right ----------------------

#[test]
fn escaped_markup_in_titles_is_text_unless_clearly_markup() {
    let feed = sanitized("rss20_escaped_markup_titles.xml");
    assert_eq!(
        feed.title.as_deref(),
        Some("Front-End Notes: <canvas>, CSS & more")
    );
    assert_eq!(
        feed.description.as_deref(),
        Some("Articles about the web platform."),
        "real markup is stripped, inline tags leave no gap"
    );
    let titles: Vec<&str> = feed
        .items
        .iter()
        .map(|i| i.title.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(
        titles,
        [
            "Why <dialog> beats modals",
            "Styling <input type=\"range\"> & <select> without tears",
            ":has() is the parent selector you wanted",
            // `>` inside the quoted attribute values does not end the tag.
            "Comparisons in CSS math",
            "If a < b and b > c, is <b> bold?",
        ]
    );
    assert_eq!(feed.items[0].categories, ["<dialog>"], "categories too");
    assert_eq!(feed.items[0].authors, ["Sam"], "Name <address> is a name");
    assert_eq!(feed.items[2].authors, ["Sam Example"], "names too");
    let body = feed.items[3].content.as_deref().unwrap_or_default();
    assert!(
        body.contains("<img src=\"https://frontend.example.com/img/math.png\" alt=\"1 &gt; 0\">"),
        "{body}"
    );
}

#[test]
fn media_rss_gives_title_summary_and_thumbnail() {
    let feed = sanitized("youtube_channel.xml");
    let video = &feed.items[0];
    assert_eq!(
        video.title.as_deref(),
        Some("Building a workbench & why <dovetails> matter")
    );
    assert_eq!(
        video.summary.as_deref(),
        Some(
            "<p>Today we build a workbench from reclaimed oak.<br>Tools used: a saw, a chisel \
             &amp; patience.</p><p>Chapters:<br>0:00 Intro<br>4:12 Dovetails &lt;- the hard \
             part</p><p>Support the channel: https://patreon.example.com/workshop</p>"
        ),
        "media:description inside media:group, its lines kept"
    );
    assert_eq!(
        video.thumbnail.as_deref(),
        Some("https://i2.ytimg.com/vi/dQw4w9WgXc1/hqdefault.jpg")
    );
    assert_eq!(
        video.enclosures[0].url,
        "https://www.youtube.com/v/dQw4w9WgXc1?version=3"
    );
    assert_eq!(feed.items[1].summary, None, "an empty description is none");
    assert_eq!(
        feed.items[1].thumbnail, None,
        "an http still fails the image rule"
    );
    let mut rewriting = parse_file("youtube_channel.xml");
    rewriting.sanitize_html(&Sanitizer::new(tidings_feed::SanitizeOptions {
        rewrite_http_media_to_https: true,
        keep_http_media: false,
    }));
    assert_eq!(
        rewriting.items[1].thumbnail.as_deref(),
        Some("https://i3.ytimg.com/vi/aBcDeFgHiJ2/hqdefault.jpg")
    );

    let photos = sanitized("mrss_rss20.xml");
    let harbour = &photos.items[0];
    assert_eq!(
        harbour.title.as_deref(),
        Some("Harbour at dawn"),
        "media:title"
    );
    assert_eq!(
        harbour.summary.as_deref(),
        Some("<p>Fishing boats leave the <b>old harbour</b>.</p>"),
        "media:description type=html"
    );
    assert_eq!(
        harbour.thumbnail.as_deref(),
        Some("https://photos.example.org/thumb/harbour-600.jpg"),
        "the largest thumbnail"
    );
    assert_eq!(harbour.enclosures[0].length, Some(812_345));
    assert_eq!(
        photos.items[1].thumbnail.as_deref(),
        Some("https://blog.example.com/full/market.jpg"),
        "an image media:content, resolved"
    );
    assert_eq!(
        photos.items[2].thumbnail.as_deref(),
        Some("https://cdn.example.org/ep12-cover.jpg"),
        "itunes:image"
    );
}

#[test]
fn dublin_core_fallbacks() {
    let feed = sanitized("dublin_core_rss20.xml");
    assert_eq!(feed.title.as_deref(), Some("Gemeindeblatt Musterstadt"));
    assert_eq!(
        feed.description.as_deref(),
        Some("Amtliche Mitteilungen der Gemeinde")
    );
    assert_eq!(feed.authors, ["Gemeindeverwaltung Musterstadt"]);
    assert_eq!(feed.language.as_deref(), Some("de"));
    assert_eq!(
        feed.updated.map(|d| d.to_rfc3339()).as_deref(),
        Some("2024-03-08T11:00:00+00:00")
    );
    let item = &feed.items[0];
    assert_eq!(item.title.as_deref(), Some("Sperrung der Hauptstraße"));
    assert_eq!(
        item.summary.as_deref(),
        Some("<p>Die Hauptstraße ist vom 11. bis 15. März gesperrt.</p>")
    );
    assert_eq!(item.authors, ["Bauamt"]);
    assert_eq!(
        item.published.map(|d| d.to_rfc3339()).as_deref(),
        Some("2024-03-08T09:15:00+00:00")
    );
    assert_eq!(item.categories, ["Verkehr"]);
    assert_eq!(
        feed.items[1].title.as_deref(),
        Some("Öffnungszeiten über Ostern")
    );
}

#[test]
fn atom_without_its_namespace_is_read_as_atom() {
    let feed = sanitized("atom_without_namespace.xml");
    assert_eq!(feed.version, FeedVersion::Atom10);
    assert_eq!(feed.title.as_deref(), Some("Hand-written Atom"));
    assert_eq!(feed.description.as_deref(), Some("No xmlns on the root"));
    assert_eq!(
        feed.feed_url.as_deref(),
        Some("https://handmade.example.net/atom.xml")
    );
    assert_eq!(feed.items.len(), 1);
    let entry = &feed.items[0];
    assert_eq!(entry.authors, ["Robin"]);
    assert_eq!(
        entry.content.as_deref(),
        Some("<p>I wrote this feed by hand.</p>")
    );
}

#[test]
fn internal_dtd_entities_are_expanded() {
    let feed = sanitized("rss091_dtd_entities.xml");
    assert_eq!(feed.title.as_deref(), Some("Example Weekly"));
    assert_eq!(
        feed.description.as_deref(),
        Some("News from the village © 2024")
    );
    assert_eq!(
        feed.items[0].title.as_deref(),
        Some("Fair results — pumpkins win")
    );
    assert_eq!(
        feed.items[0].content.as_deref(),
        Some("<p>The biggest pumpkin weighed 212&nbsp;kg.</p><p>— the Example Weekly team</p>"),
        "entities that use entities"
    );
    assert_eq!(
        feed.items[1].title.as_deref(),
        Some("Unknown &remote; stays as written"),
        "an external entity is never fetched"
    );
    assert!(feed.warning.is_none());
    // Billion laughs is still refused: its entities stay as written, with a warning.
    let laughs = parse_file("billion_laughs.xml");
    assert_eq!(laughs.title.as_deref(), Some("&lol9;"));
    assert!(
        laughs
            .warning
            .as_deref()
            .is_some_and(|w| w.contains("&lol9;")),
        "{:?}",
        laughs.warning
    );
}

#[test]
fn atom_03_base64_escaped_and_dates() {
    let feed = sanitized("atom03_base64_escaped.xml");
    assert_eq!(feed.version, FeedVersion::Atom03);
    assert_eq!(feed.title.as_deref(), Some("Old & Dusty Weblog"));
    let first = &feed.items[0];
    assert_eq!(
        first.content.as_deref(),
        Some(
            "<p>Encoded <b>body</b> with a <a href=\"http://dusty.example.org/about\" \
             target=\"_blank\" rel=\"noopener noreferrer\">link</a>, café.</p>"
        ),
        "mode=base64, wrapped over lines"
    );
    assert_eq!(
        first.published.map(|d| d.to_rfc3339()).as_deref(),
        Some("2004-06-01T13:00:00+00:00"),
        "issued"
    );
    assert_eq!(
        first.updated.map(|d| d.to_rfc3339()).as_deref(),
        Some("2004-06-01T14:30:00+00:00"),
        "modified"
    );
    let second = &feed.items[1];
    assert_eq!(
        second.content.as_deref(),
        Some("<p>An <i>escaped</i> body.</p>")
    );
    assert_eq!(
        second.summary.as_deref(),
        Some("<p>An <i>escaped</i> summary.</p>")
    );
    assert_eq!(
        second.published.map(|d| d.to_rfc3339()).as_deref(),
        Some("2004-05-20T00:00:00+00:00"),
        "a date-only issued"
    );
    assert_eq!(feed.items[2].content, None, "a base64 image is no text");
}

#[test]
fn xhtml_holding_escaped_html_and_xhtml_body() {
    let feed = sanitized("atom10_xhtml_escaped.xml");
    assert_eq!(feed.title.as_deref(), Some("Notes on XHTML"));
    assert_eq!(
        feed.items[0].content.as_deref(),
        Some(
            "<p>A generator escaped its <strong>HTML</strong> and <a \
             href=\"https://notes.example.com/related\" target=\"_blank\" rel=\"noopener \
             noreferrer\">linked</a> it.</p>"
        )
    );
    assert_eq!(
        feed.items[1].content.as_deref(),
        Some("<p>Says <code>a &lt;b&gt; tag</code> in <em>words</em>.</p>"),
        "real XHTML keeps its escaped text escaped"
    );
    let feed = sanitized("rss20_xhtml_body.xml");
    let item = &feed.items[0];
    assert_eq!(item.summary.as_deref(), Some("A short teaser."));
    let content = item.content.as_deref().unwrap_or_default();
    assert!(
        content.contains("<p>The full post, with <a href=\"https://scribbles.example.com/about\""),
        "{content}"
    );
    assert!(
        content.contains(
            "<img src=\"https://scribbles.example.com/img/figure.png\" alt=\"A figure\">"
        ),
        "{content}"
    );
}

#[test]
fn json_feed_11_authors_and_text_paragraphs() {
    let feed = sanitized("jsonfeed11_authors_text.json");
    assert_eq!(feed.authors, ["Kim Lee", "Doe, Jane"]);
    let item = &feed.items[0];
    assert_eq!(
        item.authors,
        ["Kim Lee", "Doe, Jane", "https://guest.example.org/"],
        "one author each, a comma in a name kept"
    );
    assert_eq!(
        item.content.as_deref(),
        Some(
            "<p>Three things today:</p><p>1. Coffee &lt; tea, sometimes.<br>2. Fixed the \
             &lt;br&gt; bug.<br>3. Walked 8 km.</p><p>That's all.<br>Bye!</p>"
        )
    );
    assert_eq!(
        item.thumbnail.as_deref(),
        Some("https://micro.example.com/uploads/notes.jpg"),
        "image over banner_image"
    );
    assert_eq!(
        feed.items[1].content.as_deref(),
        Some("Single line, no author of its own.")
    );
    assert_eq!(feed.items[1].authors, ["Kim Lee", "Doe, Jane"]);
    let report = serde_json::to_value(FeedReport::new(&feed)).expect("json");
    assert_eq!(
        report["items"][0]["authors"],
        serde_json::json!(["Kim Lee", "Doe, Jane", "https://guest.example.org/"]),
        "tidings parse prints them apart"
    );
}

// --- Issue 10 point 5: relative URLs in content ---------------------------------------------

fn without_feed_url(name: &str) -> Feed {
    let mut feed = parse(&read("feeds", name), &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    feed.sanitize_html(&Sanitizer::default());
    feed
}

#[test]
fn relative_urls_resolve_against_the_item_link_and_the_feed_link() {
    // Fetched: the item's link resolves against the feed's URL, content against the link.
    let feed = sanitized("relative_urls_rss20.xml");
    let first = &feed.items[0];
    assert_eq!(
        first.url.as_deref(),
        Some("https://blog.example.com/posts/relative-everything/")
    );
    let content = first.content.as_deref().unwrap_or_default();
    assert!(
        content.contains("href=\"https://blog.example.com/about/\""),
        "{content}"
    );
    // Read from a file (no URL): the channel's link is the base of everything relative.
    let feed = without_feed_url("relative_urls_rss20.xml");
    let first = &feed.items[0];
    assert_eq!(
        first.url.as_deref(),
        Some("https://static.example.net/blog/posts/relative-everything/")
    );
    assert_eq!(
        first.enclosures[0].url,
        "https://static.example.net/blog/media/episode-1.mp3"
    );
    let content = first.content.as_deref().unwrap_or_default();
    for expected in [
        "href=\"https://static.example.net/blog/about/\"",
        "href=\"https://static.example.net/blog/posts/relative-everything/#notes\"",
        "src=\"https://static.example.net/blog/posts/relative-everything/cover.jpg\"",
        "srcset=\"https://static.example.net/blog/posts/relative-everything/cover.jpg 1x, \
         https://static.example.net/blog/posts/relative-everything/cover@2x.jpg 2x\"",
    ] {
        assert!(content.contains(expected), "{expected} in {content}");
    }
    // An item without a link: its content resolves against the feed's link.
    let second = feed.items[1].content.as_deref().unwrap_or_default();
    assert!(
        second.contains("href=\"https://static.example.net/blog/tags/rust/\"")
            && second.contains("src=\"https://static.example.net/img/logo.png\""),
        "{second}"
    );
}

#[test]
fn xml_base_inside_xhtml_content_applies_to_the_links_below_it() {
    let feed = without_feed_url("relative_urls_atom.xml");
    assert_eq!(
        feed.site_url.as_deref(),
        Some("https://journal.example.org/")
    );
    let first = &feed.items[0];
    assert_eq!(
        first.url.as_deref(),
        Some("https://journal.example.org/2024/03/nested-bases")
    );
    let content = first.content.as_deref().unwrap_or_default();
    for expected in [
        "href=\"https://journal.example.org/2024/03/nested-bases/comments\"",
        "src=\"https://cdn.example.com/journal/photos/lake.jpg\"",
        "href=\"https://cdn.example.com/press/kit.zip\"",
        "href=\"https://journal.example.org/archive/\"",
    ] {
        assert!(content.contains(expected), "{expected} in {content}");
    }
    assert!(
        !content.contains("base="),
        "xml:base is not kept: {content}"
    );
    // An entry without xml:base of its own: the feed's xml:base is still in effect, and it
    // wins over the entry's link (RFC 4287 §2, as the reference parsers read it).
    let second = &feed.items[1];
    assert_eq!(
        second.url.as_deref(),
        Some("https://journal.example.org/2024/02/entry-link/")
    );
    let content = second.content.as_deref().unwrap_or_default();
    assert!(
        content.contains("src=\"https://journal.example.org/chart.svg\"")
            && content.contains("href=\"https://journal.example.org/data.csv\""),
        "{content}"
    );
    // The same with the feed's URL known: xml:base wins over it.
    assert_eq!(
        sanitized("relative_urls_atom.xml").items[0].content,
        first.content
    );
}

#[test]
fn json_feed_links_resolve_against_the_home_page_without_a_feed_url() {
    let json = br#"{"version": "https://jsonfeed.org/version/1.1", "title": "J",
        "home_page_url": "https://j.example.com/site/",
        "items": [{"id": "1", "url": "posts/1", "content_html": "<a href=\"../x\">x</a><img src=\"i.png\">"}]}"#;
    let mut feed = parse(json, &ParseOptions::default()).expect("json feed");
    feed.sanitize_html(&Sanitizer::default());
    let item = &feed.items[0];
    assert_eq!(
        item.url.as_deref(),
        Some("https://j.example.com/site/posts/1")
    );
    let content = item.content.as_deref().unwrap_or_default();
    assert!(
        content.contains("href=\"https://j.example.com/site/x\"")
            && content.contains("src=\"https://j.example.com/site/posts/i.png\""),
        "{content}"
    );
}

/// Declared languages (issue 37): the feed's, and an item's own where the format has one
/// (Atom `xml:lang` on the entry or its content, RSS `dc:language`, JSON Feed 1.1 `language`).
#[test]
fn feeds_and_items_declare_their_languages() {
    let parsed = |doc: &str| parse(doc.as_bytes(), &options(None)).expect("parses");
    let atom = parsed(
        r#"<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en-US"><title>t</title>
           <entry xml:lang="ja"><id>a</id><title>東京</title></entry>
           <entry><id>b</id><title>x</title><content xml:lang="de">Hallo</content></entry>
           <entry><id>c</id><title>y</title></entry></feed>"#,
    );
    assert_eq!(atom.language.as_deref(), Some("en-US"));
    let item_languages: Vec<Option<&str>> =
        atom.items.iter().map(|i| i.language.as_deref()).collect();
    assert_eq!(item_languages, [Some("ja"), Some("de"), None]);
    let rss = parsed(
        r#"<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
           <title>t</title><language>fr-FR</language>
           <item><guid>1</guid><title>a</title><dc:language>br</dc:language></item>
           <item><guid>2</guid><title>b</title></item></channel></rss>"#,
    );
    assert_eq!(rss.language.as_deref(), Some("fr-FR"));
    assert_eq!(rss.items[0].language.as_deref(), Some("br"));
    assert_eq!(rss.items[1].language, None);
    let json = parsed(
        r#"{"version": "https://jsonfeed.org/version/1.1", "title": "t", "language": "zh-CN",
            "items": [{"id": "1", "content_text": "x", "language": "en"}, {"id": "2", "content_text": "y"}]}"#,
    );
    assert_eq!(json.language.as_deref(), Some("zh-CN"));
    assert_eq!(json.items[0].language.as_deref(), Some("en"));
    assert_eq!(json.items[1].language, None);
}
