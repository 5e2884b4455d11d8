//! Opening a session, the last step of every way of signing in (a password, a password and
//! then a second factor, a passkey, OpenID Connect), and the pending sign-in a second factor
//! finishes.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tidings_store::{ChallengePurpose, User, unix_now};
use utoipa::ToSchema;

use crate::base::auth::{new_secret, secret_hash, session_cookie};
use crate::base::client::ClientContext;
use crate::base::error::{ApiError, ApiResult, ErrorCategory};
use crate::base::extract::Json;
use crate::base::state::AppState;
use crate::base::users::UserEnvelope;
use crate::mfa::{PENDING_SECONDS, pending_cookie};

/// Starts a session for `user` and answers with the cookie.
pub(crate) async fn start_session(
    state: &AppState,
    user: User,
    client: &ClientContext,
    headers: &HeaderMap,
    status: StatusCode,
) -> ApiResult<Response> {
    let cookie = open_session(state, user.id, client, headers).await?;
    let user = state.store.user(user.id).await?;
    let mut response = (status, Json(UserEnvelope { user: user.into() })).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// Creates a session for the user, records the sign-in, and returns the `Set-Cookie` value
/// that carries it: for the password sign-in and the OpenID Connect callback alike.
pub(crate) async fn open_session(
    state: &AppState,
    user_id: i64,
    client: &ClientContext,
    headers: &HeaderMap,
) -> ApiResult<axum::http::HeaderValue> {
    let token = new_secret();
    let lifetime = state.config.session_lifetime.as_secs();
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    state
        .store
        .create_session(
            user_id,
            &secret_hash(&token),
            unix_now().saturating_add(lifetime as i64),
            user_agent,
            client.ip.map(|ip| ip.to_string()).as_deref(),
        )
        .await?;
    state.store.touch_login(user_id).await?;
    Ok(session_cookie(&token, lifetime, client.https))
}

/// The refusal of a password sign-in when an administrator turned passwords off.
pub(crate) fn password_sign_in_off() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "password_sign_in_disabled",
        ErrorCategory::Auth,
        "Signing in with a password is turned off on this server.",
        "Use the single sign-on button. Scripts and sync apps keep using API keys.",
    )
}

/// The answer to a right password when a second factor is on.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecondFactorNeeded {
    /// What the sign-in waits for.
    pub second_factor: SecondFactorMethods,
}

/// The ways the pending sign-in can be finished.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecondFactorMethods {
    /// Any of `totp`, `recovery_code`, `passkey`.
    pub methods: Vec<&'static str>,
    /// Seconds left to send it.
    pub expires_in: i64,
}

/// Called by the password sign-in once the password is right: when the user has a second
/// factor, starts the pending sign-in (the cookie [`PENDING_COOKIE`]) and answers 202 instead
/// of a session.
pub(crate) async fn await_second_factor(
    state: &AppState,
    user: &User,
    client: &ClientContext,
) -> ApiResult<Option<Response>> {
    let factors = state.store.second_factors(user.id).await?;
    if !factors.required() {
        return Ok(None);
    }
    let token = new_secret();
    state
        .store
        .create_auth_challenge(
            &secret_hash(&token),
            ChallengePurpose::SecondFactor,
            Some(user.id),
            None,
            unix_now() + PENDING_SECONDS,
        )
        .await?;
    let mut methods = Vec::new();
    if factors.totp {
        methods.push("totp");
    }
    if factors.passkeys > 0 {
        methods.push("passkey");
    }
    if factors.recovery_codes_left > 0 {
        methods.push("recovery_code");
    }
    let mut response = (
        StatusCode::ACCEPTED,
        Json(SecondFactorNeeded {
            second_factor: SecondFactorMethods {
                methods,
                expires_in: PENDING_SECONDS,
            },
        }),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, pending_cookie(&token, client.https));
    Ok(Some(response))
}
