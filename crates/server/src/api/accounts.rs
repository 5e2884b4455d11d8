//! Signing in and out, the one-time setup, the current user, their sessions and API keys
//! (F20, F21, F23, F28).

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tidings_store::{ApiKeyScope, unix_now};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::{
    API_KEY_PREFIX, Auth, SessionAuth, expired_session_cookie, fever_key_digest, new_secret,
    secret_hash,
};
use crate::base::client::ClientContext;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::limits::within_limit;
use crate::base::sessions::{await_second_factor, password_sign_in_off, start_session};
use crate::base::state::AppState;
use crate::base::time::time;
use crate::base::users::{
    UserEnvelope, check_current_password, check_policy, hash, last_admin_error, new_username,
    verify,
};
use crate::setup;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(sign_in, sign_out))
        .routes(routes!(setup_status, complete_setup))
        .routes(routes!(me, delete_me))
        .routes(routes!(change_password))
        .routes(routes!(list_sessions))
        .routes(routes!(end_session))
        .routes(routes!(list_api_keys, create_api_key))
        .routes(routes!(revoke_api_key))
}

/// Credentials for signing in.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    /// The login name.
    pub username: String,
    /// The password.
    pub password: String,
}

fn invalid_credentials() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
        ErrorCategory::Auth,
        "The user name or password is wrong.",
        "Check both and try again.",
    )
}

/// Sign in with a user name and password; sets the session cookie (HttpOnly, SameSite=Lax,
/// Secure over HTTPS). Limited to 5 attempts a minute per address and 10 per account.
#[utoipa::path(post, path = "/session", tag = "accounts", request_body = SignIn, security(()),
    responses(
        (status = 200, description = "Signed in; the cookie is set", body = UserEnvelope),
        (status = 202, description = "The password is right and a second factor is on: send it to /session/second-factor or /session/passkey within 5 minutes", body = crate::base::sessions::SecondFactorNeeded),
        (status = 401, description = "Wrong user name or password", body = ErrorBody),
        (status = 403, description = "The account is disabled", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
    ))]
async fn sign_in(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    headers: HeaderMap,
    Json(body): Json<SignIn>,
) -> ApiResult<Response> {
    within_limit(&state.limits.login_per_ip, &client.key()).await?;
    if !state.store.password_sign_in().await? {
        return Err(password_sign_in_off());
    }
    // Every spelling of a name counts against the same account's budget.
    let account = tidings_store::username_key(&body.username)
        .unwrap_or_else(|_| body.username.trim().to_lowercase());
    within_limit(&state.limits.login_per_account, &account).await?;
    let found = state.store.user_credentials(&body.username).await?;
    // An unknown user costs the same hash verification as a known one, so timing does not
    // tell which names exist.
    let (user, stored) = match found {
        Some((user, Some(hash))) => (Some(user), hash),
        _ => (None, state.decoy_hash.as_ref().clone()),
    };
    let matches = verify(body.password, stored).await?;
    let Some(user) = user.filter(|_| matches) else {
        return Err(invalid_credentials());
    };
    if user.is_disabled {
        return Err(ApiError::forbidden(
            "This account is disabled.",
            "Ask an administrator to enable it.",
        ));
    }
    // With a second factor on, the password opens only a short wait for it (issue 19).
    if let Some(pending) = await_second_factor(&state, &user, &client).await? {
        return Ok(pending);
    }
    start_session(&state, user, &client, &headers, StatusCode::OK).await
}

/// Sign out: ends the current session and removes the cookie.
#[utoipa::path(delete, path = "/session", tag = "accounts",
    responses((status = 204, description = "Signed out"), (status = 401, body = ErrorBody)))]
async fn sign_out(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    auth: Auth,
) -> ApiResult<Response> {
    if let Some(session_id) = auth.session_id {
        state.store.delete_session(session_id).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, expired_session_cookie(client.https));
    Ok(response)
}

/// Whether the first administrator still has to be created.
#[derive(Debug, Serialize, ToSchema)]
pub struct SetupStatus {
    /// True until a user exists.
    pub required: bool,
}

/// Whether the one-time setup is still pending.
#[utoipa::path(get, path = "/setup", tag = "accounts", security(()),
    responses((status = 200, body = SetupStatus)))]
async fn setup_status(State(state): State<AppState>) -> ApiResult<Json<SetupStatus>> {
    let (users, _) = state.store.count_users().await?;
    Ok(Json(SetupStatus {
        required: users == 0,
    }))
}

/// The first administrator, created with the token from the link `tidings serve` prints.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteSetup {
    /// The token from the setup link.
    pub token: String,
    /// The administrator's login name.
    pub username: String,
    /// The administrator's password.
    pub password: String,
}

