//! The browser's side of an OpenID Connect sign-in: `/auth/oidc/start` sends the browser to
//! the provider, `/auth/oidc/callback` takes its answer, checks it and signs in (or links the
//! identity, or signs up when allowed). Failures are small HTML pages that say what went
//! wrong and where to go, since the browser arrives here by navigation, not from the app.

use axum::Extension;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use tidings_store::StoreError;

use super::Provider;
use super::login::{
    STATE_COOKIE, begin, failure, provider_failure, redirect_uri, state_cookie, store_failure,
};
use crate::base::auth::secret_hash;
use crate::base::client::{ClientContext, cookie};
use crate::base::state::AppState;

/// The browser routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/oidc/start", get(start))
        .route("/auth/oidc/callback", get(callback))
}

/// A path of this server to return to: absolute, and not a scheme-relative `//host` (or
/// `/\host`, which browsers read the same), which would leave the site.
pub fn local_path(next: Option<&str>) -> &str {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && path.len() <= 2000
                && !path.chars().any(char::is_control) =>
        {
            path
        }
        _ => "/",
    }
}

fn not_configured() -> Response {
    failure(
        StatusCode::NOT_FOUND,
        "Single sign-on is not set up",
        "This server has no OpenID Connect provider (TIDINGS_OIDC_ISSUER is not set).",
        ("/login", "Sign in with your user name and password"),
    )
}

/// Where a sign-in returns to, as given by the page that started it.
#[derive(Debug, Deserialize)]
pub struct StartQuery {
    next: Option<String>,
}

/// Starts a sign-in: stores a new request and sends the browser to the provider.
async fn start(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    Query(query): Query<StartQuery>,
) -> Response {
    let Some(provider) = state.oidc.clone() else {
        return not_configured();
    };
    // Each start stores a request: counted like the API's anonymous requests, per address.
    // The callback needs no limit of its own, since each of its answers uses up one of these.
    if !state.limits.anonymous.check(&client.key()).await.allowed {
        return failure(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sign-in attempts",
            "Wait a minute before trying again.",
            ("/login", "Back to sign-in"),
        );
    }
    let next = local_path(query.next.as_deref()).to_string();
    match begin(&state, &provider, None, &next, &client).await {
        Ok((location, cookie)) => redirect(&location, Some(cookie)),
        Err(response) => response,
    }
}

