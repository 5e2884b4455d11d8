//! Fixed-window rate limits (F25).
//!
//! A window per key and minute: simple to reason about and it gives the exact
//! `X-RateLimit-Limit / -Remaining / -Reset` values clients expect. On PostgreSQL, where
//! several API replicas share one database, the windows are counted in the database
//! ([`RateLimits::shared`]), so the limit holds for the installation rather than per
//! replica. On SQLite (one process) they are kept in the process's memory; when the database
//! cannot count, the limiters fall back to the process's memory for a few seconds at a time,
//! so that a limit never fails a request by itself nor slows it down twice in an outage.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tidings_store::{Engine, Store};

/// The result of counting one request against a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in this window.
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset_seconds: u64,
    /// Which limit this is (`X-RateLimit-Scope`), so that a client can tell the request
    /// budget (worth waiting out) from a limit on one action (sign-in, subscribing).
    pub scope: &'static str,
}

/// Counts requests per key in fixed windows.
#[derive(Debug)]
pub struct RateLimiter {
    scope: &'static str,
    limit: u32,
    window: Duration,
    windows: Mutex<HashMap<String, (Instant, u32)>>,
    /// The database the windows are counted in, when they are shared between processes.
    shared: Option<SharedWindows>,
    /// When set, a shared limiter counts in memory and adds its hits to the database in
    /// batches ([`RateLimiter::batched`]).
    batches: Option<Batches>,
}

/// A shared limiter's hits counted in this process and added to the database a batch at a
/// time: what keeps a busy limit (the sync APIs', one hit per request of an app's sync) from
/// writing and committing a row for every request.
#[derive(Debug)]
struct Batches {
    /// Hits per key this process has admitted and not yet added, with what it last learnt.
    keys: Mutex<HashMap<String, BatchedWindow>>,
}

/// What a process knows of one key's shared window.
#[derive(Debug, Clone, Copy)]
struct BatchedWindow {
    /// The window's hits in the database when this process last added its own.
    shared_hits: u32,
    /// Hits admitted here since then.
    pending: u32,
    /// When the window ends (the database's answer, on this process's clock).
    ends_at: Instant,
    /// When this process last added its hits.
    flushed_at: Instant,
}

/// A batched limiter adds its hits to the database once it has this many...
const BATCH_HITS: u32 = 10;

/// ...or once this long has passed since it last did, whichever comes first. Another
/// process therefore sees a key's hits within about this long, and the processes on one
/// database admit together at most `BATCH_HITS - 1` requests a process over the limit in a
/// window (each admits at most that many past the count it last read before it reads again).
const BATCH_AGE: Duration = Duration::from_secs(1);

/// Windows counted in the database, with the moment expired ones are next pruned (one
/// schedule for all the limiters of a process).
#[derive(Debug, Clone)]
struct SharedWindows {
    store: Store,
    next_prune: Arc<Mutex<Instant>>,
    /// Until when the limiters count in memory after the database failed to count: during
    /// an outage each request would otherwise wait for the database twice, here and in its
    /// handler, before its 503.
    memory_until: Arc<Mutex<Instant>>,
}

/// How long the limiters count in memory after the database failed to count.
const MEMORY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// How often a process deletes the database's expired windows.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Keys longer than this (an account name as typed) are stored as their SHA-256, so that a
/// client cannot write long strings into the database through a limit's key.
const MAX_STORED_KEY: usize = 128;

/// Keys kept before old windows are swept, so that a flood of distinct keys (addresses)
/// cannot grow the map without bound.
const SWEEP_AT: usize = 10_000;

impl RateLimiter {
    /// A limiter of `limit` requests per `window`.
    pub fn new(limit: u32, window: Duration) -> RateLimiter {
        RateLimiter {
            scope: "requests",
            limit,
            window,
            windows: Mutex::new(HashMap::new()),
            shared: None,
            batches: None,
        }
    }

    /// The same limiter, when shared, adding its hits to the database in batches of
    /// [`BATCH_HITS`] or every [`BATCH_AGE`] rather than one write per request: for a limit
    /// that is hit by every request of a busy caller, where a few requests more than the
    /// limit across processes (see [`BATCH_AGE`]) cost less than a write per request. Within
    /// one process the limit stays exact.
    pub fn batched(mut self) -> RateLimiter {
        self.batches = Some(Batches {
            keys: Mutex::new(HashMap::new()),
        });
        self
    }

    /// The same limiter, named `scope` in its answers' `X-RateLimit-Scope`.
    pub fn scoped(mut self, scope: &'static str) -> RateLimiter {
        self.scope = scope;
        self
    }

