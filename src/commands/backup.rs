//! `tidings backup FILE`: a consistent copy of a SQLite database while tidings runs (F61).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tidings_store::{Engine, StoreError};

use crate::config::GlobalConfig;
use crate::output::outln;

/// Arguments of `tidings backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The file to write the copy to (a complete SQLite database; restore by putting it in
    /// place of tidings.db while tidings is stopped).
    pub file: PathBuf,
    /// Replace FILE if it exists (the old copy stays until the new one is complete).
    #[arg(long)]
    pub force: bool,
}

/// Runs `tidings backup`: exit 0 with the copy written, 1 with the reason otherwise.
pub async fn run(config: &GlobalConfig, args: BackupArgs) -> anyhow::Result<ExitCode> {
    let store = super::connect_existing_store(config).await?;
    if store.engine() == Engine::Postgres {
        store.close().await;
        eprintln!(
            "tidings: tidings backup copies SQLite databases. Back up PostgreSQL with pg_dump, \
             which takes a consistent snapshot while tidings runs:\n  \
             pg_dump --format=custom --file=tidings.dump \"$TIDINGS_DATABASE_URL\"\n\
             and restore it into an empty database with:\n  \
             pg_restore --no-owner --dbname=\"$TIDINGS_DATABASE_URL\" tidings.dump"
        );
        return Ok(ExitCode::FAILURE);
    }
    let result = store.backup_to(&args.file, args.force).await;
    store.close().await;
    match result {
        Ok(report) => {
            outln!(
                "backed up {} to {} ({:.1} MB)",
                tidings_store::redact_url(&config.database_url),
                report.path.display(),
                report.bytes as f64 / 1_048_576.0
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(StoreError::Conflict(message) | StoreError::Invalid(message)) => {
            eprintln!("tidings: {message}");
            Ok(ExitCode::FAILURE)
        }
        Err(error) => Err(error.into()),
    }
}
