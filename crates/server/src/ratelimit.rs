//! Fixed-window rate limits (F25), kept in the process's memory.
//!
//! A window per key and minute: simple to reason about and it gives the exact
//! `X-RateLimit-Limit / -Remaining / -Reset` values clients expect. With several replicas
//! each keeps its own counts, so the effective limit is per replica (see the README).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
}

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
        }
    }

    /// The same limiter, named `scope` in its answers' `X-RateLimit-Scope`.
    pub fn scoped(mut self, scope: &'static str) -> RateLimiter {
        self.scope = scope;
        self
    }

    /// Counts one request for `key` at `now`.
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

    /// Counts one request for `key` now.
    pub fn check(&self, key: &str) -> RateDecision {
        self.check_at(key, Instant::now())
    }
}

/// Every limit of the API (F25).
#[derive(Debug)]
pub struct RateLimits {
    /// Requests per signed-in user (120/min).
    pub per_user: RateLimiter,
    /// Subscribe requests per user (10/min).
    pub subscribe: RateLimiter,
    /// Requests without credentials per client address (100/min).
    pub anonymous: RateLimiter,
    /// Sign-in attempts per client address (5/min).
    pub login_per_ip: RateLimiter,
    /// Sign-in attempts per account (10/min), so that many addresses cannot guess one
    /// account's password quickly.
    pub login_per_account: RateLimiter,
    /// Requests per user to the sync APIs for apps (600/min): an app's first sync pages
    /// through every item, 50 at a time for Fever.
    pub sync_per_user: RateLimiter,
}

impl RateLimits {
    /// The limits of F25.
    pub fn standard() -> RateLimits {
        let minute = Duration::from_secs(60);
        RateLimits {
            per_user: RateLimiter::new(120, minute).scoped("user"),
            subscribe: RateLimiter::new(10, minute).scoped("subscribe"),
            anonymous: RateLimiter::new(100, minute).scoped("address"),
            login_per_ip: RateLimiter::new(5, minute).scoped("sign-in"),
            login_per_account: RateLimiter::new(10, minute).scoped("sign-in-account"),
            sync_per_user: RateLimiter::new(600, minute).scoped("sync"),
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
