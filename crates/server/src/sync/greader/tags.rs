//! Labels: `tag/list` (the starred state, the groups as folders, the item labels as tags),
//! `rename-tag` and `disable-tag`.

use axum::response::Response;
use serde_json::json;
use tidings_store::Group;

use super::ids::{STARRED, label_name, label_stream_id};
use super::protocol::{GReaderError, Request, Result, conditional_json, ok};
use super::streams::Catalog;

/// `tag/list`: the starred state, the groups (`folder`) and the item labels (`tag`).
pub(super) async fn tag_list(request: &Request<'_>) -> Result<Response> {
    let catalog = Catalog::load(request.state, request.user_id()).await?;
    let mut tags = vec![json!({"id": STARRED})];
    let mut groups: Vec<&Group> = catalog.groups.iter().collect();
    groups.sort_by(|a, b| a.position.cmp(&b.position).then(a.name.cmp(&b.name)));
    for group in groups {
        tags.push(
            json!({"id": label_stream_id(&group.name), "label": group.name, "type": "folder"}),
        );
    }
    for label in request
        .state
        .store
        .list_item_labels(request.user_id())
        .await?
    {
        if catalog.group_named(&label).is_none() {
            tags.push(json!({"id": label_stream_id(&label), "label": label, "type": "tag"}));
        }
    }
    Ok(conditional_json(request.headers, &json!({"tags": tags})))
}

/// `rename-tag`: `s` (or `t`) the label, `dest` the new one; renames the group and the item
/// label of that name.
pub(super) async fn rename_tag(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let from = label_name(params.get("s").or(params.get("t")).unwrap_or(""));
    let to = label_name(params.get("dest").unwrap_or(""));
    if from.is_empty() || to.is_empty() {
        return Err(GReaderError::bad_request(
            "Give s=user/-/label/<old name> and dest=user/-/label/<new name>.",
        ));
    }
    let catalog = Catalog::load(state, user_id).await?;
    let group = catalog.group_named(from).map(|g| g.id);
    if let Some(group_id) = group {
        state
            .store
            .update_group(user_id, group_id, Some(to), None)
            .await?;
    }
    let renamed = state.store.rename_item_label(user_id, from, to).await?;
    if group.is_none() && renamed == 0 {
        return Err(GReaderError::not_found(format!("No label named {from:?}.")));
    }
    Ok(ok())
}

/// `disable-tag`: `s` (or `t`) the label; deletes the group (its subscriptions go to the
/// default group) and takes the label off every item.
pub(super) async fn disable_tag(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let name = label_name(params.get("s").or(params.get("t")).unwrap_or(""));
    if name.is_empty() {
        return Err(GReaderError::bad_request(
            "Give s=user/-/label/<name> (or t=<name>).",
        ));
    }
    let catalog = Catalog::load(state, user_id).await?;
    let group = catalog.group_named(name).map(|g| g.id);
    if let Some(group_id) = group {
        state.store.delete_group(user_id, group_id).await?;
    }
    let removed = state.store.delete_item_label(user_id, name).await?;
    if group.is_none() && removed == 0 {
        return Err(GReaderError::not_found(format!("No label named {name:?}.")));
    }
    Ok(ok())
}
