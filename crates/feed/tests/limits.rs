//! Resource bounds: a 20 MB feed is parsed with memory a small multiple of its size, and
//! hostile documents (billion laughs, deep nesting, huge entity counts) finish quickly with
//! bounded memory. A counting allocator measures the peak of live allocations of the thread
//! that measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use tidings_feed::{ParseOptions, Sanitizer, parse};

use crate::cpu::CpuStopwatch;

struct PeakCounting;

thread_local! {
    /// While this thread measures: the bytes it allocated and has not freed since the start
    /// (negative when it frees older ones), and the highest that reached. Per thread, because
    /// the crate's other tests run in the same process and allocate at the same time.
    static MEASURED: Cell<Option<(isize, isize)>> = const { Cell::new(None) };
}

/// The heavy tests run one at a time, so they do not crowd each other's memory.
static MEASURING: Mutex<()> = Mutex::new(());

/// Adds `delta` bytes to this thread's count when it measures.
fn count(delta: isize) {
    // `try_with`: an allocation while the thread's locals are torn down is simply not counted.
    let _ = MEASURED.try_with(|measured| {
        if let Some((live, peak)) = measured.get() {
            let live = live + delta;
            measured.set(Some((live, peak.max(live))));
        }
    });
}

unsafe impl GlobalAlloc for PeakCounting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: PeakCounting = PeakCounting;

/// Runs `work` and returns the peak of memory this thread allocated during it, above what was
/// live before.
fn peak_during<T>(work: impl FnOnce() -> T) -> (T, usize) {
    MEASURED.with(|measured| measured.set(Some((0, 0))));
    let result = work();
    let peak = MEASURED
        .with(|measured| measured.take())
        .map_or(0, |(_, peak)| peak);
    (result, peak.max(0) as usize)
}

fn big_rss(target: usize) -> Vec<u8> {
    let mut xml =
        String::from("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Big</title>\n");
    let mut n = 0;
    while xml.len() < target {
        let _ = writeln!(
            xml,
            "<item><title>Item {n}</title><link>https://big.example/{n}</link><pubDate>Tue, 05 Mar 2024 10:00:00 GMT</pubDate>\
             <description>&lt;p&gt;Some &lt;b&gt;HTML&lt;/b&gt; body text for item {n}, long enough to matter in size.&lt;/p&gt;</description></item>"
        );
        n += 1;
    }
    xml.push_str("</channel></rss>");
    xml.into_bytes()
}

#[test]
fn twenty_megabytes_parse_with_bounded_memory() {
    let _guard = MEASURING.lock();
    let bytes = big_rss(20 * 1024 * 1024);
    let (feed, peak) = peak_during(|| parse(&bytes, &ParseOptions::default()));
    let feed = feed.expect("20 MB feed parses");
    assert!(feed.items.len() > 50_000, "{} items", feed.items.len());
    eprintln!(
        "20 MB feed: {} items, peak {peak} bytes ({:.1}x the input)",
        feed.items.len(),
        peak as f64 / bytes.len() as f64
    );
    // Measured: about 12x (the tree and the items coexist while items are extracted). The
    // fetcher caps bodies at 5 MB, so a worker holds about 60 MB per parse at most.
    assert!(
        peak < bytes.len() * 16,
        "peak {peak} bytes for {} bytes of input",
        bytes.len()
    );
}

#[test]
fn larger_than_the_limit_is_refused_before_any_work() {
    let _guard = MEASURING.lock();
    let bytes = big_rss(1024 * 1024);
    let options = ParseOptions {
        max_input_bytes: 512 * 1024,
        ..ParseOptions::default()
    };
    let (result, peak) = peak_during(|| parse(&bytes, &options));
    assert!(result.is_err());
    assert!(peak < 4096, "refusing allocated {peak} bytes");
}

#[test]
fn billion_laughs_is_fast_and_small() {
    let _guard = MEASURING.lock();
    let mut doc = String::from("<?xml version=\"1.0\"?><!DOCTYPE rss [<!ENTITY a \"aaaaaaaaaa\">");
    let mut previous = 'a';
    for name in 'b'..='p' {
        let _ = write!(
            doc,
            "<!ENTITY {name} \"{}\">",
            format!("&{previous};").repeat(10)
        );
        previous = name;
    }
    doc.push_str("]><rss><channel><title>&p;</title><item><title>&p;&p;&p;</title><description>");
    doc.push_str(&"&p;".repeat(10_000));
    doc.push_str("</description></item></channel></rss>");
    let started = CpuStopwatch::start();
    let (feed, peak) = peak_during(|| parse(doc.as_bytes(), &ParseOptions::default()));
    let mut feed = feed.expect("parsed, entities left unexpanded");
    feed.sanitize_html(&Sanitizer::default());
    let spent = started.elapsed();
    assert!(spent < Duration::from_secs(5), "{spent:?} of CPU");
    assert!(peak < 2 * 1024 * 1024, "peak {peak}");
    assert_eq!(feed.title.as_deref(), Some("&p;"));
}

