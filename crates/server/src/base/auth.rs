//! Who is calling: a session cookie (the web UI) or an API key (`Authorization: Bearer
//! tdg_…`, scripts and apps). The [`Auth`] extractor also applies the per-user rate limit
//! and refuses writes with read-only keys.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, HeaderValue, Method, header};
use sha2::{Digest, Sha256};
use tidings_store::{ApiKeyScope, Authenticated, User};

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

/// What a request's credentials came to, decided once per request: by
/// [`crate::middleware::protect`] for the REST API (so that a request counts against the
/// address's limit unless it authenticated, whatever endpoint it asks for), or else by the
/// first extractor that needs them.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// Live credentials, within their user's rate limit.
    Admitted(Auth),
    /// No credentials, or none that are live: counted against the client's address.
    Refused,
    /// A limit (the address's or the user's) was reached.
    Limited(crate::ratelimit::RateDecision),
    /// The store could not be asked (the error, already logged): an endpoint that needs the
    /// user answers it without waiting for the store a second time.
    Failed(ApiError),
}

/// The user of the request's credentials: the API key of `Authorization: Bearer tdg_…`, else
/// the session cookie; `None` when there are none or they are not live. Any `Authorization`
/// header that is not one of our keys counts as wrong credentials, not as a missing one.
async fn lookup(state: &AppState, headers: &HeaderMap) -> Result<Option<Authenticated>, ApiError> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| t.starts_with(API_KEY_PREFIX));
        return match token {
            Some(token) => Ok(state
                .store
                .authenticate_api_key(&secret_hash(token))
                .await?),
            None => Ok(None),
        };
    }
    if let Some(token) = cookie(headers, SESSION_COOKIE) {
        let idle = state.config.session_idle.as_secs() as i64;
        return Ok(state
            .store
            .authenticate_session(&secret_hash(token), idle)
            .await?);
    }
    Ok(None)
}

/// Which of a signed-in user's limits a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserLimit {
    /// The API's requests ([`RateLimits::per_user`](crate::ratelimit::RateLimits)).
    Requests,
    /// Feed icons ([`RateLimits::icons_per_user`](crate::ratelimit::RateLimits)), which the
    /// web UI asks for one per subscription in view.
    Icons,
}

impl UserLimit {
    /// The limit of a request for `path` (the whole path, `/api/v1/…`): a read of a
    /// subscription's icon counts as an icon, everything else as a request.
    pub fn of(method: &Method, path: &str) -> UserLimit {
        let is_read = method == Method::GET || method == Method::HEAD;
        let subscription = path
            .strip_prefix("/api/v1/subscriptions/")
            .and_then(|rest| rest.strip_suffix("/favicon"));
        match subscription {
            Some(id) if is_read && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => {
                UserLimit::Icons
            }
            _ => UserLimit::Requests,
        }
    }
}

/// Checks a request's credentials and counts the request against one limit: the user's
/// (`limit`) when they are live, else the client's address (as anonymous requests are). The
/// decision is left in the request's [`RateSlot`] for the response's `X-RateLimit-*`
/// headers. Fails only when the store cannot be asked.
pub async fn check_credentials(
    state: &AppState,
    headers: &HeaderMap,
    extensions: &Extensions,
    limit: UserLimit,
) -> Result<Credentials, ApiError> {
    let found = lookup(state, headers).await?;
    let slot = extensions.get::<RateSlot>();
    let Some(found) = found else {
        let Some(client) = extensions.get::<ClientContext>() else {
            return Ok(Credentials::Refused);
        };
        let decision = state.limits.anonymous.check(&client.key()).await;
        if let Some(slot) = slot {
            slot.set(decision);
        }
        return Ok(if decision.allowed {
            Credentials::Refused
        } else {
            Credentials::Limited(decision)
        });
    };
    crate::base::client::note_user(extensions, found.user.id);
    let limiter = match limit {
        UserLimit::Requests => &state.limits.per_user,
        UserLimit::Icons => &state.limits.icons_per_user,
    };
    let decision = limiter.check(&format!("user:{}", found.user.id)).await;
    if let Some(slot) = slot {
        slot.set(decision);
    }
    if !decision.allowed {
        return Ok(Credentials::Limited(decision));
    }
    Ok(Credentials::Admitted(Auth {
        user: found.user,
        session_id: found.session_id,
        api_key: found.api_key,
    }))
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Auth, ApiError> {
        if let Some(auth) = parts.extensions.get::<Auth>() {
            return Ok(auth.clone());
        }
        let credentials = match parts.extensions.get::<Credentials>() {
            Some(checked) => checked.clone(),
            // Only where the middleware did not count the request (a router without it).
            None => {
                check_credentials(
                    state,
                    &parts.headers,
                    &parts.extensions,
                    UserLimit::Requests,
                )
                .await?
            }
        };
        let auth = match credentials {
            Credentials::Admitted(auth) => auth,
            Credentials::Refused => return Err(ApiError::unauthenticated()),
            Credentials::Limited(decision) => return Err(ApiError::limited(decision)),
            Credentials::Failed(error) => return Err(error),
        };
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
                "Only an administrator can do this (manage users, resume every feed, suspend a feed or set its proxy, read usage counts).",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_of_a_subscriptions_icon_count_as_icons() {
        let icon = "/api/v1/subscriptions/42/favicon";
        assert_eq!(UserLimit::of(&Method::GET, icon), UserLimit::Icons);
        assert_eq!(UserLimit::of(&Method::HEAD, icon), UserLimit::Icons);
        for (method, path) in [
            (Method::POST, icon),
            (Method::DELETE, icon),
            (Method::GET, "/api/v1/subscriptions/42"),
            (Method::GET, "/api/v1/subscriptions//favicon"),
            (Method::GET, "/api/v1/subscriptions/x/favicon"),
            (Method::GET, "/api/v1/subscriptions/1/2/favicon"),
            (Method::GET, "/api/v1/items/42/favicon"),
            (Method::GET, "/subscriptions/42/favicon"),
        ] {
            assert_eq!(
                UserLimit::of(&method, path),
                UserLimit::Requests,
                "{method} {path}"
            );
        }
    }
}
