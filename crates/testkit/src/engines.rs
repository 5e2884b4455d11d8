//! The both-engines harness: every storage test runs on SQLite (a fresh file) and on
//! PostgreSQL (a fresh schema, dropped afterwards) when `TIDINGS_TEST_POSTGRES_URL` is set.

use futures_util::FutureExt;
use tidings_store::{
    ItemFilter, ItemQuery, NewItem, NewSubscription, NewUser, Store, StoreOptions,
};

/// The environment variable naming the PostgreSQL server for tests.
pub const POSTGRES_ENV: &str = "TIDINGS_TEST_POSTGRES_URL";

/// A database a test runs on, removed when the test ends.
pub enum TestDb {
    /// A SQLite file in its own directory.
    Sqlite(tempfile::TempDir),
    /// A PostgreSQL schema on the test server.
    Postgres {
        /// The test server's URL, with the rights to create and drop schemas.
        admin_url: String,
        /// The schema this test owns.
        schema: String,
    },
}

impl TestDb {
    /// A new, empty SQLite database.
    pub fn sqlite() -> TestDb {
        TestDb::Sqlite(tempfile::tempdir().expect("temporary directory"))
    }

    /// A new, empty PostgreSQL schema, or `None` (with the reason printed, and a failure under
    /// `CI=true`) when no test server is configured.
    pub async fn postgres(test: &str) -> Option<TestDb> {
        let Ok(admin_url) = std::env::var(POSTGRES_ENV) else {
            crate::skip::skip(&format!("{test} on postgres"), crate::skip::NO_POSTGRES);
            return None;
        };
        let schema = format!("t_{:016x}", rand::random::<u64>());
        let admin = Store::connect(&StoreOptions::new(&admin_url))
            .await
            .expect("connect to the PostgreSQL test server");
        admin
            .execute_raw(&format!("CREATE SCHEMA {schema}"))
            .await
            .expect("create test schema");
        admin.close().await;
        Some(TestDb::Postgres { admin_url, schema })
    }

    /// The URL of this database.
    pub fn url(&self) -> String {
        match self {
            TestDb::Sqlite(dir) => format!("sqlite://{}", dir.path().join("tidings.db").display()),
            TestDb::Postgres { admin_url, schema } => {
                let separator = if admin_url.contains('?') { '&' } else { '?' };
                // Commits do not wait for the disk (`synchronous_commit=off`): a test database
                // need not survive a crash of its server, and the wait for each commit's flush
                // made the PostgreSQL half of the suite three times slower than SQLite's.
                format!(
                    "{admin_url}{separator}options=-c%20search_path%3D{schema}\
                     %20-c%20synchronous_commit%3Doff"
                )
            }
        }
    }

    /// The SQLite file's directory.
    pub fn dir(&self) -> Option<&std::path::Path> {
        match self {
            TestDb::Sqlite(dir) => Some(dir.path()),
            TestDb::Postgres { .. } => None,
        }
    }

    /// Opens a store on this database without migrating.
    pub async fn open(&self) -> Store {
        Store::connect(&StoreOptions::new(self.url()))
            .await
            .expect("open test database")
    }

    /// Opens and migrates a store on this database.
    pub async fn migrated(&self) -> Store {
        let store = self.open().await;
        store.migrate().await.expect("migrate");
        store
    }

    async fn drop_db(self) {
        if let TestDb::Postgres { admin_url, schema } = &self {
            let admin = Store::connect(&StoreOptions::new(admin_url))
                .await
                .expect("connect to the PostgreSQL test server");
            // Work the test's server started may still be writing when the body ends (an
            // import's first fetches finish on their own): the drop can meet it in a
            // deadlock, which PostgreSQL settles by failing one side. The drop is tried again
            // once the other side is through.
            let drop = format!("DROP SCHEMA {schema} CASCADE");
            let mut attempts = 0;
            loop {
                match admin.execute_raw(&drop).await {
                    Ok(()) => break,
                    Err(tidings_store::StoreError::Database(sqlx::Error::Database(error)))
                        if error.code().as_deref() == Some("40P01") && attempts < 5 =>
                    {
                        attempts += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    }
                    Err(error) => panic!("drop test schema {schema}: {error}"),
                }
            }
            admin.close().await;
        }
    }
}

