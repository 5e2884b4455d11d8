//! The arrival rows' copy of their item's feed and date (migration 56, issue 38), on both
//! engines: right after every path that writes or changes arrival rows (new items, a
//! subscription's backlog, a paused subscription resumed, a feed merge, a new date, a rule's
//! hide undone), filled in for rows stored before the upgrade by a resumable backfill, and the
//! unread ids read from them the same as from the items.

use tidings_testkit::{
    ITEMS_BASE, TestDb, add_items, add_user as user, follow, numbered_item, on_both_engines,
};

use tidings_store::{
    MarkReadScope, RuleInput, RuleScope, RuleSpec, Store, SubscriptionChanges, SyncIds, SyncOrder,
    SyncQuery,
};

const BASE: i64 = ITEMS_BASE;

/// One number from the test's database (the label tests' too).
pub(crate) async fn scalar(db: &TestDb, sql: &str) -> i64 {
    use sqlx::Connection;
    let url = db.url();
    let sql = sqlx::AssertSqlSafe(sql.to_string());
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap()
    } else {
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap()
    }
}

/// The arrival rows whose feed or date is not their item's (or missing).
async fn wrong_copies(db: &TestDb) -> i64 {
    scalar(
        db,
        "SELECT COUNT(*) FROM user_items u LEFT JOIN items i ON i.id = u.item_id
         WHERE i.id IS NULL OR u.feed_id IS NULL OR u.published_at IS NULL
            OR u.feed_id <> i.feed_id OR u.published_at <> i.published_at",
    )
    .await
}

/// The user's unread sync ids as the Fever API lists them, and the same worked out from the
/// items: a page of every arrival row, each item's read state from the listing of whole
/// items (which reads the items' own feed and date).
async fn unread_both_ways(store: &Store, user_id: i64) -> (Vec<i64>, Vec<i64>) {
    let unread = SyncQuery {
        read: Some(false),
        ids_are: SyncIds::Arrival,
        ..SyncQuery::default()
    };
    let listed = store.sync_id_list(user_id, &unread).await.unwrap();
    let every = SyncQuery {
        ids_are: SyncIds::Arrival,
        order: SyncOrder::IdAscending,
        limit: 1000,
        ..SyncQuery::default()
    };
    let from_items: Vec<i64> = store
        .sync_items(user_id, &every)
        .await
        .unwrap()
        .iter()
        .filter(|entry| !entry.item.is_read)
        .map(|entry| entry.sync_id)
        .collect();
    (listed, from_items)
}

fn hide_rule(query: &str) -> RuleInput {
    RuleInput {
        name: "hide".into(),
        enabled: true,
        position: None,
        spec: RuleSpec {
            scope: RuleScope::default(),
            query: Some(query.into()),
            actions: vec!["hide".into()],
            ..RuleSpec::default()
        },
    }
}

