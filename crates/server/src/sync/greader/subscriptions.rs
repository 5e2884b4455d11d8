//! Subscriptions: `subscription/list`, `subscription/edit` (subscribe, unsubscribe, rename,
//! move between labels), `subscription/quickadd`, and OPML export and import.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tidings_store::{Subscription, SubscriptionChanges, SyncSubscription};

use super::ids::{FEED_PREFIX, LABEL_PREFIX, feed_stream_id, label_name};
use super::items::push_decimal;
use super::protocol::{GReaderError, Request, Result, conditional_json_body, ok, text};
use super::streams::Catalog;
use crate::base::state::AppState;
use crate::base::subscriptions::Subscribe;

/// `subscription/list`: one statement, written straight into the body.
pub(super) async fn subscription_list(request: &Request<'_>) -> Result<Response> {
    let subscriptions = request
        .state
        .store
        .sync_subscriptions(request.user_id())
        .await?;
    Ok(conditional_json_body(
        request.headers,
        subscription_list_body(subscriptions.iter()),
    ))
}

/// The answer of `subscription/list`, written byte by byte: `{"subscriptions":[{"categories":
/// [{"id":"user/-/label/…","label":"…"}],"firstitemmsec":"…","htmlUrl":"…","id":"feed/…",
/// "sortid":"…","title":"…","url":"…"},…]}`. The fields are in alphabetical order, the order
/// the JSON maps it was built with before wrote them in, so that the bytes stay the same,
/// as the unit test checks against the serializer. No `iconUrl`:
/// an empty one switched off Read You's and Capy Reader's own icon lookup, and tidings
/// serves icons only to signed-in callers (apps load icons without credentials), so it has
/// no URL to give. Written this way, an app's list of 500 subscriptions costs no allocation
/// a subscription (the serializer's took seven).
fn subscription_list_body<'a>(
    subscriptions: impl ExactSizeIterator<Item = SyncSubscription<'a>>,
) -> Vec<u8> {
    // About 300 bytes a subscription.
    let mut body = Vec::with_capacity(64 + 320 * subscriptions.len());
    body.extend_from_slice(b"{\"subscriptions\":[");
    for (n, s) in subscriptions.enumerate() {
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(b"{\"categories\":[{\"id\":\"");
        body.extend_from_slice(LABEL_PREFIX.as_bytes());
        push_json_text(&mut body, s.group_name, false);
        body.extend_from_slice(b"\",\"label\":\"");
        push_json_text(&mut body, s.group_name, false);
        body.extend_from_slice(b"\"}],\"firstitemmsec\":\"");
        push_decimal(&mut body, s.created_at.saturating_mul(1000));
        body.extend_from_slice(b"\",\"htmlUrl\":\"");
        push_json_text(&mut body, s.site_url.unwrap_or_default(), false);
        body.extend_from_slice(b"\",\"id\":\"");
        body.extend_from_slice(FEED_PREFIX.as_bytes());
        push_decimal(&mut body, s.feed_id);
        body.extend_from_slice(b"\",\"sortid\":\"");
        push_sortid(&mut body, s.id);
        body.extend_from_slice(b"\",\"title\":\"");
        push_json_text(&mut body, s.title(), true);
        body.extend_from_slice(b"\",\"url\":\"");
        push_json_text(&mut body, s.feed_url, false);
        body.extend_from_slice(b"\"}");
    }
    body.extend_from_slice(b"]}");
    body
}

/// Appends a subscription's `sortid`: its id in upper-case hex digits, at least eight (as
/// `format!("{:08X}")` writes it, a negative number as its 64 bits), without the formatting
/// machinery, which a list of 500 subscriptions went through 500 times.
fn push_sortid(out: &mut Vec<u8>, id: i64) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut digits = [b'0'; 16];
    // The same bits, read as unsigned: what `{:X}` writes for a negative number.
    let mut rest = id as u64;
    let mut at = digits.len();
    while rest != 0 {
        at -= 1;
        digits[at] = HEX[(rest & 0xf) as usize];
        rest >>= 4;
    }
    out.extend_from_slice(&digits[at.min(digits.len() - 8)..]);
}

/// Appends `text` as the inside of a JSON string, escaped as serde_json escapes it (`"`,
/// `\`, and control characters, with the short forms it uses); with `for_apps`, as
/// [`crate::sync::shared::title_for_apps`] shows titles (`&`, `<`, `>` as their full-width forms).
fn push_json_text(out: &mut Vec<u8>, text: &str, for_apps: bool) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    let mut plain_from = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            b'&' if for_apps => "＆".as_bytes(),
            b'<' if for_apps => "＜".as_bytes(),
            b'>' if for_apps => "＞".as_bytes(),
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain_from..at]);
        out.extend_from_slice(escaped);
        plain_from = at + 1;
    }
    out.extend_from_slice(&bytes[plain_from..]);
}