fn redirect(location: &str, cookie: Option<HeaderValue>) -> Response {
    let mut response =
        (StatusCode::SEE_OTHER, [(header::CACHE_CONTROL, "no-store")]).into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The provider's answer.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Takes the provider's answer: checks the state against the browser's cookie and the stored
/// request (once), exchanges the code, verifies the ID token, then signs in, links or signs up.
async fn callback(
    State(state): State<AppState>,
    Extension(client): Extension<ClientContext>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(provider) = state.oidc.clone() else {
        return not_configured();
    };
    let mut response = finish(&state, &provider, &client, &headers, query).await;
    // The request is used up whatever happened: the cookie goes.
    response
        .headers_mut()
        .append(header::SET_COOKIE, state_cookie("", 0, client.https));
    response
}

async fn finish(
    state: &AppState,
    provider: &Provider,
    client: &ClientContext,
    headers: &HeaderMap,
    query: CallbackQuery,
) -> Response {
    let back = ("/login", "Back to sign-in");
    if let Some(error) = &query.error {
        let reason = query.error_description.as_deref().unwrap_or(error);
        return failure(
            StatusCode::FORBIDDEN,
            "Sign-in was not completed",
            &format!("The provider answered: {reason}."),
            back,
        );
    }
    let (Some(code), Some(request_state)) = (query.code.as_deref(), query.state.as_deref()) else {
        return failure(
            StatusCode::BAD_REQUEST,
            "Sign-in was not completed",
            "The provider's answer has no code or state.",
            back,
        );
    };
    let stale = || {
        failure(
            StatusCode::BAD_REQUEST,
            "This sign-in has expired or was already used",
            "Each sign-in link works once, for ten minutes, in the browser that started it. Start again.",
            back,
        )
    };
    if cookie(headers, STATE_COOKIE) != Some(request_state) {
        return stale();
    }
    let login = match state
        .store
        .take_oidc_login(&secret_hash(request_state))
        .await
    {
        Ok(Some(login)) => login,
        Ok(None) => return stale(),
        Err(error) => return store_failure(&error),
    };
    let redirect_to = redirect_uri(&state.config.base_url);
    let claims = match provider
        .exchange(code, &login.code_verifier, &redirect_to)
        .await
    {
        Ok(id_token) => match provider.verify(&id_token, &login.nonce).await {
            Ok(claims) => claims,
            Err(error) => return provider_failure(&error),
        },
        Err(error) => return provider_failure(&error),
    };
    let next = local_path(login.return_to.as_deref()).to_string();
    if let Some(user_id) = login.link_user_id {
        return match state
            .store
            .link_identity(user_id, &claims.iss, &claims.sub, claims.email.as_deref())
            .await
        {
            Ok(_) => redirect("/account", None),
            Err(StoreError::Conflict(_)) => failure(
                StatusCode::CONFLICT,
                "This identity belongs to another account",
                "It is already linked to another tidings account, so it cannot be linked to yours. Unlink it there first.",
                ("/account", "Back to your account"),
            ),
            Err(error) => store_failure(&error),
        };
    }
    let user = match state
        .store
        .identity_user(&claims.iss, &claims.sub, claims.email.as_deref())
        .await
    {
        Ok(Some(user)) => user,
        Ok(None) if provider.config().signup => match sign_up(state, &claims).await {
            Ok(user) => user,
            Err(error) => return store_failure(&error),
        },
        Ok(None) => {
            return failure(
                StatusCode::FORBIDDEN,
                "No account is linked to this identity",
                &format!(
                    "You signed in at {} as {}, but no tidings account is linked to that identity. \
                     Sign in with your password and link it under Account, or ask an administrator.",
                    provider.config().display_name,
                    claims.email.as_deref().unwrap_or(&claims.sub)
                ),
                back,
            );
        }
        Err(error) => return store_failure(&error),
    };
    if user.is_disabled {
        return failure(
            StatusCode::FORBIDDEN,
            "This account is disabled",
            "Ask an administrator to enable it.",
            back,
        );
    }
    match crate::base::sessions::open_session(state, user.id, client, headers).await {
        Ok(cookie) => redirect(&next, Some(cookie)),
        Err(_) => store_failure(&StoreError::NotFound("session")),
    }
}

/// Creates the account of a first sign-in: named after the provider's user name or the
/// e-mail address's local part, with a number added while the name is taken.
async fn sign_up(
    state: &AppState,
    claims: &super::IdClaims,
) -> Result<tidings_store::User, StoreError> {
    let wanted = claims
        .preferred_username
        .as_deref()
        .or_else(|| claims.email.as_deref().and_then(|e| e.split('@').next()))
        .unwrap_or("user");
    let mut base: String = wanted
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
        .take(48)
        .collect();
    if tidings_store::normalize_username(&base).is_err() {
        base = "user".into();
    }
    let mut last = None;
    for n in 1..=50 {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        match state
            .store
            .create_user_with_identity(&name, &claims.iss, &claims.sub, claims.email.as_deref())
            .await
        {
            Ok(user) => {
                tracing::info!(user = %user.username, issuer = %claims.iss, "signed up through OpenID Connect");
                return Ok(user);
            }
            Err(StoreError::Conflict(reason)) if reason.contains("already exists") => {
                last = Some(StoreError::Conflict(reason));
            }
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or(StoreError::NotFound("free user name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_returned_to() {
        assert_eq!(local_path(Some("/feeds/3?x=1")), "/feeds/3?x=1");
        for outside in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example/",
            "feeds",
            "",
        ] {
            assert_eq!(local_path(Some(outside)), "/", "{outside}");
        }
        assert_eq!(local_path(None), "/");
    }
}
