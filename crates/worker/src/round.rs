//! One feed's round: fetch (conditional, guarded, polite), skip or parse, store items, body and
//! outcome, follow a permanent move, refresh the favicon; and the storing of a body a WebSub hub
//! pushed, which takes the same path.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use tidings_feed::ParseOptions;
use tidings_fetch::policy::{freshness_seconds, retry_after_seconds};
use tidings_fetch::{
    Decision, FailureCounts, FailureKind, FeedStatus, FetchRequest, FetchResponse, NextCheck,
    Outcome, ParseResult, decide, effective_interval,
};
use tidings_store::{
    BodyWrite, DueFeed, Favicon, FeedBody, FeedMove, FetchRecord, FetchStatus, FetchWrites,
    FetchWritten, NewItem, ShortText, SiteFaviconClaim, StoreError, UpsertCounts, WebSubDiscovery,
    feed_text_chars,
};
use tokio::sync::OwnedSemaphorePermit;
use url::Url;

use crate::body;
use crate::favicon::{self, IconLookup, Queued};
use crate::fetcher::{Fetcher, url_for_log};
use crate::hub::{discovered_links, random_token};
use crate::metrics::FetchResult;
use crate::parse::{ParsedFeed, parse_and_sanitize, scrape_and_sanitize};

/// How long a process's claim on a site's favicon lookup lasts (see
/// [`Store::claim_site_favicon`]): long enough for a page and a few icons within their
/// time-outs; other processes wait for the result at most this long.
const SITE_FAVICON_CLAIM: std::time::Duration = std::time::Duration::from_secs(120);
/// How often a process waiting for another's favicon lookup looks at the store.
const SITE_FAVICON_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// How a body to store came, and what comes with it.
#[derive(Debug, Clone, Copy)]
enum Arrival<'a> {
    /// Fetched from the feed's URL by this worker: the outcome to record (`(owner, record)`),
    /// the favicon known for its site, and its `Link` headers and document name its WebSub
    /// hub, or that it has none (F18).
    Fetched {
        record: (&'a str, &'a FetchRecord),
        favicon: Option<&'a Favicon>,
    },
    /// Pushed by the feed's hub: nothing to record, and nothing new of its hub.
    Pushed,
}

/// What a fetch brought, as [`Fetcher::examine`] finds it.
struct Examined {
    /// The outcome for the scheduling policy.
    outcome: Outcome,
    /// The response, when one came.
    response: Option<FetchResponse>,
    /// A parsed feed and its body's digest, stored with the outcome.
    to_store: Option<(ParsedFeed, String)>,
    /// Why the fetch failed, for the metrics.
    failure_reason: Option<String>,
}

/// What became of one feed's fetch, for logs, the command line and the API.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FeedReport {
    /// The feed's id.
    pub feed_id: i64,
    /// The URL fetched.
    pub url: String,
    /// How the fetch ended.
    pub result: FetchResult,
    /// The final HTTP status, when a response came.
    pub http_status: Option<u16>,
    /// The error or parse failure, as the user should read it.
    pub error: Option<String>,
    /// Items stored for the first time.
    pub items_inserted: u64,
    /// Items seen again with changed content.
    pub items_updated: u64,
    /// Items seen again unchanged.
    pub items_unchanged: u64,
    /// Items the feed still lists that retention deleted: not stored again.
    pub items_suppressed: u64,
    /// The feed's status after the fetch.
    pub status: FetchStatus,
    /// Why the feed is in backoff or stopped.
    pub status_reason: Option<String>,
    /// When the feed is due next (Unix seconds); `None` when stopped.
    pub next_check_at: Option<i64>,
    /// The URL the feed moved to after a permanent redirect.
    pub moved_to: Option<String>,
    /// The feed it was merged into, when the new URL belonged to another feed.
    pub merged_into: Option<i64>,
    /// Whether the outcome was stored (`false` when the lease had expired meanwhile, or the
    /// database failed).
    pub recorded: bool,
    /// How long the round took, in milliseconds.
    pub elapsed_ms: u64,
}

