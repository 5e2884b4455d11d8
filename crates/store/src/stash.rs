//! A few PostgreSQL connections kept out of sqlx's pool between the sync reads, so that the
//! next operation runs on one at once, without the round trip sqlx makes as each connection
//! goes back to its pool.
//!
//! sqlx 0.9 checks every connection returned to its pool with a ping (a `Sync` message and
//! its answer, in a task of its own: `return_to_pool` in sqlx-core's `pool/connection.rs`),
//! with no option to leave it out. The sync calls apps make most are one or a few short
//! statements each, and on `stream/items/ids` that ping was about 9 % of the server's CPU
//! (issue 29, tenth round of crates/server/BENCHMARKS.md). The stash holds the
//! `PoolConnection` itself, which the pool still counts as in use, so its size and
//! `max_connections` hold; every operation ([`crate::Store::postgres_connection`]) takes a
//! stashed connection before asking the pool, so none waits on the pool while one sits here.
//!
//! What the ping stood for, and what stands for it here:
//! - A connection whose operation failed, or whose future was dropped mid-statement, is never
//!   stashed: only an operation that finished hands its connection back ([`Reusable::reuse`],
//!   called after its body); an early return by `?` or a cancelled request drops the
//!   [`Reusable`], and the connection goes back to the pool through sqlx's own check.
//! - A transaction left open, or a rollback queued by a dropped transaction, is refused as it
//!   is handed back; that connection goes to the pool.
//! - The server's side: a stashed connection is handed out only within
//!   [`crate::PING_IDLE_AFTER`] of its last statement, the trust the pool gives its own idle
//!   connections before it pings them (`connect_postgres`); older ones go back to the pool.
//! - The pool's max lifetime and idle time-out apply as a connection comes back to it: one
//!   goes back at the latest [`STASH_ROUND`] after it left the pool.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, Postgres};

/// The longest a connection goes from stash to stash without going back to sqlx's pool (and
/// its check, max lifetime and idle time-out).
pub(crate) const STASH_ROUND: Duration = Duration::from_secs(10);

/// Connections handed back by finished reads, newest last. Shared by a store's clones.
pub(crate) struct ConnectionStash {
    slots: Mutex<Slots>,
    /// The most connections kept (0 for a SQLite store).
    capacity: usize,
    /// How long a connection may be out of the pool ([`STASH_ROUND`]; shorter in tests).
    round: Duration,
}

#[derive(Default)]
struct Slots {
    /// Ordered by `since`, oldest first: connections are pushed and popped at the end.
    kept: Vec<Stashed>,
    /// Set by [`ConnectionStash::close`]: nothing is kept any more, so that closing the pool
    /// (which waits for every connection out of it) ends.
    closed: bool,
}

struct Stashed {
    connection: PoolConnection<Postgres>,
    /// When it left the pool.
    out_since: Instant,
    /// When its last operation finished.
    since: Instant,
}

impl ConnectionStash {
    /// A stash of at most `capacity` connections.
    pub(crate) fn new(capacity: usize) -> ConnectionStash {
        ConnectionStash {
            slots: Mutex::default(),
            capacity,
            round: STASH_ROUND,
        }
    }

    /// A stash whose connections go back to the pool after `round` (tests).
    #[cfg(test)]
    pub(crate) fn with_round(capacity: usize, round: Duration) -> ConnectionStash {
        ConnectionStash {
            slots: Mutex::default(),
            capacity,
            round,
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection stashed last, with when it left the pool, if it is fresh enough; the
    /// stale ones go back to the pool.
    pub(crate) fn take(&self) -> Option<(PoolConnection<Postgres>, Instant)> {
        let mut stale = Vec::new();
        let found = {
            let mut slots = self.slots();
            loop {
                match slots.kept.pop() {
                    None => break None,
                    Some(s) if self.fresh(&s) => break Some((s.connection, s.out_since)),
                    // Idle or out of the pool too long: to the pool; look at the next.
                    Some(s) => stale.push(s.connection),
                }
            }
        };
        // Dropped outside the lock: each spawns sqlx's return to the pool.
        drop(stale);
        found
    }

    fn fresh(&self, s: &Stashed) -> bool {
        s.since.elapsed() < crate::PING_IDLE_AFTER && s.out_since.elapsed() < self.round
    }

    /// Keeps `connection` (out of the pool since `out_since`) for the next operation when it
    /// is fit for one and there is room; otherwise it goes back to the pool. Connections
    /// stashed too long ago go back too, so that none stays out of the pool under a light
    /// load that never empties the stash.
    fn put(&self, connection: PoolConnection<Postgres>, out_since: Instant) {
        // Not in a transaction (sqlx's count of the ones it began), and nothing queued to
        // send (sqlx's own test of its write buffer), such as the rollback of a transaction
        // dropped unfinished: a connection in either state goes through the pool's check,
        // which sends what is queued.
        let fit = !connection.is_in_transaction()
            && !connection.should_flush()
            && out_since.elapsed() < self.round;
        let (refused, stale) = {
            let mut slots = self.slots();
            let stale_count = slots.kept.iter().take_while(|s| !self.fresh(s)).count();
            let stale: Vec<Stashed> = slots.kept.drain(..stale_count).collect();
            let refused = if fit && !slots.closed && slots.kept.len() < self.capacity {
                slots.kept.push(Stashed {
                    connection,
                    out_since,
                    since: Instant::now(),
                });
                None
            } else {
                Some(connection)
            };
            (refused, stale)
        };
        drop(refused);
        drop(stale);
    }

    /// Gives every stashed connection back to the pool and keeps none from now on (before
    /// the pool is closed).
    pub(crate) fn close(&self) {
        let kept = {
            let mut slots = self.slots();
            slots.closed = true;
            std::mem::take(&mut slots.kept)
        };
        drop(kept);
    }

    /// How many connections are stashed now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots().kept.len()
    }
}

impl Drop for ConnectionStash {
    fn drop(&mut self) {
        // sqlx returns a dropped `PoolConnection` to its pool in a task of the runtime, and
        // panics without one. The stash goes with the store's last clone, and so does the
        // pool: outside a runtime its connections are closed here instead.
        if tokio::runtime::Handle::try_current().is_err() {
            for s in std::mem::take(&mut self.slots().kept) {
                drop(s.connection.leak());
            }
        }
    }
}

/// A PostgreSQL connection for one read that may go back to the stash when the read has
/// finished ([`Reusable::reuse`]); dropped instead, it goes back to the pool.
pub(crate) struct Reusable<'s> {
    stash: &'s ConnectionStash,
    connection: PoolConnection<Postgres>,
    out_since: Instant,
}

