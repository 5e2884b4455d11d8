//! The in-memory candidate index: every embedded item's [`Code`] and feed, scanned per query.
//!
//! A scan of a million 256-bit codes is a few milliseconds on one core (four XORs and
//! popcounts per item), where comparing a million stored vectors would read hundreds of
//! megabytes. The nearest codes are only candidates: the caller ranks them by the cosine of
//! their stored vectors, and checks there that the user may see them (the index knows feeds,
//! not users, and may lag behind items moved or deleted since it read them).

use std::collections::HashMap;

use crate::vector::Code;

/// One stored code, as the store gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    /// The order it was written in; the index reads on after the highest it has seen.
    pub seq: i64,
    /// The item's id.
    pub item_id: i64,
    /// The item's feed, to keep candidates to the feeds a user reads.
    pub feed_id: i64,
    /// The item's code.
    pub code: Code,
}

/// Codes of items, with their feeds, in columns for a fast scan ([module docs](self)).
#[derive(Debug, Default)]
pub struct RelatedIndex {
    item_ids: Vec<i64>,
    feeds: Vec<u32>,
    codes: Vec<Code>,
    /// Where each item is in the columns.
    positions: HashMap<i64, u32>,
    /// Feed ids by their small number in `feeds`.
    feed_ids: Vec<i64>,
    feed_numbers: HashMap<i64, u32>,
    /// The highest `seq` read.
    seen: i64,
}

impl RelatedIndex {
    /// An empty index.
    pub fn new() -> RelatedIndex {
        RelatedIndex::default()
    }

    /// Items in the index.
    pub fn len(&self) -> usize {
        self.item_ids.len()
    }

    /// Whether it holds no item.
    pub fn is_empty(&self) -> bool {
        self.item_ids.is_empty()
    }

    /// The highest `seq` added: read the store's rows after it next.
    pub fn seen(&self) -> i64 {
        self.seen
    }

    /// Bytes the index holds (columns and maps, approximately), for the benchmark figures and
    /// the metrics.
    pub fn memory_bytes(&self) -> usize {
        let columns = self.item_ids.capacity() * 8 + self.feeds.capacity() * 4;
        let codes = self.codes.capacity() * std::mem::size_of::<Code>();
        // hashbrown: a key, a value and a control byte per bucket.
        let positions = self.positions.capacity() * (8 + 4 + 1);
        let feeds = self.feed_ids.capacity() * 8 + self.feed_numbers.capacity() * (8 + 4 + 1);
        columns + codes + positions + feeds
    }

    /// Adds rows, or replaces the code and feed of items already in (an item embedded again).
    pub fn add(&mut self, rows: impl IntoIterator<Item = IndexRow>) {
        for row in rows {
            let feed = self.feed_number(row.feed_id);
            match self.positions.get(&row.item_id) {
                Some(&at) => {
                    self.feeds[at as usize] = feed;
                    self.codes[at as usize] = row.code;
                }
                None => {
                    self.positions
                        .insert(row.item_id, self.item_ids.len() as u32);
                    self.item_ids.push(row.item_id);
                    self.feeds.push(feed);
                    self.codes.push(row.code);
                }
            }
            self.seen = self.seen.max(row.seq);
        }
    }

    fn feed_number(&mut self, feed_id: i64) -> u32 {
        if let Some(&number) = self.feed_numbers.get(&feed_id) {
            return number;
        }
        let number = self.feed_ids.len() as u32;
        self.feed_ids.push(feed_id);
        self.feed_numbers.insert(feed_id, number);
        number
    }