impl fmt::Display for FeedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "feed {} {}: ", self.feed_id, self.url)?;
        match self.result {
            FetchResult::Parsed if self.items_suppressed > 0 => write!(
                f,
                "parsed, {} new, {} updated, {} unchanged, {} deleted earlier by retention",
                self.items_inserted,
                self.items_updated,
                self.items_unchanged,
                self.items_suppressed
            )?,
            FetchResult::Parsed => write!(
                f,
                "parsed, {} new, {} updated, {} unchanged",
                self.items_inserted, self.items_updated, self.items_unchanged
            )?,
            FetchResult::NotModified => write!(f, "not modified (304)")?,
            FetchResult::Unchanged => write!(f, "unchanged (same body as last time)")?,
            FetchResult::ParseFailed => write!(
                f,
                "not a feed: {}",
                self.error.as_deref().unwrap_or("unknown")
            )?,
            FetchResult::HttpError => write!(
                f,
                "HTTP {}",
                self.http_status.map_or("?".into(), |s| s.to_string())
            )?,
            FetchResult::Failed => {
                write!(f, "failed: {}", self.error.as_deref().unwrap_or("unknown"))?
            }
        }
        write!(f, "; status {}", self.status.as_str())?;
        if let Some(reason) = &self.status_reason {
            write!(f, " ({reason})")?;
        }
        if let Some(next) = self
            .next_check_at
            .and_then(|at| DateTime::<Utc>::from_timestamp(at, 0))
        {
            write!(f, "; next check {}", next.format("%Y-%m-%d %H:%M:%S UTC"))?;
        }
        if let Some(url) = &self.moved_to {
            write!(f, "; moved to {url}")?;
            if let Some(into) = self.merged_into {
                write!(f, " (merged into feed {into})")?;
            }
        }
        if !self.recorded {
            write!(f, "; NOT recorded")?;
        }
        Ok(())
    }
}

impl Fetcher {
    /// Fetches a feed this fetcher's owner has claimed, stores everything, releases the lease.
    /// Never fails: problems are in the report (and the lease expires if nothing was stored).
    pub async fn fetch_claimed(&self, due: DueFeed) -> FeedReport {
        self.fetch_claimed_with(due, None).await
    }

    /// [`Fetcher::fetch_claimed`], with the response already in hand when `prefetched` is
    /// `Some`.
    pub(crate) async fn fetch_claimed_with(
        &self,
        due: DueFeed,
        prefetched: Option<Result<FetchResponse, tidings_fetch::FetchError>>,
    ) -> FeedReport {
        let started = Instant::now();
        let mut report = FeedReport {
            feed_id: due.feed_id,
            url: due.url.clone(),
            result: FetchResult::Failed,
            http_status: None,
            error: None,
            items_inserted: 0,
            items_updated: 0,
            items_unchanged: 0,
            items_suppressed: 0,
            status: FetchStatus::Active,
            status_reason: None,
            next_check_at: None,
            moved_to: None,
            merged_into: None,
            recorded: false,
            elapsed_ms: 0,
        };
        let round = self.round(&due, &mut report, prefetched).await;
        report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let failure_reason = match &round {
            Err(_) => Some("storage".to_owned()),
            Ok(reason) => reason.clone(),
        };
        if let Err(error) = round {
            tracing::warn!(feed = due.feed_id, url = %url_for_log(&due.url), %error, "storing a fetch failed");
            report.error = Some(format!("storage error: {error}"));
            report.result = FetchResult::Failed;
            report.recorded = false;
        }
        self.inner.metrics.record_fetch(
            report.result,
            failure_reason.as_deref(),
            report.http_status,
            started.elapsed(),
        );
        tracing::info!(
            target: "tidings::fetch",
            feed_id = due.feed_id,
            url = %url_for_log(&due.url),
            result = report.result.as_str(),
            http_status = report.http_status,
            duration_ms = report.elapsed_ms,
            error_kind = failure_reason.as_deref(),
            items_inserted = report.items_inserted,
            items_updated = report.items_updated,
            "fetch"
        );
        report
    }

