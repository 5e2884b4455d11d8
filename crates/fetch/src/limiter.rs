//! Politeness per host that does not serialize a refresh.
//!
//! Three bounds apply to each host:
//!
//! - a **request rate** (a token bucket: `rate_per_second` requests a second, bursts of at most
//!   `burst`), so that a host with hundreds of feeds is never hammered however fast it answers;
//! - a **concurrency cap** on requests in their first `slow_after`;
//! - a separate **slow budget**: a request still running after `slow_after` moves there and
//!   frees its slot under the cap, so a few slow feeds do not hold the host's other feeds for
//!   their whole duration. When the slow budget is full, a slow request keeps its slot.
//!
//! An optional global bound limits requests at once over all hosts; a task first waits for its
//! host and only then for a global slot, so tasks queued behind a busy host never sit on
//! global slots that other hosts could use.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

// The defaults are tuned on `tidings-bench fetch --mix` (500 feeds of the world's mix, all on
// one host, 20 at once): at 20 requests a second the rate alone made a refresh of 500 feeds
// on one host last 25 s or more, and a 2 s wait before a request counted as slow let slow
// servers hold the host's slots. The concurrency cap is what bounds a host's load.

/// Requests at once to one host that are not (yet) slow, by default.
pub const DEFAULT_PER_HOST_CONCURRENCY: usize = 10;
/// Slow requests one host may have beside those, by default.
pub const DEFAULT_PER_HOST_SLOW: usize = 20;
/// When a request counts as slow, by default.
pub const DEFAULT_SLOW_AFTER: Duration = Duration::from_secs(1);
/// Requests started per second per host, by default (bursts of as many).
pub const DEFAULT_PER_HOST_RATE: u32 = 100;
/// Requests at once overall, by default (the worker's parallelism, F11).
pub const DEFAULT_GLOBAL: usize = 10;

/// Table size above which idle host entries are swept on the next acquire.
const SWEEP_THRESHOLD: usize = 1024;

/// The per-host bounds. `Default` gives the product's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostLimits {
    /// Requests at once to one host, slow ones moved to the slow budget not counted (at least 1).
    pub concurrency: usize,
    /// Slow requests one host may have beside `concurrency` (0: slow requests keep their slot).
    pub slow: usize,
    /// How long a request runs before it counts as slow.
    pub slow_after: Duration,
    /// Requests started per second per host (at least 1).
    pub rate_per_second: u32,
    /// Requests that may start at once after a quiet spell (at least 1).
    pub burst: u32,
}

impl Default for HostLimits {
    fn default() -> HostLimits {
        HostLimits {
            concurrency: DEFAULT_PER_HOST_CONCURRENCY,
            slow: DEFAULT_PER_HOST_SLOW,
            slow_after: DEFAULT_SLOW_AFTER,
            rate_per_second: DEFAULT_PER_HOST_RATE,
            burst: DEFAULT_PER_HOST_RATE,
        }
    }
}

impl HostLimits {
    /// The same limits with every bound at least 1 (the slow budget may be 0).
    fn normalized(self) -> HostLimits {
        HostLimits {
            concurrency: self.concurrency.max(1),
            slow: self.slow,
            slow_after: self.slow_after,
            rate_per_second: self.rate_per_second.max(1),
            burst: self.burst.max(1),
        }
    }

    fn interval(&self) -> Duration {
        Duration::from_secs(1) / self.rate_per_second
    }
}

/// Limits requests per host and overall. Cheap to clone; clones share limits.
#[derive(Debug, Clone)]
pub struct HostLimiter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    limits: HostLimits,
    global: Option<Arc<Semaphore>>,
    hosts: Mutex<HashMap<String, Arc<HostState>>>,
}

#[derive(Debug)]
struct HostState {
    active: Arc<Semaphore>,
    slow: Arc<Semaphore>,
    /// The token bucket as a "theoretical arrival time" (GCRA): the next request may start
    /// at `next_start - (burst - 1) * interval`, and each start moves it on by one interval.
    next_start: Mutex<Instant>,
}

/// Held while a request runs; dropping it frees the slots.
#[derive(Debug)]
pub struct HostPermit {
    // Field order matters: the permits are released before `Drop` tidies the table.
    global: Option<OwnedSemaphorePermit>,
    active: Option<OwnedSemaphorePermit>,
    slow: Option<OwnedSemaphorePermit>,
    state: Arc<HostState>,
    key: String,
    inner: Arc<Inner>,
}

