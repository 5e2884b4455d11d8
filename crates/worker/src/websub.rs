//! WebSub (F18): instant updates from feeds that push through a hub.
//!
//! - Discovery runs in each fetch round ([`discovered_links`]): the `Link` headers, then the
//!   feed's (or scraped page's) own links, name the hub and the topic, kept per feed.
//! - [`WebSubJob`] is the subscriber: an [`EnrichmentJob`] beside the fetching that subscribes
//!   each feed (not each user) to its hub with a callback `{base}/websub/{token}` and a secret
//!   of its own, renews the lease before it ends, and unsubscribes a feed nobody follows.
//! - [`verify_intent`] answers the hub's GET at the callback: the challenge is echoed only for
//!   a request tidings has pending with the same topic, and a denial is recorded.
//! - [`receive_push`] takes a content distribution (the hub's POST): the `X-Hub-Signature`
//!   HMAC over the raw body is checked first, in constant time, and only then is the body
//!   parsed and stored, through the fetcher's own path.
//!
//! The server routes `/websub/{token}` to these; everything else is here, beside the fetcher.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::Utc;
use hmac::{KeyInit, Mac};
use tidings_fetch::FetchResponse;
use tidings_store::{
    Store, StoreError, WebSubMode, WebSubRequest, WebSubState, WebSubSubscription,
};
use tokio::sync::Notify;
use url::Url;

pub use crate::config::websub::{DEFAULT_LEASE_SECONDS, DEFAULT_SAFETY_POLL, WebSubConfig};
use crate::enrich::EnrichmentJob;
use crate::fetcher::Fetcher;
pub use crate::hub::{discovered_links, random_token};

/// How long a request waits for the hub's verification of intent before it is sent again.
pub const VERIFY_WAIT_SECONDS: i64 = 15 * 60;
/// How long a denied subscription rests before it is asked for again (unless the feed names
/// another hub or topic first).
pub const DENIED_RETRY_SECONDS: i64 = 7 * 24 * 3600;
/// How long a row with nothing to do rests before the job looks at it again.
const IDLE_RECHECK_SECONDS: i64 = 24 * 3600;
/// Requests the subscriber job sends at once per worker.
pub const CONCURRENCY: usize = 2;
/// How long a claimed row stays with its worker: past one request's time-out.
const CLAIM_SECONDS: i64 = 120;
/// How much of a hub's answer is kept, for the error shown when it refuses a request.
const HUB_ANSWER_KEPT: usize = 300;
/// The shortest lease taken from a hub: a shorter one is stored as this, so that a hub cannot
/// make the subscriber renew in a loop.
pub const MIN_LEASE_SECONDS: i64 = 10;
/// The longest lease taken from a hub (30 days): a longer one (a hub once granted
/// `i64::MAX`) is stored as this, and renewed then; the lease arithmetic never overflows.
pub const MAX_LEASE_SECONDS: i64 = 30 * 24 * 3600;
/// Signature methods of `X-Hub-Signature` (W3C WebSub §8.1).
pub const SIGNATURE_METHODS: [&str; 4] = ["sha1", "sha256", "sha384", "sha512"];

/// Whether hubs can reach callbacks under `base`: an http(s) URL whose host is not loopback,
/// private or a local name (the fetch guard's own rules), unless `allow_private` (a LAN,
/// tests). `Err` says why not.
pub fn check_public_base_url(base: &Url, allow_private: bool) -> Result<(), String> {
    if !matches!(base.scheme(), "http" | "https") {
        return Err("the base URL must be http(s)".into());
    }
    if allow_private {
        return Ok(());
    }
    let policy = tidings_fetch::AddressPolicy::default();
    policy
        .check_url(base)
        .map_err(|refusal| refusal.to_string())
}

