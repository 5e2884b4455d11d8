//! OpenID Connect in the API (F22): which ways of signing in the server offers, the signed-in
//! user's linked identities (link, unlink), and the administrators' switch that turns
//! password sign-in off. API keys are not affected by any of it: sync clients and scripts
//! keep working whatever the sign-in methods.

use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::{AdminAuth, Auth, SessionAuth};
use crate::base::client::ClientContext;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(sign_in_methods))
        .routes(routes!(list_identities, link_identity))
        .routes(routes!(unlink_identity))
        .routes(routes!(sign_in_settings, set_sign_in_settings))
}

/// The configured OpenID Connect provider, as the sign-in page shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct OidcMethod {
    /// The provider's name for the button ("Sign in with …").
    pub name: String,
    /// Where the browser goes to sign in (add `?next=/path` to come back there).
    pub start_url: String,
}

/// The ways of signing in this server offers.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignInMethods {
    /// Whether a user name and password sign in.
    pub password: bool,
    /// The OpenID Connect provider, when one is configured.
    pub oidc: Option<OidcMethod>,
}

/// The ways of signing in: password (unless turned off) and the OpenID Connect provider
/// (when configured). Needs no authentication: the sign-in page reads it.
#[utoipa::path(get, path = "/sign-in-methods", tag = "accounts", security(()),
    responses((status = 200, body = SignInMethods)))]
async fn sign_in_methods(State(state): State<AppState>) -> ApiResult<Json<SignInMethods>> {
    Ok(Json(SignInMethods {
        password: state.store.password_sign_in().await?,
        oidc: state.oidc.as_ref().map(|provider| OidcMethod {
            name: provider.config().display_name.clone(),
            start_url: "/auth/oidc/start".into(),
        }),
    }))
}

/// A linked identity.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityView {
    /// The link's id.
    pub id: i64,
    /// The provider's issuer URL.
    pub issuer: String,
    /// The user's identifier at the provider.
    pub subject: String,
    /// The e-mail address the provider gave at the last sign-in.
    pub email: Option<String>,
    /// When it was linked.
    pub created_at: String,
    /// When it last signed in.
    pub last_used_at: Option<String>,
}

/// The linked identities.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityList {
    /// Oldest first.
    pub identities: Vec<IdentityView>,
    /// Whether the user has a password (with password sign-in on, another way in).
    pub has_password: bool,
}

/// The signed-in user's linked identities.
#[utoipa::path(get, path = "/me/identities", tag = "accounts",
    responses((status = 200, body = IdentityList), (status = 401, body = ErrorBody)))]
async fn list_identities(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<IdentityList>> {
    let identities = state.store.list_identities(auth.user.id).await?;
    Ok(Json(IdentityList {
        identities: identities
            .into_iter()
            .map(|i| IdentityView {
                id: i.id,
                issuer: i.issuer,
                subject: i.subject,
                email: i.email,
                created_at: time(i.created_at),
                last_used_at: i.last_used_at.map(time),
            })
            .collect(),
        has_password: auth.user.has_password,
    }))
}

/// Where to send the browser to link an identity.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkStart {
    /// The provider's sign-in page; once signed in there, the browser comes back to
    /// `/auth/oidc/callback`, which links the identity and returns to `/account`.
    pub authorization_url: String,
}

/// Start linking an identity at the configured provider to the signed-in user. Needs a
/// signed-in session (not an API key); the answer sets a cookie that ties the request to this
/// browser.
#[utoipa::path(post, path = "/me/identities", tag = "accounts",
    responses(
        (status = 200, body = LinkStart),
        (status = 403, description = "Called with an API key", body = ErrorBody),
        (status = 404, description = "No provider is configured", body = ErrorBody),
        (status = 502, description = "The provider could not be reached", body = ErrorBody),
    ))]
