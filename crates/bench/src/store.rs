//! The benches' database: the configured one, created when it is a new SQLite file and
//! migrated, as `tidings serve` would leave it.

use tidings::config::GlobalConfig;
use tidings_store::{Store, StoreOptions};

/// Opens the configured database, creating it when it is a new SQLite file, and applies
/// pending migrations.
pub async fn open_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let store = tidings::commands::connect_store(config).await?;
    tidings::commands::migrate(store).await
}

/// [`open_store`] for a bulk load (`tidings-bench generate`): its statements are slow by
/// design and megabytes long, so they are not logged as slow statements.
pub async fn open_store_for_bulk_load(config: &GlobalConfig) -> anyhow::Result<Store> {
    let mut options = StoreOptions::new(&config.database_url);
    options.max_connections = config.database_max_connections;
    options.warn_on_slow_statements = false;
    tidings::commands::migrate(Store::connect(&options).await?).await
}