/// The lease a hub granted (`hub.lease_seconds` as it came, if it came), within
/// [`MIN_LEASE_SECONDS`]..=[`MAX_LEASE_SECONDS`]; `asked` when the hub says nothing usable.
pub fn granted_lease(given: Option<&str>, asked: i64) -> i64 {
    given
        .and_then(|l| l.trim().parse::<i64>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(asked)
        .clamp(MIN_LEASE_SECONDS, MAX_LEASE_SECONDS)
}

/// Whether the subscription secret may be sent to `hub`. W3C WebSub §5.1: the secret is only
/// sent over HTTPS, since whoever reads it can sign pushes. A hub on a loopback address is
/// the exception (the request never crosses a network: a hub beside tidings, and tests).
/// A subscription needs its secret (unsigned pushes are refused), so tidings does not
/// subscribe to other `http://` hubs at all: those feeds are polled.
pub fn may_send_secret(hub: &Url) -> bool {
    match (hub.scheme(), hub.host()) {
        ("https", _) => true,
        (_, Some(url::Host::Ipv4(ip))) => ip.is_loopback(),
        (_, Some(url::Host::Ipv6(ip))) => ip.is_loopback(),
        _ => false,
    }
}

/// What the subscriber job does with a row now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing until this time.
    Wait(i64),
    /// Send a request; `fresh` asks for a new callback token and secret (a new hub or topic,
    /// or a new try after a denial).
    Send {
        /// Subscribe (or renew) or unsubscribe.
        mode: WebSubMode,
        /// The hub.
        hub: String,
        /// The topic.
        topic: String,
        /// Whether the callback token and secret are new.
        fresh: bool,
    },
}

/// When a lease granted for `lease_seconds` and ending at `until` is renewed: a fifth of the
/// lease before its end (at least a second, at most a day), so a hub that is down for a
/// while still gets several tries.
pub fn renew_at(until: i64, lease_seconds: i64) -> i64 {
    until - (lease_seconds / 5).clamp(1, 24 * 3600)
}

/// What to do with `row` at `now`.
pub fn decide(row: &WebSubSubscription, now: i64) -> Action {
    let pending_until = |mode: WebSubMode| {
        (row.pending_mode == Some(mode))
            .then(|| row.requested_at.unwrap_or(0) + VERIFY_WAIT_SECONDS)
            .filter(|until| *until > now)
    };
    let wanted = row.has_subscribers && row.hub_url.is_some();
    if let (true, Some(hub), Some(topic)) = (wanted, &row.hub_url, &row.topic_url) {
        let changed = row.sub_hub_url.as_deref() != Some(hub.as_str())
            || row.sub_topic_url.as_deref() != Some(topic.as_str());
        let send = |fresh| Action::Send {
            mode: WebSubMode::Subscribe,
            hub: hub.clone(),
            topic: topic.clone(),
            fresh,
        };
        if changed {
            // The first request keeps the row's credentials; a new hub or topic gets new ones.
            return send(row.sub_hub_url.is_some());
        }
        if let Some(until) = pending_until(WebSubMode::Subscribe) {
            return Action::Wait(until);
        }
        if row.state == WebSubState::Denied {
            // Due again (the rest after the denial is over): a new try, new credentials.
            return send(true);
        }
        if row.is_active(now)
            && let Some(until) = row.active_until
        {
            let renew = renew_at(until, row.lease_seconds.unwrap_or(0));
            if renew > now {
                return Action::Wait(renew);
            }
        }
        return send(false);
    }
    // Nobody follows the feed (or it names no hub any more): undo what the hub may hold.
    if let Some(until) = pending_until(WebSubMode::Unsubscribe) {
        return Action::Wait(until);
    }
    let held = row.is_active(now) || row.pending_mode == Some(WebSubMode::Subscribe);
    match (held, &row.sub_hub_url, &row.sub_topic_url) {
        (true, Some(hub), Some(topic)) => Action::Send {
            mode: WebSubMode::Unsubscribe,
            hub: hub.clone(),
            topic: topic.clone(),
            fresh: false,
        },
        _ => Action::Wait(now + IDLE_RECHECK_SECONDS),
    }
}

/// How long after `failures` failed requests in a row the next one goes: a minute, doubling,
/// at most a day.
pub fn retry_delay(failures: i64) -> i64 {
    60i64
        .saturating_mul(1i64 << failures.clamp(0, 20))
        .min(24 * 3600)
}

/// The subscriber: subscribes, renews and unsubscribes feeds at their hubs.
pub struct WebSubJob {
    fetcher: Fetcher,
    config: WebSubConfig,
    wakeup: Arc<Notify>,
}

