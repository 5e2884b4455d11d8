//! `tidings-bench extract`: full-text extraction (F6) over saved article pages: how fast
//! (ms per page, MB/s) and how well (how much of the article it kept, how much of the
//! navigation, sidebars, comments and footers came with it).
//!
//! A folder holds pages in either of two layouts:
//! - `NAME.html`, with the article's text as it should be in `NAME.article.txt` beside it
//!   (the layout of `crates/extract/testdata`);
//! - `NAME/source.html` with `NAME/expected.html`, the layout of Mozilla readability's
//!   `test/test-pages` (its expected output, whose text is the article).
//!
//! A page without its article is timed but not scored. Every page is read into memory first;
//! then all of them are extracted in rounds until the time asked has passed (at least three
//! rounds), each page timed alone: the median per page and per round by wall clock, and the
//! mean round by the thread's CPU time (which a busy machine does not inflate).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use tidings::output::outln;
use tidings_extract::coverage::{Coverage, coverage, page_text};
use tidings_feed::Sanitizer;
use url::Url;

use crate::parse::thread_cpu_time;

/// Arguments of `tidings-bench extract`.
#[derive(Debug, Args)]
pub struct ExtractBenchArgs {
    /// The folder of pages: `NAME.html` (+ `NAME.article.txt`) files, or `NAME/source.html`
    /// (+ `NAME/expected.html`) folders. E.g. `crates/extract/testdata`.
    pub dir: PathBuf,
    /// How long to measure, in seconds (at least three rounds are run).
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
}

/// One saved page.
struct Page {
    name: String,
    bytes: Vec<u8>,
    /// The article's text, when the folder gives it.
    article: Option<String>,
}

