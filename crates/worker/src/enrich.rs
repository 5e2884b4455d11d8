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
        // A claim may hand back more units than asked (all of them leased, so all of them
        // run): the runner is then over its concurrency for a while, never below zero.
        let free = concurrency.saturating_sub(tasks.len());
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
        let free = concurrency.saturating_sub(tasks.len());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A queue of `left` units whose claim hands back two more units than asked, as a
    /// PostgreSQL claim did under contention; each unit takes a moment to run.
    struct Generous {
        left: AtomicUsize,
        ran: AtomicUsize,
    }

    impl EnrichmentJob for Generous {
        type Task = ();

        fn name(&self) -> &'static str {
            "generous"
        }

        async fn claim(&self, limit: usize) -> Result<Vec<()>, StoreError> {
            let left = self.left.load(Ordering::SeqCst);
            let take = (limit + 2).min(left);
            self.left.fetch_sub(take, Ordering::SeqCst);
            Ok(vec![(); take])
        }

        async fn run(&self, _task: ()) {
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.ran.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn generous(units: usize) -> Arc<Generous> {
        Arc::new(Generous {
            left: AtomicUsize::new(units),
            ran: AtomicUsize::new(0),
        })
    }

    #[tokio::test]
    async fn a_claim_of_more_than_asked_runs_every_unit_without_panicking() {
        let job = generous(20);
        let ran = drain_enrichment(Arc::clone(&job), 1).await.unwrap();
        assert_eq!(ran, 20);
        assert_eq!(job.ran.load(Ordering::SeqCst), 20);

        let job = generous(20);
        let runner = tokio::spawn(run_enrichment(
            Arc::clone(&job),
            1,
            Duration::from_millis(10),
            std::future::pending(),
        ));
        for _ in 0..500 {
            if job.ran.load(Ordering::SeqCst) == 20 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!runner.is_finished(), "the runner stopped: {runner:?}");
        runner.abort();
        assert_eq!(job.ran.load(Ordering::SeqCst), 20);
    }
}
