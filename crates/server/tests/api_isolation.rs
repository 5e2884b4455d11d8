//! Isolation over the whole API surface (F24): for every documented endpoint that takes an
//! object id, a second user gets 404 for the first user's objects, and the objects are left
//! as they were. The endpoints come from the OpenAPI document, so a new `{id}` endpoint fails
//! this test until it is added to the table below.

use tidings_testkit::on_both_engines;

use crate::support::{TestApp, call};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::{NewItem, NewSubscription, unix_now};

on_both_engines!(a_second_user_gets_404_for_every_object_of_the_first, |db| {
    // Mail on, so that the owner can have a receiving address (issue 36).
    let app = TestApp::start_with(db, true, |c| c.mail.domain = Some("mail.example".into())).await;
    let owner_id = app.user("owner", false).await;
    app.user("intruder", false).await;
    let owner = app.signed_in("owner").await;
    let _second_session = app.signed_in("owner").await;
    let intruder = app.signed_in("intruder").await;

    // The owner's objects: a subscription with items, a group, a bookmark, an API key, a
    // session.
    let subscription = app
        .store
        .subscribe(
            owner_id,
            &NewSubscription {
                feed_url: "https://isolation.example/feed".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let now = unix_now();
    let items: Vec<NewItem> = (0..3)
        .map(|i| NewItem {
            guid: Some(format!("g{i}")),
            title: Some(format!("Private item {i}")),
            published: Some(now - i),
            ..Default::default()
        })
        .collect();
    app.store
        .upsert_items(subscription.feed_id, &items, now)
        .await
        .unwrap();
    let item_id = app.store.feed_item_ids(subscription.feed_id).await.unwrap()[0];
    let (_, _, group) = call(
        &owner,
        Method::POST,
        &app.url("/groups"),
        Some(json!({"name": "Mine"})),
    )
    .await;
    let group_id = group["group"]["id"].as_i64().unwrap();
    let (status, _, bookmark) = call(
        &owner,
        Method::POST,
        &app.url("/bookmarks"),
        Some(json!({"item_id": item_id})),
    )
    .await;
    assert!(status.is_success(), "{bookmark}");
    let bookmark_id = bookmark["bookmark"]["id"].as_i64().unwrap();
    let (_, _, key) = call(
        &owner,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "k"})),
    )
    .await;
    let key_id = key["api_key"]["id"].as_i64().unwrap();
    let (_, _, sessions) = call(&owner, Method::GET, &app.url("/me/sessions"), None).await;
    let session_id = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == false)
        .unwrap()["id"]
        .as_i64()
        .unwrap();

    let (identity_id, passkey_id, webhook_id, import_id, history_import_id) =
        phase_the_owners_other_objects(&app, &owner, owner_id).await;
    let (status, _, rule) = call(
        &owner,
        Method::POST,
        &app.url("/rules"),
        Some(json!({"query": "mine", "actions": ["read"]})),
    )
    .await;
    assert!(status.is_success(), "{rule}");
    let rule_id = rule["rule"]["id"].as_i64().unwrap();

    // Which id each `{id}` path takes, and what the intruder must get.
    let (status, _, address) = call(
        &owner,
        Method::POST,
        &app.url("/mail-addresses"),
        Some(serde_json::json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{address}");
    let address_id = address["id"].as_i64().unwrap();
    let table: Vec<(&str, i64, StatusCode)> = vec![
        (
            "/api/v1/subscriptions/",
            subscription.id,
            StatusCode::NOT_FOUND,
        ),
        ("/api/v1/items/", item_id, StatusCode::NOT_FOUND),
        ("/api/v1/groups/", group_id, StatusCode::NOT_FOUND),
        ("/api/v1/bookmarks/", bookmark_id, StatusCode::NOT_FOUND),
        ("/api/v1/api-keys/", key_id, StatusCode::NOT_FOUND),
        ("/api/v1/me/sessions/", session_id, StatusCode::NOT_FOUND),
        ("/api/v1/me/identities/", identity_id, StatusCode::NOT_FOUND),
        ("/api/v1/me/passkeys/", passkey_id, StatusCode::NOT_FOUND),
        ("/api/v1/webhooks/", webhook_id, StatusCode::NOT_FOUND),
        ("/api/v1/opml/imports/", import_id, StatusCode::NOT_FOUND),
        ("/api/v1/imports/", history_import_id, StatusCode::NOT_FOUND),
        ("/api/v1/rules/", rule_id, StatusCode::NOT_FOUND),
        ("/api/v1/mail-addresses/", address_id, StatusCode::NOT_FOUND),
        // Users and feeds' operator settings are administrators' objects: an ordinary user
        // is refused outright.
        ("/api/v1/users/", owner_id, StatusCode::FORBIDDEN),
        (
            "/api/v1/admin/feeds/",
            subscription.feed_id,
            StatusCode::FORBIDDEN,
        ),
    ];
    let (_, _, document) = call(&owner, Method::GET, &app.url("/openapi.json"), None).await;
    let mut checked = 0;
    for (path, operations) in document["paths"].as_object().unwrap() {
        if !path.contains("{id}") {
            continue;
        }
        let (_, id, expected) = table
            .iter()
            .find(|(prefix, _, _)| path.starts_with(prefix))
            .unwrap_or_else(|| panic!("{path} takes an id: add it to the isolation table"));
        let url = format!("{}{}", app.base, path.replace("{id}", &id.to_string()));
        for method in operations.as_object().unwrap().keys() {
            let method: Method = method.to_uppercase().parse().unwrap();
            let (status, _, answer) =
                call(&intruder, method.clone(), &url, valid_body(path, &method)).await;
            assert_eq!(status, *expected, "{method} {path}: {answer}");
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} operations checked");

    phase_ids_in_queries_and_bodies(&app, &intruder, item_id, group_id, subscription.feed_id).await;
    phase_nothing_of_the_owners_changed(
        &app,
        &owner,
        owner_id,
        (item_id, subscription.id, bookmark_id),
    )
    .await;
});

/// The owner's other objects: a linked sign-in identity, a passkey, a notification channel,
/// an OPML import and an import from another reader. Returns their ids in that order.
async fn phase_the_owners_other_objects(
    app: &TestApp,
    owner: &reqwest::Client,
    owner_id: i64,
) -> (i64, i64, i64, i64, i64) {
    // A linked sign-in identity, a passkey and a notification channel.
    let identity_id = app
        .store
        .link_identity(owner_id, "https://id.example", "owner-subject", None)
        .await
        .unwrap()
        .id;
    let passkey_id = app
        .store
        .add_passkey(owner_id, "owner-credential", b"cose key", 0, "phone")
        .await
        .unwrap()
        .id;
    let (status, _, webhook) = call(
        owner,
        Method::POST,
        &app.url("/webhooks"),
        Some(json!({"kind": "generic", "url": "https://hooks.example/owner"})),
    )
    .await;
    assert!(status.is_success(), "{webhook}");
    let webhook_id = webhook["webhook"]["id"].as_i64().unwrap();
    // An OPML import of the owner's, followed by its id.
    let import_id = app
        .store
        .start_import_job(
            owner_id,
            &tidings_store::NewImportJob {
                kind: "opml",
                source: Some("mine.opml"),
                total: 1,
                owner: "isolation test",
            },
            3,
        )
        .await
        .unwrap()
        .id;
    let history_import_id = app
        .store
        .start_import_job(
            owner_id,
            &tidings_store::NewImportJob {
                kind: tidings_worker::HISTORY_JOB_KIND,
                source: Some("greader https://rss.example/api/greader.php"),
                total: 0,
                owner: "isolation test",
            },
            3,
        )
        .await
        .unwrap()
        .id;

    (
        identity_id,
        passkey_id,
        webhook_id,
        import_id,
        history_import_id,
    )
}

/// Ids inside queries and bodies are checked too: the intruder's requests naming the owner's
/// item, group or feed are 404, and marking the owner's items read marks nothing.
async fn phase_ids_in_queries_and_bodies(
    app: &TestApp,
    intruder: &reqwest::Client,
    item_id: i64,
    group_id: i64,
    feed_id: i64,
) {
    // Ids inside queries and bodies are checked too.
    for (method, path, body) in [
        (Method::GET, format!("/items?feed_id={}", feed_id), None),
        (Method::GET, format!("/items?group_id={group_id}"), None),
        (
            Method::POST,
            "/items/mark-read".to_string(),
            Some(json!({"feed_id": feed_id})),
        ),
        (
            Method::POST,
            "/items/mark-read".to_string(),
            Some(json!({"group_id": group_id})),
        ),
        (
            Method::POST,
            "/bookmarks".to_string(),
            Some(json!({"item_id": item_id})),
        ),
        (
            Method::POST,
            "/subscriptions".to_string(),
            Some(json!({"url": "https://isolation.example/feed", "group_id": group_id})),
        ),
    ] {
        let (status, _, answer) = call(intruder, method.clone(), &app.url(&path), body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
    }
    let (status, _, answer) = call(
        intruder,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"ids": [item_id]})),
    )
    .await;
    assert!(status.is_success(), "{answer}");
    assert_eq!(answer["marked"], 0, "another user's ids are ignored");
}

