//! `tidings-bench parse`: parse and sanitize throughput over a folder of feed files, with a
//! generated folder that looks like the feeds a reader meets.
//!
//! Every file is read into memory first (reading is not timed); then each phase runs over all
//! of them in rounds until it has run for the time asked (at least three rounds), and the
//! median round gives MB/s (10^6 bytes of feed documents a second) and items/s. The phases are
//! what the worker does with a body that changed: `parse` alone, then `parse+sanitize`
//! (every item's summary and content through the HTML sanitizer, as the worker stores them).
//! Last, what keeping the files as raw bodies costs: their size with the worker's codec.
//!
//! `--generate` first writes the mix: WordPress and Substack RSS with CDATA and entities,
//! Atom blogs with escaped HTML content, podcasts with iTunes tags, YouTube channels with
//! `media:group`, Japanese blogs (RSS 2.0 and RSS 1.0), news feeds with short escaped
//! descriptions and JSON Feed, from 5 to 500 items each, deterministic from run to run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use tidings::output::outln;
use tidings_feed::{ParseOptions, SanitizeOptions, Sanitizer};
use url::Url;

use crate::search::{Language, Rng, sentence};

/// Arguments of `tidings-bench parse`.
#[derive(Debug, Args)]
pub struct ParseBenchArgs {
    /// The folder of feed files: every file directly in it is parsed (RSS, Atom or JSON Feed).
    pub dir: PathBuf,
    /// First write the generated mix of realistic feeds into DIR (created when missing; files
    /// of the same names are replaced, others left alone).
    #[arg(long)]
    pub generate: bool,
    /// How long each phase is measured, in seconds (at least three rounds are run).
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
}