/// Create the first administrator with the one-time setup token, and sign in as them.
#[utoipa::path(post, path = "/setup", tag = "accounts", request_body = CompleteSetup, security(()),
    responses(
        (status = 201, description = "Created and signed in", body = UserEnvelope),
        (status = 400, description = "The user name is refused (characters, mixed scripts)", body = ErrorBody),
        (status = 403, description = "Wrong or used token", body = ErrorBody),
        (status = 409, description = "Setup is already complete", body = ErrorBody),
        (status = 400, description = "Bad user name or weak password", body = ErrorBody),
    ))]
async fn complete_setup(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    headers: HeaderMap,
    Json(body): Json<CompleteSetup>,
) -> ApiResult<Response> {
    within_limit(&state.limits.login_per_ip, &client.key()).await?;
    let (users, _) = state.store.count_users().await?;
    if users > 0 {
        return Err(ApiError::conflict(
            "Setup is already complete.",
            "Sign in with an existing account.",
        ));
    }
    if !setup::check_setup_token(&state.store, body.token.trim()).await? {
        return Err(ApiError::forbidden(
            "The setup link is wrong or has been used.",
            "Use the newest link printed by `tidings serve`, or run `tidings user add NAME --admin`.",
        ));
    }
    let username = new_username(&body.username)?;
    check_policy(&body.password, &username)?;
    let password_hash = hash(body.password).await?;
    let user = state
        .store
        .create_first_admin(
            &setup::token_hash(body.token.trim()),
            &username,
            &password_hash,
        )
        .await
        .map_err(|e| match e {
            tidings_store::StoreError::NotFound(_) => ApiError::forbidden(
                "The setup link is wrong or has been used.",
                "Use the newest link printed by `tidings serve`.",
            ),
            other => other.into(),
        })?;
    start_session(&state, user, &client, &headers, StatusCode::CREATED).await
}

/// The signed-in user.
#[utoipa::path(get, path = "/me", tag = "accounts",
    responses((status = 200, body = UserEnvelope), (status = 401, body = ErrorBody)))]
async fn me(auth: Auth) -> Json<UserEnvelope> {
    Json(UserEnvelope {
        user: auth.user.into(),
    })
}

/// The confirmation of an account deletion.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteAccount {
    /// The password the user signs in with; required when the account has one.
    #[serde(default)]
    pub password: Option<String>,
    /// The user name, typed again; required instead of the password when the account has
    /// none (made by single sign-on).
    #[serde(default)]
    pub confirm_username: Option<String>,
}

/// How recent a sign-in must be for what a password would otherwise confirm, on an account
/// without one: 10 minutes. Such an account proves who is at the browser only through its
/// provider, at sign-in. Asking the provider again from here would need a second round trip
/// through it for every confirmation; a sign-in this recent is as good a proof as typing a
/// password, and it keeps a cookie stolen from a long-lived session (up to
/// `TIDINGS_SESSION_LIFETIME_DAYS`) from setting a password that takes the account over or
/// deleting it. Signing in again through the provider renews it.
pub const FRESH_SIGN_IN_SECONDS: i64 = 600;

/// Refuses (403 `sign_in_again`) unless the caller's session began within
/// [`FRESH_SIGN_IN_SECONDS`].
async fn require_fresh_sign_in(state: &AppState, auth: &Auth, what: &str) -> ApiResult<()> {
    let sessions = state.store.list_sessions(auth.user.id).await?;
    let started = sessions
        .iter()
        .find(|s| Some(s.id) == auth.session_id)
        .map(|s| s.created_at);
    let age = started.map(|at| unix_now().saturating_sub(at));
    if age.is_some_and(|age| age <= FRESH_SIGN_IN_SECONDS) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "sign_in_again",
        ErrorCategory::Auth,
        format!(
            "Your account has no password, so {what} needs a sign-in within the last {} \
             minutes{}.",
            FRESH_SIGN_IN_SECONDS / 60,
            age.map(|age| format!("; this one is {} minutes old", age / 60))
                .unwrap_or_default()
        ),
        "Sign out, sign in again with single sign-on, and try again at once.",
    ))
}

/// Delete the signed-in user's account and everything that is only theirs (subscriptions,
/// states, bookmarks, keys, sessions). Shared feeds and items stay (F28). Needs a signed-in
/// session (not an API key) and the current password; an account without a password (made by
/// single sign-on) sends its user name as `confirm_username` instead, from a sign-in of the
/// last 10 minutes. The last active administrator cannot delete their account.
#[utoipa::path(delete, path = "/me", tag = "accounts", request_body = DeleteAccount,
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The password (or, without one, the user name) is missing, or the name does not match", body = ErrorBody),
        (status = 403, description = "Wrong password, a sign-in older than 10 minutes on an account without a password (`sign_in_again`), or called with an API key", body = ErrorBody),
        (status = 409, description = "The last administrator", body = ErrorBody),
    ))]
