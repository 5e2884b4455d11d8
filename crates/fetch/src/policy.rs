//! When to check a feed next, and what state it is in (F10, F12, F14), as a pure function.
//!
//! [`decide`] takes the clock reading, what the last fetch did and the feed's counters, and
//! returns the next check time, the status, the new counters and the text the UI shows. It
//! reads no clock and does no I/O, so every rule is tested directly. Header values come
//! straight from the network: every one of them may be malformed, negative or absurdly
//! large, and none of them can make this panic or overflow.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};

/// The shortest interval a subscriber can choose.
pub const MIN_INTERVAL: Duration = Duration::from_secs(30 * 60);
/// The longest interval a subscriber can choose.
pub const MAX_INTERVAL: Duration = Duration::from_secs(720 * 60);
/// The interval of a subscription that did not choose one.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// The feed's effective interval: the shortest of its subscribers' intervals (given in
/// minutes, each clamped to 30–720), or `None` when nobody subscribes and the feed is not
/// scheduled at all (F10, F17).
pub fn effective_interval(subscriber_minutes: impl IntoIterator<Item = u32>) -> Option<Duration> {
    subscriber_minutes
        .into_iter()
        .map(|minutes| clamp_interval(Duration::from_secs(u64::from(minutes) * 60)))
        .min()
}

fn clamp_interval(interval: Duration) -> Duration {
    interval.clamp(MIN_INTERVAL, MAX_INTERVAL)
}

/// The policy's knobs. `Default` is the product's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// No check is ever scheduled further out than this (12 h).
    pub max_delay: Duration,
    /// The first backoff step; each further failure doubles it (30 min).
    pub backoff_base: Duration,
    /// Consecutive parse failures that stop a feed (10).
    pub parse_failure_limit: u32,
}

impl Default for PolicyConfig {
    fn default() -> PolicyConfig {
        PolicyConfig {
            max_delay: Duration::from_secs(12 * 60 * 60),
            backoff_base: Duration::from_secs(30 * 60),
            parse_failure_limit: 10,
        }
    }
}

/// The response headers that bear on scheduling, as received (unparsed, possibly bogus).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// `Retry-After`: delta-seconds or an HTTP-date.
    pub retry_after: Option<String>,
    /// `Cache-Control`, several header lines joined with ", ".
    pub cache_control: Option<String>,
    /// `Expires`: an HTTP-date; anything else means "already expired".
    pub expires: Option<String>,
    /// `Date`: the server's clock, against which `Expires` and a `Retry-After` date are
    /// measured so that a skewed server clock does not skew the schedule.
    pub date: Option<String>,
}

/// Why a fetch got no HTTP response, in the categories the policy and metrics need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The whole fetch took too long.
    Timeout,
    /// DNS, TCP or TLS failed.
    Connect,
    /// The body passed the size limit.
    BodyTooLarge,
    /// The SSRF guard refused the URL, a redirect or an address.
    Refused,
    /// Too many redirects, or a redirect without a usable target.
    Redirect,
    /// The feed's URL itself is not a URL.
    InvalidUrl,
    /// The feed's proxy setting is unusable.
    InvalidProxy,
    /// Any other protocol-level failure.
    Http,
}

impl FailureKind {
    /// A stable lower-case name, for metric labels and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::Connect => "connect",
            FailureKind::BodyTooLarge => "body_too_large",
            FailureKind::Refused => "refused",
            FailureKind::Redirect => "redirect",
            FailureKind::InvalidUrl => "invalid_url",
            FailureKind::InvalidProxy => "invalid_proxy",
            FailureKind::Http => "http",
        }
    }

    /// Whether retrying later can help. Refusals and bad settings need a person (the feed
    /// stops until resumed); everything else is retried with backoff.
    pub fn is_transient(self) -> bool {
        !matches!(
            self,
            FailureKind::Refused | FailureKind::InvalidUrl | FailureKind::InvalidProxy
        )
    }
}

/// What became of the body of a successful response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseResult {
    /// Parsed into a feed.
    Parsed,
    /// Not parsed because there was nothing new (a 304, or a body identical to the stored one).
    Skipped,
    /// The body is not a feed this reader understands; the message is shown to the user.
    Failed(String),
}

/// What the last fetch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered, with any status.
    Response {
        /// The final status, after redirects.
        status: u16,
        /// The scheduling headers of that answer.
        hints: CacheHints,
        /// What became of the body (only looked at for 2xx).
        parse: ParseResult,
        /// Where the feed moved for good (301/308 chain), if it did.
        permanent_redirect: Option<String>,
    },
    /// No answer.
    Failed {
        /// The category.
        kind: FailureKind,
        /// The error as the user should read it.
        message: String,
    },
}

/// The feed's counters before (as input) or after (as output) a fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailureCounts {
    /// Fetches in a row that failed (no answer, or an error status).
    pub consecutive_failures: u32,
    /// Successful fetches in a row whose body could not be parsed.
    pub consecutive_parse_failures: u32,
}