impl HostLimiter {
    /// A limiter with these per-host bounds and, when `global` is `Some`, at most that many
    /// requests at once overall (at least 1).
    pub fn new(limits: HostLimits, global: Option<usize>) -> HostLimiter {
        HostLimiter {
            inner: Arc::new(Inner {
                limits: limits.normalized(),
                global: global.map(|n| Arc::new(Semaphore::new(n.max(1)))),
                hosts: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The per-host bounds in force.
    pub fn limits(&self) -> HostLimits {
        self.inner.limits
    }

    /// Waits until a request to `host` may start: a slot under the host's cap, the host's
    /// rate, then a global slot. Hosts are compared case-insensitively; pass
    /// `url.host_str()`.
    pub async fn acquire(&self, host: &str) -> HostPermit {
        let key = host.trim_end_matches('.').to_ascii_lowercase();
        let limits = self.inner.limits;
        let state = {
            let mut hosts = self.lock_hosts();
            // A waiter cancelled before it got its permit leaves an unused entry behind;
            // sweep those now and then so the table stays small.
            if hosts.len() >= SWEEP_THRESHOLD {
                let now = Instant::now();
                hosts.retain(|_, state| !state.idle(now));
            }
            Arc::clone(hosts.entry(key.clone()).or_insert_with(|| {
                Arc::new(HostState {
                    active: Arc::new(Semaphore::new(limits.concurrency)),
                    slow: Arc::new(Semaphore::new(limits.slow)),
                    next_start: Mutex::new(Instant::now()),
                })
            }))
        };
        // The semaphores are never closed, so acquiring cannot fail.
        let active = Arc::clone(&state.active).acquire_owned().await.ok();
        let start_at = state.reserve_start(&limits);
        tokio::time::sleep_until(start_at).await;
        let global = match &self.inner.global {
            Some(global) => Arc::clone(global).acquire_owned().await.ok(),
            None => None,
        };
        HostPermit {
            global,
            active,
            slow: None,
            state,
            key,
            inner: Arc::clone(&self.inner),
        }
    }

    /// Runs `request` under a permit for `host`: waits as [`HostLimiter::acquire`] does, and
    /// when the request is still running after `slow_after`, moves it to the slow budget
    /// (when that has room) so the host's next request can start.
    pub async fn run<F: Future>(&self, host: &str, request: F) -> F::Output {
        let permit = self.acquire(host).await;
        self.watch(permit, request).await
    }

    /// Runs `request` holding `permit`, moving it to the slow budget after `slow_after`.
    pub async fn watch<F: Future>(&self, mut permit: HostPermit, request: F) -> F::Output {
        let request = std::pin::pin!(request);
        let mut request = request;
        tokio::select! {
            output = &mut request => return output,
            () = tokio::time::sleep(self.inner.limits.slow_after) => {}
        }
        if permit.move_to_slow() {
            tracing::trace!(host = %permit.key, "slow request moved to the slow budget");
        }
        let output = request.await;
        drop(permit);
        output
    }

    /// How many hosts have a request running or waiting, or a rate still recovering (for
    /// tests and metrics).
    pub fn tracked_hosts(&self) -> usize {
        let mut hosts = self.lock_hosts();
        let now = Instant::now();
        hosts.retain(|_, state| !state.idle(now));
        hosts.len()
    }

    fn lock_hosts(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HostState>>> {
        lock(&self.inner.hosts)
    }
}

impl Default for HostLimiter {
    /// [`HostLimits::default`] per host, [`DEFAULT_GLOBAL`] overall.
    fn default() -> HostLimiter {
        HostLimiter::new(HostLimits::default(), Some(DEFAULT_GLOBAL))
    }
}

impl HostState {
    /// Takes the next start time the host's rate allows and returns it.
    fn reserve_start(&self, limits: &HostLimits) -> Instant {
        let interval = limits.interval();
        let tolerance = interval * (limits.burst - 1);
        let now = Instant::now();
        let mut next = lock(&self.next_start);
        let start = now.max(next.checked_sub(tolerance).unwrap_or(now));
        *next = (*next).max(now) + interval;
        start
    }

    /// Nobody holds or waits for this host and its bucket is full again: forgetting it
    /// changes nothing.
    fn idle(self: &Arc<Self>, now: Instant) -> bool {
        Arc::strong_count(self) == 1 && *lock(&self.next_start) <= now
    }
}

impl HostPermit {
    /// Moves this request from the host's cap to its slow budget, freeing its slot there.
    /// Returns `false` (and keeps the slot) when the slow budget is full or it already moved.
    pub fn move_to_slow(&mut self) -> bool {
        if self.slow.is_some() {
            return false;
        }
        match Arc::clone(&self.state.slow).try_acquire_owned() {
            Ok(slow) => {
                self.slow = Some(slow);
                self.active.take();
                true
            }
            Err(_) => false,
        }
    }

    /// Whether this request counts against the slow budget.
    pub fn is_slow(&self) -> bool {
        self.slow.is_some()
    }
}

impl Drop for HostPermit {
    fn drop(&mut self) {
        self.global.take();
        self.active.take();
        self.slow.take();
        // Forget hosts nobody uses any more, so the table does not grow with every host
        // ever fetched. A waiter or another permit holds its own clone of the state, which
        // keeps the entry in place; so does a rate that has not recovered yet (the sweep in
        // `acquire` removes those later).
        let mut hosts = lock(&self.inner.hosts);
        if let Some(state) = hosts.get(&self.key)
            && Arc::ptr_eq(state, &self.state)
            && Arc::strong_count(state) == 2
        {
            // A full bucket: a fresh entry would behave the same.
            if *lock(&state.next_start) <= Instant::now() {
                hosts.remove(&self.key);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn limits(concurrency: usize, slow: usize, rate: u32, burst: u32) -> HostLimits {
        HostLimits {
            concurrency,
            slow,
            slow_after: Duration::from_secs(2),
            rate_per_second: rate,
            burst,
        }
    }

    /// Runs `tasks` tasks over `hosts`, each holding its permit `hold`, and returns the
    /// highest concurrency seen per host and overall.
    async fn peak_concurrency(
        limiter: HostLimiter,
        hosts: &[&str],
        tasks: usize,
        hold: Duration,
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
                tokio::time::sleep(hold).await;
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

    #[tokio::test(start_paused = true)]
    async fn the_cap_per_host_and_the_global_bound_hold() {
        let hosts = ["a.example", "b.example", "c.example", "d.example"];
        let limiter = HostLimiter::new(limits(3, 0, 1000, 1000), Some(10));
        let (peaks, total_peak) =
            peak_concurrency(limiter.clone(), &hosts, 200, Duration::from_millis(50)).await;
        for (host, peak) in hosts.iter().zip(&peaks) {
            assert_eq!(*peak, 3, "{host}");
        }
        assert_eq!(total_peak, 10);
        // Idle hosts are forgotten once their rate has recovered.
        drop(limiter.acquire("e.example").await);
        assert_eq!(limiter.tracked_hosts(), 1, "e's rate is still recovering");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(limiter.tracked_hosts(), 0, "idle hosts are forgotten");
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_allows_a_burst_then_one_request_per_interval() {
        // 10 a second, bursts of 4: 4 start at once, then one every 100 ms.
        let limiter = HostLimiter::new(limits(100, 0, 10, 4), None);
        let started = Instant::now();
        let mut offsets = Vec::new();
        for _ in 0..8 {
            let _permit = limiter.acquire("rate.example").await;
            offsets.push(started.elapsed().as_millis());
        }
        assert_eq!(offsets, [0, 0, 0, 0, 100, 200, 300, 400]);
        // Another host has its own bucket.
        let other = Instant::now();
        for _ in 0..4 {
            drop(limiter.acquire("other.example").await);
        }
        assert_eq!(other.elapsed(), Duration::ZERO);
        // After a quiet second the burst is back.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let again = Instant::now();
        for _ in 0..4 {
            drop(limiter.acquire("rate.example").await);
        }
        assert_eq!(again.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn many_fast_requests_to_one_host_are_paced_by_the_rate() {
        let limiter = HostLimiter::new(limits(6, 6, 20, 20), None);
        let started = Instant::now();
        let mut handles = Vec::new();
        for _ in 0..120 {
            let limiter = limiter.clone();
            handles.push(tokio::spawn(async move {
                limiter
                    .run(
                        "busy.example",
                        tokio::time::sleep(Duration::from_millis(10)),
                    )
                    .await
            }));
        }
        for handle in handles {
            handle.await.unwrap();
        }
        // 20 at once, then 100 more at 20 a second: 5 s, not 120 x 10 ms / 6.
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(4950), "{elapsed:?}");
        assert!(elapsed <= Duration::from_millis(5100), "{elapsed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn slow_requests_move_to_their_budget_and_free_the_cap() {
        // Cap 2, slow budget 4: four requests that take a minute, then fast ones.
        let limiter = HostLimiter::new(limits(2, 4, 1000, 1000), None);
        let started = Instant::now();
        let mut slow = Vec::new();
        for _ in 0..4 {
            let limiter = limiter.clone();
            slow.push(tokio::spawn(async move {
                limiter
                    .run("mixed.example", tokio::time::sleep(Duration::from_secs(60)))
                    .await;
                started.elapsed()
            }));
            // Let each start before the next is queued, so they are first in line.
            tokio::task::yield_now().await;
        }
        let mut fast = Vec::new();
        for _ in 0..10 {
            let limiter = limiter.clone();
            fast.push(tokio::spawn(async move {
                limiter
                    .run(
                        "mixed.example",
                        tokio::time::sleep(Duration::from_millis(100)),
                    )
                    .await;
                started.elapsed()
            }));
        }
        // The first two slow requests move to the slow budget at 2 s, the next two at 4 s;
        // then the fast ones run two at a time: ten of them in about 0.5 s.
        for handle in fast {
            let done = handle.await.unwrap();
            assert!(
                done < Duration::from_secs(6),
                "a fast request waited {done:?}"
            );
        }
        for handle in slow {
            let done = handle.await.unwrap();
            assert!(done >= Duration::from_secs(60));
            assert!(done < Duration::from_secs(65), "{done:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_slow_budget_slow_requests_keep_their_slot() {
        let limiter = HostLimiter::new(limits(1, 0, 1000, 1000), None);
        let started = Instant::now();
        let slow = {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                limiter
                    .run("one.example", tokio::time::sleep(Duration::from_secs(30)))
                    .await
            })
        };
        tokio::task::yield_now().await;
        limiter.run("one.example", async {}).await;
        assert!(started.elapsed() >= Duration::from_secs(30));
        slow.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_slow_budget_keeps_the_slot_and_bounds_the_host() {
        // Cap 1 + slow 1: a host never has more than two requests at once, slow or not.
        let limiter = HostLimiter::new(limits(1, 1, 1000, 1000), None);
        let (peaks, _) =
            peak_concurrency(limiter.clone(), &["slowhost"], 6, Duration::from_secs(10)).await;
        // `peak_concurrency` holds plain permits (no `run`), so nothing moves: the cap holds.
        assert_eq!(peaks, [1]);
        let mut permit = limiter.acquire("slowhost").await;
        assert!(permit.move_to_slow());
        assert!(permit.is_slow());
        assert!(!permit.move_to_slow(), "moves once");
        let mut second = limiter.acquire("slowhost").await;
        assert!(!second.move_to_slow(), "the slow budget is full");
        let third = tokio::time::timeout(Duration::from_secs(5), limiter.acquire("slowhost")).await;
        assert!(third.is_err(), "cap and slow budget both taken");
    }

    #[tokio::test(start_paused = true)]
    async fn hosts_are_case_insensitive_and_independent() {
        let limiter = HostLimiter::new(limits(1, 0, 1000, 1000), None);
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

    #[tokio::test(start_paused = true)]
    async fn the_global_bound_holds_across_hosts() {
        let limiter = HostLimiter::new(limits(5, 0, 1000, 1000), Some(2));
        let _a = limiter.acquire("a").await;
        let _b = limiter.acquire("b").await;
        let third = tokio::time::timeout(Duration::from_millis(50), limiter.acquire("c")).await;
        assert!(third.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn zero_limits_mean_one() {
        let limiter = HostLimiter::new(limits(0, 0, 0, 0), Some(0));
        let permit = tokio::time::timeout(Duration::from_millis(50), limiter.acquire("a")).await;
        assert!(permit.is_ok());
        drop(permit);
        // Rate 0 means 1 a second.
        let second = tokio::time::timeout(Duration::from_millis(900), limiter.acquire("a")).await;
        assert!(second.is_err());
    }
}