on_both_engines!(arrival_rows_carry_their_items_feed_and_date, |db| {
    let store = db.migrated().await;
    let (ann, bob, cat) = (
        user(&store, "ann").await,
        user(&store, "bob").await,
        user(&store, "cat").await,
    );
    let (_, feed_a) = follow(&store, ann, "https://a.example/feed").await;
    let (sub_b, feed_b) = follow(&store, ann, "https://b.example/feed").await;
    follow(&store, bob, "https://b.example/feed").await;
    add_items(&store, feed_a, "a", 0..5).await;
    add_items(&store, feed_b, "b", 0..4).await;
    assert_eq!(wrong_copies(db).await, 0, "new items");

    // A subscription's backlog.
    follow(&store, cat, "https://a.example/feed").await;
    assert_eq!(wrong_copies(db).await, 0, "a new subscription's backlog");

    // A feed that gives an item another date.
    let mut redated = numbered_item("a-1", BASE + 10_000);
    redated.content = Some("<p>changed</p>".into());
    store.upsert_items(feed_a, &[redated], BASE).await.unwrap();
    assert_eq!(wrong_copies(db).await, 0, "an item given another date");

    // Paused, items arrive, resumed: what arrived meanwhile comes as a backlog.
    let paused = |suspended| SubscriptionChanges {
        suspended: Some(suspended),
        ..SubscriptionChanges::default()
    };
    store
        .update_subscription(ann, sub_b, &paused(true))
        .await
        .unwrap();
    add_items(&store, feed_b, "b", 4..6).await;
    store
        .update_subscription(ann, sub_b, &paused(false))
        .await
        .unwrap();
    assert_eq!(
        wrong_copies(db).await,
        0,
        "a resumed subscription's backlog"
    );

    // A rule hides items, and its undo puts their rows back.
    let rule = store.create_rule(ann, &hide_rule("b-2")).await.unwrap();
    let applied = store.apply_rule(ann, rule.id).await.unwrap();
    assert!(applied.changed > 0);
    store
        .undo_rule_application(ann, applied.undo_id)
        .await
        .unwrap();
    assert_eq!(wrong_copies(db).await, 0, "rows put back by a rule's undo");

    // Feed B merged into feed A: ann follows both, so her rows of B's items stay and name A.
    store
        .move_feed(feed_b, "https://a.example/feed", BASE)
        .await
        .unwrap();
    assert_eq!(wrong_copies(db).await, 0, "a feed merge");

    // The unread ids read from the arrival rows are the items' verdicts: under a watermark,
    // with a state row that reads an item, and one that makes an item under it unread.
    let (listed, from_items) = unread_both_ways(&store, ann).await;
    assert!(!listed.is_empty());
    assert_eq!(listed, from_items);
    store
        .mark_read(ann, &MarkReadScope::Feed(feed_a), Some(BASE + 2 * 60))
        .await
        .unwrap();
    let every: Vec<i64> = store
        .sync_item_ids(
            ann,
            &SyncQuery {
                ids_are: SyncIds::Arrival,
                order: SyncOrder::IdAscending,
                limit: 1000,
                ..SyncQuery::default()
            },
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.item_id)
        .collect();
    store
        .mark_read(ann, &MarkReadScope::Ids(vec![*every.last().unwrap()]), None)
        .await
        .unwrap();
    store
        .set_items_state(ann, &every[..1], Some(false), None)
        .await
        .unwrap();
    let (listed_after, from_items_after) = unread_both_ways(&store, ann).await;
    assert_eq!(listed_after, from_items_after);
    assert!(listed_after.len() < listed.len(), "the marks read some");
});

on_both_engines!(
    rows_stored_before_the_upgrade_are_filled_in_resumably,
    |db| {
        let store = db.open().await;
        store.migrate_to(55).await.unwrap();
        let ann = user(&store, "ann").await;
        let (_, feed_a) = follow(&store, ann, "https://a.example/feed").await;
        let (_, feed_b) = follow(&store, ann, "https://b.example/feed").await;
        add_items(&store, feed_a, "a", 0..6).await;
        add_items(&store, feed_b, "b", 0..5).await;
        store.migrate().await.unwrap();
        assert_eq!(
            wrong_copies(db).await,
            11,
            "the upgrade itself writes no row"
        );
        store
            .mark_read(ann, &MarkReadScope::Feed(feed_a), Some(BASE + 3 * 60))
            .await
            .unwrap();
        // Until the backfill is done the unread ids are read from the items.
        let (before, from_items) = unread_both_ways(&store, ann).await;
        assert_eq!(before, from_items);
        assert_eq!(before.len(), 8, "three of feed A's six under the watermark");

        // Two item ids a step: each step commits its rows and where it stopped.
        let span = scalar(db, "SELECT MAX(item_id) - MIN(item_id) + 1 FROM user_items").await;
        let first = store.backfill_arrival_dates(2).await.unwrap();
        assert!((1..=2).contains(&first.indexed), "{first:?}");
        assert!(!first.is_done());
        assert_eq!(wrong_copies(db).await, 11 - first.indexed as i64);
        // A store opened afresh (a restart) goes on from there.
        let again = db.open().await;
        let mut steps = 1;
        loop {
            let step = again.backfill_arrival_dates(2).await.unwrap();
            steps += 1;
            if step.is_done() {
                break;
            }
            assert!(steps < 100, "the backfill ends");
        }
        assert_eq!(steps, (span + 1) / 2, "{span} item ids, two a step");
        assert_eq!(wrong_copies(db).await, 0);
        let done = again.backfill_arrival_dates(2).await.unwrap();
        assert!(done.is_done());
        assert_eq!(done.indexed, 0);
        let (after, from_items) = unread_both_ways(&again, ann).await;
        assert_eq!(after, before);
        assert_eq!(after, from_items);
    }
);