    /// Up to `limit` items of the feeds `feeds` whose codes are nearest `query`, nearest first
    /// (ties by newer id), without `exclude`.
    pub fn nearest(&self, query: &Code, feeds: &[i64], exclude: i64, limit: usize) -> Vec<i64> {
        if limit == 0 {
            return Vec::new();
        }
        let mut allowed = vec![false; self.feed_ids.len()];
        for feed in feeds {
            if let Some(&number) = self.feed_numbers.get(feed) {
                allowed[number as usize] = true;
            }
        }
        if !allowed.contains(&true) {
            return Vec::new();
        }
        // One pass: each allowed item's distance, and how many items are at each distance.
        let mut distances: Vec<u16> = vec![u16::MAX; self.codes.len()];
        let mut histogram = [0usize; crate::CODE_BITS + 1];
        for (at, (code, feed)) in self.codes.iter().zip(&self.feeds).enumerate() {
            if allowed[*feed as usize] && self.item_ids[at] != exclude {
                let distance = query.distance(code);
                distances[at] = distance as u16;
                histogram[distance as usize] += 1;
            }
        }
        // The distance at which `limit` items are reached; then only those are sorted.
        let mut within = 0;
        let mut cutoff = crate::CODE_BITS;
        for (distance, count) in histogram.iter().enumerate() {
            within += count;
            if within >= limit {
                cutoff = distance;
                break;
            }
        }
        let mut found: Vec<(u16, i64)> = distances
            .iter()
            .enumerate()
            .filter(|(_, d)| **d as usize <= cutoff)
            .map(|(at, d)| (*d, self.item_ids[at]))
            .collect();
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        found.truncate(limit);
        found.into_iter().map(|(_, id)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bits: &[usize]) -> Code {
        let mut words = [0u64; 4];
        for bit in bits {
            words[bit / 64] |= 1 << (bit % 64);
        }
        Code(words)
    }

    fn row(seq: i64, item_id: i64, feed_id: i64, code: Code) -> IndexRow {
        IndexRow {
            seq,
            item_id,
            feed_id,
            code,
        }
    }

    #[test]
    fn nearest_codes_of_the_allowed_feeds_come_first() {
        let mut index = RelatedIndex::new();
        let query = code(&[]);
        index.add([
            row(1, 10, 1, code(&[1, 2, 3])),
            row(2, 11, 1, code(&[1])),
            row(3, 12, 2, code(&[])), // nearest, but feed 2 is not allowed
            row(4, 13, 1, code(&[5, 6])),
            row(5, 14, 1, code(&[])), // the query's own item
        ]);
        assert_eq!(index.len(), 5);
        assert_eq!(index.seen(), 5);
        assert_eq!(index.nearest(&query, &[1], 14, 10), vec![11, 13, 10]);
        assert_eq!(index.nearest(&query, &[1], 14, 2), vec![11, 13]);
        assert_eq!(index.nearest(&query, &[1, 2], 14, 1), vec![12]);
        assert!(index.nearest(&query, &[3], 14, 10).is_empty());
        assert!(index.nearest(&query, &[], 14, 10).is_empty());
        assert!(index.nearest(&query, &[1], 14, 0).is_empty());
    }

    #[test]
    fn an_item_embedded_again_is_replaced_not_added() {
        let mut index = RelatedIndex::new();
        index.add([row(1, 10, 1, code(&[1, 2, 3, 4]))]);
        index.add([row(7, 10, 2, code(&[]))]);
        assert_eq!(index.len(), 1);
        assert_eq!(index.seen(), 7);
        assert!(index.nearest(&code(&[]), &[1], 0, 5).is_empty());
        assert_eq!(index.nearest(&code(&[]), &[2], 0, 5), vec![10]);
        assert!(index.memory_bytes() > 0);
    }

    #[test]
    fn ties_are_broken_towards_newer_items_and_the_limit_holds() {
        let mut index = RelatedIndex::new();
        index.add((1..=100).map(|id| row(id, id, 1, code(&[(id % 3) as usize]))));
        let found = index.nearest(&code(&[0]), &[1], 0, 5);
        // Items with id % 3 == 0 are at distance 0; newest first.
        assert_eq!(found, vec![99, 96, 93, 90, 87]);
    }
}
