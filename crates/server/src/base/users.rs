//! Users as the API shows them, and the rules every way of making or changing an account
//! shares (sign-up, setup, the administrator's user management, password changes, second
//! factors): the password policy and hashing, user names, the last administrator.

use axum::http::StatusCode;
use serde::Serialize;
use tidings_store::User;
use utoipa::ToSchema;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorCategory};
use crate::base::limits::within_limit;
use crate::base::state::AppState;
use crate::base::time::time;
use crate::password;

/// A user as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    /// The user's id.
    pub id: i64,
    /// The login name.
    pub username: String,
    /// Whether the user manages other users.
    pub is_admin: bool,
    /// Whether the account is disabled.
    pub is_disabled: bool,
    /// When the account was created.
    pub created_at: String,
    /// The last sign-in.
    pub last_login_at: Option<String>,
    /// Whether the account has a password. An account made by single sign-on has none: it
    /// sets one, and deletes itself, without a current password but from a fresh sign-in.
    pub has_password: bool,
}

impl From<User> for UserView {
    fn from(user: User) -> UserView {
        UserView {
            id: user.id,
            username: user.username,
            is_admin: user.is_admin,
            is_disabled: user.is_disabled,
            created_at: time(user.created_at),
            last_login_at: user.last_login_at.map(time),
            has_password: user.has_password,
        }
    }
}

/// A user, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserEnvelope {
    /// The user.
    pub user: UserView,
}

/// Verifies a password off the async executor (argon2 takes tens of milliseconds).
pub(crate) async fn verify(password: String, hash: String) -> ApiResult<bool> {
    tokio::task::spawn_blocking(move || password::verify_password(&password, &hash))
        .await
        .map_err(ApiError::internal)
}

/// Hashes a password off the async executor.
pub(crate) async fn hash(password: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || password::hash_password(&password))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
}

/// Checks a new password against the policy (F20), as a validation error.
pub(crate) fn check_policy(password: &str, username: &str) -> ApiResult<()> {
    password::check_password_policy(password, username).map_err(|reason| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "weak_password",
            ErrorCategory::Validation,
            crate::base::error::capitalize(&reason.to_string()),
            "Choose a longer password that is not built from common words or patterns.",
        )
    })
}

/// Checks a new user name (see [`tidings_store::normalize_username`]) and returns the form to
/// store; a refused name is a 400 naming the field, with the store's reason.
pub(crate) fn new_username(name: &str) -> ApiResult<String> {
    tidings_store::normalize_username(name).map_err(|error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_username",
            ErrorCategory::Validation,
            format!("The field username is refused: {error}."),
            "Choose a user name of letters from one script (e.g. only Latin or only Cyrillic), \
             digits, '.', '_', '-' or '@', starting with a letter or digit.",
        )
    })
}

/// Verifies the signed-in user's current password (rate-limited like sign-in attempts).
pub(crate) async fn check_current_password(
    state: &AppState,
    auth: &Auth,
    password: String,
) -> ApiResult<()> {
    let account = tidings_store::username_key(&auth.user.username)
        .unwrap_or_else(|_| auth.user.username.to_lowercase());
    within_limit(&state.limits.login_per_account, &account).await?;
    let stored = state
        .store
        .user_credentials(&auth.user.username)
        .await?
        .and_then(|(_, hash)| hash)
        .unwrap_or_else(|| state.decoy_hash.as_ref().clone());
    if !verify(password, stored).await? {
        return Err(ApiError::forbidden(
            "The current password is wrong.",
            "Type the password you sign in with now.",
        ));
    }
    Ok(())
}

/// The store's refusal to remove the last administrator, with what to do about it.
pub(crate) fn last_admin_error(error: tidings_store::StoreError) -> ApiError {
    match error {
        tidings_store::StoreError::Conflict(_) => ApiError::conflict(
            "This is the last active administrator, who cannot be demoted, disabled or deleted.",
            "Make another user an administrator first.",
        ),
        other => other.into(),
    }
}
