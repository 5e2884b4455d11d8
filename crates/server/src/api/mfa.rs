//! Second factors over the API (issue 19): signing in with a one-time code, a recovery code
//! or a passkey after the password (or with a passkey alone), and the account's own settings
//! for them. The algorithms are in [`crate::mfa`]; the stored state in the store's
//! `second_factors` module.
//!
//! API keys (and so the sync APIs for apps: Fever, Google Reader, Miniflux) never meet a
//! second factor: a key is created by a signed-in session, which already passed it.

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tidings_store::{AuthChallenge, ChallengePurpose, NewAuthChallenge, Passkey, unix_now};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::{SessionAuth, secret_hash};
use crate::base::client::{ClientContext, cookie};
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::limits::within_limit;
use crate::base::sessions::{start_session, store_challenge};
use crate::base::state::AppState;
use crate::base::time::time;
use crate::base::users::check_current_password;
use crate::mfa::webauthn::{
    self, AssertionCredential, EDDSA, ES256, RS256, RegistrationCredential, RelyingParty,
    WebauthnError,
};
use crate::mfa::{
    MAX_PENDING_ATTEMPTS, PASSKEY_CHALLENGE_SECONDS, PENDING_COOKIE, expired_pending_cookie,
    new_recovery_codes, recovery_code_hash, totp,
};

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(second_factor_sign_in))
        .routes(routes!(passkey_sign_in_options))
        .routes(routes!(passkey_sign_in))
        .routes(routes!(second_factors))
        .routes(routes!(begin_totp, disable_totp))
        .routes(routes!(confirm_totp))
        .routes(routes!(regenerate_recovery_codes))
        .routes(routes!(passkey_registration_options))
        .routes(routes!(register_passkey))
        .routes(routes!(rename_passkey, delete_passkey))
}

/// The most characters of a passkey's name: enough for "Work laptop's fingerprint reader",
/// short enough to fit on one line of the account page.
pub const MAX_PASSKEY_NAME_CHARS: usize = 64;

/// A passkey's name as it is stored: trimmed, 1 to [`MAX_PASSKEY_NAME_CHARS`] characters.
fn passkey_name(name: &str) -> ApiResult<&str> {
    let name = name.trim();
    let length = name.chars().count();
    if length == 0 || length > MAX_PASSKEY_NAME_CHARS {
        return Err(ApiError::validation(
            format!(
                "The field name must have 1 to {MAX_PASSKEY_NAME_CHARS} characters (spaces at \
                 either end do not count); it has {length}."
            ),
            "Name the passkey after its device, e.g. \"Phone\".",
        ));
    }
    Ok(name)
}

fn sign_in_expired() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "second_factor_expired",
        ErrorCategory::Auth,
        "This sign-in has ended: it waited more than 5 minutes for the second factor, or too \
         many wrong codes were typed.",
        "Sign in with your user name and password again.",
    )
}

fn wrong_code(status: StatusCode) -> ApiError {
    ApiError::new(
        status,
        "invalid_code",
        ErrorCategory::Auth,
        "The code is wrong.",
        "Type the 6-digit code your authenticator app shows now, or one of your recovery codes.",
    )
}

fn used_code(status: StatusCode) -> ApiError {
    ApiError::new(
        status,
        "code_used",
        ErrorCategory::Auth,
        "This code was used already; a code works once.",
        "Wait for the app to show the next code (every 30 seconds) and type that one.",
    )
}

/// The pending sign-in of the request's cookie, with its token's hash.
async fn pending_sign_in(
    state: &AppState,
    headers: &HeaderMap,
) -> ApiResult<Option<(String, i64, AuthChallenge)>> {
    let Some(token) = cookie(headers, PENDING_COOKIE) else {
        return Ok(None);
    };
    let token_hash = secret_hash(token);
    let found = state
        .store
        .auth_challenge(&token_hash, ChallengePurpose::SecondFactor)
        .await?;
    Ok(found.and_then(|c| c.user_id.map(|user| (token_hash, user, c))))
}

