//! Notification channels (F43): a user's Discord, Slack and generic webhooks with their rules,
//! "send test", and each channel's delivery log. The worker matches and sends; see
//! `tidings_worker::notifications`.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_notify::{Kind, Rules, validate_url};
use tidings_store::{DeliveryLogEntry, NewWebhook, Webhook, WebhookChanges};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path, Query};
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(get_webhook, update_webhook, delete_webhook))
        .routes(routes!(test_webhook))
        .routes(routes!(renew_webhook_secret))
        .routes(routes!(webhook_deliveries))
}

/// Which new items a channel gets. No rule at all: every new item of the user's
/// subscriptions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesBody {
    /// Feeds (ids of the user's subscriptions' feeds) whose new items the channel gets.
    #[serde(default)]
    pub feed_ids: Vec<i64>,
    /// Groups (ids of the user's groups) whose subscriptions' new items the channel gets.
    #[serde(default)]
    pub group_ids: Vec<i64>,
    /// Words or phrases, matched like search (Japanese included); an item passes when any one
    /// appears in its title or text. None: every item of the chosen feeds and groups.
    #[serde(default)]
    pub keywords: Vec<String>,
}

impl RulesBody {
    fn checked(self) -> ApiResult<Rules> {
        Rules {
            feed_ids: self.feed_ids,
            group_ids: self.group_ids,
            keywords: self.keywords,
        }
        .normalized()
        .map_err(|error| ApiError::validation(error.to_string(), "Change the channel's rules."))
    }
}

impl From<Rules> for RulesBody {
    fn from(rules: Rules) -> RulesBody {
        RulesBody {
            feed_ids: rules.feed_ids,
            group_ids: rules.group_ids,
            keywords: rules.keywords,
        }
    }
}

/// A notification channel.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookView {
    /// Its id.
    pub id: i64,
    /// `discord`, `slack` or `generic`.
    #[schema(pattern = "^(discord|slack|generic)$")]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Where messages go.
    pub url: String,
    /// Which new items it gets.
    pub rules: RulesBody,
    /// Whether it gets any.
    pub enabled: bool,
    /// When it was created.
    pub created_at: String,
    /// When it was last changed.
    pub updated_at: String,
    /// Failed messages in a row.
    pub failures: i64,
    /// While its circuit breaker is open (after 5 failures in a row), until when; null
    /// when closed.
    pub breaker_open_until: Option<String>,
    /// When a message last went through.
    pub last_sent_at: Option<String>,
    /// Items waiting to be sent.
    pub queued: i64,
    /// Whether its messages carry `X-Tidings-Signature` (generic channels; see
    /// docs/notifications.md for how to check it).
    pub signed: bool,
    /// The signing secret, in the answer that creates the channel only: it is shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
}

impl From<Webhook> for WebhookView {
    fn from(webhook: Webhook) -> WebhookView {
        WebhookView {
            id: webhook.id,
            kind: webhook.kind.as_str().to_owned(),
            name: webhook.name,
            url: webhook.url,
            rules: webhook.rules.into(),
            enabled: webhook.enabled,
            created_at: time(webhook.created_at),
            updated_at: time(webhook.updated_at),
            failures: webhook.failures,
            breaker_open_until: webhook
                .breaker_until_ms
                .filter(|until| *until > chrono::Utc::now().timestamp_millis())
                .map(|until| time(until.div_euclid(1000))),
            last_sent_at: webhook.last_sent_at.map(time),
            queued: webhook.queued,
            signed: webhook.signing_secret.is_some(),
            signing_secret: None,
        }
    }
}

/// The user's channels.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    /// Oldest first.
    pub webhooks: Vec<WebhookView>,
}

/// A channel, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookEnvelope {
    /// The channel.
    pub webhook: WebhookView,
}

/// A new channel.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// `discord`, `slack` or `generic`.
    pub kind: String,
    /// Discord: `https://discord.com/api/webhooks/{id}/{token}`; Slack:
    /// `https://hooks.slack.com/services/T…/B…/…`; generic: any http(s) URL.
    pub url: String,
    /// A name (the kind's name when not given).
    pub name: Option<String>,
    /// Which new items it gets (none: all).
    pub rules: Option<RulesBody>,
    /// On (default) or off.
    pub enabled: Option<bool>,
}

