//! Counters of every fetch outcome (F62), kept in the process and rendered in the Prometheus
//! text format by whoever serves `/metrics`.
//!
//! A small struct of atomics rather than the `metrics` facade: no global recorder to install
//! (several workers in one test process each read their own counts). The text is encoded by
//! `prometheus-client` through a collector ([`WorkerMetrics::collector`]), so the server puts
//! these series in the same registry as its own.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;

/// Upper bounds of the fetch-latency histogram's buckets, in seconds.
pub const LATENCY_BUCKETS: [f64; 10] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// How a fetch ended, the `result` label of `tidings_fetches_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchResult {
    /// A body was parsed and its items stored.
    Parsed,
    /// 304 Not Modified.
    NotModified,
    /// 200 with the same body as last time: parsing skipped.
    Unchanged,
    /// 200 with a body that is not a feed.
    ParseFailed,
    /// An error status (404, 429, 5xx…).
    HttpError,
    /// No response (timeout, refusal, connection error, body too large…).
    Failed,
}

impl FetchResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FetchResult::Parsed => "parsed",
            FetchResult::NotModified => "not_modified",
            FetchResult::Unchanged => "unchanged",
            FetchResult::ParseFailed => "parse_failed",
            FetchResult::HttpError => "http_error",
            FetchResult::Failed => "failed",
        }
    }

    /// Whether the feed was fetched successfully (the scheduler's "success").
    pub fn is_success(self) -> bool {
        matches!(
            self,
            FetchResult::Parsed | FetchResult::NotModified | FetchResult::Unchanged
        )
    }
}

/// The worker's counters. Shared (`Arc`) between the worker's tasks and whoever reads them.
#[derive(Debug, Default)]
pub struct WorkerMetrics {
    results: Mutex<BTreeMap<FetchResult, u64>>,
    failures: Mutex<BTreeMap<String, u64>>,
    statuses: Mutex<BTreeMap<u16, u64>>,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
    items_inserted: AtomicU64,
    items_updated: AtomicU64,
    feeds_renamed: AtomicU64,
    feeds_merged: AtomicU64,
    favicons_found: AtomicU64,
    favicons_missing: AtomicU64,
    retention_items_deleted: AtomicU64,
    retention_feeds_deleted: AtomicU64,
    lease_lost: AtomicU64,
    full_text_extracted: AtomicU64,
    full_text_shorter: AtomicU64,
    full_text_failed: AtomicU64,
    full_text_over_budget: AtomicU64,
    popularity_calls_ok: AtomicU64,
    popularity_calls_failed: AtomicU64,
    websub_requests: Mutex<BTreeMap<String, u64>>,
    websub_verifications: Mutex<BTreeMap<String, u64>>,
    websub_pushes: Mutex<BTreeMap<String, u64>>,
    webhook_sent: AtomicU64,
    webhook_retrying: AtomicU64,
    webhook_dropped: AtomicU64,
}

