//! The one statement shape every queue claims with: lease the rows a query picks, and return
//! them.
//!
//! On PostgreSQL, several workers claim at once. `UPDATE … WHERE id IN (SELECT … LIMIT n FOR
//! UPDATE SKIP LOCKED)` does not keep to `n` there: when a picked row changed under the claim,
//! the executor re-checks it and may run the subquery again, so one claim can lease and return
//! more rows than asked (a worker's runner once got more units than it had free slots, and its
//! arithmetic overflowed). Picking the rows in a materialized CTE runs the subquery exactly
//! once. SQLite has one writer, so its plain form cannot over-claim.

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
            Engine::Postgres => format!(
                "WITH picked AS MATERIALIZED ({pick} {lock})
                 UPDATE {table} SET {set} WHERE {key} IN (SELECT * FROM picked)
                 RETURNING {returning}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(pg.contains("WHERE item_id IN (SELECT * FROM picked)"));
        assert_eq!(
            lease().sql(Engine::Sqlite),
            "UPDATE q SET lease_owner = $1 WHERE item_id IN (SELECT item_id FROM q ORDER BY item_id LIMIT $2) RETURNING item_id"
        );
    }
}
