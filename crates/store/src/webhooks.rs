//! Notifications to webhooks (F43): a user's channels with their rules, the queue of new items
//! waiting for each channel, the delivery log, and the matcher that fills the queue.
//!
//! New items reach the queue without touching the fetch: the matcher ([`Store::match_new_items`],
//! run by the worker) reads the items stored since its cursor, in id order, and queues each
//! for the channels whose rules it passes. On PostgreSQL an item id can become visible before a
//! smaller one whose transaction is still open, so the matcher only passes items stored at
//! least `lag` seconds ago (no item transaction stays open that long); SQLite's single writer
//! commits in id order and needs no lag. Deliveries are claimed per channel with a lease
//! ([`Store::claim_webhook_messages`]), and their outcome, the channel's pace and breaker and a
//! log row are written in one transaction ([`Store::record_webhook_delivery`]).

use crate::lease::Lease;
use std::collections::HashMap;

use tidings_notify::{Kind, Rules, SigningSecret, item_tokens, keywords_match};

use crate::{Engine, Result, Store, StoreError, in_tx, with_db};

/// The most channels one user may have.
pub const MAX_WEBHOOKS_PER_USER: i64 = 20;
/// Delivery log rows kept per channel (older ones are deleted as new ones come).
pub const DELIVERY_LOG_KEEP: i64 = 100;
/// The longest channel name.
pub const MAX_WEBHOOK_NAME_CHARS: usize = 100;
/// Characters of an item's text the keywords are looked for in (its beginning).
const KEYWORD_TEXT_CHARS: usize = 20_000;
/// Items per message a claim reads at most (Discord's 10 embeds).
pub const MESSAGE_ITEMS: i64 = 10;

/// A notification channel.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Webhook {
    /// Its id.
    pub id: i64,
    /// What it speaks.
    pub kind: Kind,
    /// The name the user gave it.
    pub name: String,
    /// Where messages go (as the service gave it).
    pub url: String,
    /// Which new items it gets.
    pub rules: Rules,
    /// Whether it gets any.
    pub enabled: bool,
    /// When it was created (Unix seconds).
    pub created_at: i64,
    /// When the user last changed it.
    pub updated_at: i64,
    /// Failed messages in a row.
    pub failures: i64,
    /// Until when its circuit breaker is open (Unix ms), if it is.
    pub breaker_until_ms: Option<i64>,
    /// When a message last went through (Unix seconds).
    pub last_sent_at: Option<i64>,
    /// Items waiting for it.
    pub queued: i64,
    /// The secret its messages are signed with (generic channels; `None` for Discord and
    /// Slack, and for generic channels from before signing until their secret is renewed).
    /// Never serialized: the API shows it once, when it is made.
    #[serde(skip)]
    pub signing_secret: Option<SigningSecret>,
}

/// A channel as the user creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhook {
    /// What it speaks.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Its URL, already validated for `kind` ([`tidings_notify::validate_url`]).
    pub url: String,
    /// Its rules, already normalized ([`Rules::normalized`]).
    pub rules: Rules,
    /// Whether it is on.
    pub enabled: bool,
}

/// Changes to a channel; `None` keeps the field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookChanges {
    /// A new name.
    pub name: Option<String>,
    /// A new URL (validated for the channel's kind). Resets the failures and the breaker:
    /// it is a new target.
    pub url: Option<String>,
    /// New rules (normalized).
    pub rules: Option<Rules>,
    /// On or off.
    pub enabled: Option<bool>,
}

/// A row of a channel's delivery log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryLogEntry {
    /// Its id (newer rows have larger ids).
    pub id: i64,
    /// When (Unix seconds).
    pub at: i64,
    /// `sent`, `retrying` (failed, tried again later), `dropped` (failed for good, or waited
    /// too long) or `failed` (a test that did not go through).
    pub status: String,
    /// Whether it was a "send test" message.
    pub test: bool,
    /// The answer's status, when there was an answer.
    pub http_status: Option<i64>,
    /// Items in the message.
    pub items: i64,
    /// What went wrong.
    pub error: Option<String>,
    /// How long the request took.
    pub duration_ms: i64,
}

