//! The one statement shape every queue claims with: lease the rows a query picks, and return
//! them.
//!
//! On PostgreSQL, several workers claim at once. `UPDATE … WHERE id IN (SELECT … LIMIT n FOR
//! UPDATE SKIP LOCKED)` does not keep to `n` there: when a picked row changed under the claim,
//! the executor re-checks it and may run the subquery again, so one claim can lease and return
//! more rows than asked (a worker's runner once got more units than it had free slots, and its
//! arithmetic overflowed). Picking the rows in a materialized CTE runs the subquery exactly
//! once. SQLite has one writer, so its plain form cannot over-claim.
//!
//! PostgreSQL then finds the picked rows by their key, `key = ANY(ARRAY(…))`: matched with
//! `IN (SELECT * FROM picked)` the update was planned as a hash join over a sequential scan
//! of the whole table whenever the plan was made while the table was small, as a queue's is
//! on a new installation, and a connection keeps its plan until the table is analyzed.
//! Every row a queue ever held stays in the table as a dead row until a vacuum, so each
//! claim read more pages than the last: the tagging claim averaged 12.5 ms over 100,000
//! feeds with autovacuum off (docs/benchmarks.md).

use crate::Engine;

/// What a lease statement is made of, each part plain SQL with `$n` parameters.
pub(crate) struct Lease<'a> {
    /// The table whose rows are leased.
    pub table: &'a str,
    /// The `SET` list (the lease's owner and end, and whatever else a claim records).
    pub set: &'a str,
    /// The table's key column, which `pick` selects.
    pub key: &'a str,
    /// A `SELECT` of the key of the rows to lease, with its `ORDER BY` and `LIMIT`.
    pub pick: &'a str,
    /// PostgreSQL's row lock for `pick` (`FOR UPDATE SKIP LOCKED`, or `FOR UPDATE OF x SKIP
    /// LOCKED` when `pick` joins).
    pub lock: &'a str,
    /// The `RETURNING` list.
    pub returning: &'a str,
}