    /// The same limiter, allowing `limit` requests a window.
    pub fn with_limit(mut self, limit: u32) -> RateLimiter {
        self.limit = limit;
        self
    }

    /// The same limiter, counting in `store`'s database so that every process on it shares
    /// the budget.
    fn shared_in(mut self, shared: &SharedWindows) -> RateLimiter {
        self.shared = Some(shared.clone());
        self
    }

    /// Counts one request for `key` in this process's memory at `now`.
    pub fn check_at(&self, key: &str, now: Instant) -> RateDecision {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() >= SWEEP_AT {
            let window = self.window;
            windows.retain(|_, (start, _)| now.duration_since(*start) < window);
        }
        let entry = windows.entry(key.to_string()).or_insert((now, 0));
        if now.duration_since(entry.0) >= self.window {
            *entry = (now, 0);
        }
        // Rounded up: a client that waits this long finds the window reset.
        let left = self.window.saturating_sub(now.duration_since(entry.0));
        let reset = (left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1);
        if entry.1 >= self.limit {
            return RateDecision {
                allowed: false,
                limit: self.limit,
                remaining: 0,
                reset_seconds: reset,
                scope: self.scope,
            };
        }
        entry.1 += 1;
        RateDecision {
            allowed: true,
            limit: self.limit,
            remaining: self.limit - entry.1,
            reset_seconds: reset,
            scope: self.scope,
        }
    }

    /// Counts one request for `key` now: in the database when the limiter is shared, else
    /// (or when the database cannot be reached) in this process's memory.
    pub async fn check(&self, key: &str) -> RateDecision {
        let Some(shared) = self
            .shared
            .as_ref()
            .filter(|shared| !shared.in_memory_now())
        else {
            return self.check_at(key, Instant::now());
        };
        let stored_key = if key.len() > MAX_STORED_KEY {
            format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))
        } else {
            key.to_owned()
        };
        let window_ms = i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX);
        let mut hits = 1;
        if let Some(batches) = &self.batches {
            match batches.count_locally(&stored_key, self.limit, self.scope) {
                Ok(decision) => return decision,
                Err(unflushed) => hits = unflushed,
            }
        }
        let counted = shared
            .store
            .count_rate_hits(
                self.scope,
                &stored_key,
                window_ms,
                i64::from(hits),
                i64::from(self.limit) + 1,
            )
            .await;
        shared.maybe_prune();
        if let (Some(batches), Ok(hit)) = (&self.batches, &counted) {
            batches.learn(&stored_key, *hit);
        }
        match counted {
            Ok(hit) => {
                let hits = u32::try_from(hit.hits).unwrap_or(u32::MAX);
                let reset_ms = u64::try_from(hit.resets_in_ms).unwrap_or(0);
                // Rounded up: a client that waits this long finds the window reset.
                let reset_seconds = reset_ms.div_ceil(1000).max(1);
                RateDecision {
                    allowed: hits <= self.limit,
                    limit: self.limit,
                    remaining: self.limit.saturating_sub(hits),
                    reset_seconds,
                    scope: self.scope,
                }
            }
            Err(error) => {
                // The request itself will meet the outage (and answer 503) if it needs the
                // database; one that does not is limited by this process alone meanwhile.
                tracing::debug!(%error, scope = self.scope, "shared rate limit unavailable; counting in memory");
                shared.count_in_memory_for(MEMORY_AFTER_FAILURE);
                self.check_at(key, Instant::now())
            }
        }
    }
}

impl Batches {
    /// Counts one hit for `key` in memory when this process's view of its window is recent
    /// enough: the decision. Otherwise the hits to add to the database now, this one
    /// included (the caller adds them and [`Batches::learn`]s the answer).
    fn count_locally(
        &self,
        key: &str,
        limit: u32,
        scope: &'static str,
    ) -> Result<RateDecision, u32> {
        let now = Instant::now();
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if keys.len() >= SWEEP_AT {
            keys.retain(|_, window| now < window.ends_at);
        }
        let Some(window) = keys.get_mut(key).filter(|window| now < window.ends_at) else {
            return Err(1);
        };
        let counted = window.shared_hits.saturating_add(window.pending);
        let left = window.ends_at.duration_since(now);
        let reset_seconds = (left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1);
        if counted >= limit {
            // Refused here: another process's hits can only bring the refusal closer.
            return Ok(RateDecision {
                allowed: false,
                limit,
                remaining: 0,
                reset_seconds,
                scope,
            });
        }
        if window.pending + 1 >= BATCH_HITS || now.duration_since(window.flushed_at) >= BATCH_AGE {
            // Added to the database by this request; others meanwhile count on from zero.
            let hits = window.pending + 1;
            window.pending = 0;
            window.flushed_at = now;
            window.shared_hits = counted;
            return Err(hits);
        }
        window.pending += 1;
        Ok(RateDecision {
            allowed: true,
            limit,
            remaining: limit - counted - 1,
            reset_seconds,
            scope,
        })
    }