#[test]
fn deep_nesting_and_many_elements_do_not_overflow() {
    let _guard = MEASURING.lock();
    let depth = 200_000;
    let doc = format!(
        "<rss><channel><item><description>{}x{}</description></item></channel></rss>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let mut feed = parse(doc.as_bytes(), &ParseOptions::default()).expect("parsed");
    feed.sanitize_html(&Sanitizer::default());
    let html = format!("{}x", "<b><i>".repeat(100_000));
    let out = Sanitizer::default().clean(&html, None);
    assert!(out.contains('x'));
}

/// The least CPU time of three runs, so that a moment of load on a shared machine (caches,
/// frequency) does not decide.
fn fastest_of_three(work: impl Fn()) -> Duration {
    (0..3)
        .map(|_| {
            let started = CpuStopwatch::start();
            work();
            started.elapsed()
        })
        .min()
        .unwrap_or_default()
}

#[test]
fn deep_nesting_sanitizes_in_time_linear_in_its_size() {
    let _guard = MEASURING.lock();
    let sanitizer = Sanitizer::default();
    let n = 20_000;
    let nested = format!("{}x{}", "<div>".repeat(n), "</div>".repeat(n));
    let side_by_side = "<div>x</div>".repeat(n);
    // The same tags nested and side by side: before the depth bound the nested case took
    // about 1,000 times as long (43 s for 100,000 levels); now about 5 times (these 20,000
    // levels, a debug build). The bound is far from both: at 5 times plus a little it failed
    // a CI run under load (nested 320 ms against 52 ms side by side; 250 against 48 ms alone).
    let nested_time = fastest_of_three(|| {
        assert_eq!(sanitizer.clean(&nested, None), "x");
    });
    let side_time = fastest_of_three(|| {
        assert_eq!(sanitizer.clean(&side_by_side, None).len(), n);
    });
    eprintln!("{n} divs: nested {nested_time:?}, side by side {side_time:?}");
    assert!(
        nested_time < side_time * 20 + Duration::from_millis(50),
        "nested {nested_time:?} against side by side {side_time:?}"
    );
    // What reaches the tree builder is never deeper than the bound, whatever the input.
    for depth in [1_000, 50_000, 100_000] {
        let html = format!(
            "{}<p>deep</p>{}",
            "<section><b>".repeat(depth),
            "</b></section>".repeat(depth)
        );
        let flat = tidings_feed::sanitize::flatten_deep_nesting(
            &html,
            tidings_feed::sanitize::MAX_NESTING_DEPTH,
        );
        let mut open = 0usize;
        let mut deepest = 0usize;
        for (i, _) in flat.match_indices('<') {
            if flat[i + 1..].starts_with('/') {
                open = open.saturating_sub(1);
            } else {
                open += 1;
                deepest = deepest.max(open);
            }
        }
        assert!(
            deepest <= tidings_feed::sanitize::MAX_NESTING_DEPTH,
            "{depth}: {deepest}"
        );
        assert!(flat.contains("<p>deep</p>") || flat.contains("deep"));
    }
}

/// The hostile seeds kept for the fuzz targets (`fuzz/seeds/`) pass the targets' checks here
/// too: quickly, and the sanitizer's output is a fixed point.
#[test]
fn fuzz_seeds_sanitize_quickly_to_a_fixed_point() {
    let _guard = MEASURING.lock();
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let mut seen = 0;
    for target in ["sanitize", "parse"] {
        for entry in std::fs::read_dir(seeds.join(target)).expect("fuzz/seeds") {
            let path = entry.expect("seed").path();
            let bytes = std::fs::read(&path).expect("seed bytes");
            let Some((_, input)) = bytes.split_first() else {
                continue;
            };
            let sanitizer = Sanitizer::default();
            let started = CpuStopwatch::start();
            if target == "sanitize" {
                let html = String::from_utf8_lossy(input);
                let once = sanitizer.clean(&html, None);
                assert_eq!(sanitizer.clean(&once, None), once, "{}", path.display());
            } else {
                let mut feed = parse(input, &ParseOptions::default()).expect("seed parses");
                feed.sanitize_html(&sanitizer);
                let content = feed.items[0].content.clone().unwrap_or_default();
                assert!(content.contains("deep"), "{}", path.display());
                assert_eq!(sanitizer.clean(&content, None), content);
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{}: {:?}",
                path.display(),
                started.elapsed()
            );
            seen += 1;
        }
    }
    assert!(seen >= 3, "the seeds are there");
}
