//! `GET /media`: the route that serves the images the proxy signed (the signing and the
//! rewriting of items' HTML are in the parent module, which the application's state holds).

use std::sync::OnceLock;

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tidings_fetch::FetchRequest;
use tokio::sync::Semaphore;

use super::{CONCURRENT_FETCHES, MAX_MEDIA_BYTES, MEDIA_CSP};
use crate::base::state::AppState;

/// The query of `/media`.
#[derive(Debug, Deserialize)]
pub struct MediaParams {
    /// The image's address.
    pub url: String,
    /// The server's signature of it.
    pub sig: String,
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// `GET /media?url=…&sig=…`: the signed image, fetched through the guarded client.
pub async fn serve_media(
    State(state): State<AppState>,
    Query(params): Query<MediaParams>,
) -> Response {
    let proxy = &state.config.media_proxy;
    // Served whatever the mode: with the proxy off, the only signed addresses are those a
    // signed-in device asked for to keep images offline (`images=proxied`), and only what
    // this server signed is ever fetched.
    if !proxy.verify(&params.url, &params.sig) {
        return plain(
            StatusCode::FORBIDDEN,
            "This address was not signed by this server.",
        );
    }
    let Ok(url) = url::Url::parse(&params.url) else {
        return plain(StatusCode::BAD_REQUEST, "The address is not a URL.");
    };
    static SLOTS: OnceLock<Semaphore> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| Semaphore::new(CONCURRENT_FETCHES));
    let Ok(_slot) = slots.acquire().await else {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "The media proxy is closing.",
        );
    };
    let request = FetchRequest::new(url.clone())
        .with_accept("image/avif,image/webp,image/*;q=0.8")
        .with_max_body_bytes(MAX_MEDIA_BYTES);
    let response = match state.fetcher.client().fetch(&request).await {
        Ok(response) => response,
        Err(error) => {
            tracing::debug!(url = %tidings_fetch::redact_url(url.as_str()), %error, "media proxy fetch failed");
            return plain(StatusCode::BAD_GATEWAY, "The image could not be fetched.");
        }
    };
    if !response.is_success() {
        return plain(
            if response.status == 404 {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::BAD_GATEWAY
            },
            "The image's server did not give it.",
        );
    }
    let Some(kind) =
        tidings_worker::favicon::image_type(response.content_type.as_deref(), &response.body)
    else {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "That address is not an image.",
        );
    };
    let mut answer = response.body.to_vec().into_response();
    let headers = answer.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&kind) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(MEDIA_CSP),
    );
    answer
}
