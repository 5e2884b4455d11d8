//! `tidings resume --all | --user NAME`: put stopped feeds back on schedule, e.g. after fixing
//! the setting or the server that made them fail. The worker fetches them on its next tick.

use std::process::ExitCode;

use clap::Args;

use crate::config::GlobalConfig;
use crate::output::outln;

/// Arguments of `tidings resume`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("whose").required(true).args(["all", "user"])))]
pub struct ResumeArgs {
    /// Resume every stopped feed of every user.
    #[arg(long)]
    pub all: bool,
    /// Resume the stopped feeds this user follows.
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
}

/// Runs `tidings resume`.
pub async fn run(config: &GlobalConfig, args: ResumeArgs) -> anyhow::Result<ExitCode> {
    let store = super::open_existing_store(config).await?;
    let user_id = match &args.user {
        Some(name) => match store.user_credentials(name).await? {
            Some((user, _)) => Some(user.id),
            None => {
                store.close().await;
                eprintln!("tidings: no user named {name:?}");
                return Ok(ExitCode::FAILURE);
            }
        },
        None => None,
    };
    let resumed = store.resume_stopped_feeds(user_id).await;
    store.close().await;
    let resumed = resumed?;
    outln!(
        "resumed {resumed} stopped feed{}; the worker fetches {} on its next tick",
        if resumed == 1 { "" } else { "s" },
        if resumed == 1 { "it" } else { "them" }
    );
    Ok(ExitCode::SUCCESS)
}