/// A queued item as a message shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedItem {
    /// The item's id.
    pub item_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// The subscription's title, else the feed's, else its URL.
    pub feed_title: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its link.
    pub url: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Its sanitized summary.
    pub summary: Option<String>,
    /// Its sanitized content.
    pub content: Option<String>,
    /// When it was published (Unix seconds).
    pub published_at: i64,
}

/// A message to send: a leased channel and its oldest queued items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookMessage {
    /// The channel's id.
    pub webhook_id: i64,
    /// What it speaks.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// The secret to sign the message with, if the channel has one.
    pub signing_secret: Option<SigningSecret>,
    /// Its failures in a row before this message.
    pub failures: i64,
    /// Which attempt this is at the message's items (1 = first).
    pub attempt: i64,
    /// The items, earliest published first (at most [`MESSAGE_ITEMS`]).
    pub items: Vec<QueuedItem>,
}

/// What became of a message, to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// The channel.
    pub webhook_id: i64,
    /// The items the message carried.
    pub item_ids: Vec<i64>,
    /// Whether the items leave the queue (sent, or dropped for good).
    pub done: bool,
    /// The channel's failures in a row now.
    pub failures: i64,
    /// Nothing is sent to the channel before this (Unix ms).
    pub next_send_ms: i64,
    /// Until when the breaker is open, when this opened it (or kept it open).
    pub breaker_until_ms: Option<i64>,
    /// The log's status: `sent`, `retrying`, `dropped`.
    pub status: &'static str,
    /// The answer's status.
    pub http_status: Option<u16>,
    /// What went wrong.
    pub error: Option<String>,
    /// How long the request took.
    pub duration_ms: i64,
    /// When (Unix seconds).
    pub at: i64,
}

/// How the matcher judges items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchSettings {
    /// Items read per step.
    pub batch: i64,
    /// PostgreSQL only: items stored less than this many seconds ago wait for the next step.
    pub lag_seconds: i64,
    /// Items published more than this long before tidings stored them are not news (a new
    /// subscription's backlog) and are not sent.
    pub max_age_seconds: i64,
    /// The matcher's lease.
    pub lease_seconds: i64,
}

impl Default for MatchSettings {
    fn default() -> MatchSettings {
        MatchSettings {
            batch: 500,
            lag_seconds: 30,
            max_age_seconds: 24 * 3600,
            lease_seconds: 300,
        }
    }
}

/// What a matcher step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MatchStep {
    /// Items read.
    pub items: u64,
    /// (channel, item) rows queued.
    pub queued: u64,
    /// Whether more items may be ready at once (the step read a full batch).
    pub more: bool,
}

type WebhookRow = (
    (i64, String, String, String, String, bool, i64, i64),
    (i64, Option<i64>, Option<i64>, i64, Option<String>),
);

crate::row_decoder!(
    webhook_row -> WebhookRow {
        (0, 1, 2, 3, 4, 5, 6, 7),
        (8, 9, 10, 11, 12)
    }
);

const WEBHOOK_COLUMNS: &str = "w.id, w.kind, w.name, w.url, w.rules, w.enabled, w.created_at,
    w.updated_at, w.failures, w.breaker_until_ms, w.last_sent_at,
    (SELECT COUNT(*) FROM webhook_queue q WHERE q.webhook_id = w.id), w.signing_secret";

fn parse_kind(kind: &str) -> Result<Kind> {
    Kind::parse(kind).ok_or_else(|| StoreError::Invalid(format!("unknown channel kind {kind}")))
}

fn parse_rules(rules: &str) -> Rules {
    // Rules are written by this module only; an unreadable value is treated as "no rule"
    // rather than breaking the channel list.
    serde_json::from_str(rules).unwrap_or_default()
}

fn to_webhook(row: WebhookRow) -> Result<Webhook> {
    let ((id, kind, name, url, rules, enabled, created_at, updated_at), rest) = row;
    let (failures, breaker_until_ms, last_sent_at, queued, signing_secret) = rest;
    Ok(Webhook {
        id,
        kind: parse_kind(&kind)?,
        name,
        url,
        rules: parse_rules(&rules),
        enabled,
        created_at,
        updated_at,
        failures,
        breaker_until_ms,
        last_sent_at,
        queued,
        signing_secret: signing_secret.map(SigningSecret::from_stored),
    })
}

