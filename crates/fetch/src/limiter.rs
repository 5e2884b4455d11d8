//! Politeness: at most a few requests at once per host, and a bound on all of them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests at once to one host, by default.
pub const DEFAULT_PER_HOST: usize = 2;
/// Requests at once overall, by default (the worker's parallelism, F11).
pub const DEFAULT_GLOBAL: usize = 10;

/// Table size above which unused host entries are swept on the next acquire.
const SWEEP_THRESHOLD: usize = 1024;

/// Limits concurrent requests per host and overall. Cheap to clone; clones share limits.
///
/// A task first waits for its host's slot and only then for a global one, so tasks queued
/// behind a busy host never sit on global slots that other hosts could use.
#[derive(Debug, Clone)]
pub struct HostLimiter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    per_host: usize,
    global: Option<Arc<Semaphore>>,
    hosts: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// Held while a request runs; dropping it frees the slots.
#[derive(Debug)]
pub struct HostPermit {
    // Field order matters: the permits are released before `Drop` tidies the table.
    global: Option<OwnedSemaphorePermit>,
    host: Option<OwnedSemaphorePermit>,
    key: String,
    inner: Arc<Inner>,
}

impl HostLimiter {
    /// At most `per_host` requests per host (at least 1) and, when `global` is `Some`, at
    /// most that many overall (at least 1).
    pub fn new(per_host: usize, global: Option<usize>) -> HostLimiter {
        HostLimiter {
            inner: Arc::new(Inner {
                per_host: per_host.max(1),
                global: global.map(|n| Arc::new(Semaphore::new(n.max(1)))),
                hosts: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Waits until a request to `host` may start. Hosts are compared case-insensitively;
    /// pass `url.host_str()`.
    pub async fn acquire(&self, host: &str) -> HostPermit {
        let key = host.trim_end_matches('.').to_ascii_lowercase();
        let semaphore = {
            let mut hosts = self.lock_hosts();
            // A waiter cancelled before it got its permit leaves an unused entry behind;
            // sweep those now and then so the table stays small.
            if hosts.len() >= SWEEP_THRESHOLD {
                hosts.retain(|_, semaphore| Arc::strong_count(semaphore) > 1);
            }
            Arc::clone(
                hosts
                    .entry(key.clone())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.inner.per_host))),
            )
        };
        // The semaphores are never closed, so acquiring cannot fail.
        let host_permit = semaphore.acquire_owned().await.ok();
        let global_permit = match &self.inner.global {
            Some(global) => Arc::clone(global).acquire_owned().await.ok(),
            None => None,
        };
        HostPermit {
            global: global_permit,
            host: host_permit,
            key,
            inner: Arc::clone(&self.inner),
        }
    }

    /// How many hosts currently have a request running or waiting (for tests and metrics).
    pub fn tracked_hosts(&self) -> usize {
        self.lock_hosts().len()
    }

    fn lock_hosts(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Semaphore>>> {
        self.inner
            .hosts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for HostLimiter {
    /// 2 per host, 10 overall.
    fn default() -> HostLimiter {
        HostLimiter::new(DEFAULT_PER_HOST, Some(DEFAULT_GLOBAL))
    }
}

impl Drop for HostPermit {
    fn drop(&mut self) {
        self.global.take();
        self.host.take();
        // Forget hosts nobody uses any more, so the table does not grow with every host
        // ever fetched. A waiter holds its own clone of the semaphore, which keeps the
        // count above one and the entry in place.
        let mut hosts = self
            .inner
            .hosts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if hosts
            .get(&self.key)
            .is_some_and(|semaphore| Arc::strong_count(semaphore) == 1)
        {
            hosts.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Runs `tasks` tasks over `hosts`, each holding its permit a moment, and returns the
    /// highest concurrency seen per host and overall.
    async fn peak_concurrency(
        limiter: HostLimiter,
        hosts: &[&str],
        tasks: usize,
    ) -> (Vec<usize>, usize) {
        let running: Arc<Vec<AtomicUsize>> =
            Arc::new(hosts.iter().map(|_| AtomicUsize::new(0)).collect());
        let peaks: Arc<Vec<AtomicUsize>> =
            Arc::new(hosts.iter().map(|_| AtomicUsize::new(0)).collect());
        let total = Arc::new(AtomicUsize::new(0));
        let total_peak = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for n in 0..tasks {
            let index = n % hosts.len();
            let host = hosts[index].to_owned();
            let (limiter, running, peaks, total, total_peak) = (
                limiter.clone(),
                Arc::clone(&running),
                Arc::clone(&peaks),
                Arc::clone(&total),
                Arc::clone(&total_peak),
            );
            handles.push(tokio::spawn(async move {
                let _permit = limiter.acquire(&host).await;
                let now = running[index].fetch_add(1, Ordering::SeqCst) + 1;
                peaks[index].fetch_max(now, Ordering::SeqCst);
                let all = total.fetch_add(1, Ordering::SeqCst) + 1;
                total_peak.fetch_max(all, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                running[index].fetch_sub(1, Ordering::SeqCst);
                total.fetch_sub(1, Ordering::SeqCst);
            }));
        }
        for handle in handles {
            handle.await.unwrap();
        }
        let peaks = peaks.iter().map(|p| p.load(Ordering::SeqCst)).collect();
        (peaks, total_peak.load(Ordering::SeqCst))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_two_per_host_and_ten_overall() {
        let hosts = [
            "a.example",
            "b.example",
            "c.example",
            "d.example",
            "e.example",
            "f.example",
            "g.example",
            "h.example",
        ];
        let limiter = HostLimiter::default();
        let (peaks, total_peak) = peak_concurrency(limiter.clone(), &hosts, 160).await;
        for (host, peak) in hosts.iter().zip(&peaks) {
            assert!(*peak <= 2, "{host}: {peak}");
            assert!(*peak >= 1);
        }
        assert!(total_peak <= 10, "{total_peak}");
        assert!(total_peak >= 2);
        assert_eq!(limiter.tracked_hosts(), 0, "idle hosts are forgotten");
    }

    #[tokio::test]
    async fn hosts_are_case_insensitive_and_independent() {
        let limiter = HostLimiter::new(1, None);
        let first = limiter.acquire("Example.COM").await;
        // Same host in another spelling must wait.
        let blocked =
            tokio::time::timeout(Duration::from_millis(50), limiter.acquire("example.com.")).await;
        assert!(blocked.is_err());
        // Another host does not.
        let other =
            tokio::time::timeout(Duration::from_millis(50), limiter.acquire("example.org")).await;
        assert!(other.is_ok());
        drop(first);
        let now_free =
            tokio::time::timeout(Duration::from_millis(50), limiter.acquire("example.com")).await;
        assert!(now_free.is_ok());
    }

    #[tokio::test]
    async fn the_global_bound_holds_across_hosts() {
        let limiter = HostLimiter::new(5, Some(2));
        let _a = limiter.acquire("a").await;
        let _b = limiter.acquire("b").await;
        let third = tokio::time::timeout(Duration::from_millis(50), limiter.acquire("c")).await;
        assert!(third.is_err());
    }

    #[tokio::test]
    async fn zero_limits_mean_one() {
        let limiter = HostLimiter::new(0, Some(0));
        let permit = tokio::time::timeout(Duration::from_millis(50), limiter.acquire("a")).await;
        assert!(permit.is_ok());
    }
}
