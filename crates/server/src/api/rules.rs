//! Rules (issue 33): what a user decided once to hide, keep, mark read, star, label, be told
//! about or have summarized. Saved rules act on items as they arrive; a preview shows what a
//! rule would catch among the user's recent items; applying a rule acts once on what is there,
//! with an undo. Matching is `tidings-rules`' and runs in the store.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_store::{RegexSpec, RuleInput, RuleScope, RuleSpec, StoredRule};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path};
use crate::base::items::{ItemSummaryView, proxy_item};
use crate::base::state::AppState;
use crate::base::time::time;

/// The highest position a rule may be given.
const MAX_POSITION: i64 = 1_000_000;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_rules, create_rule))
        .routes(routes!(preview_rule))
        .routes(routes!(undo_application))
        .routes(routes!(get_rule, update_rule, delete_rule))
        .routes(routes!(apply_rule))
}

/// Which items a rule looks at: one feed, one group, or (neither) everything.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeBody {
    /// Only this feed's items (a feed the user follows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feed_id: Option<i64>,
    /// Only the items of the feeds in this group of the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<i64>,
}

/// A regular expression on one field.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexBody {
    /// `title`, `content`, `author`, `url` or `tag` (one of the item's tags or its feed's
    /// categories); or several joined by commas (`url,title,author,tag`), any of which the
    /// pattern may match.
    #[schema(pattern = "^(title|content|author|url|tag)(,(title|content|author|url|tag))*$")]
    pub field: String,
    /// The pattern, in Rust's regex syntax (no look-around or back-references: it runs in time
    /// linear in the text, so no pattern can stall a fetch); at most 1,000 characters.
    pub pattern: String,
}

/// A rule to save or preview. Every condition given must hold; at least one is needed.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleBody {
    /// Its name (1 to 100 characters); the query when not given.
    #[serde(default)]
    pub name: Option<String>,
    /// Whether it acts on arriving items (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Its place among the user's rules (smaller first); after the others when not given.
    #[serde(default)]
    pub position: Option<i64>,
    /// Which items it looks at; everything when not given.
    #[serde(default)]
    pub scope: Option<ScopeBody>,
    /// The search language (words, `"phrases"`, `-excluded`, every script), with fields:
    /// `title:`, `content:`, `author:`, `url:`, `tag:`, `category:`, `enclosure:` (a type's
    /// start, or `any`), `popularity:` (`>=100`, `<5`). In a change, `null` removes it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<String>)]
    pub query: Option<Option<String>>,
    /// A regular expression on a field. In a change, `null` removes it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<RegexBody>)]
    pub regex: Option<Option<RegexBody>>,
    /// Items published more than this many days ago (1 to 36,500). In a change, `null`
    /// removes it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<i64>)]
    pub older_than_days: Option<Option<i64>>,
    /// What it does: `hide`, `keep_only` (hide what it does not catch in its scope), `read`,
    /// `star`, `label:NAME`, `notify:CHANNEL_ID`, `summarize`.
    #[serde(default)]
    pub actions: Option<Vec<String>>,
}

/// A saved rule.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleView {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Whether it acts on arriving items.
    pub enabled: bool,
    /// Its place among the user's rules.
    pub position: i64,
    /// Which items it looks at.
    pub scope: ScopeBody,
    /// Its search-language condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Its regular expression condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegexBody>,
    /// Its age condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub older_than_days: Option<i64>,
    /// What it does.
    pub actions: Vec<String>,
    /// When it was made.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
}

impl From<StoredRule> for RuleView {
    fn from(rule: StoredRule) -> RuleView {
        let RuleSpec {
            scope,
            query,
            regex,
            older_than_days,
            actions,
        } = rule.spec;
        RuleView {
            id: rule.id,
            name: rule.name,
            enabled: rule.enabled,
            position: rule.position,
            scope: ScopeBody {
                feed_id: scope.feed_id,
                group_id: scope.group_id,
            },
            query,
            regex: regex.map(|r| RegexBody {
                field: r.field,
                pattern: r.pattern,
            }),
            older_than_days,
            actions,
            created_at: time(rule.created_at),
            updated_at: time(rule.updated_at),
        }
    }
}