/// Changes to a channel; absent fields keep their value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhook {
    /// A new name.
    pub name: Option<String>,
    /// A new URL of the channel's kind (resets its failures and breaker).
    pub url: Option<String>,
    /// New rules (replacing the old ones whole).
    pub rules: Option<RulesBody>,
    /// On or off.
    pub enabled: Option<bool>,
}

/// A channel's new signing secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningSecretBody {
    /// The secret: shown this once, stored by tidings to sign messages.
    pub signing_secret: String,
}

/// Give a generic channel a new signing secret (the old one stops at once), shown this once;
/// channels from before signing get their first one this way.
#[utoipa::path(post, path = "/webhooks/{id}/secret", tag = "webhooks",
    params(("id" = i64, Path, description = "The channel's id")),
    responses(
        (status = 200, body = SigningSecretBody),
        (status = 400, description = "Not a generic channel", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn renew_webhook_secret(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<SigningSecretBody>> {
    let secret = state.store.renew_webhook_secret(auth.user.id, id).await?;
    Ok(Json(SigningSecretBody {
        signing_secret: secret.expose().to_owned(),
    }))
}

/// What "send test" did.
#[derive(Debug, Serialize, ToSchema)]
pub struct TestResult {
    /// Whether the message went through.
    pub ok: bool,
    /// The answer's status, when there was an answer.
    pub http_status: Option<u16>,
    /// What went wrong.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: i64,
}

/// A row of a channel's delivery log.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// Its id.
    pub id: i64,
    /// When.
    pub at: String,
    /// `sent`, `retrying` (failed; tried again later), `dropped` (failed for good, or waited
    /// more than a day) or `failed` (a test that did not go through).
    #[schema(pattern = "^(sent|retrying|dropped|failed)$")]
    pub status: String,
    /// Whether it was a "send test".
    pub test: bool,
    /// The answer's HTTP status.
    pub http_status: Option<i64>,
    /// Items in the message.
    pub items: i64,
    /// What went wrong.
    pub error: Option<String>,
    /// How long the request took.
    pub duration_ms: i64,
}

impl From<DeliveryLogEntry> for DeliveryView {
    fn from(entry: DeliveryLogEntry) -> DeliveryView {
        DeliveryView {
            id: entry.id,
            at: time(entry.at),
            status: entry.status,
            test: entry.test,
            http_status: entry.http_status,
            items: entry.items,
            error: entry.error,
            duration_ms: entry.duration_ms,
        }
    }
}

/// A channel's delivery log.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    /// Newest first (the newest 100 are kept).
    pub deliveries: Vec<DeliveryView>,
}

/// The parameters of the delivery log.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveryParams {
    /// How many rows (1–100, default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

fn parse_kind(kind: &str) -> ApiResult<Kind> {
    Kind::parse(kind.trim()).ok_or_else(|| {
        ApiError::validation(
            format!("unknown channel kind {kind:?}: it is discord, slack or generic"),
            "Choose discord, slack or generic.",
        )
    })
}

fn checked_url(kind: Kind, url: &str) -> ApiResult<String> {
    validate_url(kind, url)
        .map(|url| url.to_string())
        .map_err(|error| ApiError::validation(error.to_string(), "Copy the webhook URL again."))
}

/// The signed-in user's notification channels.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks",
    responses((status = 200, body = WebhookList), (status = 401, body = ErrorBody)))]
async fn list_webhooks(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<WebhookList>> {
    let webhooks = state.store.webhooks(auth.user.id).await?;
    Ok(Json(WebhookList {
        webhooks: webhooks.into_iter().map(Into::into).collect(),
    }))
}

/// Add a notification channel. It gets the matching items stored from now on.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = CreateWebhook,
    responses(
        (status = 201, description = "Created", body = WebhookEnvelope),
        (status = 400, description = "A URL not of the kind's form, unknown feeds or groups, bad keywords", body = ErrorBody),
        (status = 409, description = "The limit of 20 channels is reached", body = ErrorBody),
    ))]