impl WebSubJob {
    /// The job of `fetcher`'s process, sending requests through its guarded client; `None`
    /// when WebSub is off or has no base URL.
    pub fn new(fetcher: &Fetcher) -> Option<WebSubJob> {
        let config = fetcher.config().websub.clone();
        config.is_on().then(|| WebSubJob {
            fetcher: fetcher.clone(),
            config,
            wakeup: fetcher.websub_wakeup(),
        })
    }

    async fn send(&self, row: &WebSubSubscription, action: Action) -> Result<(), StoreError> {
        let store = self.fetcher.store();
        let owner = &self.fetcher.config().owner;
        let now = Utc::now().timestamp();
        let (mode, hub, topic, fresh) = match action {
            Action::Wait(at) => return store.websub_release(row.feed_id, owner, at).await,
            Action::Send {
                mode,
                hub,
                topic,
                fresh,
            } => (mode, hub, topic, fresh),
        };
        let (token, secret) = if fresh {
            (random_token(), random_token())
        } else {
            (row.callback_token.clone(), row.secret.clone())
        };
        let (Some(callback), Ok(hub_url)) = (self.config.callback_url(&token), Url::parse(&hub))
        else {
            let retry = now + retry_delay(row.failures);
            let error = format!(
                "the hub URL {:?} is not usable",
                tidings_fetch::redact_url(&hub)
            );
            return store
                .websub_request_failed(row.feed_id, owner, mode, &error, retry)
                .await;
        };
        if mode == WebSubMode::Subscribe && !may_send_secret(&hub_url) {
            // Not a transient failure: the hub will not turn https by itself. Asked again
            // after a denial's rest, or as soon as the feed names another hub.
            let error = format!(
                "the hub {} is not https: tidings does not send a subscription secret in \
                 clear text, so this feed is not pushed and is polled as usual",
                tidings_fetch::redact_url(&hub)
            );
            return store
                .websub_request_failed(row.feed_id, owner, mode, &error, now + DENIED_RETRY_SECONDS)
                .await;
        }
        let request = WebSubRequest {
            mode,
            hub_url: &hub,
            topic_url: &topic,
            callback_token: &token,
            secret: &secret,
        };
        // Recorded first: a hub may verify intent before it answers this request.
        if !store
            .websub_request_sent(row.feed_id, owner, &request, now)
            .await?
        {
            return Ok(());
        }
        let lease = self.config.lease_seconds.to_string();
        let mut form = vec![
            ("hub.mode", mode.as_str()),
            ("hub.topic", topic.as_str()),
            ("hub.callback", callback.as_str()),
        ];
        if mode == WebSubMode::Subscribe {
            form.push(("hub.lease_seconds", lease.as_str()));
            form.push(("hub.secret", secret.as_str()));
        }
        let host = hub_url.host_str().unwrap_or_default().to_owned();
        let permit = self.fetcher.limiter().acquire(&host).await;
        let answer = self
            .fetcher
            .limiter()
            .watch(
                permit,
                self.fetcher
                    .client()
                    .post_form(&hub_url, &form, HUB_ANSWER_KEPT),
            )
            .await;
        let metrics = self.fetcher.metrics();
        match answer {
            Ok(answer) if answer.is_success() => {
                metrics.record_websub_request(mode.as_str(), true);
                tracing::info!(
                    feed = row.feed_id,
                    hub = %tidings_fetch::redact_url(&hub),
                    topic = %crate::fetcher::url_for_log(&topic),
                    mode = mode.as_str(),
                    status = answer.status,
                    "websub request accepted by the hub"
                );
                store
                    .websub_request_accepted(row.feed_id, owner, now + VERIFY_WAIT_SECONDS)
                    .await
            }
            outcome => {
                metrics.record_websub_request(mode.as_str(), false);
                let error = match outcome {
                    Ok(answer) => {
                        // What an internal hub says stays out of the feed's status.
                        let said = String::from_utf8_lossy(&answer.body);
                        match said.trim() {
                            said if said.is_empty() || !answer.from_public_address => {
                                format!("the hub answered HTTP {}", answer.status)
                            }
                            said => format!("the hub answered HTTP {}: {said}", answer.status),
                        }
                    }
                    Err(error) => format!("the hub could not be reached: {error}"),
                };
                tracing::warn!(
                    feed = row.feed_id,
                    hub = %tidings_fetch::redact_url(&hub),
                    mode = mode.as_str(),
                    %error,
                    "websub request failed"
                );
                let retry = now + retry_delay(row.failures);
                store
                    .websub_request_failed(row.feed_id, owner, mode, &error, retry)
                    .await
            }
        }
    }
}