/// The user's rules.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleList {
    /// In order.
    pub rules: Vec<RuleView>,
}

/// A rule, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleEnvelope {
    /// The rule.
    pub rule: RuleView,
}

/// What a rule would catch.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulePreviewView {
    /// How many of the items looked at it catches (for `keep_only`: would hide).
    pub matched: usize,
    /// How many items were looked at: the user's 1,000 most recent (hidden ones left out).
    pub looked_at: usize,
    /// The newest 50 of them.
    pub items: Vec<ItemSummaryView>,
}

/// How to undo an application: send it unchanged to `POST /rules/apply/undo`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleUndo {
    /// The application's id (kept a week).
    pub application_id: i64,
}

/// What applying a rule once changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleApplied {
    /// Items whose state or labels changed.
    pub changed: u64,
    /// How to undo it.
    pub undo: RuleUndo,
}

/// An undo of an application.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoBody {
    /// The `undo` of the application, unchanged.
    pub undo: RuleUndo,
}

/// What an undo restored.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleUndone {
    /// Items put back as they were.
    pub restored: u64,
}

/// A field that was sent, `null` or not: absent stays `None` (through `default`), so that a
/// change can tell "remove it" (`Some(None)`) from "leave it" (`None`).
fn given<'de, T, D>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The spec of a body: its scope, conditions and actions.
fn spec_of(body: &RuleBody) -> RuleSpec {
    let scope = body.scope.unwrap_or_default();
    RuleSpec {
        scope: RuleScope {
            feed_id: scope.feed_id,
            group_id: scope.group_id,
        },
        query: body.query.clone().flatten(),
        regex: body.regex.clone().flatten().map(|r| RegexSpec {
            field: r.field,
            pattern: r.pattern,
        }),
        older_than_days: body.older_than_days.flatten(),
        actions: body.actions.clone().unwrap_or_default(),
    }
}

/// A new rule's input from its body.
fn input_of(body: &RuleBody) -> ApiResult<RuleInput> {
    check_position(body.position)?;
    // A long query names the rule by its start (a name is at most 100 characters).
    let name = body
        .name
        .clone()
        .or_else(|| {
            body.query
                .clone()
                .flatten()
                .map(|q| q.chars().take(100).collect())
        })
        .unwrap_or_else(|| "Rule".to_string());
    Ok(RuleInput {
        name,
        enabled: body.enabled.unwrap_or(true),
        position: body.position,
        spec: spec_of(body),
    })
}

fn check_position(position: Option<i64>) -> ApiResult<()> {
    match position {
        Some(p) if !(0..=MAX_POSITION).contains(&p) => Err(ApiError::validation(
            format!("The position must be 0 to {MAX_POSITION}, not {p}."),
            "Give a position in that range.",
        )),
        _ => Ok(()),
    }
}

/// The signed-in user's rules, in order.
#[utoipa::path(get, path = "/rules", tag = "rules",
    responses((status = 200, body = RuleList), (status = 401, body = ErrorBody)))]
async fn list_rules(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<RuleList>> {
    let rules = state.store.list_rules(auth.user.id).await?;
    Ok(Json(RuleList {
        rules: rules.into_iter().map(Into::into).collect(),
    }))
}

/// Save a rule. It acts on items that arrive from now on; apply it to change existing ones.
#[utoipa::path(post, path = "/rules", tag = "rules", request_body = RuleBody,
    responses(
        (status = 201, body = RuleEnvelope),
        (status = 400, description = "A condition, action, scope or name is not valid", body = ErrorBody),
        (status = 404, description = "The scope's feed or group, or a channel, is not the user's", body = ErrorBody),
        (status = 429, description = "The user has 500 rules already", body = ErrorBody),
    ))]
async fn create_rule(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<RuleBody>,
) -> ApiResult<(StatusCode, Json<RuleEnvelope>)> {
    let rule = state
        .store
        .create_rule(auth.user.id, &input_of(&body)?)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(RuleEnvelope { rule: rule.into() }),
    ))
}

/// One rule.
#[utoipa::path(get, path = "/rules/{id}", tag = "rules",
    params(("id" = i64, Path, description = "The rule's id")),
    responses((status = 200, body = RuleEnvelope), (status = 404, body = ErrorBody)))]