/// Runs `tidings-bench parse`.
pub fn run(args: &ParseBenchArgs) -> anyhow::Result<ExitCode> {
    if args.generate {
        std::fs::create_dir_all(&args.dir)
            .with_context(|| format!("{} could not be created", args.dir.display()))?;
        for (name, bytes) in generated_feeds() {
            let path = args.dir.join(&name);
            std::fs::write(&path, bytes)
                .with_context(|| format!("{} could not be written", path.display()))?;
        }
    }
    let files = read_feeds(&args.dir)?;
    let options_of = |name: &str| ParseOptions {
        feed_url: Url::parse(&format!("https://feeds.example/{name}")).ok(),
        ..ParseOptions::default()
    };
    let mut feeds = Vec::new();
    let mut items = 0usize;
    for (name, bytes) in files {
        let options = options_of(&name);
        match tidings_feed::parse(&bytes, &options) {
            Ok(feed) => {
                items += feed.items.len();
                feeds.push((bytes, options));
            }
            Err(error) => outln!("skipped {name}: {error}"),
        }
    }
    if feeds.is_empty() {
        eprintln!(
            "tidings-bench: {} holds no feed to parse (give a folder of RSS, Atom or JSON Feed files, or add --generate)",
            args.dir.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    let bytes: usize = feeds.iter().map(|(b, _)| b.len()).sum();
    outln!(
        "tidings-bench parse: {} feeds, {:.2} MB, {items} items in {}",
        feeds.len(),
        bytes as f64 / 1e6,
        args.dir.display()
    );
    let budget = Duration::from_secs(args.seconds.max(1));
    let sanitizer = Sanitizer::new(SanitizeOptions::default());
    let parse_only = measure(budget, || {
        for (bytes, options) in &feeds {
            let feed = tidings_feed::parse(bytes, options);
            std::hint::black_box(feed.map(|f| f.items.len()).ok());
        }
    });
    report("parse", &parse_only, bytes, items)?;
    let parse_and_sanitize = measure(budget, || {
        for (bytes, options) in &feeds {
            if let Ok(mut feed) = tidings_feed::parse(bytes, options) {
                feed.sanitize_html(&sanitizer);
                std::hint::black_box(feed.items.len());
            }
        }
    });
    report("parse+sanitize", &parse_and_sanitize, bytes, items)?;
    // What keeping these as raw bodies costs (F8): the worker's codec, once over every file.
    let started = Instant::now();
    let compressed: usize = feeds
        .iter()
        .map(|(bytes, _)| tidings_worker::body::compress(bytes).len())
        .sum();
    let took = started.elapsed();
    outln!(
        "raw bodies ({}): {:.2} MB kept for {:.2} MB ({:.1} %), {:.1} KB per feed, \
         compressed in {:.1} ms per MB",
        tidings_worker::body::CODEC,
        compressed as f64 / 1e6,
        bytes as f64 / 1e6,
        100.0 * compressed as f64 / bytes.max(1) as f64,
        compressed as f64 / 1e3 / feeds.len() as f64,
        took.as_secs_f64() * 1e3 / (bytes as f64 / 1e6).max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}

/// The rounds of one phase, sorted: wall-clock times, and the thread's CPU times when the
/// system tells them.
struct Rounds {
    wall: Vec<Duration>,
    cpu: Option<Vec<Duration>>,
}

/// Runs `round` until `budget` is spent (at least three times).
fn measure(budget: Duration, mut round: impl FnMut()) -> Rounds {
    let started = Instant::now();
    let mut wall = Vec::new();
    let mut cpu = Some(Vec::new());
    while wall.len() < 3 || started.elapsed() < budget {
        let (start, cpu_start) = (Instant::now(), thread_cpu_time());
        round();
        wall.push(start.elapsed());
        cpu = match (cpu, cpu_start, thread_cpu_time()) {
            (Some(mut times), Some(from), Some(to)) => {
                times.push(to.saturating_sub(from));
                Some(times)
            }
            _ => None,
        };
    }
    wall.sort();
    if let Some(times) = &mut cpu {
        times.sort();
    }
    Rounds { wall, cpu }
}

/// The CPU time this thread has used (Linux: `/proc/thread-self/schedstat`, in nanoseconds).
/// On a machine busy with other work the wall-clock time includes waiting for a core; the CPU
/// time does not, so it is the steadier figure there.
pub(super) fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

fn report(phase: &str, rounds: &Rounds, bytes: usize, items: usize) -> anyhow::Result<()> {
    let median = |times: &[Duration]| times[times.len() / 2].as_secs_f64();
    let wall = median(&rounds.wall);
    let cpu = rounds.cpu.as_deref().map(median);
    outln!(
        "{:<16}{:>7.1} MB/s {:>8.0} items/s   (median of {} rounds: {:.1} ms){}",
        format!("{phase}:"),
        bytes as f64 / 1e6 / wall,
        items as f64 / wall,
        rounds.wall.len(),
        wall * 1e3,
        cpu.map(|cpu| format!(
            "; by CPU time {:.1} MB/s, {:.0} items/s",
            bytes as f64 / 1e6 / cpu,
            items as f64 / cpu
        ))
        .unwrap_or_default(),
    );
    Ok(())
}

/// The files directly in `dir`, by name.
fn read_feeds(dir: &Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("{} could not be read", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{} could not be listed", dir.display()))?;
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path)
            .with_context(|| format!("{} could not be read", path.display()))?;
        files.push((entry.file_name().to_string_lossy().into_owned(), bytes));
    }
    files.sort();
    Ok(files)
}

/// The generated mix: file name and bytes of each feed.
pub fn generated_feeds() -> Vec<(String, Vec<u8>)> {
    let mut feeds = Vec::new();
    let mut add = |name: String, text: String| feeds.push((name, text.into_bytes()));
    for (n, items) in [10, 10, 20, 50, 100, 300].into_iter().enumerate() {
        add(format!("wordpress-{n}.xml"), wordpress(n, items));
    }
    for (n, items) in [20, 50].into_iter().enumerate() {
        add(format!("substack-{n}.xml"), substack(n, items));
    }
    for (n, items) in [5, 25, 100, 500].into_iter().enumerate() {
        add(format!("blog-atom-{n}.xml"), atom_blog(n, items));
    }
    for (n, items) in [50, 200, 500].into_iter().enumerate() {
        add(format!("podcast-{n}.xml"), podcast(n, items));
    }
    for n in 0..6 {
        add(format!("youtube-{n}.xml"), youtube(n));
    }
    for (n, items) in [30, 100].into_iter().enumerate() {
        add(format!("hatena-{n}.xml"), japanese_rss(n, items));
    }
    add("japanese-rdf.rdf".into(), japanese_rdf(60));
    for (n, items) in [50, 100, 200].into_iter().enumerate() {
        add(format!("news-{n}.xml"), news(n, items));
    }
    for (n, items) in [20, 100].into_iter().enumerate() {
        add(format!("jsonfeed-{n}.json"), json_feed(n, items));
    }
    feeds
}

fn seeded(feed: &str, n: usize, item: usize) -> Rng {
    let tag = feed
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
    Rng::new(tag ^ ((n as u64) << 40) ^ item as u64)
}

/// A title: a short sentence, sometimes with the entities and quotes blogs put in titles.
fn title(language: Language, rng: &mut Rng) -> String {
    let mut text = sentence(language, 4 + rng.below(6), rng);
    text.pop();
    if matches!(language, Language::Japanese) {
        text.pop();
    }
    match rng.below(6) {
        0 => format!("&#8220;{text}&#8221;"),
        1 => format!("{text} &amp; more"),
        2 => format!("{text}&#8217;s notes"),
        _ => text,
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A published time `item` days before a fixed date, in RFC 822 or RFC 3339.
fn date(item: usize, rfc822: bool) -> String {
    let base = chrono::DateTime::from_timestamp(1_764_000_000, 0).unwrap_or_default();
    let at = base - chrono::Duration::hours(item as i64 * 19 + 7);
    if rfc822 {
        at.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
    } else {
        at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
    }
}

/// A blog article as HTML: paragraphs with inline markup and links, headings, lists, quotes,
/// code, figures (mostly https images, some http ones), embeds the sanitizer removes
/// (iframes, scripts), class and style attributes, and HTML entities.
fn article(
    language: Language,
    site: &str,
    rng: &mut Rng,
    paragraphs: std::ops::Range<usize>,
) -> String {
    let mut html = String::new();
    let paragraphs = paragraphs.start + rng.below(paragraphs.len());
    for p in 0..paragraphs {
        match rng.below(14) {
            0 => {
                let _ = writeln!(html, "<h2 id=\"s{p}\">{}</h2>", {
                    let mut h = sentence(language, 3 + rng.below(3), rng);
                    h.pop();
                    h
                });
            }
            1 => {
                html.push_str("<ul>\n");
                for _ in 0..2 + rng.below(4) {
                    let _ = writeln!(
                        html,
                        "<li>{}</li>",
                        sentence(language, 5 + rng.below(8), rng)
                    );
                }
                html.push_str("</ul>\n");
            }
            2 => {
                let _ = writeln!(
                    html,
                    "<blockquote class=\"wp-block-quote\"><p>{}</p><cite>{}</cite></blockquote>",
                    sentence(language, 12 + rng.below(12), rng),
                    sentence(language, 2, rng)
                );
            }
            3 => {
                let _ = writeln!(
                    html,
                    "<pre class=\"wp-block-code\"><code>fn main() {{\n    let v = vec![1, 2, 3];\n    if v.len() &lt; 4 &amp;&amp; v[0] &gt; 0 {{\n        println!(\"{{:?}}\", v);\n    }}\n}}</code></pre>"
                );
            }
            4 | 5 => {
                let scheme = if rng.below(5) == 0 { "http" } else { "https" };
                let id = rng.next() % 100_000;
                let _ = writeln!(
                    html,
                    "<figure class=\"wp-block-image size-large\"><img loading=\"lazy\" decoding=\"async\" width=\"1024\" height=\"576\" \
                     src=\"{scheme}://{site}/wp-content/uploads/2025/11/photo-{id}-1024x576.jpg\" alt=\"\" class=\"wp-image-{id}\" \
                     srcset=\"{scheme}://{site}/wp-content/uploads/2025/11/photo-{id}-1024x576.jpg 1024w, {scheme}://{site}/wp-content/uploads/2025/11/photo-{id}-300x169.jpg 300w\" \
                     sizes=\"(max-width: 1024px) 100vw, 1024px\" /><figcaption class=\"wp-element-caption\">{}</figcaption></figure>",
                    sentence(language, 4 + rng.below(6), rng)
                );
            }
            6 if rng.below(3) == 0 => {
                let _ = writeln!(
                    html,
                    "<figure class=\"wp-block-embed is-type-video\"><div class=\"wp-block-embed__wrapper\">\
                     <iframe title=\"video\" width=\"500\" height=\"281\" src=\"https://www.youtube.com/embed/{:x}?feature=oembed\" frameborder=\"0\" allowfullscreen></iframe>\
                     </div></figure>",
                    rng.next() % 0xFFFF_FFFF
                );
            }
            7 if rng.below(3) == 0 => {
                let _ = writeln!(
                    html,
                    "<blockquote class=\"twitter-tweet\"><p lang=\"en\" dir=\"ltr\">{}</p>&mdash; Someone (@someone) <a href=\"https://twitter.com/someone/status/{}\">November 1, 2025</a></blockquote>\
                     <script async src=\"https://platform.twitter.com/widgets.js\" charset=\"utf-8\"></script>",
                    sentence(language, 10, rng),
                    rng.next() % 10_000_000_000
                );
            }
            _ => {
                html.push_str("<p>");
                for s in 0..1 + rng.below(4) {
                    if s > 0 && language != Language::Japanese {
                        html.push(' ');
                    }
                    let text = sentence(language, 8 + rng.below(18), rng);
                    match rng.below(8) {
                        0 => {
                            let _ = write!(
                                html,
                                "<a href=\"/{}/{}/\">{text}</a>",
                                2025 - rng.below(3),
                                rng.next() % 1000
                            );
                        }
                        1 => {
                            let _ = write!(
                                html,
                                "<a href=\"https://other{}.example.org/post?id={}&amp;ref=feed\" rel=\"nofollow\">{text}</a>",
                                rng.below(50),
                                rng.next() % 10_000
                            );
                        }
                        2 => {
                            let _ = write!(html, "<strong>{text}</strong>");
                        }
                        3 => {
                            let _ = write!(html, "<em>{text}</em>&nbsp;&#8212;");
                        }
                        4 => {
                            let _ = write!(html, "<span style=\"font-weight: 400;\">{text}</span>");
                        }
                        5 => {
                            let _ = write!(html, "{text} <code>cargo build</code>&hellip;");
                        }
                        _ => html.push_str(&text),
                    }
                }
                html.push_str("</p>\n");
            }
        }
    }
    html
}

fn english_or_german(rng: &mut Rng) -> Language {
    match rng.below(10) {
        0 => Language::German,
        1 => Language::French,
        _ => Language::English,
    }
}

fn wordpress(n: usize, items: usize) -> String {
    let site = format!("wp{n}.example.com");
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"\n\txmlns:content=\"http://purl.org/rss/1.0/modules/content/\"\n\
         \txmlns:wfw=\"http://wellformedweb.org/CommentAPI/\"\n\txmlns:dc=\"http://purl.org/dc/elements/1.1/\"\n\
         \txmlns:atom=\"http://www.w3.org/2005/Atom\"\n\txmlns:sy=\"http://purl.org/rss/1.0/modules/syndication/\"\n\
         \txmlns:slash=\"http://purl.org/rss/1.0/modules/slash/\">\n<channel>\n\t<title>Blog {n} &#8211; Notes</title>\n\
         \t<atom:link href=\"https://{site}/feed/\" rel=\"self\" type=\"application/rss+xml\" />\n\t<link>https://{site}</link>\n\
         \t<description>Thoughts and notes</description>\n\t<lastBuildDate>{}</lastBuildDate>\n\t<language>en-US</language>\n\
         \t<sy:updatePeriod>hourly</sy:updatePeriod>\n\t<sy:updateFrequency>1</sy:updateFrequency>\n\t<generator>https://wordpress.org/?v=6.8.3</generator>\n",
        date(0, true)
    );
    for item in 0..items {
        let mut rng = seeded("wordpress", n, item);
        let language = english_or_german(&mut rng);
        let slug = item * 7 + 3;
        let body = article(language, &site, &mut rng, 4..18);
        let excerpt = sentence(language, 30 + rng.below(20), &mut rng);
        let _ = write!(
            xml,
            "\t<item>\n\t\t<title>{}</title>\n\t\t<link>https://{site}/2025/11/post-{slug}/</link>\n\
             \t\t<comments>https://{site}/2025/11/post-{slug}/#respond</comments>\n\t\t<dc:creator><![CDATA[{}]]></dc:creator>\n\
             \t\t<pubDate>{}</pubDate>\n\t\t<category><![CDATA[News]]></category>\n\t\t<category><![CDATA[Topic {}]]></category>\n\
             \t\t<guid isPermaLink=\"false\">https://{site}/?p={slug}</guid>\n\
             \t\t<description><![CDATA[<p>{excerpt} [&#8230;]</p>\n<p>The post <a href=\"https://{site}/2025/11/post-{slug}/\">Post {slug}</a> appeared first on <a href=\"https://{site}\">Blog {n}</a>.</p>\n]]></description>\n\
             \t\t<content:encoded><![CDATA[{body}<p>The post <a href=\"https://{site}/2025/11/post-{slug}/\">Post {slug}</a> appeared first on <a href=\"https://{site}\">Blog {n}</a>.</p>\n]]></content:encoded>\n\
             \t\t<wfw:commentRss>https://{site}/2025/11/post-{slug}/feed/</wfw:commentRss>\n\t\t<slash:comments>{}</slash:comments>\n\t</item>\n",
            title(language, &mut rng),
            sentence(language, 2, &mut rng).trim_end_matches('.'),
            date(item, true),
            rng.below(20),
            rng.below(30),
        );
    }
    xml.push_str("</channel>\n</rss>\n");
    xml
}

fn substack(n: usize, items: usize) -> String {
    let site = format!("letter{n}.substack.example");
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" \
         xmlns:atom=\"http://www.w3.org/2005/Atom\" version=\"2.0\"><channel><title><![CDATA[Letter {n}]]></title>\
         <description><![CDATA[A newsletter]]></description><link>https://{site}</link><generator>Substack</generator>\
         <lastBuildDate>{}</lastBuildDate><atom:link href=\"https://{site}/feed\" rel=\"self\" type=\"application/rss+xml\"/>",
        date(0, true)
    );
    for item in 0..items {
        let mut rng = seeded("substack", n, item);
        let mut body = String::new();
        for _ in 0..3 {
            let id = rng.next() % 1_000_000;
            let _ = write!(
                body,
                "<div class=\"captioned-image-container\"><figure><a class=\"image-link image2 is-viewable-img\" target=\"_blank\" \
                 href=\"https://substackcdn.example/image/fetch/f_auto,q_auto:good/{id}.png\" data-component-name=\"Image2ToDOM\">\
                 <div class=\"image2-inset\"><picture><source type=\"image/webp\" srcset=\"https://substackcdn.example/image/fetch/w_424,c_limit,f_webp/{id}.png 424w, \
                 https://substackcdn.example/image/fetch/w_848,c_limit,f_webp/{id}.png 848w\" sizes=\"100vw\"><img src=\"https://substackcdn.example/image/fetch/w_1456/{id}.png\" \
                 width=\"1456\" height=\"816\" data-attrs=\"{{&quot;src&quot;:&quot;https://substack-post-media/{id}.png&quot;,&quot;height&quot;:816}}\" \
                 class=\"sizing-normal\" alt=\"\" loading=\"lazy\"></picture><div class=\"image-link-expand\"></div></div></a></figure></div>"
            );
            body.push_str(&article(Language::English, &site, &mut rng, 4..10));
        }
        let _ = write!(
            xml,
            "<item><title><![CDATA[{}]]></title><description><![CDATA[{}]]></description><link>https://{site}/p/post-{item}</link>\
             <guid isPermaLink=\"false\">https://{site}/p/post-{item}</guid><dc:creator><![CDATA[Writer {n}]]></dc:creator>\
             <pubDate>{}</pubDate><enclosure url=\"https://substack-post-media.example/{item}.jpeg\" length=\"0\" type=\"image/jpeg\"/>\
             <content:encoded><![CDATA[{body}]]></content:encoded></item>",
            title(Language::English, &mut rng).replace("&#", "#"),
            sentence(Language::English, 15, &mut rng),
            date(item, true),
        );
    }
    xml.push_str("</channel></rss>");
    xml
}

fn atom_blog(n: usize, items: usize) -> String {
    let site = format!("blog{n}.example.net");
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"en\">\n\
         <title type=\"text\">Engineering blog {n}</title>\n<subtitle>Posts about software</subtitle>\n\
         <link href=\"https://{site}/atom.xml\" rel=\"self\"/>\n<link href=\"https://{site}/\"/>\n<updated>{}</updated>\n\
         <id>https://{site}/</id>\n<author><name>Team {n}</name></author>\n<generator uri=\"https://jekyllrb.com/\">Jekyll</generator>\n",
        date(0, false)
    );
    for item in 0..items {
        let mut rng = seeded("atom", n, item);
        let language = english_or_german(&mut rng);
        let body = article(language, &site, &mut rng, 5..25);
        let _ = write!(
            xml,
            "<entry>\n<title type=\"html\">{}</title>\n<link href=\"https://{site}/posts/{item}/\" rel=\"alternate\" type=\"text/html\"/>\n\
             <published>{}</published>\n<updated>{}</updated>\n<id>https://{site}/posts/{item}</id>\n\
             <content type=\"html\" xml:base=\"https://{site}/posts/{item}/\">{}</content>\n\
             <author><name>{}</name></author>\n<category term=\"rust\"/><category term=\"web\"/>\n\
             <summary type=\"html\">{}</summary>\n</entry>\n",
            escape(&title(language, &mut rng)),
            date(item, false),
            date(item, false),
            escape(&body),
            sentence(language, 2, &mut rng).trim_end_matches('.'),
            escape(&sentence(language, 25, &mut rng)),
        );
    }
    xml.push_str("</feed>\n");
    xml
}

fn podcast(n: usize, items: usize) -> String {
    let site = format!("pod{n}.example.fm");
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" xmlns:itunes=\"http://www.itunes.com/dtds/podcast-1.0.dtd\" \
         xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" xmlns:atom=\"http://www.w3.org/2005/Atom\" xmlns:podcast=\"https://podcastindex.org/namespace/1.0\">\n\
         <channel>\n<title>The Show {n}</title>\n<link>https://{site}</link>\n<language>en</language>\n<copyright>&#169; 2025 Show {n}</copyright>\n\
         <itunes:author>Host {n}</itunes:author>\n<description>A show about things.</description>\n\
         <itunes:image href=\"https://{site}/artwork.jpg\"/>\n<itunes:category text=\"Technology\"/>\n<itunes:explicit>false</itunes:explicit>\n"
    );
    for item in 0..items {
        let mut rng = seeded("podcast", n, item);
        let mut notes = String::new();
        let _ = write!(
            notes,
            "<p>{}</p><p>Links:</p><ul>",
            sentence(Language::English, 30 + rng.below(30), &mut rng)
        );
        for l in 0..3 + rng.below(6) {
            let _ = write!(
                notes,
                "<li><a href=\"https://link{l}.example.com/{}\">{}</a></li>",
                rng.next() % 1000,
                sentence(Language::English, 4, &mut rng)
            );
        }
        notes.push_str("</ul><p>Support the show: <a href=\"https://patreon.example/show\">patreon.example/show</a></p>");
        let plain = sentence(Language::English, 30 + rng.below(30), &mut rng);
        let _ = write!(
            xml,
            "<item>\n<title>Episode {item}: {}</title>\n<itunes:title>{}</itunes:title>\n<itunes:episode>{item}</itunes:episode>\n\
             <itunes:episodeType>full</itunes:episodeType>\n<guid isPermaLink=\"false\">{:032x}</guid>\n<link>https://{site}/episodes/{item}</link>\n\
             <description><![CDATA[{notes}]]></description>\n<content:encoded><![CDATA[{notes}]]></content:encoded>\n\
             <itunes:summary>{plain}</itunes:summary>\n<pubDate>{}</pubDate>\n\
             <enclosure url=\"https://cdn.example.fm/{n}/ep{item}.mp3\" length=\"{}\" type=\"audio/mpeg\"/>\n\
             <itunes:duration>{}:{:02}:{:02}</itunes:duration>\n<itunes:image href=\"https://{site}/ep{item}.jpg\"/>\n<itunes:explicit>false</itunes:explicit>\n</item>\n",
            title(Language::English, &mut rng),
            sentence(Language::English, 5, &mut rng).trim_end_matches('.'),
            rng.next(),
            date(item, true),
            20_000_000 + rng.below(60_000_000),
            rng.below(2),
            rng.below(60),
            rng.below(60),
        );
    }
    xml.push_str("</channel>\n</rss>\n");
    xml
}

