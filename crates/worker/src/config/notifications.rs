//! The notification job's settings (F43): parallelism, pace, breaker, where Discord and Slack
//! are reached. The job is in [`crate::notifications`].

use std::time::Duration;

use tidings_notify::{DeliveryPolicy, Endpoints};
use tidings_store::MatchSettings;

/// Channels sent to at once per worker, by default.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// How often an idle notification job looks for new items and due messages, by default.
pub const DEFAULT_POLL: Duration = Duration::from_secs(5);
/// Time for one delivery, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Items queued longer than this are dropped (logged), by default.
pub const DEFAULT_MAX_QUEUE_AGE: Duration = Duration::from_secs(24 * 3600);

/// Notification settings of a worker. `Default` is on, with the product's pace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationConfig {
    /// Channels sent to at once; 0 turns notifications off in this process (items stay
    /// unmatched until a process with them on takes them).
    pub concurrency: usize,
    /// How often an idle job looks for work.
    pub poll: Duration,
    /// Time for one delivery (connect, send, answer).
    pub timeout: Duration,
    /// Pace, back-off and circuit breaker per channel.
    pub policy: DeliveryPolicy,
    /// Where Discord and Slack are reached.
    pub endpoints: Endpoints,
    /// Items queued longer than this are dropped.
    pub max_queue_age: Duration,
    /// How the matcher judges new items.
    pub matching: MatchSettings,
}

impl Default for NotificationConfig {
    fn default() -> NotificationConfig {
        NotificationConfig {
            concurrency: DEFAULT_CONCURRENCY,
            poll: DEFAULT_POLL,
            timeout: DEFAULT_TIMEOUT,
            policy: DeliveryPolicy::default(),
            endpoints: Endpoints::default(),
            max_queue_age: DEFAULT_MAX_QUEUE_AGE,
            matching: MatchSettings::default(),
        }
    }
}
