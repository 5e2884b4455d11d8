//! How the store reaches a PostgreSQL server on this machine: without TLS when the URL leaves
//! it to the default (encryption on loopback protects nothing and costs both processes CPU on
//! every message), with TLS when the URL asks for it, and with TLS when the server takes
//! nothing else.

use tidings_store::{Store, StoreOptions};
use tidings_testkit::engines::POSTGRES_ENV;
use tidings_testkit::private_postgres::{
    NO_SERVER_PROGRAMS, PrivatePostgres, PrivatePostgresError,
};
use tidings_testkit::skip;

/// Whether the store's connections are encrypted, by PostgreSQL's own account: the store
/// runs a statement (its connection then waits in the pool), and a connection of the test's
/// own (`observer`) looks that connection up by the application name in `url`.
async fn encrypted(store: &Store, observer: &str, application: &str) -> bool {
    use sqlx::Connection;
    store.ping().await.expect("the store answers");
    let mut conn = sqlx::PgConnection::connect(observer).await.unwrap();
    let found: Vec<bool> = sqlx::query_scalar(
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
         WHERE a.application_name = $1",
    )
    .bind(application)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    assert!(!found.is_empty(), "no connection named {application}");
    assert!(found.iter().all(|&ssl| ssl == found[0]), "{found:?}");
    found[0]
}

/// `url` with one more query parameter.
fn with(url: &str, parameter: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{parameter}")
}

/// A name for a test's connections no other test uses.
fn application() -> String {
    format!("tidings-tls-{:016x}", rand::random::<u64>())
}

#[tokio::test]
async fn a_loopback_server_is_reached_in_plain_unless_the_url_asks_for_tls() {
    let test = "a_loopback_server_is_reached_in_plain_unless_the_url_asks_for_tls";
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        skip::skip(test, skip::NO_POSTGRES);
        return;
    };
    let name = application();
    let store = Store::connect(&StoreOptions::new(with(
        &url,
        &format!("application_name={name}"),
    )))
    .await
    .unwrap();
    assert!(
        !encrypted(&store, &url, &name).await,
        "{url} left TLS to the default"
    );
    store.close().await;
    let offers_tls = {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        let ssl: String = sqlx::query_scalar("SHOW ssl")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        ssl == "on"
    };
    if !offers_tls {
        skip::skip(
            &format!("{test}: sslmode=require"),
            "the test server has ssl = off (Debian's package turns it on)",
        );
        return;
    }
    let name = application();
    let asked = with(&url, &format!("sslmode=require&application_name={name}"));
    let store = Store::connect(&StoreOptions::new(&asked)).await.unwrap();
    assert!(
        encrypted(&store, &url, &name).await,
        "{asked} asked for TLS"
    );
    store.close().await;
}

#[tokio::test]
async fn a_loopback_server_that_takes_only_tls_is_reached_over_tls() {
    let test = "a_loopback_server_that_takes_only_tls_is_reached_over_tls";
    let server = match PrivatePostgres::start_tls_only() {
        Ok(server) => server,
        Err(PrivatePostgresError::NotInstalled) => {
            skip::skip(test, NO_SERVER_PROGRAMS);
            return;
        }
        Err(error) => panic!("cannot start a private PostgreSQL server: {error}"),
    };
    // The plain attempt is refused (no pg_hba.conf line for it): the store does not give up.
    let name = application();
    let url = with(&server.url(), &format!("application_name={name}"));
    let store = Store::connect(&StoreOptions::new(&url))
        .await
        .expect("connect over TLS after the plain attempt is refused");
    let observer = with(&server.url(), "sslmode=require");
    assert!(encrypted(&store, &observer, &name).await);
    store.close().await;
    // Asked for plain, it is refused, and says so.
    let plain = with(&server.url(), "sslmode=disable");
    let error = Store::connect(&StoreOptions::new(&plain))
        .await
        .expect_err("a plain connection is refused");
    assert!(error.to_string().contains("no encryption"), "{error}");
}