    /// The round proper; returns the failure reason for the metrics (`None` on success).
    async fn round(
        &self,
        due: &DueFeed,
        report: &mut FeedReport,
        prefetched: Option<Result<FetchResponse, tidings_fetch::FetchError>>,
    ) -> Result<Option<String>, StoreError> {
        let owner = &self.inner.config.owner;
        // The slot is held until the outcome is stored, so `concurrency` bounds parsing and
        // storing too.
        let (fetched, _slot) = match prefetched {
            // Never closed, so this always yields a permit.
            Some(fetched) => (
                fetched,
                Arc::clone(&self.inner.slots).acquire_owned().await.ok(),
            ),
            None => self.fetch(due).await,
        };
        if let Err(error) = &fetched
            && error.kind() == FailureKind::Refused
            && !self.inner.config.record_refusals
        {
            return self.leave_refused(due, report, error).await;
        }
        let now = Utc::now();
        let Examined {
            outcome,
            response,
            to_store,
            failure_reason,
        } = self.examine(due, fetched, report, now).await?;
        let (decision, record) = self.schedule(due, &outcome, response.as_ref(), now);
        report.status = record.status;
        report.status_reason = record.status_reason.clone();
        report.next_check_at =
            matches!(decision.next_check, NextCheck::At(_)).then_some(record.next_check_at);
        let mut parsed_feed: Option<(ParsedFeed, Url)> = None;
        report.recorded = match (to_store, &response) {
            (Some((parsed, digest)), Some(response)) => {
                // A favicon already known for the feed's site goes in with the fetch; a feed
                // that moves gets its favicon after the move, below.
                let favicon = match decision.new_url {
                    None => self.plan_favicon(
                        due.feed_id,
                        &parsed,
                        &response.url,
                        now,
                        due.favicon_fetched_at,
                    ),
                    Some(_) => None,
                };
                let written = self
                    .store_fetched(
                        due.feed_id,
                        &parsed,
                        response,
                        digest,
                        now,
                        Arrival::Fetched {
                            record: (owner, &record),
                            favicon: favicon.as_ref(),
                        },
                    )
                    .await?;
                report.items_inserted = written.counts.inserted;
                report.items_updated = written.counts.updated;
                report.items_unchanged = written.counts.unchanged;
                report.items_suppressed = written.counts.suppressed;
                if decision.new_url.is_some() {
                    parsed_feed = Some((parsed, response.url.clone()));
                }
                written.recorded
            }
            _ => {
                self.inner
                    .store
                    .record_fetch(due.feed_id, owner, &record)
                    .await?
            }
        };
        if !report.recorded {
            self.inner.metrics.record_lease_lost();
            tracing::warn!(
                feed = due.feed_id,
                "the lease expired before the fetch was recorded; another worker has the feed"
            );
            return Ok(failure_reason);
        }
        if report.result == FetchResult::Parsed {
            self.inner
                .metrics
                .record_items(report.items_inserted, report.items_updated);
        }
        if let Some(new_url) = &decision.new_url
            && self
                .follow_move(due, new_url, report, &mut parsed_feed, now)
                .await
        {
            return Ok(failure_reason);
        }
        if let Some((parsed, url)) = parsed_feed {
            self.queue_favicon(due.feed_id, &parsed, &url, now).await;
        }
        Ok(failure_reason)
    }

    /// A fetch refused by this process's own settings: gives the feed back untouched and
    /// reports its state as it stays.
    async fn leave_refused(
        &self,
        due: &DueFeed,
        report: &mut FeedReport,
        error: &tidings_fetch::FetchError,
    ) -> Result<Option<String>, StoreError> {
        let store = &self.inner.store;
        let owner = &self.inner.config.owner;
        // Refused by this process's own settings: give the feed back untouched.
        store.release_feeds(owner, &[due.feed_id]).await?;
        report.result = FetchResult::Failed;
        report.error = Some(format!(
            "{error}; not recorded: the feed was left as it was"
        ));
        if let Ok(state) = store.feed_fetch_state(due.feed_id).await {
            report.status = state.status;
            report.status_reason = state.status_reason;
            report.next_check_at =
                (state.status != FetchStatus::Stopped).then_some(state.next_check_at);
        }
        Ok(Some(error.kind().as_str().to_owned()))
    }

    /// What the fetch brought: the outcome for the scheduling policy, the response, the
    /// parsed feed to store with its body's digest, and the failure reason for the metrics.
    /// An identical body only moves its validators on; a body that does not parse is kept
    /// (a parser fix then reaches it).
    async fn examine(
        &self,
        due: &DueFeed,
        fetched: Result<FetchResponse, tidings_fetch::FetchError>,
        report: &mut FeedReport,
        now: DateTime<Utc>,
    ) -> Result<Examined, StoreError> {
        let store = &self.inner.store;
        // A parsed feed and its body's digest, stored with the outcome.
        let mut to_store: Option<(ParsedFeed, String)> = None;
        let mut failure_reason = None;
        let (outcome, response) = match fetched {
            Err(error) => {
                report.result = FetchResult::Failed;
                report.error = Some(error.to_string());
                failure_reason = Some(error.kind().as_str().to_owned());
                (error.outcome(), None)
            }
            Ok(response) => {
                report.http_status = Some(response.status);
                if response.is_not_modified() {
                    report.result = FetchResult::NotModified;
                    (response.outcome(ParseResult::Skipped), Some(response))
                } else if response.is_success() {
                    let digest = body::sha256_hex(&response.body);
                    if due.body_sha256.as_deref() == Some(&digest) {
                        store
                            .touch_feed_body(
                                due.feed_id,
                                &digest,
                                now.timestamp(),
                                response.etag.as_deref(),
                                response.last_modified.as_deref(),
                            )
                            .await?;
                        report.result = FetchResult::Unchanged;
                        (response.outcome(ParseResult::Skipped), Some(response))
                    } else {
                        match self.parse(&response, due.scrape_config.as_deref()).await {
                            Ok(parsed) => {
                                // Stored below with the outcome, in one transaction.
                                report.result = FetchResult::Parsed;
                                to_store = Some((parsed, digest));
                                (response.outcome(ParseResult::Parsed), Some(response))
                            }
                            Err(message) => {
                                // Kept too: a parser fix then reaches it (`tidings reparse`).
                                self.save_body(due.feed_id, &response, digest, now, Some(&message))
                                    .await?;
                                report.result = FetchResult::ParseFailed;
                                report.error = Some(message.clone());
                                failure_reason = Some("parse".to_owned());
                                (
                                    response.outcome(ParseResult::Failed(message)),
                                    Some(response),
                                )
                            }
                        }
                    }
                } else {
                    report.result = FetchResult::HttpError;
                    failure_reason = Some("http_status".to_owned());
                    (response.outcome(ParseResult::Skipped), Some(response))
                }
            }
        };
        Ok(Examined {
            outcome,
            response,
            to_store,
            failure_reason,
        })
    }