impl Lease<'_> {
    /// The statement for `engine`.
    pub(crate) fn sql(&self, engine: Engine) -> String {
        let Lease {
            table,
            set,
            key,
            pick,
            lock,
            returning,
        } = self;
        match engine {
            Engine::Sqlite => {
                format!("UPDATE {table} SET {set} WHERE {key} IN ({pick}) RETURNING {returning}")
            }
            Engine::Postgres => {
                // An array of keys is searched in the key's index whatever the table's size
                // was at planning. A composite key, `(a, b)`, is searched by its first
                // column and then matched whole, so that a row sharing only the first column
                // with a picked one is not leased with it.
                let first = key.trim_start_matches('(').split(',').next().unwrap_or(key);
                let rows = if key.starts_with('(') {
                    let first = first.trim();
                    format!(
                        "{first} = ANY(ARRAY(SELECT {first} FROM picked)) \
                         AND {key} IN (SELECT * FROM picked)"
                    )
                } else {
                    format!("{key} = ANY(ARRAY(SELECT {key} FROM picked))")
                };
                format!(
                    "WITH picked AS MATERIALIZED ({pick} {lock})
                     UPDATE {table} SET {set} WHERE {rows}
                     RETURNING {returning}"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, with_db};

    fn lease() -> Lease<'static> {
        Lease {
            table: "q",
            set: "lease_owner = $1",
            key: "item_id",
            pick: "SELECT item_id FROM q ORDER BY item_id LIMIT $2",
            lock: "FOR UPDATE SKIP LOCKED",
            returning: "item_id",
        }
    }

    #[test]
    fn postgres_picks_once_in_a_materialized_cte_and_sqlite_in_a_subquery() {
        let pg = lease().sql(Engine::Postgres);
        assert!(pg.starts_with(
            "WITH picked AS MATERIALIZED (SELECT item_id FROM q ORDER BY item_id LIMIT $2 FOR UPDATE SKIP LOCKED)"
        ));
        assert!(pg.contains("WHERE item_id = ANY(ARRAY(SELECT item_id FROM picked))"));
        assert_eq!(
            lease().sql(Engine::Sqlite),
            "UPDATE q SET lease_owner = $1 WHERE item_id IN (SELECT item_id FROM q ORDER BY item_id LIMIT $2) RETURNING item_id"
        );
    }

    /// A queue of items in languages, keyed by the item alone or by the item and language,
    /// claimed newest first as the tagging queue is.
    fn probe(composite: bool) -> Lease<'static> {
        Lease {
            table: "lease_probe",
            set: "lease_owner = $1, lease_until = $2",
            key: if composite {
                "(item_id, language)"
            } else {
                "item_id"
            },
            // The key's columns, as every queue's pick selects them.
            pick: if composite {
                "SELECT item_id, language FROM lease_probe
                 WHERE lease_until IS NULL OR lease_until <= $3
                 ORDER BY item_id DESC, language DESC LIMIT $4"
            } else {
                "SELECT item_id FROM lease_probe
                 WHERE lease_until IS NULL OR lease_until <= $3
                 ORDER BY item_id DESC LIMIT $4"
            },
            lock: "FOR UPDATE SKIP LOCKED",
            returning: "item_id, language",
        }
    }

    /// Rows a probe claim leases: an odd number, so that a composite key's claim picks one
    /// language of an item and not the other.
    const CLAIMED: i64 = 33;

    /// The probe queue's rows: items 200,001 to 200,100, in English, and in Japanese too
    /// where the key has the language.
    fn probe_rows(composite: bool) -> String {
        let languages: &[&str] = if composite { &["en", "ja"] } else { &["en"] };
        let rows: Vec<String> = (200_001..=200_100)
            .flat_map(|n| languages.iter().map(move |l| format!("({n}, '{l}')")))
            .collect();
        format!(
            "INSERT INTO lease_probe (item_id, language) VALUES {}",
            rows.join(", ")
        )
    }

    /// Pages a claim visits (PostgreSQL's `EXPLAIN (ANALYZE, BUFFERS)` of the prepared
    /// statement `probe_claim`, in a transaction rolled back), with the rows it leased.
    async fn claim_pages(conn: &mut sqlx::PgConnection) -> crate::Result<(i64, i64)> {
        sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
        let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE probe_claim('w', 200, 100, {CLAIMED})"
        )))
        .fetch_all(&mut *conn)
        .await?;
        sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await?;
        // The top node's line and its buffers, which count every node below it.
        let number_after = |line: &str, label: &str| -> i64 {
            line.split(label)
                .nth(1)
                .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect())
                .and_then(|digits: String| digits.parse().ok())
                .unwrap_or(0)
        };
        let buffers = plan.iter().find(|l| l.contains("Buffers:")).unwrap();
        let pages = number_after(buffers, "hit=") + number_after(buffers, "read=");
        Ok((pages, number_after(&plan[0], "rows=")))
    }

    /// PostgreSQL: a claim planned while the queue was empty, as on a new installation, reads
    /// the rows it leases by key, not the whole table with the dead rows of every job done
    /// since the last vacuum. Leaves the probe's rows in the queue. (With the old form the
    /// claim read 645 pages after 100,000 dead rows, 1,352 after 200,000, unless its plan was
    /// made again meanwhile: other sessions' schema changes can reset a backend's caches,
    /// and a plan made on the grown table reads by key, so under CI's load the old form
    /// could pass here now and then; alone it fails every time.)
    async fn claims_read_by_key(store: &Store, composite: bool) -> crate::Result<bool> {
        let crate::Pools::Postgres(pool) = &*store.pools else {
            return Ok(false);
        };
        let mut conn = pool.acquire().await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PREPARE probe_claim(TEXT, BIGINT, BIGINT, BIGINT) AS {};
             SET plan_cache_mode = force_generic_plan;",
            probe(composite).sql(Engine::Postgres)
        )))
        .execute(&mut *conn)
        .await?;
        assert_eq!(
            claim_pages(&mut conn).await?.1,
            0,
            "planned on an empty queue"
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(probe_rows(composite)))
            .execute(&mut *conn)
            .await?;
        let (fresh, leased) = claim_pages(&mut conn).await?;
        assert_eq!(leased, CLAIMED);
        // 200,000 jobs done: about 1,080 pages of dead rows.
        sqlx::raw_sql(
            "INSERT INTO lease_probe (item_id, language)
                 SELECT n, 'en' FROM generate_series(1, 200000) n;
             DELETE FROM lease_probe WHERE item_id <= 200000;",
        )
        .execute(&mut *conn)
        .await?;
        let (after, leased) = claim_pages(&mut conn).await?;
        assert_eq!(leased, CLAIMED);
        // The key index is deeper now, and holds the entries of the row versions that the
        // claims measured above left behind; and while another transaction's snapshot keeps
        // the dead rows, a leased row's new version may not fit its page, and goes to
        // another with an index entry of its own. So a few pages more for each row: 65 and
        // 102 measured alone (one key, two), 170 under CI's load. A scan of the table adds
        // its 1,080 pages of dead rows.
        assert!(
            after <= fresh + 12 * CLAIMED,
            "a claim visited {fresh} pages, then {after} after 200,000 dead rows"
        );
        sqlx::raw_sql("DEALLOCATE probe_claim; RESET plan_cache_mode;")
            .execute(&mut *conn)
            .await?;
        Ok(true)
    }

    /// Claims lease the newest due rows, and of a composite key only the rows picked, not
    /// the others of the same item.
    async fn claims_lease_what_they_pick(store: &Store, composite: bool) -> crate::Result<()> {
        let primary_key = if composite {
            "item_id, language"
        } else {
            "item_id"
        };
        store
            .execute_raw(&format!(
                "CREATE TABLE lease_probe (item_id BIGINT NOT NULL, language TEXT NOT NULL,
                     lease_owner TEXT, lease_until BIGINT, PRIMARY KEY ({primary_key}))"
            ))
            .await?;
        if !claims_read_by_key(store, composite).await? {
            store.execute_raw(&probe_rows(composite)).await?;
        }
        let mut rows: Vec<(i64, String)> = with_db!(store, read, |db| {
            sqlx::query_as("SELECT item_id, language FROM lease_probe")
                .fetch_all(db)
                .await?
        });
        rows.sort_unstable_by(|a, b| b.cmp(a));
        let sql = probe(composite).sql(store.engine());
        for (round, expected) in rows.chunks(CLAIMED as usize).take(2).enumerate() {
            let mut leased: Vec<(i64, String)> = with_db!(store, write, |db| {
                sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
                    .bind("w")
                    .bind(200_i64)
                    .bind(100_i64)
                    .bind(CLAIMED)
                    .fetch_all(db)
                    .await?
            });
            leased.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(leased, expected, "claim {round}");
        }
        let leased: i64 = with_db!(store, read, |db| {
            sqlx::query_scalar("SELECT COUNT(*) FROM lease_probe WHERE lease_owner IS NOT NULL")
                .fetch_one(db)
                .await?
        });
        assert_eq!(leased, 2 * CLAIMED, "only the rows picked are leased");
        store.execute_raw("DROP TABLE lease_probe").await?;
        Ok(())
    }

    /// Claims lease what they pick, and on PostgreSQL find it by key however many dead rows
    /// the queue holds (the tagging and embedding claims grew with them: docs/benchmarks.md,
    /// 100,000 feeds). On SQLite, and on PostgreSQL when `TIDINGS_TEST_POSTGRES_URL` names a
    /// server.
    #[tokio::test]
    async fn claims_lease_by_key_however_many_dead_rows_the_queue_holds() {
        crate::test_engines::on_each_engine(async |store: &Store| {
            for composite in [false, true] {
                claims_lease_what_they_pick(store, composite).await.unwrap();
            }
        })
        .await;
    }
}
