//! A new subscriber's backlog, many feeds at once (an OPML import of feeds other users follow
//! already), on both engines: every item arrives once, in publication order within each feed,
//! and unsubscribing takes exactly the feed's rows. On PostgreSQL the triggers that do it look
//! the user's arrival rows up by key (migrations 60 to 62): the tests count the entries they
//! read, which grew with the square of the feeds when each feed's backlog read every row the
//! feeds before it had brought (a new user is one the planner's statistics do not know). New
//! items' numbering at commit reads only its own transaction's pending rows (migration 63).

use tidings_testkit::{TestDb, add_items, add_user as user, follow, on_both_engines};

use tidings_store::{Store, unix_now};

const FEEDS: i64 = 40;
const ITEMS: i64 = 25;

/// Runs `sql` on a connection of its own and answers the index entries read in the test's
/// `user_items` while it ran (PostgreSQL), or `None` (SQLite, which keeps no such count).
async fn index_reads_during(db: &TestDb, sql: &str) -> Option<i64> {
    reads_during(db, sql).await.map(|reads| reads.index)
}

/// What a statement read in the test's schema (PostgreSQL's statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reads {
    /// Index entries read in `user_items`.
    index: i64,
    /// Rows read in `user_items` by sequential scans.
    scanned: i64,
    /// Pages of `sync_pending`'s table visited (from the cache or the disk).
    pending_pages: i64,
}

/// Runs `sql` on a connection of its own and answers what it read (PostgreSQL), or `None`
/// (SQLite, which keeps no such count).
async fn reads_during(db: &TestDb, sql: &str) -> Option<Reads> {
    use sqlx::Connection;
    let url = db.url();
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut conn)
            .await
            .unwrap();
        return None;
    }
    let TestDb::Postgres { schema, .. } = db else {
        unreachable!("a URL that is not SQLite's is PostgreSQL's");
    };
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    // A backend reports what it read when it is idle, at most once a second unless told to
    // report at its next chance: each read of the count comes after such a report.
    let reads = format!(
        "SELECT (SELECT COALESCE(SUM(idx_tup_read), 0) FROM pg_stat_user_indexes
                 WHERE schemaname = '{schema}' AND relname = 'user_items')::BIGINT AS index,
                (SELECT COALESCE(SUM(seq_tup_read), 0) FROM pg_stat_user_tables
                 WHERE schemaname = '{schema}' AND relname = 'user_items')::BIGINT AS scanned,
                (SELECT COALESCE(SUM(heap_blks_hit + heap_blks_read), 0)
                 FROM pg_statio_user_tables
                 WHERE schemaname = '{schema}' AND relname = 'sync_pending')::BIGINT
                    AS pending_pages"
    );
    let count = async |conn: &mut sqlx::PgConnection| -> Reads {
        sqlx::query("SELECT pg_stat_force_next_flush()")
            .execute(&mut *conn)
            .await
            .unwrap();
        let (index, scanned, pending_pages) = sqlx::query_as(sqlx::AssertSqlSafe(reads.clone()))
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        Reads {
            index,
            scanned,
            pending_pages,
        }
    };
    // What other connections read before (the test's setup) is reported as they close, a
    // moment later: the count is taken once it holds still.
    let mut before = count(&mut conn).await;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let now = count(&mut conn).await;
        if now == before {
            break;
        }
        before = now;
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .unwrap();
    // The report of the statement's own transaction, then a fresh read of the count.
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(&mut conn)
        .await
        .unwrap();
    let after = count(&mut conn).await;
    Some(Reads {
        index: after.index - before.index,
        scanned: after.scanned - before.scanned,
        pending_pages: after.pending_pages - before.pending_pages,
    })
}

/// A feed `https://{name}.example/feed` that nobody follows and nothing fetches (suspended).
async fn unfollowed_feed(store: &Store, name: &str) -> i64 {
    let now = unix_now();
    let url = format!("https://{name}.example/feed");
    store
        .execute_raw(&format!(
            "INSERT INTO feeds (url, title, site_url, suspended, created_at, updated_at)
             VALUES ('{url}', 'Feed {name}', 'https://{name}.example/', TRUE, {now}, {now})"
        ))
        .await
        .unwrap();
    store.feed_id_by_url(&url).await.unwrap().unwrap()
}

