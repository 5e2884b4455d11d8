//! The statement shapes of multi-row writes: a batch of any size is written with a few fixed
//! sizes of statement, each prepared once per connection. Item inserts, search index rows and
//! job queueing share them.

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

/// How an engine's SQL names its bound values, told by the connection a statement runs on.
/// PostgreSQL takes numbered ones only (`$1`). SQLite is given anonymous ones (`?`): it finds
/// a `$N` by its name, searching the statement's names one by one, when it prepares the
/// statement and again when sqlx binds each value, so that a statement of 400 rows of 6
/// values spent more on its names than on its writes. (Rules' own writes bind whole arrays
/// instead, see `rules::OutcomeWrites`; duplicate clustering's still use these.)
pub(crate) trait BindStyle {
    /// Whether bound values are named `$1`, `$2`… rather than `?`.
    const NUMBERED: bool;
}

impl BindStyle for sqlx::SqliteConnection {
    const NUMBERED: bool = false;
}

impl BindStyle for sqlx::PgConnection {
    const NUMBERED: bool = true;
}

/// Whether `connection`'s engine wants numbered placeholders (see [`BindStyle`]).
pub(crate) fn numbered<C: BindStyle>(_connection: &C) -> bool {
    C::NUMBERED
}

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
