//! Import jobs (issue 32): an import (an OPML file; another reader's subscriptions and
//! history) runs in the background, and its row says how far it got. The process that runs a
//! job updates its counters as it goes, which also beats its heartbeat (`updated_at`), and
//! finishes it with its per-entry report. A job whose process went away (a restart, a crash)
//! stops beating: once its heartbeat is older than [`IMPORT_JOB_STALE_SECONDS`] it is marked
//! `interrupted`, by [`Store::interrupt_stale_import_jobs`] at start-up and by the reads of a
//! user's jobs, so no job stays `running` for ever.
//!
//! What the store knows of a job is generic: its kind (`opml`, or another import's), five
//! counters, the per-entry report and the kind's own summary as JSON text, which the kind's
//! code writes and reads.

use crate::{Engine, Result, Store, StoreError, in_tx, unix_now, with_db};

/// A running job whose heartbeat is older than this many seconds is taken for interrupted:
/// its process stopped (a job beats at least every few seconds while it runs).
pub const IMPORT_JOB_STALE_SECONDS: i64 = 60;

/// Jobs listed by [`Store::list_import_jobs`] at most.
pub const MAX_LISTED_IMPORT_JOBS: i64 = 100;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportJobStatus {
    /// Its process is working on it.
    Running,
    /// Finished; its report is complete.
    Done,
    /// Its process stopped before it finished (a restart): what it did is kept, its report is
    /// what it had written; importing again does the rest.
    Interrupted,
    /// It could not go on (the database failed); its `error` says why.
    Failed,
}

impl ImportJobStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ImportJobStatus::Running => "running",
            ImportJobStatus::Done => "done",
            ImportJobStatus::Interrupted => "interrupted",
            ImportJobStatus::Failed => "failed",
        }
    }

    fn parse(name: &str) -> ImportJobStatus {
        match name {
            "running" => ImportJobStatus::Running,
            "done" => ImportJobStatus::Done,
            "failed" => ImportJobStatus::Failed,
            _ => ImportJobStatus::Interrupted,
        }
    }
}

/// A job's counters: what its entries came to so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportJobProgress {
    /// Entries the job will look at (for an OPML file, its feed outlines).
    pub total: i64,
    /// Entries looked at so far (checked, or settled without a request).
    pub checked: i64,
    /// Entries imported.
    pub added: i64,
    /// Entries left alone with nothing wrong (already there, listed twice).
    pub skipped: i64,
    /// Entries not imported because of a problem (refused, failed).
    pub failed: i64,
}

/// A new job, as [`Store::start_import_job`] records it.
#[derive(Debug, Clone)]
pub struct NewImportJob<'a> {
    /// What is imported: `opml`, or another import's kind.
    pub kind: &'a str,
    /// Where from, for people: a file's name, a server's address (never a secret).
    pub source: Option<&'a str>,
    /// Entries it will look at, when known at the start.
    pub total: i64,
    /// The process that runs it (the worker's lease owner name), for logs.
    pub owner: &'a str,
}

/// How a job ended, as [`Store::finish_import_job`] records it.
#[derive(Debug, Clone)]
pub struct ImportJobEnd<'a> {
    /// `Done` or `Failed` (`Running` and `Interrupted` are not ends a job gives itself).
    pub status: ImportJobStatus,
    /// Its final counters.
    pub progress: ImportJobProgress,
    /// Its per-entry report, a JSON array.
    pub entries: &'a str,
    /// The kind's own totals and notices, a JSON object.
    pub summary: Option<&'a str>,
    /// Why it failed.
    pub error: Option<&'a str>,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportJob {
    /// Its id (the `import_id` of the API).
    pub id: i64,
    /// The user it imports for.
    pub user_id: i64,
    /// What it imports.
    pub kind: String,
    /// Where it is.
    pub status: ImportJobStatus,
    /// Where from, for people.
    pub source: Option<String>,
    /// Its counters.
    pub progress: ImportJobProgress,
    /// Its per-entry report (a JSON array); `[]` until it is written, and not read by
    /// [`Store::list_import_jobs`].
    pub entries: String,
    /// The kind's own totals (a JSON object), once finished.
    pub summary: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it started.
    pub created_at: i64,
    /// Its last heartbeat.
    pub updated_at: i64,
    /// When it finished.
    pub finished_at: Option<i64>,
}