async fn delete_me(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<DeleteAccount>,
) -> ApiResult<Response> {
    if auth.user.has_password {
        let Some(password) = body.password else {
            return Err(ApiError::validation(
                "The field password is required: type the password you sign in with.",
                "Send {\"password\": \"…\"} to confirm the deletion.",
            ));
        };
        check_current_password(&state, &auth, password).await?;
    } else {
        let typed = body.confirm_username.as_deref().map(str::trim);
        let key = |name: &str| tidings_store::username_key(name).ok();
        if typed.is_none_or(|typed| key(typed).is_none() || key(typed) != key(&auth.user.username))
        {
            return Err(ApiError::validation(
                format!(
                    "The field confirm_username must be your user name, {}, to confirm the \
                     deletion (your account has no password).",
                    auth.user.username
                ),
                "Type your user name exactly as shown on the account page.",
            ));
        }
        require_fresh_sign_in(&state, &auth, "deleting it").await?;
    }
    state
        .store
        .delete_user(auth.user.id)
        .await
        .map_err(last_admin_error)?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, expired_session_cookie(client.https));
    Ok(response)
}

/// A password change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangePassword {
    /// The password in use now; required when the account has one (an account made by
    /// single sign-on has none, and sets its first one from a sign-in of the last 10 minutes).
    #[serde(default)]
    pub current_password: Option<String>,
    /// The new password.
    pub new_password: String,
    /// Keep the user's other sessions signed in (default false: they end).
    #[serde(default)]
    pub keep_other_sessions: bool,
    /// Keep the user's API keys working (default false: they are revoked).
    #[serde(default)]
    pub keep_api_keys: bool,
}

/// Change the signed-in user's password, or set the first one of an account made by single
/// sign-on (which has none to type: it needs a sign-in of the last 10 minutes instead). Needs
/// a signed-in session (not an API key). Every other session of the user ends and every API
/// key is revoked, unless the request asks to keep them.
#[utoipa::path(put, path = "/me/password", tag = "accounts", request_body = ChangePassword,
    responses(
        (status = 204, description = "Changed"),
        (status = 403, description = "The current password is wrong, a sign-in older than 10 minutes on an account without a password (`sign_in_again`), or called with an API key", body = ErrorBody),
        (status = 400, description = "The new password is too weak, or the current one is missing", body = ErrorBody),
    ))]
async fn change_password(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<ChangePassword>,
) -> ApiResult<StatusCode> {
    if auth.user.has_password {
        let Some(current) = body.current_password else {
            return Err(ApiError::validation(
                "The field current_password is required: your account has a password.",
                "Type the password you sign in with now.",
            ));
        };
        check_current_password(&state, &auth, current).await?;
    } else {
        require_fresh_sign_in(&state, &auth, "setting one").await?;
    }
    check_policy(&body.new_password, &auth.user.username)?;
    let new_hash = hash(body.new_password).await?;
    state
        .store
        .set_password_hash(auth.user.id, &new_hash)
        .await?;
    if !body.keep_other_sessions {
        state
            .store
            .delete_user_sessions(auth.user.id, auth.session_id)
            .await?;
    }
    if !body.keep_api_keys {
        state.store.revoke_user_api_keys(auth.user.id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A session as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// The session's id.
    pub id: i64,
    /// Whether it is the session making this request.
    pub current: bool,
    /// When it started.
    pub created_at: String,
    /// When it was last used (to the minute).
    pub last_seen_at: String,
    /// When it ends at the latest.
    pub expires_at: String,
    /// The browser.
    pub user_agent: Option<String>,
    /// The address it signed in from.
    pub ip: Option<String>,
}

/// The sessions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    /// Newest use first.
    pub sessions: Vec<SessionView>,
}

/// The signed-in user's sessions.
#[utoipa::path(get, path = "/me/sessions", tag = "accounts",
    responses((status = 200, body = SessionList)))]
async fn list_sessions(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<SessionList>> {
    let sessions = state.store.list_sessions(auth.user.id).await?;
    Ok(Json(SessionList {
        sessions: sessions
            .into_iter()
            .map(|s| SessionView {
                current: Some(s.id) == auth.session_id,
                id: s.id,
                created_at: time(s.created_at),
                last_seen_at: time(s.last_seen_at),
                expires_at: time(s.expires_at),
                user_agent: s.user_agent,
                ip: s.ip,
            })
            .collect(),
    }))
}

/// End one of the signed-in user's sessions (sign a device out).
#[utoipa::path(delete, path = "/me/sessions/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "The session's id")),
    responses((status = 204, description = "Ended"), (status = 404, body = ErrorBody)))]