fn youtube(n: usize) -> String {
    let channel = format!("UC{:022x}", n * 7919 + 1);
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns:yt=\"http://www.youtube.com/xml/schemas/2015\" xmlns:media=\"http://search.yahoo.com/mrss/\" xmlns=\"http://www.w3.org/2005/Atom\">\n\
         <link rel=\"self\" href=\"http://www.youtube.com/feeds/videos.xml?channel_id={channel}\"/>\n <id>yt:channel:{channel}</id>\n\
         <yt:channelId>{channel}</yt:channelId>\n <title>Channel {n}</title>\n <link rel=\"alternate\" href=\"https://www.youtube.com/channel/{channel}\"/>\n\
         <author>\n  <name>Channel {n}</name>\n  <uri>https://www.youtube.com/channel/{channel}</uri>\n </author>\n <published>2015-01-01T00:00:00+00:00</published>\n"
    );
    for item in 0..15 {
        let mut rng = seeded("youtube", n, item);
        let video: String = (0..11)
            .map(|_| {
                let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
                char::from(alphabet[rng.below(alphabet.len())])
            })
            .collect();
        let language = if n % 3 == 2 {
            Language::Japanese
        } else {
            Language::English
        };
        let video_title = title(language, &mut rng).replace("&#", "#");
        let mut description = String::new();
        for _ in 0..2 + rng.below(5) {
            description.push_str(&sentence(language, 10 + rng.below(20), &mut rng));
            description.push_str("\n\n");
        }
        description.push_str("▶ Subscribe: https://www.youtube.com/@channel?sub_confirmation=1\n► Merch: https://merch.example/\n#video #channel");
        let _ = write!(
            xml,
            " <entry>\n  <id>yt:video:{video}</id>\n  <yt:videoId>{video}</yt:videoId>\n  <yt:channelId>{channel}</yt:channelId>\n\
             \x20 <title>{video_title}</title>\n  <link rel=\"alternate\" href=\"https://www.youtube.com/watch?v={video}\"/>\n\
             \x20 <author>\n   <name>Channel {n}</name>\n   <uri>https://www.youtube.com/channel/{channel}</uri>\n  </author>\n\
             \x20 <published>{}</published>\n  <updated>{}</updated>\n  <media:group>\n   <media:title>{video_title}</media:title>\n\
             \x20  <media:content url=\"https://www.youtube.com/v/{video}?version=3\" type=\"application/x-shockwave-flash\" width=\"640\" height=\"390\"/>\n\
             \x20  <media:thumbnail url=\"https://i{}.ytimg.com/vi/{video}/hqdefault.jpg\" width=\"480\" height=\"360\"/>\n\
             \x20  <media:description>{}</media:description>\n   <media:community>\n    <media:starRating count=\"{}\" average=\"5.00\" min=\"1\" max=\"5\"/>\n\
             \x20   <media:statistics views=\"{}\"/>\n   </media:community>\n  </media:group>\n </entry>\n",
            date(item, false),
            date(item, false),
            1 + rng.below(4),
            escape(&description),
            rng.below(10_000),
            rng.below(1_000_000),
        );
    }
    xml.push_str("</feed>\n");
    xml
}

