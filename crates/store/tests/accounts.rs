//! Sessions, API keys and the one-time setup, on both engines.

use tidings_testkit::on_both_engines;

use tidings_store::{ApiKeyScope, NewUser, Store, StoreError, unix_now};

async fn user(store: &Store, name: &str) -> i64 {
    try_user(store, name).await.unwrap().id
}

/// Creates the ordinary user `name`, or says why not.
async fn try_user(store: &Store, name: &str) -> Result<tidings_store::User, StoreError> {
    store
        .create_user(&NewUser {
            username: name.into(),
            password_hash: Some("h".into()),
            is_admin: false,
        })
        .await
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

/// Why creating the user `name` fails.
async fn refused(store: &Store, name: &str) -> StoreError {
    try_user(store, name).await.unwrap_err()
}

/// The id the sign-in lookup finds for a name as typed, if any.
async fn signs_in_as(store: &Store, typed: &str) -> Option<i64> {
    store
        .user_credentials(typed)
        .await
        .unwrap()
        .map(|(user, _)| user.id)
}

on_both_engines!(user_names_match_by_their_normalized_key, |db| {
    let store = db.migrated().await;
    // Made with the precomposed é (U+00E9).
    let jose = user(&store, "Jos\u{e9}").await;
    assert_eq!(store.user(jose).await.unwrap().username, "Jos\u{e9}");
    for typed in [
        "Jos\u{e9}",
        "jos\u{e9}",
        "jose\u{301}",                    // decomposed: e + combining acute accent
        "\u{ff4a}\u{ff4f}\u{ff53}\u{e9}", // full-width ｊｏｓ + é
        "JOS\u{c9}",
        "  JOSE\u{301} ",
    ] {
        assert_eq!(signs_in_as(&store, typed).await, Some(jose), "{typed:?}");
    }
    assert_eq!(signs_in_as(&store, "jose").await, None, "the accent counts");
    // Every spelling of a taken name is taken.
    for taken in ["JOS\u{c9}", "jose\u{301}", "\u{ff2a}\u{ff2f}\u{ff33}\u{c9}"] {
        let error = refused(&store, taken).await;
        assert!(
            matches!(&error, StoreError::Conflict(m) if m.contains("already exists")),
            "{taken:?}: {error:?}"
        );
    }
    // Full case folding: ß is ss.
    let strasse = user(&store, "Stra\u{df}e").await;
    assert_eq!(signs_in_as(&store, "STRASSE").await, Some(strasse));
    // A name typed decomposed is stored composed, looking the same.
    let rene = user(&store, "rene\u{301}").await;
    assert_eq!(store.user(rene).await.unwrap().username, "ren\u{e9}");
});

on_both_engines!(user_names_mixing_scripts_are_refused, |db| {
    let store = db.migrated().await;
    for (name, scripts) in [
        ("p\u{430}ypal", "Latin with Cyrillic"), // Cyrillic а
        ("\u{3bf}mega", "Greek with Latin"),     // Greek ο
        ("admin\u{456}", "Latin with Cyrillic"), // Cyrillic і
    ] {
        let error = refused(&store, name).await;
        let StoreError::Invalid(message) = &error else {
            panic!("{name:?}: {error:?}");
        };
        assert!(
            message.contains("mixes scripts") && message.contains(scripts),
            "{name:?}: {message}"
        );
        assert!(message.contains("one script"), "says what to do: {message}");
    }
    // One script, or Latin with Japanese, Chinese or Korean, is fine; digits and . _ - too.
    for name in [
        "\u{438}\u{432}\u{430}\u{43d}-2024",          // иван-2024
        "\u{3b1}\u{3bb}\u{3ad}\u{3be}\u{3b7}\u{3c2}", // αλέξης
        "\u{7530}\u{4e2d}\u{306f}\u{306a}\u{30b3}",   // 田中はなコ
        "tanaka.\u{592a}\u{90ce}",
        "j.doe_99",
    ] {
        user(&store, name).await;
    }
});

on_both_engines!(colliding_names_from_before_keys_keep_signing_in, |db| {
    let store = db.open().await;
    store.migrate_to(10).await.unwrap();
    // Names the old rule (lower case only) kept apart and the key joins: the older account
    // keeps the key, and each signs in with its exact name.
    let names = ["strasse", "stra\u{df}e", "\u{ff4a}oe", "joe", "ann"];
    for name in names {
        store
            .execute_raw(&format!(
                "INSERT INTO users (username, password_hash, is_admin, created_at, updated_at)
                 VALUES ('{name}', 'h', FALSE, 0, 0)"
            ))
            .await
            .unwrap();
    }
    store
        .migrate()
        .await
        .expect("the migration does not fail on colliding names");
    let users = store.list_users().await.unwrap();
    let id = |name: &str| users.iter().find(|u| u.username == name).unwrap().id;
    let [strasse, strasse2, joe_wide, joe, ann] = names.map(id);
    assert!(strasse < strasse2 && joe_wide < joe);
    assert_eq!(signs_in_as(&store, "strasse").await, Some(strasse));
    assert_eq!(signs_in_as(&store, "stra\u{df}e").await, Some(strasse2));
    assert_eq!(signs_in_as(&store, "STRASSE").await, Some(strasse));
    assert_eq!(signs_in_as(&store, "\u{ff4a}oe").await, Some(joe_wide));
    assert_eq!(signs_in_as(&store, "joe").await, Some(joe));
    assert_eq!(
        signs_in_as(&store, "JOE").await,
        Some(joe_wide),
        "the older one"
    );
    assert_eq!(signs_in_as(&store, "ANN").await, Some(ann));
    // The names shown are unchanged, and a new account cannot take any of the keys.
    assert_eq!(store.user(strasse2).await.unwrap().username, "stra\u{df}e");
    let error = refused(&store, "Joe").await;
    assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
});

on_both_engines!(rate_windows_count_per_key_cap_and_reset, |db| {
    let store = db.migrated().await;
    // Two handles on one database stand for two replicas: they count into the same window.
    let other = db.open().await;
    let mut hits = Vec::new();
    for n in 0..4 {
        let on = if n % 2 == 0 { &store } else { &other };
        hits.push(
            on.count_rate_hit("user", "user:1", 60_000, 3)
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        hits.iter().map(|h| h.hits).collect::<Vec<_>>(),
        [1, 2, 3, 3],
        "counted across handles and capped"
    );
    assert!(
        hits.iter()
            .all(|h| h.resets_in_ms > 50_000 && h.resets_in_ms <= 60_000),
        "{hits:?}"
    );
    // The same key in another limit, and another key, count apart.
    let apart = store
        .count_rate_hit("sync", "user:1", 60_000, 3)
        .await
        .unwrap();
    assert_eq!(apart.hits, 1);
    assert_eq!(
        store
            .count_rate_hit("user", "user:2", 60_000, 3)
            .await
            .unwrap()
            .hits,
        1
    );

    // A window that has ended starts again at 1, and pruning removes only ended windows.
    let short = store
        .count_rate_hit("sign-in", "198.51.100.7", 200, 5)
        .await
        .unwrap();
    assert_eq!(short.hits, 1);
    assert!(short.resets_in_ms <= 200, "{short:?}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(store.prune_rate_windows().await.unwrap(), 1);
    let again = store
        .count_rate_hit("sign-in", "198.51.100.7", 200, 5)
        .await
        .unwrap();
    assert_eq!(again.hits, 1, "a new window after the old one ended");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let renewed = store
        .count_rate_hit("sign-in", "198.51.100.7", 60_000, 5)
        .await
        .unwrap();
    assert_eq!(renewed.hits, 1, "an ended window is renewed in place too");
    assert!(renewed.resets_in_ms > 50_000, "{renewed:?}");
    assert_eq!(store.prune_rate_windows().await.unwrap(), 0);
    other.close().await;
});

on_both_engines!(a_passkey_is_renamed_only_by_its_user, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    let key = store
        .add_passkey(ann, "cred-ann", b"cose", 0, "phone")
        .await
        .unwrap();
    let renamed = store
        .rename_passkey(ann, key.id, "old laptop")
        .await
        .unwrap()
        .expect("ann's own passkey");
    assert_eq!(
        (
            renamed.id,
            renamed.name.as_str(),
            renamed.credential_id.as_str()
        ),
        (key.id, "old laptop", "cred-ann")
    );
    // Another user's id, and an id nobody has, change nothing.
    assert_eq!(
        store.rename_passkey(bob, key.id, "mine").await.unwrap(),
        None
    );
    assert_eq!(
        store.rename_passkey(ann, key.id + 1000, "x").await.unwrap(),
        None
    );
    let names: Vec<String> = store
        .passkeys(ann)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["old laptop"]);
});

// Keys that authenticated are remembered for a few seconds (`auth_cache`): every change of
// what a key may do, made through the store, holds from the next look-up; another process's
// change (a second store on the same database) once the remembered entry has expired.
on_both_engines!(a_remembered_key_follows_every_change, |db| {
    let store = db.migrated().await;
    let key = async |user: i64, hash: &str, expires_at: Option<i64>| {
        store
            .create_api_key(user, "app", "tdg_x", hash, ApiKeyScope::Read, expires_at)
            .await
            .unwrap();
        let found = store.authenticate_api_key(hash).await.unwrap();
        assert_eq!(found.unwrap().user.id, user, "{hash} works");
    };
    let works = async |hash: &str| store.authenticate_api_key(hash).await.unwrap().is_some();
    // An administrator besides, so that bob can be demoted and deleted.
    store
        .create_user(&NewUser {
            username: "root".into(),
            password_hash: Some("h".into()),
            is_admin: true,
        })
        .await
        .unwrap();

    // All of a user's keys revoked (a password change).
    let ann = user(&store, "ann").await;
    key(ann, "ann-1", None).await;
    store.revoke_user_api_keys(ann).await.unwrap();
    assert!(!works("ann-1").await, "revoked with all of the user's keys");

    // The user disabled, then enabled again.
    let bob = user(&store, "bob").await;
    key(bob, "bob-1", None).await;
    store.set_user_flags(bob, None, Some(true)).await.unwrap();
    assert!(!works("bob-1").await, "its user disabled");
    store.set_user_flags(bob, None, Some(false)).await.unwrap();
    assert!(works("bob-1").await, "its user enabled again");

    // Made an administrator and back: the key's user says so at once.
    store.set_user_flags(bob, Some(true), None).await.unwrap();
    let found = store.authenticate_api_key("bob-1").await.unwrap().unwrap();
    assert!(found.user.is_admin);
    store.set_user_flags(bob, Some(false), None).await.unwrap();
    let found = store.authenticate_api_key("bob-1").await.unwrap().unwrap();
    assert!(!found.user.is_admin);

    // The user deleted.
    store.delete_user(bob).await.unwrap();
    assert!(!works("bob-1").await, "its user deleted");

    // The key's own expiry, passed while it is remembered.
    // Its two seconds counted from here: on a loaded machine the steps above took longer than
    // that once (CI, load 40), and the key had expired before its first use.
    let cy = user(&store, "cy").await;
    let expires_at = unix_now() + 2;
    key(cy, "cy-1", Some(expires_at)).await;
    while unix_now() <= expires_at {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(!works("cy-1").await, "expired while remembered");

    // Another process's revocation holds once the remembered entry has expired.
    key(cy, "cy-2", None).await;
    let other = db.open().await;
    other.revoke_user_api_keys(cy).await.unwrap();
    assert!(
        other.authenticate_api_key("cy-2").await.unwrap().is_none(),
        "at once in the process that revoked it"
    );
    tokio::time::sleep(tidings_store::auth_cache::AUTH_CACHE_LIFE).await;
    assert!(!works("cy-2").await, "within the remembered life elsewhere");
});