/// Nothing of the owner's changed: the item, subscription, bookmark, group, API key, sessions
/// and passkey are as they were.
async fn phase_nothing_of_the_owners_changed(
    app: &TestApp,
    owner: &reqwest::Client,
    owner_id: i64,
    (item_id, subscription_id, bookmark_id): (i64, i64, i64),
) {
    // Nothing of the owner's changed.
    let (_, _, item) = call(
        owner,
        Method::GET,
        &app.url(&format!("/items/{item_id}")),
        None,
    )
    .await;
    assert_eq!(
        item["item"]["is_read"]
            .as_bool()
            .or(item["is_read"].as_bool()),
        Some(false),
        "{item}"
    );
    for path in [
        format!("/subscriptions/{}", subscription_id),
        format!("/bookmarks/{bookmark_id}"),
    ] {
        let (status, _, _) = call(owner, Method::GET, &app.url(&path), None).await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    let (_, _, groups) = call(owner, Method::GET, &app.url("/groups"), None).await;
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "Mine")
    );
    let (_, _, keys) = call(owner, Method::GET, &app.url("/api-keys"), None).await;
    assert_eq!(keys["api_keys"].as_array().unwrap().len(), 1);
    let (_, _, sessions) = call(owner, Method::GET, &app.url("/me/sessions"), None).await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 2);
    let passkeys = app.store.passkeys(owner_id).await.unwrap();
    assert_eq!(
        passkeys[0].name, "phone",
        "the rename by another user changed nothing"
    );
}

