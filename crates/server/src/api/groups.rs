//! Groups of subscriptions (F33): list, create, rename, order, delete (the group's
//! subscriptions move to the default group, which itself cannot be deleted).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_store::Group;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path};
use crate::base::state::AppState;

/// The highest position a group may be given; far more than anyone orders by hand.
pub(crate) const MAX_POSITION: i64 = 1_000_000;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups, create_group))
        .routes(routes!(update_group, delete_group))
}

/// A group as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupView {
    /// The group's id.
    pub id: i64,
    /// Its name, unique per user.
    pub name: String,
    /// Its place in the user's list (smaller first; the default group always comes first).
    pub position: i64,
    /// Whether it is the default group, where new and orphaned subscriptions go.
    pub is_default: bool,
}

impl From<Group> for GroupView {
    fn from(group: Group) -> GroupView {
        GroupView {
            id: group.id,
            name: group.name,
            position: group.position,
            is_default: group.is_default,
        }
    }
}

/// The groups.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupList {
    /// The default group first, then by position and name.
    pub groups: Vec<GroupView>,
}

/// A group, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupEnvelope {
    /// The group.
    pub group: GroupView,
}

/// A new group.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateGroup {
    /// Its name (1 to 100 characters, unique per user).
    pub name: String,
}

/// Changes to a group; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateGroup {
    /// A new name.
    pub name: Option<String>,
    /// A new position (0 to 1,000,000).
    pub position: Option<i64>,
}

/// The signed-in user's groups.
#[utoipa::path(get, path = "/groups", tag = "groups",
    responses((status = 200, body = GroupList), (status = 401, body = ErrorBody)))]
async fn list_groups(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<GroupList>> {
    let groups = state.store.list_groups(auth.user.id).await?;
    Ok(Json(GroupList {
        groups: groups.into_iter().map(Into::into).collect(),
    }))
}

/// Create a group; it goes to the end of the list.
#[utoipa::path(post, path = "/groups", tag = "groups", request_body = CreateGroup,
    responses(
        (status = 201, body = GroupEnvelope),
        (status = 409, description = "A group of that name exists", body = ErrorBody),
        (status = 400, description = "Empty or too long a name", body = ErrorBody),
    ))]
async fn create_group(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<CreateGroup>,
) -> ApiResult<(StatusCode, Json<GroupEnvelope>)> {
    let group = state.store.create_group(auth.user.id, &body.name).await?;
    Ok((
        StatusCode::CREATED,
        Json(GroupEnvelope {
            group: group.into(),
        }),
    ))
}

/// Rename a group and/or move it in the list.
#[utoipa::path(patch, path = "/groups/{id}", tag = "groups", request_body = UpdateGroup,
    params(("id" = i64, Path, description = "The group's id")),
    responses(
        (status = 200, body = GroupEnvelope),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A group of that name exists", body = ErrorBody),
        (status = 400, body = ErrorBody),
    ))]
async fn update_group(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Json(body): Json<UpdateGroup>,
) -> ApiResult<Json<GroupEnvelope>> {
    if body.name.is_none() && body.position.is_none() {
        return Err(ApiError::validation(
            "Nothing to change: give a name or a position.",
            "Send {\"name\": …} and/or {\"position\": …}.",
        ));
    }
    if let Some(position) = body.position
        && !(0..=MAX_POSITION).contains(&position)
    {
        return Err(ApiError::validation(
            format!("The position must be 0 to {MAX_POSITION}, not {position}."),
            "Give a position in that range.",
        ));
    }
    let group = state
        .store
        .update_group(auth.user.id, id, body.name.as_deref(), body.position)
        .await?;
    Ok(Json(GroupEnvelope {
        group: group.into(),
    }))
}

/// Delete a group; its subscriptions move to the default group. The default group cannot be
/// deleted (400).
#[utoipa::path(delete, path = "/groups/{id}", tag = "groups",
    params(("id" = i64, Path, description = "The group's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, body = ErrorBody),
        (status = 400, description = "The default group", body = ErrorBody),
    ))]
async fn delete_group(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.delete_group(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
