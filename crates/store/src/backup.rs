//! Online backups of a SQLite database (F61): a consistent copy while the server runs.
//!
//! Copying `tidings.db` with `cp` while tidings runs is not a backup: recent commits live in
//! `tidings.db-wal` until a checkpoint, so the copy misses them or is torn. `VACUUM INTO` reads
//! one snapshot through SQLite and writes it as a single, compact file that needs no WAL.
//! PostgreSQL has its own tool for this (`pg_dump`), so this module answers only for SQLite.

use std::path::{Path, PathBuf};

use crate::{Pools, Result, Store, StoreError};

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// The file written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Store {
    /// Writes a consistent copy of a SQLite database to `target` while other connections and
    /// processes keep reading and writing. An existing `target` is refused unless `overwrite`;
    /// then it is replaced only once the new copy is complete (written beside it, then renamed).
    /// A PostgreSQL or memory database answers [`StoreError::Invalid`] saying what to use.
    pub async fn backup_to(&self, target: &Path, overwrite: bool) -> Result<BackupReport> {
        let reader = match &*self.pools {
            Pools::Sqlite {
                reader,
                path: Some(_),
                ..
            } => reader,
            Pools::Sqlite { path: None, .. } => {
                return Err(StoreError::Invalid(
                    "a memory database cannot be backed up: it ends with the process".into(),
                ));
            }
            Pools::Postgres(_) => {
                return Err(StoreError::Invalid(
                    "tidings backup copies SQLite databases; back up PostgreSQL with pg_dump, \
                     e.g. pg_dump --format=custom --file=tidings.dump \"$TIDINGS_DATABASE_URL\""
                        .into(),
                ));
            }
        };
        if target.exists() && !overwrite {
            return Err(StoreError::Conflict(format!(
                "{} exists already; choose another file, or replace it with --force",
                target.display()
            )));
        }
        if self
            .sqlite_path()
            .is_some_and(|source| same_file(source, target))
        {
            return Err(StoreError::Invalid(format!(
                "{} is the database itself; choose another file",
                target.display()
            )));
        }
        // VACUUM INTO refuses an existing non-empty file, and a half-written copy must never
        // stand where a good one stood: write beside the target, then rename over it.
        let partial = partial_name(target);
        let partial_text = partial.to_str().ok_or_else(|| {
            StoreError::Invalid(format!("the path {} is not UTF-8", target.display()))
        })?;
        let mut conn = reader.acquire().await?;
        let written = sqlx::query("VACUUM INTO $1")
            .bind(partial_text.to_owned())
            .execute(&mut *conn)
            .await;
        drop(conn);
        if let Err(error) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(StoreError::Invalid(format!(
                "the backup to {} failed: {error}",
                target.display()
            )));
        }
        let renamed = std::fs::rename(&partial, target);
        if let Err(error) = renamed {
            let _ = std::fs::remove_file(&partial);
            return Err(StoreError::Invalid(format!(
                "the backup could not be moved to {}: {error}",
                target.display()
            )));
        }
        let bytes = std::fs::metadata(target).map(|m| m.len()).unwrap_or(0);
        tracing::debug!(backup = %target.display(), bytes, "database backed up");
        Ok(BackupReport {
            path: target.to_path_buf(),
            bytes,
        })
    }
}

/// `DIR/.NAME.partial-PID-N`: hidden, unique, on the same file system as the target so
/// the final rename is atomic.
fn partial_name(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tidings-backup".into());
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = format!(
        ".{name}.partial-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(unique),
        _ => PathBuf::from(unique),
    }
}

/// Whether two paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
