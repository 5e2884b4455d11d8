//! The storage suite: the store's behaviour, the same on SQLite and PostgreSQL.

use tidings_testkit::on_both_engines;

use tidings_store::{
    FetchRecord, FetchStatus, NewItem, NewSubscription, NewUser, SchemaStatus, Store, StoreError,
    StoreOptions, SubscriptionChanges, unix_now,
};

async fn user(store: &Store, name: &str) -> i64 {
    store
        .create_user(&NewUser {
            username: name.into(),
            password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
            is_admin: false,
        })
        .await
        .expect("create user")
        .id
}

async fn subscribe(store: &Store, user_id: i64, url: &str) -> i64 {
    store
        .subscribe(
            user_id,
            &NewSubscription {
                feed_url: url.into(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribe")
        .id
}

fn items(n: usize) -> Vec<NewItem> {
    (0..n)
        .map(|i| NewItem {
            guid: Some(format!("guid-{i}")),
            url: Some(format!("https://example.com/{i}")),
            title: Some(format!("Item {i}")),
            content: Some(format!("<p>Body {i}</p>")),
            published: Some(1_700_000_000 + i as i64),
            ..Default::default()
        })
        .collect()
}

/// Every migration's version, oldest first.
fn all_versions() -> Vec<i64> {
    tidings_store::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect()
}

/// The newest schema version.
fn latest_version() -> i64 {
    tidings_store::MIGRATIONS.last().unwrap().version
}

on_both_engines!(migrations_bring_a_new_database_to_current, |db| {
    let store = db.open().await;
    assert!(matches!(
        store.schema_status().await.unwrap(),
        SchemaStatus::Behind { version: 0, .. }
    ));
    let applied = store.migrate().await.unwrap();
    assert_eq!(applied, all_versions());
    assert!(matches!(
        store.schema_status().await.unwrap(),
        SchemaStatus::Current { version } if version == latest_version()
    ));
    assert!(
        store.migrate().await.unwrap().is_empty(),
        "second run applies nothing"
    );
    if let Some(dir) = db.dir() {
        let backups = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".bak-")
            })
            .count();
        assert_eq!(backups, 0, "a brand-new database needs no backup");
    }
});

on_both_engines!(upgrade_from_an_older_schema_keeps_data, |db| {
    let store = db.open().await;
    assert_eq!(store.migrate_to(1).await.unwrap(), vec![1]);
    assert!(matches!(
        store.schema_status().await.unwrap(),
        SchemaStatus::Behind {
            version: 1,
            latest,
        } if latest == latest_version()
    ));
    // Data written at schema version 1, by SQL of that version (no preferences table yet).
    let now = unix_now();
    store
        .execute_raw(&format!(
            "INSERT INTO users (id, username, password_hash, is_admin, created_at, updated_at)
             VALUES (7, 'olduser', 'hash', TRUE, {now}, {now});
             INSERT INTO feed_groups (user_id, name, position, is_default, created_at)
             VALUES (7, 'General', 0, TRUE, {now});
             INSERT INTO feeds (id, url, created_at, updated_at)
             VALUES (3, 'https://old.example/feed', {now}, {now});
             INSERT INTO feed_fetch_state (feed_id) VALUES (3);
             INSERT INTO items (feed_id, identity_key, title, published_at, fetched_at,
                                changed_at, content_hash)
             VALUES (3, 'g:old', 'An old item', {now}, {now}, {now}, 'x');"
        ))
        .await
        .unwrap();
    store.close().await;

    let store = db.open().await;
    assert_eq!(store.migrate().await.unwrap(), all_versions()[1..].to_vec());
    let old = store.user(7).await.unwrap();
    assert_eq!(old.username, "olduser");
    assert!(old.is_admin);
    assert_eq!(store.count_items(3).await.unwrap(), 1);
    assert_eq!(store.list_groups(7).await.unwrap().len(), 1);
    // The new tables work for the old data.
    let sub = subscribe(&store, 7, "https://old.example/feed").await;
    assert!(sub > 0);
    // The read model's counter starts from the items already stored.
    assert_eq!(store.subscription(7, sub).await.unwrap().unread_count, 1);
    // The search index (migration 6) starts empty; the backfill indexes the old item.
    assert_eq!(store.search_index_rows().await.unwrap(), 0);
    let step = store.backfill_search_index(100).await.unwrap();
    assert_eq!(step.indexed, 1);
    assert!(step.is_done());
    assert_eq!(store.search_index_rows().await.unwrap(), 1);
    if let Some(dir) = db.dir() {
        let backups: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains("tidings.db.bak-"))
            .collect();
        assert_eq!(
            backups.len(),
            1,
            "one backup before the migration: {backups:?}"
        );
        // The backup is a working database at the old version.
        let backup = Store::connect(&tidings_store::StoreOptions::new(format!(
            "sqlite://{}",
            backups[0].display()
        )))
        .await
        .unwrap();
        assert!(matches!(
            backup.schema_status().await.unwrap(),
            SchemaStatus::Behind { version: 1, .. }
        ));
        assert_eq!(backup.count_items(3).await.unwrap(), 1);
    }
});