    /// The scheduling policy's decision on the outcome, and the record the store keeps of it.
    fn schedule(
        &self,
        due: &DueFeed,
        outcome: &Outcome,
        response: Option<&FetchResponse>,
        now: DateTime<Utc>,
    ) -> (Decision, FetchRecord) {
        let interval = effective_interval([due.interval_minutes.clamp(0, u32::MAX as i64) as u32]);
        let counts = FailureCounts {
            consecutive_failures: due.consecutive_failures.clamp(0, u32::MAX as i64) as u32,
            consecutive_parse_failures: due.parse_failures.clamp(0, u32::MAX as i64) as u32,
        };
        let decision = decide(&self.inner.config.policy, now, outcome, counts, interval);
        let mut record = fetch_record(&decision, outcome, response, now);
        // A hub pushes this feed's updates (F18): polling is only a slow safety net while the
        // lease lasts. Failures keep their own schedule.
        if record.status == FetchStatus::Active
            && matches!(decision.next_check, NextCheck::At(_))
            && due.push_until.is_some_and(|until| until > now.timestamp())
        {
            let safety = i64::try_from(self.inner.config.websub.safety_poll.as_secs())
                .unwrap_or(i64::MAX / 2);
            record.next_check_at = record
                .next_check_at
                .max(now.timestamp().saturating_add(safety));
        }
        (decision, record)
    }

    /// Moves the feed to `new_url` after a permanent redirect; answers whether it was merged
    /// into another feed (whose favicon this queues then, instead of the moved feed's).
    async fn follow_move(
        &self,
        due: &DueFeed,
        new_url: &str,
        report: &mut FeedReport,
        parsed_feed: &mut Option<(ParsedFeed, Url)>,
        now: DateTime<Utc>,
    ) -> bool {
        let store = &self.inner.store;
        match store.move_feed(due.feed_id, new_url, now.timestamp()).await {
            Ok(FeedMove::Unchanged) => {}
            Ok(FeedMove::Renamed) => {
                tracing::info!(feed = due.feed_id, from = %url_for_log(&due.url), to = %url_for_log(new_url), "feed moved permanently");
                self.inner.metrics.record_move(false);
                report.moved_to = Some(new_url.to_owned());
            }
            Ok(FeedMove::Merged { into, .. }) => {
                tracing::info!(feed = due.feed_id, into, to = %url_for_log(new_url), "feed moved permanently; merged");
                self.inner.metrics.record_move(true);
                report.moved_to = Some(new_url.to_owned());
                report.merged_into = Some(into);
                // The favicon below belongs to the remaining feed now.
                if let Some((parsed, url)) = parsed_feed.take() {
                    self.queue_favicon(into, &parsed, &url, now).await;
                }
                return true;
            }
            Err(error) => {
                tracing::warn!(feed = due.feed_id, to = %url_for_log(new_url), %error, "the feed could not be moved");
            }
        }
        false
    }

