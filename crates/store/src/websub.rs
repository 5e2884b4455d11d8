//! WebSub subscriptions (F18): one per feed that advertises a hub, held for the feed (not for
//! each user who follows it).
//!
//! - [`Store::record_websub_discovery`] keeps what a feed's last parse advertised; a change of
//!   hub or topic makes the row due at once.
//! - [`Store::claim_websub_due`] hands the subscriber job the rows it should act on (a request
//!   to send, a lease to renew, a feed nobody follows any more to unsubscribe) with a lease,
//!   so that several workers never send the same request twice.
//! - [`Store::websub_request_sent`] records a request *before* it goes out, since a hub may
//!   verify intent before answering the request; [`Store::websub_verified`] and
//!   [`Store::websub_denied`] are the hub's answers at the callback.

use crate::{Result, Store, in_tx, row_decoder, with_db};

/// What tidings knows of the subscription at the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WebSubState {
    /// No subscription (never made, unsubscribed, or lapsed).
    Inactive,
    /// The hub verified a subscription; pushes arrive until `active_until`.
    Active,
    /// The hub refused the subscription (`hub.mode=denied`).
    Denied,
}

impl WebSubState {
    fn parse(text: &str) -> WebSubState {
        match text {
            "active" => WebSubState::Active,
            "denied" => WebSubState::Denied,
            _ => WebSubState::Inactive,
        }
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            WebSubState::Inactive => "inactive",
            WebSubState::Active => "active",
            WebSubState::Denied => "denied",
        }
    }
}

/// A subscription request's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WebSubMode {
    /// `hub.mode=subscribe` (also a renewal).
    Subscribe,
    /// `hub.mode=unsubscribe`.
    Unsubscribe,
}

impl WebSubMode {
    fn parse(text: &str) -> Option<WebSubMode> {
        match text {
            "subscribe" => Some(WebSubMode::Subscribe),
            "unsubscribe" => Some(WebSubMode::Unsubscribe),
            _ => None,
        }
    }

    /// The protocol's name (`hub.mode`), also the stored one.
    pub fn as_str(self) -> &'static str {
        match self {
            WebSubMode::Subscribe => "subscribe",
            WebSubMode::Unsubscribe => "unsubscribe",
        }
    }
}

/// A feed's WebSub row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSubSubscription {
    /// The feed.
    pub feed_id: i64,
    /// The hub the feed advertises now (`None`: it stopped advertising one).
    pub hub_url: Option<String>,
    /// The topic the feed advertises now.
    pub topic_url: Option<String>,
    /// The hub of the last request.
    pub sub_hub_url: Option<String>,
    /// The topic of the last request.
    pub sub_topic_url: Option<String>,
    /// The callback's token: the callback is `{base}/websub/{token}`.
    pub callback_token: String,
    /// The HMAC secret given to the hub.
    pub secret: String,
    /// What the hub holds.
    pub state: WebSubState,
    /// The request awaiting the hub's verification.
    pub pending_mode: Option<WebSubMode>,
    /// When the last request was sent.
    pub requested_at: Option<i64>,
    /// The lease the hub granted, in seconds.
    pub lease_seconds: Option<i64>,
    /// When the hub's lease ends.
    pub active_until: Option<i64>,
    /// The hub's reason for a denial.
    pub denied_reason: Option<String>,
    /// The last failed request's error.
    pub last_error: Option<String>,
    /// Failed requests in a row.
    pub failures: i64,
    /// When the subscriber job acts next.
    pub next_action_at: i64,
    /// Content distributions stored.
    pub pushes: i64,
    /// When the last one was.
    pub last_push_at: Option<i64>,
    /// Content distributions dropped for a bad or missing signature.
    pub rejected_pushes: i64,
    /// Whether anyone follows the feed.
    pub has_subscribers: bool,
    /// The feed's URL.
    pub feed_url: String,
    /// A scraped source's configuration (F7): its pushed page is scraped, not parsed.
    pub scrape_config: Option<String>,
}