/// Checks a typed TOTP code of a user with a confirmed secret and spends its step.
/// `Ok(Err(…))` is a refusal to show the user, `Err` a failure of the server.
async fn check_totp(
    state: &AppState,
    user_id: i64,
    typed: &str,
    status: StatusCode,
) -> ApiResult<Result<(), ApiError>> {
    let secret = state
        .store
        .totp_secret(user_id)
        .await?
        .filter(|s| s.confirmed_at.is_some());
    let Some(secret) = secret else {
        return Ok(Err(wrong_code(status)));
    };
    let Some(step) = totp::verify(&secret.secret, typed, unix_now()) else {
        return Ok(Err(wrong_code(status)));
    };
    if !state.store.use_totp_step(user_id, step).await? {
        return Ok(Err(used_code(status)));
    }
    Ok(Ok(()))
}

/// The second factor of a pending sign-in: a one-time code or a recovery code.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecondFactorAnswer {
    /// The 6-digit code of the authenticator app.
    #[serde(default)]
    pub code: Option<String>,
    /// One of the recovery codes (each works once).
    #[serde(default)]
    pub recovery_code: Option<String>,
}

/// Finish a password sign-in with a one-time code or a recovery code. Needs the pending
/// cookie set by `POST /session` (202). A code works once; after 5 wrong answers the pending
/// sign-in ends, and attempts are limited to 10 a minute per account.
#[utoipa::path(post, path = "/session/second-factor", tag = "accounts",
    request_body = SecondFactorAnswer, security(()),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", body = crate::base::users::UserEnvelope),
        (status = 400, description = "Neither or both of code and recovery_code", body = ErrorBody),
        (status = 401, description = "Wrong or used code, or no pending sign-in", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
    ))]
async fn second_factor_sign_in(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    headers: HeaderMap,
    Json(body): Json<SecondFactorAnswer>,
) -> ApiResult<Response> {
    let Some((token_hash, user_id, _)) = pending_sign_in(&state, &headers).await? else {
        return Err(sign_in_expired());
    };
    if body.code.is_some() == body.recovery_code.is_some() {
        return Err(ApiError::validation(
            "Send either code or recovery_code.",
            "Put the 6-digit code in code, or a recovery code in recovery_code.",
        ));
    }
    within_limit(
        &state.limits.login_per_account,
        &format!("second-factor:{user_id}"),
    )
    .await?;
    let outcome = if let Some(code) = body.code {
        check_totp(&state, user_id, &code, StatusCode::UNAUTHORIZED).await?
    } else {
        let recovery = body.recovery_code.unwrap_or_default();
        if state
            .store
            .use_recovery_code(user_id, &recovery_code_hash(&recovery))
            .await?
        {
            Ok(())
        } else {
            Err(wrong_code(StatusCode::UNAUTHORIZED))
        }
    };
    if let Err(refusal) = outcome {
        let attempts = state
            .store
            .count_auth_challenge_attempt(&token_hash)
            .await?;
        if attempts >= MAX_PENDING_ATTEMPTS {
            state.store.delete_auth_challenge(&token_hash).await?;
            return Err(sign_in_expired());
        }
        return Err(refusal);
    }
    state.store.delete_auth_challenge(&token_hash).await?;
    finish_sign_in(&state, user_id, &client, &headers).await
}

/// Starts the session of a user who passed every factor, and drops the pending cookie.
async fn finish_sign_in(
    state: &AppState,
    user_id: i64,
    client: &ClientContext,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    let user = state.store.user(user_id).await?;
    if user.is_disabled {
        return Err(ApiError::forbidden(
            "This account is disabled.",
            "Ask an administrator to enable it.",
        ));
    }
    let mut response = start_session(state, user, client, headers, StatusCode::OK).await?;
    response
        .headers_mut()
        .append(header::SET_COOKIE, expired_pending_cookie(client.https));
    Ok(response)
}

/// Options for `navigator.credentials.get()` or `.create()`: the `publicKey` member, with
/// binary fields as base64url (the UI decodes them).
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyOptions {
    /// `PublicKeyCredentialRequestOptions` / `…CreationOptions` in JSON form.
    #[schema(value_type = Object)]
    pub public_key: Value,
}