/// A job's columns in [`job_columns`] order.
type JobRow = (
    i64,
    i64,
    String,
    String,
    Option<String>,
    i64,
    i64,
    i64,
    i64,
    i64,
    String,
    Option<String>,
    Option<String>,
    i64,
    i64,
    Option<i64>,
);

/// The columns of a [`JobRow`]; `$entries` is `entries` or a stand-in.
macro_rules! job_columns {
    ($entries:literal) => {
        concat!(
            "id, user_id, kind, status, source, total, checked, added, skipped, failed, ",
            $entries,
            ", summary, error, created_at, updated_at, finished_at"
        )
    };
}

fn job_from_row(row: JobRow) -> ImportJob {
    let (id, user_id, kind, status, source, total, checked, added, skipped, failed, entries) = (
        row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10,
    );
    ImportJob {
        id,
        user_id,
        kind,
        status: ImportJobStatus::parse(&status),
        source,
        progress: ImportJobProgress {
            total,
            checked,
            added,
            skipped,
            failed,
        },
        entries,
        summary: row.11,
        error: row.12,
        created_at: row.13,
        updated_at: row.14,
        finished_at: row.15,
    }
}

impl Store {
    /// Records a new running job for `user_id`, unless the user already has `max_running`
    /// running jobs (of any kind): then [`StoreError::LimitReached`] (`what` "running
    /// imports"). Jobs whose heartbeat stopped do not count. Exact across processes: on
    /// PostgreSQL the user's row is locked while counting.
    pub async fn start_import_job(
        &self,
        user_id: i64,
        new: &NewImportJob<'_>,
        max_running: i64,
    ) -> Result<ImportJob> {
        let now = unix_now();
        let is_postgres = self.engine() == Engine::Postgres;
        let id: i64 = in_tx!(self, |tx| {
            if is_postgres {
                // Serializes this user's job starts: the count below is exact until commit.
                sqlx::query("SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE")
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
            }
            let running: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM import_jobs
                 WHERE user_id = $1 AND status = 'running' AND updated_at >= $2",
            )
            .bind(user_id)
            .bind(now - IMPORT_JOB_STALE_SECONDS)
            .fetch_one(&mut *tx)
            .await?;
            if running >= max_running {
                return Err(StoreError::LimitReached {
                    what: "running imports",
                    limit: max_running,
                });
            }
            sqlx::query_scalar(
                "INSERT INTO import_jobs (user_id, kind, status, source, total, owner,
                                          created_at, updated_at)
                 VALUES ($1, $2, 'running', $3, $4, $5, $6, $6) RETURNING id",
            )
            .bind(user_id)
            .bind(new.kind)
            .bind(new.source)
            .bind(new.total)
            .bind(new.owner)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?
        });
        self.import_job(user_id, id)
            .await?
            .ok_or_else(|| StoreError::NotFound("the import job just started"))
    }

    /// Sets a running job's counters, and its report so far when `entries` is given; beats
    /// its heartbeat. Answers `false` when the job is no longer running (it was taken for
    /// interrupted, or deleted): the caller may go on, but nobody is watching.
    pub async fn update_import_job(
        &self,
        id: i64,
        progress: &ImportJobProgress,
        entries: Option<&str>,
    ) -> Result<bool> {
        let updated = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE import_jobs
                 SET total = $2, checked = $3, added = $4, skipped = $5, failed = $6,
                     entries = COALESCE($7, entries), updated_at = $8
                 WHERE id = $1 AND status = 'running'",
            )
            .bind(id)
            .bind(progress.total)
            .bind(progress.checked)
            .bind(progress.added)
            .bind(progress.skipped)
            .bind(progress.failed)
            .bind(entries)
            .bind(unix_now())
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(updated > 0)
    }

    /// Finishes a job with its final counters and report. Written whatever the job's status:
    /// a job taken for interrupted that finished after all is done.
    pub async fn finish_import_job(&self, id: i64, end: &ImportJobEnd<'_>) -> Result<()> {
        let now = unix_now();
        let progress = &end.progress;
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE import_jobs
                 SET status = $2, total = $3, checked = $4, added = $5, skipped = $6,
                     failed = $7, entries = $8, summary = $9, error = $10, updated_at = $11,
                     finished_at = $11
                 WHERE id = $1",
            )
            .bind(id)
            .bind(end.status.as_str())
            .bind(progress.total)
            .bind(progress.checked)
            .bind(progress.added)
            .bind(progress.skipped)
            .bind(progress.failed)
            .bind(end.entries)
            .bind(end.summary)
            .bind(end.error)
            .bind(now)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// Marks `interrupted` every running job whose heartbeat is older than
    /// [`IMPORT_JOB_STALE_SECONDS`] (of `user_id` only, when given); answers how many. Run
    /// at start-up, and by the reads below.
    pub async fn interrupt_stale_import_jobs(&self, user_id: Option<i64>) -> Result<u64> {
        let now = unix_now();
        Ok(with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE import_jobs SET status = 'interrupted', finished_at = $1
                 WHERE status = 'running' AND updated_at < $2
                   AND ($3 IS NULL OR user_id = $3)",
            )
            .bind(now)
            .bind(now - IMPORT_JOB_STALE_SECONDS)
            .bind(user_id)
            .execute(db)
            .await?
            .rows_affected()
        }))
    }

    /// The user's job `id` with its report; `None` when there is none or it is another
    /// user's. A running job whose heartbeat stopped is marked interrupted first.
    pub async fn import_job(&self, user_id: i64, id: i64) -> Result<Option<ImportJob>> {
        let stale_before = unix_now() - IMPORT_JOB_STALE_SECONDS;
        let row = self.read_import_job(user_id, id).await?;
        match row {
            Some(job)
                if job.status == ImportJobStatus::Running && job.updated_at < stale_before =>
            {
                self.interrupt_stale_import_jobs(Some(user_id)).await?;
                self.read_import_job(user_id, id).await
            }
            other => Ok(other),
        }
    }

    async fn read_import_job(&self, user_id: i64, id: i64) -> Result<Option<ImportJob>> {
        let sql = concat!(
            "SELECT ",
            job_columns!("entries"),
            " FROM import_jobs WHERE id = $1 AND user_id = $2"
        );
        let row: Option<JobRow> = with_db!(self, read, |db| {
            sqlx::query_as(sql)
                .bind(id)
                .bind(user_id)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(job_from_row))
    }

    /// The user's jobs, newest first, of `kind` when given, at most
    /// [`MAX_LISTED_IMPORT_JOBS`]; without their reports (`entries` is `[]`). Running jobs
    /// whose heartbeat stopped are marked interrupted first.
    pub async fn list_import_jobs(
        &self,
        user_id: i64,
        kind: Option<&str>,
    ) -> Result<Vec<ImportJob>> {
        self.interrupt_stale_import_jobs(Some(user_id)).await?;
        let sql = concat!(
            "SELECT ",
            job_columns!("'[]'"),
            " FROM import_jobs WHERE user_id = $1 AND ($2 IS NULL OR kind = $2)
              ORDER BY created_at DESC, id DESC LIMIT $3"
        );
        let rows: Vec<JobRow> = with_db!(self, read, |db| {
            sqlx::query_as(sql)
                .bind(user_id)
                .bind(kind)
                .bind(MAX_LISTED_IMPORT_JOBS)
                .fetch_all(db)
                .await?
        });
        Ok(rows.into_iter().map(job_from_row).collect())
    }
}
