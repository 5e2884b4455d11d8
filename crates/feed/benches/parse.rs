//! Parse + sanitize throughput on generated 5 MB feeds, against the floor of a bare quick-xml
//! event pass over the same bytes (serde_json into a `Value` for JSON Feed).
//!
//! Also the sanitizer on 50,000 / 100,000 nested `<div>`s against the same side by side.
//!
//! Run: `cargo bench -p tidings-feed --bench parse` (`-- sanitize_nesting` for the nesting
//! cases alone). Figures are in BENCHMARKS.md.

use std::fmt::Write;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use quick_xml::Reader;
use quick_xml::events::Event;
use tidings_feed::{ParseOptions, Sanitizer, parse};
use url::Url;

const TARGET_BYTES: usize = 5 * 1024 * 1024;

/// An article body like a blog's: paragraphs, links (relative and absolute), images, a list,
/// and some markup the sanitizer has to remove.
fn article(n: usize) -> String {
    let mut html = String::new();
    for p in 0..5 {
        let _ = write!(
            html,
            "<p class=\"para\" style=\"color:red\">Paragraph {p} of article {n}: readers want the <a href=\"/posts/{n}/related-{p}\">related post</a> \
             and <a href=\"https://other.example.org/{n}/{p}\" onclick=\"track()\">an external link</a>, with <strong>strong</strong> and <em>emphasis</em> \
             words, enough text to look like prose written by a person who has something to say about feeds, readers and the web.</p>"
        );
    }
    let _ = write!(
        html,
        "<figure><img src=\"https://img.example.com/{n}.jpg\" alt=\"Picture {n}\" width=\"640\" height=\"480\" onerror=\"x()\">\
         <figcaption>Caption {n}</figcaption></figure><ul><li>one</li><li>two</li><li>three</li></ul>\
         <script>alert({n})</script><iframe src=\"https://ads.example/{n}\"></iframe>"
    );
    html
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn rss_feed() -> (String, usize) {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><channel><title>Bench</title><link>https://bench.example/</link>\
         <description>Benchmark feed</description>\n",
    );
    let mut n = 0;
    while xml.len() < TARGET_BYTES {
        let body = article(n);
        let _ = writeln!(
            xml,
            "<item><title>Article {n} &amp; more</title><link>https://bench.example/posts/{n}</link>\
             <guid isPermaLink=\"true\">https://bench.example/posts/{n}</guid>\
             <pubDate>Tue, 05 Mar 2024 10:{:02}:00 +0900</pubDate><dc:creator>Author {}</dc:creator><category>cat{}</category>\
             <description>{}</description><content:encoded><![CDATA[{body}]]></content:encoded></item>",
            n % 60,
            n % 7,
            n % 13,
            escape("<p>A short summary of the article with a <a href=\"/x\">link</a>.</p>"),
        );
        n += 1;
    }
    xml.push_str("</channel></rss>\n");
    (xml, n)
}

fn atom_feed() -> (String, usize) {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>Bench</title>\
         <link href=\"https://bench.example/\"/><updated>2024-03-05T10:00:00Z</updated><id>urn:bench</id>\n",
    );
    let mut n = 0;
    while xml.len() < TARGET_BYTES {
        let _ = writeln!(
            xml,
            "<entry><title>Article {n}</title><link rel=\"alternate\" type=\"text/html\" href=\"https://bench.example/posts/{n}\"/>\
             <id>tag:bench.example,2024:{n}</id><published>2024-03-05T10:{:02}:00+09:00</published><updated>2024-03-05T10:{:02}:00Z</updated>\
             <author><name>Author {}</name></author><category term=\"cat{}\"/>\
             <summary type=\"text\">A short summary of article {n}.</summary><content type=\"html\">{}</content></entry>",
            n % 60,
            n % 60,
            n % 7,
            n % 13,
            escape(&article(n)),
        );
        n += 1;
    }
    xml.push_str("</feed>\n");
    (xml, n)
}

fn json_feed() -> (String, usize) {
    let mut items = Vec::new();
    let mut size = 0;
    let mut n = 0;
    while size < TARGET_BYTES {
        let item = serde_json::json!({
            "id": format!("https://bench.example/posts/{n}"),
            "url": format!("https://bench.example/posts/{n}"),
            "title": format!("Article {n}"),
            "content_html": article(n),
            "summary": "A short summary.",
            "date_published": "2024-03-05T10:00:00+09:00",
            "authors": [{"name": format!("Author {}", n % 7)}],
            "tags": [format!("cat{}", n % 13)],
        });
        size += item.to_string().len();
        items.push(item);
        n += 1;
    }
    let feed = serde_json::json!({
        "version": "https://jsonfeed.org/version/1.1",
        "title": "Bench",
        "home_page_url": "https://bench.example/",
        "items": items,
    });
    (feed.to_string(), n)
}

/// The floor: every event of the document read, nothing built.
fn quick_xml_pass(xml: &str) -> usize {
    let mut reader = Reader::from_str(xml);
    let mut events = 0;
    loop {
        match reader.read_event() {
            Ok(Event::Eof) | Err(_) => break,
            Ok(event) => {
                black_box(&event);
                events += 1;
            }
        }
    }
    events
}

fn bench(c: &mut Criterion) {
    let options = ParseOptions {
        feed_url: Url::parse("https://bench.example/feed").ok(),
        ..ParseOptions::default()
    };
    let sanitizer = Sanitizer::default();
    for (name, (text, items)) in [
        ("rss2", rss_feed()),
        ("atom", atom_feed()),
        ("jsonfeed", json_feed()),
    ] {
        eprintln!("{name}: {} bytes, {items} items", text.len());
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(2));
        group.measurement_time(Duration::from_secs(8));
        if name == "jsonfeed" {
            group.bench_function("floor: serde_json Value", |b| {
                b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(&text).is_ok()))
            });
        } else {
            group.bench_function("floor: quick-xml events", |b| {
                b.iter(|| black_box(quick_xml_pass(&text)))
            });
        }
        group.bench_function("parse", |b| {
            b.iter(|| black_box(parse(text.as_bytes(), &options).map(|f| f.items.len())))
        });
        group.bench_function("parse+sanitize", |b| {
            b.iter(|| {
                let mut feed = parse(text.as_bytes(), &options).expect("bench feed parses");
                feed.sanitize_html(&sanitizer);
                black_box(feed.items.len())
            })
        });
        group.finish();
    }
}

/// The sanitizer on hostile nesting: 50,000 and 100,000 nested `<div>`s against the same
/// number side by side. Time must grow linearly (issue 10: 43 s for 100,000 before the depth
/// bound).
fn bench_deep_nesting(c: &mut Criterion) {
    let sanitizer = Sanitizer::default();
    let mut group = c.benchmark_group("sanitize_nesting");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    for n in [50_000usize, 100_000] {
        let nested = format!("{}x{}", "<div>".repeat(n), "</div>".repeat(n));
        let side_by_side = "<div>x</div>".repeat(n);
        for (name, html) in [("nested", nested), ("side by side", side_by_side)] {
            group.throughput(Throughput::Bytes(html.len() as u64));
            group.bench_function(format!("{n} divs {name}"), |b| {
                b.iter(|| black_box(sanitizer.clean(&html, None).len()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench, bench_deep_nesting);
criterion_main!(benches);
