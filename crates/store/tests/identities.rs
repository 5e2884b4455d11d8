//! OpenID Connect identities, authorization requests and the password switch, on both
//! engines.

use tidings_testkit::on_both_engines;

use tidings_store::{NewOidcLogin, NewUser, StoreError, unix_now};

const ISSUER: &str = "https://id.example.com";

on_both_engines!(
    an_authorization_request_is_taken_once_and_not_after_it_expires,
    |db| {
        let store = db.migrated().await;
        let login = |state: &'static str, expires_at: i64| NewOidcLogin {
            state_hash: state,
            nonce: "n-1",
            code_verifier: "v-1",
            link_user_id: None,
            return_to: Some("/feeds/3"),
            expires_at,
        };
        store
            .create_oidc_login(&login("live", unix_now() + 600), 100)
            .await
            .unwrap();
        store
            .create_oidc_login(&login("stale", unix_now() - 1), 100)
            .await
            .unwrap();
        let taken = store.take_oidc_login("live").await.unwrap().unwrap();
        assert_eq!(
            (taken.nonce.as_str(), taken.code_verifier.as_str()),
            ("n-1", "v-1")
        );
        assert_eq!(taken.return_to.as_deref(), Some("/feeds/3"));
        assert_eq!(taken.link_user_id, None);
        // A replay of the same state finds nothing.
        assert_eq!(store.take_oidc_login("live").await.unwrap(), None);
        // An expired request is refused (and gone).
        assert_eq!(store.take_oidc_login("stale").await.unwrap(), None);
        assert_eq!(store.take_oidc_login("unknown").await.unwrap(), None);
    }
);

on_both_engines!(identities_link_to_one_user_and_find_it, |db| {
    let store = db.migrated().await;
    let ann = tidings_testkit::add_user(&store, "ann").await;
    let bob = tidings_testkit::add_user(&store, "bob").await;
    assert_eq!(
        store.identity_user(ISSUER, "sub-1", None).await.unwrap(),
        None
    );
    let linked = store
        .link_identity(ann, ISSUER, "sub-1", Some("ann@example.com"))
        .await
        .unwrap();
    assert_eq!(
        (linked.issuer.as_str(), linked.subject.as_str()),
        (ISSUER, "sub-1")
    );
    // Linking again to the same user is fine; to another user it is refused.
    let again = store
        .link_identity(ann, ISSUER, "sub-1", None)
        .await
        .unwrap();
    assert_eq!(again.id, linked.id);
    assert_eq!(again.email.as_deref(), Some("ann@example.com"));
    let taken = store.link_identity(bob, ISSUER, "sub-1", None).await;
    assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");
    // The same subject at another issuer is another identity.
    store
        .link_identity(bob, "https://other.example.com", "sub-1", None)
        .await
        .unwrap();

    let found = store
        .identity_user(ISSUER, "sub-1", Some("new@example.com"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, ann);
    let listed = store.list_identities(ann).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].email.as_deref(), Some("new@example.com"));
    assert!(listed[0].last_used_at.is_some());
    // Deleting the user deletes the links.
    store.delete_user(ann).await.unwrap();
    assert_eq!(
        store.identity_user(ISSUER, "sub-1", None).await.unwrap(),
        None
    );
});

on_both_engines!(the_last_way_to_sign_in_cannot_be_unlinked, |db| {
    let store = db.migrated().await;
    // No password: the identities are the only ways in.
    let ann = tidings_testkit::add_user(&store, "ann").await;
    let first = store.link_identity(ann, ISSUER, "a-1", None).await.unwrap();
    let second = store.link_identity(ann, ISSUER, "a-2", None).await.unwrap();
    store.unlink_identity(ann, first.id, true).await.unwrap();
    let last = store.unlink_identity(ann, second.id, true).await;
    assert!(matches!(last, Err(StoreError::Conflict(_))), "{last:?}");
    assert_eq!(store.list_identities(ann).await.unwrap().len(), 1);

    // With a password the identity may go, unless passwords are turned off.
    let bob = store
        .create_user(&NewUser {
            username: "bob".into(),
            password_hash: Some("h".into()),
            is_admin: false,
        })
        .await
        .unwrap()
        .id;
    let bobs = store.link_identity(bob, ISSUER, "b-1", None).await.unwrap();
    let off = store.unlink_identity(bob, bobs.id, false).await;
    assert!(matches!(off, Err(StoreError::Conflict(_))), "{off:?}");
    // Someone else's identity is not found.
    let foreign = store.unlink_identity(ann, bobs.id, true).await;
    assert!(
        matches!(foreign, Err(StoreError::NotFound(_))),
        "{foreign:?}"
    );
    store.unlink_identity(bob, bobs.id, true).await.unwrap();
    assert!(store.list_identities(bob).await.unwrap().is_empty());
});

on_both_engines!(
    signing_up_through_an_identity_creates_a_user_without_password,
    |db| {
        let store = db.migrated().await;
        let user = store
            .create_user_with_identity("carol", ISSUER, "c-1", Some("carol@example.com"))
            .await
            .unwrap();
        assert!(!user.has_password && !user.is_admin);
        assert_eq!(
            store
                .identity_user(ISSUER, "c-1", None)
                .await
                .unwrap()
                .map(|u| u.id),
            Some(user.id)
        );
        // The default group exists, as for any user.
        assert_eq!(store.list_groups(user.id).await.unwrap().len(), 1);
        let same_name = store
            .create_user_with_identity("CAROL", ISSUER, "c-2", None)
            .await;
        assert!(
            matches!(&same_name, Err(StoreError::Conflict(m)) if m.contains("already exists")),
            "{same_name:?}"
        );
        let same_identity = store
            .create_user_with_identity("dave", ISSUER, "c-1", None)
            .await;
        assert!(
            matches!(&same_identity, Err(StoreError::Conflict(m)) if m.contains("linked")),
            "{same_identity:?}"
        );
        // Nothing of the refused sign-ups was kept.
        assert!(store.user_credentials("dave").await.unwrap().is_none());
        assert_eq!(store.users_with_identity().await.unwrap().len(), 1);
    }
);

on_both_engines!(password_sign_in_can_be_turned_off_and_on, |db| {
    let store = db.migrated().await;
    assert!(store.password_sign_in().await.unwrap());
    store.set_password_sign_in(false).await.unwrap();
    assert!(!store.password_sign_in().await.unwrap());
    store.set_password_sign_in(true).await.unwrap();
    assert!(store.password_sign_in().await.unwrap());
});
