//! A user's label list on both engines, on every path that adds or takes labels (issue 33):
//! on SQLite it is each user's label names with their counts (migration 57), kept by the
//! paths that add labels and by triggers for what goes, without a by-label index.

use tidings_testkit::{TestDb, add_user as user, follow, on_both_engines};

use crate::arrival_dates::scalar;

use tidings_store::{NewItem, RuleInput, RuleScope, RuleSpec, Store, SyncOrder, SyncQuery};

const BASE: i64 = 1_700_000_000;

fn item(guid: &str, title: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(title.into()),
        content: Some(format!("<p>{title}</p>")),
        published: Some(BASE + guid.len() as i64 * 60),
        ..NewItem::default()
    }
}

fn rule(query: &str, label: &str) -> RuleInput {
    RuleInput {
        name: format!("{query} to {label}"),
        enabled: true,
        position: None,
        spec: RuleSpec {
            query: Some(query.into()),
            actions: vec![format!("label:{label}")],
            scope: RuleScope::default(),
            ..RuleSpec::default()
        },
    }
}

/// The id of the user's item titled `title`.
async fn id_of(store: &Store, user_id: i64, title: &str) -> i64 {
    let query = SyncQuery {
        order: SyncOrder::IdAscending,
        limit: 1000,
        ..SyncQuery::default()
    };
    let items = store.sync_items(user_id, &query).await.unwrap();
    items
        .iter()
        .find(|r| r.item.title.as_deref() == Some(title))
        .map(|r| r.item.id)
        .unwrap_or_else(|| panic!("no item {title:?}"))
}

/// Fails unless `user_id`'s label list is `expected` and is what their label rows carry, and,
/// on SQLite, unless every user's label counts are their rows' (`when`: the step).
async fn assert_labels(store: &Store, db: &TestDb, user_id: i64, expected: &[&str], when: &str) {
    let listed = store.list_item_labels(user_id).await.unwrap();
    assert_eq!(listed, expected, "{when}: the list");
    let distinct = scalar(
        db,
        &format!("SELECT COUNT(DISTINCT label) FROM item_labels WHERE user_id = {user_id}"),
    )
    .await;
    assert_eq!(distinct, expected.len() as i64, "{when}: the rows");
    if db.url().starts_with("sqlite:") {
        let counts = "SELECT user_id, label, COUNT(*) FROM item_labels GROUP BY user_id, label";
        let names = "SELECT user_id, label, items FROM item_label_names";
        let wrong = scalar(
            db,
            &format!(
                "SELECT (SELECT COUNT(*) FROM ({counts} EXCEPT {names}))
                      + (SELECT COUNT(*) FROM ({names} EXCEPT {counts}))"
            ),
        )
        .await;
        assert_eq!(wrong, 0, "{when}: every count is its rows'");
    }
}

