//! Rate-limit windows kept in the database (F25), so that every API replica on one PostgreSQL
//! counts against the same budget instead of each allowing the whole limit.
//!
//! One fixed window per limit (`scope`) and key, counted with a single upsert: the first hit
//! after a window ended starts a new one. Times are the database's clock, so replicas whose
//! clocks differ a little still agree on when a window ends.

use crate::{Engine, Result, Store, with_db};

/// One hit counted in a shared window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateWindowHit {
    /// Hits in the window so far, this one included (never above the cap the caller gave).
    pub hits: i64,
    /// Milliseconds until the window ends.
    pub resets_in_ms: i64,
}

/// The database's clock in Unix milliseconds, fixed for the statement on both engines
/// (SQLite's `'now'` is one value per statement; PostgreSQL's statement timestamp too).
fn now_ms(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        Engine::Postgres => "CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000 AS BIGINT)",
    }
}

impl Store {
    /// Counts one hit for `key` under the limit `scope`, in a window of `window_ms` that
    /// starts with the first hit after the previous window ended. The count stops at `cap`
    /// (the limit plus one is enough to tell a refusal), so a flood does not grow it.
    pub async fn count_rate_hit(
        &self,
        scope: &str,
        key: &str,
        window_ms: i64,
        cap: i64,
    ) -> Result<RateWindowHit> {
        self.count_rate_hits(scope, key, window_ms, 1, cap).await
    }

    /// Counts `hits` hits for `key` at once, as [`Store::count_rate_hit`] counts one: a
    /// process that counts a busy limit in its memory adds what it counted in one statement
    /// instead of one per request. When the window had ended they start the new one (all of
    /// them: counting a few too many at the turn of a window errs on the safe side).
    pub async fn count_rate_hits(
        &self,
        scope: &str,
        key: &str,
        window_ms: i64,
        hits: i64,
        cap: i64,
    ) -> Result<RateWindowHit> {
        let now = now_ms(self.engine());
        let sql = format!(
            "INSERT INTO rate_limit_windows (scope, key, window_end, hits)
             VALUES ($1, $2, {now} + $3, CASE WHEN $5 < $4 THEN $5 ELSE $4 END)
             ON CONFLICT (scope, key) DO UPDATE SET
                 hits = CASE
                     WHEN rate_limit_windows.window_end <= {now}
                         THEN CASE WHEN $5 < $4 THEN $5 ELSE $4 END
                     WHEN rate_limit_windows.hits >= $4 THEN rate_limit_windows.hits
                     WHEN rate_limit_windows.hits + $5 > $4 THEN $4
                     ELSE rate_limit_windows.hits + $5
                 END,
                 window_end = CASE
                     WHEN rate_limit_windows.window_end <= {now} THEN {now} + $3
                     ELSE rate_limit_windows.window_end
                 END
             RETURNING hits, window_end - {now}"
        );
        let (hits, resets_in_ms): (i64, i64) = with_db!(self, write, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(scope)
                .bind(key)
                .bind(window_ms.max(1))
                .bind(cap.max(1))
                .bind(hits.max(1))
                .fetch_one(db)
                .await?
        });
        Ok(RateWindowHit {
            hits,
            resets_in_ms: resets_in_ms.max(0),
        })
    }

    /// Deletes the windows that have ended; returns how many. Run now and then (the server
    /// does, about once a minute), so that keys seen once do not pile up.
    pub async fn prune_rate_windows(&self) -> Result<u64> {
        let sql = format!(
            "DELETE FROM rate_limit_windows WHERE window_end <= {}",
            now_ms(self.engine())
        );
        let deleted = with_db!(self, write, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(deleted)
    }
}