/// A copy of the counters at one moment, for the API's JSON and for tests.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct MetricsSnapshot {
    /// Fetches by result.
    pub results: BTreeMap<FetchResult, u64>,
    /// Failures by reason: the fetch error's kind ("timeout", "refused"…) or "http_status".
    pub failures: BTreeMap<String, u64>,
    /// Responses by final HTTP status.
    pub statuses: BTreeMap<u16, u64>,
    /// Fetches timed.
    pub latency_count: u64,
    /// Their total duration in seconds.
    pub latency_sum_seconds: f64,
    /// Items stored for the first time.
    pub items_inserted: u64,
    /// Items seen again with changed content.
    pub items_updated: u64,
    /// Feeds whose URL changed after a permanent redirect.
    pub feeds_renamed: u64,
    /// Feeds merged into another feed of the redirect's URL.
    pub feeds_merged: u64,
    /// Favicons stored.
    pub favicons_found: u64,
    /// Favicon attempts that found nothing usable.
    pub favicons_missing: u64,
    /// Items deleted by retention.
    pub retention_items_deleted: u64,
    /// Orphan feeds deleted by retention.
    pub retention_feeds_deleted: u64,
    /// Fetches whose lease had expired by the time they were recorded (not stored).
    pub lease_lost: u64,
    /// Article pages whose article was kept (F6).
    pub full_text_extracted: u64,
    /// Article pages whose article had no more text than the feed.
    pub full_text_shorter: u64,
    /// Article pages that failed or held no article.
    pub full_text_failed: u64,
    /// Article pages of the `auto` mode not fetched: their site's daily budget was spent.
    pub full_text_over_budget: u64,
    /// Calls to the popularity count source that gave counts (F40).
    pub popularity_calls_ok: u64,
    /// Calls to the popularity count source that failed.
    pub popularity_calls_failed: u64,
    /// WebSub requests sent to hubs (F18), by mode and whether the hub accepted them
    /// (`subscribe_accepted`, `unsubscribe_failed`…).
    pub websub_requests: BTreeMap<String, u64>,
    /// Hubs' GETs at the callback, by outcome: confirmed, refused, denied.
    pub websub_verifications: BTreeMap<String, u64>,
    /// Content distributions, by outcome: stored, unreadable, bad_signature,
    /// missing_signature, gone.
    pub websub_pushes: BTreeMap<String, u64>,
    /// Webhook messages that went through (F43).
    pub webhook_sent: u64,
    /// Webhook messages that failed and are tried again.
    pub webhook_retrying: u64,
    /// Webhook messages whose items were dropped (failed for good).
    pub webhook_dropped: u64,
}

impl MetricsSnapshot {
    /// Fetches that ended with `result`.
    pub fn result(&self, result: FetchResult) -> u64 {
        self.results.get(&result).copied().unwrap_or(0)
    }

    /// All fetches counted.
    pub fn fetches(&self) -> u64 {
        self.results.values().sum()
    }
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    let mut map = map.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *map.entry(key).or_insert(0) += 1;
}