/// The feed's state as the UI shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeedStatus {
    /// Fetched on its interval.
    Active,
    /// Failing for a reason that may pass; retried with growing delays.
    Backoff,
    /// Not fetched until a user resumes it (F15).
    Stopped,
}

impl FeedStatus {
    /// The stored and displayed name: "active", "backoff", "stopped".
    pub fn as_str(self) -> &'static str {
        match self {
            FeedStatus::Active => "active",
            FeedStatus::Backoff => "backoff",
            FeedStatus::Stopped => "stopped",
        }
    }
}

/// When the feed is checked next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextCheck {
    /// At this time.
    At(DateTime<Utc>),
    /// Not until a user resumes the feed.
    WhenResumed,
    /// Not at all: nobody subscribes to the feed.
    NotScheduled,
}

/// What [`decide`] concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The feed's new status.
    pub status: FeedStatus,
    /// When to check it next.
    pub next_check: NextCheck,
    /// The counters to store.
    pub counts: FailureCounts,
    /// Why the feed is not healthy, for the UI (`None` when it is).
    pub reason: Option<String>,
    /// The HTTP status of the last answer, kept for the UI (`None` when there was none).
    pub http_status: Option<u16>,
    /// The feed's URL should become this (a permanent redirect on a successful fetch);
    /// the store merges the feed into an existing one with that URL.
    pub new_url: Option<String>,
}

/// Decides what follows a fetch. `interval` is the feed's effective interval (see
/// [`effective_interval`]; clamped to 30–720 min here too), `None` when nobody subscribes.
///
/// - 2xx/304: `active`, next = now + max(interval, Retry-After, freshness from Cache-Control
///   max-age or Expires), at most `max_delay`; failure counter reset. A parse failure counts
///   towards `parse_failure_limit`, which stops the feed.
/// - 404, 410, 401, 403, and refusals or unusable settings: `stopped` until resumed.
/// - 429, 5xx, other statuses, timeouts, connection errors: `backoff`; next = now +
///   max(interval, Retry-After, backoff_base × 2^(failures − 1)), at most `max_delay`.
pub fn decide(
    config: &PolicyConfig,
    now: DateTime<Utc>,
    outcome: &Outcome,
    counts: FailureCounts,
    interval: Option<Duration>,
) -> Decision {
    let interval_secs = interval.map(|i| clamp_interval(i).as_secs());
    let max_delay = config.max_delay.as_secs();
    let schedule = |delay_secs: u64| match interval_secs {
        Some(_) => NextCheck::At(add_seconds(now, delay_secs.min(max_delay))),
        None => NextCheck::NotScheduled,
    };
    let interval_secs_or_zero = interval_secs.unwrap_or(0);

    let (status, hints, parse, permanent_redirect) = match outcome {
        Outcome::Response {
            status,
            hints,
            parse,
            permanent_redirect,
        } => (*status, hints, parse, permanent_redirect),
        Outcome::Failed { kind, message } => {
            let failures = counts.consecutive_failures.saturating_add(1);
            let counts = FailureCounts {
                consecutive_failures: failures,
                ..counts
            };
            if !kind.is_transient() {
                return stopped(counts, message.clone(), None);
            }
            let delay = interval_secs_or_zero.max(backoff_seconds(config, failures));
            return Decision {
                status: FeedStatus::Backoff,
                next_check: schedule(delay),
                counts,
                reason: Some(message.clone()),
                http_status: None,
                new_url: None,
            };
        }
    };

    match status {
        200..=299 | 304 => {
            let delay = interval_secs_or_zero
                .max(retry_after_seconds(hints, now).unwrap_or(0))
                .max(freshness_seconds(hints, now));
            let mut decision = Decision {
                status: FeedStatus::Active,
                next_check: schedule(delay),
                counts: FailureCounts {
                    consecutive_failures: 0,
                    consecutive_parse_failures: counts.consecutive_parse_failures,
                },
                reason: None,
                http_status: Some(status),
                new_url: permanent_redirect.clone(),
            };
            match parse {
                // A 304 says nothing about whether the body parses; the counter stays.
                _ if status == 304 => {}
                ParseResult::Skipped => {}
                ParseResult::Parsed => decision.counts.consecutive_parse_failures = 0,
                ParseResult::Failed(message) => {
                    let parse_failures = counts.consecutive_parse_failures.saturating_add(1);
                    decision.counts.consecutive_parse_failures = parse_failures;
                    if parse_failures >= config.parse_failure_limit {
                        decision.status = FeedStatus::Stopped;
                        decision.next_check = NextCheck::WhenResumed;
                        decision.reason = Some(format!(
                            "the feed could not be parsed {parse_failures} times in a row: {message}"
                        ));
                    } else {
                        decision.reason = Some(format!("the feed could not be parsed: {message}"));
                    }
                }
            }
            decision
        }
        401 | 403 | 404 | 410 => {
            let counts = FailureCounts {
                consecutive_failures: counts.consecutive_failures.saturating_add(1),
                ..counts
            };
            let why = match status {
                401 => "the feed needs a login",
                403 => "the server refuses to serve the feed",
                404 => "the feed is not at this URL any more",
                _ => "the server says the feed was removed for good",
            };
            stopped(
                counts,
                format!("{}: {why}; resume it to try again", status_text(status)),
                Some(status),
            )
        }
        _ => {
            let failures = counts.consecutive_failures.saturating_add(1);
            let delay = interval_secs_or_zero
                .max(retry_after_seconds(hints, now).unwrap_or(0))
                .max(backoff_seconds(config, failures));
            Decision {
                status: FeedStatus::Backoff,
                next_check: schedule(delay),
                counts: FailureCounts {
                    consecutive_failures: failures,
                    ..counts
                },
                reason: Some(status_text(status)),
                http_status: Some(status),
                new_url: None,
            }
        }
    }
}