async fn link_identity(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    SessionAuth(auth): SessionAuth,
) -> ApiResult<Response> {
    let Some(provider) = state.oidc.clone() else {
        return Err(no_provider());
    };
    let started =
        crate::oidc::login::begin(&state, &provider, Some(auth.user.id), "/account", &client).await;
    match started {
        Ok((url, cookie)) => {
            let mut response = Json(LinkStart {
                authorization_url: url,
            })
            .into_response();
            response.headers_mut().insert(header::SET_COOKIE, cookie);
            Ok(response)
        }
        Err(_) => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "provider_unavailable",
            ErrorCategory::System,
            format!(
                "The sign-in provider {} could not be reached.",
                provider.config().display_name
            ),
            "Try again later; the server's log says what failed.",
        )),
    }
}

fn no_provider() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "oidc_not_configured",
        ErrorCategory::Validation,
        "No OpenID Connect provider is configured on this server.",
        "Set TIDINGS_OIDC_ISSUER, TIDINGS_OIDC_CLIENT_ID and TIDINGS_OIDC_CLIENT_SECRET.",
    )
}

/// Unlink one of the signed-in user's identities. The last way to sign in (no password, or
/// passwords turned off, and no other identity) cannot be unlinked. Needs a signed-in session.
#[utoipa::path(delete, path = "/me/identities/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "The link's id")),
    responses(
        (status = 204, description = "Unlinked"),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The last way to sign in", body = ErrorBody),
    ))]
async fn unlink_identity(
    State(state): State<AppState>,
    SessionAuth(auth): SessionAuth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    let password_counts = state.store.password_sign_in().await?;
    state
        .store
        .unlink_identity(auth.user.id, id, password_counts)
        .await
        .map_err(|error| match error {
            tidings_store::StoreError::Conflict(_) => ApiError::conflict(
                "This identity is your last way to sign in, so it cannot be unlinked.",
                if password_counts {
                    "Set a password or link another identity first."
                } else {
                    "Link another identity first (passwords are turned off on this server)."
                },
            ),
            other => other.into(),
        })?;
    Ok(StatusCode::NO_CONTENT)
}

/// The installation's sign-in settings.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInSettings {
    /// Whether passwords sign in to the web UI. Off requires OpenID Connect: API keys keep
    /// working either way.
    pub password_sign_in: bool,
}

/// The installation's sign-in settings (administrators only).
#[utoipa::path(get, path = "/admin/sign-in", tag = "admin",
    responses((status = 200, body = SignInSettings), (status = 403, body = ErrorBody)))]
async fn sign_in_settings(
    State(state): State<AppState>,
    _admin: AdminAuth,
) -> ApiResult<Json<SignInSettings>> {
    Ok(Json(SignInSettings {
        password_sign_in: state.store.password_sign_in().await?,
    }))
}

/// Turn password sign-in off (require OpenID Connect) or back on (administrators only).
/// Turning it off needs a configured provider and an identity linked to the administrator
/// doing it, so that they keep a way in; sessions already open stay open.
#[utoipa::path(put, path = "/admin/sign-in", tag = "admin", request_body = SignInSettings,
    responses(
        (status = 200, body = SignInSettings),
        (status = 403, body = ErrorBody),
        (status = 409, description = "No provider, or no identity of the administrator's", body = ErrorBody),
    ))]
async fn set_sign_in_settings(
    State(state): State<AppState>,
    AdminAuth(admin): AdminAuth,
    Json(body): Json<SignInSettings>,
) -> ApiResult<Json<SignInSettings>> {
    if !body.password_sign_in {
        if state.oidc.is_none() {
            return Err(ApiError::conflict(
                "Passwords cannot be turned off without an OpenID Connect provider: nobody could sign in.",
                "Set TIDINGS_OIDC_ISSUER and the client settings first.",
            ));
        }
        if state.store.list_identities(admin.user.id).await?.is_empty() {
            return Err(ApiError::conflict(
                "You have no linked identity, so turning passwords off would lock you out.",
                "Link an identity under Account first.",
            ));
        }
    }
    state
        .store
        .set_password_sign_in(body.password_sign_in)
        .await?;
    Ok(Json(SignInSettings {
        password_sign_in: body.password_sign_in,
    }))
}