/// SQL that subscribes a user to every feed in one transaction, as an import does.
fn subscribe_to_every_feed(user_id: i64) -> String {
    format!(
        "BEGIN;
         INSERT INTO subscriptions (user_id, feed_id, group_id, created_at)
             SELECT {user_id}, f.id, g.id, 0 FROM feeds f, feed_groups g
             WHERE g.user_id = {user_id} AND g.is_default = TRUE;
         COMMIT;"
    )
}

/// The user's arrival rows as (feed, item's publication time), in arrival order.
async fn arrivals(db: &TestDb, user_id: i64) -> Vec<(i64, i64)> {
    use sqlx::Connection;
    let sql = format!(
        "SELECT i.feed_id, i.published_at FROM user_items u JOIN items i ON i.id = u.item_id
         WHERE u.user_id = {user_id} ORDER BY u.seq"
    );
    let sql = sqlx::AssertSqlSafe(sql);
    let url = db.url();
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query_as(sql).fetch_all(&mut conn).await.unwrap()
    } else {
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query_as(sql).fetch_all(&mut conn).await.unwrap()
    }
}

on_both_engines!(a_new_user_subscribing_to_many_feeds_reads_by_key, |db| {
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let mut feeds = Vec::new();
    for f in 0..FEEDS {
        let (_, feed) = follow(&store, ann, &format!("https://f{f}.example/feed")).await;
        add_items(&store, feed, &format!("f{f}"), 0..ITEMS).await;
        feeds.push(feed);
    }
    let bob = user(&store, "bob").await;
    // The statistics know ann's rows and not bob's, as for any user who signed up since the
    // last `ANALYZE`.
    store.execute_raw("ANALYZE").await.unwrap();
    store.close().await;

    // All of ann's feeds in one transaction, as an import does.
    let all = (FEEDS * ITEMS) as usize;
    let reads = index_reads_during(db, &subscribe_to_every_feed(bob)).await;
    let rows = arrivals(db, bob).await;
    assert_eq!(rows.len(), all, "every item of every feed, once");
    for feed in &feeds {
        let dates: Vec<i64> = rows.iter().filter(|r| r.0 == *feed).map(|r| r.1).collect();
        assert_eq!(dates.len(), ITEMS as usize, "feed {feed}");
        assert!(dates.is_sorted(), "feed {feed} oldest first: {dates:?}");
    }
    if let Some(reads) = reads {
        // A look-up per item, each finding nothing: 0 entries read (39,164 before migration
        // 60, which read the rows of the feeds before for each feed).
        assert!(reads <= 2 * all as i64, "{reads} index entries read");
    }

    // Half of the feeds unsubscribed: their rows go, the others stay.
    let gone = &feeds[..(FEEDS / 2) as usize];
    let list = id_list(gone);
    let reads = index_reads_during(
        db,
        &format!("DELETE FROM subscriptions WHERE user_id = {bob} AND feed_id IN ({list})"),
    )
    .await;
    let rows = arrivals(db, bob).await;
    assert_eq!(rows.len(), all / 2);
    assert!(rows.iter().all(|r| !gone.contains(&r.0)));
    if let Some(reads) = reads {
        // A look-up and a delete by key per row that goes: 1,000 entries (reading all of
        // the user's rows for each feed, as before migration 60, is about 15,000 by count).
        assert!(reads <= 3 * (all / 2) as i64, "{reads} index entries read");
    }
});

on_both_engines!(
    the_first_subscriber_of_a_new_installation_reads_by_key,
    |db| {
        // Feeds with items and no subscriber yet: no arrival rows at all, as on a new
        // installation (or one that a bulk load filled), and no statistics. The first
        // subscription's trigger is planned now, on a connection that keeps its plans: its
        // question whether the user already had each item, planned as a scan of the empty table,
        // stayed a scan while the rows grew, so one user's import read all the rows the feeds
        // before had brought, for every item (generating the sync benchmark's 20 users of 500
        // feeds took 25 minutes). Since migration 61 the unique key answers it as rows go in.
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        for f in 0..FEEDS {
            let feed = unfollowed_feed(&store, &format!("g{f}")).await;
            add_items(&store, feed, &format!("g{f}"), 0..ITEMS).await;
        }
        store.close().await;

        let all = (FEEDS * ITEMS) as usize;
        let reads = reads_during(db, &subscribe_to_every_feed(ann)).await;
        let rows = arrivals(db, ann).await;
        assert_eq!(rows.len(), all, "every item of every feed, once");
        if let Some(Reads { index, scanned, .. }) = reads {
            // The unique key's check per item, each finding nothing: no row read by a scan
            // (975,000 rows before migration 61: for each item, every row the feeds before it
            // had brought).
            assert_eq!(
                scanned, 0,
                "rows read by sequential scans ({index} index entries)"
            );
            assert!(index <= 2 * all as i64, "{index} index entries read");
        }
    }
);

