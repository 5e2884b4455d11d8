//! User management for administrators (F24).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_store::NewUser;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::AdminAuth;
use crate::base::error::{ApiResult, ErrorBody};
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