fn copy<K: Ord + Clone>(map: &Mutex<BTreeMap<K, u64>>) -> BTreeMap<K, u64> {
    map.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

impl WorkerMetrics {
    /// Counts one fetch: its result, the failure reason when it failed, the final HTTP status
    /// when a response came, and how long it took.
    pub fn record_fetch(
        &self,
        result: FetchResult,
        failure_reason: Option<&str>,
        http_status: Option<u16>,
        elapsed: Duration,
    ) {
        bump(&self.results, result);
        if let Some(reason) = failure_reason {
            bump(&self.failures, reason.to_owned());
        }
        if let Some(status) = http_status {
            bump(&self.statuses, status);
        }
        let seconds = elapsed.as_secs_f64();
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros.fetch_add(
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts stored items.
    pub fn record_items(&self, inserted: u64, updated: u64) {
        self.items_inserted.fetch_add(inserted, Ordering::Relaxed);
        self.items_updated.fetch_add(updated, Ordering::Relaxed);
    }

    /// Counts a feed moved by a permanent redirect.
    pub fn record_move(&self, merged: bool) {
        let counter = if merged {
            &self.feeds_merged
        } else {
            &self.feeds_renamed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a favicon attempt.
    pub fn record_favicon(&self, found: bool) {
        let counter = if found {
            &self.favicons_found
        } else {
            &self.favicons_missing
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an article page's outcome: `extracted`, `shorter` or `failed`.
    pub fn record_full_text(&self, outcome: &str) {
        let counter = match outcome {
            "extracted" => &self.full_text_extracted,
            "shorter" => &self.full_text_shorter,
            "over_budget" => &self.full_text_over_budget,
            _ => &self.full_text_failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a call to the popularity count source: whether it gave counts.
    pub fn record_popularity_call(&self, ok: bool) {
        let counter = if ok {
            &self.popularity_calls_ok
        } else {
            &self.popularity_calls_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a WebSub request (`subscribe` or `unsubscribe`) and whether the hub accepted it.
    pub fn record_websub_request(&self, mode: &str, accepted: bool) {
        let result = if accepted { "accepted" } else { "failed" };
        bump(&self.websub_requests, format!("{mode}_{result}"));
    }

    /// Counts a hub's GET at the callback by outcome.
    pub fn record_websub_verification(&self, outcome: &str) {
        bump(&self.websub_verifications, outcome.to_owned());
    }

    /// Counts a content distribution by outcome.
    pub fn record_websub_push(&self, outcome: &str) {
        bump(&self.websub_pushes, outcome.to_owned());
    }

    /// Counts a webhook message by its outcome (`sent`, `retrying`, `dropped`).
    pub fn record_webhook_message(&self, status: &str) {
        let counter = match status {
            "sent" => &self.webhook_sent,
            "retrying" => &self.webhook_retrying,
            _ => &self.webhook_dropped,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts what a retention run deleted.
    pub fn record_retention(&self, items: u64, feeds: u64) {
        self.retention_items_deleted
            .fetch_add(items, Ordering::Relaxed);
        self.retention_feeds_deleted
            .fetch_add(feeds, Ordering::Relaxed);
    }

    /// Counts a fetch whose lease had expired before it was recorded.
    pub fn record_lease_lost(&self) {
        self.lease_lost.fetch_add(1, Ordering::Relaxed);
    }

    /// A copy of every counter.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        MetricsSnapshot {
            results: copy(&self.results),
            failures: copy(&self.failures),
            statuses: copy(&self.statuses),
            latency_count: load(&self.latency_count),
            latency_sum_seconds: load(&self.latency_sum_micros) as f64 / 1e6,
            items_inserted: load(&self.items_inserted),
            items_updated: load(&self.items_updated),
            feeds_renamed: load(&self.feeds_renamed),
            feeds_merged: load(&self.feeds_merged),
            favicons_found: load(&self.favicons_found),
            favicons_missing: load(&self.favicons_missing),
            retention_items_deleted: load(&self.retention_items_deleted),
            retention_feeds_deleted: load(&self.retention_feeds_deleted),
            lease_lost: load(&self.lease_lost),
            full_text_extracted: load(&self.full_text_extracted),
            full_text_shorter: load(&self.full_text_shorter),
            full_text_failed: load(&self.full_text_failed),
            full_text_over_budget: load(&self.full_text_over_budget),
            popularity_calls_ok: load(&self.popularity_calls_ok),
            popularity_calls_failed: load(&self.popularity_calls_failed),
            websub_requests: copy(&self.websub_requests),
            websub_verifications: copy(&self.websub_verifications),
            websub_pushes: copy(&self.websub_pushes),
            webhook_sent: load(&self.webhook_sent),
            webhook_retrying: load(&self.webhook_retrying),
            webhook_dropped: load(&self.webhook_dropped),
        }
    }

    /// The counters in the Prometheus text exposition format (version 0.0.4), for `/metrics`.
    pub fn render_prometheus(&self) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(WorkerCollector(self.snapshot_with_buckets())));
        let mut out = String::new();
        // Writing into a String cannot fail; a collector error would leave the text cut short.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
        out
    }

    /// A snapshot together with the latency buckets (cumulative counts), for the exporter.
    fn snapshot_with_buckets(&self) -> (MetricsSnapshot, [u64; LATENCY_BUCKETS.len()]) {
        let buckets =
            std::array::from_fn(|index| self.latency_buckets[index].load(Ordering::Relaxed));
        (self.snapshot(), buckets)
    }

    /// A collector of these counters for a [`prometheus_client`] registry: each scrape encodes
    /// the counts of that moment, so a server can put them in its own registry beside others.
    pub fn collector(self: &std::sync::Arc<Self>) -> Box<dyn Collector> {
        Box::new(LiveWorkerCollector(std::sync::Arc::clone(self)))
    }
}

/// The worker's counters of one moment, encoded with `prometheus-client` (the official
/// Prometheus client for Rust) rather than formatted by hand, so names, escaping, counter
/// suffixes and histogram buckets follow the format exactly.
#[derive(Debug)]
struct WorkerCollector((MetricsSnapshot, [u64; LATENCY_BUCKETS.len()]));

/// [`WorkerCollector`] over the live counters, snapshotted at each scrape.
#[derive(Debug)]
struct LiveWorkerCollector(std::sync::Arc<WorkerMetrics>);

impl Collector for LiveWorkerCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        WorkerCollector(self.0.snapshot_with_buckets()).encode(encoder)
    }
}

/// One label name and value.
type Label = [(&'static str, String); 1];

fn label(name: &'static str, value: impl ToString) -> Label {
    [(name, value.to_string())]
}

/// Encodes one counter family: its name (without `_total`, which the encoder adds), help and
/// one value per label set.
fn counter_family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Option<Label>, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in samples {
        match labels {
            Some(labels) => ConstCounter::new(value).encode(metric.encode_family(&labels)?)?,
            None => ConstCounter::new(value).encode(metric.encode_family(&NO_LABELS)?)?,
        }
    }
    Ok(())
}

/// An empty label set.
const NO_LABELS: [(&str, &str); 0] = [];

impl Collector for WorkerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (snapshot, cumulative) = &self.0;
        encode_fetches(&mut encoder, snapshot, cumulative)?;
        encode_outcomes(&mut encoder, snapshot)
    }
}

/// The fetches' families: results, failures, statuses and the duration histogram.
fn encode_fetches(
    encoder: &mut DescriptorEncoder,
    snapshot: &MetricsSnapshot,
    cumulative: &[u64; LATENCY_BUCKETS.len()],
) -> Result<(), std::fmt::Error> {
    let results = [
        FetchResult::Parsed,
        FetchResult::NotModified,
        FetchResult::Unchanged,
        FetchResult::ParseFailed,
        FetchResult::HttpError,
        FetchResult::Failed,
    ];
    counter_family(
        encoder,
        "tidings_fetches",
        "Feed fetches by result",
        results.map(|result| {
            (
                Some(label("result", result.as_str())),
                snapshot.result(result),
            )
        }),
    )?;
    counter_family(
        encoder,
        "tidings_fetch_failures",
        "Failed fetches by reason",
        snapshot
            .failures
            .iter()
            .map(|(reason, count)| (Some(label("reason", reason)), *count)),
    )?;
    counter_family(
        encoder,
        "tidings_fetch_parse_failures",
        "Fetched bodies that were not a feed",
        [(None, snapshot.result(FetchResult::ParseFailed))],
    )?;
    counter_family(
        encoder,
        "tidings_fetch_http_status",
        "Fetch responses by final HTTP status",
        snapshot
            .statuses
            .iter()
            .map(|(status, count)| (Some(label("status", status)), *count)),
    )?;
    // The encoder takes each bucket's own count and sums them itself.
    let mut previous = 0;
    let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS
        .iter()
        .zip(cumulative)
        .map(|(bound, up_to)| {
            let own = up_to.saturating_sub(previous);
            previous = *up_to;
            (*bound, own)
        })
        .collect();
    encoder
        .encode_descriptor(
            "tidings_fetch_duration_seconds",
            "Time from request to stored outcome",
            None,
            MetricType::Histogram,
        )?
        .encode_histogram::<NoLabelSet>(
            snapshot.latency_sum_seconds,
            snapshot.latency_count,
            &buckets,
            None,
        )?;
    Ok(())
}

/// What the fetches and the background jobs did: items, moves, favicons, retention, leases,
/// full text, popularity, WebSub and notifications.
fn encode_outcomes(
    encoder: &mut DescriptorEncoder,
    snapshot: &MetricsSnapshot,
) -> Result<(), std::fmt::Error> {
    counter_family(
        encoder,
        "tidings_items_upserted",
        "Items stored by the worker, new or changed",
        [
            (Some(label("change", "inserted")), snapshot.items_inserted),
            (Some(label("change", "updated")), snapshot.items_updated),
        ],
    )?;
    counter_family(
        encoder,
        "tidings_feeds_moved",
        "Feeds moved by permanent redirects",
        [
            (Some(label("kind", "renamed")), snapshot.feeds_renamed),
            (Some(label("kind", "merged")), snapshot.feeds_merged),
        ],
    )?;
    counter_family(
        encoder,
        "tidings_favicons",
        "Favicon attempts",
        [
            (Some(label("result", "found")), snapshot.favicons_found),
            (Some(label("result", "missing")), snapshot.favicons_missing),
        ],
    )?;
    counter_family(
        encoder,
        "tidings_retention_deleted",
        "Rows deleted by retention",
        [
            (
                Some(label("kind", "items")),
                snapshot.retention_items_deleted,
            ),
            (
                Some(label("kind", "feeds")),
                snapshot.retention_feeds_deleted,
            ),
        ],
    )?;
    counter_family(
        encoder,
        "tidings_fetch_lease_lost",
        "Fetches not stored because their lease had expired",
        [(None, snapshot.lease_lost)],
    )?;
    counter_family(
        encoder,
        "tidings_full_text",
        "Article pages for full text, by outcome (over_budget: not fetched, its site's daily \
         budget spent)",
        [
            (
                Some(label("result", "extracted")),
                snapshot.full_text_extracted,
            ),
            (Some(label("result", "shorter")), snapshot.full_text_shorter),
            (Some(label("result", "failed")), snapshot.full_text_failed),
            (
                Some(label("result", "over_budget")),
                snapshot.full_text_over_budget,
            ),
        ],
    )?;
    counter_family(
        encoder,
        "tidings_popularity_calls",
        "Calls to the popularity count source (F40), by result",
        [
            (Some(label("result", "ok")), snapshot.popularity_calls_ok),
            (
                Some(label("result", "failed")),
                snapshot.popularity_calls_failed,
            ),
        ],
    )?;
    counter_family(
        encoder,
        "tidings_websub_requests",
        "WebSub subscription requests sent to hubs (F18), by mode and whether accepted",
        snapshot
            .websub_requests
            .iter()
            .map(|(outcome, n)| (Some(label("outcome", outcome)), *n)),
    )?;
    counter_family(
        encoder,
        "tidings_websub_verifications",
        "Hubs' verifications of intent at the WebSub callback, by outcome",
        snapshot
            .websub_verifications
            .iter()
            .map(|(outcome, n)| (Some(label("outcome", outcome)), *n)),
    )?;
    counter_family(
        encoder,
        "tidings_websub_pushes",
        "Content distributions received at the WebSub callback, by outcome",
        snapshot
            .websub_pushes
            .iter()
            .map(|(outcome, n)| (Some(label("outcome", outcome)), *n)),
    )?;
    counter_family(
        encoder,
        "tidings_webhook_messages",
        "Messages to notification webhooks (F43), by result",
        [
            (Some(label("result", "sent")), snapshot.webhook_sent),
            (Some(label("result", "retrying")), snapshot.webhook_retrying),
            (Some(label("result", "dropped")), snapshot.webhook_dropped),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_counted_and_rendered() {
        let metrics = WorkerMetrics::default();
        metrics.record_fetch(
            FetchResult::Parsed,
            None,
            Some(200),
            Duration::from_millis(30),
        );
        metrics.record_fetch(
            FetchResult::Failed,
            Some("timeout"),
            None,
            Duration::from_secs(10),
        );
        metrics.record_fetch(
            FetchResult::HttpError,
            Some("http_status"),
            Some(503),
            Duration::from_millis(5),
        );
        metrics.record_items(20, 1);
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.fetches(), 3);
        assert_eq!(snapshot.result(FetchResult::Parsed), 1);
        assert_eq!(snapshot.failures.get("timeout"), Some(&1));
        assert_eq!(snapshot.statuses.get(&503), Some(&1));
        let text = metrics.render_prometheus();
        for expected in [
            "tidings_fetches_total{result=\"parsed\"} 1",
            "tidings_fetches_total{result=\"not_modified\"} 0",
            "tidings_fetch_failures_total{reason=\"timeout\"} 1",
            "tidings_fetch_http_status_total{status=\"503\"} 1",
            "tidings_fetch_duration_seconds_bucket{le=\"0.05\"} 2",
            "tidings_fetch_duration_seconds_bucket{le=\"+Inf\"} 3",
            "tidings_fetch_duration_seconds_count 3",
            "tidings_items_upserted_total{change=\"inserted\"} 20",
            "# TYPE tidings_fetch_duration_seconds histogram",
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }
}
