//! Pacing, retries and the circuit breaker of one channel.
//!
//! - **Rate limit:** at most one message per [`DeliveryPolicy::spacing`] per channel (2 s by
//!   default: Discord allows about 30 messages a minute per webhook, Slack one a second), and
//!   never before the wait a service asked for (429 `retry_after`, `Retry-After`).
//! - **Retries:** a failed message that may work later is tried again after a back-off that
//!   doubles from [`DeliveryPolicy::backoff_base`] up to [`DeliveryPolicy::max_backoff`]; its
//!   items are dropped (and the drop logged) after [`DeliveryPolicy::max_attempts`] attempts,
//!   or at once when the answer will not change (404, 400, a refused address).
//! - **Circuit breaker:** after [`DeliveryPolicy::breaker_threshold`] failures in a row the
//!   channel rests for [`DeliveryPolicy::breaker_pause`]; then one message tries it
//!   (half-open): success closes the breaker, failure opens it again. Items keep queueing
//!   meanwhile, up to the queue's age limit.

use std::time::Duration;

use crate::send::DeliveryError;

/// Delivery settings shared by every channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryPolicy {
    /// The least time between two messages to one channel.
    pub spacing: Duration,
    /// The first retry's wait.
    pub backoff_base: Duration,
    /// The longest retry wait.
    pub max_backoff: Duration,
    /// Attempts at one message before its items are dropped.
    pub max_attempts: u32,
    /// Failures in a row that open the breaker.
    pub breaker_threshold: u32,
    /// How long an open breaker rests the channel.
    pub breaker_pause: Duration,
}

/// [`DeliveryPolicy::spacing`] by default.
pub const DEFAULT_SPACING: Duration = Duration::from_secs(2);
/// [`DeliveryPolicy::backoff_base`] by default.
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(10);
/// [`DeliveryPolicy::max_backoff`] by default.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
/// [`DeliveryPolicy::max_attempts`] by default.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 6;
/// [`DeliveryPolicy::breaker_threshold`] by default (as the catchup-feed seed).
pub const DEFAULT_BREAKER_THRESHOLD: u32 = 5;
/// [`DeliveryPolicy::breaker_pause`] by default (as the catchup-feed seed).
pub const DEFAULT_BREAKER_PAUSE: Duration = Duration::from_secs(5 * 60);

impl Default for DeliveryPolicy {
    fn default() -> DeliveryPolicy {
        DeliveryPolicy {
            spacing: DEFAULT_SPACING,
            backoff_base: DEFAULT_BACKOFF_BASE,
            max_backoff: DEFAULT_MAX_BACKOFF,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            breaker_threshold: DEFAULT_BREAKER_THRESHOLD,
            breaker_pause: DEFAULT_BREAKER_PAUSE,
        }
    }
}

/// What to do after a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the message's items leave the queue (sent, or dropped for good).
    pub done: bool,
    /// The channel's failures in a row after this delivery.
    pub failures: u32,
    /// How long before the channel's next message.
    pub wait: Duration,
    /// Whether this delivery opened the breaker.
    pub opened_breaker: bool,
    /// The log's word for it: `sent`, `retrying`, `dropped`.
    pub status: &'static str,
}

impl DeliveryPolicy {
    /// The wait before retry number `attempt` (1 = the first retry).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1).min(31))
            .unwrap_or(u32::MAX);
        self.backoff_base
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }

    /// The verdict on a message after its `attempts`-th attempt (1 = first) given the
    /// channel's `failures` in a row before it.
    pub fn judge(
        &self,
        result: Result<(), &DeliveryError>,
        attempts: u32,
        failures: u32,
    ) -> Verdict {
        let error = match result {
            Ok(()) => {
                return Verdict {
                    done: true,
                    failures: 0,
                    wait: self.spacing,
                    opened_breaker: false,
                    status: "sent",
                };
            }
            Err(error) => error,
        };
        let failures = failures.saturating_add(1);
        let opened_breaker = failures >= self.breaker_threshold;
        let give_up = !error.retryable || attempts >= self.max_attempts;
        let mut wait = if give_up {
            self.spacing
        } else {
            self.backoff(attempts)
        };
        if let Some(asked) = error.retry_after {
            wait = wait.max(asked);
        }
        if opened_breaker {
            wait = wait.max(self.breaker_pause);
        }
        // A 429 is the service pacing us, not the channel failing: it never gives up items
        // early (their age limit still holds).
        let rate_limited = error.status == Some(429);
        Verdict {
            done: give_up && !rate_limited,
            failures,
            wait: wait.max(self.spacing),
            opened_breaker,
            status: if give_up && !rate_limited {
                "dropped"
            } else {
                "retrying"
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(status: Option<u16>, retryable: bool, retry_after: Option<u64>) -> DeliveryError {
        DeliveryError {
            status,
            message: "x".into(),
            retryable,
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let policy = DeliveryPolicy::default();
        assert_eq!(policy.backoff(1), Duration::from_secs(10));
        assert_eq!(policy.backoff(2), Duration::from_secs(20));
        assert_eq!(policy.backoff(4), Duration::from_secs(80));
        assert_eq!(policy.backoff(40), policy.max_backoff);
    }

    #[test]
    fn failures_retry_then_drop_and_open_the_breaker() {
        let policy = DeliveryPolicy::default();
        let sent = policy.judge(Ok(()), 3, 4);
        assert_eq!((sent.done, sent.failures, sent.status), (true, 0, "sent"));
        assert_eq!(sent.wait, policy.spacing);
        let e500 = error(Some(500), true, None);
        let retry = policy.judge(Err(&e500), 1, 0);
        assert_eq!(
            (retry.done, retry.failures, retry.status),
            (false, 1, "retrying")
        );
        assert_eq!(retry.wait, Duration::from_secs(10));
        let last = policy.judge(Err(&e500), policy.max_attempts, 1);
        assert_eq!((last.done, last.status), (true, "dropped"));
        let gone = policy.judge(Err(&error(Some(404), false, None)), 1, 0);
        assert_eq!((gone.done, gone.status), (true, "dropped"));
        let open = policy.judge(Err(&e500), 1, policy.breaker_threshold - 1);
        assert!(open.opened_breaker);
        assert_eq!(open.wait, policy.breaker_pause);
    }

    #[test]
    fn a_429_waits_as_asked_and_keeps_its_items() {
        let policy = DeliveryPolicy::default();
        let limited = policy.judge(
            Err(&error(Some(429), true, Some(30))),
            policy.max_attempts,
            0,
        );
        assert!(!limited.done);
        assert_eq!(limited.status, "retrying");
        assert_eq!(limited.wait, Duration::from_secs(30));
    }
}
