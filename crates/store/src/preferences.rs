//! User preferences (F38): theme, page size, images, mark read on open, default view, and
//! the language of the web UI (issue 34).

use crate::{Result, Store, StoreError, unix_now, with_db};

/// The smallest page size a user may choose.
pub const MIN_PREFERRED_PAGE_SIZE: i64 = 10;
/// The largest page size a user may choose (the API's page limit).
pub const MAX_PREFERRED_PAGE_SIZE: i64 = 200;
/// The themes a user may choose.
pub const THEMES: [&str; 3] = ["light", "dark", "auto"];
/// The views a user may start in.
pub const DEFAULT_VIEWS: [&str; 3] = ["all", "unread", "starred"];
/// Which new items a user wants summarized (F42): none until asked, all of them, or those of
/// the subscriptions marked for it.
pub const SUMMARIZE_MODES: [&str; 3] = ["on_demand", "all", "chosen"];

/// How reading one copy of a story marks the others (issue 35): the whole cluster, or that
/// copy only.
pub const DUPLICATE_READ_MODES: [&str; 2] = ["cluster", "copy"];

/// The longest language code stored: a BCP 47 tag such as `zh-Hans` is far shorter; which
/// codes exist is the server's to say (its UI catalogs), so the store checks only the shape.
pub const MAX_LANGUAGE_LEN: usize = 35;

/// A user's preferences.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Preferences {
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
    /// Which new items are summarized for the user (F42): `on_demand` (none until asked, the
    /// default), `all`, or `chosen` (those of subscriptions whose `summarize` is on).
    pub summarize: String,
    /// The language of the web UI: `auto` (the browser's) or a language's code, such as `ja`.
    pub language: String,
    /// Whether a story that arrived from several feeds is listed once (issue 35; on by
    /// default), in the web UI, the API's listings, the counts and the sync APIs.
    pub collapse_duplicates: bool,
    /// Whether reading or unreading one copy of a story does the same to its copies in the
    /// other feeds (`cluster`, the default) or to that copy only (`copy`).
    pub duplicates_read: String,
    /// When they were last changed (Unix seconds).
    pub updated_at: i64,
}

impl Default for Preferences {
    fn default() -> Preferences {
        Preferences {
            theme: "auto".into(),
            page_size: 50,
            show_images: true,
            mark_read_on_open: true,
            mark_read_on_scroll: false,
            default_view: "unread".into(),
            summarize: "on_demand".into(),
            language: "auto".into(),
            collapse_duplicates: true,
            duplicates_read: "cluster".into(),
            updated_at: 0,
        }
    }
}

/// Changes to preferences; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreferenceChanges {
    /// See [`Preferences::theme`].
    pub theme: Option<String>,
    /// See [`Preferences::page_size`].
    pub page_size: Option<i64>,
    /// See [`Preferences::show_images`].
    pub show_images: Option<bool>,
    /// See [`Preferences::mark_read_on_open`].
    pub mark_read_on_open: Option<bool>,
    /// See [`Preferences::mark_read_on_scroll`].
    pub mark_read_on_scroll: Option<bool>,
    /// See [`Preferences::default_view`].
    pub default_view: Option<String>,
    /// See [`Preferences::summarize`].
    pub summarize: Option<String>,
    /// See [`Preferences::language`].
    pub language: Option<String>,
    /// See [`Preferences::collapse_duplicates`].
    pub collapse_duplicates: Option<bool>,
    /// See [`Preferences::duplicates_read`].
    pub duplicates_read: Option<String>,
}