fn relying_party(state: &AppState) -> RelyingParty {
    RelyingParty::for_base_url(&state.config.base_url)
}

/// Options to sign in with a passkey. With the pending cookie of a password sign-in, the
/// passkey is the second factor and must be one of that user's; without it, any passkey
/// registered here signs its user in (a discoverable credential, no password).
#[utoipa::path(post, path = "/session/passkey/options", tag = "accounts", security(()),
    responses((status = 200, body = PasskeyOptions)))]
async fn passkey_sign_in_options(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    headers: HeaderMap,
) -> ApiResult<Json<PasskeyOptions>> {
    let pending = pending_sign_in(&state, &headers).await?;
    let user_id = pending.map(|(_, user, _)| user);
    let allow: Vec<Value> = match user_id {
        Some(user) => state
            .store
            .passkeys(user)
            .await?
            .iter()
            .map(|p| json!({"type": "public-key", "id": p.credential_id}))
            .collect(),
        None => Vec::new(),
    };
    let challenge = webauthn::new_challenge();
    store_challenge(
        &state,
        &NewAuthChallenge {
            token_hash: &secret_hash(&challenge),
            purpose: ChallengePurpose::PasskeySignIn,
            user_id,
            challenge: Some(&challenge),
            expires_at: unix_now() + PASSKEY_CHALLENGE_SECONDS,
            client_key: &client.key(),
        },
    )
    .await?;
    Ok(Json(PasskeyOptions {
        public_key: json!({
            "challenge": challenge,
            "rpId": relying_party(&state).id,
            "timeout": PASSKEY_CHALLENGE_SECONDS * 1000,
            // Password-less sign-in is two factors in one only when the authenticator verified
            // the person (PIN, biometrics); after a password, presence is enough.
            "userVerification": if user_id.is_some() { "preferred" } else { "required" },
            "allowCredentials": allow,
        }),
    }))
}

/// A passkey's answer to a sign-in challenge.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasskeySignIn {
    /// The `PublicKeyCredential` from `navigator.credentials.get()`, binary fields as
    /// base64url.
    pub credential: AssertionCredential,
}

fn passkey_refused(message: impl Into<String>) -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "passkey_refused",
        ErrorCategory::Auth,
        message,
        "Try again with a passkey registered for this account, or sign in with your password.",
    )
}

fn webauthn_refused(error: WebauthnError) -> ApiError {
    passkey_refused(crate::base::error::capitalize(&format!("{error}.")))
}

/// Sign in with a passkey, after `POST /session/passkey/options`: password-less, or as the
/// second factor of a pending password sign-in. Limited like password attempts (5 a minute per
/// address).
#[utoipa::path(post, path = "/session/passkey", tag = "accounts", request_body = PasskeySignIn,
    security(()),
    responses(
        (status = 200, description = "Signed in; the session cookie is set", body = crate::base::users::UserEnvelope),
        (status = 401, description = "Unknown passkey, wrong signature, expired challenge", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
    ))]
async fn passkey_sign_in(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    headers: HeaderMap,
    Json(body): Json<PasskeySignIn>,
) -> ApiResult<Response> {
    within_limit(&state.limits.login_per_ip, &client.key()).await?;
    let credential = body.credential;
    let challenge_text =
        webauthn::challenge_of(&credential.response.client_data_json).map_err(webauthn_refused)?;
    let Some(challenge) = state
        .store
        .take_auth_challenge(
            &secret_hash(&challenge_text),
            ChallengePurpose::PasskeySignIn,
        )
        .await?
    else {
        return Err(passkey_refused(
            "This passkey request has expired or was used already.",
        ));
    };
    let credential_id = webauthn::b64(&webauthn::unb64(&credential.id).map_err(webauthn_refused)?);
    let Some(passkey) = state.store.passkey_by_credential(&credential_id).await? else {
        return Err(passkey_refused(
            "This passkey is not registered here (it may have been removed).",
        ));
    };
    if challenge
        .user_id
        .is_some_and(|user| user != passkey.user_id)
    {
        return Err(passkey_refused(
            "This passkey belongs to another account than the password typed.",
        ));
    }
    if let Some(handle) = &credential.response.user_handle {
        let handle = webauthn::unb64(handle).map_err(webauthn_refused)?;
        if webauthn::user_from_handle(&handle) != Some(passkey.user_id) {
            return Err(passkey_refused("The passkey names another account."));
        }
    }
    let assertion = webauthn::verify_assertion(
        &relying_party(&state),
        &challenge_text,
        &credential,
        &passkey.public_key,
        challenge.user_id.is_none(),
    )
    .map_err(webauthn_refused)?;
    if !state
        .store
        .use_passkey(passkey.id, i64::from(assertion.sign_count))
        .await?
    {
        return Err(passkey_refused(
            "The passkey's counter went backwards, which is how a copied authenticator shows \
             itself; it was refused.",
        ));
    }
    if challenge.user_id.is_some()
        && let Some((token_hash, _, _)) = pending_sign_in(&state, &headers).await?
    {
        state.store.delete_auth_challenge(&token_hash).await?;
    }
    finish_sign_in(&state, passkey.user_id, &client, &headers).await
}

