//! Sessions, API keys and the one-time setup, on both engines.

mod common;

use tidings_store::{ApiKeyScope, NewUser, Store, StoreError, unix_now};

async fn user(store: &Store, name: &str) -> i64 {
    store
        .create_user(&NewUser {
            username: name.into(),
            password_hash: Some("h".into()),
            is_admin: false,
        })
        .await
        .unwrap()
        .id
}

on_both_engines!(sessions_expire_and_end, |db| {
    let store = db.migrated().await;
    let u = user(&store, "ann").await;
    let now = unix_now();
    let live = store
        .create_session(
            u,
            "tok-live",
            now + 3600,
            Some("Firefox"),
            Some("192.0.2.1"),
        )
        .await
        .unwrap();
    let auth = store
        .authenticate_session("tok-live", 600)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(auth.user.id, u);
    assert_eq!(auth.session_id, Some(live));
    assert!(auth.api_key.is_none());
    assert!(
        store
            .authenticate_session("tok-unknown", 600)
            .await
            .unwrap()
            .is_none()
    );

    // Past the absolute expiry.
    store
        .create_session(u, "tok-old", now - 1, None, None)
        .await
        .unwrap();
    assert!(
        store
            .authenticate_session("tok-old", 600)
            .await
            .unwrap()
            .is_none()
    );
    // Idle too long.
    let idle = store
        .create_session(u, "tok-idle", now + 3600, None, None)
        .await
        .unwrap();
    store
        .execute_raw(&format!(
            "UPDATE sessions SET last_seen_at = {} WHERE id = {idle}",
            now - 700
        ))
        .await
        .unwrap();
    assert!(
        store
            .authenticate_session("tok-idle", 600)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.delete_expired_sessions(600).await.unwrap(), 2);

    let listed = store.list_sessions(u).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].user_agent.as_deref(), Some("Firefox"));

    // A disabled user's sessions stop working.
    store.set_user_flags(u, None, Some(true)).await.unwrap();
    assert!(
        store
            .authenticate_session("tok-live", 600)
            .await
            .unwrap()
            .is_none()
    );
    store.set_user_flags(u, None, Some(false)).await.unwrap();
    assert!(
        store
            .authenticate_session("tok-live", 600)
            .await
            .unwrap()
            .is_some()
    );

    let other = user(&store, "ben").await;
    assert!(matches!(
        store.delete_user_session(other, live).await,
        Err(StoreError::NotFound(_))
    ));
    let second = store
        .create_session(u, "tok-2", now + 3600, None, None)
        .await
        .unwrap();
    assert_eq!(
        store.delete_user_sessions(u, Some(second)).await.unwrap(),
        1
    );
    assert!(
        store
            .authenticate_session("tok-live", 600)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.delete_session(second).await.unwrap());
    assert!(!store.delete_session(second).await.unwrap());
});

on_both_engines!(api_keys_scope_expiry_and_revocation, |db| {
    let store = db.migrated().await;
    let u = user(&store, "cat").await;
    let now = unix_now();
    let read = store
        .create_api_key(
            u,
            " reader  script ",
            "tdg_ab12",
            "hash-read",
            ApiKeyScope::Read,
            None,
        )
        .await
        .unwrap();
    assert_eq!(read.name, "reader script");
    let write = store
        .create_api_key(
            u,
            "writer",
            "tdg_cd34",
            "hash-write",
            ApiKeyScope::ReadWrite,
            Some(now + 60),
        )
        .await
        .unwrap();
    store
        .create_api_key(
            u,
            "expired",
            "tdg_ef56",
            "hash-expired",
            ApiKeyScope::ReadWrite,
            Some(now - 1),
        )
        .await
        .unwrap();
    assert!(matches!(
        store
            .create_api_key(u, "  ", "p", "h", ApiKeyScope::Read, None)
            .await,
        Err(StoreError::Invalid(_))
    ));

    let auth = store
        .authenticate_api_key("hash-read")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(auth.api_key, Some((read.id, ApiKeyScope::Read)));
    assert_eq!(auth.user.id, u);
    let auth = store
        .authenticate_api_key("hash-write")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(auth.api_key, Some((write.id, ApiKeyScope::ReadWrite)));
    assert!(
        store
            .authenticate_api_key("hash-expired")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.authenticate_api_key("nope").await.unwrap().is_none());

    let listed = store.list_api_keys(u).await.unwrap();
    assert_eq!(listed.len(), 3);
    assert!(
        listed
            .iter()
            .any(|k| k.id == read.id && k.last_used_at.is_some())
    );

    let other = user(&store, "dan").await;
    assert!(matches!(
        store.revoke_api_key(other, read.id).await,
        Err(StoreError::NotFound(_))
    ));
    store.revoke_api_key(u, read.id).await.unwrap();
    assert!(
        store
            .authenticate_api_key("hash-read")
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        store.revoke_api_key(u, read.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.list_api_keys(u).await.unwrap().len(), 2);
});

on_both_engines!(first_admin_setup_happens_once, |db| {
    let store = db.migrated().await;
    store.set_setup_token_hash("right").await.unwrap();
    assert!(matches!(
        store.create_first_admin("wrong", "root", "h").await,
        Err(StoreError::NotFound(_))
    ));
    // Two racing setups with the right token: exactly one wins.
    let (a, b) = tokio::join!(
        store.create_first_admin("right", "first", "h"),
        store.create_first_admin("right", "second", "h"),
    );
    assert!(a.is_ok() != b.is_ok(), "{a:?} {b:?}");
    let admin = a.or(b).unwrap();
    assert!(admin.is_admin);
    assert_eq!(store.count_users().await.unwrap(), (1, 1));
    assert_eq!(store.setup_token_hash().await.unwrap(), None);
    assert_eq!(store.list_groups(admin.id).await.unwrap().len(), 1);
    // With users present, even a fresh token does not create another "first" admin.
    store.set_setup_token_hash("again").await.unwrap();
    assert!(matches!(
        store.create_first_admin("again", "third", "h").await,
        Err(StoreError::Conflict(_))
    ));
});
