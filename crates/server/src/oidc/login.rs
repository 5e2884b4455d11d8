//! The start of an OpenID Connect sign-in, shared by the browser's sign-in (`/auth/oidc/start`)
//! and the API's linking of an identity to the signed-in account: the stored authorization
//! request, the cookie that binds it to the browser, and the failure pages both show.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tidings_store::{ChallengeStored, NewOidcLogin, StoreError, unix_now};

use super::{LOGIN_LIFETIME, OidcError, Provider, random_token};
use crate::base::auth::secret_hash;
use crate::base::client::ClientContext;
use crate::base::sessions::CHALLENGES_IN_ALL;
use crate::base::state::AppState;

/// The cookie that ties an authorization request to the browser that started it, so that an
/// answer cannot be replayed into another browser (login CSRF).
pub const STATE_COOKIE: &str = "tidings_oidc";

/// `{base URL}/auth/oidc/callback`, registered at the provider as the redirect URI.
pub fn redirect_uri(base: &url::Url) -> String {
    format!("{}/auth/oidc/callback", base.as_str().trim_end_matches('/'))
}

/// The `Set-Cookie` value of [`STATE_COOKIE`] (an empty value with no age removes it).
pub(crate) fn state_cookie(value: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{STATE_COOKIE}={value}; Path=/auth/oidc/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("tidings_oidc=; Path=/auth/oidc/; Max-Age=0"))
}

/// A failure page: a heading, what happened, and a link onwards.
pub fn failure(status: StatusCode, title: &str, message: &str, link: (&str, &str)) -> Response {
    let escape = |text: &str| tidings_feed::text::escape_html(text);
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title} · tidings</title>\
         <style>body{{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:4em auto;padding:0 1em}}</style>\
         </head><body><main id=\"oidc-failure\"><h1>{title}</h1><p>{message}</p>\
         <p><a href=\"{href}\">{label}</a></p></main></body></html>",
        title = escape(title),
        message = escape(message),
        href = escape(link.0),
        label = escape(link.1),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The failure page of a provider that could not be reached or whose answer failed its checks.
pub(crate) fn provider_failure(error: &OidcError) -> Response {
    tracing::warn!(%error, "an OpenID Connect sign-in failed");
    let status = match error {
        OidcError::Token(_) => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_GATEWAY,
    };
    failure(
        status,
        "Sign-in failed",
        &format!(
            "{}. Nothing was changed; try again, or ask the administrator if it keeps failing.",
            crate::base::error::capitalize(&error.to_string())
        ),
        ("/login", "Back to sign-in"),
    )
}

/// Stores a new authorization request (for a sign-in, or for linking to `link_user_id`) and
/// returns the provider's URL with the cookie that binds it to this browser.
pub(crate) async fn begin(
    state: &AppState,
    provider: &Provider,
    link_user_id: Option<i64>,
    next: &str,
    client: &ClientContext,
) -> Result<(String, HeaderValue), Response> {
    let (request_state, nonce, verifier) = (random_token(), random_token(), random_token());
    let redirect = redirect_uri(&state.config.base_url);
    let url = provider
        .authorization_url(&redirect, &request_state, &nonce, &verifier)
        .await
        .map_err(|e| provider_failure(&e))?;
    let lifetime = LOGIN_LIFETIME.as_secs();
    let login = NewOidcLogin {
        state_hash: &secret_hash(&request_state),
        nonce: &nonce,
        code_verifier: &verifier,
        link_user_id,
        return_to: Some(next),
        expires_at: unix_now() + lifetime as i64,
    };
    let stored = state
        .store
        .create_oidc_login(&login, CHALLENGES_IN_ALL)
        .await
        .map_err(|e| store_failure(&e))?;
    if stored == ChallengeStored::Full {
        tracing::warn!(
            limit = CHALLENGES_IN_ALL,
            "a single sign-on was refused: as many are in progress as the server keeps \
             (many clients starting sign-ins: a flood?)"
        );
        return Err(failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many sign-ins in progress",
            "The server already has as many sign-ins in progress as it keeps at once. Try \
             again in a few minutes; unfinished ones expire.",
            ("/login", "Back to sign-in"),
        ));
    }
    Ok((
        url.to_string(),
        state_cookie(&request_state, lifetime, client.https),
    ))
}

/// The failure page of a sign-in the database could not serve.
pub(crate) fn store_failure(error: &StoreError) -> Response {
    tracing::error!(%error, "an OpenID Connect sign-in could not use the database");
    failure(
        StatusCode::SERVICE_UNAVAILABLE,
        "Sign-in is unavailable",
        "The server could not reach its database. Try again in a moment.",
        ("/login", "Back to sign-in"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_uri_follows_the_base_url() {
        let at = |base: &str| redirect_uri(&base.parse().unwrap());
        assert_eq!(
            at("https://reader.example.com/"),
            "https://reader.example.com/auth/oidc/callback"
        );
        assert_eq!(
            at("https://example.com/reader/"),
            "https://example.com/reader/auth/oidc/callback"
        );
    }
}
