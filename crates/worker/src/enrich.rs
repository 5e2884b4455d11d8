//! Enrichment jobs: work on items already stored, from a queue of their own, beside the feeds'
//! fetching and never in its way. Full text ([`crate::full_text`]) is the first; any job that
//! claims units of work from the store and records each outcome itself fits the same
//! [`EnrichmentJob`] shape and runs under [`run_enrichment`] with its own parallelism.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tidings_store::StoreError;
use tokio::sync::Notify;
use tokio::task::JoinSet;

/// How long the runner waits after a database error before claiming again.
const ERROR_PAUSE: Duration = Duration::from_secs(5);

/// A queue of work on stored items, and how to do one unit of it.
pub trait EnrichmentJob: Send + Sync + 'static {
    /// One claimed unit of work.
    type Task: Send + 'static;

    /// The job's name, for logs.
    fn name(&self) -> &'static str;

    /// Claims up to `limit` units that are due, with a lease, so that several workers share
    /// one queue without doing a unit twice.
    fn claim(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Self::Task>, StoreError>> + Send;

    /// Does one unit and records its outcome (or puts it back for later). Problems are the
    /// unit's own: they are recorded or logged, never returned.
    fn run(&self, task: Self::Task) -> impl Future<Output = ()> + Send;

    /// Wakes the runner when new work is queued in this process, so that it need not wait for
    /// its next poll.
    fn wakeup(&self) -> Option<Arc<Notify>> {
        None
    }
}

/// Runs `job` until `shutdown` completes: at most `concurrency` units at once, claimed as
/// slots free up; when nothing is due it sleeps `poll` (or until woken). Units in progress at
/// shutdown are abandoned; their leases expire and another run takes them again.
pub async fn run_enrichment<J: EnrichmentJob>(
    job: Arc<J>,
    concurrency: usize,
    poll: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let concurrency = concurrency.max(1);
    let wakeup = job.wakeup().unwrap_or_default();
    let mut tasks: JoinSet<()> = JoinSet::new();
    tokio::pin!(shutdown);
    tracing::debug!(job = job.name(), concurrency, "enrichment job started");
    loop {
        let mut pause = poll;
        let free = concurrency - tasks.len();
        if free > 0 {
            match job.claim(free).await {
                Ok(claimed) => {
                    // When every free slot got a unit the runner is full and waits for one to
                    // finish, then claims again at once.
                    for task in claimed {
                        let job = Arc::clone(&job);
                        tasks.spawn(async move { job.run(task).await });
                    }
                }
                Err(error) => {
                    tracing::warn!(job = job.name(), %error, "claiming enrichment work failed");
                    pause = ERROR_PAUSE.min(poll);
                }
            }
        }
        let full = tasks.len() >= concurrency;
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {
                while tasks.try_join_next().is_some() {}
            }
            () = tokio::time::sleep(pause), if !full => {}
            () = wakeup.notified(), if !full => {}
        }
    }
    tasks.abort_all();
    tracing::debug!(job = job.name(), "enrichment job stopped");
}

/// Runs `job` until nothing is due, `concurrency` units at once; returns how many units ran.
/// For one-shot commands and tests.
pub async fn drain_enrichment<J: EnrichmentJob>(
    job: Arc<J>,
    concurrency: usize,
) -> Result<u64, StoreError> {
    let concurrency = concurrency.max(1);
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut ran = 0u64;
    loop {
        let free = concurrency - tasks.len();
        let claimed = if free > 0 {
            job.claim(free).await?
        } else {
            Vec::new()
        };
        if claimed.is_empty() && tasks.is_empty() {
            return Ok(ran);
        }
        for task in claimed {
            ran += 1;
            let job = Arc::clone(&job);
            tasks.spawn(async move { job.run(task).await });
        }
        if let Some(done) = tasks.join_next().await
            && let Err(error) = done
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
    }
}
