//! Who is calling: a session cookie (the web UI) or an API key (`Authorization: Bearer
//! tdg_…`, scripts and apps). The [`Auth`] extractor also applies the per-user rate limit
//! and refuses writes with read-only keys.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use sha2::{Digest, Sha256};
use tidings_store::{ApiKeyScope, User};

use crate::base::client::{ClientContext, RateSlot, cookie};
use crate::base::error::ApiError;
use crate::base::state::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tidings_session";
/// The prefix of every API key, so that leaked keys are recognisable (e.g. by secret scanners).
pub const API_KEY_PREFIX: &str = "tdg_";

/// The SHA-256 of a secret (session token or API key), as stored.
pub fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new random secret: 32 bytes as 64 hex digits.
pub fn new_secret() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The Fever API key of a username and an API key: md5(username:key), lowercase hex (the
/// protocol's digest, made when a key is created and looked up by the Fever adapter).
pub fn fever_key_digest(username: &str, key: &str) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(format!("{username}:{key}").as_bytes()))
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Auth {
    /// The user.
    pub user: User,
    /// The session, when signed in with the cookie.
    pub session_id: Option<i64>,
    /// The key and its scope, when called with an API key.
    pub api_key: Option<(i64, ApiKeyScope)>,
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Auth, ApiError> {
        if let Some(auth) = parts.extensions.get::<Auth>() {
            return Ok(auth.clone());
        }
        let found = if let Some(value) = parts.headers.get(header::AUTHORIZATION) {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim)
                .filter(|t| t.starts_with(API_KEY_PREFIX));
            match token {
                Some(token) => {
                    state
                        .store
                        .authenticate_api_key(&secret_hash(token))
                        .await?
                }
                None => None,
            }
        } else if let Some(token) = cookie(&parts.headers, SESSION_COOKIE) {
            let idle = state.config.session_idle.as_secs() as i64;
            state
                .store
                .authenticate_session(&secret_hash(token), idle)
                .await?
        } else {
            None
        };
        let slot = parts.extensions.get::<RateSlot>().cloned();
        let Some(found) = found else {
            // Failed credentials count against the address, like anonymous requests.
            if let Some(client) = parts.extensions.get::<ClientContext>() {
                let decision = state.limits.anonymous.check(&client.key()).await;
                if let Some(slot) = &slot {
                    slot.set(decision);
                }
                if !decision.allowed {
                    return Err(ApiError::limited(decision));
                }
            }
            return Err(ApiError::unauthenticated());
        };
        crate::base::client::note_user(&parts.extensions, found.user.id);
        let auth = Auth {
            user: found.user,
            session_id: found.session_id,
            api_key: found.api_key,
        };
        let decision = state
            .limits
            .per_user
            .check(&format!("user:{}", auth.user.id))
            .await;
        if let Some(slot) = &slot {
            slot.set(decision);
        }
        if !decision.allowed {
            return Err(ApiError::limited(decision));
        }
        if matches!(auth.api_key, Some((_, ApiKeyScope::Read))) && !parts.method.is_safe() {
            return Err(ApiError::forbidden(
                "This API key is read-only and cannot change anything.",
                "Create a read-write key for this script.",
            ));
        }
        parts.extensions.insert(auth.clone());
        Ok(auth)
    }
}

/// A caller signed in with a session (the cookie), not an API key: what can take over an
/// account (its keys, its password, its deletion) needs a person at a browser (F23).
#[derive(Debug, Clone)]
pub struct SessionAuth(pub Auth);

impl FromRequestParts<AppState> for SessionAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<SessionAuth, ApiError> {
        let auth = Auth::from_request_parts(parts, state).await?;
        if auth.session_id.is_none() {
            return Err(ApiError::forbidden(
                "An API key cannot manage API keys, change the password or delete the account.",
                "Sign in with your user name and password (the web UI) to do this.",
            ));
        }
        Ok(SessionAuth(auth))
    }
}

/// An authenticated administrator (F24).
#[derive(Debug, Clone)]
pub struct AdminAuth(pub Auth);

impl FromRequestParts<AppState> for AdminAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<AdminAuth, ApiError> {
        let auth = Auth::from_request_parts(parts, state).await?;
        if !auth.user.is_admin {
            return Err(ApiError::forbidden(
                "Only an administrator can do this (manage users, resume every feed, read usage counts).",
                "Sign in as an administrator, or ask one.",
            ));
        }
        Ok(AdminAuth(auth))
    }
}

/// The `Set-Cookie` value for a new session.
pub fn session_cookie(token: &str, max_age_seconds: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_seconds}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("tidings_session=; Path=/; Max-Age=0"))
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn expired_session_cookie(secure: bool) -> HeaderValue {
    if secure {
        HeaderValue::from_static(
            "tidings_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure",
        )
    } else {
        HeaderValue::from_static("tidings_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0")
    }
}