    /// The request itself, with the stored validators: waits for the host's permit, then for
    /// a fetch slot, which it returns to hold until the round is over.
    ///
    /// A request still waiting on its server after the slow threshold (the per-host
    /// `slow_after`, 1 s by default) gives its slot to the next feed and waits in the slow
    /// budget instead, when that has room, then takes a slot again to parse and store what it
    /// got. Waiting on the network costs no CPU, and without this ten slow or trickling
    /// servers held ten of twenty slots for up to their 10 s time-out while fast feeds queued
    /// behind them (`tidings bench fetch --mix`). So `concurrency` bounds the fetches in their
    /// first second and all parsing and storing, and as many slow requests again may wait.
    async fn fetch(
        &self,
        due: &DueFeed,
    ) -> (
        Result<FetchResponse, tidings_fetch::FetchError>,
        Option<OwnedSemaphorePermit>,
    ) {
        let request = match feed_request(due) {
            Ok(request) => request,
            Err(error) => return (Err(error), None),
        };
        let host = request.url.host_str().unwrap_or_default().to_owned();
        let permit = self.inner.limiter.acquire(&host).await;
        // Never closed, so this always yields a permit.
        let slot = Arc::clone(&self.inner.slots).acquire_owned().await.ok();
        let mut fetching = std::pin::pin!(
            self.inner
                .limiter
                .watch(permit, self.inner.client.fetch(&request))
        );
        tokio::select! {
            fetched = &mut fetching => return (fetched, slot),
            () = tokio::time::sleep(self.inner.config.per_host.slow_after) => {}
        }
        let Ok(slow) = Arc::clone(&self.inner.slow_slots).try_acquire_owned() else {
            // The slow budget is full: this one keeps its slot.
            return (fetching.await, slot);
        };
        drop(slot);
        let fetched = fetching.await;
        drop(slow);
        let slot = Arc::clone(&self.inner.slots).acquire_owned().await.ok();
        (fetched, slot)
    }

    /// Parses and sanitizes on the blocking pool: both are CPU work that would stall the
    /// runtime's threads for a large feed. A scraped source's page (F7) is read with its
    /// configuration `scrape_config` instead.
    async fn parse(
        &self,
        response: &FetchResponse,
        scrape_config: Option<&str>,
    ) -> Result<ParsedFeed, String> {
        // A cheap clone: the body is reference-counted.
        let body = response.body.clone();
        self.parse_body(
            body,
            Some(response.url.clone()),
            response.charset.clone(),
            scrape_config,
        )
        .await
    }