fn japanese_rss(n: usize, items: usize) -> String {
    let site = format!("ja{n}.hatenablog.example");
    let mut xml = format!(
        "<?xml version=\"1.0\"?>\n<rss version=\"2.0\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\">\n  <channel>\n\
         \x20   <title>日記 {n}</title>\n    <link>https://{site}/</link>\n    <description>技術と日常のメモ</description>\n\
         \x20   <lastBuildDate>{}</lastBuildDate>\n    <docs>http://blogs.law.harvard.edu/tech/rss</docs>\n    <generator>Hatena::Blog</generator>\n",
        date(0, true)
    );
    for item in 0..items {
        let mut rng = seeded("hatena", n, item);
        let body = article(Language::Japanese, &site, &mut rng, 4..16);
        let _ = write!(
            xml,
            "    <item>\n      <title>{}</title>\n      <link>https://{site}/entry/2025/11/{item:04}</link>\n\
             \x20     <description>{}</description>\n      <content:encoded>{}</content:encoded>\n\
             \x20     <pubDate>{}</pubDate>\n      <guid isPermaLink=\"false\">hatenablog://entry/{}</guid>\n\
             \x20     <category>プログラミング</category>\n      <enclosure url=\"https://cdn-ak.f.st-hatena.example/images/{item}.png\" type=\"image/png\" length=\"0\" />\n    </item>\n",
            title(Language::Japanese, &mut rng).replace("&#", "#"),
            escape(&sentence(Language::Japanese, 40, &mut rng)),
            escape(&body),
            date(item, true),
            rng.next() % 10_000_000_000_000,
        );
    }
    xml.push_str("  </channel>\n</rss>\n");
    xml
}