impl WebSubSubscription {
    /// Whether pushes are expected at `now`: the hub verified a subscription whose lease has
    /// not ended.
    pub fn is_active(&self, now: i64) -> bool {
        self.state == WebSubState::Active && self.active_until.is_some_and(|until| until > now)
    }
}

const COLUMNS: &str = "w.feed_id, w.hub_url, w.topic_url, w.sub_hub_url, w.sub_topic_url,
    w.callback_token, w.secret, w.state, w.pending_mode, w.requested_at, w.lease_seconds,
    w.active_until, w.denied_reason, w.last_error, w.failures, w.next_action_at,
    w.pushes, w.last_push_at, w.rejected_pushes,
    EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = w.feed_id), f.url, f.scrape_config
    FROM websub_subscriptions w JOIN feeds f ON f.id = w.feed_id";

type WebSubRow = (
    (
        i64,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        String,
        String,
    ),
    (
        Option<String>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<String>,
        Option<String>,
        i64,
        i64,
    ),
    (i64, Option<i64>, i64, bool, String, Option<String>),
);

// A row has 22 columns: read as three groups (see `row_decoder!`).
row_decoder!(decode -> WebSubRow {
    (0, 1, 2, 3, 4, 5, 6, 7), (8, 9, 10, 11, 12, 13, 14, 15), (16, 17, 18, 19, 20, 21)
});

fn from_row<R>(row: &R) -> std::result::Result<WebSubSubscription, sqlx::Error>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    bool: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let (
        (feed_id, hub_url, topic_url, sub_hub_url, sub_topic_url, callback_token, secret, state),
        (
            pending,
            requested_at,
            lease_seconds,
            active_until,
            denied_reason,
            last_error,
            failures,
            next_action_at,
        ),
        (pushes, last_push_at, rejected_pushes, has_subscribers, feed_url, scrape_config),
    ) = decode(row)?;
    Ok(WebSubSubscription {
        feed_id,
        hub_url,
        topic_url,
        sub_hub_url,
        sub_topic_url,
        callback_token,
        secret,
        state: WebSubState::parse(&state),
        pending_mode: pending.as_deref().and_then(WebSubMode::parse),
        requested_at,
        lease_seconds,
        active_until,
        denied_reason,
        last_error,
        failures,
        next_action_at,
        pushes,
        last_push_at,
        rejected_pushes,
        has_subscribers,
        feed_url,
        scrape_config,
    })
}

/// The request the subscriber job is about to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSubRequest<'a> {
    /// Subscribe (or renew) or unsubscribe.
    pub mode: WebSubMode,
    /// The hub it goes to.
    pub hub_url: &'a str,
    /// The topic it names.
    pub topic_url: &'a str,
    /// The callback token it names (a new one for a new subscription).
    pub callback_token: &'a str,
    /// The secret it gives.
    pub secret: &'a str,
}