    /// Parses and sanitizes `body` on the blocking pool, as a fetch does: `feed_url` is the
    /// URL that answered (the base of relative links), `charset` the `Content-Type` charset it
    /// came with, and `scrape_config` a scraped source's configuration (F7), which reads the
    /// body as a page instead of a feed.
    pub(crate) async fn parse_body<B: AsRef<[u8]> + Send + 'static>(
        &self,
        body: B,
        feed_url: Option<Url>,
        charset: Option<String>,
        scrape_config: Option<&str>,
    ) -> Result<ParsedFeed, String> {
        if let Some(config) = scrape_config {
            let Some(url) = feed_url else {
                return Err("a scraped source's page needs its URL to be read".to_owned());
            };
            let config = config.to_owned();
            let sanitizer = Arc::clone(&self.inner.sanitizer);
            let task = self.on_parse_turn(move || {
                scrape_and_sanitize(body.as_ref(), &url, charset, &config, &sanitizer)
            });
            return task
                .await
                .unwrap_or_else(|error| Err(format!("the scraper failed: {error}")));
        }
        let options = ParseOptions {
            feed_url,
            http_charset: charset,
            ..ParseOptions::default()
        };
        let sanitizer = Arc::clone(&self.inner.sanitizer);
        let task =
            self.on_parse_turn(move || parse_and_sanitize(body.as_ref(), &options, &sanitizer));
        match task.await {
            Ok(result) => result,
            Err(error) => Err(format!("the parser failed: {error}")),
        }
    }

    /// Stores a parsed feed's items and what it says about itself, as a fetch does (without
    /// its body and outcome: `tidings reparse`).
    pub(crate) async fn store_parsed(
        &self,
        feed_id: i64,
        parsed: &ParsedFeed,
        now: DateTime<Utc>,
    ) -> Result<UpsertCounts, StoreError> {
        let writes = FetchWrites {
            metadata: Some(parsed.metadata()),
            icon_url: parsed.icon.as_deref(),
            ..FetchWrites::default()
        };
        let turn = self.store_turn().await;
        let written = self
            .inner
            .store
            .store_fetch(feed_id, &parsed.items, now.timestamp(), &writes)
            .await?;
        drop(turn);
        self.wake_enrichment(&written);
        Ok(written.counts)
    }

    /// Stores a fetch that parsed, in one transaction: its items, what the feed says about
    /// itself, its raw body (F8), the new items' full-text (F6) and summary (F42) queueing,
    /// and for a fetched body its WebSub hub (F18), its site's known favicon and the outcome
    /// of the owner's lease (one commit per fetch: on PostgreSQL each waits for the disk).
    async fn store_fetched(
        &self,
        feed_id: i64,
        parsed: &ParsedFeed,
        response: &FetchResponse,
        sha256: String,
        now: DateTime<Utc>,
        arrival: Arrival<'_>,
    ) -> Result<FetchWritten, StoreError> {
        let body = self
            .body_to_keep(feed_id, response, sha256, now, None)
            .await;
        // The hub and topic a fetched feed advertises (its `Link` headers first, then the
        // document), or that it advertises none (F18); a pushed body says nothing new of its
        // hub.
        let (record, favicon, found) = match arrival {
            Arrival::Fetched { record, favicon } => (
                Some(record),
                favicon,
                Some(discovered_links(response, &parsed.advertised)),
            ),
            Arrival::Pushed => (None, None, None),
        };
        let (token, secret) = (random_token(), random_token());
        let threshold = self.inner.config.full_text_threshold;
        let short = move |item: &NewItem| {
            feed_text_chars(item.content.as_deref(), item.summary.as_deref()) < threshold
        };
        let writes = FetchWrites {
            metadata: Some(parsed.metadata()),
            icon_url: parsed.icon.as_deref(),
            favicon,
            body: Some(body.as_ref().map_or(BodyWrite::Drop, BodyWrite::Keep)),
            full_text: (self.inner.config.full_text_concurrency > 0).then_some(&short as ShortText),
            full_text_auto: self.inner.config.full_text_auto,
            summaries: self.inner.summarizer.queues_new_items(),
            websub: found.as_ref().map(|found| WebSubDiscovery {
                found: found.as_ref().map(|f| (f.hub.as_str(), f.topic.as_str())),
                token: &token,
                secret: &secret,
            }),
            record,
        };
        let turn = self.store_turn().await;
        let written = self
            .inner
            .store
            .store_fetch(feed_id, &parsed.items, now.timestamp(), &writes)
            .await?;
        drop(turn);
        self.wake_enrichment(&written);
        if found.is_some_and(|found| found.is_some()) {
            self.inner.websub_wakeup.notify_one();
        }
        if written.summaries_queued > 0 {
            self.inner.summarizer.wake();
        }
        Ok(written)
    }

    /// Wakes the jobs that have work from a stored fetch: tagging for new and changed items
    /// (F41), full text for queued ones (F6).
    fn wake_enrichment(&self, written: &FetchWritten) {
        if written.counts.inserted + written.counts.updated > 0 {
            self.inner.tags_wakeup.notify_one();
        }
        if written.full_text_queued > 0 {
            self.inner.full_text_wakeup.notify_one();
        }
    }

    /// Stores a body a WebSub hub pushed for `feed_id` (F18) as a fetched body is stored: parsed
    /// (or scraped with `scrape_config`) and sanitized, items upserted (search index, tags),
    /// full text queued for new items, the raw body kept. `Ok(Err(message))` when it is not a
    /// feed; nothing is stored then.
    pub(crate) async fn store_pushed(
        &self,
        feed_id: i64,
        response: &FetchResponse,
        scrape_config: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Result<UpsertCounts, String>, StoreError> {
        let parsed = match self.parse(response, scrape_config).await {
            Ok(parsed) => parsed,
            Err(message) => return Ok(Err(message)),
        };
        let digest = body::sha256_hex(&response.body);
        let counts = self
            .store_fetched(feed_id, &parsed, response, digest, now, Arrival::Pushed)
            .await?
            .counts;
        self.inner
            .metrics
            .record_items(counts.inserted, counts.updated);
        Ok(Ok(counts))
    }

    /// Keeps the raw body, compressed (F8), with what reparsing it needs and how parsing it
    /// ended (`parse_error`): the body that did not parse is kept too, so that a parser fix
    /// reaches it (`tidings reparse`).
    async fn save_body(
        &self,
        feed_id: i64,
        response: &FetchResponse,
        sha256: String,
        now: DateTime<Utc>,
        parse_error: Option<&str>,
    ) -> Result<(), StoreError> {
        let store = &self.inner.store;
        match self
            .body_to_keep(feed_id, response, sha256, now, parse_error)
            .await
        {
            Some(body) => store.save_feed_body(feed_id, &body).await,
            None => store.delete_feed_body(feed_id).await,
        }
    }

    /// The raw body to keep, compressed on the blocking pool, or `None` when it is past the
    /// stored bound (only a client configured above the 5 MB default gets one): then the older
    /// one is dropped, so that `tidings reparse` never re-derives an outdated body.
    async fn body_to_keep(
        &self,
        feed_id: i64,
        response: &FetchResponse,
        sha256: String,
        now: DateTime<Utc>,
        parse_error: Option<&str>,
    ) -> Option<FeedBody> {
        if response.body.len() > body::MAX_BODY_BYTES {
            tracing::debug!(
                feed = feed_id,
                bytes = response.body.len(),
                "body too large to keep"
            );
            return None;
        }
        let raw = response.body.clone();
        let compressed = tokio::task::spawn_blocking(move || body::compress(&raw))
            .await
            .unwrap_or_default();
        Some(FeedBody {
            fetched_at: now.timestamp(),
            content_type: response.content_type.clone(),
            charset: response.charset.clone(),
            source_url: Some(response.url.to_string()),
            etag: response.etag.clone(),
            last_modified: response.last_modified.clone(),
            sha256,
            compression: body::CODEC.to_owned(),
            raw_size: i64::try_from(response.body.len()).ok(),
            parse_error: parse_error.map(str::to_owned),
            body: compressed,
        })
    }

    /// Queues the feed's favicon when it is missing or older than `favicon_max_age`: looked
    /// up in the background once per site (or taken from a lookup of its site that just
    /// finished), so that the feed's round costs its own request only.
    async fn queue_favicon(
        &self,
        feed_id: i64,
        parsed: &ParsedFeed,
        feed_url: &Url,
        now: DateTime<Utc>,
    ) {
        let stored_at = match self.inner.store.favicon_fetched_at(feed_id).await {
            Ok(at) => at,
            Err(error) => {
                tracing::debug!(feed = feed_id, %error, "favicon state unreadable");
                return;
            }
        };
        if let Some(icon) = self.plan_favicon(feed_id, parsed, feed_url, now, stored_at) {
            self.save_favicon(icon, vec![feed_id]).await;
        }
    }

    /// [`Fetcher::queue_favicon`] without the reading and the saving: given when the feed's
    /// favicon was stored (`stored_at`), answers the icon when the feed's site's is known
    /// already (for the caller to store, e.g. with the fetch's other writes), else queues the
    /// lookup, which stores it when done.
    fn plan_favicon(
        &self,
        feed_id: i64,
        parsed: &ParsedFeed,
        feed_url: &Url,
        now: DateTime<Utc>,
        stored_at: Option<i64>,
    ) -> Option<Favicon> {
        let config = &self.inner.config;
        if !config.favicons {
            return None;
        }
        let stale = stored_at
            .is_none_or(|at| now.timestamp() - at >= config.favicon_max_age.as_secs() as i64);
        if !stale {
            return None;
        }
        let lookup = IconLookup {
            feed_icon: parsed.icon.clone(),
            site_url: parsed.site_url.clone(),
            feed_url: feed_url.clone(),
            page_icons: parsed.page_icons.clone(),
        };
        let (queued, start) = self.inner.favicons.add(feed_id, lookup);
        let known = match queued {
            Queued::Known(icon) => Some(icon),
            Queued::Waiting => None,
            Queued::Full => {
                tracing::debug!(
                    feed = feed_id,
                    "favicon queue full; trying at the next fetch"
                );
                None
            }
        };
        if start {
            let fetcher = self.clone();
            tokio::spawn(async move {
                fetcher
                    .inner
                    .favicons
                    .drain(
                        |key, lookup| {
                            let fetcher = fetcher.clone();
                            async move { fetcher.resolve_site_favicon(&key, &lookup).await }
                        },
                        |found, feeds| fetcher.save_favicon(found, feeds),
                    )
                    .await;
            });
        }
        known
    }

    /// A site's favicon, shared through the store by every feed of the site and every
    /// process: a fresh stored result is reused without a request; otherwise this process
    /// claims the site and looks it up, or, when another process has the claim, waits for its
    /// result. `None` when nothing was learnt (the store failed, or the other process's
    /// lookup did not end in time): the feeds then try again at their next fetch.
    async fn resolve_site_favicon(&self, key: &str, lookup: &IconLookup) -> Option<Favicon> {
        let inner = &self.inner;
        let max_age = i64::try_from(inner.config.favicon_max_age.as_secs()).unwrap_or(i64::MAX);
        let claim = SITE_FAVICON_CLAIM.as_secs() as i64;
        let give_up = Instant::now() + SITE_FAVICON_CLAIM;
        loop {
            let now = Utc::now().timestamp();
            let claimed = inner
                .store
                .claim_site_favicon(key, now, now.saturating_sub(max_age), claim)
                .await;
            match claimed {
                Ok(SiteFaviconClaim::Claimed) => {
                    let found = favicon::find_favicon(
                        &inner.client,
                        &inner.limiter,
                        lookup.feed_icon.as_deref(),
                        lookup.site_url.as_deref(),
                        &lookup.feed_url,
                        lookup.page_icons.as_deref(),
                    )
                    .await;
                    inner.metrics.record_favicon(found.is_some());
                    let record = favicon::favicon_record(found, Utc::now().timestamp());
                    if let Err(error) = inner.store.save_site_favicon(key, &record).await {
                        tracing::debug!(site = key, %error, "the site's favicon could not be stored");
                    }
                    return Some(record);
                }
                Ok(SiteFaviconClaim::Fresh(record)) => return Some(record),
                Ok(SiteFaviconClaim::Busy) if Instant::now() < give_up => {
                    tokio::time::sleep(SITE_FAVICON_POLL).await;
                }
                Ok(SiteFaviconClaim::Busy) => return None,
                Err(error) => {
                    tracing::debug!(site = key, %error, "the site's favicon state is unreadable");
                    return None;
                }
            }
        }
    }

    /// Stores a site's lookup result (an icon, or none found) for each of `feeds`, with the
    /// lookup's time, so that they turn stale together with their site.
    async fn save_favicon(&self, record: Favicon, feeds: Vec<i64>) {
        for feed_id in feeds {
            if let Err(error) = self.inner.store.save_favicon(feed_id, &record).await {
                tracing::debug!(feed = feed_id, %error, "the favicon could not be stored");
            }
        }
    }

    /// Waits until the favicons queued so far are looked up and stored (for one-shot runs
    /// such as `tidings refresh`, and tests).
    pub async fn wait_for_favicons(&self) {
        self.inner.favicons.wait_idle().await;
    }
}