fn japanese_rdf(items: usize) -> String {
    let site = "news.example.jp";
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rdf:RDF xmlns=\"http://purl.org/rss/1.0/\" xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" xml:lang=\"ja\">\n",
    );
    let _ = write!(
        xml,
        "<channel rdf:about=\"https://{site}/rss\">\n<title>ニュース</title>\n<link>https://{site}/</link>\n<description>最新ニュース</description>\n<items><rdf:Seq>\n"
    );
    for item in 0..items {
        let _ = writeln!(xml, "<rdf:li rdf:resource=\"https://{site}/a/{item}\"/>");
    }
    xml.push_str("</rdf:Seq></items>\n</channel>\n");
    for item in 0..items {
        let mut rng = seeded("rdf", 0, item);
        let _ = write!(
            xml,
            "<item rdf:about=\"https://{site}/a/{item}\">\n<title>{}</title>\n<link>https://{site}/a/{item}</link>\n\
             <description>{}</description>\n<content:encoded><![CDATA[<p><img src=\"https://img.{site}/{item}.jpg\" alt=\"\"></p><p>{}</p>]]></content:encoded>\n\
             <dc:subject>社会</dc:subject>\n<dc:date>{}</dc:date>\n</item>\n",
            title(Language::Japanese, &mut rng).replace("&#", "#"),
            sentence(Language::Japanese, 30, &mut rng),
            sentence(Language::Japanese, 40, &mut rng),
            date(item, false),
        );
    }
    xml.push_str("</rdf:RDF>\n");
    xml
}