/// Runs a test body on a fresh database and removes the database afterwards, also when the
/// body panics (the panic is then resumed).
pub async fn run_on(db: TestDb, body: impl AsyncFnOnce(&TestDb)) {
    let outcome = std::panic::AssertUnwindSafe(body(&db)).catch_unwind().await;
    db.drop_db().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Declares one async test body and generates a SQLite test and a PostgreSQL test from it
/// (`NAME::sqlite` and `NAME::postgres`).
#[macro_export]
macro_rules! on_both_engines {
    ($name:ident, |$db:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn body($db: &$crate::TestDb) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $crate::run_on($crate::TestDb::sqlite(), body).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let test = module_path!();
                if let Some(db) = $crate::TestDb::postgres(test).await {
                    $crate::run_on(db, body).await;
                }
            }
        }
    };
}

/// Creates an ordinary user without a password; returns the id.
pub async fn add_user(store: &Store, name: &str) -> i64 {
    store
        .create_user(&NewUser {
            username: name.into(),
            password_hash: None,
            is_admin: false,
        })
        .await
        .expect("create user")
        .id
}

/// Subscribes a user to a feed URL in the default group with plain SQL, for tests of
/// upgrades that write on an older schema (the store's own subscribe reads every column of
/// the current one); returns the feed's id.
pub async fn follow_on_old_schema(store: &Store, user_id: i64, url: &str) -> i64 {
    store
        .execute_raw(&format!(
            "INSERT INTO feeds (url, created_at, updated_at) VALUES ('{url}', 0, 0);
             INSERT INTO feed_fetch_state (feed_id) SELECT id FROM feeds WHERE url = '{url}';
             INSERT INTO subscriptions (user_id, feed_id, group_id, created_at)
                 SELECT {user_id}, f.id, g.id, 0 FROM feeds f, feed_groups g
                 WHERE f.url = '{url}' AND g.user_id = {user_id} AND g.is_default = TRUE"
        ))
        .await
        .expect("subscribe on an older schema");
    store
        .feed_id_by_url(url)
        .await
        .expect("read the feed")
        .expect("the feed")
}

/// Subscribes a user to a feed URL with the defaults; returns the subscription's and the
/// feed's ids.
pub async fn follow(store: &Store, user_id: i64, url: &str) -> (i64, i64) {
    let subscription = store
        .subscribe(
            user_id,
            &NewSubscription {
                feed_url: url.into(),
                ..Default::default()
            },
        )
        .await
        .expect("subscribe");
    (subscription.id, subscription.feed_id)
}

/// When the numbered test items of [`add_items`] are published: item n at
/// `ITEMS_BASE + n * 60`; also the time they are stored at.
pub const ITEMS_BASE: i64 = 1_700_000_000;

/// An item with guid `guid`, titled `Item {guid}`, with a paragraph of content, published at
/// `published`.
pub fn numbered_item(guid: &str, published: i64) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        title: Some(format!("Item {guid}")),
        content: Some(format!("<p>{guid}</p>")),
        published: Some(published),
        ..NewItem::default()
    }
}

/// Stores items `range` of a feed: item n is [`numbered_item`] `{prefix}-{n}`, published at
/// `ITEMS_BASE + n * 60`.
pub async fn add_items(store: &Store, feed_id: i64, prefix: &str, range: std::ops::Range<i64>) {
    let items: Vec<NewItem> = range
        .map(|n| numbered_item(&format!("{prefix}-{n}"), ITEMS_BASE + n * 60))
        .collect();
    store
        .upsert_items(feed_id, &items, ITEMS_BASE)
        .await
        .expect("store the items");
}

/// The titles of a user's items in a listing (`ItemFilter::All` leaves hidden ones out), at
/// most 200, sorted.
pub async fn listed_titles(store: &Store, user_id: i64, filter: ItemFilter) -> Vec<String> {
    let query = ItemQuery {
        filter,
        limit: 200,
        ..ItemQuery::default()
    };
    let page = store.list_items(user_id, &query).await.expect("list items");
    let mut titles: Vec<String> = page.items.into_iter().filter_map(|i| i.title).collect();
    titles.sort();
    titles
}
