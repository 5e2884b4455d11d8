//! User management for administrators (F24).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_store::{FeedSettings, FeedSettingsChanges, NewUser};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::AdminAuth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path};
use crate::base::state::AppState;
use crate::base::subscriptions::ResumedFeeds;
use crate::base::users::{
    UserEnvelope, UserView, check_policy, hash, last_admin_error, new_username,
};

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(update_user, delete_user))
        .routes(routes!(resume_all_stopped_feeds))
        .routes(routes!(feed_settings, update_feed_settings))
}

/// The users.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    /// By name.
    pub users: Vec<UserView>,
}

/// A new user.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// The login name.
    pub username: String,
    /// The password (checked against the policy).
    pub password: String,
    /// Whether the user is an administrator (default false).
    #[serde(default)]
    pub is_admin: bool,
}

/// Changes to a user; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    /// Make or unmake an administrator.
    pub is_admin: Option<bool>,
    /// Disable (ends the user's sessions) or enable.
    pub is_disabled: Option<bool>,
    /// Set a new password (ends the user's sessions and revokes their API keys).
    pub password: Option<String>,
    /// With `password`: keep the user's API keys working (default false).
    #[serde(default)]
    pub keep_api_keys: bool,
}

/// Every user (administrators only).
#[utoipa::path(get, path = "/users", tag = "admin",
    responses((status = 200, body = UserList),
        (status = 403, description = "Not an administrator", body = ErrorBody)))]
async fn list_users(State(state): State<AppState>, _admin: AdminAuth) -> ApiResult<Json<UserList>> {
    let users = state.store.list_users().await?;
    Ok(Json(UserList {
        users: users.into_iter().map(Into::into).collect(),
    }))
}

/// Create a user (administrators only).
#[utoipa::path(post, path = "/users", tag = "admin", request_body = CreateUser,
    responses(
        (status = 201, body = UserEnvelope),
        (status = 403, description = "Not an administrator, or a read-only API key", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 400, description = "The user name is refused (characters, mixed scripts) or the password is weak", body = ErrorBody),
    ))]
async fn create_user(
    State(state): State<AppState>,
    _admin: AdminAuth,
    Json(body): Json<CreateUser>,
) -> ApiResult<(StatusCode, Json<UserEnvelope>)> {
    let username = new_username(&body.username)?;
    check_policy(&body.password, &username)?;
    let password_hash = hash(body.password).await?;
    let user = state
        .store
        .create_user(&NewUser {
            username,
            password_hash: Some(password_hash),
            is_admin: body.is_admin,
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(UserEnvelope { user: user.into() }),
    ))
}

/// Change a user's role, status or password (administrators only). The last active
/// administrator cannot be demoted or disabled.
#[utoipa::path(patch, path = "/users/{id}", tag = "admin", request_body = UpdateUser,
    params(("id" = i64, Path, description = "The user's id")),
    responses(
        (status = 200, body = UserEnvelope),
        (status = 403, description = "Not an administrator, or a read-only API key", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Would leave no administrator", body = ErrorBody),
    ))]
async fn update_user(
    State(state): State<AppState>,
    _admin: AdminAuth,
    Path(id): Path<i64>,
    Json(body): Json<UpdateUser>,
) -> ApiResult<Json<UserEnvelope>> {
    let user = state.store.user(id).await?;
    if let Some(password) = &body.password {
        check_policy(password, &user.username)?;
    }
    // The flags first: refusing to demote the last administrator changes nothing else.
    let updated = state
        .store
        .set_user_flags(id, body.is_admin, body.is_disabled)
        .await
        .map_err(last_admin_error)?;
    if let Some(password) = body.password {
        let password_hash = hash(password).await?;
        state.store.set_password_hash(id, &password_hash).await?;
        state.store.delete_user_sessions(id, None).await?;
        if !body.keep_api_keys {
            state.store.revoke_user_api_keys(id).await?;
        }
    }
    if body.is_disabled == Some(true) {
        state.store.delete_user_sessions(id, None).await?;
    }
    Ok(Json(UserEnvelope {
        user: updated.into(),
    }))
}

/// Delete a user and what is only theirs (administrators only); shared feeds stay.
#[utoipa::path(delete, path = "/users/{id}", tag = "admin",
    params(("id" = i64, Path, description = "The user's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "Not an administrator, or a read-only API key", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The last administrator", body = ErrorBody),
    ))]