/// The group a label names, created when missing.
async fn group_for_label(state: &AppState, user_id: i64, label: &str) -> Result<i64> {
    let name = label
        .trim()
        .strip_prefix("user/")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(_, rest)| rest.strip_prefix("label/"))
        .unwrap_or(label.trim());
    if let Some(group) = state
        .store
        .list_groups(user_id)
        .await?
        .into_iter()
        .find(|g| g.name == name)
    {
        return Ok(group.id);
    }
    Ok(state.store.create_group(user_id, name).await?.id)
}

/// Subscribes through the REST API's checks (rate limit, subscription limit, address
/// policy, discovery), or finds the subscription the URL already is.
async fn subscribe(
    request: &Request<'_>,
    url: &str,
    group_id: Option<i64>,
    title: Option<String>,
) -> Result<Subscription> {
    let url = url.trim();
    let url = url.strip_prefix(FEED_PREFIX).unwrap_or(url);
    let catalog = Catalog::load(request.state, request.user_id()).await?;
    if let Ok(existing) = catalog.subscription_of(url) {
        return Ok(existing.clone());
    }
    Ok(crate::base::subscriptions::subscribe_checked(
        request.state,
        request.user_id(),
        Subscribe {
            url: url.to_string(),
            group_id,
            title,
            interval_minutes: None,
            full_text: None,
        },
    )
    .await?
    .0)
}

/// `subscription/edit`: `ac=subscribe|unsubscribe|edit`, `s` (repeatable), `t` (title), `a`
/// (label to move to), `r` (label to leave).
pub(super) async fn subscription_edit(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let streams = params.all("s");
    if streams.is_empty() {
        return Err(GReaderError::bad_request(
            "Missing s: the feed/<id> stream id of the subscription.",
        ));
    }
    let title = params.get("t").map(str::trim).map(str::to_string);
    let add = params.get("a").filter(|a| !a.trim().is_empty());
    let remove = params.get("r").filter(|r| !r.trim().is_empty());
    match params.get("ac").unwrap_or("edit") {
        "subscribe" => {
            let group_id = match add {
                Some(label) => Some(group_for_label(state, user_id, label).await?),
                None => None,
            };
            for stream in streams {
                let subscription = subscribe(
                    request,
                    stream,
                    group_id,
                    title.clone().filter(|t| !t.is_empty()),
                )
                .await?;
                // Already subscribed: the label and title still apply.
                let changes = SubscriptionChanges {
                    title: title.clone().filter(|t| !t.is_empty()).map(Some),
                    group_id,
                    ..SubscriptionChanges::default()
                };
                state
                    .store
                    .update_subscription(user_id, subscription.id, &changes)
                    .await?;
            }
        }
        "unsubscribe" => {
            let catalog = Catalog::load(state, user_id).await?;
            for stream in streams {
                let id = catalog.subscription_of(stream)?.id;
                state.store.unsubscribe(user_id, id).await?;
            }
        }
        "edit" => {
            let catalog = Catalog::load(state, user_id).await?;
            for stream in streams {
                let subscription = catalog.subscription_of(stream)?;
                let group_id = match (add, remove) {
                    (Some(label), _) => Some(group_for_label(state, user_id, label).await?),
                    // Leaving its group without joining another: back to the default group.
                    (None, Some(label))
                        if catalog.group_name(subscription.group_id) == label_name(label) =>
                    {
                        Some(state.store.default_group_id(user_id).await?)
                    }
                    _ => None,
                };
                let changes = SubscriptionChanges {
                    // An empty title goes back to the feed's own.
                    title: title.clone().map(|t| Some(t).filter(|t| !t.is_empty())),
                    group_id,
                    ..SubscriptionChanges::default()
                };
                state
                    .store
                    .update_subscription(user_id, subscription.id, &changes)
                    .await?;
            }
        }
        other => {
            return Err(GReaderError::bad_request(format!(
                "Invalid ac={other:?}: use subscribe, unsubscribe or edit."
            )));
        }
    }
    Ok(ok())
}

