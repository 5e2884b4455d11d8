//! Unit tests' stores on both engines (the integration tests have `tidings-testkit` for this).

use crate::{Store, StoreOptions};

/// Runs `body` on a new SQLite store in memory, then, when `TIDINGS_TEST_POSTGRES_URL` names a
/// server, on a PostgreSQL store in a schema of its own, dropped afterwards (also when the body
/// panics, whose panic is then resumed). Under CI (`CI=true`) a missing server is a failure:
/// the PostgreSQL half must not be skipped there unnoticed.
pub(crate) async fn on_each_engine(body: impl AsyncFn(&Store)) {
    let store = Store::connect(&StoreOptions::new("sqlite::memory:"))
        .await
        .unwrap();
    body(&store).await;
    let Ok(url) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "TIDINGS_TEST_POSTGRES_URL is not set: not tried on PostgreSQL"
        );
        return;
    };
    let schema = format!("t_{:016x}", rand::random::<u64>());
    let admin = Store::connect(&StoreOptions::new(&url)).await.unwrap();
    admin
        .execute_raw(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = Store::connect(&StoreOptions::new(format!(
        "{url}{separator}options=-c%20search_path%3D{schema}"
    )))
    .await
    .unwrap();
    let outcome =
        futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body(&store))).await;
    store.close().await;
    admin
        .execute_raw(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Migrates `store` and adds a user `name` without a password, answering the user's id.
pub(crate) async fn migrated_with_user(store: &Store, name: &str) -> i64 {
    store.migrate().await.unwrap();
    store
        .create_user(&crate::NewUser {
            username: name.into(),
            password_hash: None,
            is_admin: false,
        })
        .await
        .unwrap()
        .id
}