fn stopped(counts: FailureCounts, reason: String, http_status: Option<u16>) -> Decision {
    Decision {
        status: FeedStatus::Stopped,
        next_check: NextCheck::WhenResumed,
        counts,
        reason: Some(reason),
        http_status,
        new_url: None,
    }
}

/// "HTTP 503 Service Unavailable", or "HTTP 599" for a status without a standard name.
fn status_text(status: u16) -> String {
    let phrase = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason());
    match phrase {
        Some(phrase) => format!("HTTP {status} {phrase}"),
        None => format!("HTTP {status}"),
    }
}

/// backoff_base × 2^(failures − 1), saturating.
fn backoff_seconds(config: &PolicyConfig, failures: u32) -> u64 {
    let doublings = failures.saturating_sub(1);
    let factor = 1u64.checked_shl(doublings).unwrap_or(u64::MAX);
    let factor = if doublings >= 64 { u64::MAX } else { factor };
    config.backoff_base.as_secs().saturating_mul(factor)
}

/// `now + seconds`, saturating at the end of representable time.
fn add_seconds(now: DateTime<Utc>, seconds: u64) -> DateTime<Utc> {
    i64::try_from(seconds)
        .ok()
        .and_then(TimeDelta::try_seconds)
        .and_then(|delta| now.checked_add_signed(delta))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Seconds the server asked us to wait with `Retry-After`, `None` when absent or malformed.
/// A date is measured from the server's `Date` (from `now` without one); a past date is 0.
pub fn retry_after_seconds(hints: &CacheHints, now: DateTime<Utc>) -> Option<u64> {
    let value = hints.retry_after.as_deref()?.trim();
    if let Some(seconds) = parse_delta_seconds(value) {
        return Some(seconds);
    }
    let at = parse_http_date(value)?;
    Some(seconds_between(server_now(hints, now), at))
}

/// How long the response stays fresh, in seconds: Cache-Control `max-age` (first one wins,
/// a malformed one means stale), else `Expires − Date`; `no-store` and `no-cache` mean 0.
pub fn freshness_seconds(hints: &CacheHints, now: DateTime<Utc>) -> u64 {
    if let Some(cache_control) = hints.cache_control.as_deref() {
        let mut max_age = None;
        for directive in cache_control.split(',') {
            let (name, value) = match directive.split_once('=') {
                Some((name, value)) => (name.trim(), Some(value.trim().trim_matches('"'))),
                None => (directive.trim(), None),
            };
            if name.eq_ignore_ascii_case("no-store") || name.eq_ignore_ascii_case("no-cache") {
                return 0;
            }
            if name.eq_ignore_ascii_case("max-age") && max_age.is_none() {
                max_age = Some(value.and_then(parse_delta_seconds).unwrap_or(0));
            }
        }
        if let Some(max_age) = max_age {
            return max_age;
        }
    }
    match hints.expires.as_deref() {
        // RFC 9111: an Expires that is not a date ("0", "-1") means already expired.
        Some(expires) => parse_http_date(expires.trim())
            .map_or(0, |at| seconds_between(server_now(hints, now), at)),
        None => 0,
    }
}

fn server_now(hints: &CacheHints, now: DateTime<Utc>) -> DateTime<Utc> {
    hints
        .date
        .as_deref()
        .and_then(|date| parse_http_date(date.trim()))
        .unwrap_or(now)
}

/// Whole seconds from `from` to `to`, 0 when `to` is not later.
fn seconds_between(from: DateTime<Utc>, to: DateTime<Utc>) -> u64 {
    u64::try_from(to.signed_duration_since(from).num_seconds()).unwrap_or(0)
}

/// Delta-seconds: ASCII digits only (no sign, no fraction); too many digits saturate.
fn parse_delta_seconds(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse().unwrap_or(u64::MAX))
}

