//! `tidings opml import FILE --user NAME` and `tidings opml export --user NAME` (F37).

use crate::output::{out, outln};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use std::io::IsTerminal;
use tidings_store::ImportJobProgress;
use tidings_worker::{Fetcher, ImportOptions, ImportStatus, JobProgress, WorkerConfig};

use crate::config::GlobalConfig;

/// `tidings opml …`.
#[derive(Debug, Subcommand)]
pub enum OpmlCommand {
    /// Subscribe a user to every feed of an OPML file (folders become groups, outline names
    /// titles), fetch each new feed once (many at once, under the per-host limits), and print
    /// what became of each URL; on a terminal a line shows the progress meanwhile. Exits 1
    /// when a limit (1,000 feeds per file, the subscription limit) left feeds out.
    Import(Box<ImportArgs>),
    /// Write a user's subscriptions as OPML 2.0 (groups as folders).
    Export(ExportArgs),
}

/// Arguments of `tidings opml import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The OPML file; `-` reads standard input.
    pub file: PathBuf,
    /// The user to subscribe.
    #[arg(long, value_name = "NAME")]
    pub user: String,
    /// Subscriptions one user may have, as for `serve`: feeds past it are not imported.
    #[arg(long, env = "TIDINGS_MAX_SUBSCRIPTIONS", default_value = "100")]
    pub max_subscriptions: String,
    #[command(flatten)]
    pub fetch: super::worker::FetchArgs,
}

/// Arguments of `tidings opml export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The user whose subscriptions to export.
    #[arg(long, value_name = "NAME")]
    pub user: String,
    /// Write to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `tidings opml`.
pub async fn run(config: &GlobalConfig, command: OpmlCommand) -> anyhow::Result<ExitCode> {
    match command {
        OpmlCommand::Import(args) => import(config, *args).await,
        OpmlCommand::Export(args) => export(config, args).await,
    }
}

async fn import(config: &GlobalConfig, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let settings = args.fetch.check()?;
    let max_subscriptions = super::max_subscriptions(&args.max_subscriptions)?;
    let bytes = if args.file.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
            .context("standard input could not be read")?;
        bytes
    } else {
        std::fs::read(&args.file)
            .with_context(|| format!("{} could not be read", args.file.display()))?
    };
    let Some((store, user_id)) = super::open_for_user(config, &args.user).await? else {
        return Ok(ExitCode::FAILURE);
    };
    let options = ImportOptions {
        file_name: args
            .file
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
        max_subscriptions: Some(max_subscriptions),
        ..ImportOptions::default()
    };
    let fetcher = Fetcher::new(store.clone(), settings.client()?, WorkerConfig::default());
    let progress = JobProgress::new(0);
    // On a terminal a line says how far the import got; in a script only the report shows.
    let line = std::io::stderr()
        .is_terminal()
        .then(|| tokio::spawn(show_progress(progress.subscribe())));
    let report =
        tidings_worker::import_opml_with_progress(&fetcher, user_id, &bytes, &options, &progress)
            .await;
    if let Some(line) = line {
        line.abort();
        let _ = line.await;
        eprint!("\r\x1b[K");
    }
    store.close().await;
    let report = match report {
        Ok(report) => report,
        Err(tidings_worker::ImportError::Opml(error)) => {
            eprintln!("tidings: {}: {error}", args.file.display());
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error.into()),
    };
    for entry in &report.entries {
        let status = match entry.status {
            ImportStatus::Added => "added",
            ImportStatus::Skipped => "skipped",
            ImportStatus::Refused => "refused",
            ImportStatus::Failed => "failed",
        };
        let group = entry
            .group
            .as_deref()
            .map(|g| format!(" [{g}]"))
            .unwrap_or_default();
        match &entry.reason {
            Some(reason) => outln!("{status:8} {}{group}: {reason}", entry.url),
            None => outln!("{status:8} {}{group}", entry.url),
        }
        if let Some(what_to_do) = &entry.what_to_do {
            outln!("         {what_to_do}");
        }
    }
    outln!(
        "{} feeds: {} added, {} skipped, {} refused, {} failed (import #{})",
        report.outlines,
        report.added,
        report.skipped,
        report.refused,
        report.failed,
        report.import_id
    );
    // Feeds a limit left out are not an error of the file's own: say so plainly, and exit 1
    // so that scripts notice.
    if let Some(notice) = report.limit_notice(&options) {
        eprintln!("tidings: not everything was imported: {notice}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Rewrites one line on standard error with the import's counters as they change (at most
/// five times a second), until aborted.
async fn show_progress(mut changes: tokio::sync::watch::Receiver<ImportJobProgress>) {
    while changes.changed().await.is_ok() {
        let now = *changes.borrow_and_update();
        eprint!("\r\x1b[K{}", progress_line(&now));
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// `checked 120 of 500: 100 added, 5 skipped, 15 failed`.
fn progress_line(progress: &ImportJobProgress) -> String {
    format!(
        "checked {} of {}: {} added, {} skipped, {} failed",
        progress.checked, progress.total, progress.added, progress.skipped, progress.failed
    )
}

async fn export(config: &GlobalConfig, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let Some((store, user_id)) = super::open_for_user(config, &args.user).await? else {
        return Ok(ExitCode::FAILURE);
    };
    let document = tidings_worker::export_opml(
        &store,
        user_id,
        &format!("{}'s subscriptions in tidings", args.user),
    )
    .await;
    store.close().await;
    let document = document?;
    match &args.output {
        Some(path) => std::fs::write(path, document)
            .with_context(|| format!("{} could not be written", path.display()))?,
        None => out!("{document}"),
    }
    Ok(ExitCode::SUCCESS)
}