fn check_name(name: &str) -> Result<String> {
    let name = crate::strip_control_chars(name.trim()).into_owned();
    if name.is_empty() {
        return Err(StoreError::Invalid("a channel needs a name".into()));
    }
    if name.chars().count() > MAX_WEBHOOK_NAME_CHARS {
        return Err(StoreError::Invalid(format!(
            "a channel's name has at most {MAX_WEBHOOK_NAME_CHARS} characters"
        )));
    }
    Ok(name)
}

/// `$start, $start+1, …` for `count` values.
fn placeholders(start: usize, count: usize) -> String {
    (start..start + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Inserts a delivery log row inside `$tx` and deletes the channel's rows past the newest
/// [`DELIVERY_LOG_KEEP`].
macro_rules! insert_log {
    ($tx:expr, $webhook:expr, $at:expr, $status:expr, $test:expr, $http:expr, $items:expr, $error:expr, $duration:expr) => {{
        let http: Option<i64> = $http.map(i64::from);
        let error: Option<String> = $error;
        sqlx::query(
            "INSERT INTO webhook_deliveries
                 (webhook_id, at, status, is_test, http_status, items, error, duration_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind($webhook)
        .bind($at)
        .bind($status)
        .bind($test)
        .bind(http)
        .bind($items)
        .bind(error)
        .bind($duration)
        .execute(&mut *$tx)
        .await?;
        sqlx::query(
            "DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND id <= (
                 SELECT id FROM webhook_deliveries WHERE webhook_id = $1
                 ORDER BY id DESC LIMIT 1 OFFSET $2)",
        )
        .bind($webhook)
        .bind(DELIVERY_LOG_KEEP)
        .execute(&mut *$tx)
        .await?;
    }};
}

/// Checks inside `$tx` that the rules name only `$user`'s subscriptions and groups.
macro_rules! check_rule_sources {
    ($tx:expr, $user:expr, $rules:expr) => {{
        let rules: &Rules = $rules;
        for feed_id in &rules.feed_ids {
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT feed_id FROM subscriptions WHERE user_id = $1 AND feed_id = $2",
            )
            .bind($user)
            .bind(*feed_id)
            .fetch_optional(&mut *$tx)
            .await?;
            if found.is_none() {
                return Err(StoreError::Invalid(format!(
                    "feed {feed_id} is not one of your subscriptions"
                )));
            }
        }
        for group_id in &rules.group_ids {
            let found: Option<i64> =
                sqlx::query_scalar("SELECT id FROM feed_groups WHERE user_id = $1 AND id = $2")
                    .bind($user)
                    .bind(*group_id)
                    .fetch_optional(&mut *$tx)
                    .await?;
            if found.is_none() {
                return Err(StoreError::Invalid(format!(
                    "group {group_id} is not one of your groups"
                )));
            }
        }
    }};
}

/// An item the matcher reads.
struct Candidate {
    id: i64,
    feed_id: i64,
    title: Option<String>,
    text: Option<String>,
    published_at: i64,
    fetched_at: i64,
}

impl Store {
    /// Creates a channel for `user_id`; refused past [`MAX_WEBHOOKS_PER_USER`] or when its
    /// rules name feeds or groups that are not the user's. It gets the items stored from now.
    /// A generic channel gets a new signing secret (in the answer, to show once).
    pub async fn create_webhook(
        &self,
        user_id: i64,
        new: &NewWebhook,
        now: i64,
    ) -> Result<Webhook> {
        let name = check_name(&new.name)?;
        let rules = serde_json::to_string(&new.rules).unwrap_or_else(|_| "{}".into());
        let secret = (new.kind == Kind::Generic).then(SigningSecret::generate);
        let secret = secret.as_ref().map(SigningSecret::expose);
        let id: i64 = in_tx!(self, |tx| {
            let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM webhooks WHERE user_id = $1")
                .bind(user_id)
                .fetch_one(&mut *tx)
                .await?;
            if count >= MAX_WEBHOOKS_PER_USER {
                return Err(StoreError::LimitReached {
                    what: "notification channels",
                    limit: MAX_WEBHOOKS_PER_USER,
                });
            }
            check_rule_sources!(tx, user_id, &new.rules);
            sqlx::query_scalar(
                "INSERT INTO webhooks (user_id, kind, name, url, rules, enabled, after_item_id,
                                       created_at, updated_at, signing_secret)
                 VALUES ($1, $2, $3, $4, $5, $6, (SELECT COALESCE(MAX(id), 0) FROM items), $7, $7,
                         $8)
                 RETURNING id",
            )
            .bind(user_id)
            .bind(new.kind.as_str())
            .bind(&name)
            .bind(&new.url)
            .bind(&rules)
            .bind(new.enabled)
            .bind(now)
            .bind(secret)
            .fetch_one(&mut *tx)
            .await?
        });
        self.webhook(user_id, id).await
    }

    /// Gives one of the user's generic channels a new signing secret (the old one stops
    /// working at once) and returns it, to show once. Discord and Slack channels are not
    /// signed: [`StoreError::Invalid`].
    pub async fn renew_webhook_secret(&self, user_id: i64, id: i64) -> Result<SigningSecret> {
        let webhook = self.webhook(user_id, id).await?;
        if webhook.kind != Kind::Generic {
            return Err(StoreError::Invalid(format!(
                "only generic channels are signed, not {} ones",
                webhook.kind.as_str()
            )));
        }
        let secret = SigningSecret::generate();
        with_db!(self, write, |db| {
            sqlx::query("UPDATE webhooks SET signing_secret = $1 WHERE id = $2 AND user_id = $3")
                .bind(secret.expose())
                .bind(id)
                .bind(user_id)
                .execute(db)
                .await?;
        });
        Ok(secret)
    }

    /// The user's channels, oldest first.
    pub async fn webhooks(&self, user_id: i64) -> Result<Vec<Webhook>> {
        let sql =
            format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks w WHERE w.user_id = $1 ORDER BY w.id");
        let rows: Vec<WebhookRow> = with_db!(self, read, |db| {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .fetch_all(db)
                .await?;
            rows.iter()
                .map(webhook_row)
                .collect::<std::result::Result<Vec<_>, _>>()?
        });
        rows.into_iter().map(to_webhook).collect()
    }

    /// One of the user's channels ([`StoreError::NotFound`] when it is not theirs).
    pub async fn webhook(&self, user_id: i64, id: i64) -> Result<Webhook> {
        let sql =
            format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks w WHERE w.user_id = $1 AND w.id = $2");
        let row: Option<WebhookRow> = with_db!(self, read, |db| {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(id)
                .fetch_optional(db)
                .await?;
            row.as_ref().map(webhook_row).transpose()?
        });
        match row {
            Some(row) => to_webhook(row),
            None => Err(StoreError::NotFound("notification channel")),
        }
    }

    /// Changes one of the user's channels.
    pub async fn update_webhook(
        &self,
        user_id: i64,
        id: i64,
        changes: &WebhookChanges,
        now: i64,
    ) -> Result<Webhook> {
        let name = changes.name.as_deref().map(check_name).transpose()?;
        let rules = changes
            .rules
            .as_ref()
            .map(|rules| serde_json::to_string(rules).unwrap_or_else(|_| "{}".into()));
        in_tx!(self, |tx| {
            let exists: Option<i64> =
                sqlx::query_scalar("SELECT id FROM webhooks WHERE user_id = $1 AND id = $2")
                    .bind(user_id)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if exists.is_none() {
                return Err(StoreError::NotFound("notification channel"));
            }
            if let Some(rules) = &changes.rules {
                check_rule_sources!(tx, user_id, rules);
            }
            let new_url = changes.url.is_some();
            sqlx::query(
                "UPDATE webhooks SET name = COALESCE($1, name), url = COALESCE($2, url),
                        rules = COALESCE($3, rules), enabled = COALESCE($4, enabled),
                        failures = CASE WHEN $5 THEN 0 ELSE failures END,
                        breaker_until_ms = CASE WHEN $5 THEN NULL ELSE breaker_until_ms END,
                        next_send_ms = CASE WHEN $5 THEN 0 ELSE next_send_ms END,
                        updated_at = $6
                 WHERE id = $7",
            )
            .bind(name.as_deref())
            .bind(changes.url.as_deref())
            .bind(rules.as_deref())
            .bind(changes.enabled)
            .bind(new_url)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        });
        self.webhook(user_id, id).await
    }

    /// Deletes one of the user's channels with its queue and log.
    pub async fn delete_webhook(&self, user_id: i64, id: i64) -> Result<()> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM webhooks WHERE user_id = $1 AND id = $2")
                .bind(user_id)
                .bind(id)
                .execute(db)
                .await?
                .rows_affected()
        });
        if deleted == 0 {
            return Err(StoreError::NotFound("notification channel"));
        }
        Ok(())
    }

    /// The newest `limit` rows of one of the user's channels' delivery log, newest first.
    pub async fn webhook_deliveries(
        &self,
        user_id: i64,
        id: i64,
        limit: i64,
    ) -> Result<Vec<DeliveryLogEntry>> {
        // Checks the channel is the user's (NotFound otherwise).
        self.webhook(user_id, id).await?;
        let rows: Vec<(
            i64,
            i64,
            String,
            bool,
            Option<i64>,
            i64,
            Option<String>,
            i64,
        )> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, at, status, is_test, http_status, items, error, duration_ms
                     FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2",
            )
            .bind(id)
            .bind(limit.clamp(1, DELIVERY_LOG_KEEP))
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(id, at, status, test, http_status, items, error, duration_ms)| DeliveryLogEntry {
                    id,
                    at,
                    status,
                    test,
                    http_status,
                    items,
                    error,
                    duration_ms,
                },
            )
            .collect())
    }

    /// Logs a "send test" message of one of the user's channels (it changes neither the queue
    /// nor the pace).
    pub async fn log_webhook_test(
        &self,
        webhook_id: i64,
        result: std::result::Result<u16, (Option<u16>, String)>,
        duration_ms: i64,
        at: i64,
    ) -> Result<()> {
        let (status, http_status, error) = match result {
            Ok(code) => ("sent", Some(code), None),
            Err((code, error)) => ("failed", code, Some(error)),
        };
        in_tx!(self, |tx| {
            insert_log!(
                tx,
                webhook_id,
                at,
                status,
                true,
                http_status,
                0i64,
                error,
                duration_ms
            );
        });
        Ok(())
    }

    /// Items waiting in channels' queues, all users together.
    pub async fn webhook_queue_len(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM webhook_queue")
                .fetch_one(db)
                .await?
        }))
    }

    /// One matcher step: reads the items stored since the cursor (at most `settings.batch`),
    /// queues each for the enabled channels whose rules it passes, and moves the cursor past
    /// them, under a lease so that one worker at a time does it. Does nothing when no channel
    /// is enabled. See the module's notes on the lag.
    pub async fn match_new_items(
        &self,
        owner: &str,
        now: i64,
        settings: &MatchSettings,
    ) -> Result<MatchStep> {
        let first_new: Option<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT MIN(after_item_id) FROM webhooks WHERE enabled = $1")
                .bind(true)
                .fetch_one(db)
                .await?
        });
        let Some(first_new) = first_new else {
            return Ok(MatchStep::default());
        };
        // Nothing new since the cursor: no lease to write (SQLite's one writer is shared).
        let (next, newest): (i64, i64) = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT m.next_item_id, (SELECT COALESCE(MAX(id), 0) FROM items)
                 FROM webhook_matcher m WHERE m.id = 1",
            )
            .fetch_one(db)
            .await?
        });
        if newest < next.max(first_new + 1) {
            return Ok(MatchStep::default());
        }
        let lease_until = now.saturating_add(settings.lease_seconds.max(1));
        let cursor: Option<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "UPDATE webhook_matcher SET lease_owner = $1, lease_until = $2
                 WHERE id = 1 AND (lease_until IS NULL OR lease_until <= $3 OR lease_owner = $1)
                 RETURNING next_item_id",
            )
            .bind(owner)
            .bind(lease_until)
            .bind(now)
            .fetch_optional(db)
            .await?
        });
        let Some(cursor) = cursor else {
            return Ok(MatchStep::default());
        };
        let start = cursor.max(first_new + 1);
        let batch = settings.batch.clamp(1, 10_000);
        let rows: Vec<(
            i64,
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            i64,
            i64,
        )> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, feed_id, title, content, summary, published_at, fetched_at
                     FROM items WHERE id >= $1 ORDER BY id LIMIT $2",
            )
            .bind(start)
            .bind(batch)
            .fetch_all(db)
            .await?
        });
        let full = rows.len() as i64 == batch;
        let lag = match self.engine() {
            Engine::Sqlite => 0,
            Engine::Postgres => settings.lag_seconds.max(0),
        };
        let mut items: Vec<Candidate> = Vec::with_capacity(rows.len());
        let mut stopped_early = false;
        for (id, feed_id, title, content, summary, published_at, fetched_at) in rows {
            if fetched_at > now - lag {
                stopped_early = true;
                break;
            }
            let text = content.filter(|c| !c.trim().is_empty()).or(summary);
            items.push(Candidate {
                id,
                feed_id,
                title,
                text,
                published_at,
                fetched_at,
            });
        }
        let next = items.last().map_or(start, |item| item.id + 1);
        let queue = if items.is_empty() {
            Vec::new()
        } else {
            self.channels_matching(&items, settings).await?
        };
        in_tx!(self, |tx| {
            for chunk in queue.chunks(200) {
                let values: Vec<String> = (0..chunk.len())
                    .map(|n| format!("(${}, ${}, $1)", 2 * n + 2, 2 * n + 3))
                    .collect();
                let mut insert = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO webhook_queue (webhook_id, item_id, queued_at) VALUES {}
                     ON CONFLICT (webhook_id, item_id) DO NOTHING",
                    values.join(", ")
                )))
                .bind(now);
                for (webhook_id, item_id) in chunk {
                    insert = insert.bind(*webhook_id).bind(*item_id);
                }
                insert.execute(&mut *tx).await?;
            }
            sqlx::query(
                "UPDATE webhook_matcher SET next_item_id = $1, lease_owner = NULL, lease_until = NULL
                 WHERE id = 1 AND lease_owner = $2",
            )
            .bind(next)
            .bind(owner)
            .execute(&mut *tx)
            .await?;
        });
        Ok(MatchStep {
            items: items.len() as u64,
            queued: queue.len() as u64,
            more: full && !stopped_early,
        })
    }

    /// The (channel, item) pairs to queue for `items`: each enabled channel of a subscriber of
    /// the item's feed (who has not paused it) whose sources and keywords match it, for items not older than the
    /// channel's start and within the settings' age.
    async fn channels_matching(
        &self,
        items: &[Candidate],
        settings: &MatchSettings,
    ) -> Result<Vec<(i64, i64)>> {
        let mut queue: Vec<(i64, i64)> = Vec::new();
        let mut feed_ids: Vec<i64> = items.iter().map(|i| i.feed_id).collect();
        feed_ids.sort_unstable();
        feed_ids.dedup();
        let sql = format!(
            "SELECT w.id, w.rules, w.after_item_id, s.feed_id, s.group_id
             FROM webhooks w JOIN subscriptions s ON s.user_id = w.user_id
             WHERE w.enabled = $1 AND s.suspended = FALSE AND s.feed_id IN ({})",
            placeholders(2, feed_ids.len())
        );
        let pairs: Vec<(i64, String, i64, i64, i64)> = with_db!(self, read, |db| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(true);
            for id in &feed_ids {
                query = query.bind(*id);
            }
            query.fetch_all(db).await?
        });
        let mut by_feed: HashMap<i64, Vec<(i64, Rules, i64, i64)>> = HashMap::new();
        for (webhook_id, rules, after, feed_id, group_id) in pairs {
            by_feed.entry(feed_id).or_default().push((
                webhook_id,
                parse_rules(&rules),
                after,
                group_id,
            ));
        }
        let mut compiled = HashMap::new();
        for item in items {
            let Some(channels) = by_feed.get(&item.feed_id) else {
                continue;
            };
            if item.published_at < item.fetched_at - settings.max_age_seconds {
                continue;
            }
            let mut tokens: Option<Vec<String>> = None;
            for (webhook_id, rules, after, group_id) in channels {
                if item.id <= *after || !rules.source_matches(item.feed_id, *group_id) {
                    continue;
                }
                let keywords = compiled
                    .entry(*webhook_id)
                    .or_insert_with(|| rules.compiled_keywords());
                if !keywords.is_empty() {
                    let tokens = tokens.get_or_insert_with(|| {
                        let text = item
                            .text
                            .as_deref()
                            .and_then(tidings_feed::text::html_to_text)
                            .unwrap_or_default();
                        let text: String = text.chars().take(KEYWORD_TEXT_CHARS).collect();
                        item_tokens(item.title.as_deref().unwrap_or_default(), &text)
                    });
                    if !keywords_match(keywords, tokens) {
                        continue;
                    }
                }
                queue.push((*webhook_id, item.id));
            }
        }
        Ok(queue)
    }

    /// Claims up to `limit` channels that have queued items and may be sent to now (their
    /// pace, back-off and breaker allow it), each with a lease, and reads each one's oldest
    /// queued items (at most [`MESSAGE_ITEMS`]). Items queued more than `max_queue_seconds`
    /// ago are dropped first, with a log row per channel: a channel that cannot be reached
    /// for a day does not get a day of news at once.
    pub async fn claim_webhook_messages(
        &self,
        owner: &str,
        now_ms: i64,
        limit: i64,
        lease_seconds: i64,
        max_queue_seconds: i64,
    ) -> Result<Vec<WebhookMessage>> {
        let now = now_ms.div_euclid(1000);
        self.drop_stale_webhook_items(now - max_queue_seconds, now)
            .await?;
        let claim = Lease {
            table: "webhooks",
            set: "lease_owner = $1, lease_until = $2",
            key: "id",
            pick: "SELECT w.id FROM webhooks w
                   WHERE w.enabled = $3 AND w.next_send_ms <= $4
                     AND (w.lease_until IS NULL OR w.lease_until <= $5)
                     AND EXISTS (SELECT 1 FROM webhook_queue q WHERE q.webhook_id = w.id)
                   ORDER BY w.next_send_ms, w.id LIMIT $6",
            lock: "FOR UPDATE OF w SKIP LOCKED",
            returning: "id, user_id, kind, name, url, failures, signing_secret",
        }
        .sql(self.engine());
        type Claimed = (i64, i64, String, String, String, i64, Option<String>);
        let claimed: Vec<Claimed> = with_db!(self, write, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(claim))
                .bind(owner)
                .bind(now.saturating_add(lease_seconds.max(1)))
                .bind(true)
                .bind(now_ms)
                .bind(now)
                .bind(limit.clamp(1, 100))
                .fetch_all(db)
                .await?
        });
        let mut messages = Vec::with_capacity(claimed.len());
        for (webhook_id, user_id, kind, name, url, failures, secret) in claimed {
            let rows: Vec<(
                (
                    i64,
                    i64,
                    i64,
                    Option<String>,
                    Option<String>,
                    Option<String>,
                ),
                (Option<String>, Option<String>, Option<String>, i64),
            )> = with_db!(self, read, |db| {
                let rows = sqlx::query(
                    "SELECT q.item_id, q.attempts, i.feed_id, COALESCE(s.title, f.title, f.url), i.title,
                            i.url, i.author, i.summary, i.content, i.published_at
                     FROM webhook_queue q
                     JOIN items i ON i.id = q.item_id
                     JOIN feeds f ON f.id = i.feed_id
                     LEFT JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $2
                     WHERE q.webhook_id = $1
                     ORDER BY i.published_at, q.item_id LIMIT $3",
                )
                .bind(webhook_id)
                .bind(user_id)
                .bind(MESSAGE_ITEMS)
                .fetch_all(db)
                .await?;
                rows.iter()
                    .map(queued_row)
                    .collect::<std::result::Result<Vec<_>, _>>()?
            });
            let attempt = rows.iter().map(|r| r.0.1).max().unwrap_or(0) + 1;
            let items = rows
                .into_iter()
                .map(
                    |(
                        (item_id, _, feed_id, feed_title, title, url),
                        (author, summary, content, published_at),
                    )| {
                        QueuedItem {
                            item_id,
                            feed_id,
                            feed_title,
                            title,
                            url,
                            author,
                            summary,
                            content,
                            published_at,
                        }
                    },
                )
                .collect();
            messages.push(WebhookMessage {
                webhook_id,
                kind: parse_kind(&kind)?,
                name,
                url,
                signing_secret: secret.map(SigningSecret::from_stored),
                failures,
                attempt,
                items,
            });
        }
        Ok(messages)
    }

    /// Drops queued items older than `cutoff`, logging how many per channel.
    async fn drop_stale_webhook_items(&self, cutoff: i64, now: i64) -> Result<()> {
        let stale: Vec<(i64, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT webhook_id, COUNT(*) FROM webhook_queue WHERE queued_at < $1
                 GROUP BY webhook_id",
            )
            .bind(cutoff)
            .fetch_all(db)
            .await?
        });
        if stale.is_empty() {
            return Ok(());
        }
        in_tx!(self, |tx| {
            for (webhook_id, count) in &stale {
                let dropped = sqlx::query(
                    "DELETE FROM webhook_queue WHERE webhook_id = $1 AND queued_at < $2",
                )
                .bind(*webhook_id)
                .bind(cutoff)
                .execute(&mut *tx)
                .await?
                .rows_affected() as i64;
                if dropped > 0 {
                    let error = Some(format!(
                        "{count} items waited longer than {} hours without going through",
                        (now - cutoff) / 3600
                    ));
                    insert_log!(
                        tx,
                        *webhook_id,
                        now,
                        "dropped",
                        false,
                        None::<u16>,
                        dropped,
                        error,
                        0i64
                    );
                }
            }
        });
        Ok(())
    }

    /// Records what became of a claimed message, in one transaction: its items leave the
    /// queue (or count an attempt), the channel's failures, pace and breaker are set and its
    /// lease released, and a log row is written (the oldest past [`DELIVERY_LOG_KEEP`] go).
    /// A channel deleted meanwhile is skipped.
    pub async fn record_webhook_delivery(
        &self,
        owner: &str,
        record: &DeliveryRecord,
    ) -> Result<()> {
        in_tx!(self, |tx| {
            let updated = sqlx::query(
                "UPDATE webhooks SET failures = $1, next_send_ms = $2, breaker_until_ms = $3,
                        last_sent_at = CASE WHEN $4 THEN $5 ELSE last_sent_at END,
                        lease_owner = NULL, lease_until = NULL
                 WHERE id = $6 AND (lease_owner = $7 OR lease_owner IS NULL)",
            )
            .bind(record.failures)
            .bind(record.next_send_ms)
            .bind(record.breaker_until_ms)
            .bind(record.status == "sent")
            .bind(record.at)
            .bind(record.webhook_id)
            .bind(owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if updated > 0 {
                for chunk in record.item_ids.chunks(200) {
                    let sql = if record.done {
                        format!(
                            "DELETE FROM webhook_queue WHERE webhook_id = $1 AND item_id IN ({})",
                            placeholders(2, chunk.len())
                        )
                    } else {
                        format!(
                            "UPDATE webhook_queue SET attempts = attempts + 1
                             WHERE webhook_id = $1 AND item_id IN ({})",
                            placeholders(2, chunk.len())
                        )
                    };
                    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(record.webhook_id);
                    for id in chunk {
                        query = query.bind(*id);
                    }
                    query.execute(&mut *tx).await?;
                }
                insert_log!(
                    tx,
                    record.webhook_id,
                    record.at,
                    record.status,
                    false,
                    record.http_status,
                    record.item_ids.len() as i64,
                    record.error.clone(),
                    record.duration_ms
                );
            }
        });
        Ok(())
    }
}

crate::row_decoder!(
    queued_row -> ((i64, i64, i64, Option<String>, Option<String>, Option<String>), (Option<String>, Option<String>, Option<String>, i64)) {
        (0, 1, 2, 3, 4, 5),
        (6, 7, 8, 9)
    }
);