/// `subscription/quickadd`: `quickadd` = a feed or page URL. A feed that cannot be added is
/// answered `numResults: 0` with the reason, as Google Reader did; too many requests is a 429.
pub(super) async fn quickadd(request: &Request<'_>) -> Result<Response> {
    let Some(url) = request
        .params
        .get("quickadd")
        .filter(|u| !u.trim().is_empty())
    else {
        return Err(GReaderError::bad_request(
            "Missing quickadd: the address of a feed or of a site.",
        ));
    };
    match subscribe(request, url, None, None).await {
        Ok(subscription) => Ok(axum::Json(json!({
            "query": url,
            "numResults": 1,
            "streamId": feed_stream_id(subscription.feed_id),
            "streamName": Catalog::title(&subscription),
        }))
        .into_response()),
        Err(error) if error.status == StatusCode::TOO_MANY_REQUESTS => Err(error),
        Err(error) if error.status.is_server_error() => Err(error),
        Err(error) => Ok(axum::Json(json!({
            "query": url,
            "numResults": 0,
            "error": error.message,
        }))
        .into_response()),
    }
}

/// `subscription/export`: the subscriptions as OPML.
pub(super) async fn export(request: &Request<'_>) -> Result<Response> {
    let document = crate::sync::shared::export_opml(request.state, &request.auth.user).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
        document,
    )
        .into_response())
}

/// `subscription/import`: an OPML body; new feeds are fetched by the worker.
pub(super) async fn import(request: &Request<'_>) -> Result<Response> {
    let report = crate::sync::shared::import_opml(
        request.state,
        request.user_id(),
        request.body,
        "Google Reader API import",
    )
    .await
    .map_err(|error| match error {
        crate::sync::shared::ImportRefusal::Opml(reason) => {
            GReaderError::bad_request(format!("The body is not usable OPML: {reason}"))
        }
        crate::sync::shared::ImportRefusal::Store(store) => store.into(),
    })?;
    Ok(text(format!(
        "OK: {} added, {} skipped, {} refused, {} failed",
        report.added, report.skipped, report.refused, report.failed
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::greader::ids::label_stream_id;
    use crate::sync::shared::title_for_apps;

    /// `subscription/list` as the serializer wrote it before [`subscription_list_body`].
    #[derive(serde::Serialize)]
    struct SubscriptionList {
        subscriptions: Vec<SubscriptionEntry>,
    }

    #[derive(serde::Serialize)]
    struct SubscriptionEntry {
        categories: [Category; 1],
        firstitemmsec: String,
        #[serde(rename = "htmlUrl")]
        html_url: String,
        id: String,
        sortid: String,
        title: String,
        url: String,
    }

    #[derive(serde::Serialize)]
    struct Category {
        id: String,
        label: String,
    }

    fn serialized(subscriptions: &[SyncSubscription<'_>]) -> Vec<u8> {
        let list = SubscriptionList {
            subscriptions: subscriptions
                .iter()
                .map(|s| SubscriptionEntry {
                    categories: [Category {
                        id: label_stream_id(s.group_name),
                        label: s.group_name.to_string(),
                    }],
                    firstitemmsec: (s.created_at.saturating_mul(1000)).to_string(),
                    html_url: s.site_url.unwrap_or_default().to_string(),
                    id: feed_stream_id(s.feed_id),
                    sortid: format!("{:08X}", s.id),
                    title: title_for_apps(s.custom_title.or(s.feed_title).unwrap_or(s.feed_url)),
                    url: s.feed_url.to_string(),
                })
                .collect(),
        };
        serde_json::to_vec(&list).unwrap()
    }

    #[test]
    fn the_list_is_written_as_the_serializer_wrote_it() {
        let awkward = "Tom & Jerry <b>\"quoted\"</b> back\\slash \n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f} \
                       é ✓ 🙂 ＆ /slash/";
        let ids = [1, 2, 3_000_000_000, 4, -5, 0, 1 << 40, i64::MAX];
        let urls: Vec<String> = ids
            .iter()
            .map(|id| format!("https://a.example/feed/?a=1&b=\"{id}\""))
            .collect();
        let subscription = |n: usize, custom: Option<&'static str>, feed: Option<&'static str>| {
            let id = ids[n];
            SyncSubscription {
                id,
                feed_id: id.wrapping_mul(7),
                group_id: 1,
                group_name: awkward,
                custom_title: custom,
                feed_title: feed,
                feed_url: &urls[n],
                site_url: (id % 2 == 0).then_some(awkward),
                created_at: 1_700_000_000 + id % 1000,
            }
        };
        let lists = [
            vec![],
            vec![subscription(0, None, None)],
            vec![
                subscription(1, Some(awkward), Some("feed")),
                subscription(2, None, Some(awkward)),
                subscription(3, None, None),
                subscription(4, Some(""), None),
                subscription(5, None, Some("zero")),
                subscription(6, Some("wide"), None),
                subscription(7, None, None),
            ],
        ];
        for list in lists {
            let ours = subscription_list_body(list.iter().copied());
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(serialized(&list)).unwrap()
            );
        }
    }
}
