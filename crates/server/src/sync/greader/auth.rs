//! Signing in: `/accounts/ClientLogin` with the username and an API key, the `Auth` token
//! read back from `Authorization: GoogleLogin auth=…`, the `T` token for writes, which
//! endpoints write, and `user-info`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::protocol::{GReaderError, Params, Request, Result};
use crate::base::auth::Auth;
use crate::base::client::ClientContext;
use crate::base::state::AppState;
use crate::sync::shared::{Refusal, admit, user_of_key, user_of_login};

/// The credentials of an `Authorization: GoogleLogin auth=…` header.
pub(super) fn google_login_token(headers: &HeaderMap) -> Option<String> {
    // Read as bytes: a client may send a token it was given with a non-ASCII name in it.
    let value = String::from_utf8_lossy(headers.get(header::AUTHORIZATION)?.as_bytes());
    let value = value.trim();
    let (scheme, rest) = value.split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("GoogleLogin") {
        return None;
    }
    let rest = rest.trim();
    let token = rest
        .strip_prefix("auth=")
        .or_else(|| rest.strip_prefix("Auth="))?;
    Some(token.trim().trim_matches('"').to_string())
}

/// The user of an `Auth` token: the API key as ClientLogin hands it out, or `username/API key`
/// (the FreshRSS form some set-up guides show).
pub(super) async fn user_of_token(
    state: &AppState,
    token: &str,
) -> std::result::Result<Option<tidings_store::Authenticated>, Refusal> {
    match token.rsplit_once('/') {
        Some((username, key)) => user_of_login(state, username, key).await,
        None => user_of_key(state, token).await,
    }
}

/// The `T` token of a caller: stable for one API key, not a secret (see the module's doc).
pub(super) fn write_token(auth: &Auth) -> String {
    let key_id = auth.api_key.map_or(0, |(id, _)| id);
    let digest = hex::encode(Sha256::digest(
        format!("tidings greader T {}:{key_id}", auth.user.id).as_bytes(),
    ));
    digest[..57].to_string()
}

/// `/accounts/ClientLogin`: `Email` and `Passwd` (an API key) in a form or the query string.
pub(super) async fn client_login(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    client: Option<axum::Extension<ClientContext>>,
    body: Bytes,
) -> Response {
    let params = Params::parse(uri.query(), &headers, &body);
    let email = params.get("Email").unwrap_or("").trim().to_string();
    let key = params.get("Passwd").unwrap_or("").trim().to_string();
    let found = if email.is_empty() || key.is_empty() {
        Ok(None)
    } else {
        user_of_login(&state, &email, &key).await
    };
    let client = client.map(|axum::Extension(c)| c);
    match admit(&state, client.as_ref(), found, false).await {
        Ok(_) => {}
        Err(Refusal::BadCredentials) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "Error=BadAuthentication\nInfo=Email is your username and Passwd an API key \
                 (not your account password)\n",
            )
                .into_response();
        }
        Err(refusal) => return GReaderError::refused(refusal).into_response(),
    }
    // The key alone names its user; a token with the name in it would not be a valid header
    // value for names outside ASCII.
    let token = key;
    if params.get("output") == Some("json") {
        return axum::Json(json!({"SID": token, "LSID": "null", "Auth": token})).into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("SID={token}\nLSID=null\nAuth={token}\n"),
    )
        .into_response()
}

/// Whether an endpoint changes anything (a read-only key is refused there).
pub(super) fn is_write(endpoint: &str) -> bool {
    matches!(
        endpoint,
        "subscription/edit"
            | "subscription/quickadd"
            | "subscription/import"
            | "rename-tag"
            | "disable-tag"
            | "edit-tag"
            | "mark-all-as-read"
    )
}

/// `user-info`: JSON whether or not `output=json` is given.
pub(super) async fn user_info(request: &Request<'_>) -> Result<Response> {
    let user = &request.auth.user;
    Ok(axum::Json(json!({
        "userId": user.id.to_string(),
        "userName": user.username,
        "userProfileId": user.id.to_string(),
        "userEmail": "",
        "isBloggerUser": false,
        "signupTimeSec": user.created_at,
        "isMultiLoginEnabled": false,
    }))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, header};

    #[test]
    fn the_google_login_header_is_read() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("GoogleLogin auth=ann/tdg_x"),
        );
        assert_eq!(google_login_token(&headers).as_deref(), Some("ann/tdg_x"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert_eq!(google_login_token(&headers), None);
    }
}
