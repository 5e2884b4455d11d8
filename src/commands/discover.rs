//! `tidings discover`: the feeds of a page, best first. `tidings discover URL` fetches the page
//! (or feed) through the guarded client; `tidings discover --html FILE --url URL` reads a saved
//! page without any network access.

use crate::output::outln;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use url::Url;

use crate::config::{ConfigError, GlobalConfig};

/// Arguments of `tidings discover`.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// The page or feed to fetch (`example.com/blog` means https://example.com/blog).
    #[arg(
        value_name = "URL",
        conflicts_with = "html",
        required_unless_present = "html"
    )]
    pub target: Option<String>,
    /// Read this saved page instead of fetching (or a feed file: then it is the answer).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub html: Option<PathBuf>,
    /// With --html: the page's URL, which candidates are resolved against.
    #[arg(long, value_name = "URL")]
    pub url: Option<Url>,
    #[command(flatten)]
    pub fetch: super::worker::FetchArgs,
}

/// Runs `tidings discover`: one feed URL per line, best first; exit 1 when none is found.
pub async fn run(_config: &GlobalConfig, args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    if let (Some(html), Some(url)) = (&args.html, &args.url) {
        return super::feed::run_discover_html(&super::feed::DiscoverHtmlArgs {
            html: html.clone(),
            url: url.clone(),
        });
    }
    let settings = args.fetch.check()?;
    let Some(target) = &args.target else {
        return Err(ConfigError {
            variable: "(argument)",
            flag: "URL",
            value: String::new(),
            expected: "a page or feed URL, or --html FILE --url URL".into(),
        }
        .into());
    };
    let url = tidings_worker::parse_user_url(target)?;
    let client = settings.client()?;
    let candidates = tidings_worker::discover_feeds(&client, &url).await?;
    if candidates.is_empty() {
        eprintln!("tidings: no feed found at {url}");
        return Ok(ExitCode::FAILURE);
    }
    for candidate in candidates {
        outln!("{}", candidate.url);
    }
    Ok(ExitCode::SUCCESS)
}
