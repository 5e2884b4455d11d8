//! The subcommands of the `tidings` binary.

pub mod bench;
pub mod bench_api;
pub mod bench_search;
pub mod discover;
pub mod feed;
pub mod migrate;
pub mod opml;
pub mod refresh;
pub mod serve;
pub mod user;
pub mod worker;

use anyhow::Context;
use tidings_store::{Store, StoreOptions};

use crate::config::GlobalConfig;

/// Opens the configured database and applies pending migrations, as every command that reads
/// or writes data does first.
pub async fn open_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let store = connect_store(config).await?;
    let applied = store
        .migrate()
        .await
        .context("the database could not be migrated")?;
    if !applied.is_empty() {
        tracing::info!(?applied, "database migrated");
    }
    Ok(store)
}

/// Opens the configured database without migrating.
pub async fn connect_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let mut options = StoreOptions::new(&config.database_url);
    options.max_connections = config.database_max_connections;
    Ok(Store::connect(&options).await?)
}
