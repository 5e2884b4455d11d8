//! User preferences (F38), read and written by the web UI.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use tidings_store::{PreferenceChanges, Preferences};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::Json;
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_preferences, update_preferences))
}

/// The user's preferences.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreferencesView {
    /// `light`, `dark` or `auto` (follow the system).
    pub theme: String,
    /// Items per page, 10 to 200.
    pub page_size: i64,
    /// Whether item content shows images.
    pub show_images: bool,
    /// Whether opening an item marks it read.
    pub mark_read_on_open: bool,
    /// Whether scrolling past an item in a list marks it read (off by default).
    pub mark_read_on_scroll: bool,
    /// The listing shown first: `all`, `unread` or `starred`.
    pub default_view: String,
    /// Which new items are summarized (F42): `on_demand` (none until the user asks, the
    /// default), `all`, or `chosen` (those of subscriptions whose `summarize` is true).
    pub summarize: String,
    /// The language of the web UI (issue 34): `auto` (the browser's, the default), `en`,
    /// `ja` or `zh-Hans`.
    pub language: String,
    /// Whether a story that arrived from several feeds is listed once, with the others in its
    /// `cluster` (on by default); also in the counts and the sync APIs.
    pub collapse_duplicates: bool,
    /// Whether reading one copy of such a story reads the others: `cluster` (default) or
    /// `copy` (that copy only).
    pub duplicates_read: String,
    /// When they were last changed; null while they are the defaults.
    pub updated_at: Option<String>,
}

impl From<Preferences> for PreferencesView {
    fn from(p: Preferences) -> PreferencesView {
        PreferencesView {
            theme: p.theme,
            page_size: p.page_size,
            show_images: p.show_images,
            mark_read_on_open: p.mark_read_on_open,
            mark_read_on_scroll: p.mark_read_on_scroll,
            default_view: p.default_view,
            summarize: p.summarize,
            language: p.language,
            collapse_duplicates: p.collapse_duplicates,
            duplicates_read: p.duplicates_read,
            updated_at: (p.updated_at > 0).then(|| time(p.updated_at)),
        }
    }
}

/// Preferences, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreferencesEnvelope {
    /// The preferences.
    pub preferences: PreferencesView,
}

/// New values; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdatePreferences {
    /// `light`, `dark` or `auto`.
    pub theme: Option<String>,
    /// 10 to 200.
    pub page_size: Option<i64>,
    /// Show images in content.
    pub show_images: Option<bool>,
    /// Mark items read when opened.
    pub mark_read_on_open: Option<bool>,
    /// Mark items read when scrolled past in a list.
    pub mark_read_on_scroll: Option<bool>,
    /// `all`, `unread` or `starred`.
    pub default_view: Option<String>,
    /// `on_demand`, `all` or `chosen`.
    pub summarize: Option<String>,
    /// `auto` (follow the browser), `en`, `ja` or `zh-Hans`.
    pub language: Option<String>,
    /// List a story from several feeds once.
    pub collapse_duplicates: Option<bool>,
    /// `cluster` or `copy`.
    pub duplicates_read: Option<String>,
}

/// The signed-in user's preferences.
#[utoipa::path(get, path = "/preferences", tag = "preferences",
    responses((status = 200, body = PreferencesEnvelope), (status = 401, body = ErrorBody)))]
async fn get_preferences(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<PreferencesEnvelope>> {
    let preferences = state.store.preferences(auth.user.id).await?;
    Ok(Json(PreferencesEnvelope {
        preferences: preferences.into(),
    }))
}

/// Change the signed-in user's preferences. Every value is checked before any is stored.
#[utoipa::path(put, path = "/preferences", tag = "preferences", request_body = UpdatePreferences,
    responses(
        (status = 200, body = PreferencesEnvelope),
        (status = 400, description = "A value out of range, or a language the UI does not speak", body = ErrorBody),
    ))]
async fn update_preferences(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<UpdatePreferences>,
) -> ApiResult<Json<PreferencesEnvelope>> {
    let language = body.language.map(|l| l.trim().to_string());
    if let Some(language) = &language {
        check_language(language)?;
    }
    let changes = PreferenceChanges {
        theme: body.theme.map(|t| t.trim().to_lowercase()),
        page_size: body.page_size,
        show_images: body.show_images,
        mark_read_on_open: body.mark_read_on_open,
        mark_read_on_scroll: body.mark_read_on_scroll,
        default_view: body.default_view.map(|v| v.trim().to_lowercase()),
        summarize: body.summarize.map(|v| v.trim().to_lowercase()),
        language,
        collapse_duplicates: body.collapse_duplicates,
        duplicates_read: body.duplicates_read.map(|v| v.trim().to_lowercase()),
    };
    let preferences = state
        .store
        .update_preferences(auth.user.id, &changes)
        .await?;
    Ok(Json(PreferencesEnvelope {
        preferences: preferences.into(),
    }))
}

/// Refuses a `language` the web UI has no catalog for: the store keeps any well-formed code,
/// the UI's catalogs ([`crate::ui::LANGUAGES`]) say which exist. Codes are matched as written
/// (`zh-Hans`), as `<html lang>` and the catalogs' names spell them.
fn check_language(language: &str) -> Result<(), ApiError> {
    if language == "auto" || crate::ui::LANGUAGES.iter().any(|l| l.code == language) {
        return Ok(());
    }
    let codes: Vec<&str> = crate::ui::LANGUAGES.iter().map(|l| l.code).collect();
    Err(ApiError::validation(
        format!(
            "the field language must be auto or one of {}, not {language:?}",
            codes.join(", ")
        ),
        "Choose auto (follow the browser) or one of the languages listed.",
    ))
}