impl EnrichmentJob for WebSubJob {
    type Task = WebSubSubscription;

    fn name(&self) -> &'static str {
        "websub"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<WebSubSubscription>, StoreError> {
        let owner = &self.fetcher.config().owner;
        let now = Utc::now().timestamp();
        self.fetcher
            .store()
            .claim_websub_due(owner, now, limit as i64, CLAIM_SECONDS)
            .await
    }

    async fn run(&self, row: WebSubSubscription) {
        let action = decide(&row, Utc::now().timestamp());
        if let Err(error) = self.send(&row, action).await {
            tracing::warn!(feed = row.feed_id, %error, "websub: storing a request's outcome failed");
        }
    }

    fn wakeup(&self) -> Option<Arc<Notify>> {
        Some(Arc::clone(&self.wakeup))
    }
}

/// How the callback answers a hub's GET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyAnswer {
    /// 200 with this body: the challenge, echoed.
    Challenge(String),
    /// 200, empty: a denial taken note of.
    Noted,
    /// 404: tidings does not want this (W3C WebSub §5.3.1).
    NotFound,
}

/// Whether two topic URLs are the same: equal, or equal once parsed (a hub may re-encode).
fn same_topic(ours: Option<&str>, theirs: &str) -> bool {
    let Some(ours) = ours else { return false };
    ours == theirs || matches!((Url::parse(ours), Url::parse(theirs)), (Ok(a), Ok(b)) if a == b)
}

/// Answers the hub's GET at the callback of `token` with `query` (`hub.mode`, `hub.topic`,
/// `hub.challenge`, `hub.lease_seconds`, `hub.reason`), at `now`: a subscribe or unsubscribe
/// verification is confirmed only when that request is pending with the same topic; a denial
/// of the callback's topic is recorded. Anything else is refused with 404.
pub async fn verify_intent(
    store: &Store,
    metrics: &crate::WorkerMetrics,
    config: &WebSubConfig,
    token: &str,
    query: &HashMap<String, String>,
    now: i64,
) -> Result<VerifyAnswer, StoreError> {
    let answer = verify_intent_inner(store, config, token, query, now).await?;
    let outcome = match &answer {
        VerifyAnswer::Challenge(_) => "confirmed",
        VerifyAnswer::Noted => "denied",
        VerifyAnswer::NotFound => "refused",
    };
    metrics.record_websub_verification(outcome);
    let mode = query.get("hub.mode").map(String::as_str).unwrap_or("");
    tracing::info!(
        mode = %mode.chars().take(20).collect::<String>(),
        outcome,
        "websub verification of intent"
    );
    Ok(answer)
}

async fn verify_intent_inner(
    store: &Store,
    config: &WebSubConfig,
    token: &str,
    query: &HashMap<String, String>,
    now: i64,
) -> Result<VerifyAnswer, StoreError> {
    let Some(row) = store.websub_by_token(token).await? else {
        return Ok(VerifyAnswer::NotFound);
    };
    let topic = query.get("hub.topic").map(String::as_str).unwrap_or("");
    let mode = query.get("hub.mode").map(String::as_str).unwrap_or("");
    if mode == "denied" {
        if !same_topic(row.sub_topic_url.as_deref(), topic) {
            return Ok(VerifyAnswer::NotFound);
        }
        let reason = query.get("hub.reason").map(String::as_str);
        tracing::warn!(feed = row.feed_id, reason = ?reason, "websub subscription denied by the hub");
        store
            .websub_denied(token, reason, now + DENIED_RETRY_SECONDS)
            .await?;
        return Ok(VerifyAnswer::Noted);
    }
    let mode = match mode {
        "subscribe" => WebSubMode::Subscribe,
        "unsubscribe" => WebSubMode::Unsubscribe,
        _ => return Ok(VerifyAnswer::NotFound),
    };
    let Some(challenge) = query.get("hub.challenge").filter(|c| !c.is_empty()) else {
        return Ok(VerifyAnswer::NotFound);
    };
    if row.pending_mode != Some(mode) || !same_topic(row.sub_topic_url.as_deref(), topic) {
        return Ok(VerifyAnswer::NotFound);
    }
    let lease = granted_lease(
        query.get("hub.lease_seconds").map(String::as_str),
        config.lease_seconds,
    );
    let next = match mode {
        WebSubMode::Subscribe => renew_at(now.saturating_add(lease), lease),
        WebSubMode::Unsubscribe => now + IDLE_RECHECK_SECONDS,
    };
    if store.websub_verified(token, mode, lease, now, next).await? {
        Ok(VerifyAnswer::Challenge(challenge.clone()))
    } else {
        Ok(VerifyAnswer::NotFound)
    }
}

