//! Imports as background jobs (issue 32): [`spawn_import_job`] records a job, runs the
//! import's work in a task of its own and answers at once; the work reports its counters on a
//! [`JobProgress`], which a writer task copies to the job's row (at most every
//! [`PROGRESS_EVERY`], and at least every [`HEARTBEAT_EVERY`] as the job's heartbeat); when the
//! work ends, its report finishes the row. A client that goes away does not stop the job; a
//! process that goes away stops its heartbeat, and the store then marks the job interrupted.
//!
//! The job is generic: the OPML import ([`crate::opml::start_opml_import`]) is one kind, and
//! any other import (another reader's history) runs the same way with its own kind, entries
//! and summary.

use std::future::Future;
use std::time::Duration;

use tidings_store::{
    ImportJob, ImportJobEnd, ImportJobProgress, ImportJobStatus, NewImportJob, Store, StoreError,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a running job's counters are written at most.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// How often a running job's row is written at least, changed or not: its heartbeat, well
/// within [`tidings_store::IMPORT_JOB_STALE_SECONDS`].
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);
/// Imports one user may have running at once, by default: a few at once are fine (each
/// checks its feeds under the same per-host limits), a loop of uploads is not.
pub const MAX_RUNNING_IMPORTS: i64 = 3;

/// Where a running import's work reports its counters; cheap to clone.
#[derive(Debug, Clone)]
pub struct JobProgress {
    sender: watch::Sender<ImportJobProgress>,
}

impl JobProgress {
    /// A progress nobody writes to a job yet (the job's writer, or a command line, subscribes).
    pub fn new(total: i64) -> JobProgress {
        JobProgress {
            sender: watch::Sender::new(ImportJobProgress {
                total,
                ..ImportJobProgress::default()
            }),
        }
    }

    /// Changes the counters.
    pub fn update(&self, change: impl FnOnce(&mut ImportJobProgress)) {
        self.sender.send_modify(change);
    }

    /// The counters now.
    pub fn now(&self) -> ImportJobProgress {
        *self.sender.borrow()
    }

    /// Follows the counters (a command line's progress line).
    pub fn subscribe(&self) -> watch::Receiver<ImportJobProgress> {
        self.sender.subscribe()
    }
}

/// What an import's work hands back when it ends well.
#[derive(Debug, Clone)]
pub struct JobReport {
    /// Its final counters.
    pub progress: ImportJobProgress,
    /// Its per-entry report, a JSON array.
    pub entries: String,
    /// The kind's own totals and notices, a JSON object.
    pub summary: Option<String>,
}

/// A job started by [`spawn_import_job`].
#[derive(Debug)]
pub struct StartedJob {
    /// The job as recorded at its start.
    pub job: ImportJob,
    /// Its counters, live.
    pub progress: JobProgress,
    /// Ends when the job's row is finished: with the work's report, or why it failed.
    pub done: JoinHandle<Result<JobReport, String>>,
}

/// Records a running job for `user_id` (refused with [`StoreError::LimitReached`] when the
/// user has `max_running` running already), then runs `work` in a task of its own and answers
/// at once. `work` gets the job's [`JobProgress`]; what it returns finishes the job (`Ok`:
/// done with its report; `Err`: failed with that reason). A work that panics fails its job.
pub async fn spawn_import_job<W, F>(
    store: &Store,
    user_id: i64,
    new: &NewImportJob<'_>,
    max_running: i64,
    work: W,
) -> Result<StartedJob, StoreError>
where
    W: FnOnce(JobProgress) -> F,
    F: Future<Output = Result<JobReport, String>> + Send + 'static,
{
    let job = store.start_import_job(user_id, new, max_running).await?;
    let progress = JobProgress::new(new.total);
    // Subscribed before the work starts, so that its first counts are written too.
    let changes = progress.subscribe();
    let running = tokio::spawn(work(progress.clone()));
    let writer = tokio::spawn(write_progress(store.clone(), job.id, changes));
    let (store, id, kind) = (store.clone(), job.id, job.kind.clone());
    let last = progress.clone();
    let done = tokio::spawn(async move {
        let outcome = running
            .await
            .unwrap_or_else(|error| Err(format!("the import stopped unexpectedly: {error}")));
        writer.abort();
        let end = match &outcome {
            Ok(report) => ImportJobEnd {
                status: ImportJobStatus::Done,
                progress: report.progress,
                entries: &report.entries,
                summary: report.summary.as_deref(),
                error: None,
            },
            Err(error) => ImportJobEnd {
                status: ImportJobStatus::Failed,
                progress: last.now(),
                entries: "[]",
                summary: None,
                error: Some(error),
            },
        };
        // The row must say how the job ended; a database that is away right now is waited
        // for a little (the job's heartbeat stops meanwhile, so at worst it reads interrupted).
        for attempt in 0..5u32 {
            match store.finish_import_job(id, &end).await {
                Ok(()) => break,
                Err(error) => {
                    tracing::warn!(job = id, %kind, %error, attempt, "an import job's end was not recorded");
                    tokio::time::sleep(Duration::from_secs(2u64.pow(attempt))).await;
                }
            }
        }
        outcome
    });
    Ok(StartedJob {
        job,
        progress,
        done,
    })
}

/// Copies the counters to the job's row as they change (at most every [`PROGRESS_EVERY`]),
/// and beats the heartbeat every [`HEARTBEAT_EVERY`]; ends when the job is no longer running
/// or the work dropped its progress.
async fn write_progress(store: Store, id: i64, mut changes: watch::Receiver<ImportJobProgress>) {
    loop {
        let changed = tokio::time::timeout(HEARTBEAT_EVERY, changes.changed()).await;
        if matches!(changed, Ok(Err(_))) {
            return;
        }
        let now = *changes.borrow_and_update();
        match store.update_import_job(id, &now, None).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => {
                tracing::warn!(job = id, %error, "an import job's progress was not recorded")
            }
        }
        tokio::time::sleep(PROGRESS_EVERY).await;
    }
}