async fn get_rule(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<RuleEnvelope>> {
    let rule = state.store.get_rule(auth.user.id, id).await?;
    Ok(Json(RuleEnvelope { rule: rule.into() }))
}

/// Change a rule: the fields given replace its own (`scope` and `regex` as a whole; send
/// `"scope": {}` for everything, `null` to remove a condition). Existing items are not
/// changed.
#[utoipa::path(patch, path = "/rules/{id}", tag = "rules", request_body = RuleBody,
    params(("id" = i64, Path, description = "The rule's id")),
    responses(
        (status = 200, body = RuleEnvelope),
        (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn update_rule(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Json(body): Json<RuleBody>,
) -> ApiResult<Json<RuleEnvelope>> {
    check_position(body.position)?;
    let current = state.store.get_rule(auth.user.id, id).await?;
    let spec = current.spec;
    let merged = RuleInput {
        name: body.name.clone().unwrap_or(current.name),
        enabled: body.enabled.unwrap_or(current.enabled),
        position: Some(body.position.unwrap_or(current.position)),
        spec: RuleSpec {
            scope: body.scope.map_or(spec.scope, |s| RuleScope {
                feed_id: s.feed_id,
                group_id: s.group_id,
            }),
            query: body.query.clone().unwrap_or(spec.query),
            regex: match &body.regex {
                Some(r) => r.clone().map(|r| RegexSpec {
                    field: r.field,
                    pattern: r.pattern,
                }),
                None => spec.regex,
            },
            older_than_days: body.older_than_days.unwrap_or(spec.older_than_days),
            actions: body.actions.clone().unwrap_or(spec.actions),
        },
    };
    let rule = state.store.update_rule(auth.user.id, id, &merged).await?;
    Ok(Json(RuleEnvelope { rule: rule.into() }))
}

/// Delete a rule; what it already did stays done.
#[utoipa::path(delete, path = "/rules/{id}", tag = "rules",
    params(("id" = i64, Path, description = "The rule's id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn delete_rule(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.delete_rule(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a rule (not saved; its name and position are ignored) would catch among the user's
/// 1,000 most recent items. Changes nothing.
#[utoipa::path(post, path = "/rules/preview", tag = "rules", request_body = RuleBody,
    responses(
        (status = 200, body = RulePreviewView),
        (status = 400, body = ErrorBody),
    ))]
async fn preview_rule(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<RuleBody>,
) -> ApiResult<Json<RulePreviewView>> {
    let preview = state
        .store
        .preview_rule(auth.user.id, &spec_of(&body))
        .await?;
    let items = preview
        .items
        .into_iter()
        .map(|item| {
            let mut view: ItemSummaryView = item.into();
            proxy_item(&state, &mut view);
            view
        })
        .collect();
    Ok(Json(RulePreviewView {
        matched: preview.matched,
        looked_at: preview.looked_at,
        items,
    }))
}

/// Apply a saved rule once to the user's existing items in its scope (starred and hidden
/// ones left alone): hide, keep-only, read, star and label act; notifications and summaries
/// are for arriving items only. Answers what changed and how to undo it.
#[utoipa::path(post, path = "/rules/{id}/apply", tag = "rules",
    params(("id" = i64, Path, description = "The rule's id")),
    responses((status = 200, body = RuleApplied), (status = 404, body = ErrorBody)))]
async fn apply_rule(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<RuleApplied>> {
    let applied = state.store.apply_rule(auth.user.id, id).await?;
    Ok(Json(RuleApplied {
        changed: applied.changed,
        undo: RuleUndo {
            application_id: applied.undo_id,
        },
    }))
}

/// Undo an application of a rule: every item it changed goes back to its state before
/// (read, starred, hidden, labels, its place for sync apps). Each undo works once, for a week.
#[utoipa::path(post, path = "/rules/apply/undo", tag = "rules", request_body = UndoBody,
    responses((status = 200, body = RuleUndone), (status = 404, body = ErrorBody)))]
async fn undo_application(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<UndoBody>,
) -> ApiResult<Json<RuleUndone>> {
    let restored = state
        .store
        .undo_rule_application(auth.user.id, body.undo.application_id)
        .await?;
    Ok(Json(RuleUndone { restored }))
}