/// A passkey as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyView {
    /// Its id (for removing it).
    pub id: i64,
    /// The name given when registering it.
    pub name: String,
    /// When it was registered.
    pub created_at: String,
    /// When it last signed in.
    pub last_used_at: Option<String>,
}

impl From<Passkey> for PasskeyView {
    fn from(p: Passkey) -> PasskeyView {
        PasskeyView {
            id: p.id,
            name: p.name,
            created_at: time(p.created_at),
            last_used_at: p.last_used_at.map(time),
        }
    }
}

/// The signed-in user's second factors.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecondFactorsView {
    /// Whether one-time codes are on.
    pub totp: bool,
    /// Whether an enrolment waits for its first code.
    pub totp_pending: bool,
    /// Unused recovery codes.
    pub recovery_codes_left: i64,
    /// Registered passkeys.
    pub passkeys: Vec<PasskeyView>,
}

/// The signed-in user's second factors: one-time codes, recovery codes left, passkeys.
#[utoipa::path(get, path = "/me/second-factors", tag = "accounts",
    responses(
        (status = 200, body = SecondFactorsView),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Called with an API key", body = ErrorBody),
    ))]
async fn second_factors(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
) -> ApiResult<Json<SecondFactorsView>> {
    let factors = state.store.second_factors(auth.user.id).await?;
    let secret = state.store.totp_secret(auth.user.id).await?;
    let passkeys = state.store.passkeys(auth.user.id).await?;
    Ok(Json(SecondFactorsView {
        totp: factors.totp,
        totp_pending: secret.is_some_and(|s| s.confirmed_at.is_none()),
        recovery_codes_left: factors.recovery_codes_left,
        passkeys: passkeys.into_iter().map(PasskeyView::from).collect(),
    }))
}

/// A TOTP enrolment: what the authenticator app needs.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpEnrolment {
    /// The secret in base32, for typing into the app.
    pub secret: String,
    /// The `otpauth://` URI the QR code holds.
    pub otpauth_uri: String,
    /// The QR code of the URI as an SVG image.
    pub qr_svg: String,
}

/// Start turning on one-time codes: a new secret, shown once as base32, `otpauth://` URI and
/// QR code. Codes are not asked for until `POST /me/totp/confirm` receives a valid one.
#[utoipa::path(post, path = "/me/totp", tag = "accounts",
    responses(
        (status = 201, body = TotpEnrolment),
        (status = 403, description = "Called with an API key", body = ErrorBody),
        (status = 409, description = "One-time codes are on already", body = ErrorBody),
    ))]
async fn begin_totp(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
) -> ApiResult<Response> {
    let secret = totp::new_secret();
    state
        .store
        .begin_totp(auth.user.id, &secret)
        .await
        .map_err(|e| match e {
            tidings_store::StoreError::Conflict(_) => ApiError::conflict(
                "One-time codes are on already.",
                "Turn them off first to move them to another app.",
            ),
            other => other.into(),
        })?;
    let host = state.config.base_url.host_str().unwrap_or("localhost");
    let uri = totp::otpauth_uri(&format!("tidings ({host})"), &auth.user.username, &secret);
    let qr = qrcode::QrCode::new(uri.as_bytes()).map_err(ApiError::internal)?;
    let svg = qr
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .build();
    Ok((
        StatusCode::CREATED,
        Json(TotpEnrolment {
            secret: totp::base32(&secret),
            otpauth_uri: uri,
            qr_svg: svg,
        }),
    )
        .into_response())
}

