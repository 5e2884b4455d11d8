//! Notifications of new items to webhooks (F43), as an [`EnrichmentJob`] beside the fetching:
//! fire-and-forget, never in the fetch's way.
//!
//! Each round of [`NotificationJob`] first runs the store's matcher (new items since its
//! cursor, queued per channel by the channels' rules), then claims channels with queued items
//! whose pace, back-off and breaker allow a message, each with a lease. A message carries a
//! channel's oldest queued items (up to 10), built by `tidings-notify` for the channel's kind,
//! POSTed through the SSRF-guarded client to the channel's URL (Discord's and Slack's under the
//! configured bases), and its outcome judged by the [`DeliveryPolicy`]: the channel's next
//! send time, failures in a row and breaker, the items' fate and a log row are stored at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tidings_feed::text::html_to_text;
use tidings_fetch::{FetchError, GuardedClient};
use tidings_notify::send::DeliveryError;
use tidings_notify::{Channel, Kind, Notice, build_payload, deliver};
use tidings_store::{DeliveryRecord, QueuedItem, Store, StoreError, Webhook, WebhookMessage};
use url::Url;

pub use crate::config::notifications::{
    DEFAULT_CONCURRENCY, DEFAULT_MAX_QUEUE_AGE, DEFAULT_POLL, DEFAULT_TIMEOUT, NotificationConfig,
};
use crate::enrich::EnrichmentJob;
use crate::fetcher::Fetcher;
use crate::metrics::WorkerMetrics;

/// Matcher steps per round at most, so that a large backlog never holds the deliveries.
const MATCH_STEPS_PER_ROUND: usize = 20;

/// Sends messages to channels: the client and settings the job and the API's "send test"
/// share.
#[derive(Debug, Clone)]
pub struct Notifier {
    /// For generic webhooks: user-given URLs, under the operator's guard as it is.
    client: GuardedClient,
    /// For Discord and Slack: the same guard, plus the operator's own bases when they are IP
    /// addresses. Kept apart so that allowing a stand-in's address never lets a user's
    /// generic URL reach it.
    service_client: GuardedClient,
    config: NotificationConfig,
}

/// What a "send test" did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// The answer's status, when there was an answer.
    pub http_status: Option<u16>,
    /// What went wrong; `None` when the message went through.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: i64,
}