    /// Takes in the database's count after this process added its hits.
    fn learn(&self, key: &str, hit: tidings_store::RateWindowHit) {
        let now = Instant::now();
        let ends_at = now + Duration::from_millis(u64::try_from(hit.resets_in_ms).unwrap_or(0));
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let window = keys.entry(key.to_owned()).or_insert(BatchedWindow {
            shared_hits: 0,
            pending: 0,
            ends_at,
            flushed_at: now,
        });
        window.shared_hits = u32::try_from(hit.hits).unwrap_or(u32::MAX);
        window.ends_at = ends_at;
        window.flushed_at = now;
    }
}

impl SharedWindows {
    /// Whether the database recently failed to count, so memory counts for now.
    fn in_memory_now(&self) -> bool {
        Instant::now() < *self.memory_until.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts in memory for `period` from now.
    fn count_in_memory_for(&self, period: Duration) {
        *self.memory_until.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now() + period;
    }

    /// Deletes expired windows in the background when [`PRUNE_EVERY`] has passed since this
    /// process last did.
    fn maybe_prune(&self) {
        let now = Instant::now();
        {
            let mut next = self.next_prune.lock().unwrap_or_else(|p| p.into_inner());
            if now < *next {
                return;
            }
            *next = now + PRUNE_EVERY;
        }
        let store = self.store.clone();
        tokio::spawn(async move {
            if let Err(error) = store.prune_rate_windows().await {
                tracing::debug!(%error, "pruning expired rate-limit windows failed; next time");
            }
        });
    }
}

/// Sync API requests a minute per user unless configured otherwise.
pub const DEFAULT_SYNC_REQUESTS_PER_MINUTE: u32 = 600;

/// Every limit of the API (F25).
#[derive(Debug)]
pub struct RateLimits {
    /// Requests per signed-in user (120/min).
    pub per_user: RateLimiter,
    /// Feed icon requests per signed-in user (1,200/min), counted apart from `per_user`: the
    /// web UI's list of feeds asks for one icon per subscription as it comes into view, and
    /// a user with a few hundred feeds scrolling it used up the 120 a minute, after which
    /// every other request of theirs (the items, marking read) was refused for the rest of
    /// the minute. An icon is a small cached read (browsers keep it a day).
    pub icons_per_user: RateLimiter,
    /// Subscribe requests per user (10/min).
    pub subscribe: RateLimiter,
    /// Requests without credentials per client address (100/min).
    pub anonymous: RateLimiter,
    /// Sign-in attempts per client address (5/min).
    pub login_per_ip: RateLimiter,
    /// Sign-in attempts per account (10/min), so that many addresses cannot guess one
    /// account's password quickly.
    pub login_per_account: RateLimiter,
    /// Requests per user to the sync APIs for apps (600/min unless configured): an app's
    /// first sync pages through every item, 50 at a time for Fever.
    pub sync_per_user: RateLimiter,
}

impl RateLimits {
    /// The limits of F25.
    pub fn standard() -> RateLimits {
        let minute = Duration::from_secs(60);
        RateLimits {
            per_user: RateLimiter::new(120, minute).scoped("user"),
            icons_per_user: RateLimiter::new(1_200, minute).scoped("icons"),
            subscribe: RateLimiter::new(10, minute).scoped("subscribe"),
            anonymous: RateLimiter::new(100, minute).scoped("address"),
            login_per_ip: RateLimiter::new(5, minute).scoped("sign-in"),
            login_per_account: RateLimiter::new(10, minute).scoped("sign-in-account"),
            sync_per_user: RateLimiter::new(DEFAULT_SYNC_REQUESTS_PER_MINUTE, minute)
                .scoped("sync"),
        }
    }

    /// The limits of F25 counted in `store`'s database, shared by every process on it.
    pub fn shared(store: &Store) -> RateLimits {
        let shared = SharedWindows {
            store: store.clone(),
            next_prune: Arc::new(Mutex::new(Instant::now())),
            memory_until: Arc::new(Mutex::new(Instant::now())),
        };
        let standard = RateLimits::standard();
        RateLimits {
            per_user: standard.per_user.shared_in(&shared),
            // A screen of icons arrives at once: batched as the sync limit is.
            icons_per_user: standard.icons_per_user.shared_in(&shared).batched(),
            subscribe: standard.subscribe.shared_in(&shared),
            anonymous: standard.anonymous.shared_in(&shared),
            login_per_ip: standard.login_per_ip.shared_in(&shared),
            login_per_account: standard.login_per_account.shared_in(&shared),
            // Every request of an app's sync hits this one: batched (see `batched`).
            sync_per_user: standard.sync_per_user.shared_in(&shared).batched(),
        }
    }

