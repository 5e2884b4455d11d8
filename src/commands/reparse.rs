//! `tidings reparse [--feed ID | --all]`: re-derive items from the kept raw bodies (F8), without
//! fetching, so that a parser or sanitizer fix reaches existing feeds at once.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tidings_worker::{ReparseError, ReparseReport, WorkerMetrics};

use crate::config::GlobalConfig;
use crate::output::outln;

/// Arguments of `tidings reparse`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["feed", "all"])))]
pub struct ReparseArgs {
    /// The feed to reparse (its id, as `tidings refresh --all` and the API show it).
    #[arg(long, value_name = "ID")]
    pub feed: Option<i64>,
    /// Reparse every feed with a stored body.
    #[arg(long)]
    pub all: bool,
    /// The worker's settings: the sanitizer follows TIDINGS_MEDIA_PROXY as the worker's does,
    /// so give this command the server's settings. Nothing is fetched.
    #[command(flatten)]
    pub worker: super::worker::WorkerArgs,
}

/// What a run added up to.
#[derive(Debug, Default)]
struct Totals {
    reparsed: u64,
    unparsable: u64,
    failed: u64,
    inserted: u64,
    updated: u64,
    unchanged: u64,
}

impl Totals {
    fn add(&mut self, report: &ReparseReport) {
        if report.is_success() {
            self.reparsed += 1;
        } else {
            self.unparsable += 1;
        }
        self.inserted += report.items_inserted;
        self.updated += report.items_updated;
        self.unchanged += report.items_unchanged;
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Runs `tidings reparse`. Exits 1 when a feed could not be reparsed or its body does not
/// parse.
pub async fn run(config: &GlobalConfig, args: ReparseArgs) -> anyhow::Result<ExitCode> {
    let settings = args.worker.check()?;
    let store = super::open_existing_store(config).await?;
    let fetcher = settings.fetcher(store.clone(), Arc::new(WorkerMetrics::default()))?;
    let mut totals = Totals::default();
    let result = match args.feed {
        Some(id) => {
            let mut outcome = None;
            fetcher
                .reparse_feeds([id], |_, result| outcome = Some(result))
                .await;
            match outcome {
                Some(Ok(report)) => {
                    totals.add(&report);
                    crate::output::write_stdout(format_args!("{report}\n")).map_err(Into::into)
                }
                Some(Err(error)) => {
                    store.close().await;
                    eprintln!("tidings: {error}");
                    return Ok(ExitCode::FAILURE);
                }
                None => Ok(()),
            }
        }
        None => reparse_all(&fetcher, &mut totals).await,
    };
    store.close().await;
    result?;
    Ok(if totals.failed == 0 && totals.unparsable == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `--all`: every feed with a body, a line each, then the totals and the feeds without one.
async fn reparse_all(fetcher: &tidings_worker::Fetcher, totals: &mut Totals) -> anyhow::Result<()> {
    // A closed standard output ends the printing, not the reparse; the error is returned after.
    let mut write_error: Option<std::io::Error> = None;
    let listed = fetcher
        .reparse_all(|id, result: Result<ReparseReport, ReparseError>| {
            let line = match result {
                Ok(report) => {
                    totals.add(&report);
                    report.to_string()
                }
                Err(ReparseError::NoBody(_)) => return,
                Err(error) => {
                    totals.failed += 1;
                    match error {
                        // These say which feed already.
                        ReparseError::Body { .. }
                        | ReparseError::Busy(_)
                        | ReparseError::NotFound(_) => error.to_string(),
                        other => format!("feed {id}: {other}"),
                    }
                }
            };
            if write_error.is_none()
                && let Err(error) = crate::output::write_stdout(format_args!("{line}\n"))
            {
                write_error = Some(error);
            }
        })
        .await;
    if let Err(error) = listed {
        return Err(anyhow::Error::new(error).context("the feeds to reparse could not be read"));
    }
    if let Some(error) = write_error {
        return Err(error.into());
    }
    let kept = fetcher.store().feed_body_totals().await?;
    outln!(
        "reparsed {} from stored bodies: {} new, {} updated, {} unchanged items",
        plural(totals.reparsed, "feed", "feeds"),
        totals.inserted,
        totals.updated,
        totals.unchanged
    );
    if totals.unparsable > 0 {
        outln!(
            "{} not parse (see above); the next fetch tries a fresh copy",
            plural(totals.unparsable, "stored body does", "stored bodies do")
        );
    }
    if totals.failed > 0 {
        outln!(
            "{} could not be reparsed (see above)",
            plural(totals.failed, "feed", "feeds")
        );
    }
    let without = (kept.feeds - kept.bodies).max(0) as u64;
    if without > 0 {
        outln!(
            "{} no stored body yet: bodies are kept from each successful fetch \
             (`tidings refresh --all` fetches every feed now)",
            plural(without, "feed has", "feeds have")
        );
    }
    outln!(
        "stored bodies: {}, {} bytes compressed ({} bytes raw)",
        kept.bodies,
        kept.compressed_bytes,
        kept.raw_bytes
    );
    Ok(())
}