/// A code from the authenticator app.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpCode {
    /// The 6-digit code shown now.
    pub code: String,
}

/// New recovery codes, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodes {
    /// Present when new codes were made: each signs in once in place of a second factor.
    pub recovery_codes: Option<Vec<String>>,
}

/// Makes recovery codes when the user has none left unused, and answers them.
async fn ensure_recovery_codes(state: &AppState, user_id: i64) -> ApiResult<Option<Vec<String>>> {
    if state
        .store
        .second_factors(user_id)
        .await?
        .recovery_codes_left
        > 0
    {
        return Ok(None);
    }
    Ok(Some(replace_recovery_codes(state, user_id).await?))
}

async fn replace_recovery_codes(state: &AppState, user_id: i64) -> ApiResult<Vec<String>> {
    let codes = new_recovery_codes();
    let hashes: Vec<String> = codes.iter().map(|c| recovery_code_hash(c)).collect();
    state.store.replace_recovery_codes(user_id, &hashes).await?;
    Ok(codes)
}

/// Turn one-time codes on with a first valid code from the app. Answers recovery codes
/// (shown once) when the account had none.
#[utoipa::path(post, path = "/me/totp/confirm", tag = "accounts", request_body = TotpCode,
    responses(
        (status = 200, body = RecoveryCodes),
        (status = 403, description = "Wrong code, or called with an API key", body = ErrorBody),
        (status = 409, description = "No enrolment waits for a code", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
    ))]
async fn confirm_totp(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<TotpCode>,
) -> ApiResult<Json<RecoveryCodes>> {
    let user_id = auth.user.id;
    within_limit(
        &state.limits.login_per_account,
        &format!("second-factor:{user_id}"),
    )
    .await?;
    let pending = state
        .store
        .totp_secret(user_id)
        .await?
        .filter(|s| s.confirmed_at.is_none());
    let Some(pending) = pending else {
        return Err(ApiError::conflict(
            "No one-time code setup is waiting for a code.",
            "Start the setup again (POST /me/totp).",
        ));
    };
    let Some(step) = totp::verify(&pending.secret, &body.code, unix_now()) else {
        return Err(wrong_code(StatusCode::FORBIDDEN));
    };
    if !state.store.confirm_totp(user_id, step).await? {
        return Err(ApiError::conflict(
            "One-time codes were turned on by another request.",
            "Reload the account page.",
        ));
    }
    Ok(Json(RecoveryCodes {
        recovery_codes: ensure_recovery_codes(&state, user_id).await?,
    }))
}

/// Proof that the person at the keyboard is the account's owner: a current one-time code or
/// the password.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Reauthentication {
    /// A code from the authenticator app.
    #[serde(default)]
    pub code: Option<String>,
    /// The account's password.
    #[serde(default)]
    pub password: Option<String>,
}

async fn reauthenticate(
    state: &AppState,
    auth: &crate::base::auth::Auth,
    proof: Reauthentication,
) -> ApiResult<()> {
    match (proof.code, proof.password) {
        (Some(code), _) => {
            within_limit(
                &state.limits.login_per_account,
                &format!("second-factor:{}", auth.user.id),
            )
            .await?;
            check_totp(state, auth.user.id, &code, StatusCode::FORBIDDEN).await?
        }
        (None, Some(password)) => check_current_password(state, auth, password).await,
        (None, None) => Err(ApiError::validation(
            "Send a current one-time code (code) or the password (password).",
            "Type the code your app shows, or your password.",
        )),
    }
}

/// Drops the recovery codes once no second factor is left: they would stand for nothing.
async fn forget_recovery_codes_if_unused(state: &AppState, user_id: i64) -> ApiResult<()> {
    if !state.store.second_factors(user_id).await?.required() {
        state.store.delete_recovery_codes(user_id).await?;
    }
    Ok(())
}