async fn delete_user(
    State(state): State<AppState>,
    _admin: AdminAuth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state
        .store
        .delete_user(id)
        .await
        .map_err(last_admin_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Resume every stopped feed, whoever follows it (administrators only), e.g. after fixing a
/// setting that made them fail: each is fetched at the next tick.
#[utoipa::path(post, path = "/feeds/resume-stopped", tag = "admin",
    responses(
        (status = 200, description = "The stopped feeds were resumed", body = ResumedFeeds),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an administrator, a read-only API key, or a cross-site request", body = ErrorBody),
        (status = 429, description = "Too many requests", body = ErrorBody),
    ))]
async fn resume_all_stopped_feeds(
    State(state): State<AppState>,
    _admin: AdminAuth,
) -> ApiResult<Json<ResumedFeeds>> {
    let resumed = state.store.resume_stopped_feeds(None).await?;
    Ok(Json(ResumedFeeds { resumed }))
}

/// A shared feed's operator settings (administrators only). They act on every subscriber's
/// fetch, and a proxy URL may carry credentials, so no other user sees them.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedSettingsView {
    /// The feed's id (a subscription's `feed_id`).
    pub id: i64,
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: Option<String>,
    /// Suspended for everyone: no worker fetches it, whoever follows it.
    pub suspended: bool,
    /// The proxy it is fetched through, credentials included; null for none.
    pub proxy_url: Option<String>,
    /// How many users follow it.
    pub subscribers: i64,
    /// How many of them have not paused their subscription (while none has, it is not
    /// fetched either).
    pub active_subscribers: i64,
}

impl From<FeedSettings> for FeedSettingsView {
    fn from(feed: FeedSettings) -> FeedSettingsView {
        FeedSettingsView {
            id: feed.id,
            url: feed.url,
            title: feed.title,
            suspended: feed.suspended,
            proxy_url: feed.proxy_url,
            subscribers: feed.subscribers,
            active_subscribers: feed.active_subscribers,
        }
    }
}

/// One feed's operator settings.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedSettingsEnvelope {
    /// The feed.
    pub feed: FeedSettingsView,
}

/// Changes to a feed's operator settings; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateFeedSettings {
    /// Suspend (`true`) the feed for everyone, or resume it (`false`: due at once).
    pub suspended: Option<bool>,
    /// Fetch the feed through this proxy: `http://`, `https://`, `socks5://` or `socks5h://`
    /// with a host and port, checked like any outbound address; `null` or `""` for none.
    #[serde(default, deserialize_with = "crate::api::subscriptions::double_option")]
    #[schema(value_type = Option<String>)]
    pub proxy_url: Option<Option<String>>,
}

/// A feed's operator settings: suspended for everyone, and its proxy (administrators only).
#[utoipa::path(get, path = "/admin/feeds/{id}", tag = "admin",
    params(("id" = i64, Path, description = "The feed's id")),
    responses(
        (status = 200, body = FeedSettingsEnvelope),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an administrator", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn feed_settings(
    State(state): State<AppState>,
    _admin: AdminAuth,
    Path(id): Path<i64>,
) -> ApiResult<Json<FeedSettingsEnvelope>> {
    let feed = state.store.feed_settings(id).await?;
    Ok(Json(FeedSettingsEnvelope { feed: feed.into() }))
}

/// Suspend or resume a feed for everyone, or set or remove its proxy (administrators only).
/// A proxy on a shared feed routes every subscriber's fetch of it.
#[utoipa::path(patch, path = "/admin/feeds/{id}", tag = "admin", request_body = UpdateFeedSettings,
    params(("id" = i64, Path, description = "The feed's id")),
    responses(
        (status = 200, body = FeedSettingsEnvelope),
        (status = 400, description = "The proxy URL cannot be read or is refused", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an administrator, a read-only API key, or a cross-site request", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn update_feed_settings(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(id): Path<i64>,
    Json(body): Json<UpdateFeedSettings>,
) -> ApiResult<Json<FeedSettingsEnvelope>> {
    let proxy_url = match body.proxy_url {
        Some(Some(text)) if !text.trim().is_empty() => {
            let policy = &state.fetcher.client().config().address_policy;
            let url = policy
                .parse_proxy_url(&text)
                .map_err(|reason| ApiError::validation(reason, tidings_fetch::PROXY_URL_FORMS))?;
            Some(Some(url.to_string()))
        }
        Some(_) => Some(None),
        None => None,
    };
    let changes = FeedSettingsChanges {
        suspended: body.suspended,
        proxy_url,
    };
    let feed = state.store.update_feed_settings(id, &changes).await?;
    tracing::info!(
        feed = id,
        admin = admin.0.user.id,
        suspended = feed.suspended,
        proxy = feed
            .proxy_url
            .as_deref()
            .map(tidings_fetch::redact_url)
            .as_deref()
            .unwrap_or("none"),
        "feed settings changed"
    );
    Ok(Json(FeedSettingsEnvelope { feed: feed.into() }))
}