/// The conditional GET of a claimed feed, through its own proxy when it has one.
fn feed_request(due: &DueFeed) -> Result<FetchRequest, tidings_fetch::FetchError> {
    let mut request =
        FetchRequest::parse(&due.url)?.with_validators(due.etag.clone(), due.last_modified.clone());
    if let Some(proxy) = due.proxy_url.as_deref().filter(|p| !p.trim().is_empty()) {
        // The error becomes the feed's last error, which its subscribers see: a proxy URL
        // carries credentials, so it is named redacted.
        let proxy = Url::parse(proxy).map_err(|e| {
            let shown = tidings_fetch::redact_url(proxy);
            tidings_fetch::FetchError::InvalidProxy(format!("{shown}: {e}"))
        })?;
        request = request.with_proxy(Some(proxy));
    }
    Ok(request)
}

/// Turns the policy's decision into what the store records.
fn fetch_record(
    decision: &Decision,
    outcome: &Outcome,
    response: Option<&FetchResponse>,
    now: DateTime<Utc>,
) -> FetchRecord {
    let checked_at = now.timestamp();
    let success = matches!(
        outcome,
        Outcome::Response {
            status: 200..=299 | 304,
            parse: ParseResult::Parsed | ParseResult::Skipped,
            ..
        }
    );
    let status = match decision.status {
        FeedStatus::Active => FetchStatus::Active,
        FeedStatus::Backoff => FetchStatus::Backoff,
        FeedStatus::Stopped => FetchStatus::Stopped,
    };
    // A stopped feed waits for a person, and a feed nobody follows is not claimed at all; both
    // become due at once when resumed or followed again.
    let next_check_at = match decision.next_check {
        NextCheck::At(at) => at.timestamp(),
        NextCheck::WhenResumed | NextCheck::NotScheduled => checked_at,
    };
    let hints = response.map(|r| &r.cache_hints);
    let freshness = hints.map_or(0, |h| freshness_seconds(h, now));
    let retry_after = hints.and_then(|h| retry_after_seconds(h, now));
    let seconds_from_now =
        |secs: u64| checked_at.saturating_add(i64::try_from(secs).unwrap_or(i64::MAX));
    FetchRecord {
        checked_at,
        success,
        status,
        status_reason: decision.reason.clone(),
        next_check_at,
        http_status: decision.http_status.map(i64::from),
        error: (!success).then(|| decision.reason.clone()).flatten(),
        consecutive_failures: i64::from(decision.counts.consecutive_failures),
        parse_failures: i64::from(decision.counts.consecutive_parse_failures),
        etag: response.and_then(|r| r.etag.clone()),
        last_modified: response.and_then(|r| r.last_modified.clone()),
        cache_control: hints.and_then(|h| h.cache_control.clone()),
        expires_at: (freshness > 0).then(|| seconds_from_now(freshness)),
        retry_after_until: retry_after.filter(|secs| *secs > 0).map(seconds_from_now),
    }
}
