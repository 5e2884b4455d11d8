//! Popularity's settings (F40): the count source and its pace. The job is in
//! [`crate::popularity`].

use std::time::Duration;

use url::Url;

/// The least time between two calls to a count source, by default.
pub const DEFAULT_SPACING: Duration = Duration::from_secs(5);
/// The most calls to a count source per cycle, by default.
pub const DEFAULT_MAX_CALLS_PER_CYCLE: u32 = 100;
/// A cycle's length, by default: 100 calls 5 s apart take 500 s of it.
pub const DEFAULT_CYCLE: Duration = Duration::from_secs(10 * 60);
/// How long a count is kept before it is fetched again, by default.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Only items published this recently get counts, by default: the hot list's longest window.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);
/// The longest wait after failed calls, by default.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(6 * 3600);

/// Which count source the worker asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PopularitySource {
    /// Hatena Bookmark's bulk count endpoint at this base URL.
    Hatena {
        /// The API's base, e.g. [`crate::popularity::HATENA_BASE_URL`] or a stand-in's address.
        base_url: Url,
    },
}

/// Popularity settings of a worker. `Default` is off, with the product's pace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopularityConfig {
    /// The count source; `None` turns popularity off (nothing is fetched).
    pub source: Option<PopularitySource>,
    /// The least time between the starts of two calls.
    pub spacing: Duration,
    /// The most calls per cycle.
    pub max_calls_per_cycle: u32,
    /// A cycle's length.
    pub cycle: Duration,
    /// How long a count is kept before it is fetched again.
    pub ttl: Duration,
    /// Only items published this recently get counts; older ones keep their last.
    pub window: Duration,
    /// The longest wait after failed calls.
    pub max_backoff: Duration,
}

impl Default for PopularityConfig {
    fn default() -> PopularityConfig {
        PopularityConfig {
            source: None,
            spacing: DEFAULT_SPACING,
            max_calls_per_cycle: DEFAULT_MAX_CALLS_PER_CYCLE,
            cycle: DEFAULT_CYCLE,
            ttl: DEFAULT_TTL,
            window: DEFAULT_WINDOW,
            max_backoff: DEFAULT_MAX_BACKOFF,
        }
    }
}

impl PopularityConfig {
    /// The wait before the next call after `failures` consecutive failed calls: the spacing
    /// doubled per failure, at most [`PopularityConfig::max_backoff`].
    pub fn backoff(&self, failures: u32) -> Duration {
        let doubled = self
            .spacing
            .checked_mul(1u32.checked_shl(failures.min(31)).unwrap_or(u32::MAX))
            .unwrap_or(self.max_backoff);
        doubled.min(self.max_backoff).max(self.spacing)
    }
}
