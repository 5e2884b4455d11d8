//! A circuit breaker for one summary provider: after a run of failures it stops asking the
//! provider for a while, so that a provider that is down costs neither requests nor waiting.
//!
//! Closed (requests go through) → open after [`BreakerConfig::failures_to_open`] failures in a
//! row (requests are refused until [`BreakerConfig::open_for`] has passed) → half-open (one
//! trial request at a time) → closed after [`BreakerConfig::successes_to_close`] successes in
//! a row; a failure while half-open opens it again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When a breaker opens and closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Failures in a row that open the breaker.
    pub failures_to_open: u32,
    /// How long an open breaker refuses requests before it lets a trial through.
    pub open_for: Duration,
    /// Successes in a row, while half-open, that close it.
    pub successes_to_close: u32,
}

impl Default for BreakerConfig {
    /// The catchup-feed seed's values: 5 failures, 1 minute, 2 successes.
    fn default() -> BreakerConfig {
        BreakerConfig {
            failures_to_open: 5,
            open_for: Duration::from_secs(60),
            successes_to_close: 2,
        }
    }
}

/// The state a breaker is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Requests go through.
    Closed,
    /// Requests are refused until the time given.
    Open,
    /// Trial requests go through one at a time.
    HalfOpen,
}

#[derive(Debug)]
struct Inner {
    state: BreakerState,
    failures: u32,
    successes: u32,
    opened_at: Option<Instant>,
    trial_in_flight: bool,
}

/// A circuit breaker (see the module documentation). Shared by every request of a process to
/// one provider.
#[derive(Debug)]
pub struct Breaker {
    config: BreakerConfig,
    inner: Mutex<Inner>,
}

/// A request the breaker let through; report its outcome with [`Breaker::record`].
#[derive(Debug)]
#[must_use = "report the request's outcome with Breaker::record"]
pub struct Permit {
    trial: bool,
}

impl Breaker {
    /// A closed breaker.
    pub fn new(config: BreakerConfig) -> Breaker {
        Breaker {
            config,
            inner: Mutex::new(Inner {
                state: BreakerState::Closed,
                failures: 0,
                successes: 0,
                opened_at: None,
                trial_in_flight: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counters only: still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The breaker's state now.
    pub fn state(&self) -> BreakerState {
        let mut inner = self.lock();
        self.advance(&mut inner);
        inner.state
    }

    /// Open → half-open once `open_for` has passed.
    fn advance(&self, inner: &mut Inner) {
        if inner.state == BreakerState::Open
            && inner
                .opened_at
                .is_some_and(|at| at.elapsed() >= self.config.open_for)
        {
            inner.state = BreakerState::HalfOpen;
            inner.successes = 0;
            inner.trial_in_flight = false;
        }
    }

    /// Lets a request through, or answers how long until one may be tried.
    pub fn try_acquire(&self) -> Result<Permit, Duration> {
        let mut inner = self.lock();
        self.advance(&mut inner);
        match inner.state {
            BreakerState::Closed => Ok(Permit { trial: false }),
            BreakerState::HalfOpen if !inner.trial_in_flight => {
                inner.trial_in_flight = true;
                Ok(Permit { trial: true })
            }
            // A trial is out: the next may go when it comes back; a short wait.
            BreakerState::HalfOpen => Err(Duration::from_secs(1).min(self.config.open_for)),
            BreakerState::Open => {
                let since = inner.opened_at.map_or(Duration::ZERO, |at| at.elapsed());
                Err(self.config.open_for.saturating_sub(since))
            }
        }
    }

    /// Gives a permit back unused (the request was not made): nothing is counted.
    pub fn cancel(&self, permit: Permit) {
        if permit.trial {
            self.lock().trial_in_flight = false;
        }
    }

    /// Records a request's outcome.
    pub fn record(&self, permit: Permit, success: bool) {
        let mut inner = self.lock();
        if permit.trial {
            inner.trial_in_flight = false;
        }
        if success {
            inner.failures = 0;
            if inner.state == BreakerState::HalfOpen {
                inner.successes += 1;
                if inner.successes >= self.config.successes_to_close {
                    inner.state = BreakerState::Closed;
                    inner.successes = 0;
                }
            }
            return;
        }
        inner.successes = 0;
        inner.failures = inner.failures.saturating_add(1);
        if inner.state == BreakerState::HalfOpen
            || (inner.state == BreakerState::Closed
                && inner.failures >= self.config.failures_to_open)
        {
            inner.state = BreakerState::Open;
            inner.opened_at = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(open_for: Duration) -> Breaker {
        Breaker::new(BreakerConfig {
            failures_to_open: 3,
            open_for,
            successes_to_close: 2,
        })
    }

    #[test]
    fn opens_after_failures_in_a_row_only() {
        let b = breaker(Duration::from_secs(60));
        for _ in 0..2 {
            let p = b.try_acquire().unwrap();
            b.record(p, false);
        }
        // A success in between starts the count again.
        let p = b.try_acquire().unwrap();
        b.record(p, true);
        for _ in 0..2 {
            let p = b.try_acquire().unwrap();
            b.record(p, false);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        let p = b.try_acquire().unwrap();
        b.record(p, false);
        assert_eq!(b.state(), BreakerState::Open);
        let wait = b.try_acquire().unwrap_err();
        assert!(
            wait > Duration::from_secs(55) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
    }

    #[test]
    fn half_open_lets_one_trial_through_and_closes_after_successes() {
        let b = breaker(Duration::from_millis(30));
        for _ in 0..3 {
            let p = b.try_acquire().unwrap();
            b.record(p, false);
        }
        assert!(b.try_acquire().is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        let trial = b.try_acquire().unwrap();
        assert!(
            b.try_acquire().is_err(),
            "a second request while the trial is out"
        );
        b.record(trial, true);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        let trial = b.try_acquire().unwrap();
        b.record(trial, true);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_failed_trial_opens_it_again() {
        let b = breaker(Duration::from_millis(30));
        for _ in 0..3 {
            let p = b.try_acquire().unwrap();
            b.record(p, false);
        }
        std::thread::sleep(Duration::from_millis(40));
        let trial = b.try_acquire().unwrap();
        b.record(trial, false);
        assert_eq!(b.state(), BreakerState::Open);
    }
}