fn news(n: usize, items: usize) -> String {
    let site = format!("news{n}.example.com");
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss xmlns:media=\"http://search.yahoo.com/mrss/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" version=\"2.0\">\n\
         <channel><title>World news {n}</title><link>https://{site}/world</link><description>The latest</description><language>en-gb</language>\
         <copyright>© 2025</copyright><pubDate>{}</pubDate><image><url>https://{site}/logo.png</url><title>News</title><link>https://{site}</link></image>\n",
        date(0, true)
    );
    for item in 0..items {
        let mut rng = seeded("news", n, item);
        let summary = sentence(Language::English, 20 + rng.below(20), &mut rng);
        let description = match rng.below(3) {
            0 => escape(&summary),
            1 => escape(&format!(
                "<img src=\"http://{site}/thumb/{item}.jpg\" align=\"left\" hspace=\"5\"/>{summary}<br clear=\"all\"/>"
            )),
            _ => escape(&format!("<p>{summary}</p>")),
        };
        let _ = writeln!(
            xml,
            "<item><title>{}</title><description>{description}</description><link>https://{site}/world/{item}?at_medium=RSS&amp;at_campaign=rss</link>\
             <guid isPermaLink=\"false\">https://{site}/world/{item}#0</guid><pubDate>{}</pubDate><dc:creator>Reporter {}</dc:creator>\
             <media:thumbnail width=\"240\" height=\"135\" url=\"https://ichef.{site}/240/{item}.jpg\"/>\
             <media:content url=\"https://ichef.{site}/976/{item}.jpg\" medium=\"image\" width=\"976\" height=\"549\"/></item>",
            escape(&title(Language::English, &mut rng).replace("&#", "#")),
            date(item, true),
            rng.below(40),
        );
    }
    xml.push_str("</channel></rss>\n");
    xml
}