impl<'s> Reusable<'s> {
    /// `connection`, out of the pool since `out_since`, to go back to `stash` when its read
    /// has finished.
    pub(crate) fn new(
        stash: &'s ConnectionStash,
        connection: PoolConnection<Postgres>,
        out_since: Instant,
    ) -> Reusable<'s> {
        Reusable {
            stash,
            connection,
            out_since,
        }
    }

    /// Hands the connection back after a read that finished: to the stash if it is fit.
    pub(crate) fn reuse(self) {
        self.stash.put(self.connection, self.out_since);
    }
}

impl Deref for Reusable<'_> {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.connection
    }
}

impl DerefMut for Reusable<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.connection
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, StoreOptions, with_db};
    use std::sync::Arc;

    /// A store on the PostgreSQL test server (no schema needed: these read no table) whose
    /// stash hands connections back to the pool after `round`, or `None` (with a failure
    /// under `CI=true`) when no server is configured.
    async fn postgres_store(round: Duration) -> Option<Store> {
        let Ok(url) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "TIDINGS_TEST_POSTGRES_URL is not set: the stash was not tried"
            );
            return None;
        };
        let mut store = Store::connect(&StoreOptions::new(url)).await.unwrap();
        store.stash = Arc::new(ConnectionStash::with_round(4, round));
        Some(store)
    }

    /// The pool of a PostgreSQL store.
    fn pool_of(store: &Store) -> &sqlx::PgPool {
        match &*store.pools {
            crate::Pools::Postgres(pool) => pool,
            crate::Pools::Sqlite { .. } => unreachable!("a PostgreSQL store"),
        }
    }

    /// The backend serving a read through the stash.
    async fn backend(store: &Store) -> crate::Result<i32> {
        Ok(with_db!(store, reuse, |db| {
            sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(db)
                .await?
        }))
    }

    /// Whether a read through the stash runs outside any transaction left open before it:
    /// then each of its statements is a transaction of its own, with an id of its own.
    async fn own_transactions(store: &Store) -> crate::Result<bool> {
        let mut connection = store.reusable_connection(pool_of(store)).await?;
        let first: i64 = sqlx::query_scalar("SELECT txid_current()")
            .fetch_one(&mut *connection)
            .await?;
        let second: i64 = sqlx::query_scalar("SELECT txid_current()")
            .fetch_one(&mut *connection)
            .await?;
        connection.reuse();
        Ok(first != second)
    }

    /// A finished read's connection serves the next one, without the pool.
    #[tokio::test]
    async fn finished_reads_hand_their_connection_on() {
        let Some(store) = postgres_store(STASH_ROUND).await else {
            return;
        };
        let first = backend(&store).await.unwrap();
        assert_eq!(store.stash.len(), 1, "kept");
        assert_eq!(backend(&store).await.unwrap(), first, "the same connection");
        assert_eq!(store.stash.len(), 1);
        // Any operation takes it before asking the pool.
        store.ping().await.unwrap();
        assert_eq!(store.stash.len(), 0, "taken, and given to the pool after");
        store.close().await;
    }

    /// A read that failed, or was dropped mid-statement, gives its connection to the pool
    /// (which checks it), never to the next read; the reads after it answer right.
    #[tokio::test]
    async fn failed_and_cancelled_reads_are_not_kept() {
        let Some(store) = postgres_store(STASH_ROUND).await else {
            return;
        };
        let failed: crate::Result<i32> = async {
            Ok(with_db!(store, reuse, |db| {
                sqlx::query_scalar("SELECT 1 / 0").fetch_one(db).await?
            }))
        }
        .await;
        assert!(failed.is_err());
        assert_eq!(store.stash.len(), 0, "a failed read's connection");
        let slow = async {
            let n: crate::Result<i32> = Ok(with_db!(store, reuse, |db| {
                sqlx::query_scalar("SELECT 7 FROM pg_sleep(0.5)")
                    .fetch_one(db)
                    .await?
            }));
            n
        };
        assert!(
            tokio::time::timeout(Duration::from_millis(100), slow)
                .await
                .is_err(),
            "cancelled mid-statement"
        );
        assert_eq!(store.stash.len(), 0, "a cancelled read's connection");
        let answer: crate::Result<i32> = async {
            Ok(with_db!(store, reuse, |db| {
                sqlx::query_scalar("SELECT 41 + 1").fetch_one(db).await?
            }))
        }
        .await;
        assert_eq!(answer.unwrap(), 42);
        assert!(own_transactions(&store).await.unwrap());
        store.close().await;
    }

    /// A connection left in a transaction, or with a rollback still to send, is refused.
    #[tokio::test]
    async fn connections_in_a_transaction_are_refused() {
        let Some(store) = postgres_store(STASH_ROUND).await else {
            return;
        };
        let pool = pool_of(&store);
        // Left open: sqlx counts the transaction it began as still running.
        let mut open = store.reusable_connection(pool).await.unwrap();
        let transaction = sqlx::Connection::begin(&mut *open).await.unwrap();
        std::mem::forget(transaction);
        open.reuse();
        assert_eq!(store.stash.len(), 0, "a connection in a transaction");
        // sqlx's pool takes that one back as it is (its check sends no rollback): a store
        // of its own.
        store.close().await;
        let Some(store) = postgres_store(STASH_ROUND).await else {
            return;
        };
        let pool = pool_of(&store);
        // Dropped unfinished: its rollback is queued, sent by the pool's check.
        let mut dropped = store.reusable_connection(pool).await.unwrap();
        let transaction = sqlx::Connection::begin(&mut *dropped).await.unwrap();
        drop(transaction);
        dropped.reuse();
        assert_eq!(store.stash.len(), 0, "a connection with a rollback to send");
        backend(&store).await.unwrap();
        assert_eq!(store.stash.len(), 1);
        assert!(own_transactions(&store).await.unwrap());
        store.close().await;
    }

    /// A connection goes back to the pool once out of it for a round, and is not handed out
    /// once idle for as long as the pool would ping it.
    #[tokio::test]
    async fn old_connections_go_back_to_the_pool() {
        let round = Duration::from_millis(300);
        let Some(store) = postgres_store(round).await else {
            return;
        };
        let pool = pool_of(&store);
        backend(&store).await.unwrap();
        tokio::time::sleep(round + Duration::from_millis(50)).await;
        // Its last statement was a moment ago, but it left the pool a round ago.
        assert!(store.stash.take().is_none(), "out of the pool for a round");
        let long_read = store.reusable_connection(pool).await.unwrap();
        tokio::time::sleep(round + Duration::from_millis(50)).await;
        long_read.reuse();
        assert_eq!(store.stash.len(), 0, "not kept past its round");
        store.close().await;

        let Some(store) = postgres_store(STASH_ROUND).await else {
            return;
        };
        backend(&store).await.unwrap();
        tokio::time::sleep(crate::PING_IDLE_AFTER + Duration::from_millis(100)).await;
        assert!(
            store.stash.take().is_none(),
            "idle as long as the pool pings after"
        );
        store.close().await;
    }

    /// Closing the store ends though a connection is stashed (the pool waits for every
    /// connection out of it), and nothing is kept after.
    #[tokio::test]
    async fn closing_gives_stashed_connections_back() {
        let Some(store) = postgres_store(STASH_ROUND).await else {
            return;
        };
        backend(&store).await.unwrap();
        assert_eq!(store.stash.len(), 1);
        tokio::time::timeout(Duration::from_secs(10), store.close())
            .await
            .expect("closed");
        assert_eq!(store.stash.len(), 0);
    }

    /// On SQLite the same reads run on the readers' pool, nothing stashed.
    #[tokio::test]
    async fn sqlite_reads_stash_nothing() {
        let store = Store::connect(&StoreOptions::new("sqlite::memory:"))
            .await
            .unwrap();
        let answer: crate::Result<i64> = async {
            Ok(with_db!(store, reuse, |db| {
                sqlx::query_scalar("SELECT 41 + 1").fetch_one(db).await?
            }))
        }
        .await;
        assert_eq!(answer.unwrap(), 42);
        assert_eq!(store.stash.len(), 0);
        store.close().await;
    }
}
