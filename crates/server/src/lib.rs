//! The tidings HTTP server: health and readiness, the REST API under `/api/v1` with its
//! OpenAPI document, the web UI, and the WebSub callback (F18).

#![warn(missing_docs)]

pub mod api;
pub mod base;
pub mod connection;
pub mod health;
pub mod mail;
pub mod media;
pub mod metrics;
pub mod mfa;
pub mod middleware;
pub mod observe;
pub mod oidc;
pub mod password;
pub mod ratelimit;
pub mod related;
pub mod setup;
pub mod sync;
pub mod ui;
pub mod websub;

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;
use tower_http::compression::CompressionLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};

pub use crate::base::state::{AppState, ServerConfig};

/// The application's routes: health, the API and its OpenAPI document.
pub fn router(state: AppState) -> Router {
    use tower::ServiceExt;
    // A sync API's path asked for with a doubled slash (a server address typed with a trailing
    // slash) is routed as the path with one slash: the rewrite has to come before routing,
    // which a layer of the router below would not.
    Router::new().fallback_service(routes(state).map_request(sync::with_single_slash))
}

/// The routes of [`router`], and every layer.
fn routes(state: AppState) -> Router {
    let (api, _) = api::router().split_for_parts();
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/media", get(media::route::serve_media))
        .route("/metrics", get(metrics::route::serve_metrics))
        .nest("/api/v1", api)
        .merge(sync::router())
        .merge(oidc::routes::router())
        .merge(ui::router())
        .merge(websub::router())
        .merge(mail::inbound::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::protect,
        ))
        .layer(middleware::cors(&state.config))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::security_headers,
        ))
        // Outside `protect`, so that its refusals too reach a client still sending a large body.
        .layer(axum::middleware::from_fn(middleware::receive_large_bodies))
        // gzip or brotli, as the client accepts; images and tiny bodies are left as they are.
        // At the fastest level (gzip 1, as nginx compresses by default; brotli 0): brotli's
        // default here (4) zeroed a 4 MB window for every answer, a fifth of the CPU of an app's
        // most frequent request (1,000 ids, 70 kB of JSON), for a body a few kB smaller.
        .layer(CompressionLayer::new().quality(tower_http::CompressionLevel::Fastest))
        // Outside the others, so the count and the log line see every answer (a 429 or 403 of
        // `protect` too). A layer of the router still sees the matched route template.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        // Failures are logged once, where they happen and with their cause (ApiError::internal,
        // the sync APIs, the readiness check); the trace layer's own line for a 5xx answer would
        // repeat it, so it is at debug level with the rest of the request trace.
        .layer(
            TraceLayer::new_for_http()
                // The path only: a query string can hold a password or a key (ClientLogin's
                // Passwd, Fever's api_key), and the default span would log the whole URI.
                .make_span_with(|request: &axum::http::Request<axum::body::Body>| {
                    tracing::debug_span!(
                        "request",
                        method = %request.method(),
                        path = %request.uri().path(),
                    )
                })
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
        .with_state(state)
}

/// How long a client may take to send a request's head (line and headers) before the
/// connection is closed; without it, a client that never ends its headers held a connection
/// (and the server's attention) for ever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long requests in flight get to finish once the server is told to stop; connections
/// still open then are closed. Within the 10 s container runtimes wait before killing.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves the application on `listener` until `shutdown` completes, then stops accepting and
/// lets the requests in flight finish within [`SHUTDOWN_GRACE`].
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    state.related.warm_up(state.store.clone());
    // Imports that were running when a process stopped never finish: say so (issue 32). Jobs
    // of another process still running keep beating and are left alone.
    let store = state.store.clone();
    tokio::spawn(async move {
        match store.interrupt_stale_import_jobs(None).await {
            Ok(0) => {}
            Ok(count) => tracing::info!(
                count,
                "imports that stopped with a process marked interrupted"
            ),
            Err(error) => tracing::warn!(%error, "stopped imports could not be marked interrupted"),
        }
    });
    let body_timeout = state.config.body_read_timeout;
    serve_with_body_timeout(listener, router(state), shutdown, body_timeout).await
}

/// Serves any router on `listener` as [`serve`] does (the header-read timeout, a deadline on
/// every request body ([`base::inbound::BODY_READ_TIMEOUT`]), HTTP/1 and
/// HTTP/2, the peer address as `ConnectInfo<SocketAddr>`) until `shutdown` completes: for
/// the application, and for the `/metrics` listener of `tidings worker`.
pub async fn serve_router(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_body_timeout(listener, app, shutdown, base::inbound::BODY_READ_TIMEOUT).await
}

/// [`serve_router`] with every request body due within `body_timeout` of its head.
async fn serve_with_body_timeout(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    body_timeout: Duration,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use tower::ServiceExt;

    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder.http2().timer(TokioTimer::new());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                // Every body gets a deadline before any route sees it (slow clients).
                app.clone().oneshot(request.map(|body| {
                    axum::body::Body::new(base::inbound::DeadlineBody::new(body, body_timeout))
                }))
            },
        );
        let connection = builder
            .serve_connection_with_upgrades(
                TokioIo::new(connection::HeadGuard::new(stream)),
                service,
            )
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still in flight {} s after the stop were cut off",
            SHUTDOWN_GRACE.as_secs()
        );
    }
    Ok(())
}