/// Turn one-time codes off. Needs a current code or the password.
#[utoipa::path(delete, path = "/me/totp", tag = "accounts", request_body = Reauthentication,
    responses(
        (status = 204, description = "Off"),
        (status = 403, description = "Wrong code or password, or called with an API key", body = ErrorBody),
        (status = 404, description = "One-time codes were not on", body = ErrorBody),
    ))]
async fn disable_totp(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<Reauthentication>,
) -> ApiResult<StatusCode> {
    let secret = state.store.totp_secret(auth.user.id).await?;
    match secret {
        None => return Err(ApiError::not_found("One-time code setup")),
        // An enrolment never confirmed has no code to ask for yet.
        Some(s) if s.confirmed_at.is_none() => {}
        Some(_) => reauthenticate(&state, &auth, body).await?,
    }
    state.store.delete_totp(auth.user.id).await?;
    forget_recovery_codes_if_unused(&state, auth.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replace every recovery code with ten new ones (shown this once). Needs a current code or
/// the password, and a second factor that is on.
#[utoipa::path(post, path = "/me/recovery-codes", tag = "accounts", request_body = Reauthentication,
    responses(
        (status = 200, body = RecoveryCodes),
        (status = 403, description = "Wrong code or password, or called with an API key", body = ErrorBody),
        (status = 409, description = "No second factor is on", body = ErrorBody),
    ))]
async fn regenerate_recovery_codes(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<Reauthentication>,
) -> ApiResult<Json<RecoveryCodes>> {
    if !state.store.second_factors(auth.user.id).await?.required() {
        return Err(ApiError::conflict(
            "Recovery codes stand in for a second factor, and none is on.",
            "Turn on one-time codes or add a passkey first.",
        ));
    }
    reauthenticate(&state, &auth, body).await?;
    Ok(Json(RecoveryCodes {
        recovery_codes: Some(replace_recovery_codes(&state, auth.user.id).await?),
    }))
}

/// Options to register a new passkey for the signed-in user (`navigator.credentials.create()`):
/// a discoverable credential with user verification, so it also signs in without a password.
#[utoipa::path(post, path = "/me/passkeys/options", tag = "accounts",
    responses((status = 200, body = PasskeyOptions), (status = 403, body = ErrorBody)))]
async fn passkey_registration_options(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
) -> ApiResult<Json<PasskeyOptions>> {
    let challenge = webauthn::new_challenge();
    // Counted per user: the user is known, and their own registrations push out only theirs.
    store_challenge(
        &state,
        &NewAuthChallenge {
            token_hash: &secret_hash(&challenge),
            purpose: ChallengePurpose::PasskeyRegister,
            user_id: Some(auth.user.id),
            challenge: Some(&challenge),
            expires_at: unix_now() + PASSKEY_CHALLENGE_SECONDS,
            client_key: &format!("user:{}", auth.user.id),
        },
    )
    .await?;
    let exclude: Vec<Value> = state
        .store
        .passkeys(auth.user.id)
        .await?
        .iter()
        .map(|p| json!({"type": "public-key", "id": p.credential_id}))
        .collect();
    let rp = relying_party(&state);
    let algorithms: Vec<Value> = [ES256, EDDSA, RS256]
        .iter()
        .map(|alg| json!({"type": "public-key", "alg": alg}))
        .collect();
    Ok(Json(PasskeyOptions {
        public_key: json!({
            "challenge": challenge,
            "rp": {"id": rp.id, "name": "tidings"},
            "user": {
                "id": webauthn::b64(&webauthn::user_handle(auth.user.id)),
                "name": auth.user.username,
                "displayName": auth.user.username,
            },
            "pubKeyCredParams": algorithms,
            "timeout": PASSKEY_CHALLENGE_SECONDS * 1000,
            "attestation": "none",
            "authenticatorSelection": {
                "residentKey": "required",
                "requireResidentKey": true,
                "userVerification": "required",
            },
            "excludeCredentials": exclude,
        }),
    }))
}