/// What became of a content distribution, and how the callback answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// Signature valid, body stored: 2xx.
    Stored {
        /// Items stored for the first time.
        inserted: u64,
        /// Items changed.
        updated: u64,
    },
    /// Signature valid, but the body is not a feed: 2xx (the hub cannot do better), logged.
    Unreadable(String),
    /// The signature does not match: dropped and logged, but answered 2xx, as the spec allows,
    /// so that the answer tells a forger nothing about the secret.
    BadSignature,
    /// No signature though the subscription has a secret: refused (403).
    MissingSignature,
    /// No subscription has this callback (any more): 410 Gone, which tells the hub to stop.
    Gone,
}

impl PushOutcome {
    /// The HTTP status the callback answers with.
    pub fn status(&self) -> u16 {
        match self {
            PushOutcome::Stored { .. } | PushOutcome::Unreadable(_) | PushOutcome::BadSignature => {
                202
            }
            PushOutcome::MissingSignature => 403,
            PushOutcome::Gone => 410,
        }
    }

    fn label(&self) -> &'static str {
        match self {
            PushOutcome::Stored { .. } => "stored",
            PushOutcome::Unreadable(_) => "unreadable",
            PushOutcome::BadSignature => "bad_signature",
            PushOutcome::MissingSignature => "missing_signature",
            PushOutcome::Gone => "gone",
        }
    }
}

/// Whether `signature` (an `X-Hub-Signature` value, `method=hex`) is the HMAC of `body` under
/// `secret`, compared in constant time. An unknown method or malformed value is not.
pub fn signature_matches(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let Some((method, hex_digest)) = signature.trim().split_once('=') else {
        return false;
    };
    let Ok(expected) = hex::decode(hex_digest.trim()) else {
        return false;
    };
    fn check<M: Mac + KeyInit>(secret: &[u8], body: &[u8], expected: &[u8]) -> bool {
        let Ok(mut mac) = <M as KeyInit>::new_from_slice(secret) else {
            return false;
        };
        mac.update(body);
        mac.verify_slice(expected).is_ok()
    }
    match method.trim().to_ascii_lowercase().as_str() {
        "sha1" => check::<hmac::Hmac<sha1::Sha1>>(secret, body, &expected),
        "sha256" => check::<hmac::Hmac<sha2::Sha256>>(secret, body, &expected),
        "sha384" => check::<hmac::Hmac<sha2::Sha384>>(secret, body, &expected),
        "sha512" => check::<hmac::Hmac<sha2::Sha512>>(secret, body, &expected),
        _ => false,
    }
}

/// Whether the callback of `token` takes content distributions now (its subscription is
/// active, or being verified): asked before a pushed body is read, so that a request to an
/// unknown callback is answered 410 at once instead of waiting for its body.
pub async fn expects_pushes(store: &Store, token: &str) -> Result<bool, StoreError> {
    Ok(store
        .websub_by_token(token)
        .await?
        .is_some_and(|row| takes_pushes(&row)))
}

/// Whether a subscription takes content distributions: active, or being verified.
fn takes_pushes(row: &WebSubSubscription) -> bool {
    row.state == WebSubState::Active || row.pending_mode.is_some()
}