/// What extraction found on one page: how much of its article and of the rest was kept,
/// when the folder gives the article, and the encoding used; or why nothing was found.
type Score = Result<(Option<Coverage>, &'static str), String>;

/// The times of the rounds: each page's and each round's wall-clock times, and the CPU time
/// of a round on average (the CPU clock moves at the scheduler's ticks, too coarse for one
/// page or one round).
struct Timings {
    wall: Vec<Vec<Duration>>,
    round_wall: Vec<Duration>,
    cpu_per_round: Option<f64>,
}

/// Runs `tidings-bench extract`.
pub fn run(args: &ExtractBenchArgs) -> anyhow::Result<ExitCode> {
    let pages = read_pages(&args.dir)?;
    if pages.is_empty() {
        eprintln!(
            "tidings-bench: {} holds no page (give a folder of NAME.html files or NAME/source.html folders)",
            args.dir.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    let sanitizer = Sanitizer::default();
    let bytes: usize = pages.iter().map(|p| p.bytes.len()).sum();
    outln!(
        "tidings-bench extract: {} pages, {:.1} KB in {}",
        pages.len(),
        bytes as f64 / 1e3,
        args.dir.display()
    );
    // Once, for what is found; then the rounds, for the time.
    let scores = score_pages(&pages, &sanitizer);
    let mut timings = time_rounds(&pages, &sanitizer, Duration::from_secs(args.seconds.max(1)));
    let (sum, failed) = report_pages(&pages, &scores, &mut timings.wall)?;
    report_totals(&pages, bytes, &mut timings, &sum)?;
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The URL a page is extracted as.
fn url_of(page: &Page) -> Url {
    Url::parse(&format!("https://pages.example/{}", page.name))
        .unwrap_or_else(|_| Url::parse("https://pages.example/page").expect("a valid URL"))
}

/// Extracts every page once and scores what was found against the page's article.
fn score_pages(pages: &[Page], sanitizer: &Sanitizer) -> Vec<Score> {
    let mut scores = Vec::new();
    for page in pages {
        let found = tidings_extract::extract(&page.bytes, &url_of(page), None, sanitizer);
        scores.push(match found {
            Ok(article) => Ok((
                page.article.as_deref().map(|expected| {
                    coverage(
                        &article.text,
                        expected,
                        &page_text(&page.bytes, None, sanitizer),
                    )
                }),
                article.encoding,
            )),
            Err(error) => Err(error.to_string()),
        });
    }
    scores
}

/// Extracts every page in rounds, at least three and for at least `budget`.
fn time_rounds(pages: &[Page], sanitizer: &Sanitizer, budget: Duration) -> Timings {
    let started = Instant::now();
    let mut wall: Vec<Vec<Duration>> = vec![Vec::new(); pages.len()];
    let mut round_wall = Vec::new();
    let cpu_from = thread_cpu_time();
    while round_wall.len() < 3 || started.elapsed() < budget {
        let round_from = Instant::now();
        for (index, page) in pages.iter().enumerate() {
            let url = url_of(page);
            let from = Instant::now();
            let found = tidings_extract::extract(&page.bytes, &url, None, sanitizer);
            std::hint::black_box(found.map(|a| a.text_chars).ok());
            wall[index].push(from.elapsed());
        }
        round_wall.push(round_from.elapsed());
    }
    let rounds = round_wall.len();
    let cpu_per_round = match (cpu_from, thread_cpu_time()) {
        (Some(from), Some(to)) => Some(to.saturating_sub(from).as_secs_f64() / rounds as f64),
        _ => None,
    };
    Timings {
        wall,
        round_wall,
        cpu_per_round,
    }
}

/// The median of `times`, in seconds.
fn median(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64()
}

/// The table, a line per page; returns the coverage summed over the pages that give their
/// article, and how many pages gave no article at all.
fn report_pages(
    pages: &[Page],
    scores: &[Score],
    wall: &mut [Vec<Duration>],
) -> anyhow::Result<(Coverage, usize)> {
    outln!(
        "{:<28} {:>8} {:>10} {:>9} {:>9} {:>8} {:>8}",
        "page",
        "KB",
        "encoding",
        "ms",
        "MB/s",
        "article",
        "other"
    );
    let mut sum = Coverage::default();
    let mut failed = 0;
    for (index, page) in pages.iter().enumerate() {
        let wall_ms = median(&mut wall[index]) * 1e3;
        let speed = page.bytes.len() as f64 / 1e6 / (wall_ms / 1e3).max(1e-9);
        let (encoding, article, other) = match &scores[index] {
            Ok((Some(c), encoding)) => {
                sum.article_tokens += c.article_tokens;
                sum.article_kept += c.article_kept;
                sum.other_tokens += c.other_tokens;
                sum.other_kept += c.other_kept;
                sum.extracted_tokens += c.extracted_tokens;
                (
                    *encoding,
                    percent(c.article_share()),
                    percent(c.other_share()),
                )
            }
            Ok((None, encoding)) => (*encoding, "-".to_owned(), "-".to_owned()),
            Err(_) => {
                failed += 1;
                ("-", "none".to_owned(), "-".to_owned())
            }
        };
        outln!(
            "{:<28} {:>8.1} {:>10} {:>9.3} {:>9.1} {:>8} {:>8}",
            page.name,
            page.bytes.len() as f64 / 1e3,
            encoding,
            wall_ms,
            speed,
            article,
            other
        );
    }
    for (page, score) in pages.iter().zip(scores) {
        if let Err(error) = score {
            outln!("{}: no article: {error}", page.name);
        }
    }
    Ok((sum, failed))
}

/// The lines for all pages: speed per round, and how much of the articles and of the rest of
/// the pages was kept.
fn report_totals(
    pages: &[Page],
    bytes: usize,
    timings: &mut Timings,
    sum: &Coverage,
) -> anyhow::Result<()> {
    let per_round = |seconds: f64| {
        format!(
            "{:.3} ms a page, {:.1} MB/s",
            seconds * 1e3 / pages.len() as f64,
            bytes as f64 / 1e6 / seconds.max(1e-9)
        )
    };
    outln!(
        "all {} pages ({} rounds): {} by wall clock (median round){}",
        pages.len(),
        timings.round_wall.len(),
        per_round(median(&mut timings.round_wall)),
        timings
            .cpu_per_round
            .map(|seconds| format!("; {} by CPU time (mean round)", per_round(seconds)))
            .unwrap_or_default(),
    );
    if sum.article_tokens > 0 {
        outln!(
            "kept {} of the articles' text ({} of {} tokens) and {} of the pages' other text \
             (navigation, sidebars, comments, footers: {} of {} tokens); {} of what was kept is \
             not the article's",
            percent(sum.article_share()),
            sum.article_kept,
            sum.article_tokens,
            percent(sum.other_share()),
            sum.other_kept,
            sum.other_tokens,
            percent(if sum.extracted_tokens == 0 {
                0.0
            } else {
                sum.other_kept as f64 / sum.extracted_tokens as f64
            }),
        );
    }
    outln!(
        "(ms: median per page by wall clock; article: share of the article's text kept; \
         other: share of the rest of the page's text kept)"
    );
    Ok(())
}

fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

/// The pages of `dir` in both layouts, by name.
fn read_pages(dir: &Path) -> anyhow::Result<Vec<Page>> {
    let read = |path: &Path| {
        std::fs::read(path).with_context(|| format!("{} could not be read", path.display()))
    };
    let mut pages = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("{} could not be read", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{} could not be listed", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let source = path.join("source.html");
            if !source.is_file() {
                continue;
            }
            let expected = path.join("expected.html");
            let article = if expected.is_file() {
                let html = String::from_utf8_lossy(&read(&expected)?).into_owned();
                tidings_feed::text::html_to_text(&html)
            } else {
                None
            };
            pages.push(Page {
                name,
                bytes: read(&source)?,
                article,
            });
        } else if let Some(stem) = name.strip_suffix(".html") {
            let expected = dir.join(format!("{stem}.article.txt"));
            let article = if expected.is_file() {
                Some(String::from_utf8_lossy(&read(&expected)?).into_owned())
            } else {
                None
            };
            pages.push(Page {
                name: stem.to_owned(),
                bytes: read(&path)?,
                article,
            });
        }
    }
    pages.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pages)
}