/// A new passkey.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPasskeyRequest {
    /// A name to recognise it by ("Phone", "YubiKey"); 1–64 characters, trimmed.
    pub name: String,
    /// The `PublicKeyCredential` from `navigator.credentials.create()`, binary fields as
    /// base64url.
    pub credential: RegistrationCredential,
}

/// A registered passkey, and recovery codes when they were made with it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyRegistered {
    /// The passkey.
    pub passkey: PasskeyView,
    /// New recovery codes (shown once), when the account had none.
    pub recovery_codes: Option<Vec<String>>,
}

/// Register a passkey, after `POST /me/passkeys/options`. From then on a password sign-in
/// asks for a second factor, and the passkey signs in alone too.
#[utoipa::path(post, path = "/me/passkeys", tag = "accounts", request_body = NewPasskeyRequest,
    responses(
        (status = 201, body = PasskeyRegistered),
        (status = 400, description = "Bad name or a refused answer", body = ErrorBody),
        (status = 403, description = "Called with an API key", body = ErrorBody),
        (status = 409, description = "Registered already", body = ErrorBody),
    ))]
async fn register_passkey(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Json(body): Json<NewPasskeyRequest>,
) -> ApiResult<Response> {
    let name = passkey_name(&body.name)?;
    let refused = |error: WebauthnError| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "passkey_refused",
            ErrorCategory::Validation,
            crate::base::error::capitalize(&format!("{error}.")),
            "Start adding the passkey again.",
        )
    };
    let credential = body.credential;
    let challenge_text =
        webauthn::challenge_of(&credential.response.client_data_json).map_err(refused)?;
    let challenge = state
        .store
        .take_auth_challenge(
            &secret_hash(&challenge_text),
            ChallengePurpose::PasskeyRegister,
        )
        .await?
        .filter(|c| c.user_id == Some(auth.user.id));
    if challenge.is_none() {
        return Err(refused(WebauthnError::Mismatch(
            "the request has expired or was made for another account".into(),
        )));
    }
    let new = webauthn::verify_registration(&relying_party(&state), &challenge_text, &credential)
        .map_err(refused)?;
    let passkey = state
        .store
        .add_passkey(
            auth.user.id,
            &new.credential_id,
            &new.public_key,
            i64::from(new.sign_count),
            name,
        )
        .await?;
    let recovery_codes = ensure_recovery_codes(&state, auth.user.id).await?;
    Ok((
        StatusCode::CREATED,
        Json(PasskeyRegistered {
            passkey: passkey.into(),
            recovery_codes,
        }),
    )
        .into_response())
}

/// A passkey's new name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasskeyRename {
    /// The new name; 1–64 characters once spaces at either end are trimmed.
    pub name: String,
}

/// An answer holding one passkey.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyEnvelope {
    /// The passkey.
    pub passkey: PasskeyView,
}

/// Rename one of the signed-in user's passkeys (its name is only for recognising it).
#[utoipa::path(patch, path = "/me/passkeys/{id}", tag = "accounts", request_body = PasskeyRename,
    params(("id" = i64, Path, description = "The passkey's id")),
    responses(
        (status = 200, body = PasskeyEnvelope),
        (status = 400, description = "An empty name, or one longer than 64 characters", body = ErrorBody),
        (status = 403, description = "Called with an API key", body = ErrorBody),
        (status = 404, description = "No such passkey of the user's", body = ErrorBody),
    ))]
async fn rename_passkey(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Path(id): Path<i64>,
    Json(body): Json<PasskeyRename>,
) -> ApiResult<Json<PasskeyEnvelope>> {
    let name = passkey_name(&body.name)?;
    match state.store.rename_passkey(auth.user.id, id, name).await? {
        Some(passkey) => Ok(Json(PasskeyEnvelope {
            passkey: passkey.into(),
        })),
        None => Err(ApiError::not_found("Passkey")),
    }
}

/// Remove one of the signed-in user's passkeys.
#[utoipa::path(delete, path = "/me/passkeys/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "The passkey's id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "Called with an API key", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn delete_passkey(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    if !state.store.delete_passkey(auth.user.id, id).await? {
        return Err(ApiError::not_found("Passkey"));
    }
    forget_recovery_codes_if_unused(&state, auth.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