on_both_engines!(
    the_first_unsubscription_of_a_new_installation_reads_by_key,
    |db| {
        // The same hazard for a subscription's end: its trigger's plan is made at the first
        // unsubscription on a connection. Made while no arrival rows exist (a new
        // installation whose first user tries a feed and drops it), the per-item look-up was
        // planned as a scan of the empty table, and it stayed one: every later unsubscription
        // on that connection read all the rows for each of its feed's items (396,500 rows
        // here before migration 62).
        let store = db.migrated().await;
        let ann = user(&store, "ann").await;
        let mut feeds = Vec::new();
        for f in 0..=FEEDS {
            let feed = unfollowed_feed(&store, &format!("h{f}")).await;
            // The last feed stays empty: the one tried and dropped first.
            if f < FEEDS {
                add_items(&store, feed, &format!("h{f}"), 0..ITEMS).await;
            }
            feeds.push(feed);
        }
        store.close().await;
        let tried = feeds[FEEDS as usize];
        let gone = &feeds[..(FEEDS / 2) as usize];
        let list = id_list(gone);

        let all = (FEEDS * ITEMS) as usize;
        let sql = format!(
            "BEGIN;
             INSERT INTO subscriptions (user_id, feed_id, group_id, created_at)
                 SELECT {ann}, {tried}, g.id, 0 FROM feed_groups g
                 WHERE g.user_id = {ann} AND g.is_default = TRUE;
             COMMIT;
             BEGIN;
             DELETE FROM subscriptions WHERE user_id = {ann} AND feed_id = {tried};
             COMMIT;
             {}
             BEGIN;
             DELETE FROM subscriptions WHERE user_id = {ann} AND feed_id IN ({list});
             COMMIT;",
            subscribe_to_every_feed(ann)
        );
        let reads = reads_during(db, &sql).await;
        let rows = arrivals(db, ann).await;
        assert_eq!(rows.len(), all / 2, "the other half of the feeds' items");
        assert!(rows.iter().all(|r| !gone.contains(&r.0)));
        if let Some(Reads { index, scanned, .. }) = reads {
            // A look-up and a delete by key per row that goes, and the backlog's checks.
            assert_eq!(
                scanned, 0,
                "rows read by sequential scans ({index} index entries)"
            );
            assert!(index <= 4 * all as i64, "{index} index entries read");
        }
    }
);

on_both_engines!(a_commit_reads_only_its_own_pending_items, |db| {
    // Items wait for their transaction's commit in `sync_pending` (PostgreSQL's table; SQLite
    // numbers them as they are written), which then numbers and deletes them, leaving dead
    // rows until a vacuum (autovacuum is off on the benchmark machine, and can lag anywhere).
    // The commit read every page of them: 8.1 ms a fetch at 100,000 feeds. Since migration 63
    // it reads its own rows by the transaction.
    let store = db.migrated().await;
    let ann = user(&store, "ann").await;
    let (_, feed) = follow(&store, ann, "https://p.example/feed").await;
    add_items(&store, feed, "p", 0..ITEMS).await;
    store.close().await;
    if matches!(db, TestDb::Postgres { .. }) {
        // 20,000 rows of an earlier transaction, dead after its commit (their items do not
        // exist: nothing is numbered).
        reads_during(
            db,
            "INSERT INTO sync_pending (item_id) SELECT -g FROM generate_series(1, 20000) g",
        )
        .await;
        // An item pending again in a transaction of its own (as a feed merge moves one).
        let reads = reads_during(
            db,
            "BEGIN;
             INSERT INTO sync_pending (item_id) SELECT MAX(id) FROM items;
             COMMIT;",
        )
        .await
        .expect("PostgreSQL counts what it reads");
        // Its own row's pages (7, with 20,000 dead rows or 100,000), not every page of the
        // dead rows (96 before migration 63).
        assert!(reads.pending_pages <= 12, "{reads:?}");
    }
    let rows = arrivals(db, ann).await;
    assert_eq!(rows.len(), ITEMS as usize, "every item once: {rows:?}");
});

/// Ids written as an SQL list's contents: `1,2,3`.
fn id_list(ids: &[i64]) -> String {
    ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}