/// Takes a content distribution POSTed to the callback of `token`: `signature` is its
/// `X-Hub-Signature`, `content_type` its `Content-Type`, `body` the raw body (bounded by the
/// caller to the fetch limit). The signature is checked before anything else; only a body
/// that passes is parsed and stored, as a fetched body is (items, sanitizing, search index,
/// tags and full text queues, the raw body kept).
pub async fn receive_push(
    fetcher: &Fetcher,
    token: &str,
    signature: Option<&str>,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<PushOutcome, StoreError> {
    let store = fetcher.store();
    let now = Utc::now();
    let row = store.websub_by_token(token).await?;
    let outcome = match row {
        Some(row) if takes_pushes(&row) => match signature {
            None => PushOutcome::MissingSignature,
            Some(signature) if !signature_matches(row.secret.as_bytes(), &body, signature) => {
                PushOutcome::BadSignature
            }
            Some(_) => store_push(fetcher, &row, content_type, body, now).await?,
        },
        _ => PushOutcome::Gone,
    };
    let accepted = matches!(
        outcome,
        PushOutcome::Stored { .. } | PushOutcome::Unreadable(_)
    );
    if !matches!(outcome, PushOutcome::Gone) {
        store
            .record_websub_push(token, accepted, now.timestamp())
            .await?;
    }
    fetcher.metrics().record_websub_push(outcome.label());
    match &outcome {
        PushOutcome::Stored { inserted, updated } => {
            tracing::info!(inserted, updated, "websub push stored")
        }
        PushOutcome::Unreadable(error) => {
            tracing::warn!(%error, "websub push with a valid signature is not a feed; dropped")
        }
        other => tracing::warn!(
            outcome = other.label(),
            "websub push dropped: it failed verification"
        ),
    }
    Ok(outcome)
}

async fn store_push(
    fetcher: &Fetcher,
    row: &WebSubSubscription,
    content_type: Option<&str>,
    body: Bytes,
    now: chrono::DateTime<Utc>,
) -> Result<PushOutcome, StoreError> {
    let (content_type, charset) = content_type
        .map(tidings_fetch::client::parse_content_type)
        .unwrap_or((None, None));
    // The topic is where the pushed document lives: relative links resolve against it.
    let url = row
        .sub_topic_url
        .as_deref()
        .and_then(|topic| Url::parse(topic).ok())
        .or_else(|| Url::parse(&row.feed_url).ok());
    let Some(url) = url else {
        return Ok(PushOutcome::Unreadable("the feed has no usable URL".into()));
    };
    let response = FetchResponse {
        status: 200,
        url,
        permanent_redirect: None,
        redirects: 0,
        body,
        content_type,
        charset,
        etag: None,
        last_modified: None,
        cache_hints: Default::default(),
        remote_addr: None,
        link: None,
    };
    match fetcher
        .store_pushed(row.feed_id, &response, row.scrape_config.as_deref(), now)
        .await?
    {
        Ok(counts) => Ok(PushOutcome::Stored {
            inserted: counts.inserted,
            updated: counts.updated,
        }),
        Err(message) => Ok(PushOutcome::Unreadable(message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> WebSubSubscription {
        WebSubSubscription {
            feed_id: 1,
            hub_url: Some("https://hub.example/".into()),
            topic_url: Some("https://b.example/feed".into()),
            sub_hub_url: None,
            sub_topic_url: None,
            callback_token: "t".into(),
            secret: "s".into(),
            state: WebSubState::Inactive,
            pending_mode: None,
            requested_at: None,
            lease_seconds: None,
            active_until: None,
            denied_reason: None,
            last_error: None,
            failures: 0,
            next_action_at: 0,
            pushes: 0,
            last_push_at: None,
            rejected_pushes: 0,
            has_subscribers: true,
            feed_url: "https://b.example/feed".into(),
            scrape_config: None,
        }
    }

    fn subscribe(fresh: bool) -> Action {
        Action::Send {
            mode: WebSubMode::Subscribe,
            hub: "https://hub.example/".into(),
            topic: "https://b.example/feed".into(),
            fresh,
        }
    }

    #[test]
    fn the_job_subscribes_waits_renews_and_unsubscribes() {
        let now = 1_000_000;
        let mut row = row();
        assert_eq!(decide(&row, now), subscribe(false), "a new row subscribes");
        row.sub_hub_url = row.hub_url.clone();
        row.sub_topic_url = row.topic_url.clone();
        row.pending_mode = Some(WebSubMode::Subscribe);
        row.requested_at = Some(now - 10);
        assert_eq!(
            decide(&row, now),
            Action::Wait(now - 10 + VERIFY_WAIT_SECONDS),
            "a pending request waits for its verification"
        );
        assert_eq!(
            decide(&row, now + VERIFY_WAIT_SECONDS),
            subscribe(false),
            "then goes again"
        );
        row.pending_mode = None;
        row.state = WebSubState::Active;
        row.lease_seconds = Some(1000);
        row.active_until = Some(now + 1000);
        assert_eq!(
            decide(&row, now),
            Action::Wait(now + 800),
            "renewal before the end"
        );
        assert_eq!(decide(&row, now + 800), subscribe(false), "renewed");
        row.hub_url = Some("https://other-hub.example/".into());
        assert_eq!(
            decide(&row, now),
            Action::Send {
                mode: WebSubMode::Subscribe,
                hub: "https://other-hub.example/".into(),
                topic: "https://b.example/feed".into(),
                fresh: true
            },
            "a new hub gets a new callback and secret"
        );
        row.hub_url = row.sub_hub_url.clone();
        row.has_subscribers = false;
        assert_eq!(
            decide(&row, now),
            Action::Send {
                mode: WebSubMode::Unsubscribe,
                hub: "https://hub.example/".into(),
                topic: "https://b.example/feed".into(),
                fresh: false
            },
            "the last subscriber left"
        );
        row.pending_mode = Some(WebSubMode::Unsubscribe);
        row.requested_at = Some(now);
        assert_eq!(decide(&row, now), Action::Wait(now + VERIFY_WAIT_SECONDS));
        row.pending_mode = None;
        row.state = WebSubState::Inactive;
        assert_eq!(decide(&row, now), Action::Wait(now + IDLE_RECHECK_SECONDS));
        row.has_subscribers = true;
        row.state = WebSubState::Denied;
        assert_eq!(
            decide(&row, now),
            subscribe(true),
            "a denial's rest is over"
        );
    }

    #[test]
    fn signatures_of_every_method_and_malformed_ones() {
        let body = b"<feed/>";
        let secret = b"s3cret";
        fn hmac_hex<M: Mac + KeyInit>(secret: &[u8], body: &[u8]) -> String {
            let mut mac = <M as KeyInit>::new_from_slice(secret).expect("any key length");
            mac.update(body);
            hex::encode(mac.finalize().into_bytes())
        }
        let sha1 = hmac_hex::<hmac::Hmac<sha1::Sha1>>(secret, body);
        let sha256 = hmac_hex::<hmac::Hmac<sha2::Sha256>>(secret, body);
        let sha384 = hmac_hex::<hmac::Hmac<sha2::Sha384>>(secret, body);
        let sha512 = hmac_hex::<hmac::Hmac<sha2::Sha512>>(secret, body);
        assert!(signature_matches(secret, body, &format!("sha1={sha1}")));
        assert!(signature_matches(
            secret,
            body,
            &format!("SHA256={}", sha256.to_uppercase())
        ));
        assert!(signature_matches(secret, body, &format!("sha384={sha384}")));
        assert!(signature_matches(secret, body, &format!("sha512={sha512}")));
        for bad in [
            format!("sha256={sha1}"),
            format!("sha1={sha256}"),
            format!("md5={sha1}"),
            format!("sha256={}", &sha256[..10]),
            "sha256=zz".into(),
            "sha256".into(),
            String::new(),
            "=".into(),
        ] {
            assert!(!signature_matches(secret, body, &bad), "{bad}");
        }
        assert!(!signature_matches(
            b"other",
            body,
            &format!("sha256={sha256}")
        ));
        assert!(!signature_matches(
            secret,
            b"<feed/> ",
            &format!("sha256={sha256}")
        ));
    }

    #[test]
    fn callbacks_and_base_urls() {
        let config = WebSubConfig {
            base_url: Some(Url::parse("https://reader.example/sub/?x=1").unwrap()),
            ..WebSubConfig::default()
        };
        assert_eq!(
            config.callback_url("abc").unwrap().as_str(),
            "https://reader.example/sub/websub/abc"
        );
        let public = Url::parse("https://reader.example/").unwrap();
        assert!(check_public_base_url(&public, false).is_ok());
        for local in [
            "http://127.0.0.1:8080/",
            "http://localhost/",
            "http://10.0.0.2/",
        ] {
            let url = Url::parse(local).unwrap();
            assert!(check_public_base_url(&url, false).is_err(), "{local}");
            assert!(check_public_base_url(&url, true).is_ok(), "{local}");
        }
        assert_ne!(random_token(), random_token());
        assert_eq!(random_token().len(), 64);
    }
}