on_both_engines!(a_newer_or_edited_schema_is_refused, |db| {
    let store = db.migrated().await;
    store
        .execute_raw("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (99, 'future', 'x', 0)")
        .await
        .unwrap();
    let err = store.migrate().await.unwrap_err().to_string();
    assert!(err.contains("newer than this tidings"), "{err}");
    assert!(matches!(
        store.schema_status().await.unwrap(),
        SchemaStatus::Ahead { version: 99, .. }
    ));
    store
        .execute_raw("DELETE FROM schema_migrations WHERE version = 99; UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
        .await
        .unwrap();
    let err = store.migrate().await.unwrap_err().to_string();
    assert!(err.contains("differs"), "{err}");
});

on_both_engines!(concurrent_starters_migrate_once, |db| {
    let stores: Vec<Store> = futures_util::future::join_all((0..4).map(|_| db.open())).await;
    let results = futures_util::future::join_all(stores.iter().map(|s| s.migrate())).await;
    let mut applied: Vec<i64> = results
        .into_iter()
        .flat_map(|r| r.expect("every starter succeeds"))
        .collect();
    applied.sort();
    assert_eq!(
        applied,
        all_versions(),
        "each migration applied exactly once"
    );
});

/// Several processes started at once on a SQLite file that does not exist yet all open it: the
/// ones that lose the race to switch it to WAL wait and retry instead of failing the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_starters_racing_on_a_new_file_all_open() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for round in 0..25 {
        let url = format!("sqlite://{}/race-{round}.db", dir.path().display());
        let opened = futures_util::future::join_all((0..8).map(|_| {
            let url = url.clone();
            tokio::spawn(async move { Store::connect(&StoreOptions::new(&url)).await })
        }))
        .await;
        let stores: Vec<Store> = opened
            .into_iter()
            .map(|joined| {
                joined
                    .expect("task")
                    .expect("every starter opens the new file")
            })
            .collect();
        let applied: usize = futures_util::future::join_all(stores.iter().map(|s| s.migrate()))
            .await
            .into_iter()
            .map(|r| r.expect("every starter migrates or finds it done").len())
            .sum();
        assert_eq!(
            applied,
            all_versions().len(),
            "round {round}: each migration applied once"
        );
        for store in stores {
            store.close().await;
        }
    }
}