on_both_engines!(
    the_label_list_follows_every_path_that_adds_or_takes_labels,
    |db| {
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let (_, feed) = follow(&store, ann, "https://wire.example/feed").await;
        follow(&store, bob, "https://wire.example/feed").await;
        for who in [ann, bob] {
            store
                .create_rule(who, &rule("climate", "Climate"))
                .await
                .unwrap();
        }
        store.create_rule(ann, &rule("rust", "Lang")).await.unwrap();

        // Rules at ingest: the fetch's own new items, two subscribers, two labels.
        let items = [
            item("a", "Climate one"),
            item("bb", "Climate two"),
            item("ccc", "Rust three"),
            item("dddd", "Plain four"),
        ];
        let written = store
            .store_fetch(feed, &items, BASE, &Default::default())
            .await
            .unwrap();
        assert_eq!(written.rules_applied, 5);
        assert_labels(&store, db, ann, &["Climate", "Lang"], "ingest").await;
        assert_labels(&store, db, bob, &["Climate"], "ingest").await;
        let (one, two) = (
            id_of(&store, ann, "Climate one").await,
            id_of(&store, ann, "Climate two").await,
        );
        let (three, four) = (
            id_of(&store, ann, "Rust three").await,
            id_of(&store, ann, "Plain four").await,
        );

        // By hand, twice (the second adds nothing).
        for _ in 0..2 {
            assert!(store.add_item_label(ann, four, "Climate").await.unwrap());
        }
        assert_labels(&store, db, ann, &["Climate", "Lang"], "by hand").await;

        // A backlog run: rows already there are not added again, a new label is.
        store
            .create_rule(ann, &rule("plain", "Plain"))
            .await
            .unwrap();
        store.run_rules_on_backlog(ann, feed).await.unwrap();
        assert_labels(&store, db, ann, &["Climate", "Lang", "Plain"], "backlog").await;

        // Applied once, row by row, and undone.
        let lang = store.create_rule(bob, &rule("rust", "Lang")).await.unwrap();
        let applied = store.apply_rule(bob, lang.id).await.unwrap();
        assert_eq!(applied.changed, 1);
        assert_labels(&store, db, bob, &["Climate", "Lang"], "applied").await;
        store
            .undo_rule_application(bob, applied.undo_id)
            .await
            .unwrap();
        assert_labels(&store, db, bob, &["Climate"], "undone").await;

        // Taken off the one item that had it: the label leaves the list.
        store.remove_item_label(ann, four, "Plain").await.unwrap();
        assert_labels(&store, db, ann, &["Climate", "Lang"], "removed").await;

        // Renamed onto an existing label: merged, counted once per item.
        store
            .rename_item_label(ann, "Lang", "Climate")
            .await
            .unwrap();
        assert_labels(&store, db, ann, &["Climate"], "merged").await;
        assert_eq!(
            store.item_labels(ann, &[three]).await.unwrap(),
            [(three, "Climate".to_string())]
        );
        store
            .rename_item_label(ann, "Climate", "Topics")
            .await
            .unwrap();
        assert_labels(&store, db, ann, &["Topics"], "renamed").await;
        // Onto itself: every row stays.
        assert_eq!(
            store
                .rename_item_label(ann, "Topics", "Topics")
                .await
                .unwrap(),
            4
        );
        assert_labels(&store, db, ann, &["Topics"], "renamed onto itself").await;

        // An item's deletion takes its labels, for every user; the last one takes the name.
        for id in [one, two] {
            store
                .execute_raw(&format!("DELETE FROM items WHERE id = {id}"))
                .await
                .unwrap();
        }
        assert_labels(&store, db, ann, &["Topics"], "items deleted").await;
        assert_labels(&store, db, bob, &[], "bob's last labelled items deleted").await;

        // A label deleted; a user deleted.
        assert!(store.add_item_label(bob, four, "Later").await.unwrap());
        assert_eq!(store.delete_item_label(ann, "Topics").await.unwrap(), 2);
        assert_labels(&store, db, ann, &[], "deleted").await;
        // A label nobody has (a folder's name goes through the same calls): nothing to do.
        assert_eq!(store.delete_item_label(bob, "Nope").await.unwrap(), 0);
        assert_eq!(
            store.rename_item_label(bob, "Nope", "Later").await.unwrap(),
            0
        );
        assert_labels(&store, db, bob, &["Later"], "bob's own").await;
        store.delete_user(bob).await.unwrap();
        assert_labels(&store, db, bob, &[], "user deleted").await;
    }
);

on_both_engines!(
    labels_stored_before_the_names_table_are_listed_and_counted,
    |db| {
        let store = db.open().await;
        store.migrate_to(56).await.unwrap();
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, "https://wire.example/feed").await;
        store
            .upsert_items(feed, &[item("a", "One"), item("bb", "Two")], BASE)
            .await
            .unwrap();
        store
            .execute_raw(&format!(
                "INSERT INTO item_labels (user_id, item_id, label, created_at)
             SELECT {ann}, id, 'Later', 0 FROM items;
             INSERT INTO item_labels (user_id, item_id, label, created_at)
             SELECT {ann}, MIN(id), 'Work', 0 FROM items"
            ))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        assert_labels(&store, db, ann, &["Later", "Work"], "upgraded").await;
        // And kept from there: the one Work item unlabelled, Work goes; Later stays with one.
        let one = id_of(&store, ann, "One").await;
        let two = id_of(&store, ann, "Two").await;
        let work = if store.item_labels(ann, &[one]).await.unwrap().len() == 2 {
            one
        } else {
            two
        };
        store.remove_item_label(ann, work, "Work").await.unwrap();
        store.remove_item_label(ann, work, "Later").await.unwrap();
        assert_labels(&store, db, ann, &["Later"], "after the upgrade").await;
    }
);