/// [`Store::record_websub_discovery`] on `$db`, a connection or a transaction (a fetch records
/// it in its own transaction: [`crate::FetchWrites::websub`]).
macro_rules! record_websub_discovery_on {
    ($db:expr, $feed_id:expr, $found:expr, $token:expr, $secret:expr, $now:expr) => {{
        let (feed_id, found, token, secret, now): (i64, Option<(&str, &str)>, &str, &str, i64) =
            ($feed_id, $found, $token, $secret, $now);
        match found {
            Some((hub, topic)) => {
                sqlx::query(
                    "INSERT INTO websub_subscriptions
                        (feed_id, hub_url, topic_url, discovered_at, callback_token, secret,
                         next_action_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $4)
                     ON CONFLICT (feed_id) DO UPDATE SET
                        next_action_at = CASE
                            WHEN websub_subscriptions.hub_url IS NOT DISTINCT FROM excluded.hub_url
                             AND websub_subscriptions.topic_url IS NOT DISTINCT FROM excluded.topic_url
                            THEN websub_subscriptions.next_action_at
                            ELSE excluded.discovered_at END,
                        hub_url = excluded.hub_url, topic_url = excluded.topic_url,
                        discovered_at = excluded.discovered_at",
                )
                .bind(feed_id)
                .bind(hub)
                .bind(topic)
                .bind(now)
                .bind(token)
                .bind(secret)
                .execute($db)
                .await?;
            }
            None => {
                // Still subscribed or asked for: due now, so that the job unsubscribes.
                sqlx::query(
                    "UPDATE websub_subscriptions SET hub_url = NULL, topic_url = NULL,
                            discovered_at = $2,
                            next_action_at = CASE WHEN hub_url IS NULL
                                THEN next_action_at ELSE $2 END
                     WHERE feed_id = $1",
                )
                .bind(feed_id)
                .bind(now)
                .execute($db)
                .await?;
            }
        }
    }};
}
pub(crate) use record_websub_discovery_on;

impl Store {
    /// Records what a feed's parse advertised: `found` is `(hub, topic)`, or `None` when the
    /// feed names no hub (a row is kept only while one is needed: a feed that never advertised
    /// one gets none). A new row takes `token` and `secret` for its callback; a changed hub or
    /// topic makes the row due at `now`.
    pub async fn record_websub_discovery(
        &self,
        feed_id: i64,
        found: Option<(&str, &str)>,
        token: &str,
        secret: &str,
        now: i64,
    ) -> Result<()> {
        with_db!(self, write, |db| {
            record_websub_discovery_on!(db, feed_id, found, token, secret, now);
        });
        Ok(())
    }