impl PreferenceChanges {
    /// Checks every given value, so that a bad one changes nothing.
    pub fn validate(&self) -> Result<()> {
        if let Some(theme) = &self.theme
            && !THEMES.contains(&theme.as_str())
        {
            return Err(StoreError::Invalid(format!(
                "the field theme must be light, dark or auto, not {theme:?}"
            )));
        }
        if let Some(size) = self.page_size
            && !(MIN_PREFERRED_PAGE_SIZE..=MAX_PREFERRED_PAGE_SIZE).contains(&size)
        {
            return Err(StoreError::Invalid(format!(
                "the field page_size must be {MIN_PREFERRED_PAGE_SIZE} to {MAX_PREFERRED_PAGE_SIZE}, not {size}"
            )));
        }
        if let Some(view) = &self.default_view
            && !DEFAULT_VIEWS.contains(&view.as_str())
        {
            return Err(StoreError::Invalid(format!(
                "the field default_view must be all, unread or starred, not {view:?}"
            )));
        }
        if let Some(mode) = &self.summarize
            && !SUMMARIZE_MODES.contains(&mode.as_str())
        {
            return Err(StoreError::Invalid(format!(
                "the field summarize must be on_demand, all or chosen, not {mode:?}"
            )));
        }
        if let Some(mode) = &self.duplicates_read
            && !DUPLICATE_READ_MODES.contains(&mode.as_str())
        {
            return Err(StoreError::Invalid(format!(
                "the field duplicates_read must be cluster or copy, not {mode:?}"
            )));
        }
        if let Some(language) = &self.language
            && (language.is_empty()
                || language.len() > MAX_LANGUAGE_LEN
                || !language
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-'))
        {
            return Err(StoreError::Invalid(format!(
                "the field language must be auto or a language code, not {language:?}"
            )));
        }
        Ok(())
    }
}

impl Store {
    /// The user's preferences (the defaults when none were stored).
    pub async fn preferences(&self, user_id: i64) -> Result<Preferences> {
        type Row = (
            String,
            i64,
            bool,
            bool,
            String,
            String,
            String,
            i64,
            bool,
            bool,
            String,
        );
        let row: Option<Row> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT theme, page_size, show_images, mark_read_on_open, default_view, summarize,
                        language, updated_at, mark_read_on_scroll, collapse_duplicates,
                        duplicates_read
                 FROM user_preferences WHERE user_id = $1",
            )
            .bind(user_id)
            .fetch_optional(db)
            .await?
        });
        Ok(row.map_or_else(
            Preferences::default,
            |(
                theme,
                page_size,
                show_images,
                mark_read_on_open,
                default_view,
                summarize,
                language,
                updated_at,
                mark_read_on_scroll,
                collapse_duplicates,
                duplicates_read,
            )| {
                Preferences {
                    theme,
                    page_size,
                    show_images,
                    mark_read_on_open,
                    mark_read_on_scroll,
                    default_view,
                    summarize,
                    language,
                    collapse_duplicates,
                    duplicates_read,
                    updated_at,
                }
            },
        ))
    }

    /// Changes the user's preferences and returns them.
    pub async fn update_preferences(
        &self,
        user_id: i64,
        changes: &PreferenceChanges,
    ) -> Result<Preferences> {
        changes.validate()?;
        let current = self.preferences(user_id).await?;
        let now = unix_now();
        with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO user_preferences
                    (user_id, theme, page_size, show_images, mark_read_on_open, default_view,
                     updated_at, summarize, language, mark_read_on_scroll,
                     collapse_duplicates, duplicates_read)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                 ON CONFLICT (user_id) DO UPDATE SET theme = $2, page_size = $3,
                    show_images = $4, mark_read_on_open = $5, default_view = $6,
                    updated_at = $7, summarize = $8, language = $9,
                    mark_read_on_scroll = $10, collapse_duplicates = $11,
                    duplicates_read = $12",
            )
            .bind(user_id)
            .bind(changes.theme.as_ref().unwrap_or(&current.theme))
            .bind(changes.page_size.unwrap_or(current.page_size))
            .bind(changes.show_images.unwrap_or(current.show_images))
            .bind(
                changes
                    .mark_read_on_open
                    .unwrap_or(current.mark_read_on_open),
            )
            .bind(
                changes
                    .default_view
                    .as_ref()
                    .unwrap_or(&current.default_view),
            )
            .bind(now)
            .bind(changes.summarize.as_ref().unwrap_or(&current.summarize))
            .bind(changes.language.as_ref().unwrap_or(&current.language))
            .bind(
                changes
                    .mark_read_on_scroll
                    .unwrap_or(current.mark_read_on_scroll),
            )
            .bind(
                changes
                    .collapse_duplicates
                    .unwrap_or(current.collapse_duplicates),
            )
            .bind(
                changes
                    .duplicates_read
                    .as_ref()
                    .unwrap_or(&current.duplicates_read),
            )
            .execute(db)
            .await
            .map_err(|e| {
                // A user deleted meanwhile breaks the foreign key.
                if matches!(&e, sqlx::Error::Database(d) if d.is_foreign_key_violation()) {
                    StoreError::NotFound("user")
                } else {
                    StoreError::Database(e)
                }
            })?;
        });
        self.preferences(user_id).await
    }
}