on_both_engines!(users_have_unique_names_a_default_group_and_cascade, |db| {
    let store = db.migrated().await;
    let alice = store
        .create_user(&NewUser {
            username: " Alice ".into(),
            password_hash: Some("h1".into()),
            is_admin: true,
        })
        .await
        .unwrap();
    assert_eq!(alice.username, "Alice", "kept as typed, trimmed");
    assert!(alice.is_admin && alice.has_password && !alice.is_disabled);
    let dup = store
        .create_user(&NewUser {
            username: "ALICE".into(),
            password_hash: None,
            is_admin: false,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(dup, StoreError::Conflict(ref m) if m.contains("ALICE")),
        "{dup}"
    );
    for bad in ["", "   ", "-x", "a b", "x;drop", &"a".repeat(65)] {
        let err = store
            .create_user(&NewUser {
                username: bad.into(),
                password_hash: None,
                is_admin: false,
            })
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{bad:?}: {err}");
    }
    let bob = user(&store, "bob").await;
    assert_eq!(store.count_users().await.unwrap(), (2, 1));
    let names: Vec<_> = store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(names, ["Alice", "bob"]);
    let groups = store.list_groups(bob).await.unwrap();
    assert_eq!(groups.len(), 1);
    assert!(groups[0].is_default);

    let (found, hash) = store.user_credentials("ALICE").await.unwrap().unwrap();
    assert_eq!(found.id, alice.id);
    assert_eq!(hash.as_deref(), Some("h1"));
    assert!(store.user_credentials("nobody").await.unwrap().is_none());
    store.set_password_hash(alice.id, "h2").await.unwrap();
    assert_eq!(
        store
            .user_credentials("alice")
            .await
            .unwrap()
            .unwrap()
            .1
            .as_deref(),
        Some("h2")
    );
    let disabled = store.set_user_flags(bob, None, Some(true)).await.unwrap();
    assert!(disabled.is_disabled && !disabled.is_admin);

    // Deleting bob removes his subscription and state but keeps the shared feed and items.
    let sub = subscribe(&store, bob, "https://shared.example/feed").await;
    let feed_id = store.subscription(bob, sub).await.unwrap().feed_id;
    subscribe(&store, alice.id, "https://shared.example/feed").await;
    store
        .upsert_items(feed_id, &items(3), unix_now())
        .await
        .unwrap();
    store.delete_user(bob).await.unwrap();
    assert!(matches!(
        store.user(bob).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.count_items(feed_id).await.unwrap(), 3);
    assert_eq!(store.list_subscriptions(alice.id).await.unwrap().len(), 1);
    assert!(matches!(
        store.delete_user(bob).await,
        Err(StoreError::NotFound(_))
    ));
});

on_both_engines!(setup_token_round_trip, |db| {
    let store = db.migrated().await;
    assert_eq!(store.setup_token_hash().await.unwrap(), None);
    store.set_setup_token_hash("abc").await.unwrap();
    store.set_setup_token_hash("def").await.unwrap();
    assert_eq!(
        store.setup_token_hash().await.unwrap().as_deref(),
        Some("def")
    );
    store.clear_setup_token().await.unwrap();
    assert_eq!(store.setup_token_hash().await.unwrap(), None);
});

on_both_engines!(groups_rename_and_delete_move_subscriptions_home, |db| {
    let store = db.migrated().await;
    let u = user(&store, "carol").await;
    let other = user(&store, "dave").await;
    let tech = store.create_group(u, "  Tech   news ").await.unwrap();
    assert_eq!(tech.name, "Tech news");
    assert!(matches!(
        store.create_group(u, "Tech news").await,
        Err(StoreError::Conflict(_))
    ));
    store
        .create_group(other, "Tech news")
        .await
        .expect("names are per user");
    let sub = store
        .subscribe(
            u,
            &NewSubscription {
                feed_url: "https://a.example/feed".into(),
                group_id: Some(tech.id),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(sub.group_id, tech.id);
    let renamed = store
        .update_group(u, tech.id, Some("Tech"), Some(5))
        .await
        .unwrap();
    assert_eq!((renamed.name.as_str(), renamed.position), ("Tech", 5));
    assert!(matches!(
        store.update_group(other, tech.id, Some("Mine"), None).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete_group(other, tech.id).await,
        Err(StoreError::NotFound(_))
    ));
    let default = store.default_group_id(u).await.unwrap();
    assert!(matches!(
        store.delete_group(u, default).await,
        Err(StoreError::Invalid(_))
    ));
    store.delete_group(u, tech.id).await.unwrap();
    assert_eq!(
        store.subscription(u, sub.id).await.unwrap().group_id,
        default
    );
    assert_eq!(store.list_groups(u).await.unwrap().len(), 1);
});

on_both_engines!(subscriptions_share_one_feed_per_url, |db| {
    let store = db.migrated().await;
    let a = user(&store, "erin").await;
    let b = user(&store, "frank").await;
    let sa = store
        .subscribe(
            a,
            &NewSubscription {
                feed_url: "https://news.example/rss".into(),
                title: Some("  My  News ".into()),
                interval_minutes: Some(120),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(sa.custom_title.as_deref(), Some("My News"));
    assert_eq!(sa.interval_minutes, 120);
    assert_eq!(sa.status, FetchStatus::Active);
    let sb = store
        .subscription(b, subscribe(&store, b, "https://news.example/rss").await)
        .await
        .unwrap();
    assert_eq!(sa.feed_id, sb.feed_id, "one feed row per URL");
    assert_eq!(store.list_feeds().await.unwrap().len(), 1);
    assert_eq!(store.list_feeds().await.unwrap()[0].subscribers, 2);
    let again = store
        .subscribe(
            a,
            &NewSubscription {
                feed_url: "https://news.example/rss".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(again, StoreError::Conflict(_)), "{again}");
    for bad in [0, 29, 45, 750, -30] {
        let err = store
            .update_subscription(
                a,
                sa.id,
                &SubscriptionChanges {
                    interval_minutes: Some(bad),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{bad}: {err}");
    }
    let updated = store
        .update_subscription(
            a,
            sa.id,
            &SubscriptionChanges {
                title: Some(None),
                interval_minutes: Some(30),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((updated.custom_title, updated.interval_minutes), (None, 30));
    // Someone else's subscription is invisible.
    assert!(matches!(
        store.subscription(b, sa.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.unsubscribe(b, sa.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.count_subscriptions(a).await.unwrap(), 1);

    // Unread counts and state go with the subscription.
    store
        .upsert_items(sa.feed_id, &items(4), unix_now())
        .await
        .unwrap();
    let first = store.list_subscriptions(a).await.unwrap()[0].clone();
    assert_eq!(first.unread_count, 4);
    let item_id = item_ids(&store, a, sa.feed_id).await[0];
    store
        .set_item_state(a, item_id, Some(true), Some(true))
        .await
        .unwrap();
    assert_eq!(
        store.list_subscriptions(a).await.unwrap()[0].unread_count,
        3
    );
    store.unsubscribe(a, sa.id).await.unwrap();
    assert!(matches!(
        store.item(a, item_id).await,
        Err(StoreError::NotFound(_))
    ));
    let sa2 = subscribe(&store, a, "https://news.example/rss").await;
    assert_eq!(
        store.subscription(a, sa2).await.unwrap().unread_count,
        4,
        "state was removed"
    );
});

on_both_engines!(subscribed_feed_ids_come_in_keyset_pages, |db| {
    let store = db.migrated().await;
    let a = user(&store, "gina").await;
    let b = user(&store, "hal").await;
    let mut followed = Vec::new();
    for n in 0..7 {
        let sub = subscribe(&store, a, &format!("https://pages.example/{n}")).await;
        followed.push(store.subscription(a, sub).await.unwrap().feed_id);
    }
    // A feed whose last subscriber left is not listed; one followed by two users is, once.
    let left = subscribe(&store, b, "https://pages.example/left").await;
    store.unsubscribe(b, left).await.unwrap();
    subscribe(&store, b, "https://pages.example/3").await;
    let mut pages = Vec::new();
    let mut after = 0;
    loop {
        let page = store.subscribed_feed_ids(after, 3).await.unwrap();
        let Some(&last) = page.last() else { break };
        assert!(page.len() <= 3, "{page:?}");
        after = last;
        pages.push(page);
    }
    assert_eq!(pages.len(), 3, "7 feeds in pages of 3: {pages:?}");
    assert_eq!(pages.concat(), followed);
});

async fn item_ids(store: &Store, _user_id: i64, feed_id: i64) -> Vec<i64> {
    store.feed_item_ids(feed_id).await.unwrap()
}

on_both_engines!(upsert_follows_the_identity_rule_and_keeps_state, |db| {
    let store = db.migrated().await;
    let u = user(&store, "gina").await;
    let sub = subscribe(&store, u, "https://blog.example/atom").await;
    let feed_id = store.subscription(u, sub).await.unwrap().feed_id;
    let t0 = 1_800_000_000;
    let mut batch = vec![
        NewItem {
            guid: Some("a".into()),
            title: Some("With guid".into()),
            published: Some(t0),
            ..Default::default()
        },
        NewItem {
            url: Some("https://blog.example/b".into()),
            title: Some("With link".into()),
            ..Default::default()
        },
        NewItem {
            title: Some("Neither".into()),
            summary: Some("s".into()),
            published: Some(t0),
            ..Default::default()
        },
    ];
    let counts = store.upsert_items(feed_id, &batch, t0 + 10).await.unwrap();
    assert_eq!(
        (counts.inserted, counts.updated, counts.unchanged),
        (3, 0, 0)
    );
    let counts = store.upsert_items(feed_id, &batch, t0 + 20).await.unwrap();
    assert_eq!(
        (counts.inserted, counts.updated, counts.unchanged),
        (0, 0, 3)
    );

    let ids = item_ids(&store, u, feed_id).await;
    assert_eq!(ids.len(), 3);
    let mut linked = None;
    for id in &ids {
        let item = store.item(u, *id).await.unwrap();
        if item.url.as_deref() == Some("https://blog.example/b") {
            linked = Some(item);
        }
    }
    let linked = linked.unwrap();
    assert!(
        linked.is_date_estimated,
        "no date: estimated from the fetch time"
    );
    assert_eq!(linked.published_at, t0 + 10);
    store
        .set_item_state(u, linked.id, Some(true), Some(true))
        .await
        .unwrap();

    // The guid item changes title, and the link item changes content: updated in place.
    batch[0].title = Some("With guid, edited".into());
    batch[1].content = Some("<p>new</p>".into());
    let counts = store.upsert_items(feed_id, &batch, t0 + 30).await.unwrap();
    assert_eq!(
        (counts.inserted, counts.updated, counts.unchanged),
        (0, 2, 1)
    );
    assert_eq!(store.count_items(feed_id).await.unwrap(), 3);
    let after = store.item(u, linked.id).await.unwrap();
    assert_eq!(after.content.as_deref(), Some("<p>new</p>"));
    assert!(
        after.is_read && after.is_starred,
        "state kept across the update"
    );
    assert_eq!(after.published_at, t0 + 10, "first estimate kept");
    assert!(after.is_date_estimated);

    // A date arriving later replaces the estimate.
    batch[1].published = Some(t0 - 100);
    store.upsert_items(feed_id, &batch, t0 + 40).await.unwrap();
    let dated = store.item(u, linked.id).await.unwrap();
    assert_eq!(dated.published_at, t0 - 100);
    assert!(!dated.is_date_estimated);

    // Duplicates inside one batch count once.
    let dup = vec![batch[0].clone(), batch[0].clone()];
    let counts = store.upsert_items(feed_id, &dup, t0 + 50).await.unwrap();
    assert_eq!(counts.inserted + counts.updated + counts.unchanged, 1);

    // State is idempotent and scoped to subscribers.
    let s1 = store
        .set_item_state(u, linked.id, Some(false), None)
        .await
        .unwrap();
    let s2 = store
        .set_item_state(u, linked.id, Some(false), None)
        .await
        .unwrap();
    assert_eq!(s1, s2);
    assert!(!s1.is_read && s1.is_starred);
    let stranger = user(&store, "hank").await;
    assert!(matches!(
        store
            .set_item_state(stranger, linked.id, Some(true), None)
            .await,
        Err(StoreError::NotFound(_))
    ));
});

on_both_engines!(
    eight_concurrent_upserts_of_the_same_items_leave_each_once,
    |db| {
        let store = db.migrated().await;
        let u = user(&store, "ivan").await;
        let sub = subscribe(&store, u, "https://busy.example/feed").await;
        let feed_id = store.subscription(u, sub).await.unwrap().feed_id;
        let batch = items(500);
        let now = unix_now();
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let store = store.clone();
                let batch = batch.clone();
                tokio::spawn(async move { store.upsert_items(feed_id, &batch, now).await })
            })
            .collect();
        let mut inserted = 0;
        for task in tasks {
            let counts = task.await.unwrap().expect("no upsert fails");
            assert_eq!(counts.inserted + counts.updated + counts.unchanged, 500);
            inserted += counts.inserted;
        }
        assert_eq!(inserted, 500, "every item inserted by exactly one task");
        assert_eq!(store.count_items(feed_id).await.unwrap(), 500);
    }
);

on_both_engines!(concurrent_writers_never_see_database_locked, |db| {
    // Two independent stores (as two processes would have) plus concurrent tasks in each.
    let one = db.migrated().await;
    let two = db.open().await;
    let u = user(&one, "judy").await;
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { one.clone() } else { two.clone() };
        tasks.push(tokio::spawn(async move {
            let sub = store
                .subscribe(
                    u,
                    &NewSubscription {
                        feed_url: format!("https://w{i}.example/feed"),
                        ..Default::default()
                    },
                )
                .await?;
            store
                .upsert_items(sub.feed_id, &items(25), unix_now())
                .await?;
            store.list_subscriptions(u).await?;
            Ok::<_, StoreError>(())
        }));
    }
    for task in tasks {
        task.await.unwrap().expect("no write fails");
    }
    assert_eq!(one.count_subscriptions(u).await.unwrap(), 40);
});

on_both_engines!(claims_are_exclusive_and_leases_expire, |db| {
    let store = db.migrated().await;
    let u = user(&store, "kim").await;
    for i in 0..60 {
        subscribe(&store, u, &format!("https://c{i}.example/feed")).await;
    }
    // A feed nobody follows is never due.
    let v = user(&store, "lee").await;
    let orphan = subscribe(&store, v, "https://orphan.example/feed").await;
    store.unsubscribe(v, orphan).await.unwrap();

    let now = unix_now() + 1;
    let claimers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = store
                        .claim_due_feeds(&format!("worker-{w}"), now, 7, 300)
                        .await
                        .unwrap();
                    if batch.is_empty() {
                        break;
                    }
                    mine.extend(batch.into_iter().map(|f| f.feed_id));
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(count, 60, "every due feed claimed");
    assert_eq!(all.len(), 60, "no feed claimed twice");

    // Leased feeds are not due again until the lease expires.
    assert!(
        store
            .claim_due_feeds("late", now, 100, 300)
            .await
            .unwrap()
            .is_empty()
    );
    // A stopping worker gives back what it did not start: due again at once, for anyone;
    // releasing someone else's lease does nothing.
    let given_back: Vec<i64> = all[..3].to_vec();
    assert_eq!(
        store
            .release_feeds("not-the-owner", &given_back)
            .await
            .unwrap(),
        0
    );
    let mut released = 0;
    for w in 0..4 {
        released += store
            .release_feeds(&format!("worker-{w}"), &given_back)
            .await
            .unwrap();
    }
    assert_eq!(released, 3);
    let retaken = store.claim_due_feeds("late", now, 100, 300).await.unwrap();
    let mut retaken: Vec<i64> = retaken.into_iter().map(|f| f.feed_id).collect();
    retaken.sort();
    assert_eq!(retaken, given_back);
    assert_eq!(store.release_feeds("late", &retaken).await.unwrap(), 3);
    let after_expiry = store
        .claim_due_feeds("rescuer", now + 301, 100, 300)
        .await
        .unwrap();
    assert_eq!(after_expiry.len(), 60, "a crashed worker's leases expire");
    let feed = after_expiry[0].clone();
    assert_eq!(feed.interval_minutes, 60);

    // The old owner lost the lease and cannot record; the new owner can.
    let record = FetchRecord {
        checked_at: now + 302,
        success: false,
        status: FetchStatus::Stopped,
        status_reason: Some("HTTP 404: the feed is gone".into()),
        next_check_at: now + 302,
        http_status: Some(404),
        error: Some("not found".into()),
        consecutive_failures: 1,
        parse_failures: 0,
        etag: Some("\"v1\"".into()),
        last_modified: None,
        cache_control: None,
        expires_at: None,
        retry_after_until: None,
    };
    assert!(
        !store
            .record_fetch(feed.feed_id, "worker-0", &record)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_fetch(feed.feed_id, "rescuer", &record)
            .await
            .unwrap()
    );
    let sub = store
        .list_subscriptions(u)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.feed_id == feed.feed_id)
        .unwrap();
    assert_eq!(sub.status, FetchStatus::Stopped);
    assert_eq!(sub.last_http_status, Some(404));
    assert_eq!(sub.last_error.as_deref(), Some("not found"));
    // A stopped feed is not due, even long after.
    let later = store
        .claim_due_feeds("x", now + 100_000, 100, 300)
        .await
        .unwrap();
    assert!(later.iter().all(|f| f.feed_id != feed.feed_id));
    assert_eq!(later.len(), 59);
    // Resuming makes it due again; a manual claim takes it whatever the schedule.
    store.resume_feed(feed.feed_id).await.unwrap();
    let manual = store
        .claim_feed(feed.feed_id, "manual", unix_now() + 200_000, 60)
        .await
        .unwrap()
        .expect("claimable");
    assert_eq!(manual.etag.as_deref(), Some("\"v1\""));
    assert!(
        store
            .claim_feed(feed.feed_id, "other", unix_now() + 200_001, 60)
            .await
            .unwrap()
            .is_none()
    );
});

// Claims go oldest due first (`next_check_at`, then `feed_id` among feeds due at the same
// instant). A claimed feed is leased, and once fetched its next check is later than any feed
// already waiting, so feeds due at one instant are all claimed before any of them is claimed
// again: high ids do not starve behind low ones however often those come due, even when the
// workers fall behind (here every fetched feed is due again a second later).
on_both_engines!(
    feeds_due_at_one_instant_are_all_claimed_before_any_again,
    |db| {
        let store = db.migrated().await;
        let u = user(&store, "ida").await;
        let mut feeds = Vec::new();
        for i in 0..30 {
            feeds.push(subscribe(&store, u, &format!("https://s{i}.example/feed")).await);
        }
        feeds.sort();
        let due = unix_now() - 1000;
        store
            .execute_raw(&format!(
                "UPDATE feed_fetch_state SET next_check_at = {due}"
            ))
            .await
            .unwrap();
        let mut claimed_once = std::collections::BTreeSet::new();
        let mut claimed_again = 0;
        for round in 0..12 {
            let now = due + 1 + round;
            let batch = store.claim_due_feeds("w", now, 4, 300).await.unwrap();
            assert_eq!(batch.len(), 4, "round {round}: the queue never runs dry");
            let mut again = Vec::new();
            for feed in batch {
                if !claimed_once.insert(feed.feed_id) {
                    again.push(feed.feed_id);
                }
                let record = FetchRecord {
                    checked_at: now,
                    success: true,
                    status: FetchStatus::Active,
                    status_reason: None,
                    next_check_at: now + 1,
                    http_status: Some(200),
                    error: None,
                    consecutive_failures: 0,
                    parse_failures: 0,
                    etag: None,
                    last_modified: None,
                    cache_control: None,
                    expires_at: None,
                    retry_after_until: None,
                };
                assert!(
                    store
                        .record_fetch(feed.feed_id, "w", &record)
                        .await
                        .unwrap()
                );
            }
            // (A batch comes back in id order, not claim order, hence the check per batch.)
            if !again.is_empty() {
                assert_eq!(
                    claimed_once.len(),
                    feeds.len(),
                    "round {round}: {again:?} claimed again before every feed was claimed once"
                );
            }
            claimed_again += again.len();
        }
        assert_eq!(claimed_once.into_iter().collect::<Vec<_>>(), feeds);
        assert_eq!(claimed_again, 12 * 4 - 30);
    }
);

/// The shared skip rule: outside CI a skip is reported and the test returns; under `CI=true`
/// the same skip fails the test, so CI never passes a test that checked nothing.
#[test]
fn a_skip_fails_under_ci_and_is_reported_elsewhere() {
    let reason = "not a real skip: the skip rule's own test";
    tidings_testkit::skip::report("storage::rehearsal", reason, false);
    let under_ci = std::panic::catch_unwind(|| {
        tidings_testkit::skip::report("storage::rehearsal", reason, true)
    });
    let message = under_ci.expect_err("a skip under CI=true fails");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("storage::rehearsal") && message.contains("CI=true"),
        "{message}"
    );
}

on_both_engines!(
    items_without_guid_or_link_are_known_by_the_parsers_identity,
    |db| {
        let store = db.migrated().await;
        let u = user(&store, "ivy").await;
        let sub = subscribe(&store, u, "https://quiet.example/rss").await;
        let feed_id = store.subscription(u, sub).await.unwrap().feed_id;
        let t0 = 1_800_000_000;
        // An item with neither guid nor link, whose sanitized summary differs from the feed's
        // (the http image is refused): the parser keys it by its text before sanitizing.
        let rss = "<rss version=\"2.0\"><channel><title>q</title><item><title>Note</title>\
        <pubDate>Tue, 05 Mar 2024 10:00:00 GMT</pubDate><description>&lt;p&gt;Hello \
        &lt;img src=\"http://x.example/i.png\"&gt;world&lt;/p&gt;</description></item></channel></rss>";
        let mut feed = tidings_feed::parse(rss.as_bytes(), &Default::default()).unwrap();
        feed.sanitize_html(&tidings_feed::Sanitizer::default());
        let parsed = &feed.items[0];
        let key = parsed.identity().key.clone();
        assert!(key.starts_with("h:"), "{key}");
        let item = NewItem {
            title: parsed.title.clone(),
            summary: parsed.summary.clone(),
            content: parsed.content.clone(),
            published: parsed.published.map(|t| t.timestamp()),
            identity_key: Some(key.clone()),
            ..Default::default()
        };
        // A row stored before identities came from the parser, under the key of its sanitized
        // summary HTML.
        let legacy_key = tidings_feed::item_identity(
            None,
            None,
            item.title.as_deref(),
            parsed.published,
            item.summary.as_deref(),
        )
        .key;
        assert_ne!(legacy_key, key);
        let legacy = NewItem {
            identity_key: Some(legacy_key),
            ..item.clone()
        };
        let counts = store.upsert_items(feed_id, &[legacy], t0).await.unwrap();
        assert_eq!(counts.inserted, 1);
        let id = store.feed_item_ids(feed_id).await.unwrap()[0];
        store
            .set_item_state(u, id, Some(true), Some(true))
            .await
            .unwrap();
        // Fetched again: the old row moves to the parser's key, with its state, not duplicated.
        let counts = store
            .upsert_items(feed_id, std::slice::from_ref(&item), t0 + 10)
            .await
            .unwrap();
        assert_eq!(
            (counts.inserted, counts.updated, counts.unchanged),
            (0, 0, 1)
        );
        assert_eq!(store.feed_item_ids(feed_id).await.unwrap(), [id]);
        let state = store.item(u, id).await.unwrap();
        assert!(state.is_read && state.is_starred);
        // The key given is the identity: a changed summary under it is an update.
        let edited = NewItem {
            summary: Some("<p>Hello world, edited</p>".into()),
            ..item.clone()
        };
        let counts = store
            .upsert_items(feed_id, &[edited], t0 + 20)
            .await
            .unwrap();
        assert_eq!((counts.inserted, counts.updated), (0, 1));
        // Without a key the store reads the summary as text, as the parser does: the same item.
        let keyless = NewItem {
            identity_key: None,
            ..item.clone()
        };
        let counts = store
            .upsert_items(feed_id, &[keyless], t0 + 30)
            .await
            .unwrap();
        assert_eq!((counts.inserted, counts.updated), (0, 1));
        assert_eq!(store.count_items(feed_id).await.unwrap(), 1);
    }
);

/// A SQLite database another process keeps locked past the busy timeout is "unavailable" (the
/// API answers 503 and Retry-After), not an internal error; an error in the request is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locked_past_the_busy_timeout_is_unavailable() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}/locked.db", dir.path().display());
    let mut options = StoreOptions::new(&url);
    options.busy_timeout = std::time::Duration::from_millis(200);
    let store = Store::connect(&options).await.unwrap();
    store.migrate().await.unwrap();
    let ann = user(&store, "ann").await;
    // Another process's writer, holding the lock.
    let mut holder = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    sqlx::raw_sql("BEGIN EXCLUSIVE")
        .execute(&mut holder)
        .await
        .unwrap();
    let error = store.create_group(ann, "News").await.unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    store.create_group(ann, "News").await.unwrap();
    let error = store.create_group(ann, "News").await.unwrap_err();
    assert!(
        !error.is_unavailable(),
        "a duplicate is no outage: {error:?}"
    );
    store.close().await;
}

/// A local stand-in between the store and PostgreSQL that accepts at once but connects each
/// client to the server only after `delay`: PostgreSQL on a loaded machine, slow to open a
/// session. Returns the address to connect to instead.
async fn slow_to_open(server: std::net::SocketAddr, delay: std::time::Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                if let Ok(mut upstream) = tokio::net::TcpStream::connect(server).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    address.to_string()
}

/// A PostgreSQL server that is there but slow is busy, not down: operations wait for a
/// connection (up to `BUSY_POOL_WAIT`, 10 s) and succeed, although opening each connection
/// takes far longer than the acquire timeout that makes an unreachable server fail fast; and
/// once the pool is full, operations queue for its connections. (Each connection here takes
/// 400 ms to open against an acquire timeout of 100 ms; 12 operations share 3 connections.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_busy_postgres_is_waited_for_not_refused() {
    let test = "storage::a_slow_or_busy_postgres_is_waited_for_not_refused";
    let Some(db) = tidings_testkit::TestDb::postgres(test).await else {
        return;
    };
    tidings_testkit::run_on(db, async |db: &tidings_testkit::TestDb| {
        let mut url = url::Url::parse(&db.url()).unwrap();
        let server = std::net::ToSocketAddrs::to_socket_addrs(&(
            url.host_str().unwrap(),
            url.port().unwrap_or(5432),
        ))
        .unwrap()
        .next()
        .unwrap();
        let proxy = slow_to_open(server, std::time::Duration::from_millis(400)).await;
        let (host, port) = proxy.split_once(':').unwrap();
        url.set_host(Some(host)).unwrap();
        url.set_port(Some(port.parse().unwrap())).unwrap();
        let mut options = StoreOptions::new(url.as_str());
        options.max_connections = 3;
        options.acquire_timeout = std::time::Duration::from_millis(100);
        let store = Store::connect(&options).await.unwrap();
        let started = std::time::Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let asked = std::time::Instant::now();
                let outcome = store.execute_raw("SELECT pg_sleep(0.1)").await;
                (outcome.map_err(|e| e.to_string()), asked.elapsed())
            }));
        }
        let mut failures = Vec::new();
        for task in tasks {
            let (outcome, took) = task.await.unwrap();
            if let Err(error) = outcome {
                failures.push(format!("{error} after {took:?}"));
            }
        }
        eprintln!(
            "12 operations on 3 slow connections in {:?}",
            started.elapsed()
        );
        assert!(failures.is_empty(), "{failures:?}");
        store.close().await;
    })
    .await;
}
