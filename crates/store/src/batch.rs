//! The statement shapes of multi-row writes: a batch of any size is written with a few fixed
//! sizes of statement, each prepared once per connection. Item inserts, search index rows and
//! job queueing share them.

use crate::{Engine, Result, StoreError};

/// Rows per multi-row statement, largest first: a batch of any size is written with these few
/// statement shapes, each prepared once per connection.
pub(crate) const BATCH_SIZES: [usize; 4] = [64, 16, 4, 1];

/// Splits `n` rows into the sizes of [`BATCH_SIZES`]: as many of the largest as fit, then the
/// next, and so on.
pub(crate) fn batches(mut n: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    for size in BATCH_SIZES {
        while n >= size {
            sizes.push(size);
            n -= size;
        }
    }
    sizes
}

/// Why SQLite's statements here get anonymous placeholders (`?`) while PostgreSQL's are
/// numbered (`$1`): SQLite finds a `$N` by its name, searching the statement's names one by one,
/// when it prepares the statement and again when sqlx binds each value, so that a statement of
/// 400 rows of 6 values spent more on its names than on its writes. (Rules' and duplicate
/// clustering's own writes bind whole arrays instead, see `rules::OutcomeWrites` and
/// `cluster_statements::ClusterStatements`.)
/// `n` rows of `width` placeholders for the bound values from the `first`th (counted from 1)
/// on: `($1, $2), ($3, $4)` when `numbered`, else `(?, ?), (?, ?)`, bound in the same order.
pub(crate) fn placeholder_rows(numbered: bool, first: usize, n: usize, width: usize) -> String {
    (0..n)
        .map(|row| {
            let cells: Vec<String> = (0..width)
                .map(|c| {
                    if numbered {
                        format!("${}", first + row * width + c)
                    } else {
                        "?".to_string()
                    }
                })
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `values` as one JSON text, bound once and read with SQLite's `json_each` where PostgreSQL
/// binds an array (arrays of numbers and strings, and of arrays of them, always serialize).
pub(crate) fn json_param<T: serde::Serialize>(values: &T) -> Result<String> {
    serde_json::to_string(values).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// A set of ids bound as one value, for `column IN {…}`: the statement reads the JSON array of
/// bound parameter `$param` ([`json_param`] of the ids), so its text is the same whatever the
/// ids. A list written into the text made every call a statement of its own, prepared anew and
/// kept in the connection's statement cache in place of the ones used again. A worker's
/// reading connections each held a hundred of them (the rule checks after tagging, one per
/// batch of items); without them its anonymous memory over 10,000 feeds went from 31 to 21 MB.
pub(crate) fn bound_ids(engine: Engine, param: usize) -> String {
    match engine {
        Engine::Sqlite => format!("(SELECT value FROM json_each(${param}))"),
        Engine::Postgres => {
            format!("(SELECT value::BIGINT FROM json_array_elements_text(${param}::JSON))")
        }
    }
}
