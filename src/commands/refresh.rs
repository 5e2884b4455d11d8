//! `tidings refresh [--feed ID | --all]`: fetch now, bypassing the schedule (F15), and print
//! what happened to each feed.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tidings_worker::{FeedReport, RefreshError, WorkerMetrics};

use crate::config::GlobalConfig;

/// Arguments of `tidings refresh`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["feed", "all"])))]
pub struct RefreshArgs {
    /// The feed to fetch (its id, as `tidings refresh --all` and the API show it).
    #[arg(long, value_name = "ID")]
    pub feed: Option<i64>,
    /// Fetch every feed that has subscribers, stopped ones included.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub worker: super::worker::WorkerArgs,
}

/// Runs `tidings refresh`. Exits 1 when a feed could not be fetched successfully.
pub async fn run(config: &GlobalConfig, args: RefreshArgs) -> anyhow::Result<ExitCode> {
    let mut settings = args.worker.check()?;
    // This command's settings may differ from the server's (run without
    // TIDINGS_ALLOW_PRIVATE_NETWORKS, it would refuse every LAN feed): what its guard refuses
    // is reported, not recorded, so it never stops a feed the server fetches fine.
    settings.worker.record_refusals = false;
    let store = super::open_existing_store(config).await?;
    let fetcher = settings.fetcher(store.clone(), Arc::new(WorkerMetrics::default()))?;
    let mut all_ok = true;
    // A closed standard output ends the printing, not the refresh; the error is returned after.
    let mut write_error: Option<std::io::Error> = None;
    let print = |id: i64, result: Result<FeedReport, RefreshError>| {
        let line = match result {
            Ok(report) => {
                all_ok &= report.result.is_success() && report.recorded;
                format!("{report}")
            }
            Err(error) => {
                all_ok = false;
                format!("feed {id}: {error}")
            }
        };
        if write_error.is_none()
            && let Err(error) = crate::output::write_stdout(format_args!("{line}\n"))
        {
            write_error = Some(error);
        }
    };
    // Bounded either way: --all reads the feeds a page at a time and keeps a few feeds per
    // fetch slot in progress, so memory does not grow with the number of feeds.
    let listed = match args.feed {
        Some(id) => {
            fetcher.refresh_feeds([id], print).await;
            Ok(())
        }
        None => fetcher.refresh_all(print).await.map(|_| ()),
    };
    // Favicons are looked up once per site after the feeds; finish them before leaving.
    fetcher.wait_for_favicons().await;
    if let Err(error) = listed {
        store.close().await;
        return Err(anyhow::Error::new(error).context("the feeds to refresh could not be read"));
    }
    if let Some(error) = write_error {
        store.close().await;
        return Err(error.into());
    }
    store.close().await;
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