async fn create_webhook(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<CreateWebhook>,
) -> ApiResult<(StatusCode, Json<WebhookEnvelope>)> {
    let kind = parse_kind(&body.kind)?;
    let url = checked_url(kind, &body.url)?;
    let rules = body.rules.unwrap_or_default().checked()?;
    let name = body
        .name
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| crate::base::error::capitalize(kind.as_str()));
    let new = NewWebhook {
        kind,
        name,
        url,
        rules,
        enabled: body.enabled.unwrap_or(true),
    };
    let webhook = state
        .store
        .create_webhook(auth.user.id, &new, chrono::Utc::now().timestamp())
        .await?;
    let secret = webhook
        .signing_secret
        .as_ref()
        .map(|secret| secret.expose().to_owned());
    let mut view = WebhookView::from(webhook);
    view.signing_secret = secret;
    Ok((StatusCode::CREATED, Json(WebhookEnvelope { webhook: view })))
}

/// One channel.
#[utoipa::path(get, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = i64, Path, description = "The channel's id")),
    responses((status = 200, body = WebhookEnvelope), (status = 404, body = ErrorBody)))]
async fn get_webhook(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<WebhookEnvelope>> {
    let webhook = state.store.webhook(auth.user.id, id).await?;
    Ok(Json(WebhookEnvelope {
        webhook: webhook.into(),
    }))
}

/// Change a channel's name, URL, rules or state.
#[utoipa::path(patch, path = "/webhooks/{id}", tag = "webhooks", request_body = UpdateWebhook,
    params(("id" = i64, Path, description = "The channel's id")),
    responses(
        (status = 200, body = WebhookEnvelope),
        (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn update_webhook(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Json(body): Json<UpdateWebhook>,
) -> ApiResult<Json<WebhookEnvelope>> {
    let current = state.store.webhook(auth.user.id, id).await?;
    let url = body
        .url
        .as_deref()
        .map(|url| checked_url(current.kind, url))
        .transpose()?;
    let rules = body.rules.map(RulesBody::checked).transpose()?;
    let changes = WebhookChanges {
        name: body.name,
        url,
        rules,
        enabled: body.enabled,
    };
    let webhook = state
        .store
        .update_webhook(auth.user.id, id, &changes, chrono::Utc::now().timestamp())
        .await?;
    Ok(Json(WebhookEnvelope {
        webhook: webhook.into(),
    }))
}

/// Delete a channel, its queue and its log.
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = i64, Path, description = "The channel's id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn delete_webhook(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.delete_webhook(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test message to the channel now (outside its queue and pace) and log it. The
/// answer says whether it went through; a failure is still 200, with `ok: false`.
#[utoipa::path(post, path = "/webhooks/{id}/test", tag = "webhooks",
    params(("id" = i64, Path, description = "The channel's id")),
    responses((status = 200, body = TestResult), (status = 404, body = ErrorBody)))]
async fn test_webhook(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<TestResult>> {
    let webhook = state.store.webhook(auth.user.id, id).await?;
    let notifier = tidings_worker::Notifier::new(&state.fetcher).map_err(ApiError::internal)?;
    let outcome = notifier.send_test(&state.store, &webhook).await?;
    Ok(Json(TestResult {
        ok: outcome.error.is_none(),
        http_status: outcome.http_status,
        error: outcome.error,
        duration_ms: outcome.duration_ms,
    }))
}

/// The channel's delivery log, newest first.
#[utoipa::path(get, path = "/webhooks/{id}/deliveries", tag = "webhooks", params(
        ("id" = i64, Path, description = "The channel's id"),
        DeliveryParams,
    ),
    responses((status = 200, body = DeliveryList), (status = 404, body = ErrorBody)))]
async fn webhook_deliveries(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Query(params): Query<DeliveryParams>,
) -> ApiResult<Json<DeliveryList>> {
    let limit = params.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation(
            "limit is 1–100",
            "Ask for at most 100 rows.",
        ));
    }
    let rows = state
        .store
        .webhook_deliveries(auth.user.id, id, limit)
        .await?;
    Ok(Json(DeliveryList {
        deliveries: rows.into_iter().map(Into::into).collect(),
    }))
}