    /// A feed's WebSub row, if it has one.
    pub async fn websub_subscription(&self, feed_id: i64) -> Result<Option<WebSubSubscription>> {
        let row = with_db!(self, read, |db| {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} WHERE w.feed_id = $1"
            )))
            .bind(feed_id)
            .fetch_optional(db)
            .await?;
            row.as_ref().map(from_row).transpose()?
        });
        Ok(row)
    }

    /// The row whose callback carries `token`.
    pub async fn websub_by_token(&self, token: &str) -> Result<Option<WebSubSubscription>> {
        // Read from the writer on SQLite: a hub verifies intent while the request that asked
        // for it is being answered, and must see the row that request wrote.
        let row = with_db!(self, write, |db| {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} WHERE w.callback_token = $1"
            )))
            .bind(token)
            .fetch_optional(db)
            .await?;
            row.as_ref().map(from_row).transpose()?
        });
        Ok(row)
    }

    /// Claims up to `limit` rows the subscriber job should look at now for `owner`, leased for
    /// `lease_seconds`: those whose `next_action_at` has come, and, at once whatever their
    /// schedule, subscribed (or being subscribed) feeds nobody follows any more, so that they
    /// are unsubscribed soon after the last subscriber leaves.
    pub async fn claim_websub_due(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<WebSubSubscription>> {
        let lease_until = now.saturating_add(lease_seconds.max(1));
        let ids: Vec<i64> = in_tx!(self, |tx| {
            // Failed requests (failures > 0) keep their back-off.
            sqlx::query(
                "UPDATE websub_subscriptions SET next_action_at = $1
                 WHERE next_action_at > $1 AND failures = 0
                   AND (state = 'active' OR pending_mode = 'subscribe')
                   AND NOT EXISTS (SELECT 1 FROM subscriptions s
                                   WHERE s.feed_id = websub_subscriptions.feed_id)",
            )
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT feed_id FROM websub_subscriptions
                 WHERE next_action_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
                 ORDER BY next_action_at, feed_id LIMIT $2",
            )
            .bind(now)
            .bind(limit.max(1))
            .fetch_all(&mut *tx)
            .await?;
            for id in &ids {
                sqlx::query(
                    "UPDATE websub_subscriptions SET lease_owner = $1, lease_until = $2
                     WHERE feed_id = $3",
                )
                .bind(owner)
                .bind(lease_until)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            }
            ids
        });
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(row) = self.websub_subscription_written(id).await? {
                claimed.push(row);
            }
        }
        Ok(claimed)
    }

    /// [`Store::websub_subscription`] read where the last write is visible at once.
    async fn websub_subscription_written(
        &self,
        feed_id: i64,
    ) -> Result<Option<WebSubSubscription>> {
        let row = with_db!(self, write, |db| {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} WHERE w.feed_id = $1"
            )))
            .bind(feed_id)
            .fetch_optional(db)
            .await?;
            row.as_ref().map(from_row).transpose()?
        });
        Ok(row)
    }

    /// Records a request about to be sent by `owner` (before it goes out: the hub may verify
    /// intent before it answers): its hub, topic, callback token and secret become the row's,
    /// and it awaits verification. Returns `false`, recording nothing, when `owner` lost its
    /// claim on the row.
    pub async fn websub_request_sent(
        &self,
        feed_id: i64,
        owner: &str,
        request: &WebSubRequest<'_>,
        now: i64,
    ) -> Result<bool> {
        let updated = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET pending_mode = $1, sub_hub_url = $2,
                        sub_topic_url = $3, callback_token = $4, secret = $5, requested_at = $6
                 WHERE feed_id = $7 AND lease_owner = $8",
            )
            .bind(request.mode.as_str())
            .bind(request.hub_url)
            .bind(request.topic_url)
            .bind(request.callback_token)
            .bind(request.secret)
            .bind(now)
            .bind(feed_id)
            .bind(owner)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(updated > 0)
    }

    /// Ends `owner`'s claim on a row with nothing sent: it is due next at `next_action_at`.
    pub async fn websub_release(
        &self,
        feed_id: i64,
        owner: &str,
        next_action_at: i64,
    ) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET next_action_at = $1,
                        lease_owner = NULL, lease_until = NULL
                 WHERE feed_id = $2 AND lease_owner = $3",
            )
            .bind(next_action_at)
            .bind(feed_id)
            .bind(owner)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// Ends `owner`'s claim on a row after a request the hub accepted: failures are forgotten,
    /// and a request still awaiting verification is looked at again at `verify_by` (one the
    /// hub verified meanwhile keeps the renewal time the verification set).
    pub async fn websub_request_accepted(
        &self,
        feed_id: i64,
        owner: &str,
        verify_by: i64,
    ) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET failures = 0, last_error = NULL,
                        next_action_at = CASE WHEN pending_mode IS NULL THEN next_action_at
                                              ELSE $1 END,
                        lease_owner = NULL, lease_until = NULL
                 WHERE feed_id = $2 AND lease_owner = $3",
            )
            .bind(verify_by)
            .bind(feed_id)
            .bind(owner)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// Ends `owner`'s claim on a row after a request that failed (`error`): the request no
    /// longer awaits verification (unless the hub verified it meanwhile), and the row is due
    /// again at `retry_at`.
    pub async fn websub_request_failed(
        &self,
        feed_id: i64,
        owner: &str,
        mode: WebSubMode,
        error: &str,
        retry_at: i64,
    ) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET
                        pending_mode = CASE WHEN pending_mode = $1 THEN NULL ELSE pending_mode END,
                        failures = failures + 1, last_error = $2, next_action_at = $3,
                        lease_owner = NULL, lease_until = NULL
                 WHERE feed_id = $4 AND lease_owner = $5",
            )
            .bind(mode.as_str())
            .bind(crate::text::strip_control_chars(error).as_ref())
            .bind(retry_at)
            .bind(feed_id)
            .bind(owner)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// The hub verified the pending request `mode` of the callback `token` at `now`: a
    /// subscription becomes active for `lease_seconds` and is due for renewal at `renew_at`;
    /// an unsubscription makes the row inactive. Returns `false`, changing nothing, when that
    /// callback has no such pending request (the caller then answers 404).
    pub async fn websub_verified(
        &self,
        token: &str,
        mode: WebSubMode,
        lease_seconds: i64,
        now: i64,
        renew_at: i64,
    ) -> Result<bool> {
        let updated = with_db!(self, write, |db| {
            match mode {
                WebSubMode::Subscribe => sqlx::query(
                    "UPDATE websub_subscriptions SET state = 'active', pending_mode = NULL,
                            lease_seconds = $1, active_until = $2, denied_reason = NULL,
                            next_action_at = $3
                     WHERE callback_token = $4 AND pending_mode = 'subscribe'",
                )
                .bind(lease_seconds)
                .bind(now.saturating_add(lease_seconds))
                .bind(renew_at)
                .bind(token)
                .execute(db)
                .await?
                .rows_affected(),
                WebSubMode::Unsubscribe => sqlx::query(
                    "UPDATE websub_subscriptions SET state = 'inactive', pending_mode = NULL,
                            active_until = NULL, next_action_at = $1
                     WHERE callback_token = $2 AND pending_mode = 'unsubscribe'",
                )
                .bind(renew_at)
                .bind(token)
                .execute(db)
                .await?
                .rows_affected(),
            }
        });
        Ok(updated > 0)
    }

    /// The hub denied the subscription of the callback `token` (`hub.mode=denied`), with its
    /// `reason`: the row is not subscribed again before `retry_at` (or a change of hub or
    /// topic).
    pub async fn websub_denied(
        &self,
        token: &str,
        reason: Option<&str>,
        retry_at: i64,
    ) -> Result<bool> {
        let reason = reason.map(|r| {
            let clean = crate::text::strip_control_chars(r);
            clean.chars().take(500).collect::<String>()
        });
        let updated = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET state = 'denied', pending_mode = NULL,
                        active_until = NULL, denied_reason = $1, next_action_at = $2
                 WHERE callback_token = $3",
            )
            .bind(&reason)
            .bind(retry_at)
            .bind(token)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(updated > 0)
    }

    /// Makes a feed's row due at `now`, whatever its back-off or rest after a denial: a manual
    /// refresh (F15) retries the feed's push subscription too. Nothing happens to a row with
    /// nothing to do but wait for its renewal.
    pub async fn websub_retry_now(&self, feed_id: i64, now: i64) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET next_action_at = $1
                 WHERE feed_id = $2 AND next_action_at > $1",
            )
            .bind(now)
            .bind(feed_id)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// Counts a content distribution of the callback `token` at `now`: `accepted` when its
    /// signature held (and it was stored), otherwise rejected.
    pub async fn record_websub_push(&self, token: &str, accepted: bool, now: i64) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE websub_subscriptions SET
                        pushes = pushes + CASE WHEN $1 THEN 1 ELSE 0 END,
                        last_push_at = CASE WHEN $1 THEN $2 ELSE last_push_at END,
                        rejected_pushes = rejected_pushes + CASE WHEN $1 THEN 0 ELSE 1 END
                 WHERE callback_token = $3",
            )
            .bind(accepted)
            .bind(now)
            .bind(token)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// How many feeds have a WebSub row in each state, and how many of those are active with a
    /// lease running at `now` (for `/metrics`).
    pub async fn websub_counts(&self, now: i64) -> Result<Vec<(String, i64)>> {
        let rows: Vec<(String, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT CASE WHEN state = 'active' AND active_until <= $1 THEN 'expired'
                             WHEN pending_mode IS NOT NULL AND state <> 'active' THEN 'pending'
                             ELSE state END AS s, COUNT(*)
                 FROM websub_subscriptions GROUP BY s ORDER BY s",
            )
            .bind(now)
            .fetch_all(db)
            .await?
        });
        Ok(rows)
    }
}
