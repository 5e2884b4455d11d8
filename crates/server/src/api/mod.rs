//! The REST API under `/api/v1` (F20–F38, F63), documented by an OpenAPI 3.1 document that is
//! generated from the handlers themselves and served at `/api/v1/openapi.json`.

pub mod accounts;
pub mod admin;
pub mod bookmarks;
pub mod contract;
pub mod full_text;
pub mod groups;
pub mod imports;
pub mod items;
pub mod mail_addresses;
pub mod mfa;
pub mod oidc;
pub mod opml;
pub mod popularity;
pub mod preferences;
pub mod related;
pub mod rules;
pub mod scraped;
pub mod subscriptions;
pub mod summaries;
pub mod tags;
pub mod translations;
pub mod usage;
pub mod webhooks;

// The API's shared pieces live a floor down, in `crate::base`, where the sync APIs and the
// middleware reach them without importing the API; their old paths stay for the programs and
// tests that name them.
pub use crate::base::time::time;
pub use crate::base::{auth, error, extract, limits};

use std::sync::OnceLock;

use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::limits::MAX_BODY_BYTES;
use crate::base::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "tidings API",
        description = "The REST API of tidings, a self-hosted RSS / Atom / JSON Feed reader. \
            Authenticate with the session cookie set by POST /api/v1/session, or with an API \
            key as `Authorization: Bearer tdg_…`. Errors are `{\"error\": {\"code\", \
            \"message\", \"category\", \"action\"}}`. Times are RFC 3339 in UTC.",
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "accounts", description = "Sign-in, sessions, the current user, API keys"),
        (name = "admin", description = "User management and all feeds, for administrators"),
        (name = "subscriptions", description = "Feeds the user follows"),
        (name = "opml", description = "Import and export of subscriptions (OPML), and imports of another reader's history"),
        (name = "groups", description = "Groups of subscriptions"),
        (name = "items", description = "Items, their read and starred state, unread counts"),
        (name = "bookmarks", description = "Snapshots of items that outlive them"),
        (name = "rules", description = "Rules: conditions and actions run on arriving items, previewed, applied once with an undo"),
        (name = "mail", description = "Receiving addresses for newsletters by email"),
        (name = "webhooks", description = "Notification channels: Discord, Slack and generic webhooks for new items"),
        (name = "preferences", description = "The user's reading preferences"),
        (name = "usage", description = "Usage counts without personal data: links opened and searches made, per day"),
        (name = "meta", description = "This document"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(auth::SESSION_COOKIE))),
        );
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Every API route with its documentation, paths relative to `/api/v1`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(accounts::router())
        .merge(mfa::router())
        .merge(oidc::router())
        .merge(admin::router())
        .merge(subscriptions::router())
        .merge(scraped::router())
        .merge(opml::router())
        .merge(imports::router())
        .merge(groups::router())
        .merge(popularity::router())
        .merge(items::router())
        .merge(tags::router())
        .merge(related::router())
        .merge(full_text::router())
        .merge(summaries::router())
        .merge(translations::router())
        .merge(bookmarks::router())
        .merge(preferences::router())
        .merge(usage::router())
        .merge(webhooks::router())
        .merge(rules::router())
        .merge(mail_addresses::router())
        .routes(routes!(openapi_json))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// The OpenAPI document, with paths under `/api/v1`.
pub fn openapi() -> &'static utoipa::openapi::OpenApi {
    static DOCUMENT: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut document = OpenApiRouter::<AppState>::new()
            .nest("/api/v1", router())
            .into_openapi();
        limits::document_limits(&mut document);
        contract::complete(&mut document);
        document
    })
}

/// The OpenAPI 3.1 description of this API.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json")))]
async fn openapi_json() -> impl IntoResponse {
    axum::Json(openapi())
}