/// A well-formed body for the operation, so that the answer is about the id, not the body.
fn valid_body(path: &str, method: &Method) -> Option<Value> {
    match (method.as_str(), path) {
        ("PATCH", p) if p.starts_with("/api/v1/groups/") => Some(json!({"name": "Renamed"})),
        ("PATCH", p) if p.starts_with("/api/v1/subscriptions/") => {
            Some(json!({"title": "Mine now"}))
        }
        ("PATCH", p) if p.starts_with("/api/v1/users/") => Some(json!({"is_admin": true})),
        ("PATCH", p) if p.starts_with("/api/v1/admin/feeds/") => Some(json!({"suspended": true})),
        ("PATCH", p) if p.starts_with("/api/v1/webhooks/") => Some(json!({"name": "Mine now"})),
        ("PATCH", p) if p.starts_with("/api/v1/rules/") => Some(json!({"name": "Mine now"})),
        ("PATCH", p) if p.starts_with("/api/v1/me/passkeys/") => Some(json!({"name": "Mine now"})),
        ("PUT", p) if p.ends_with("/state") => Some(json!({"is_read": true, "is_starred": true})),
        ("POST", p) if p.ends_with("/translate") => Some(json!({"to": "en"})),
        ("PUT", p) if p.ends_with("/scraper") => {
            Some(json!({"scraper": {"kind": "html", "item_selector": ".post"}}))
        }
        _ => None,
    }
}