async fn end_session(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.delete_user_session(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// An API key as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyView {
    /// The key's id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its first characters.
    pub prefix: String,
    /// `read` or `read_write`.
    #[schema(value_type = String, example = "read_write")]
    pub scope: ApiKeyScope,
    /// When it was created.
    pub created_at: String,
    /// When it stops working, if ever.
    pub expires_at: Option<String>,
    /// When it was last used (to the minute).
    pub last_used_at: Option<String>,
}

impl From<tidings_store::ApiKey> for ApiKeyView {
    fn from(key: tidings_store::ApiKey) -> ApiKeyView {
        ApiKeyView {
            id: key.id,
            name: key.name,
            prefix: key.prefix,
            scope: key.scope,
            created_at: time(key.created_at),
            expires_at: key.expires_at.map(time),
            last_used_at: key.last_used_at.map(time),
        }
    }
}

/// The keys.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyList {
    /// Newest first; revoked keys are not listed.
    pub api_keys: Vec<ApiKeyView>,
}

/// A new key.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKey {
    /// A name to recognise it by.
    pub name: String,
    /// `read` or `read_write` (default `read`).
    #[schema(value_type = Option<String>, example = "read_write")]
    pub scope: Option<ApiKeyScope>,
    /// When it stops working (RFC 3339); never when absent.
    pub expires_at: Option<String>,
}

/// A new key with its secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedApiKey {
    /// The key as listed.
    pub api_key: ApiKeyView,
    /// The secret to send as `Authorization: Bearer …`. It is not stored and cannot be shown
    /// again.
    pub key: String,
}

/// The signed-in user's API keys. Needs a signed-in session (not an API key).
#[utoipa::path(get, path = "/api-keys", tag = "accounts",
    responses((status = 200, body = ApiKeyList), (status = 403, description = "Called with an API key: keys are managed from a signed-in session", body = ErrorBody)))]
async fn list_api_keys(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
) -> ApiResult<Json<ApiKeyList>> {
    let keys = state.store.list_api_keys(auth.user.id).await?;
    Ok(Json(ApiKeyList {
        api_keys: keys.into_iter().map(Into::into).collect(),
    }))
}

/// Create an API key (F23). The secret is in the answer only. Needs a signed-in session (not
/// an API key).
#[utoipa::path(post, path = "/api-keys", tag = "accounts", request_body = CreateApiKey,
    responses((status = 201, body = CreatedApiKey), (status = 400, body = ErrorBody),
        (status = 403, description = "Called with an API key: keys are managed from a signed-in session", body = ErrorBody)))]
async fn create_api_key(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<CreateApiKey>,
) -> ApiResult<(StatusCode, Json<CreatedApiKey>)> {
    let expires_at = match body.expires_at.as_deref() {
        None => None,
        Some(text) => {
            let at = chrono::DateTime::parse_from_rfc3339(text.trim())
                .map_err(|_| {
                    ApiError::validation(
                        format!("expires_at {text:?} is not an RFC 3339 time"),
                        "Use a time such as 2027-01-31T00:00:00Z, or leave it out.",
                    )
                })?
                .timestamp();
            if at <= unix_now() {
                return Err(ApiError::validation(
                    "expires_at is in the past",
                    "Give a time in the future, or leave it out.",
                ));
            }
            Some(at)
        }
    };
    let secret = format!("{API_KEY_PREFIX}{}", new_secret());
    let prefix: String = secret.chars().take(API_KEY_PREFIX.len() + 6).collect();
    let key = state
        .store
        .create_api_key(
            auth.user.id,
            &body.name,
            &prefix,
            &secret_hash(&secret),
            body.scope.unwrap_or(ApiKeyScope::Read),
            expires_at,
        )
        .await?;
    // Fever clients present md5(username:key), which cannot be derived from the stored hash.
    // The username is what the user types into the app: the name as stored, or (in another
    // case or width) its key.
    state
        .store
        .set_api_key_fever_hash(key.id, &fever_key_digest(&auth.user.username, &secret))
        .await?;
    if let Ok(folded) = tidings_store::username_key(&auth.user.username)
        && folded != auth.user.username
    {
        state
            .store
            .set_api_key_fever_hash_folded(key.id, &fever_key_digest(&folded, &secret))
            .await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(CreatedApiKey {
            api_key: key.into(),
            key: secret,
        }),
    ))
}

/// Revoke one of the signed-in user's API keys. Needs a signed-in session (not an API key).
#[utoipa::path(delete, path = "/api-keys/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "The key's id")),
    responses((status = 204, description = "Revoked"), (status = 404, body = ErrorBody),
        (status = 403, description = "Called with an API key: keys are managed from a signed-in session", body = ErrorBody)))]
async fn revoke_api_key(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.revoke_api_key(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
