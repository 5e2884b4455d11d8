//! Opening a session, the last step of every way of signing in (a password, a password and
//! then a second factor, a passkey, OpenID Connect), and the pending sign-in a second factor
//! finishes.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tidings_store::{
    ChallengeLimits, ChallengePurpose, ChallengeStored, NewAuthChallenge, User, unix_now,
};
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
    store_challenge(
        state,
        &NewAuthChallenge {
            token_hash: &secret_hash(&token),
            purpose: ChallengePurpose::SecondFactor,
            user_id: Some(user.id),
            challenge: None,
            expires_at: unix_now() + PENDING_SECONDS,
            client_key: &client.key(),
        },
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

/// Live sign-in challenges (pending second factors, passkey challenges) kept per client
/// address; beyond, the address's oldest are dropped.
pub const CHALLENGES_PER_CLIENT: i64 = 20;
/// Live sign-in challenges kept in all; beyond, new ones are refused (503) until old ones are
/// used or expire.
pub const CHALLENGES_IN_ALL: i64 = 10_000;
/// How long a client refused for [`CHALLENGES_IN_ALL`] is asked to wait.
const CHALLENGES_FULL_RETRY_SECONDS: u64 = 60;

/// Stores a sign-in challenge within [`CHALLENGES_PER_CLIENT`] and [`CHALLENGES_IN_ALL`]:
/// clients that have not authenticated create these rows, so they are bounded in number as
/// well as in rate.
pub(crate) async fn store_challenge(
    state: &AppState,
    challenge: &NewAuthChallenge<'_>,
) -> ApiResult<()> {
    let limits = ChallengeLimits {
        per_client: CHALLENGES_PER_CLIENT,
        total: CHALLENGES_IN_ALL,
    };
    match state.store.create_auth_challenge(challenge, limits).await? {
        ChallengeStored::Stored => Ok(()),
        ChallengeStored::Full => {
            tracing::warn!(
                limit = CHALLENGES_IN_ALL,
                "a sign-in was refused: as many sign-ins are in progress as the server keeps \
                 (many clients asking for sign-in challenges: a flood?)"
            );
            let mut error = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sign_ins_full",
                ErrorCategory::Limit,
                format!(
                    "The server already has {CHALLENGES_IN_ALL} sign-ins in progress, as many \
                     as it keeps at once."
                ),
                format!(
                    "Try again in {CHALLENGES_FULL_RETRY_SECONDS} seconds; unfinished sign-ins \
                     expire within 5 minutes."
                ),
            );
            error.retry_after = Some(CHALLENGES_FULL_RETRY_SECONDS);
            Err(error)
        }
    }
}
