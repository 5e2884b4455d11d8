//! `tidings migrate`: apply pending migrations, or report the schema's state.

use crate::output::outln;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tidings_store::SchemaStatus;

use crate::config::GlobalConfig;

/// Arguments of `tidings migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Only report whether migrations are pending (exit 1 when they are); change nothing.
    #[arg(long)]
    pub check: bool,
}

/// Runs `tidings migrate`.
pub async fn run(config: &GlobalConfig, args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let store = super::connect_store(config).await?;
    if args.check {
        let status = store.schema_status().await?;
        store.close().await;
        return Ok(match status {
            SchemaStatus::Current { version } => {
                outln!("schema is current (version {version})");
                ExitCode::SUCCESS
            }
            SchemaStatus::Behind { version, latest } => {
                outln!("schema is at version {version}; version {latest} is pending");
                ExitCode::FAILURE
            }
            SchemaStatus::Ahead { version, latest } => {
                outln!("schema is at version {version}, newer than this tidings knows ({latest})");
                ExitCode::FAILURE
            }
        });
    }
    let applied = store
        .migrate()
        .await
        .context("the database could not be migrated")?;
    let status = store.schema_status().await?;
    store.close().await;
    let version = match status {
        SchemaStatus::Current { version } => version,
        SchemaStatus::Behind { version, .. } | SchemaStatus::Ahead { version, .. } => version,
    };
    if applied.is_empty() {
        outln!("schema is current (version {version}); nothing to do");
    } else {
        let list: Vec<String> = applied.iter().map(i64::to_string).collect();
        outln!(
            "applied migration(s) {}; schema is at version {version}",
            list.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