impl Notifier {
    /// A notifier for `fetcher`'s process: its client's guard and settings, with the
    /// notification time-out, and the operator's Discord and Slack bases allowed when they
    /// are IP addresses (a stand-in or a relay; user-given URLs never are).
    pub fn new(fetcher: &Fetcher) -> Result<Notifier, FetchError> {
        let config = fetcher.config().notifications.clone();
        let mut client = fetcher.client().config().clone();
        client.timeout = config.timeout;
        client.first_byte_timeout = client.first_byte_timeout.min(config.timeout);
        let mut service = client.clone();
        for base in config.endpoints.operator_hosts() {
            service.allow_operator_base(base);
        }
        Ok(Notifier {
            client: GuardedClient::new(client)?,
            service_client: GuardedClient::new(service)?,
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &NotificationConfig {
        &self.config
    }

    /// Where a message to a channel of `kind` at `url` goes, or why it cannot.
    fn target(&self, kind: Kind, url: &str) -> Result<Url, DeliveryError> {
        tidings_notify::validate_url(kind, url)
            .map(|url| self.config.endpoints.delivery_url(kind, &url))
            .map_err(|error| DeliveryError {
                status: None,
                message: error.to_string(),
                retryable: false,
                retry_after: None,
            })
    }

    /// Sends `notices` to a channel, signed with `signing` when the channel has a secret;
    /// answers the status or why it failed.
    pub async fn send(
        &self,
        kind: Kind,
        channel: &Channel,
        url: &str,
        notices: &[Notice],
        test: bool,
        signing: Option<&tidings_notify::SigningSecret>,
    ) -> Result<u16, DeliveryError> {
        let target = self.target(kind, url)?;
        let payload = build_payload(kind, channel, notices, test);
        let client = match kind {
            Kind::Generic => &self.client,
            Kind::Discord | Kind::Slack => &self.service_client,
        };
        deliver(client, &target, &payload, kind != Kind::Generic, signing)
            .await
            .map(|answer| answer.status)
    }

    /// Sends the "send test" message to `webhook` now, outside the queue and its pace, and
    /// logs it in the channel's delivery log.
    pub async fn send_test(
        &self,
        store: &Store,
        webhook: &Webhook,
    ) -> Result<TestOutcome, StoreError> {
        let channel = Channel {
            id: webhook.id,
            name: webhook.name.clone(),
        };
        let started = Instant::now();
        let notice = tidings_notify::test_notice(Utc::now());
        let result = self
            .send(
                webhook.kind,
                &channel,
                &webhook.url,
                &[notice],
                true,
                webhook.signing_secret.as_ref(),
            )
            .await;
        let duration_ms = started.elapsed().as_millis() as i64;
        let logged = result
            .as_ref()
            .map(|status| *status)
            .map_err(|error| (error.status, error.message.clone()));
        store
            .log_webhook_test(webhook.id, logged, duration_ms, Utc::now().timestamp())
            .await?;
        Ok(match result {
            Ok(status) => TestOutcome {
                http_status: Some(status),
                error: None,
                duration_ms,
            },
            Err(error) => TestOutcome {
                http_status: error.status,
                error: Some(error.message),
                duration_ms,
            },
        })
    }
}

/// A queued item as a message shows it: its text as plain text, its time as a date.
pub fn notice_of(item: &QueuedItem) -> Notice {
    let text = item
        .summary
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .or(item.content.as_deref())
        .and_then(html_to_text);
    Notice {
        item_id: item.item_id,
        feed_id: item.feed_id,
        feed_title: item.feed_title.clone(),
        title: item.title.clone(),
        url: item.url.clone(),
        author: item.author.clone(),
        summary: text,
        published_at: DateTime::from_timestamp(item.published_at, 0).unwrap_or_default(),
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The notification queue as an [`EnrichmentJob`] of a worker.
#[derive(Debug, Clone)]
pub struct NotificationJob {
    store: Store,
    owner: String,
    notifier: Notifier,
    metrics: Arc<WorkerMetrics>,
}

impl NotificationJob {
    /// The job of `fetcher`'s worker.
    pub fn new(fetcher: &Fetcher) -> Result<NotificationJob, FetchError> {
        Ok(NotificationJob {
            store: fetcher.store().clone(),
            owner: fetcher.config().owner.clone(),
            notifier: Notifier::new(fetcher)?,
            metrics: Arc::clone(fetcher.metrics()),
        })
    }

    /// Runs the matcher until it is caught up (or has done a round's share).
    pub async fn match_new_items(&self) -> Result<u64, StoreError> {
        let mut queued = 0;
        for _ in 0..MATCH_STEPS_PER_ROUND {
            let step = self
                .store
                .match_new_items(
                    &self.owner,
                    Utc::now().timestamp(),
                    &self.notifier.config.matching,
                )
                .await?;
            queued += step.queued;
            if !step.more {
                break;
            }
        }
        Ok(queued)
    }

    /// Sends one claimed message and records its outcome.
    pub async fn send_message(&self, message: WebhookMessage) {
        let policy = &self.notifier.config.policy;
        let channel = Channel {
            id: message.webhook_id,
            name: message.name.clone(),
        };
        let notices: Vec<Notice> = message.items.iter().map(notice_of).collect();
        let started = Instant::now();
        let result = self
            .notifier
            .send(
                message.kind,
                &channel,
                &message.url,
                &notices,
                false,
                message.signing_secret.as_ref(),
            )
            .await;
        let duration_ms = started.elapsed().as_millis() as i64;
        let attempts = u32::try_from(message.attempt).unwrap_or(u32::MAX);
        let failures = u32::try_from(message.failures).unwrap_or(u32::MAX);
        let verdict = policy.judge(result.as_ref().map(|_| ()), attempts, failures);
        let now_ms = Utc::now().timestamp_millis();
        let next_send_ms = now_ms.saturating_add(millis(verdict.wait));
        // The breaker stays open (shown to the user) while the channel keeps failing past the
        // threshold; the next message after the pause is the half-open trial.
        let breaker_until_ms =
            (verdict.failures >= policy.breaker_threshold).then_some(next_send_ms);
        if verdict.opened_breaker {
            tracing::warn!(
                webhook = message.webhook_id,
                failures = verdict.failures,
                pause_seconds = verdict.wait.as_secs(),
                "a notification channel keeps failing; its circuit breaker is open"
            );
        }
        let (http_status, error) = match &result {
            Ok(status) => (Some(*status), None),
            Err(error) => (error.status, Some(error.message.clone())),
        };
        self.metrics.record_webhook_message(verdict.status);
        let record = DeliveryRecord {
            webhook_id: message.webhook_id,
            item_ids: message.items.iter().map(|i| i.item_id).collect(),
            done: verdict.done,
            failures: i64::from(verdict.failures),
            next_send_ms,
            breaker_until_ms,
            status: verdict.status,
            http_status,
            error,
            duration_ms,
            at: Utc::now().timestamp(),
        };
        if let Err(error) = self
            .store
            .record_webhook_delivery(&self.owner, &record)
            .await
        {
            // The lease runs out and the message is sent again: a duplicate beats a loss.
            tracing::warn!(%error, webhook = message.webhook_id, "recording a delivery failed");
        }
    }
}

impl EnrichmentJob for NotificationJob {
    type Task = WebhookMessage;

    fn name(&self) -> &'static str {
        "notifications"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<WebhookMessage>, StoreError> {
        if let Err(error) = self.match_new_items().await {
            // Deliveries of what is queued go on; matching is tried again next round.
            tracing::warn!(%error, "matching new items to notification channels failed");
        }
        let config = &self.notifier.config;
        self.store
            .claim_webhook_messages(
                &self.owner,
                Utc::now().timestamp_millis(),
                limit as i64,
                // A message takes at most the time-out; the lease outlasts it.
                (config.timeout.as_secs() as i64).saturating_mul(3).max(30),
                config.max_queue_age.as_secs() as i64,
            )
            .await
    }

    async fn run(&self, message: WebhookMessage) {
        self.send_message(message).await;
    }
}

/// Builds the notification job of `fetcher`'s worker, or `None` when notifications are off
/// in this process (or its client cannot be built, which is logged).
pub fn configured_job(fetcher: &Fetcher) -> Option<NotificationJob> {
    if fetcher.config().notifications.concurrency == 0 {
        return None;
    }
    match NotificationJob::new(fetcher) {
        Ok(job) => Some(job),
        Err(error) => {
            tracing::warn!(%error, "notifications are off: their client could not be built");
            None
        }
    }
}
