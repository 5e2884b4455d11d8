//! Quantiles of measured samples, one rule for every benchmark so that their medians and p99s
//! compare: the nearest rank (the smallest sample that at least a fraction `q` of the samples
//! are at or below), which is always a sample that was measured, never an interpolation.

use std::time::Duration;

/// The sample at quantile `q` (0.0 to 1.0) of `sorted` (ascending), or `None` when there is
/// no sample.
pub(crate) fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() as f64 * q).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The duration at quantile `q` of `sorted`, zero when there is no sample.
pub(crate) fn duration_at(sorted: &[Duration], q: f64) -> Duration {
    nearest_rank(sorted, q).unwrap_or(Duration::ZERO)
}

/// The duration at quantile `q` of `sorted` as "12.3 ms" with `decimals` places, or "-" when
/// there is no sample (a table's empty cell).
pub(crate) fn ms_at(sorted: &[Duration], q: f64, decimals: usize) -> String {
    match nearest_rank(sorted, q) {
        Some(at) => format!("{:.decimals$} ms", at.as_secs_f64() * 1000.0),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_nearest_rank() {
        let samples: Vec<u32> = (1..=100).collect();
        assert_eq!(nearest_rank(&samples, 0.5), Some(50));
        assert_eq!(nearest_rank(&samples, 0.95), Some(95));
        assert_eq!(nearest_rank(&samples, 0.99), Some(99));
        assert_eq!(nearest_rank(&samples, 1.0), Some(100));
        assert_eq!(nearest_rank(&samples, 0.0), Some(1));
        assert_eq!(nearest_rank(&[7], 0.99), Some(7));
        assert_eq!(nearest_rank::<u32>(&[], 0.5), None);
        // Three samples: the median is the second, p99 the third.
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 0.5), Some(2.0));
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 0.99), Some(3.0));
    }

    #[test]
    fn formats_milliseconds_or_an_empty_cell() {
        let sorted = [Duration::from_micros(1_250), Duration::from_micros(2_500)];
        assert_eq!(ms_at(&sorted, 0.5, 2), "1.25 ms");
        assert_eq!(ms_at(&sorted, 1.0, 1), "2.5 ms");
        assert_eq!(ms_at(&[], 0.5, 1), "-");
        assert_eq!(duration_at(&[], 0.5), Duration::ZERO);
    }
}
