//! `tidings import greader|miniflux|file …`: a user's history from another reader (F37) —
//! subscriptions, folders, starred items, read marks, labels and (from Miniflux) per-feed
//! settings — idempotent, with a dry run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use tidings_worker::{
    Fetcher, History, HistoryError, HistoryOptions, HistoryReport, HistorySource, WorkerConfig,
};

use crate::config::GlobalConfig;
use crate::output::outln;

/// `tidings import …`.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// From a Google Reader API server (FreshRSS, Miniflux, Inoreader-compatible, another
    /// tidings): URL is the API's root, such as https://rss.example/api/greader.php.
    Greader(GReaderArgs),
    /// From a Miniflux server, with its per-feed settings where tidings has them: URL is its
    /// address (such as https://miniflux.example), the key one of its API keys.
    Miniflux(MinifluxArgs),
    /// From a file: OPML, or a Google Reader Takeout / FreshRSS / Inoreader starred-items
    /// JSON (told apart by content).
    File(FileArgs),
}

/// What every import takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The tidings user to import into.
    #[arg(long, value_name = "NAME")]
    pub user: String,
    /// Say what would be imported; change nothing, fetch no feed.
    #[arg(long)]
    pub dry_run: bool,
    /// Subscriptions one user may have, as for `serve`: feeds past it are not imported.
    #[arg(long, env = "TIDINGS_MAX_SUBSCRIPTIONS", default_value = "100")]
    pub max_subscriptions: String,
    #[command(flatten)]
    pub fetch: super::worker::FetchArgs,
}

/// Arguments of `tidings import greader`.
#[derive(Debug, Args)]
pub struct GReaderArgs {
    /// The Google Reader API's root.
    pub url: String,
    /// The login on that server.
    #[arg(long)]
    pub login: String,
    /// The API password on that server.
    #[arg(long, env = "TIDINGS_IMPORT_PASSWORD", hide_env_values = true)]
    pub password: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `tidings import miniflux`.
#[derive(Debug, Args)]
pub struct MinifluxArgs {
    /// The Miniflux server's address.
    pub url: String,
    /// An API key of the account on that server (Miniflux: Settings > API Keys).
    #[arg(long, env = "TIDINGS_IMPORT_API_KEY", hide_env_values = true)]
    pub api_key: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `tidings import file`.
#[derive(Debug, Args)]
pub struct FileArgs {
    /// The file.
    pub path: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `tidings import`.
pub async fn run(config: &GlobalConfig, command: ImportCommand) -> anyhow::Result<ExitCode> {
    match command {
        ImportCommand::Greader(args) => {
            let source = HistorySource::GReader {
                url: args.url.clone(),
                login: args.login,
                password: args.password,
            };
            apply_read(config, &args.common, &source).await
        }
        ImportCommand::Miniflux(args) => {
            let source = HistorySource::Miniflux {
                url: args.url.clone(),
                api_key: args.api_key,
            };
            apply_read(config, &args.common, &source).await
        }
        ImportCommand::File(args) => {
            let bytes = std::fs::read(&args.path)
                .with_context(|| format!("{} could not be read", args.path.display()))?;
            let history = match tidings_worker::read_history_file(&bytes) {
                Ok(history) => history,
                Err(reason) => {
                    eprintln!("tidings: {}: {reason}", args.path.display());
                    return Ok(ExitCode::FAILURE);
                }
            };
            let name = args.path.display().to_string();
            apply(config, &args.common, &history, &name).await
        }
    }
}

/// Reads the history from a server (as the operator, so not through the feeds' address
/// guard) and imports it, or says why it could not be read.
async fn apply_read(
    config: &GlobalConfig,
    args: &CommonArgs,
    source: &HistorySource,
) -> anyhow::Result<ExitCode> {
    match source.read(None).await {
        Ok(history) => apply(config, args, &history, source.url()).await,
        Err(error) => {
            eprintln!("tidings: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Imports `history` for the user and prints the report.
async fn apply(
    config: &GlobalConfig,
    args: &CommonArgs,
    history: &History,
    source: &str,
) -> anyhow::Result<ExitCode> {
    let settings = args.fetch.check()?;
    let max_subscriptions = super::max_subscriptions(&args.max_subscriptions)?;
    let Some((store, user_id)) = super::open_for_user(config, &args.user).await? else {
        return Ok(ExitCode::FAILURE);
    };
    let fetcher = Fetcher::new(store.clone(), settings.client()?, WorkerConfig::default());
    let options = HistoryOptions {
        dry_run: args.dry_run,
        max_subscriptions: Some(max_subscriptions),
        source_name: Some(source.to_owned()),
        progress: None,
    };
    let report = tidings_worker::apply_history(&fetcher, user_id, history, &options).await;
    store.close().await;
    let report = match report {
        Ok(report) => report,
        Err(HistoryError::Source(reason)) => {
            eprintln!("tidings: {reason}");
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error.into()),
    };
    print_report(&report)?;
    if report.complete() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("tidings: not everything was imported (the reasons are above)");
        Ok(ExitCode::FAILURE)
    }
}

/// One line per kind (settings and rules only when the source has some), then one per rule
/// added, one per thing not imported, then one per thing tidings has no place for.
fn print_report(report: &HistoryReport) -> anyhow::Result<()> {
    let (added, kept) = if report.dry_run {
        ("would add", "would keep as bookmarks")
    } else {
        ("added", "kept as bookmarks")
    };
    if report.dry_run {
        outln!("dry run: nothing was changed");
    }
    for (name, kind) in report.kinds() {
        if (name == "settings" || name == "rules") && kind.is_empty() {
            continue;
        }
        let mut line = format!(
            "{name}: {} {added}, {} already there",
            kind.added, kind.unchanged
        );
        if kind.kept_as_bookmark > 0 {
            line.push_str(&format!(", {} {kept}", kind.kept_as_bookmark));
        }
        if kind.failed > 0 {
            line.push_str(&format!(", {} not imported", kind.failed));
        }
        if kind.not_kept > 0 {
            line.push_str(&format!(", {} not kept", kind.not_kept));
        }
        outln!("{line}");
    }
    for (name, kind) in report.kinds() {
        for added in &kind.names {
            outln!(
                "{added_one} ({name}): {added}",
                added_one = if report.dry_run { "would add" } else { "added" }
            );
        }
    }
    for (name, kind) in report.kinds() {
        for reason in &kind.reasons {
            outln!("not imported ({name}): {reason}");
        }
    }
    for (name, kind) in report.kinds() {
        for note in &kind.notes {
            outln!("not kept ({name}): {note}");
        }
    }
    Ok(())
}