    /// These limits with `per_minute` sync API requests a minute per user, counted where
    /// the sync limit was counted.
    pub fn with_sync_per_minute(mut self, per_minute: u32) -> RateLimits {
        self.sync_per_user = self.sync_per_user.with_limit(per_minute);
        self
    }

    /// The limits for a server on `store`: shared in the database on PostgreSQL, where
    /// several replicas may run; in memory on SQLite, which one process serves.
    pub fn for_store(store: &Store) -> RateLimits {
        match store.engine() {
            Engine::Postgres => RateLimits::shared(store),
            Engine::Sqlite => RateLimits::standard(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_down_refuses_then_resets() {
        let limiter = RateLimiter::new(3, Duration::from_secs(60));
        let t0 = Instant::now();
        let remaining: Vec<u32> = (0..3)
            .map(|_| limiter.check_at("k", t0).remaining)
            .collect();
        assert_eq!(remaining, [2, 1, 0]);
        let refused = limiter.check_at("k", t0 + Duration::from_secs(10));
        assert!(!refused.allowed);
        assert_eq!(refused.reset_seconds, 50);
        assert!(
            limiter.check_at("other", t0).allowed,
            "keys are independent"
        );
        let next = limiter.check_at("k", t0 + Duration::from_secs(60));
        assert!(next.allowed);
        assert_eq!(next.remaining, 2);
    }

    /// A migrated SQLite store in a temporary folder (kept while the folder is).
    async fn sqlite_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&tidings_store::StoreOptions::new(url))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn a_database_that_cannot_count_leaves_counting_to_memory() {
        let (_dir, store) = sqlite_store().await;
        let limits = RateLimits::shared(&store);
        let first = limits.login_per_ip.check("192.0.2.1").await;
        assert_eq!((first.allowed, first.remaining), (true, 4));
        // Counted in the database, where another process would see it.
        let seen = store
            .count_rate_hit("sign-in", "192.0.2.1", 60_000, 6)
            .await
            .unwrap();
        assert_eq!(seen.hits, 2);

        store.close().await;
        let during = limits.login_per_ip.check("192.0.2.1").await;
        assert_eq!(
            (during.allowed, during.remaining),
            (true, 4),
            "counted in memory"
        );
        let shared = limits.login_per_ip.shared.as_ref().unwrap();
        assert!(
            shared.in_memory_now(),
            "the database is left alone for a while"
        );
        let again = limits.login_per_ip.check("192.0.2.1").await;
        assert_eq!(again.remaining, 3);
    }

    #[tokio::test]
    async fn a_batched_limit_is_exact_in_one_process_and_writes_a_batch_at_a_time() {
        let (_dir, store) = sqlite_store().await;
        let limits = RateLimits::shared(&store).with_sync_per_minute(25);
        // Reads the shared count without adding to it (a cap of 1 keeps it).
        let stored = async || {
            store
                .count_rate_hit("sync", "user:1", 60_000, 1)
                .await
                .unwrap()
                .hits
        };
        for n in 1..=25 {
            let decision = limits.sync_per_user.check("user:1").await;
            assert!(decision.allowed, "request {n}");
            assert_eq!(decision.remaining, 25 - n);
            if n == 10 {
                assert_eq!(stored().await, 1, "one write for the first ten");
            }
        }
        let refused = limits.sync_per_user.check("user:1").await;
        assert!(!refused.allowed);
        assert!((1..=60).contains(&refused.reset_seconds));
        assert_eq!(stored().await, 21, "hits 1, 2-11 and 12-21 were written");

        // Another process on the database learns the count at its first request, and is
        // over the limit at most by what the first had not yet written.
        let other = RateLimits::shared(&store).with_sync_per_minute(25);
        let mut admitted = 0;
        while other.sync_per_user.check("user:1").await.allowed {
            admitted += 1;
            assert!(admitted <= BATCH_HITS, "{admitted} admitted");
        }
        assert_eq!(admitted, 4, "21 written, 4 left");
    }

    #[test]
    fn many_keys_are_swept() {
        let limiter = RateLimiter::new(1, Duration::from_secs(1));
        let t0 = Instant::now();
        for i in 0..SWEEP_AT {
            limiter.check_at(&i.to_string(), t0);
        }
        limiter.check_at("late", t0 + Duration::from_secs(2));
        assert!(limiter.windows.lock().unwrap().len() < 10);
    }
}
