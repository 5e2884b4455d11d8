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