fn json_feed(n: usize, items: usize) -> String {
    let site = format!("micro{n}.example.blog");
    let entries: Vec<serde_json::Value> = (0..items)
        .map(|item| {
            let mut rng = seeded("json", n, item);
            let language = english_or_german(&mut rng);
            let long = rng.below(3) == 0;
            let content = if long {
                article(language, &site, &mut rng, 3..13)
            } else {
                format!("<p>{}</p>", sentence(language, 15 + rng.below(30), &mut rng))
            };
            serde_json::json!({
                "id": format!("https://{site}/{item}"),
                "url": format!("https://{site}/2025/11/{item}.html"),
                "title": if long { serde_json::Value::String(title(language, &mut rng)) } else { serde_json::Value::Null },
                "content_html": content,
                "summary": sentence(language, 12, &mut rng),
                "date_published": date(item, false),
                "authors": [{"name": format!("Writer {n}"), "url": format!("https://{site}/")}],
                "tags": ["notes", "web"],
            })
        })
        .collect();
    serde_json::json!({
        "version": "https://jsonfeed.org/version/1.1",
        "title": format!("Micro {n}"),
        "home_page_url": format!("https://{site}/"),
        "feed_url": format!("https://{site}/feed.json"),
        "items": entries,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_feed_parses_with_all_its_items() {
        let feeds = generated_feeds();
        assert_eq!(feeds, generated_feeds(), "deterministic");
        for (name, bytes) in &feeds {
            let feed = tidings_feed::parse(bytes, &ParseOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(feed.warning.is_none(), "{name}: {:?}", feed.warning);
            assert!(feed.items.len() >= 5, "{name}: {} items", feed.items.len());
        }
        let bytes: usize = feeds.iter().map(|(_, b)| b.len()).sum();
        assert!(bytes > 10_000_000, "{bytes} bytes");
    }

    #[test]
    fn sanitizing_the_mix_gives_what_the_full_sanitizer_gives() {
        let sanitizer = Sanitizer::new(SanitizeOptions::default());
        let mut bodies = 0;
        for (name, bytes) in generated_feeds() {
            let options = ParseOptions {
                feed_url: Url::parse(&format!("https://feeds.example/{name}")).ok(),
                ..ParseOptions::default()
            };
            let feed = tidings_feed::parse(&bytes, &options).expect("parses");
            // Every fifth item: the full sanitizer is slow in a debug build.
            for item in feed.items.iter().step_by(5) {
                let base = item.content_base.as_ref();
                for html in [&item.summary, &item.content].into_iter().flatten() {
                    bodies += 1;
                    assert_eq!(
                        sanitizer.clean(html, base),
                        sanitizer.clean_with_ammonia(html, base),
                        "{name}: {html}"
                    );
                }
            }
        }
        assert!(bodies > 500, "{bodies}");
    }
}
