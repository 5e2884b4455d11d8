//! `tidings parse`, `tidings sanitize` and `tidings discover --html`: the feed library
//! (`tidings-feed`) on the command line, for debugging feeds and for scripts.

use crate::output::outln;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tidings_feed::report::FeedReport;
use tidings_feed::{ParseOptions, SanitizeOptions, Sanitizer};
use url::Url;

/// Arguments of `tidings parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// The feed file to parse (RSS, Atom or JSON Feed, any encoding); `-` reads standard input.
    pub file: PathBuf,
    /// The URL the feed was fetched from: relative links are resolved against it.
    #[arg(long = "url", value_name = "BASE")]
    pub url: Option<Url>,
    /// The charset an HTTP server sent for the file (it overrides the XML declaration).
    #[arg(long, value_name = "NAME")]
    pub charset: Option<String>,
    /// Rewrite http image and media URLs to https instead of dropping them.
    #[arg(long)]
    pub rewrite_http_media: bool,
}

/// Arguments of `tidings sanitize`.
#[derive(Debug, Args)]
pub struct SanitizeArgs {
    /// The URL relative links and images are resolved against; without it they are dropped.
    #[arg(long, value_name = "URL")]
    pub base: Option<Url>,
    /// Rewrite http image and media URLs to https instead of dropping them.
    #[arg(long)]
    pub rewrite_http_media: bool,
}

/// Arguments of `tidings discover --html`.
#[derive(Debug, Args)]
pub struct DiscoverHtmlArgs {
    /// The page's HTML, as saved from the page (or a feed: then it is the answer).
    #[arg(long, value_name = "FILE")]
    pub html: PathBuf,
    /// The page's URL: candidates are resolved against it and checked for being on its host.
    #[arg(long, value_name = "URL")]
    pub url: Url,
}

/// Runs `tidings parse`: prints one JSON object describing the feed with sanitized HTML, or,
/// when the file is not a feed, one line on standard error and exit code 1.
pub fn run_parse(args: &ParseArgs) -> anyhow::Result<ExitCode> {
    let bytes = read_input(&args.file)?;
    let options = ParseOptions {
        feed_url: args.url.clone(),
        http_charset: args.charset.clone(),
        ..ParseOptions::default()
    };
    let mut feed = match tidings_feed::parse(&bytes, &options) {
        Ok(feed) => feed,
        Err(error) => {
            eprintln!("tidings: {}: {error}", args.file.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    if let Some(warning) = &feed.warning {
        eprintln!("tidings: warning: {}: {warning}", args.file.display());
    }
    let sanitizer = Sanitizer::new(SanitizeOptions {
        rewrite_http_media_to_https: args.rewrite_http_media,
        ..SanitizeOptions::default()
    });
    feed.sanitize_html(&sanitizer);
    let json = serde_json::to_string_pretty(&FeedReport::new(&feed))
        .context("the feed could not be written as JSON")?;
    outln!("{json}");
    Ok(ExitCode::SUCCESS)
}

/// Runs `tidings sanitize`: HTML on standard input, sanitized HTML on standard output.
pub fn run_sanitize(args: &SanitizeArgs) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("standard input could not be read")?;
    let html = String::from_utf8_lossy(&input);
    let sanitizer = Sanitizer::new(SanitizeOptions {
        rewrite_http_media_to_https: args.rewrite_http_media,
        ..SanitizeOptions::default()
    });
    let clean = sanitizer.clean(&html, args.base.as_ref());
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(clean.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .context("standard output could not be written")?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `tidings discover --html FILE --url URL`: the feed candidates of a saved page, best
/// first, one URL per line (the page's own links, then conventional paths to try).
pub fn run_discover_html(args: &DiscoverHtmlArgs) -> anyhow::Result<ExitCode> {
    let page = read_input(&args.html)?;
    let mut stdout = std::io::stdout().lock();
    for candidate in tidings_feed::discover(&page, &args.url) {
        writeln!(stdout, "{}", candidate.url).context("standard output could not be written")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The bytes of a file, or of standard input for `-`.
fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("standard input could not be read")?;
        return Ok(bytes);
    }
    std::fs::read(path).with_context(|| format!("{} could not be read", path.display()))
}