/// An HTTP-date in any of the three forms RFC 9110 makes recipients accept: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and
/// asctime (`Sun Nov  6 08:49:37 1994`).
pub fn parse_http_date(value: &str) -> Option<DateTime<Utc>> {
    if let Ok(date) = DateTime::parse_from_rfc2822(value) {
        return Some(date.with_timezone(&Utc));
    }
    ["%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(value, format).ok())
        .map(|naive| naive.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const MIN: u64 = 60;
    const HOUR: u64 = 3600;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap()
    }

    fn hints() -> CacheHints {
        CacheHints::default()
    }

    fn ok(status: u16, hints: CacheHints) -> Outcome {
        Outcome::Response {
            status,
            hints,
            parse: ParseResult::Parsed,
            permanent_redirect: None,
        }
    }

    fn failed(kind: FailureKind) -> Outcome {
        Outcome::Failed {
            kind,
            message: format!("{} happened", kind.as_str()),
        }
    }

    fn counts(failures: u32, parse_failures: u32) -> FailureCounts {
        FailureCounts {
            consecutive_failures: failures,
            consecutive_parse_failures: parse_failures,
        }
    }

    fn hourly() -> Option<Duration> {
        Some(DEFAULT_INTERVAL)
    }

    fn run(outcome: &Outcome, before: FailureCounts) -> Decision {
        decide(&PolicyConfig::default(), now(), outcome, before, hourly())
    }

    /// Seconds from `now()` to the scheduled check.
    fn delay_of(decision: &Decision) -> u64 {
        match decision.next_check {
            NextCheck::At(at) => seconds_between(now(), at),
            other => panic!("not scheduled at a time: {other:?}"),
        }
    }

    fn with_retry_after(value: &str) -> CacheHints {
        CacheHints {
            retry_after: Some(value.into()),
            ..hints()
        }
    }

    fn with_cache_control(value: &str) -> CacheHints {
        CacheHints {
            cache_control: Some(value.into()),
            ..hints()
        }
    }

    #[test]
    fn effective_interval_is_the_shortest_clamped_subscriber_interval() {
        assert_eq!(effective_interval([]), None);
        assert_eq!(effective_interval([60]), Some(DEFAULT_INTERVAL));
        assert_eq!(
            effective_interval([120, 60, 90]),
            Some(Duration::from_secs(60 * MIN))
        );
        assert_eq!(effective_interval([5]), Some(MIN_INTERVAL));
        assert_eq!(effective_interval([0]), Some(MIN_INTERVAL));
        assert_eq!(effective_interval([10_000]), Some(MAX_INTERVAL));
        assert_eq!(effective_interval([u32::MAX]), Some(MAX_INTERVAL));
        assert_eq!(
            effective_interval([u32::MAX, 45]),
            Some(Duration::from_secs(45 * MIN))
        );
    }

    #[test]
    fn success_waits_the_interval_and_resets_failures() {
        for status in [200, 203, 204, 304] {
            let decision = run(&ok(status, hints()), counts(7, 0));
            assert_eq!(decision.status, FeedStatus::Active, "{status}");
            assert_eq!(delay_of(&decision), HOUR);
            assert_eq!(decision.counts.consecutive_failures, 0);
            assert_eq!(decision.reason, None);
            assert_eq!(decision.http_status, Some(status));
        }
    }

    #[test]
    fn the_interval_is_clamped_to_its_range() {
        let config = PolicyConfig::default();
        let outcome = ok(200, hints());
        let at = |interval| decide(&config, now(), &outcome, counts(0, 0), Some(interval));
        assert_eq!(delay_of(&at(Duration::ZERO)), 30 * MIN);
        assert_eq!(delay_of(&at(Duration::from_secs(29 * MIN))), 30 * MIN);
        assert_eq!(delay_of(&at(Duration::from_secs(90 * MIN))), 90 * MIN);
        assert_eq!(delay_of(&at(Duration::MAX)), 12 * HOUR);
    }

    #[test]
    fn success_honors_the_longest_of_interval_retry_after_and_freshness() {
        let cases: &[(CacheHints, u64)] = &[
            (with_cache_control("max-age=7200"), 2 * HOUR),
            (with_cache_control("max-age=60"), HOUR),
            (
                with_cache_control("public, max-age=10800, must-revalidate"),
                3 * HOUR,
            ),
            (with_cache_control("MAX-AGE=\"7200\""), 2 * HOUR),
            (with_cache_control("max-age = 7200"), 2 * HOUR),
            (with_cache_control("max-age=7200, max-age=60"), 2 * HOUR),
            (with_cache_control("s-maxage=99999"), HOUR),
            (with_cache_control("no-cache, max-age=7200"), HOUR),
            (with_cache_control("max-age=7200, no-store"), HOUR),
            (
                with_cache_control("max-age=99999999999999999999999999"),
                12 * HOUR,
            ),
            (with_cache_control("max-age=-5"), HOUR),
            (with_cache_control("max-age=abc"), HOUR),
            (with_cache_control("max-age="), HOUR),
            (with_cache_control("max-age"), HOUR),
            (with_cache_control(",,,;;=="), HOUR),
            (with_cache_control(""), HOUR),
            (with_retry_after("7200"), 2 * HOUR),
            (with_retry_after("  7200  "), 2 * HOUR),
            (with_retry_after("10"), HOUR),
            (with_retry_after("99999999999999999999999"), 12 * HOUR),
            (with_retry_after("-7200"), HOUR),
            (with_retry_after("7200.5"), HOUR),
            (with_retry_after("+7200"), HOUR),
            (with_retry_after("two hours"), HOUR),
            (with_retry_after(""), HOUR),
            (with_retry_after("Sat, 21 Nov 2026 15:00:00 GMT"), 3 * HOUR),
            (
                with_retry_after("Saturday, 21-Nov-26 15:00:00 GMT"),
                3 * HOUR,
            ),
            (with_retry_after("Sat Nov 21 15:00:00 2026"), 3 * HOUR),
            (with_retry_after("Sat, 21 Nov 2026 11:00:00 GMT"), HOUR),
            (with_retry_after("Sat, 21 Nov 2099 15:00:00 GMT"), 12 * HOUR),
            (with_retry_after("Fri, 31 Dec 9999 23:59:59 GMT"), 12 * HOUR),
            (with_retry_after("Sat, 99 Nov 2026 15:00:00 GMT"), HOUR),
            (
                CacheHints {
                    expires: Some("Sat, 21 Nov 2026 16:00:00 GMT".into()),
                    ..hints()
                },
                4 * HOUR,
            ),
            (
                CacheHints {
                    expires: Some("0".into()),
                    ..hints()
                },
                HOUR,
            ),
            (
                CacheHints {
                    expires: Some("Thu, 01 Jan 1970 00:00:00 GMT".into()),
                    ..hints()
                },
                HOUR,
            ),
            // Max-age wins over Expires.
            (
                CacheHints {
                    cache_control: Some("max-age=7200".into()),
                    expires: Some("Sat, 21 Nov 2026 20:00:00 GMT".into()),
                    ..hints()
                },
                2 * HOUR,
            ),
            // A malformed max-age means stale, not "fall back to Expires".
            (
                CacheHints {
                    cache_control: Some("max-age=soon".into()),
                    expires: Some("Sat, 21 Nov 2026 20:00:00 GMT".into()),
                    ..hints()
                },
                HOUR,
            ),
            // Cache-Control without max-age leaves Expires in charge.
            (
                CacheHints {
                    cache_control: Some("public".into()),
                    expires: Some("Sat, 21 Nov 2026 15:00:00 GMT".into()),
                    ..hints()
                },
                3 * HOUR,
            ),
            // Expires is measured against the server's Date, not our clock: this server's
            // clock is a day ahead, and its content is fresh for 2 h.
            (
                CacheHints {
                    expires: Some("Sun, 22 Nov 2026 14:00:00 GMT".into()),
                    date: Some("Sun, 22 Nov 2026 12:00:00 GMT".into()),
                    ..hints()
                },
                2 * HOUR,
            ),
            (
                CacheHints {
                    retry_after: Some("Sun, 22 Nov 2026 15:00:00 GMT".into()),
                    date: Some("Sun, 22 Nov 2026 12:00:00 GMT".into()),
                    ..hints()
                },
                3 * HOUR,
            ),
            // A malformed Date falls back to our clock.
            (
                CacheHints {
                    expires: Some("Sat, 21 Nov 2026 14:00:00 GMT".into()),
                    date: Some("yesterday".into()),
                    ..hints()
                },
                2 * HOUR,
            ),
            // Retry-After and freshness together: the longer one.
            (
                CacheHints {
                    retry_after: Some("10800".into()),
                    cache_control: Some("max-age=7200".into()),
                    ..hints()
                },
                3 * HOUR,
            ),
        ];
        for (hints, expected) in cases {
            let decision = run(&ok(200, hints.clone()), counts(0, 0));
            assert_eq!(delay_of(&decision), *expected, "{hints:?}");
            assert_eq!(decision.status, FeedStatus::Active);
        }
    }

    #[test]
    fn the_cap_is_configurable() {
        let config = PolicyConfig {
            max_delay: Duration::from_secs(2 * HOUR),
            ..PolicyConfig::default()
        };
        let outcome = ok(200, with_cache_control("max-age=86400"));
        let decision = decide(&config, now(), &outcome, counts(0, 0), hourly());
        assert_eq!(delay_of(&decision), 2 * HOUR);
        let huge = PolicyConfig {
            max_delay: Duration::MAX,
            ..PolicyConfig::default()
        };
        let decision = decide(&huge, now(), &outcome, counts(0, 0), hourly());
        assert_eq!(delay_of(&decision), 86400);
        let outcome = ok(200, with_retry_after("18446744073709551615"));
        let decision = decide(&huge, now(), &outcome, counts(0, 0), hourly());
        assert_eq!(decision.next_check, NextCheck::At(DateTime::<Utc>::MAX_UTC));
    }

    #[test]
    fn gone_and_forbidden_stop_the_feed() {
        for (status, words) in [
            (404, "HTTP 404 Not Found"),
            (410, "HTTP 410 Gone"),
            (401, "HTTP 401 Unauthorized"),
            (403, "HTTP 403 Forbidden"),
        ] {
            let decision = run(&ok(status, with_retry_after("60")), counts(2, 3));
            assert_eq!(decision.status, FeedStatus::Stopped, "{status}");
            assert_eq!(decision.next_check, NextCheck::WhenResumed);
            assert_eq!(decision.http_status, Some(status));
            assert_eq!(decision.counts, counts(3, 3));
            let reason = decision.reason.unwrap();
            assert!(reason.starts_with(words), "{reason}");
            assert!(reason.contains("resume"), "{reason}");
        }
    }

    #[test]
    fn server_errors_and_rate_limits_back_off_exponentially() {
        let expected_minutes = [30, 60, 120, 240, 480, 720, 720, 720];
        for status in [429, 500, 502, 503, 504] {
            let mut before = counts(0, 0);
            for minutes in expected_minutes {
                let decision = run(&ok(status, hints()), before);
                assert_eq!(decision.status, FeedStatus::Backoff, "{status}");
                // The interval (60 min) is the floor.
                assert_eq!(delay_of(&decision), (minutes * MIN).max(HOUR), "{status}");
                assert_eq!(decision.http_status, Some(status));
                assert!(
                    decision
                        .reason
                        .as_deref()
                        .unwrap()
                        .starts_with(&format!("HTTP {status}"))
                );
                assert_eq!(
                    decision.counts.consecutive_failures,
                    before.consecutive_failures + 1
                );
                before = decision.counts;
            }
        }
        // With the shortest interval the first step is visible.
        let decision = decide(
            &PolicyConfig::default(),
            now(),
            &ok(503, hints()),
            counts(0, 0),
            Some(MIN_INTERVAL),
        );
        assert_eq!(delay_of(&decision), 30 * MIN);
        assert_eq!(
            decision.reason.as_deref(),
            Some("HTTP 503 Service Unavailable")
        );
    }

    #[test]
    fn retry_after_stretches_a_backoff_up_to_the_cap() {
        let decision = run(&ok(429, with_retry_after("14400")), counts(0, 0));
        assert_eq!(delay_of(&decision), 4 * HOUR);
        let decision = run(&ok(503, with_retry_after("86400")), counts(0, 0));
        assert_eq!(delay_of(&decision), 12 * HOUR);
        let decision = run(&ok(503, with_retry_after("-1")), counts(0, 0));
        assert_eq!(delay_of(&decision), HOUR);
        let decision = run(
            &ok(503, with_retry_after("Sat, 21 Nov 2026 14:00:00 GMT")),
            counts(0, 0),
        );
        assert_eq!(delay_of(&decision), 2 * HOUR);
        // Freshness headers do not shorten or lengthen a backoff.
        let decision = run(&ok(503, with_cache_control("max-age=36000")), counts(0, 0));
        assert_eq!(delay_of(&decision), HOUR);
    }

    #[test]
    fn other_statuses_back_off_too() {
        for status in [
            0,
            100,
            300,
            305,
            400,
            405,
            408,
            418,
            451,
            599,
            999,
            u16::MAX,
        ] {
            let decision = run(&ok(status, hints()), counts(0, 0));
            assert_eq!(decision.status, FeedStatus::Backoff, "{status}");
            assert_eq!(decision.http_status, Some(status));
            assert!(
                decision
                    .reason
                    .unwrap()
                    .starts_with(&format!("HTTP {status}"))
            );
        }
    }

    #[test]
    fn transport_failures_back_off_and_refusals_stop() {
        for kind in [
            FailureKind::Timeout,
            FailureKind::Connect,
            FailureKind::BodyTooLarge,
            FailureKind::Redirect,
            FailureKind::Http,
        ] {
            let decision = run(&failed(kind), counts(3, 1));
            assert_eq!(decision.status, FeedStatus::Backoff, "{kind:?}");
            assert_eq!(delay_of(&decision), 4 * HOUR, "{kind:?}");
            assert_eq!(decision.counts, counts(4, 1));
            assert_eq!(decision.http_status, None);
            assert_eq!(decision.reason, Some(format!("{} happened", kind.as_str())));
        }
        for kind in [
            FailureKind::Refused,
            FailureKind::InvalidUrl,
            FailureKind::InvalidProxy,
        ] {
            let decision = run(&failed(kind), counts(0, 0));
            assert_eq!(decision.status, FeedStatus::Stopped, "{kind:?}");
            assert_eq!(decision.next_check, NextCheck::WhenResumed);
            assert_eq!(decision.counts, counts(1, 0));
        }
    }

    #[test]
    fn ten_parse_failures_in_a_row_stop_the_feed() {
        let outcome = Outcome::Response {
            status: 200,
            hints: hints(),
            parse: ParseResult::Failed("not XML".into()),
            permanent_redirect: None,
        };
        let mut before = counts(2, 0);
        for n in 1..=9 {
            let decision = run(&outcome, before);
            assert_eq!(decision.status, FeedStatus::Active, "{n}");
            assert_eq!(delay_of(&decision), HOUR);
            assert_eq!(decision.counts, counts(0, n));
            assert_eq!(
                decision.reason.as_deref(),
                Some("the feed could not be parsed: not XML")
            );
            before = decision.counts;
        }
        let decision = run(&outcome, before);
        assert_eq!(decision.status, FeedStatus::Stopped);
        assert_eq!(decision.next_check, NextCheck::WhenResumed);
        assert_eq!(decision.counts, counts(0, 10));
        assert_eq!(
            decision.reason.as_deref(),
            Some("the feed could not be parsed 10 times in a row: not XML")
        );
        // Past the limit (a resumed feed that still fails) it stops at once again.
        let decision = run(&outcome, counts(0, u32::MAX));
        assert_eq!(decision.status, FeedStatus::Stopped);
        assert_eq!(decision.counts.consecutive_parse_failures, u32::MAX);
    }

    #[test]
    fn a_parse_success_resets_the_parse_counter_and_not_modified_keeps_it() {
        let parsed = run(&ok(200, hints()), counts(0, 6));
        assert_eq!(parsed.counts, counts(0, 0));
        let skipped = Outcome::Response {
            status: 200,
            hints: hints(),
            parse: ParseResult::Skipped,
            permanent_redirect: None,
        };
        assert_eq!(run(&skipped, counts(1, 6)).counts, counts(0, 6));
        let not_modified = Outcome::Response {
            status: 304,
            hints: hints(),
            parse: ParseResult::Failed("ignored".into()),
            permanent_redirect: None,
        };
        let decision = run(&not_modified, counts(1, 6));
        assert_eq!(decision.counts, counts(0, 6));
        assert_eq!(decision.status, FeedStatus::Active);
        assert_eq!(decision.reason, None);
    }

    #[test]
    fn permanent_redirects_move_the_feed_only_on_success() {
        let moved = |status| Outcome::Response {
            status,
            hints: hints(),
            parse: ParseResult::Parsed,
            permanent_redirect: Some("https://new.example/feed".into()),
        };
        assert_eq!(
            run(&moved(200), counts(0, 0)).new_url.as_deref(),
            Some("https://new.example/feed")
        );
        assert_eq!(
            run(&moved(304), counts(0, 0)).new_url.as_deref(),
            Some("https://new.example/feed")
        );
        assert_eq!(run(&moved(404), counts(0, 0)).new_url, None);
        assert_eq!(run(&moved(503), counts(0, 0)).new_url, None);
        assert_eq!(run(&ok(200, hints()), counts(0, 0)).new_url, None);
    }

    #[test]
    fn a_feed_without_subscribers_is_not_scheduled() {
        let config = PolicyConfig::default();
        for outcome in [
            ok(200, hints()),
            ok(503, hints()),
            failed(FailureKind::Timeout),
        ] {
            let decision = decide(&config, now(), &outcome, counts(0, 0), None);
            assert_eq!(decision.next_check, NextCheck::NotScheduled, "{outcome:?}");
        }
        // A stop still needs a person, subscribers or not.
        let decision = decide(&config, now(), &ok(410, hints()), counts(0, 0), None);
        assert_eq!(decision.next_check, NextCheck::WhenResumed);
        assert_eq!(decision.status, FeedStatus::Stopped);
    }

    #[test]
    fn counters_saturate_instead_of_overflowing() {
        let decision = run(&ok(503, hints()), counts(u32::MAX, u32::MAX));
        assert_eq!(decision.counts.consecutive_failures, u32::MAX);
        assert_eq!(delay_of(&decision), 12 * HOUR);
        let decision = run(&failed(FailureKind::Connect), counts(u32::MAX - 1, 0));
        assert_eq!(decision.counts.consecutive_failures, u32::MAX);
        let decision = run(&ok(404, hints()), counts(u32::MAX, 0));
        assert_eq!(decision.counts.consecutive_failures, u32::MAX);
        for failures in [63, 64, 65, 100, 1000] {
            let decision = run(&failed(FailureKind::Timeout), counts(failures, 0));
            assert_eq!(delay_of(&decision), 12 * HOUR, "{failures}");
        }
        let huge_base = PolicyConfig {
            backoff_base: Duration::MAX,
            ..PolicyConfig::default()
        };
        let decision = decide(&huge_base, now(), &ok(500, hints()), counts(5, 0), hourly());
        assert_eq!(delay_of(&decision), 12 * HOUR);
    }

    #[test]
    fn clock_edges_saturate() {
        let config = PolicyConfig::default();
        let end = DateTime::<Utc>::MAX_UTC;
        let decision = decide(&config, end, &ok(200, hints()), counts(0, 0), hourly());
        assert_eq!(decision.next_check, NextCheck::At(end));
        let near_end = end - TimeDelta::seconds(10);
        let decision = decide(&config, near_end, &ok(503, hints()), counts(9, 0), hourly());
        assert_eq!(decision.next_check, NextCheck::At(end));
        let start = DateTime::<Utc>::MIN_UTC;
        let decision = decide(
            &config,
            start,
            &ok(200, with_retry_after("Sat, 21 Nov 2026 12:00:00 GMT")),
            counts(0, 0),
            hourly(),
        );
        assert_eq!(
            decision.next_check,
            NextCheck::At(start + TimeDelta::seconds(12 * HOUR as i64))
        );
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        let decision = decide(&config, epoch, &ok(200, hints()), counts(0, 0), hourly());
        assert_eq!(
            decision.next_check,
            NextCheck::At(epoch + TimeDelta::hours(1))
        );
        // A leap day and a year boundary are plain additions.
        let leap = Utc.with_ymd_and_hms(2028, 2, 28, 23, 30, 0).unwrap();
        let decision = decide(&config, leap, &ok(200, hints()), counts(0, 0), hourly());
        assert_eq!(
            decision.next_check,
            NextCheck::At(Utc.with_ymd_and_hms(2028, 2, 29, 0, 30, 0).unwrap())
        );
        let new_year = Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 59).unwrap();
        let decision = decide(&config, new_year, &ok(200, hints()), counts(0, 0), hourly());
        assert_eq!(
            decision.next_check,
            NextCheck::At(Utc.with_ymd_and_hms(2027, 1, 1, 0, 59, 59).unwrap())
        );
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        let expected = Utc.with_ymd_and_hms(1994, 11, 6, 8, 49, 37).unwrap();
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(expected)
        );
        assert_eq!(
            parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(expected)
        );
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), Some(expected));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 +0000"),
            Some(expected)
        );
        for bogus in [
            "",
            "0",
            "-1",
            "yesterday",
            "Sun, 06 Nov 1994",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 99999999999 08:49:37 GMT",
            "\u{0}\u{ffff}",
        ] {
            assert_eq!(parse_http_date(bogus), None, "{bogus:?}");
        }
    }

    /// A tiny deterministic generator, so the sweep below needs no extra crate.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Deterministic fuzzing: random statuses, counters, clocks and header garbage never
    /// panic, and every scheduled time lies within [now, now + cap] (or saturates at the end
    /// of time).
    #[test]
    fn no_input_panics_and_every_delay_respects_the_cap() {
        let pieces = [
            "",
            "0",
            "-1",
            "60",
            "3600",
            "86400",
            "18446744073709551616",
            "1e9",
            "max-age=",
            "max-age=120",
            "no-store",
            "no-cache",
            ",",
            "=",
            "\"",
            "Sat, 21 Nov 2026 15:00:00 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Thu, 01 Jan 1970 00:00:00 GMT",
            "日本語",
            " ",
        ];
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        let config = PolicyConfig::default();
        for _ in 0..20_000 {
            let text = |rng: &mut XorShift| {
                (rng.below(4) > 0).then(|| {
                    let a = pieces[rng.below(pieces.len())];
                    let b = pieces[rng.below(pieces.len())];
                    format!("{a}{}{b}", [",", " ", "", "="][rng.below(4)])
                })
            };
            let hints = CacheHints {
                retry_after: text(&mut rng),
                cache_control: text(&mut rng),
                expires: text(&mut rng),
                date: text(&mut rng),
            };
            let outcome = if rng.below(5) == 0 {
                let kinds = [
                    FailureKind::Timeout,
                    FailureKind::Refused,
                    FailureKind::Connect,
                ];
                failed(kinds[rng.below(3)])
            } else {
                let parses = [
                    ParseResult::Parsed,
                    ParseResult::Skipped,
                    ParseResult::Failed("x".into()),
                ];
                Outcome::Response {
                    status: [200, 304, 404, 429, 500, 503, 302, 0, 65535][rng.below(9)],
                    hints,
                    parse: parses[rng.below(3)].clone(),
                    permanent_redirect: None,
                }
            };
            let now = match rng.below(4) {
                0 => DateTime::<Utc>::MAX_UTC,
                1 => DateTime::<Utc>::MIN_UTC,
                _ => now() + TimeDelta::seconds((rng.next() % 1_000_000_000) as i64),
            };
            let before = counts(rng.below(70) as u32, rng.below(12) as u32);
            let interval = (rng.below(6) > 0).then(|| Duration::from_secs(rng.next() % 100_000));
            let decision = decide(&config, now, &outcome, before, interval);
            if let NextCheck::At(at) = decision.next_check {
                assert!(at >= now);
                assert!(
                    at == DateTime::<Utc>::MAX_UTC || seconds_between(now, at) <= 12 * HOUR,
                    "{outcome:?}"
                );
            }
        }
    }
}
